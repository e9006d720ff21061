/* backend.c - the dispatcher: creates CUDA instances and hands out the CUDA op table when the
 * library was built with it (the only file outside kernels/cuda/ that calls into it), frees
 * instances of any backend, asks any for its free device memory, names the element types and
 * describes the build. */
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

yp_backend *yp_backend_cuda_new(int device, char *why, size_t why_len) {
#if YP_HAVE_CUDA
    return yp_cuda_backend_new(device, why, why_len);
#else
    (void)device;
    if (why && why_len > 0)
        snprintf(why, why_len,
                 "built without CUDA (reconfigure with -DYP_CUDA=ON where nvcc and cuDNN are installed)");
    return NULL;
#endif
}

const yp_ops *yp_backend_cuda_ops(void) {
#if YP_HAVE_CUDA
    return yp_cuda_ops();
#else
    return NULL;
#endif
}

void yp_backend_free(yp_backend *be) {
    if (be && be->release) be->release(be);
}

int yp_backend_device_free(yp_backend *be, int64_t *free_bytes) {
    int64_t total = 0, free_b = 0;
    if (!be->device_info) return 0;
    if (be->device_info(be, NULL, 0, &total, &free_b)) return -1;
    *free_bytes = free_b;
    return 1;
}

const char *yp_elem_name(yp_elem t) {
    switch (t) {
    case YP_ELEM_F32: return "f32";
    case YP_ELEM_F16: return "f16";
    case YP_ELEM_BF16: return "bf16";
    default: return "?";
    }
}

const char *yp_kernels_build_info(void) {
#if YP_HAVE_CUDA
    call_once(&build_info_once, build_info_init);
    return build_info;
#else
    return "cpu; cuda: not built";
#endif
}
