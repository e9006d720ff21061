/* yp_cpu.h - internal to kernels/cpu: the CPU backend's entries, shared between its files.
 * Defines: yp_cpu_fail (records last_error), yp_cpu_silu_forward, yp_cpu_silu_backward. */
#ifndef YP_CPU_H
#define YP_CPU_H

#include <stdint.h>

/* Records a formatted reason as the calling thread's last error. Always returns -1. */
int yp_cpu_fail(const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 1, 2)))
#endif
    ;

/* See yp_backend.h for the contract of each op. */
int yp_cpu_silu_forward(const float *x, float *y, int64_t n);
int yp_cpu_silu_backward(const float *x, const float *dy, float *dx, int64_t n);

#endif
