// act.cu - ReLU, LeakyReLU and Hardswish forward and backward on the GPU (fp32; F16/BF16 refused,
// as the other elementwise kernels). Each kernel is a grid-stride loop over the element functions
// of kernels/yp_act_math.h, which kernels/cpu/act.c runs too, so both backends give the same bits.
#include <cuda_runtime.h>

#include "launch.cuh"
#include "yp_act_math.h"
#include "yp_cuda.h"

using yp_cuda::check_count;
using yp_cuda::check_f32;
using yp_cuda::check_ptrs;
using yp_cuda::grid_for;
using yp_cuda::kBlockSize;

// ----------------------------------------------------------------------------
// kernels (no __restrict__: x may be y, and dy may be dx with beta 0)


static __global__ void relu_fwd_kernel(const float *x, float *y, int64_t n) {
    GRID_STRIDE(i, n) y[i] = yp_relu(x[i]);
}

static __global__ void relu_bwd_kernel(const float *y, const float *dy, float *dx, float beta, int64_t n) {
    GRID_STRIDE(i, n) dx[i] = yp_acc(beta, dx + i, yp_relu_grad(y[i], dy[i]));
}

static __global__ void leaky_fwd_kernel(float slope, const float *x, float *y, int64_t n) {
    GRID_STRIDE(i, n) y[i] = yp_leaky(x[i], slope);
}

static __global__ void leaky_bwd_kernel(float slope, const float *x, const float *dy, float *dx, float beta,
                                        int64_t n) {
    GRID_STRIDE(i, n) dx[i] = yp_acc(beta, dx + i, yp_leaky_grad(x[i], dy[i], slope));
}

static __global__ void hardswish_fwd_kernel(const float *x, float *y, int64_t n) {
    GRID_STRIDE(i, n) y[i] = yp_hardswish(x[i]);
}

static __global__ void hardswish_bwd_kernel(const float *x, const float *dy, float *dx, float beta, int64_t n) {
    GRID_STRIDE(i, n) dx[i] = yp_acc(beta, dx + i, yp_hardswish_grad(x[i], dy[i]));
}

// ----------------------------------------------------------------------------
// launchers

// fp32, a count >= 0, no NULL buffer when there is work.
static int check_args(const char *op, yp_elem dt, int64_t n, int count, const void *const *ptrs) {
    if (check_f32(op, dt) || check_count(op, n))
        return -1;
    return n > 0 ? check_ptrs(op, count, ptrs) : 0;
}

// Makes the device current and launches n elements' worth of a grid-stride kernel.
#define LAUNCH(op, be, kernel, n, ...)                                                \
    do {                                                                              \
        yp_cuda_backend *cb_ = yp_cuda_of(be);                                        \
        if ((n) == 0)                                                                 \
            return 0; /* a zero-block launch is an error in CUDA */                   \
        if (yp_cuda_use(op, cb_))                                                     \
            return -1;                                                                \
        kernel<<<grid_for(n), kBlockSize, 0, cb_->stream>>>(__VA_ARGS__);             \
        return yp_cuda_check_launch(op);                                              \
    } while (0)

extern "C" int yp_cuda_relu_forward(yp_backend *be, yp_elem dt, const float *x, float *y, int64_t n) {
    static const char op[] = "relu_forward";
    const void *p[] = {x, y};
    if (check_args(op, dt, n, 2, p))
        return -1;
    LAUNCH(op, be, relu_fwd_kernel, n, x, y, n);
}

extern "C" int yp_cuda_relu_backward(yp_backend *be, yp_elem dt, const float *y, const float *dy, float *dx,
                                     float beta, int64_t n) {
    static const char op[] = "relu_backward";
    const void *p[] = {y, dy, dx};
    if (check_args(op, dt, n, 3, p))
        return -1;
    LAUNCH(op, be, relu_bwd_kernel, n, y, dy, dx, beta, n);
}

extern "C" int yp_cuda_leaky_relu_forward(yp_backend *be, yp_elem dt, float slope, const float *x, float *y,
                                          int64_t n) {
    static const char op[] = "leaky_relu_forward";
    const void *p[] = {x, y};
    if (check_args(op, dt, n, 2, p))
        return -1;
    LAUNCH(op, be, leaky_fwd_kernel, n, slope, x, y, n);
}

extern "C" int yp_cuda_leaky_relu_backward(yp_backend *be, yp_elem dt, float slope, const float *x,
                                           const float *dy, float *dx, float beta, int64_t n) {
    static const char op[] = "leaky_relu_backward";
    const void *p[] = {x, dy, dx};
    if (check_args(op, dt, n, 3, p))
        return -1;
    LAUNCH(op, be, leaky_bwd_kernel, n, slope, x, dy, dx, beta, n);
}

extern "C" int yp_cuda_hardswish_forward(yp_backend *be, yp_elem dt, const float *x, float *y, int64_t n) {
    static const char op[] = "hardswish_forward";
    const void *p[] = {x, y};
    if (check_args(op, dt, n, 2, p))
        return -1;
    LAUNCH(op, be, hardswish_fwd_kernel, n, x, y, n);
}

extern "C" int yp_cuda_hardswish_backward(yp_backend *be, yp_elem dt, const float *x, const float *dy, float *dx,
                                          float beta, int64_t n) {
    static const char op[] = "hardswish_backward";
    const void *p[] = {x, dy, dx};
    if (check_args(op, dt, n, 3, p))
        return -1;
    LAUNCH(op, be, hardswish_bwd_kernel, n, x, dy, dx, beta, n);
}

extern "C" void yp_cuda_register_act(yp_ops *o) {
    o->relu_forward = yp_cuda_relu_forward;
    o->relu_backward = yp_cuda_relu_backward;
    o->leaky_relu_forward = yp_cuda_leaky_relu_forward;
    o->leaky_relu_backward = yp_cuda_leaky_relu_backward;
    o->hardswish_forward = yp_cuda_hardswish_forward;
    o->hardswish_backward = yp_cuda_hardswish_backward;
}
