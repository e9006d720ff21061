/* torch_alloc.c - the model of PyTorch's CUDA caching allocator (yp_torch_alloc.h): segments as
 * chains of blocks by address, best fit by scanning the pool's free blocks. */
#include <stdlib.h>
#include <string.h>

#include "yp_torch_alloc.h"

typedef struct {
    int64_t addr, size, req; /* req: the request a block in use serves (unrounded) */
    int seg, prev, next;     /* prev/next: neighbours in the segment, -1 at its ends */
    unsigned char used, live, small;
} ta_block;

typedef struct {
    int64_t addr, size;
    int head; /* its first block */
    unsigned char live;
} ta_segment;

struct yp_torch_alloc {
    int64_t capacity, next_addr;
    ta_block *b;
    ta_segment *s;
    int nb, cap_b, ns, cap_s;
    yp_torch_alloc_stats st;
};

/* ---------------------------------------------------------------- sizes */

int64_t yp_torch_round_size(int64_t n) {
    if (n < 0 || n > INT64_MAX - YP_TA_MIN_BLOCK) return -1;
    if (n < YP_TA_MIN_BLOCK) return YP_TA_MIN_BLOCK;
    return (n + YP_TA_MIN_BLOCK - 1) / YP_TA_MIN_BLOCK * YP_TA_MIN_BLOCK;
}

int64_t yp_torch_segment_size(int64_t r) {
    if (r <= 0 || r > INT64_MAX - YP_TA_ROUND_LARGE) return -1;
    if (r <= YP_TA_SMALL_SIZE) return YP_TA_SMALL_BUFFER;
    if (r < YP_TA_MIN_LARGE_ALLOC) return YP_TA_LARGE_BUFFER;
    return (r + YP_TA_ROUND_LARGE - 1) / YP_TA_ROUND_LARGE * YP_TA_ROUND_LARGE;
}

/* Is the remainder of a block of this pool worth a block of its own? */
static int should_split(int small, int64_t remaining) {
    return small ? remaining >= YP_TA_MIN_BLOCK : remaining > YP_TA_SMALL_SIZE;
}

/* ---------------------------------------------------------------- storage */

/* Array p of elements of `size` bytes grown to hold need; 0, or -1 leaving it unchanged. */
static int grow(void **p, int *cap, int need, size_t size) {
    if (need <= *cap) return 0;
    if (need < 0 || *cap > INT32_MAX / 2) return -1;
    int c = *cap ? *cap * 2 : 64;
    if (c < need) c = need;
    void *np = realloc(*p, (size_t)c * size);
    if (!np) return -1;
    *p = np, *cap = c;
    return 0;
}

/* A new free block; its index, or -1 when the host is out of memory. */
static int new_block(yp_torch_alloc *a, int64_t addr, int64_t size, int seg, int small) {
    if (grow((void **)&a->b, &a->cap_b, a->nb + 1, sizeof *a->b)) return -1;
    ta_block *k = &a->b[a->nb];
    memset(k, 0, sizeof *k);
    k->addr = addr, k->size = size, k->seg = seg, k->prev = k->next = -1;
    k->live = 1, k->small = (unsigned char)small;
    return a->nb++;
}

yp_torch_alloc *yp_torch_alloc_new(int64_t capacity, yp_err *err) {
    if (capacity < 0) {
        yp_err_set(err, "caching allocator: capacity %lld: must be 0 (no limit) or positive", (long long)capacity);
        return NULL;
    }
    yp_torch_alloc *a = calloc(1, sizeof *a);
    if (!a) yp_err_set(err, "caching allocator: out of host memory");
    else a->capacity = capacity;
    return a;
}

void yp_torch_alloc_free(yp_torch_alloc *a) {
    if (!a) return;
    free(a->b), free(a->s), free(a);
}

/* ---------------------------------------------------------------- segments */

static void bump_peaks(yp_torch_alloc *a) {
    if (a->st.allocated > a->st.peak_allocated) a->st.peak_allocated = a->st.allocated;
    if (a->st.reserved > a->st.peak_reserved) a->st.peak_reserved = a->st.reserved;
}

void yp_torch_empty_cache(yp_torch_alloc *a) {
    for (int i = 0; i < a->ns; i++) {
        ta_segment *g = &a->s[i];
        ta_block *h = &a->b[g->head];
        if (!g->live || h->used || h->next >= 0) continue;
        g->live = 0, h->live = 0;
        a->st.reserved -= g->size;
        a->st.segments--;
        a->st.n_segment_frees++;
    }
}

/* Does a segment of `size` fit beside what is reserved? */
static int fits(const yp_torch_alloc *a, int64_t size) {
    return !a->capacity || (a->st.reserved <= a->capacity && size <= a->capacity - a->st.reserved);
}

/* A new segment for rounded size r, as one free block (*blk). 0; 1 when it does not fit even
 * after the cache is released; -1 with err set on overflow or no host memory. */
