/* test_torch_alloc.c - the model of PyTorch's CUDA caching allocator (planner/yp_torch_alloc.h)
 * against hand-worked allocation sequences: rounding, each size class, splitting and reuse of
 * the remainder, coalescing, the best-fit choice, no merging across segments, reserved growing
 * and empty_cache shrinking it, the retry and the failure at a capacity; then a long
 * pseudo-random sequence checked against the invariants (blocks in use disjoint and inside
 * their segments, allocated and reserved equal to their sums). */
#include <stdlib.h>

#include "yp_test.h"
#include "yp_torch_alloc.h"

#define KiB ((int64_t)1 << 10)
#define MiB ((int64_t)1 << 20)

static int take(yp_torch_alloc *a, int64_t n) {
    int h = -1;
    yp_err err;
    int rc = yp_torch_malloc(a, n, &h, &err);
    if (rc) fprintf(stderr, "malloc(%lld): rc %d\n", (long long)n, rc);
    CHECK_EQ_I64(rc, 0);
    return h;
}

static void give(yp_torch_alloc *a, int h) {
    yp_err err;
    CHECK_EQ_I64(yp_torch_free(a, h, &err), 0);
}

static yp_torch_block block(const yp_torch_alloc *a, int h) {
    yp_torch_block b = {0};
    yp_err err;
    CHECK_EQ_I64(yp_torch_block_get(a, h, &b, &err), 0);
    return b;
}

static void test_sizes(void) {
    CHECK_EQ_I64(yp_torch_round_size(1), 512);
    CHECK_EQ_I64(yp_torch_round_size(511), 512);
    CHECK_EQ_I64(yp_torch_round_size(512), 512);
    CHECK_EQ_I64(yp_torch_round_size(513), 1024);
    CHECK_EQ_I64(yp_torch_round_size(1000000), 1000448); /* 1953.125 blocks of 512 -> 1954 */
    CHECK_EQ_I64(yp_torch_round_size(-1), -1);
    CHECK_EQ_I64(yp_torch_round_size(INT64_MAX), -1);
    CHECK_EQ_I64(yp_torch_segment_size(512), 2 * MiB);
    CHECK_EQ_I64(yp_torch_segment_size(MiB), 2 * MiB);          /* <= 1 MiB: the small pool */
    CHECK_EQ_I64(yp_torch_segment_size(MiB + 512), 20 * MiB);   /* 1..10 MiB: a 20 MiB segment */
    CHECK_EQ_I64(yp_torch_segment_size(10 * MiB - 512), 20 * MiB);
    CHECK_EQ_I64(yp_torch_segment_size(10 * MiB), 10 * MiB);    /* >= 10 MiB: its own, 2 MiB multiple */
    CHECK_EQ_I64(yp_torch_segment_size(10 * MiB + 512), 12 * MiB);
    CHECK_EQ_I64(yp_torch_segment_size(0), -1);
}

