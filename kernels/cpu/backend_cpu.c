/* backend_cpu.c - CPU instances: creation (the thread count and the conv state of conv.c) and
 * release, host memory with a fixed alignment, plain memcpy / memset, a no-op sync, the thread's
 * last error, and thread_init. Ops live in one file per op beside this one. */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <omp.h>
#if defined(__SSE__)
#include <xmmintrin.h>
#endif

#include "yp_backend.h"
#include "yp_cpu.h"

/* 64 bytes: one cache line, one AVX-512 vector; arena offsets aligned to it never split a line. */
#define YP_CPU_ALIGNMENT 64

static _Thread_local char cpu_last_error[256];

int yp_cpu_fail(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cpu_last_error, sizeof cpu_last_error, fmt, ap);
    va_end(ap);
    return -1;
}

/* Flush-to-zero and denormals-are-zero for this thread's SSE arithmetic: gradients and SiLU tails
 * reach the denormal range, where every operation takes a microcode assist (measured: yolov5s
 * steps 2.5x slower with them). Training runtimes run this way (oneDNN sets the same bits); the
 * values lost are below 1.2e-38. */
static void cpu_thread_init(yp_backend *be) {
    /* the instance's thread count for this thread's OpenMP loops and oneDNN (yp_backend.h) */
    int n = yp_cpu_of(be)->threads;
    if (omp_get_max_threads() != n) omp_set_num_threads(n);
#if defined(__SSE__)
    _mm_setcsr(_mm_getcsr() | 0x8040); /* FTZ (bit 15) | DAZ (bit 6) */
    /* and in the OpenMP workers (threads created later copy the caller's bits) */
#pragma omp parallel
    _mm_setcsr(_mm_getcsr() | 0x8040);
#endif
}

static const char *cpu_last_error_get(yp_backend *be) {
    (void)be;
    return cpu_last_error;
}

/* Returns aligned memory of at least max(bytes, 1) rounded up to the alignment (aligned_alloc needs
 * a multiple), or NULL with the reason recorded. The caller frees it with cpu_mem_free. */
static void *cpu_mem_alloc(yp_backend *be, size_t bytes) {
    (void)be;
    if (bytes > SIZE_MAX - YP_CPU_ALIGNMENT) {
        yp_cpu_fail("cpu alloc: %zu bytes is too large", bytes);
        return NULL;
    }
    size_t rounded = (bytes + YP_CPU_ALIGNMENT - 1) / YP_CPU_ALIGNMENT * YP_CPU_ALIGNMENT;
    if (rounded == 0)
        rounded = YP_CPU_ALIGNMENT;
    void *p = aligned_alloc(YP_CPU_ALIGNMENT, rounded);
    if (!p)
        yp_cpu_fail("cpu alloc: out of memory allocating %zu bytes (%.2f GiB)", rounded,
                    (double)rounded / (1024.0 * 1024.0 * 1024.0));
    return p;
}

static void cpu_mem_free(yp_backend *be, void *ptr) {
    (void)be;
    free(ptr);
}

/* Host and device are the same memory, so every direction is one memmove (callers may overlap
 * device-to-device ranges; memmove keeps that defined). */
static int cpu_mem_copy(yp_backend *be, void *dst, const void *src, size_t bytes, yp_copy dir) {
    (void)be;
    if (dir != YP_COPY_HOST_TO_DEVICE && dir != YP_COPY_DEVICE_TO_HOST &&
        dir != YP_COPY_DEVICE_TO_DEVICE)
        return yp_cpu_fail("cpu mem_copy: invalid direction %d", (int)dir);
    if (bytes == 0)
        return 0;
    if (!dst || !src)
        return yp_cpu_fail("cpu mem_copy: NULL pointer with %zu bytes", bytes);
    memmove(dst, src, bytes);
    return 0;
}

static int cpu_mem_set(yp_backend *be, void *dst, int value, size_t bytes) {
    (void)be;
    if (bytes == 0)
        return 0;
    if (!dst)
        return yp_cpu_fail("cpu mem_set: NULL pointer with %zu bytes", bytes);
    memset(dst, value, bytes);
    return 0;
}

static int cpu_sync(yp_backend *be) {
    (void)be;
    return 0;
}

static void cpu_release(yp_backend *be) {
    yp_cpu_backend *cb = yp_cpu_of(be);
    yp_cpu_conv_destroy(cb);
    free(cb);
}

static const yp_backend cpu_template = {
    .name = "cpu",
    .alignment = YP_CPU_ALIGNMENT,
    .host_memory = 1,
    .mem_alloc = cpu_mem_alloc,
    .mem_free = cpu_mem_free,
    .mem_copy = cpu_mem_copy,
    .mem_set = cpu_mem_set,
    .sync = cpu_sync,
    .last_error = cpu_last_error_get,
    .thread_init = cpu_thread_init,
    .release = cpu_release,
    .ops = &yp_cpu_ops,
};

/* OMP_NUM_THREADS (its first number), else one per available core: what OpenMP starts with,
 * whatever the process has set since. */
static int default_threads(void) {
    const char *env = getenv("OMP_NUM_THREADS");
    long n = env ? strtol(env, NULL, 10) : 0;
    return n >= 1 && n <= 4096 ? (int)n : omp_get_num_procs();
}

yp_backend *yp_backend_cpu_new(const yp_cpu_config *cfg, char *why, size_t why_len) {
    yp_cpu_backend *cb = calloc(1, sizeof *cb);
    if (!cb) {
        if (why && why_len) snprintf(why, why_len, "cpu backend: out of memory");
        return NULL;
    }
    cb->base = cpu_template;
    cb->threads = cfg && cfg->threads >= 1 ? cfg->threads : default_threads();
    if (yp_cpu_conv_create(cb, why, why_len)) {
        free(cb);
        return NULL;
    }
    return &cb->base;
}

int yp_backend_cpu_threads(const yp_backend *be) {
    return be && be->release == cpu_release ? ((const yp_cpu_backend *)be)->threads : 0;
}
