/* yp_backend.h - the backend interface: a backend is an instance, created for one device with its
 * context, that carries one table of function pointers for memory and one of ops (yp_ops.h). The
 * executor allocates one arena through mem_alloc, binds tensors to offsets inside it, and runs
 * each step through the op entries. CPU code never mentions CUDA; the CUDA backend lives in
 * kernels/cuda/ and is only reachable through yp_backend_cuda_new(). Which kinds of backend there
 * are, the device specs that make their instances ("cpu:8", "cuda:1") and the conv scratch models
 * they answer are the kind table's (yp_backend_kind.h).
 *
 * Defines: yp_backend (an instance), yp_copy (memcpy direction), yp_cpu_config,
 * yp_backend_cpu_new, yp_backend_cpu_threads, yp_backend_cuda_new, yp_backend_cuda_ops,
 * yp_backend_free, yp_backend_device_free, yp_kernels_build_info.
 *
 * Instances: yp_backend_cpu_new / yp_backend_cuda_new return a new instance that the caller
 * releases with yp_backend_free once nothing uses its memory or ops any more. The instance holds
 * its context, and freeing it frees all of that:
 *   - cpu: its thread count, the oneDNN engine and stream, and the conv primitives built for it
 *     (conv2d_prepare, or an op's first use);
 *   - cuda: its device, the stream all of its work is queued on, and the library state its ops
 *     use (the cuDNN handle bound to the stream, the device words of the loss and of
 *     sum_squares: each instance its own), all created by yp_backend_cuda_new, so that nothing is
 *     allocated on the device after it but by mem_alloc (fixed_bytes says what that state took).
 * Several instances may live at once (CPU ones with different thread counts, one per GPU). An
 * instance is not thread-safe: use it from one thread at a time (its ops run their own threads).
 *
 * Context rule: every entry of the instance and of its op table takes the instance as its first
 * argument, `be`, and must be given the instance whose table it was read from:
 * `be->mem_alloc(be, n)`, `be->ops->silu_forward(be, YP_ELEM_F32, x, y, n)`.
 *
 * Threads (CPU): an instance runs with the thread count it was created with. thread_init(be) sets
 * the calling thread's OpenMP thread count to it (and flushes denormals); call it on each thread
 * before that thread's first op and again whenever something else may have changed the setting
 * (the executor calls it at the start of every micro-step and update). oneDNN's scratchpad sizes
 * depend on the thread count: conv2d_scratch and conv2d_prepare set the instance's count while
 * they build (as does an op that builds on first use) and restore the caller's after, so a conv's
 * scratch depends on the instance only.
 *
 * Element types: every op is told the element type of its operands, in its descriptor or as the
 * parameter after `be` (yp_ops.h); a backend refuses a type it lacks (the CPU runs fp32 only).
 *
 * Conventions for every entry:
 *   - pointers named dst/src/x/y/dx/dy are device pointers of this instance (from its mem_alloc),
 *     except the host side of a yp_copy; element counts are int64_t, byte counts size_t;
 *   - int-returning entries return 0 on success, -1 on failure; the reason for the last failure of
 *     this kind of backend on the calling thread is then available from `last_error` (never NULL,
 *     "" before any failure);
 *   - a count of 0 is a no-op that succeeds; a negative count fails;
 *   - op entries may be NULL when a backend lacks that op (optional entries, as in ggml);
 *   - ops are asynchronous on devices that have a queue: call `sync` before reading results on the
 *     host other than through mem_copy (which waits for preceding work). */
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

struct yp_backend {
    const char *name; /* "cpu", "cuda" */
    size_t alignment; /* every alloc is aligned to this many bytes; arena offsets should be too */
    int host_memory;  /* 1 when pointers from alloc can be dereferenced by host code */
    /* Device memory the instance's own state took when it was created, outside anything mem_alloc
     * returns: what a run needs on the device besides its arena. CUDA: the free memory
     * cudaMemGetInfo reports once the context exists, less what it reports once the stream and
     * every library handle and buffer of the instance exist (the context itself came before the
     * first reading, and kernel code the driver loads at a kernel's first launch, lazy module
     * loading being CUDA's default, comes after the second). 0 for the CPU backend: its state is
     * host memory (the process's RSS). */
    int64_t fixed_bytes;

