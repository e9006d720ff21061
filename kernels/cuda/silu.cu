// silu.cu - SiLU forward and backward on the GPU, fp32. Same formulas as kernels/cpu/silu.c.
// Elementwise and memory-bound: one grid-stride loop per kernel, 64-bit indices.
#include <cuda_runtime.h>

#include "launch.cuh"
#include "yp_cuda.h"

// ----------------------------------------------------------------------------
// kernels

// No __restrict__: the backend contract allows x == y (and dx == dy), in place.
static __global__ void silu_forward_kernel(const float *x, float *y, int64_t n) {
    int64_t stride = (int64_t)blockDim.x * gridDim.x;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        float v = x[i];
        y[i] = v / (1.0f + expf(-v));
    }
}

static __global__ void silu_backward_kernel(const float *x, const float *dy, float *dx, int64_t n) {
    int64_t stride = (int64_t)blockDim.x * gridDim.x;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        float v = x[i];
        float s = 1.0f / (1.0f + expf(-v));
        dx[i] = dy[i] * s * (1.0f + v * (1.0f - s));
    }
}

// ----------------------------------------------------------------------------
// launchers

using yp_cuda::grid_for;
using yp_cuda::kBlockSize;

// The shared checks (launch.cuh): fp32, a count >= 0, no NULL buffer when there is work.
static int check_args(const char *op, yp_elem dt, int64_t n, const void *a, const void *b, const void *c) {
    const void *ptrs[3] = {a, b, c};
    if (yp_cuda::check_f32(op, dt) || yp_cuda::check_count(op, n)) return -1;
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
    silu_forward_kernel<<<grid_for(n), kBlockSize, 0, cb->stream>>>(x, y, n);
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
    silu_backward_kernel<<<grid_for(n), kBlockSize, 0, cb->stream>>>(x, dy, dx, n);
    return yp_cuda_check_launch("silu_backward");
}