/* The small pool: 2 MiB segments, remainders of 512 B and more split off and reused. */
static void test_small_pool(void) {
    yp_err err;
    yp_torch_alloc *a = yp_torch_alloc_new(0, &err);
    REQUIRE(a != NULL);
    int h0 = take(a, 1000); /* 1024 B at 0 of a new 2 MiB segment; the rest is free */
    yp_torch_block b0 = block(a, h0);
    CHECK_EQ_I64(b0.addr, 0);
    CHECK_EQ_I64(b0.size, 1024);
    CHECK(b0.small);
    CHECK_EQ_I64(b0.segment_size, 2 * MiB);
    int h1 = take(a, 1);    /* the remainder: 512 B at 1024 */
    CHECK_EQ_I64(block(a, h1).addr, 1024);
    CHECK_EQ_I64(block(a, h1).segment, 0);
    int h2 = take(a, MiB);  /* 1 MiB at 1536: still the first segment */
    CHECK_EQ_I64(block(a, h2).addr, 1536);
    yp_torch_alloc_stats st = yp_torch_alloc_stats_get(a);
    CHECK_EQ_I64(st.allocated, 1024 + 512 + MiB);
    CHECK_EQ_I64(st.requested, 1000 + 1 + MiB);
    CHECK_EQ_I64(st.reserved, 2 * MiB);
    CHECK_EQ_I64(st.segments, 1);
    /* left: 2 MiB - 1 MiB - 1536 = 1047040 B; a request of 1047040 - 512 leaves exactly 512: split */
    int h3 = take(a, 1047040 - 512);
    int h4 = take(a, 512); /* takes the 512 B remainder exactly: no split, no new segment */
    CHECK_EQ_I64(block(a, h4).addr, 2 * MiB - 512);
    CHECK_EQ_I64(yp_torch_alloc_stats_get(a).segments, 1);
    int h5 = take(a, 512); /* the first segment is full: a second one */
    CHECK_EQ_I64(block(a, h5).segment, 1);
    CHECK_EQ_I64(block(a, h5).addr, 2 * MiB);
    st = yp_torch_alloc_stats_get(a);
    CHECK_EQ_I64(st.reserved, 4 * MiB);
    CHECK_EQ_I64(st.allocated, 2 * MiB + 512);
    CHECK_EQ_I64(st.peak_reserved, 4 * MiB);
    int hs[] = {h0, h1, h2, h3, h4, h5};
    for (int i = 0; i < 6; i++) give(a, hs[i]);
    st = yp_torch_alloc_stats_get(a);
    CHECK_EQ_I64(st.allocated, 0);
    CHECK_EQ_I64(st.requested, 0);
    CHECK_EQ_I64(st.reserved, 4 * MiB); /* cached, not returned */
    CHECK_EQ_I64(st.peak_allocated, 2 * MiB + 512);
    yp_torch_empty_cache(a);
    st = yp_torch_alloc_stats_get(a);
    CHECK_EQ_I64(st.reserved, 0);
    CHECK_EQ_I64(st.segments, 0);
    CHECK_EQ_I64(st.n_segment_allocs, 2);
    CHECK_EQ_I64(st.n_segment_frees, 2);
    CHECK_EQ_I64(st.peak_reserved, 4 * MiB);
    yp_torch_reset_peaks(a);
    CHECK_EQ_I64(yp_torch_alloc_stats_get(a).peak_reserved, 0);
    yp_torch_alloc_free(a);
}

/* The large pool: 1-10 MiB requests from 20 MiB segments, split only when more than 1 MiB is left;
 * 10 MiB and more in segments of their own, rounded to 2 MiB. */
static void test_large_pool(void) {
    yp_err err;
    yp_torch_alloc *a = yp_torch_alloc_new(0, &err);
    REQUIRE(a != NULL);
    int h0 = take(a, 5 * MiB); /* a 20 MiB segment, 5 MiB used, 15 MiB free after it */
    CHECK(!block(a, h0).small);
    CHECK_EQ_I64(block(a, h0).size, 5 * MiB);
    CHECK_EQ_I64(block(a, h0).segment_size, 20 * MiB);
    int h1 = take(a, 14 * MiB + 512 * KiB); /* from the 15 MiB remainder; 0.5 MiB left: not split */
    CHECK_EQ_I64(block(a, h1).addr, 5 * MiB);
    CHECK_EQ_I64(block(a, h1).size, 15 * MiB);
    yp_torch_alloc_stats st = yp_torch_alloc_stats_get(a);
    CHECK_EQ_I64(st.allocated, 20 * MiB); /* the whole block counts */
    CHECK_EQ_I64(st.requested, 19 * MiB + 512 * KiB);
    CHECK_EQ_I64(st.reserved, 20 * MiB);
    int h2 = take(a, 11 * MiB); /* a 12 MiB segment of its own; 1 MiB left is not > 1 MiB: whole */
    CHECK_EQ_I64(block(a, h2).segment_size, 12 * MiB);
    CHECK_EQ_I64(block(a, h2).size, 12 * MiB);
    CHECK_EQ_I64(block(a, h2).addr, 20 * MiB);
    int h3 = take(a, 10 * MiB); /* exactly 10 MiB: a 10 MiB segment */
    CHECK_EQ_I64(block(a, h3).segment_size, 10 * MiB);
    int h3b = take(a, 10 * MiB - 1); /* rounds to 10 MiB: the class goes by the rounded size */
    CHECK_EQ_I64(block(a, h3b).segment_size, 10 * MiB);
    int h4 = take(a, 10 * MiB - 512); /* under 10 MiB: a 20 MiB segment, 10 MiB + 512 left: split */
    CHECK_EQ_I64(block(a, h4).size, 10 * MiB - 512);
    CHECK_EQ_I64(block(a, h4).segment_size, 20 * MiB);
    int h5 = take(a, 9 * MiB + 512); /* from that remainder (best fit), 1 MiB left: not split */
    CHECK_EQ_I64(block(a, h5).segment, block(a, h4).segment);
    CHECK_EQ_I64(block(a, h5).size, 10 * MiB + 512);
    int h6 = take(a, MiB + 1); /* rounds to 1 MiB + 512: large pool, a new 20 MiB segment */
    CHECK(!block(a, h6).small);
    CHECK_EQ_I64(block(a, h6).size, MiB + 512);
    st = yp_torch_alloc_stats_get(a);
    CHECK_EQ_I64(st.reserved, (20 + 12 + 10 + 10 + 20 + 20) * MiB);
    CHECK_EQ_I64(st.segments, 6);
    int hs[] = {h0, h1, h2, h3, h3b, h4, h5, h6};
    for (int i = 0; i < 8; i++) give(a, hs[i]);
    yp_torch_empty_cache(a);
    CHECK_EQ_I64(yp_torch_alloc_stats_get(a).reserved, 0);
    yp_torch_alloc_free(a);
}

