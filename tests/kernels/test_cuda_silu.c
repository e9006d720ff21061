/* test_cuda_silu.c - the CUDA backend against the CPU backend: SiLU forward and backward on ~1M
 * random elements, in place, argument errors, memory entries and an allocation that cannot fit.
 * Without a usable GPU (or a build without CUDA) it prints "SKIP: <reason>" and exits 77, which
 * ctest reports as skipped. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "yp_backend.h"
#include "yp_test.h"
#include "yp_test_cuda.h"

static yp_backend *gpu, *cpu;

/* Counts elements where |got - want| > rtol |want| + atol, printing the first few. */
static int64_t count_mismatches(const char *what, const float *got, const float *want,
                                const float *x, int64_t n, double rtol, double atol) {
    int64_t bad = 0;
    for (int64_t i = 0; i < n; i++) {
        double d = fabs((double)got[i] - want[i]);
        if (!(d <= rtol * fabs(want[i]) + atol) && bad++ < 5)
            fprintf(stderr, "  %s [%lld] x=%.9g: cuda %.9g cpu %.9g\n", what, (long long)i, x[i],
                    got[i], want[i]);
    }
    return bad;
}

/* Copies n floats to a new device buffer; NULL (with a failed check) on error. */
static float *to_device(const float *host, int64_t n) {
    size_t bytes = (size_t)n * sizeof(float);
    float *d = gpu->mem_alloc(gpu, bytes);
    CHECK(d != NULL);
    if (d && gpu->mem_copy(gpu, d, host, bytes, YP_COPY_HOST_TO_DEVICE) != 0) {
        fprintf(stderr, "  %s\n", gpu->last_error(gpu));
        CHECK(!"mem_copy host to device");
    }
    return d;
}

static int from_device(float *host, const float *dev, int64_t n) {
    int rc = gpu->mem_copy(gpu, host, dev, (size_t)n * sizeof(float), YP_COPY_DEVICE_TO_HOST);
    if (rc)
        fprintf(stderr, "  %s\n", gpu->last_error(gpu));
    return rc;
}

/* 1M + 3 elements (not a multiple of the block size) on [-20, 20) plus the overflow tails.
 * Tolerance: both backends evaluate the same fp32 expression with an expf of <= 2 ulp (CUDA's
 * documented bound; glibc's is < 1 ulp) and IEEE division, so they differ by a few ulp,
 * i.e. ~5e-7 relative; rtol 1e-5 keeps a 20x margin. atol 1e-6 covers silu' crossing zero near
 * x = -1.278 where relative error is meaningless (terms there are O(1), so a few ulp ~ 1e-7). */
static void test_silu_matches_cpu(void) {
    const int64_t n = (1 << 20) + 3;
    float *x = malloc((size_t)n * sizeof(float)), *dy = malloc((size_t)n * sizeof(float));
    float *y_cpu = malloc((size_t)n * sizeof(float)), *y_gpu = malloc((size_t)n * sizeof(float));
    float *dx_cpu = malloc((size_t)n * sizeof(float)), *dx_gpu = malloc((size_t)n * sizeof(float));
    CHECK(x && dy && y_cpu && y_gpu && dx_cpu && dx_gpu);
    if (!(x && dy && y_cpu && y_gpu && dx_cpu && dx_gpu))
        goto done;
    uint64_t st = 0x243f6a8885a308d3ull;
    for (int64_t i = 0; i < n; i++) {
        x[i] = yp_test_uniform(&st, -20.0f, 20.0f);
        dy[i] = yp_test_uniform(&st, -2.0f, 2.0f);
    }
    x[0] = -100.0f, x[1] = 100.0f, x[2] = 0.0f, x[3] = -1.278464543f, x[n - 1] = -88.5f;
    CHECK(cpu->ops->silu_forward(cpu, YP_ELEM_F32, x, y_cpu, n) == 0);
    CHECK(cpu->ops->silu_backward(cpu, YP_ELEM_F32, x, dy, dx_cpu, n) == 0);

    float *d_x = to_device(x, n), *d_dy = to_device(dy, n);
    float *d_y = gpu->mem_alloc(gpu, (size_t)n * sizeof(float));
    float *d_dx = gpu->mem_alloc(gpu, (size_t)n * sizeof(float));
    CHECK(d_x && d_dy && d_y && d_dx);
    if (d_x && d_dy && d_y && d_dx) {
        CHECK(gpu->ops->silu_forward(gpu, YP_ELEM_F32, d_x, d_y, n) == 0);
        CHECK(gpu->ops->silu_backward(gpu, YP_ELEM_F32, d_x, d_dy, d_dx, n) == 0);
        CHECK(gpu->sync(gpu) == 0);
        CHECK(from_device(y_gpu, d_y, n) == 0);
        CHECK(from_device(dx_gpu, d_dx, n) == 0);
        CHECK_EQ_I64(count_mismatches("forward", y_gpu, y_cpu, x, n, 1e-5, 1e-6), 0);
        CHECK_EQ_I64(count_mismatches("backward", dx_gpu, dx_cpu, x, n, 1e-5, 1e-6), 0);

        /* in place on the device: y = silu(y) from x, dx = backward(x, dx) from dy */
        CHECK(gpu->mem_copy(gpu, d_y, d_x, (size_t)n * sizeof(float), YP_COPY_DEVICE_TO_DEVICE) == 0);
        CHECK(gpu->ops->silu_forward(gpu, YP_ELEM_F32, d_y, d_y, n) == 0);
        CHECK(gpu->mem_copy(gpu, d_dx, d_dy, (size_t)n * sizeof(float), YP_COPY_DEVICE_TO_DEVICE) == 0);
        CHECK(gpu->ops->silu_backward(gpu, YP_ELEM_F32, d_x, d_dx, d_dx, n) == 0);
        CHECK(from_device(y_gpu, d_y, n) == 0);
        CHECK(from_device(dx_gpu, d_dx, n) == 0);
        CHECK_EQ_I64(count_mismatches("forward in place", y_gpu, y_cpu, x, n, 1e-5, 1e-6), 0);
        CHECK_EQ_I64(count_mismatches("backward in place", dx_gpu, dx_cpu, x, n, 1e-5, 1e-6), 0);
    }
    gpu->mem_free(gpu, d_x);
    gpu->mem_free(gpu, d_dy);
    gpu->mem_free(gpu, d_y);
    gpu->mem_free(gpu, d_dx);
done:
    free(x), free(dy), free(y_cpu), free(y_gpu), free(dx_cpu), free(dx_gpu);
}

