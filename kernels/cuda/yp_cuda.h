/* yp_cuda.h - internal to kernels/: what the CUDA library (kernels/cuda/) exports to the dispatcher
 * (kernels/backend.c) and what its own files share. C linkage; plain C types only, so the dispatcher
 * includes it as C. Only included when the library is built with YP_HAVE_CUDA.
 * Defines: yp_cuda_backend_get, yp_cuda_build_info, yp_cuda_fail, yp_cuda_check_launch, and the
 * launchers (one pair per op, in kernels/cuda/<op>.cu). */
#ifndef YP_CUDA_H
#define YP_CUDA_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

struct yp_backend;

/* The CUDA table on device 0, or NULL with the reason in why (see yp_backend_cuda). */
const struct yp_backend *yp_cuda_backend_get(char *why, size_t why_len);

/* "built for sm_75,... with CUDA 13.0, cuDNN 9.19.0"; static storage. */
const char *yp_cuda_build_info(void);

/* Records a formatted reason as the calling thread's last error. Always returns -1. */
int yp_cuda_fail(const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 1, 2)))
#endif
    ;

/* After a kernel launch: 0, or -1 with "<what>: launch failed: <CUDA error>" recorded. */
int yp_cuda_check_launch(const char *what);

/* ---- launchers (contracts in yp_backend.h) ---- */
int yp_cuda_silu_forward(const float *x, float *y, int64_t n);
int yp_cuda_silu_backward(const float *x, const float *dy, float *dx, int64_t n);

#ifdef __cplusplus
}
#endif

#endif