/* Freed neighbours in a segment merge back into one block, and empty_cache releases only segments
 * that are one free block. */
static void test_split_reuse_and_coalesce(void) {
    yp_err err;
    yp_torch_alloc *a = yp_torch_alloc_new(0, &err);
    REQUIRE(a != NULL);
    int x = take(a, 4 * MiB), y = take(a, 4 * MiB), z = take(a, 4 * MiB); /* 0, 4, 8 MiB; 8 MiB free at 12 */
    CHECK_EQ_I64(block(a, y).addr, 4 * MiB);
    CHECK_EQ_I64(block(a, z).addr, 8 * MiB);
    give(a, y); /* free 4 MiB at 4 MiB between two in use: no merge */
    int w = take(a, 3 * MiB); /* best fit: the 4 MiB hole, not the 8 MiB tail; 1 MiB left: whole */
    CHECK_EQ_I64(block(a, w).addr, 4 * MiB);
    CHECK_EQ_I64(block(a, w).size, 4 * MiB);
    give(a, w);
    give(a, z); /* merges with the tail (8 + 4) and then with the hole before it (4): 16 MiB at 4 MiB */
    int whole = take(a, 16 * MiB); /* a 10 MiB+ request takes a cached block that fits before a new segment */
    CHECK_EQ_I64(block(a, whole).addr, 4 * MiB);
    CHECK_EQ_I64(block(a, whole).segment, 0);
    give(a, whole);
    int big = take(a, 17 * MiB); /* nothing fits: a segment of 18 MiB (2 MiB multiple) at 20 MiB */
    CHECK_EQ_I64(block(a, big).segment, 1);
    CHECK_EQ_I64(block(a, big).addr, 20 * MiB);
    CHECK_EQ_I64(block(a, big).size, 18 * MiB);
    give(a, big);
    int v = take(a, 9 * MiB); /* best fit by size: segment 0's 16 MiB, not segment 1's 18 MiB */
    CHECK_EQ_I64(block(a, v).addr, 4 * MiB);
    CHECK_EQ_I64(block(a, v).size, 9 * MiB); /* 7 MiB left: split */
    give(a, v);
    yp_torch_empty_cache(a); /* segment 0 still holds x: only segment 1 goes */
    yp_torch_alloc_stats st = yp_torch_alloc_stats_get(a);
    CHECK_EQ_I64(st.reserved, 20 * MiB);
    CHECK_EQ_I64(st.segments, 1);
    int u = take(a, 15 * MiB + 512 * KiB); /* segment 0's free 16 MiB at 4 MiB (merged back whole) */
    CHECK_EQ_I64(block(a, u).addr, 4 * MiB);
    CHECK_EQ_I64(block(a, u).size, 16 * MiB);
    give(a, u);
    give(a, x); /* now segment 0 is one free block again */
    yp_torch_empty_cache(a);
    CHECK_EQ_I64(yp_torch_alloc_stats_get(a).reserved, 0);
    yp_torch_alloc_free(a);
}