static void test_counts(void) {
    CHECK(gpu->ops->silu_forward(gpu, YP_ELEM_F32, NULL, NULL, 0) == 0);
    CHECK(gpu->ops->silu_forward(gpu, YP_ELEM_F32, NULL, NULL, -5) == -1);
    CHECK_STR_HAS(gpu->last_error(gpu), "negative");
    CHECK(gpu->ops->silu_backward(gpu, YP_ELEM_F32, NULL, NULL, NULL, 3) == -1);
    CHECK_STR_HAS(gpu->last_error(gpu), "NULL");
    CHECK(gpu->sync(gpu) == 0);
}

static void test_memory(void) {
    CHECK(strcmp(gpu->name, "cuda") == 0);
    CHECK(gpu->host_memory == 0);
    size_t sizes[] = {0, 1, 255, 257, 1 << 20};
    for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
        unsigned char *p = gpu->mem_alloc(gpu, sizes[k]);
        CHECK(p != NULL);
        if (!p)
            continue;
        CHECK((uintptr_t)p % gpu->alignment == 0);
        CHECK(gpu->mem_set(gpu, p, 0x5a, sizes[k]) == 0);
        unsigned char *q = malloc(sizes[k] + 1);
        CHECK(q && gpu->mem_copy(gpu, q, p, sizes[k], YP_COPY_DEVICE_TO_HOST) == 0);
        for (size_t i = 0; q && i < sizes[k]; i++)
            if (q[i] != 0x5a) {
                CHECK(q[i] == 0x5a);
                break;
            }
        free(q);
        gpu->mem_free(gpu, p);
    }
    gpu->mem_free(gpu, NULL);
    /* 1 PiB fits no GPU: a NULL result with the free memory named, and the device still usable. */
    CHECK(gpu->mem_alloc(gpu, (size_t)1 << 50) == NULL);
    CHECK_STR_HAS(gpu->last_error(gpu), "GiB free");
    CHECK(gpu->sync(gpu) == 0);
    float one = 1.0f, out = 0.0f;
    float *d = gpu->mem_alloc(gpu, sizeof one);
    CHECK(d && gpu->mem_copy(gpu, d, &one, sizeof one, YP_COPY_HOST_TO_DEVICE) == 0);
    CHECK(d && gpu->ops->silu_forward(gpu, YP_ELEM_F32, d, d, 1) == 0);
    CHECK(d && gpu->mem_copy(gpu, &out, d, sizeof out, YP_COPY_DEVICE_TO_HOST) == 0);
    CHECK(fabsf(out - 0.7310586f) < 1e-6f);
    gpu->mem_free(gpu, d);
}

int main(void) {
    int rc = yp_test_cuda_open(&gpu, &cpu, 0);
    if (rc) return rc;
    YP_RUN(test_silu_matches_cpu);
    YP_RUN(test_counts);
    YP_RUN(test_memory);
    yp_backend_free(cpu);
    yp_backend_free(gpu);
    return yp_test_summary();
}
