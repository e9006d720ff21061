/* act.c - the activations other than SiLU on the CPU, fp32: ReLU, LeakyReLU and Hardswish,
 * forward and backward, each a loop over the element functions of kernels/yp_act_math.h (which
 * kernels/cuda/act.cu runs too). Backward writes dx = beta*dx + the gradient and never reads dx
 * when beta is 0, so dx may be dy then. */
#include <stdint.h>

#include "yp_act_math.h"
#include "yp_cpu.h"

/* fp32, n >= 0, and no NULL buffer when there is work. */
static int check_args(const char *op, yp_elem dt, int64_t n, int count, const void *const *ptrs) {
    if (yp_cpu_check_elem(op, dt) || yp_cpu_check_count(op, n)) return -1;
    return n > 0 ? yp_cpu_check_ptrs(op, count, ptrs) : 0;
}

/* One backward element, as yp_acc writes it. */
#define GRAD_LOOP(n, beta, dx, g)                                                   \
    _Pragma("omp parallel for simd schedule(static) if (n >= YP_PAR_MIN)")          \
    for (int64_t i = 0; i < (n); i++) dx[i] = (beta) == 0.0f ? (g) : (beta) * dx[i] + (g)

int yp_cpu_relu_forward(yp_backend *be, yp_elem dt, const float *x, float *y, int64_t n) {
    (void)be;
    if (check_args("relu_forward", dt, n, 2, (const void *[]){x, y})) return -1;
#pragma omp parallel for simd schedule(static) if (n >= YP_PAR_MIN)
    for (int64_t i = 0; i < n; i++) y[i] = yp_relu(x[i]);
    return 0;
}

int yp_cpu_relu_backward(yp_backend *be, yp_elem dt, const float *y, const float *dy, float *dx, float beta,
                         int64_t n) {
    (void)be;
    if (check_args("relu_backward", dt, n, 3, (const void *[]){y, dy, dx})) return -1;
    GRAD_LOOP(n, beta, dx, yp_relu_grad(y[i], dy[i]));
    return 0;
}

int yp_cpu_leaky_relu_forward(yp_backend *be, yp_elem dt, float slope, const float *x, float *y, int64_t n) {
    (void)be;
    if (check_args("leaky_relu_forward", dt, n, 2, (const void *[]){x, y})) return -1;
#pragma omp parallel for simd schedule(static) if (n >= YP_PAR_MIN)
    for (int64_t i = 0; i < n; i++) y[i] = yp_leaky(x[i], slope);
    return 0;
}

int yp_cpu_leaky_relu_backward(yp_backend *be, yp_elem dt, float slope, const float *x, const float *dy, float *dx,
                               float beta, int64_t n) {
    (void)be;
    if (check_args("leaky_relu_backward", dt, n, 3, (const void *[]){x, dy, dx})) return -1;
    GRAD_LOOP(n, beta, dx, yp_leaky_grad(x[i], dy[i], slope));
    return 0;
}

int yp_cpu_hardswish_forward(yp_backend *be, yp_elem dt, const float *x, float *y, int64_t n) {
    (void)be;
    if (check_args("hardswish_forward", dt, n, 2, (const void *[]){x, y})) return -1;
#pragma omp parallel for simd schedule(static) if (n >= YP_PAR_MIN)
    for (int64_t i = 0; i < n; i++) y[i] = yp_hardswish(x[i]);
    return 0;
}

int yp_cpu_hardswish_backward(yp_backend *be, yp_elem dt, const float *x, const float *dy, float *dx, float beta,
                              int64_t n) {
    (void)be;
    if (check_args("hardswish_backward", dt, n, 3, (const void *[]){x, dy, dx})) return -1;
    GRAD_LOOP(n, beta, dx, yp_hardswish_grad(x[i], dy[i]));
    return 0;
}
