/* yp_torch_alloc.h - a model of PyTorch's CUDA caching allocator (its native allocator with the
 * default configuration: one device, one stream, no max_split_size, no expandable segments, no
 * power-of-two rounding, no garbage-collection threshold), to replay an allocation/free sequence
 * and read what torch.cuda.memory_allocated() and memory_reserved() would say, with their peaks.
 *
 * The rules, in the allocator's own terms (kMinBlockSize 512 B, kSmallSize 1 MiB, kSmallBuffer
 * 2 MiB, kLargeBuffer 20 MiB, kMinLargeAlloc 10 MiB, kRoundLarge 2 MiB):
 *   - rounding: a request of n bytes becomes max(512, n rounded up to a multiple of 512); a
 *     request of 0 bytes takes nothing (a null handle);
 *   - pools: a rounded size <= 1 MiB is served from the small pool, a larger one from the large
 *     pool; a block never moves between pools;
 *   - best fit: the free block of the request's pool with the smallest size >= the rounded size,
 *     ties broken by the lower address;
 *   - a new segment (cudaMalloc) when no free block fits: 2 MiB for a small-pool request; 20 MiB
 *     for a large-pool request under 10 MiB; otherwise the rounded size rounded up to 2 MiB;
 *   - splitting: the chosen block (cached or new) is split into the request and a free remainder
 *     in the same pool when the remainder is >= 512 B (small pool) or > 1 MiB (large pool);
 *     otherwise the whole block is handed out and counts as allocated (memory_allocated sums
 *     the sizes of the blocks handed out, not the requests);
 *   - free: the block becomes free and merges with its free neighbours in the same segment (a
 *     segment is a chain of blocks by address); blocks of two segments never merge;
 *   - empty_cache: every segment that is one free block is released (cudaFree); a segment with
 *     any block in use stays whole, free parts included;
 *   - out of memory: with a capacity (the bytes cudaMalloc can give), a segment that does not fit
 *     first makes the allocator release its cached free segments (as empty_cache) and try again;
 *     if it still does not fit the request fails (CUDA out of memory), nothing changed but the
 *     release.
 * reserved is the sum of the segments' sizes; allocated the sum of the blocks in use.
 * Addresses are a model: segment i starts where the segments made before it end (released ones
 * included), so ties in best fit go to the older segment. The real addresses come from the driver;
 * only ties between free blocks of equal size can differ.
 *
 * Ownership: yp_torch_alloc_new returns an allocator the caller frees with yp_torch_alloc_free. */
#ifndef YP_TORCH_ALLOC_H
#define YP_TORCH_ALLOC_H

#include <stdint.h>

#include "yp_error.h"

#define YP_TA_MIN_BLOCK ((int64_t)512)
#define YP_TA_SMALL_SIZE ((int64_t)1 << 20)
#define YP_TA_SMALL_BUFFER ((int64_t)2 << 20)
#define YP_TA_LARGE_BUFFER ((int64_t)20 << 20)
#define YP_TA_MIN_LARGE_ALLOC ((int64_t)10 << 20)
#define YP_TA_ROUND_LARGE ((int64_t)2 << 20)

typedef struct yp_torch_alloc yp_torch_alloc;

typedef struct {
    int64_t allocated, reserved;           /* current: memory_allocated(), memory_reserved() */
    int64_t peak_allocated, peak_reserved; /* max_memory_allocated(), max_memory_reserved() */
    int64_t requested;                     /* current sum of the requests in use, unrounded */
    int segments;                          /* segments held now */
    int64_t n_segment_allocs, n_segment_frees; /* cudaMalloc and cudaFree calls so far */
    int64_t n_retries;                     /* requests that released the cache to fit (num_alloc_retries) */
    int64_t n_ooms;                        /* requests that failed for lack of capacity (num_ooms) */
} yp_torch_alloc_stats;

/* Where a handle's block lies (tests and reports). */
typedef struct {
    int64_t addr, size; /* the block: its model address and size (the rounded request, or more
                         * when the block was not split) */
    int segment;        /* index of its segment, in the order segments were made */
    int64_t segment_addr, segment_size;
    int small;          /* from the small pool */
} yp_torch_block;

/* The size a request of n bytes is rounded to; -1 when n < 0 or the rounding overflows. */
int64_t yp_torch_round_size(int64_t n);

/* The size of the segment a rounded size r gets when no cached block fits; -1 when r <= 0 or on
 * overflow. */
int64_t yp_torch_segment_size(int64_t r);

/* A new allocator holding nothing. capacity: the bytes its segments may take in all (what
 * cudaMalloc can give); 0 for no limit. NULL with err set on a negative capacity or no memory. */
yp_torch_alloc *yp_torch_alloc_new(int64_t capacity, yp_err *err);
void yp_torch_alloc_free(yp_torch_alloc *a);

/* Allocates n bytes: *handle gets a handle for yp_torch_free (-1, the null handle, for n = 0).
 * Returns 0; 1 when the device is out of memory (capacity set; *handle = -1; the cache was
 * released before giving up, as PyTorch does); -1 with err set when n < 0, on overflow or when
 * the host is out of memory. */
int yp_torch_malloc(yp_torch_alloc *a, int64_t n, int *handle, yp_err *err);

/* Frees the block of handle h (the null handle -1 is a no-op); a freed handle may be handed out
 * again by a later request, as a freed pointer may. 0, or -1 with err set when h is not a handle
 * in use. */
int yp_torch_free(yp_torch_alloc *a, int h, yp_err *err);

/* torch.cuda.empty_cache(): releases every segment that is one free block. */
void yp_torch_empty_cache(yp_torch_alloc *a);

/* torch.cuda.reset_peak_memory_stats(): the peaks become the current values. */
void yp_torch_reset_peaks(yp_torch_alloc *a);

yp_torch_alloc_stats yp_torch_alloc_stats_get(const yp_torch_alloc *a);

/* The block of handle h in use. 0, or -1 with err set when h is not a handle in use. */
int yp_torch_block_get(const yp_torch_alloc *a, int h, yp_torch_block *out, yp_err *err);

#endif