    /* (Entries are named mem_* rather than malloc/free/memcpy/memset so that libc macros of those
     * names can never expand inside `be->mem_copy(...)`.) */
    /* Returns `bytes` (rounded up to alignment) of device memory, or NULL on failure (last_error says
     * why, e.g. out of memory). The caller owns it and releases it with mem_free of this instance. */
    void *(*mem_alloc)(yp_backend *be, size_t bytes);
    void (*mem_free)(yp_backend *be, void *ptr); /* NULL is a no-op */
    /* Copies bytes; waits for queued work first and returns once the data has arrived. */
    int (*mem_copy)(yp_backend *be, void *dst, const void *src, size_t bytes, yp_copy dir);
    int (*mem_set)(yp_backend *be, void *dst, int value, size_t bytes);
    int (*sync)(yp_backend *be); /* waits for all queued work; reports errors of asynchronous ops */
    const char *(*last_error)(yp_backend *be);
    /* Optional: the device's name and its total and free memory now (cudaMemGetInfo). NULL on the
     * CPU backend, whose memory is the host's (yp_backend_device_free says "unknown"). */
    int (*device_info)(yp_backend *be, char *name, size_t name_len, int64_t *total_bytes, int64_t *free_bytes);

    /* The op table (yp_ops.h): every op of the backend is there; entries it lacks are NULL. One
     * static table per kind of backend, shared by its instances. */
    const yp_ops *ops;
    /* Optional (CUDA: CUDA graphs): records the instance's queued work for replay, so that a run
     * of ops whose arguments never change (the executor's arena is static) launches as one.
     * Between graph_begin and graph_end the instance's op entries record instead of running: what
     * they queue does not execute, and none of them may wait for the device or copy to or from
     * the host (mem_copy, sync, an op that returns a result to host memory). graph_end stops
     * recording and gives an executable recording in *graph (NULL with last_error when recording
     * failed: it still stops); graph_launch queues it like any op; graph_free releases it. */
    int (*graph_begin)(yp_backend *be);
    int (*graph_end)(yp_backend *be, void **graph);
    int (*graph_launch)(yp_backend *be, void *graph);
    void (*graph_free)(yp_backend *be, void *graph);
    /* Optional: prepares the calling thread to run this instance's ops (CPU: its thread count,
     * flush denormals to zero; see "Threads" above). */
    void (*thread_init)(yp_backend *be);
    /* Frees the instance and its context; yp_backend_free calls it. */
    void (*release)(yp_backend *be);
};

/* What a CPU instance is created with. */
typedef struct {
    int threads; /* OpenMP threads of its loops and of oneDNN; < 1: the default then (OMP_NUM_THREADS,
                    else one per core) */
} yp_cpu_config;

#ifdef __cplusplus
extern "C" {
#endif
/* A new CPU instance (cfg NULL: the defaults), or NULL with a one-line reason in why (truncated to
 * why_len; why may be NULL): out of memory, or oneDNN could not create its engine or stream. */
yp_backend *yp_backend_cpu_new(const yp_cpu_config *cfg, char *why, size_t why_len);

/* The thread count a CPU instance runs with (>= 1); 0 when be is not a CPU instance. */
int yp_backend_cpu_threads(const yp_backend *be);

/* A new CUDA instance on device `device` (0 = the first) with its own stream, or NULL with a
 * one-line reason in why when the library was built without CUDA, no driver is loaded, there is
 * no such device, or the device is older than the architectures this build targets. */
yp_backend *yp_backend_cuda_new(int device, char *why, size_t why_len);

/* The CUDA backend's op table, readable without a device (which entries it has decides the
 * schedule fusions a plan for it may use); NULL when the library was built without CUDA. */
const yp_ops *yp_backend_cuda_ops(void);

/* Frees an instance made by yp_backend_*_new and everything it holds (NULL is a no-op). Memory
 * from its mem_alloc must have been freed first. */
void yp_backend_free(yp_backend *be);

/* The device memory free now for instance be: 1 with *free_bytes set (a backend with
 * device_info), 0 when the backend cannot tell (the CPU: host memory, *free_bytes untouched), -1
 * when asking failed (last_error says why). */
int yp_backend_device_free(yp_backend *be, int64_t *free_bytes);

/* A static one-line description of what was compiled in, e.g.
 * "cpu; cuda: built for sm_75,sm_80,sm_86,sm_89,sm_90 with CUDA 13.0, cuDNN 9.19.0" or
 * "cpu; cuda: not built". Needs no GPU. */
const char *yp_kernels_build_info(void);
#ifdef __cplusplus
}
#endif

#endif
