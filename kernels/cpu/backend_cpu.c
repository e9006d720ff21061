/* backend_cpu.c - the CPU backend's table: host memory with a fixed alignment, plain memcpy /
 * memset, a no-op sync, and the thread's last error. Ops live in one file per op beside this one. */
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
static void cpu_thread_init(void) {
#if defined(__SSE__)
    _mm_setcsr(_mm_getcsr() | 0x8040); /* FTZ (bit 15) | DAZ (bit 6) */
    /* and in the OpenMP workers (threads created later copy the caller's bits) */
#pragma omp parallel
    _mm_setcsr(_mm_getcsr() | 0x8040);
#endif
}

static const char *cpu_last_error_get(void) {
    return cpu_last_error;
}

/* Returns aligned memory of at least max(bytes, 1) rounded up to the alignment (aligned_alloc needs
 * a multiple), or NULL with the reason recorded. The caller frees it with cpu_mem_free. */
static void *cpu_mem_alloc(size_t bytes) {
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

static void cpu_mem_free(void *ptr) {
    free(ptr);
}

/* Host and device are the same memory, so every direction is one memmove (callers may overlap
 * device-to-device ranges; memmove keeps that defined). */
static int cpu_mem_copy(void *dst, const void *src, size_t bytes, yp_copy dir) {
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

static int cpu_mem_set(void *dst, int value, size_t bytes) {
    if (bytes == 0)
        return 0;
    if (!dst)
        return yp_cpu_fail("cpu mem_set: NULL pointer with %zu bytes", bytes);
    memset(dst, value, bytes);
    return 0;
}

static int cpu_sync(void) {
    return 0;
}

static const yp_backend cpu_backend = {
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
    .ops = &yp_cpu_ops,
};

const yp_backend *yp_backend_cpu(void) {
    return &cpu_backend;
}

void yp_cpu_set_threads(int n) {
    if (n >= 1) omp_set_num_threads(n);
}