/* Best fit takes the smallest block that fits across segments; adjacent free segments never merge. */
static void test_best_fit_and_segments(void) {
    yp_err err;
    yp_torch_alloc *a = yp_torch_alloc_new(0, &err);
    REQUIRE(a != NULL);
    int a0 = take(a, 6 * MiB), a1 = take(a, 9 * MiB), a2 = take(a, 5 * MiB); /* segment 0 [0, 20): 6 + 9 + 5 */
    int b0 = take(a, 6 * MiB), b1 = take(a, 8 * MiB), b2 = take(a, 6 * MiB); /* segment 1 [20, 40): 6 + 8 + 6 */
    CHECK_EQ_I64(block(a, a2).addr, 15 * MiB);
    CHECK_EQ_I64(block(a, b0).segment, 1);
    CHECK_EQ_I64(block(a, b2).addr, 34 * MiB);
    CHECK_EQ_I64(yp_torch_alloc_stats_get(a).segments, 2);
    give(a, a1), give(a, b1); /* free: 9 MiB at 6, 8 MiB at 26, each between blocks in use */
    int c = take(a, 7 * MiB); /* the 8 MiB block (segment 1), though segment 0's comes first */
    CHECK_EQ_I64(block(a, c).addr, 26 * MiB);
    CHECK_EQ_I64(block(a, c).size, 8 * MiB); /* 1 MiB left: not split */
    give(a, c);
    give(a, a0), give(a, a2), give(a, b0), give(a, b2); /* both segments wholly free and adjacent */
    int d = take(a, 30 * MiB); /* no merging across segments: a new 30 MiB segment */
    CHECK_EQ_I64(block(a, d).segment, 2);
    CHECK_EQ_I64(yp_torch_alloc_stats_get(a).reserved, 70 * MiB);
    int e = take(a, 6 * MiB), f = take(a, 6 * MiB); /* equal free blocks (20 MiB each): the lower address */
    CHECK_EQ_I64(block(a, e).addr, 0);
    CHECK_EQ_I64(block(a, f).addr, 6 * MiB); /* the 14 MiB remainder of segment 0 fits best now */
    give(a, e), give(a, f);
    yp_torch_empty_cache(a);
    yp_torch_alloc_stats st = yp_torch_alloc_stats_get(a);
    CHECK_EQ_I64(st.reserved, 30 * MiB);
    CHECK_EQ_I64(st.peak_reserved, 70 * MiB);
    CHECK_EQ_I64(st.allocated, 30 * MiB);
    give(a, d);
    yp_torch_alloc_free(a);
}

/* At a capacity a segment that does not fit releases the cache and retries; then it fails. */
static void test_capacity(void) {
    yp_err err;
    yp_torch_alloc *a = yp_torch_alloc_new(30 * MiB, &err);
    REQUIRE(a != NULL);
    give(a, take(a, 5 * MiB)); /* 20 MiB cached */
    int h = take(a, 22 * MiB);  /* 20 + 22 > 30: release the cache, then 22 fits */
    yp_torch_alloc_stats st = yp_torch_alloc_stats_get(a);
    CHECK_EQ_I64(st.reserved, 22 * MiB);
    CHECK_EQ_I64(st.n_retries, 1);
    CHECK_EQ_I64(st.n_ooms, 0);
    int k = 7;
    CHECK_EQ_I64(yp_torch_malloc(a, 10 * MiB, &k, &err), 1); /* 22 + 10 > 30 with nothing to release */
    CHECK_EQ_I64(k, -1);
    st = yp_torch_alloc_stats_get(a);
    CHECK_EQ_I64(st.n_ooms, 1);
    CHECK_EQ_I64(st.reserved, 22 * MiB);
    CHECK_EQ_I64(st.allocated, 22 * MiB);
    give(a, h); /* 22 MiB cached */
    int s = take(a, 8 * MiB); /* served from the cached 22 MiB block (split: 14 MiB left), no segment */
    CHECK_EQ_I64(block(a, s).addr, block(a, s).segment_addr);
    CHECK_EQ_I64(yp_torch_alloc_stats_get(a).reserved, 22 * MiB);
    CHECK_EQ_I64(yp_torch_malloc(a, 16 * MiB, &k, &err), 1); /* 14 MiB free is too small; 22 + 16 > 30 and
                                                               * the segment in use cannot be released */
    st = yp_torch_alloc_stats_get(a);
    CHECK_EQ_I64(st.n_ooms, 2);
    CHECK_EQ_I64(st.n_retries, 3);
    CHECK_EQ_I64(st.reserved, 22 * MiB);
    give(a, s);
    CHECK_EQ_I64(take(a, 16 * MiB) >= 0, 1); /* now the merged 22 MiB block serves it */
    CHECK_EQ_I64(yp_torch_alloc_stats_get(a).n_ooms, 2);
    yp_torch_alloc_free(a);
}

