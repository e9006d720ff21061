// silu.cu - SiLU forward and backward on the GPU, element types F32, F16 and BF16 (x, y, dy, dx
// all of the op's dt; anything else refused). Same formulas as kernels/cpu/silu.c. Elementwise
// and memory-bound: one grid-stride loop per kernel, 64-bit indices, a template over the storage
// type: x and dy are loaded as fp32, the formula is computed in fp32 (expf) and the result rounded
// to the type once, when stored. The F32 path is that template for float, the code it always ran.
#include <cuda_runtime.h>

#include "launch.cuh"
#include "yp_cuda.h"

// ----------------------------------------------------------------------------
// kernels

// No __restrict__: the backend contract allows x == y (and dx == dy), in place; each element is
// read before it is written.
template <typename T>
static __global__ void silu_forward_kernel(const T *x, T *y, int64_t n) {
    GRID_STRIDE(i, n) {
        float v = yp_ld(x + i);
        yp_st(y + i, v / (1.0f + expf(-v)));
    }
}

template <typename T>
static __global__ void silu_backward_kernel(const T *x, const T *dy, T *dx, int64_t n) {
    GRID_STRIDE(i, n) {
        float v = yp_ld(x + i);
        float s = 1.0f / (1.0f + expf(-v));
        yp_st(dx + i, yp_ld(dy + i) * s * (1.0f + v * (1.0f - s)));
    }
}

// ----------------------------------------------------------------------------
// launchers

using yp_cuda::grid_for;
using yp_cuda::kBlockSize;

// The shared checks (launch.cuh): F32, F16 or BF16, a count >= 0, no NULL buffer when there is work.
static int check_args(const char *op, yp_elem dt, int64_t n, const void *a, const void *b, const void *c) {
    const void *ptrs[3] = {a, b, c};
    if (yp_cuda::check_elem(op, dt) || yp_cuda::check_count(op, n)) return -1;
    return n > 0 ? yp_cuda::check_ptrs(op, 3, ptrs) : 0;
}

extern "C" int yp_cuda_silu_forward(yp_backend *be, yp_elem dt, const float *x, float *y, int64_t n) {
    yp_cuda_backend *cb = yp_cuda_of(be);
    if (check_args("silu_forward", dt, n, x, y, y))
        return -1;
    if (n == 0)
        return 0;  // a zero-block launch is an error in CUDA
    if (yp_cuda_use("silu_forward", cb))
        return -1;
    YP_CUDA_BY_ELEM(dt, T,
                    silu_forward_kernel<T><<<grid_for(n), kBlockSize, 0, cb->stream>>>((const T *)x, (T *)y, n));
    return yp_cuda_check_launch("silu_forward");
}

extern "C" int yp_cuda_silu_backward(yp_backend *be, yp_elem dt, const float *x, const float *dy, float *dx,
                                     int64_t n) {
    yp_cuda_backend *cb = yp_cuda_of(be);
    if (check_args("silu_backward", dt, n, x, dy, dx))
        return -1;
    if (n == 0)
        return 0;
    if (yp_cuda_use("silu_backward", cb))
        return -1;
    YP_CUDA_BY_ELEM(dt, T,
                    silu_backward_kernel<T><<<grid_for(n), kBlockSize, 0, cb->stream>>>((const T *)x,
                                                                                        (const T *)dy, (T *)dx, n));
    return yp_cuda_check_launch("silu_backward");
}
