/* yp_test_cuda.h - what the CUDA tests (test_cuda_silu, test_cuda_ops, test_cuda_conv) share: the
 * deterministic random floats they compare the two backends on, and opening both backends with
 * the skip convention (no usable GPU: "SKIP: <reason>", exit 77, which ctest reports as skipped).
 * Defines: yp_test_uniform, yp_test_cuda_open. */
#ifndef YP_TEST_CUDA_H
#define YP_TEST_CUDA_H

#include <stdint.h>
#include <stdio.h>

#include "yp_backend.h"

/* Deterministic uniform floats in [lo, hi) (xorshift64*). */
static inline float yp_test_uniform(uint64_t *state, float lo, float hi) {
    *state ^= *state >> 12;
    *state ^= *state << 25;
    *state ^= *state >> 27;
    uint64_t r = *state * 2685821657736338717ull;
    return lo + (hi - lo) * (float)((double)(r >> 40) / 16777216.0);
}

/* Opens the CUDA backend on device 0 and the CPU backend (cpu_threads; 0: its default), printing
 * the build. 0 with both set; 77 after "SKIP: <reason>" without a usable GPU; 1 when the CPU
 * backend cannot start. main returns it when it is not 0. */
static inline int yp_test_cuda_open(yp_backend **gpu, yp_backend **cpu, int cpu_threads) {
    char why[512] = "";
    *gpu = yp_backend_cuda_new(0, why, sizeof why), *cpu = NULL;
    printf("build: %s\n", yp_kernels_build_info());
    if (!*gpu) {
        printf("SKIP: %s\n", why);
        return 77;
    }
    const yp_cpu_config cfg = {cpu_threads};
    *cpu = yp_backend_cpu_new(cpu_threads > 0 ? &cfg : NULL, why, sizeof why);
    if (!*cpu) {
        fprintf(stderr, "no CPU backend: %s\n", why);
        yp_backend_free(*gpu);
        return 1;
    }
    return 0;
}

#endif