static void test_errors(void) {
    yp_err err;
    CHECK(yp_torch_alloc_new(-1, &err) == NULL);
    yp_torch_alloc *a = yp_torch_alloc_new(0, &err);
    REQUIRE(a != NULL);
    int h = 3;
    CHECK_EQ_I64(yp_torch_malloc(a, -5, &h, &err), -1);
    CHECK_EQ_I64(h, -1);
    CHECK_EQ_I64(yp_torch_malloc(a, 0, &h, &err), 0); /* nothing taken: the null handle */
    CHECK_EQ_I64(h, -1);
    CHECK_EQ_I64(yp_torch_alloc_stats_get(a).reserved, 0);
    CHECK_EQ_I64(yp_torch_free(a, -1, &err), 0);
    CHECK_EQ_I64(yp_torch_free(a, 0, &err), -1);
    CHECK_STR_HAS(err.msg, "not in use");
    h = take(a, 100);
    give(a, h);
    CHECK_EQ_I64(yp_torch_free(a, h, &err), -1); /* double free */
    CHECK_EQ_I64(yp_torch_malloc(a, INT64_MAX, &h, &err), -1);
    yp_torch_block b;
    CHECK_EQ_I64(yp_torch_block_get(a, 99, &b, &err), -1);
    yp_torch_alloc_free(a);
}

/* A long pseudo-random sequence (sizes from 1 B to 40 MiB, frees in random order, empty_cache now
 * and then): blocks in use never overlap and lie in their segments, allocated is their sum, every
 * request got at least what it asked for from the pool of its size. */
static uint64_t rng(uint64_t *s) {
    *s = *s * 6364136223846793005ull + 1442695040888963407ull;
    return *s >> 33;
}

static void check_invariants(const yp_torch_alloc *a, const int *live, int n) {
    int64_t sum = 0;
    yp_torch_block *b = malloc((size_t)(n ? n : 1) * sizeof *b);
    REQUIRE(b != NULL);
    for (int i = 0; i < n; i++) {
        b[i] = block(a, live[i]);
        sum += b[i].size;
        CHECK(b[i].addr >= b[i].segment_addr && b[i].addr + b[i].size <= b[i].segment_addr + b[i].segment_size);
        for (int j = 0; j < i; j++) CHECK(b[j].addr + b[j].size <= b[i].addr || b[i].addr + b[i].size <= b[j].addr);
    }
    yp_torch_alloc_stats st = yp_torch_alloc_stats_get(a);
    CHECK_EQ_I64(st.allocated, sum);
    CHECK(st.allocated <= st.reserved && st.reserved <= st.peak_reserved && st.allocated <= st.peak_allocated);
    free(b);
}

static void test_random_sequence(void) {
    yp_err err;
    yp_torch_alloc *a = yp_torch_alloc_new(0, &err);
    REQUIRE(a != NULL);
    enum { N = 64 };
    int live[N], n = 0;
    int64_t asked[N];
    uint64_t s = 14;
    for (int step = 0; step < 3000; step++) {
        uint64_t r = rng(&s);
        if (n < N && (n == 0 || r % 3)) {
            int64_t size = (r & 1) ? (int64_t)(rng(&s) % (2 * MiB)) + 1 : (int64_t)(rng(&s) % (40 * MiB)) + 1;
            int h = take(a, size);
            yp_torch_block b = block(a, h);
            CHECK(b.size >= size);
            CHECK_EQ_I64(b.small, yp_torch_round_size(size) <= MiB);
            asked[n] = size, live[n++] = h;
        } else {
            int k = (int)(rng(&s) % (uint64_t)n);
            give(a, live[k]);
            live[k] = live[--n], asked[k] = asked[n];
        }
        if (step % 500 == 499) yp_torch_empty_cache(a);
        if (step % 100 == 0) check_invariants(a, live, n);
    }
    int64_t req = 0;
    for (int i = 0; i < n; i++) req += asked[i];
    CHECK_EQ_I64(yp_torch_alloc_stats_get(a).requested, req);
    while (n) give(a, live[--n]);
    yp_torch_empty_cache(a);
    CHECK_EQ_I64(yp_torch_alloc_stats_get(a).reserved, 0); /* every segment merged back whole */
    yp_torch_alloc_free(a);
}

int main(void) {
    YP_RUN(test_sizes);
    YP_RUN(test_small_pool);
    YP_RUN(test_large_pool);
    YP_RUN(test_split_reuse_and_coalesce);
    YP_RUN(test_best_fit_and_segments);
    YP_RUN(test_capacity);
    YP_RUN(test_errors);
    YP_RUN(test_random_sequence);
    return yp_test_summary();
}
