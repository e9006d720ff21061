/* yp_backend.h - the backend interface: one small table of function pointers per
 * device. The executor allocates one arena through mem_alloc, binds tensors to offsets inside it, and
 * runs each step through the op entries. CPU code never mentions CUDA; the CUDA table lives in
 * kernels/cuda/ and is only reachable through yp_backend_cuda().
 *
 * Defines: yp_backend (the table), yp_copy (memcpy direction), yp_backend_cpu, yp_backend_cuda,
 * yp_kernels_build_info.
 *
 * Conventions for every entry:
 *   - pointers named dst/src/x/y/dx/dy are device pointers of this backend (from mem_alloc), except
 *     the host side of a yp_copy; element counts are int64_t, byte counts size_t;
 *   - int-returning entries return 0 on success, -1 on failure; the reason for the last failure on
 *     the calling thread is then available from `last_error` (never NULL, "" before any failure);
 *   - a count of 0 is a no-op that succeeds; a negative count fails;
 *   - op entries may be NULL when a backend lacks that op (optional entries, as in ggml);
 *   - ops are asynchronous on devices that have a queue: call `sync` before reading results on the
 *     host other than through mem_copy (which waits for preceding work).
 * The tables are static and immutable: never free them. */
#ifndef YP_BACKEND_H
#define YP_BACKEND_H

#include <stddef.h>
#include <stdint.h>

#include "yp_ops.h"

typedef enum {
    YP_COPY_HOST_TO_DEVICE,
    YP_COPY_DEVICE_TO_HOST,
    YP_COPY_DEVICE_TO_DEVICE,
} yp_copy;

typedef struct yp_backend {
    const char *name; /* "cpu", "cuda" */
    size_t alignment; /* every alloc is aligned to this many bytes; arena offsets should be too */
    int host_memory;  /* 1 when pointers from alloc can be dereferenced by host code */

    /* (Entries are named mem_* rather than malloc/free/memcpy/memset so that libc macros of those
     * names can never expand inside `be->mem_copy(...)`.) */
    /* Returns `bytes` (rounded up to alignment) of device memory, or NULL on failure (last_error says
     * why, e.g. out of memory). The caller owns it and releases it with mem_free. */
    void *(*mem_alloc)(size_t bytes);
    void (*mem_free)(void *ptr); /* NULL is a no-op */
    /* Copies bytes; waits for queued work first and returns once the data has arrived. */
    int (*mem_copy)(void *dst, const void *src, size_t bytes, yp_copy dir);
    int (*mem_set)(void *dst, int value, size_t bytes);
    int (*sync)(void); /* waits for all queued work; reports errors of asynchronous ops */
    const char *(*last_error)(void);
    /* Optional: the device's name and its total and free memory now (cudaMemGetInfo). */
    int (*device_info)(char *name, size_t name_len, int64_t *total_bytes, int64_t *free_bytes);

    /* The op table (yp_ops.h): every op of the backend is there; entries it lacks are NULL. */
    const yp_ops *ops;
    /* Optional: prepares the calling thread to run ops (CPU: flush denormals to zero). */
    void (*thread_init)(void);
} yp_backend;

/* The CPU backend; always available. */
const yp_backend *yp_backend_cpu(void);

/* Threads the CPU backend (its OpenMP loops and oneDNN) may use from the calling thread on; n < 1
 * leaves the default (OMP_NUM_THREADS, else one per core). */
void yp_cpu_set_threads(int n);

/* The CUDA backend on device 0, or NULL with a one-line reason in why (truncated to why_len; why
 * may be NULL) when the library was built without CUDA, no driver is loaded, no device is present,
 * or the device is older than the architectures this build targets. */
const yp_backend *yp_backend_cuda(char *why, size_t why_len);

/* A static one-line description of what was compiled in, e.g.
 * "cpu; cuda: built for sm_75,sm_80,sm_86,sm_89,sm_90 with CUDA 13.0, cuDNN 9.19.0" or
 * "cpu; cuda: not built". Needs no GPU. */
const char *yp_kernels_build_info(void);

#endif