static int new_segment(yp_torch_alloc *a, int64_t r, int small, int *blk, yp_err *err) {
    int64_t size = yp_torch_segment_size(r);
    if (size < 0 || a->next_addr > INT64_MAX - size) return yp_err_set(err, "caching allocator: over 2^63 bytes");
    if (!fits(a, size)) {
        a->st.n_retries++;
        yp_torch_empty_cache(a);
        if (!fits(a, size)) {
            a->st.n_ooms++;
            return 1;
        }
    }
    if (grow((void **)&a->s, &a->cap_s, a->ns + 1, sizeof *a->s))
        return yp_err_set(err, "caching allocator: out of host memory");
    int k = new_block(a, a->next_addr, size, a->ns, small);
    if (k < 0) return yp_err_set(err, "caching allocator: out of host memory");
    a->s[a->ns] = (ta_segment){a->next_addr, size, k, 1};
    a->ns++;
    a->next_addr += size;
    a->st.reserved += size;
    a->st.segments++;
    a->st.n_segment_allocs++;
    bump_peaks(a);
    *blk = k;
    return 0;
}

/* ---------------------------------------------------------------- blocks */

/* The free block of the pool with the smallest size >= r, the lower address on a tie; -1 if none. */
static int best_fit(const yp_torch_alloc *a, int small, int64_t r) {
    int best = -1;
    for (int i = 0; i < a->nb; i++) {
        const ta_block *k = &a->b[i];
        if (!k->live || k->used || k->small != small || k->size < r) continue;
        if (best < 0 || k->size < a->b[best].size || (k->size == a->b[best].size && k->addr < a->b[best].addr))
            best = i;
    }
    return best;
}

/* Splits block i into r bytes and a free remainder after it when the pool's rule allows. 0, or
 * -1 when the host is out of memory. */
static int split(yp_torch_alloc *a, int i, int64_t r) {
    int64_t rem = a->b[i].size - r;
    if (!should_split(a->b[i].small, rem)) return 0;
    int k = new_block(a, a->b[i].addr + r, rem, a->b[i].seg, a->b[i].small);
    if (k < 0) return -1;
    a->b[k].prev = i, a->b[k].next = a->b[i].next;
    if (a->b[i].next >= 0) a->b[a->b[i].next].prev = k;
    a->b[i].next = k, a->b[i].size = r;
    return 0;
}

int yp_torch_malloc(yp_torch_alloc *a, int64_t n, int *handle, yp_err *err) {
    *handle = -1;
    if (n < 0) return yp_err_set(err, "caching allocator: request of %lld bytes", (long long)n);
    if (n == 0) return 0;
    int64_t r = yp_torch_round_size(n);
    if (r < 0) return yp_err_set(err, "caching allocator: request of %lld bytes overflows", (long long)n);
    int small = r <= YP_TA_SMALL_SIZE;
    int i = best_fit(a, small, r);
    if (i < 0) {
        int rc = new_segment(a, r, small, &i, err);
        if (rc) return rc;
    }
    if (split(a, i, r)) return yp_err_set(err, "caching allocator: out of host memory");
    ta_block *k = &a->b[i];
    k->used = 1, k->req = n;
    a->st.allocated += k->size;
    a->st.requested += n;
    bump_peaks(a);
    *handle = i;
    return 0;
}

static int in_use(const yp_torch_alloc *a, int h) { return h >= 0 && h < a->nb && a->b[h].live && a->b[h].used; }

/* Block j absorbs its next neighbour when that one is free. */
static void merge_next(yp_torch_alloc *a, int j) {
    int nx = a->b[j].next;
    if (nx < 0 || a->b[nx].used) return;
    a->b[j].size += a->b[nx].size;
    a->b[j].next = a->b[nx].next;
    if (a->b[nx].next >= 0) a->b[a->b[nx].next].prev = j;
    a->b[nx].live = 0;
}

int yp_torch_free(yp_torch_alloc *a, int h, yp_err *err) {
    if (h == -1) return 0;
    if (!in_use(a, h)) return yp_err_set(err, "caching allocator: free of handle %d, which is not in use", h);
    ta_block *k = &a->b[h];
    k->used = 0;
    a->st.allocated -= k->size;
    a->st.requested -= k->req;
    k->req = 0;
    merge_next(a, h);
    if (a->b[h].prev >= 0 && !a->b[a->b[h].prev].used) merge_next(a, a->b[h].prev);
    return 0;
}

void yp_torch_reset_peaks(yp_torch_alloc *a) {
    a->st.peak_allocated = a->st.allocated;
    a->st.peak_reserved = a->st.reserved;
}

yp_torch_alloc_stats yp_torch_alloc_stats_get(const yp_torch_alloc *a) { return a->st; }

int yp_torch_block_get(const yp_torch_alloc *a, int h, yp_torch_block *out, yp_err *err) {
    if (!in_use(a, h)) return yp_err_set(err, "caching allocator: handle %d is not in use", h);
    const ta_block *k = &a->b[h];
    const ta_segment *g = &a->s[k->seg];
    *out = (yp_torch_block){k->addr, k->size, k->seg, g->addr, g->size, k->small};
    return 0;
}
