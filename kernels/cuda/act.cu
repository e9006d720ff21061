// act.cu - ReLU, LeakyReLU and Hardswish forward and backward on the GPU, element types F32, F16
// and BF16 (x, y, dy, dx all of the op's dt; anything else refused). Each kernel is a grid-stride
// loop over the element functions of kernels/yp_act_math.h, which kernels/cpu/act.c runs too, as
// a template over the storage type: the element is loaded as fp32, the function computed in fp32
// and the result rounded to the type once, when stored. The F32 path is that template for float,
// so both backends give the same bits there; under F16/BF16 the CPU's fp32 result on the same
// inputs, rounded to the type, to within an ulp of the type (tests/kernels/test_cuda_lowp.c).
#include <cuda_runtime.h>

#include "launch.cuh"
#include "yp_act_math.h"
#include "yp_cuda.h"

using yp_cuda::check_count;
using yp_cuda::check_elem;
using yp_cuda::check_ptrs;
using yp_cuda::grid_for;
using yp_cuda::kBlockSize;

// ----------------------------------------------------------------------------
// kernels (no __restrict__: x may be y, and dy may be dx with beta 0)

template <typename T>
static __global__ void relu_fwd_kernel(const T *x, T *y, int64_t n) {
    GRID_STRIDE(i, n) yp_st(y + i, yp_relu(yp_ld(x + i)));
}

template <typename T>
static __global__ void relu_bwd_kernel(const T *y, const T *dy, T *dx, float beta, int64_t n) {
    GRID_STRIDE(i, n) yp_st(dx + i, yp_acc(beta, dx + i, yp_relu_grad(yp_ld(y + i), yp_ld(dy + i))));
}

template <typename T>
static __global__ void leaky_fwd_kernel(float slope, const T *x, T *y, int64_t n) {
    GRID_STRIDE(i, n) yp_st(y + i, yp_leaky(yp_ld(x + i), slope));
}

template <typename T>
static __global__ void leaky_bwd_kernel(float slope, const T *x, const T *dy, T *dx, float beta, int64_t n) {
    GRID_STRIDE(i, n) yp_st(dx + i, yp_acc(beta, dx + i, yp_leaky_grad(yp_ld(x + i), yp_ld(dy + i), slope)));
}

template <typename T>
static __global__ void hardswish_fwd_kernel(const T *x, T *y, int64_t n) {
    GRID_STRIDE(i, n) yp_st(y + i, yp_hardswish(yp_ld(x + i)));
}

template <typename T>
static __global__ void hardswish_bwd_kernel(const T *x, const T *dy, T *dx, float beta, int64_t n) {
    GRID_STRIDE(i, n) yp_st(dx + i, yp_acc(beta, dx + i, yp_hardswish_grad(yp_ld(x + i), yp_ld(dy + i))));
}

// ----------------------------------------------------------------------------
// launchers

// F32, F16 or BF16, a count >= 0, no NULL buffer when there is work.
static int check_args(const char *op, yp_elem dt, int64_t n, int count, const void *const *ptrs) {
    if (check_elem(op, dt) || check_count(op, n))
        return -1;
    return n > 0 ? check_ptrs(op, count, ptrs) : 0;
}

// Makes the device current and launches n elements' worth of a grid-stride kernel (one
// instantiation of a kernel template, inside YP_CUDA_BY_ELEM).
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
    YP_CUDA_BY_ELEM(dt, T, LAUNCH(op, be, relu_fwd_kernel<T>, n, (const T *)x, (T *)y, n));
}

extern "C" int yp_cuda_relu_backward(yp_backend *be, yp_elem dt, const float *y, const float *dy, float *dx,
                                     float beta, int64_t n) {
    static const char op[] = "relu_backward";
    const void *p[] = {y, dy, dx};
    if (check_args(op, dt, n, 3, p))
        return -1;
    YP_CUDA_BY_ELEM(dt, T,
                    LAUNCH(op, be, relu_bwd_kernel<T>, n, (const T *)y, (const T *)dy, (T *)dx, beta, n));
}

extern "C" int yp_cuda_leaky_relu_forward(yp_backend *be, yp_elem dt, float slope, const float *x, float *y,
                                          int64_t n) {
    static const char op[] = "leaky_relu_forward";
    const void *p[] = {x, y};
    if (check_args(op, dt, n, 2, p))
        return -1;
    YP_CUDA_BY_ELEM(dt, T, LAUNCH(op, be, leaky_fwd_kernel<T>, n, slope, (const T *)x, (T *)y, n));
}

extern "C" int yp_cuda_leaky_relu_backward(yp_backend *be, yp_elem dt, float slope, const float *x,
                                           const float *dy, float *dx, float beta, int64_t n) {
    static const char op[] = "leaky_relu_backward";
    const void *p[] = {x, dy, dx};
    if (check_args(op, dt, n, 3, p))
        return -1;
    YP_CUDA_BY_ELEM(dt, T,
                    LAUNCH(op, be, leaky_bwd_kernel<T>, n, slope, (const T *)x, (const T *)dy, (T *)dx, beta, n));
}

extern "C" int yp_cuda_hardswish_forward(yp_backend *be, yp_elem dt, const float *x, float *y, int64_t n) {
    static const char op[] = "hardswish_forward";
    const void *p[] = {x, y};
    if (check_args(op, dt, n, 2, p))
        return -1;
    YP_CUDA_BY_ELEM(dt, T, LAUNCH(op, be, hardswish_fwd_kernel<T>, n, (const T *)x, (T *)y, n));
}

extern "C" int yp_cuda_hardswish_backward(yp_backend *be, yp_elem dt, const float *x, const float *dy, float *dx,
                                          float beta, int64_t n) {
    static const char op[] = "hardswish_backward";
    const void *p[] = {x, dy, dx};
    if (check_args(op, dt, n, 3, p))
        return -1;
    YP_CUDA_BY_ELEM(dt, T,
                    LAUNCH(op, be, hardswish_bwd_kernel<T>, n, (const T *)x, (const T *)dy, (T *)dx, beta, n));
}

extern "C" void yp_cuda_register_act(yp_ops *o) {
    o->relu_forward = yp_cuda_relu_forward;
    o->relu_backward = yp_cuda_relu_backward;
    o->leaky_relu_forward = yp_cuda_leaky_relu_forward;
    o->leaky_relu_backward = yp_cuda_leaky_relu_backward;
    o->hardswish_forward = yp_cuda_hardswish_forward;
    o->hardswish_backward = yp_cuda_hardswish_backward;
}
