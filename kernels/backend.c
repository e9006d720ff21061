/* backend.c - the dispatcher: hands out the CUDA backend when the library was built with it (the
 * only file outside kernels/cuda/ that knows CUDA exists) and describes the build. */
#include <stdio.h>

#include "yp_backend.h"

#if YP_HAVE_CUDA
#include <threads.h>

#include "cuda/yp_cuda.h"

static char build_info[320];
static once_flag build_info_once = ONCE_FLAG_INIT;

static void build_info_init(void) {
    snprintf(build_info, sizeof build_info, "cpu; cuda: %s", yp_cuda_build_info());
}
#endif

const yp_backend *yp_backend_cuda(char *why, size_t why_len) {
#if YP_HAVE_CUDA
    return yp_cuda_backend_get(why, why_len);
#else
    if (why && why_len > 0)
        snprintf(why, why_len,
                 "built without CUDA (reconfigure with -DYP_CUDA=ON where nvcc and cuDNN are installed)");
    return NULL;
#endif
}

const char *yp_kernels_build_info(void) {
#if YP_HAVE_CUDA
    call_once(&build_info_once, build_info_init);
    return build_info;
#else
    return "cpu; cuda: not built";
#endif
}
