/* test_loader.c - the data loader (executor/data/yp_loader.h) on a 12-image synthetic dataset (80x48,
 * JPEG and PNG) written to a temporary folder, at imgsz 64: 1 and 3 workers give byte-identical
 * batches over 2 epochs, other seeds differ, each epoch is a permutation and epoch 2's differs
 * from epoch 1's, every label row is valid, an image deleted mid-run is skipped, counted and
 * replaced deterministically (validation leaves it out instead: never another image in its place),
 * stopping early shuts down cleanly, validation batches are
 * letterboxed with val.py's ratio and padding, the ring's size is the planner's prefetch figure, and
 * every term the loader, its augmentation workspace and the RAM cache allocate is the planner's, and
 * decoding only what the mosaic's warp reads (tiles skipped, JPEG tiles cropped) gives the same
 * bytes as decoding every tile whole (YP_LOADER_DECODE_ALL=1). */
#define _XOPEN_SOURCE 700 /* mkdtemp */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "yp_image_cache.h"
#include "yp_label_cache.h"
#include "yp_loader.h"
#include "yp_synth.h"
#include "yp_plan.h"
#include "yp_test.h"
#include "yp_test_fs.h"

#define N_IMAGES 12
#define NC 3
#define S 64
#define BATCH 4

/* The synthetic dataset: n training images of w x h (no val split). */
static int write_synth(const char *dir, int n, int nc, int w, int h, uint64_t seed, yp_err *err) {
    yp_synth_opts so = {.n_train = n, .n_val = 0, .nc = nc, .w = w, .h = h, .seed = seed};
    return yp_synth_write(dir, &so, NULL, err);
}

static char root[512];
static yp_labels labels;
static int ready;
static const yp_labels *run_labels = &labels; /* the dataset run() loads */

static void setup(void) {
    const char *tmp = getenv("TMPDIR");
    char dir[600], yaml[700];
    yp_err err;
    snprintf(root, sizeof root, "%s/yp_loader_XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(root)) return;
    snprintf(dir, sizeof dir, "%s/ds", root);
    if (write_synth(dir, N_IMAGES, NC, 80, 48, 7, &err)) {
        printf("    (%s)\n", err.msg);
        return;
    }
    snprintf(yaml, sizeof yaml, "%s/data.yaml", dir);
    if (yp_labels_load(yaml, &labels, &err)) {
        printf("    (%s)\n", err.msg);
        return;
    }
    ready = labels.n == N_IMAGES;
}

static yp_loader_opts opts(int workers, uint64_t seed, int64_t epochs) {
    yp_loader_opts o;
    yp_loader_opts_default(&o);
    o.workers = workers, o.prefetch = 2, o.batch = BATCH, o.imgsz = S, o.epochs = epochs, o.seed = seed;
    return o;
}

/* Everything delivered, in order: per batch its header, meta indices, images and labels. */
typedef struct {
    uint8_t *bytes;
    size_t len, cap;
    int64_t index[8][N_IMAGES]; /* per epoch, the dataset images in delivery order */
    int64_t batches, labels;
    int bad_rows;
    yp_loader_stats st;
} run_log;

static void put(run_log *r, const void *p, size_t n) {
    if (r->len + n > r->cap) {
        r->cap = (r->len + n) * 2;
        r->bytes = realloc(r->bytes, r->cap);
    }
    memcpy(r->bytes + r->len, p, n), r->len += n;
}

static int row_ok(const float *row, int n) {
    int ok = row[0] >= 0 && row[0] < n && row[0] == (float)(int)row[0] && row[1] >= 0 && row[1] < NC &&
             row[1] == (float)(int)row[1];
    for (int k = 2; k < 6; k++) ok = ok && row[k] >= 0 && row[k] <= 1;
    return ok && row[4] > 0 && row[5] > 0;
}

static void record(run_log *r, const yp_loader_batch *b) {
    put(r, &b->n, sizeof b->n), put(r, &b->n_labels, sizeof b->n_labels);
    for (int i = 0; i < b->n; i++) {
        put(r, &b->meta[i].index, sizeof(int64_t));
        if (b->epoch < 8) r->index[b->epoch][b->index * BATCH + i] = b->meta[i].index;
    }
    put(r, b->images, (size_t)b->n * S * S * 3);
    put(r, b->labels, (size_t)b->n_labels * 6 * sizeof(float));
    for (int64_t j = 0; j < b->n_labels; j++) r->bad_rows += !row_ok(b->labels + 6 * j, b->n);
    r->batches++, r->labels += b->n_labels;
}

/* Runs the loader to the end (delete: a file removed after the first batch). 0 or -1. */
static int run(const yp_loader_opts *o, run_log *r, const char *delete_after_first) {
    yp_err err;
    memset(r, 0, sizeof *r);
    yp_loader *l = yp_loader_open(run_labels, o, &err);
    if (!l) return printf("    (%s)\n", err.msg), -1;
    yp_loader_batch b;
    int rc;
    while ((rc = yp_loader_next(l, &b, &err)) == 1) {
        record(r, &b);
        if (delete_after_first && r->batches == 1) unlink(delete_after_first);
    }
    if (rc < 0) printf("    (%s)\n", err.msg);
    yp_loader_get_stats(l, &r->st);
    yp_loader_close(l);
    return rc;
}

static void free_log(run_log *r) { free(r->bytes); }

static int is_permutation(const int64_t *idx) {
    int seen[N_IMAGES] = {0};
    for (int i = 0; i < N_IMAGES; i++) {
        if (idx[i] < 0 || idx[i] >= N_IMAGES || seen[idx[i]]) return 0;
        seen[idx[i]] = 1;
    }
    return 1;
}

static void test_workers_identical(void) {
    REQUIRE(ready);
    yp_loader_opts o1 = opts(1, 42, 2), o3 = opts(3, 42, 2);
    run_log a, c;
    REQUIRE(run(&o1, &a, NULL) == 0);
    if (run(&o3, &c, NULL) == 0) {
        CHECK_EQ_I64(a.batches, 2 * N_IMAGES / BATCH);
        CHECK_EQ_I64(c.batches, a.batches);
        CHECK(a.len == c.len && memcmp(a.bytes, c.bytes, a.len) == 0);
        CHECK(a.labels > 0);
        CHECK_EQ_I64(a.bad_rows, 0);
        CHECK_EQ_I64(c.bad_rows, 0);
        CHECK(is_permutation(a.index[0]) && is_permutation(a.index[1]));
        CHECK(memcmp(a.index[0], a.index[1], sizeof a.index[0]) != 0);
        CHECK_EQ_I64(a.st.bad_images, 0);
        CHECK_EQ_I64(a.st.delivered, a.batches);
    } else {
        CHECK(0);
    }
    free_log(&a), free_log(&c);
}

/* Runs o with YP_LOADER_DECODE_ALL=1 and without, on run_labels: byte-identical batches. */
static void check_decode_all_same(const yp_loader_opts *o, yp_loader_stats *part_st) {
    run_log all, part;
    REQUIRE(setenv("YP_LOADER_DECODE_ALL", "1", 1) == 0);
    int rc = run(o, &all, NULL);
    REQUIRE(unsetenv("YP_LOADER_DECODE_ALL") == 0);
    REQUIRE(rc == 0 && run(o, &part, NULL) == 0);
    CHECK(all.len == part.len && memcmp(all.bytes, part.bytes, all.len) == 0);
    CHECK_EQ_I64(all.st.tiles_unread + all.st.tiles_cropped, 0);
    CHECK_EQ_I64(part.st.bad_images + part.st.replaced, 0);
    *part_st = part.st;
    printf("    %lld tiles not decoded, %lld decoded in part\n", (long long)part.st.tiles_unread,
           (long long)part.st.tiles_cropped);
    free_log(&all), free_log(&part);
}

/* Decoding only what the warp reads gives the items of decoding every tile whole, for the seed:
 * on the 80x48 images (resized at imgsz 64: tiles left out only) and on 64x40 ones (load_image
 * keeps them: the JPEGs decoded in part too). */
static void test_decode_only_what_is_read(void) {
    REQUIRE(ready);
    yp_loader_opts o = opts(2, 5, 6);
    yp_loader_stats st;
    check_decode_all_same(&o, &st);
    CHECK(st.tiles_unread > 0);
    CHECK_EQ_I64(st.tiles_cropped, 0);
    char dir[600], yaml[700];
    yp_err err;
    yp_labels exact = {0};
    snprintf(dir, sizeof dir, "%s/exact", root);
    snprintf(yaml, sizeof yaml, "%s/data.yaml", dir);
    REQUIRE(write_synth(dir, N_IMAGES, NC, S, 40, 9, &err) == 0);
    if (yp_labels_load(yaml, &exact, &err) == 0 && exact.n == N_IMAGES) {
        run_labels = &exact;
        check_decode_all_same(&o, &st);
        run_labels = &labels;
        CHECK(st.tiles_unread > 0 && st.tiles_cropped > 0);
    } else {
        CHECK(0);
    }
    yp_labels_free(&exact);
}

static void test_seeds_differ(void) {
    REQUIRE(ready);
    yp_loader_opts o1 = opts(2, 42, 1), o2 = opts(2, 43, 1);
    run_log a, c;
    REQUIRE(run(&o1, &a, NULL) == 0);
    if (run(&o2, &c, NULL) == 0) {
        CHECK(a.len != c.len || memcmp(a.bytes, c.bytes, a.len) != 0);
        CHECK(memcmp(a.index[0], c.index[0], sizeof a.index[0]) != 0);
    } else {
        CHECK(0);
    }
    free_log(&a), free_log(&c);
}

/* The epoch-1 part of a run (everything after the epoch-0 batches), from its batch headers. */
static size_t epoch1_offset(const run_log *r) {
    size_t off = 0;
    for (int b = 0; b < N_IMAGES / BATCH; b++) {
        int n;
        int64_t nl;
        memcpy(&n, r->bytes + off, sizeof n), memcpy(&nl, r->bytes + off + sizeof n, sizeof nl);
        off += sizeof n + sizeof nl + (size_t)n * (sizeof(int64_t) + S * S * 3) + (size_t)nl * 6 * sizeof(float);
    }
    return off;
}

static void test_deleted_image(void) {
    REQUIRE(ready);
    /* one worker, one slot: nothing is decoded ahead of the batch the test holds */
    yp_loader_opts o = opts(1, 5, 2);
    o.prefetch = 1;
    run_log ref;
    REQUIRE(run(&o, &ref, NULL) == 0);
    int64_t victim = ref.index[1][5]; /* in epoch 1, not in epoch 0's first batch */
    for (int i = 0; i < BATCH; i++) REQUIRE(ref.index[0][i] != victim);
    char path[4200], keep[4300];
    snprintf(path, sizeof path, "%s", yp_labels_image(&labels, victim));
    snprintf(keep, sizeof keep, "%s.keep", path);
    REQUIRE(link(path, keep) == 0);
    run_log a, c;
    memset(&c, 0, sizeof c);
    int rc = run(&o, &a, path);
    CHECK_EQ_I64(rc, 0);
    CHECK_EQ_I64(a.batches, 2 * N_IMAGES / BATCH); /* every batch full: the position was refilled */
    CHECK_EQ_I64(a.st.bad_images, 1);
    CHECK(a.st.replaced >= 1);
    CHECK_EQ_I64(a.bad_rows, 0);
    for (int i = 0; i < N_IMAGES; i++) CHECK(a.index[1][i] != victim);
    CHECK_EQ_I64(a.index[1][5], ref.index[1][6]); /* the next image of the order took its place */
    /* the same files from the start with 3 workers: epoch 1 is byte-identical */
    yp_loader_opts o3 = opts(3, 5, 2);
    if (run(&o3, &c, NULL) == 0) {
        size_t ea = epoch1_offset(&a), ec = epoch1_offset(&c);
        CHECK(a.len - ea == c.len - ec && memcmp(a.bytes + ea, c.bytes + ec, a.len - ea) == 0);
        CHECK_EQ_I64(c.st.bad_images, 1);
    } else {
        CHECK(0);
    }
    CHECK(rename(keep, path) == 0);
    free_log(&ref), free_log(&a), free_log(&c);
}

static void test_validation_leaves_out_a_vanished_image(void) {
    REQUIRE(ready);
    yp_loader_opts o = opts(1, 9, 2); /* two passes; one worker, one slot: batch 1 is built after the delete */
    o.validation = 1, o.prefetch = 1;
    const int64_t victim = 5; /* in batch 1 of each pass */
    char path[4200], keep[4300];
    snprintf(path, sizeof path, "%s", yp_labels_image(&labels, victim));
    snprintf(keep, sizeof keep, "%s.keep", path);
    REQUIRE(link(path, keep) == 0);
    yp_err err;
    yp_loader *l = yp_loader_open(&labels, &o, &err);
    REQUIRE(l);
    yp_loader_batch b;
    int64_t seen[2][N_IMAGES] = {{0}}, images[2] = {0}, rc, batches = 0;
    while ((rc = yp_loader_next(l, &b, &err)) == 1) {
        if (++batches == 1) unlink(path);
        for (int i = 0; i < b.n; i++) seen[b.epoch][b.meta[i].index]++, images[b.epoch]++;
        for (int64_t j = 0; j < b.n_labels; j++) CHECK(b.labels[6 * j] >= 0 && b.labels[6 * j] < b.n);
    }
    CHECK_EQ_I64(rc, 0);
    CHECK_EQ_I64(batches, 2 * N_IMAGES / BATCH); /* batch 1 is one image short, not refilled */
    for (int e = 0; e < 2; e++) {
        CHECK_EQ_I64(images[e], N_IMAGES - 1);
        for (int i = 0; i < N_IMAGES; i++) CHECK_EQ_I64(seen[e][i], i == victim ? 0 : 1);
    }
    yp_loader_stats st;
    yp_loader_get_stats(l, &st);
    CHECK(st.bad_images == 1 && st.skipped == 2 && st.replaced == 0);
    CHECK_STR_HAS(st.first_bad, path);
    yp_loader_close(l);
    CHECK(rename(keep, path) == 0);
}

static void test_stop_early(void) {
    REQUIRE(ready);
    yp_err err;
    yp_loader_opts o = opts(3, 1, 1000);
    yp_loader *l = yp_loader_open(&labels, &o, &err);
    REQUIRE(l);
    yp_loader_batch b;
    CHECK_EQ_I64(yp_loader_next(l, &b, &err), 1);
    CHECK_EQ_I64(b.n, BATCH);
    yp_loader_close(l); /* workers blocked on full slots and mid-batch must all stop */
    l = yp_loader_open(&labels, &o, &err);
    REQUIRE(l);
    yp_loader_close(l); /* no batch taken at all */
    yp_loader_close(NULL);
    o.workers = 0;
    CHECK(yp_loader_open(&labels, &o, &err) == NULL);
    CHECK_STR_HAS(err.msg, "workers");
}

static void test_validation(void) {
    REQUIRE(ready);
    yp_err err;
    yp_loader_opts o = opts(2, 9, 1);
    o.validation = 1;
    yp_loader *l = yp_loader_open(&labels, &o, &err);
    REQUIRE(l);
    yp_loader_batch b;
    int64_t pos = 0, rc;
    while ((rc = yp_loader_next(l, &b, &err)) == 1) {
        for (int i = 0; i < b.n; i++, pos++) {
            const yp_loader_image *m = &b.meta[i];
            const uint8_t *im = b.images + (size_t)i * S * S * 3;
            CHECK_EQ_I64(m->index, pos); /* the dataset order */
            CHECK_EQ_I64(m->w0, 80);
            CHECK_EQ_I64(m->h0, 48);
            /* load_image: 64 x ceil(48 * 0.8) = 39; letterbox pads 25 rows: top 12, bottom 13 */
            CHECK(fabs(m->rp.gain - 39.0 / 48.0) < 1e-12);
            CHECK(m->rp.pad_w == 0 && m->rp.pad_h == 12.5);
            int border = 1;
            for (int x = 0; x < S * 3; x++)
                border &= im[11 * S * 3 + x] == 114 && im[51 * S * 3 + x] == 114 && im[63 * S * 3 + x] == 114;
            CHECK(border);
            int inside = 0;
            for (int x = 0; x < S * 3; x++) inside |= im[12 * S * 3 + x] != 114;
            CHECK(inside);
        }
        for (int64_t j = 0; j < b.n_labels; j++) {
            const float *row = b.labels + 6 * j;
            CHECK(row_ok(row, b.n));
            /* boxes lie inside the image band, shifted by dh = 12.5 as YOLOv5 shifts them: 12.5 .. 51.5 */
            CHECK(row[3] - row[5] / 2 >= 12.5f / S - 1e-3f && row[3] + row[5] / 2 <= 51.5f / S + 1e-3f);
        }
    }
    CHECK_EQ_I64(rc, 0);
    CHECK_EQ_I64(pos, N_IMAGES);
    yp_loader_close(l);
}

static void test_host_bytes(void) {
    yp_err err;
    yp_loader_opts o = opts(8, 0, 1);
    o.batch = 16, o.imgsz = 640, o.prefetch = 2;
    yp_loader_bytes lb;
    REQUIRE(yp_loader_host_bytes(&o, 1000, 20, &lb, &err) == 0);
    yp_candidate c = yp_candidate_default(); /* 8 workers, prefetch 2, no cache */
    c.batch = 16, c.img_w = c.img_h = 640, c.mosaic = 1, c.labels_per_image = 20;
    yp_host_memory h;
    REQUIRE(yp_host_memory_estimate(&c, 32, 0, &h, &err) == 0);
    CHECK_EQ_I64(lb.slots, 16);
    CHECK_EQ_I64(lb.ring_images, h.prefetch);
    CHECK(lb.total > lb.ring_images);
    /* the plan's terms are this loader's, term by term, once it knows the images */
    REQUIRE(yp_host_memory_estimate(&c, 32, 1000, &h, &err) == 0);
    CHECK_EQ_I64(h.prefetch, lb.ring_images);
    CHECK_EQ_I64(h.ring_labels, lb.ring_labels + lb.ring_meta);
    CHECK_EQ_I64(h.mosaic_canvases + h.workspaces, lb.workspaces);
    CHECK_EQ_I64(h.mosaic_canvases, 8LL * 1280 * 1280 * 3); /* the augmenter's 2S x 2S canvas per worker */
    CHECK_EQ_I64(h.orders, lb.orders);
    CHECK_EQ_I64(h.decoded_images, lb.decoders);
    CHECK_EQ_I64(h.pinned_batch, 16LL * 640 * 640 * 3 * 4);
    CHECK_EQ_I64(h.image_cache, 0);
    CHECK_EQ_I64(h.total, lb.total + lb.decoders + h.pinned_batch);
    printf("    loader %lld bytes (ring %lld, workspaces %lld); plan host %lld (canvases+decoded %lld)\n",
           (long long)lb.total, (long long)lb.ring_images, (long long)lb.workspaces, (long long)h.total,
           (long long)(h.mosaic_canvases + h.decoded_images));
    /* a run with fewer batches than workers x prefetch holds only those; a split smaller than the
     * batch sizes each slot to the split: validation of 10 images at batch 16, 3 passes */
    o.validation = 1, o.epochs = 3;
    REQUIRE(yp_loader_host_bytes(&o, 10, 20, &lb, &err) == 0);
    CHECK_EQ_I64(lb.slots, 3);
    CHECK_EQ_I64(lb.ring_images, 3LL * 10 * 640 * 640 * 3);
    CHECK_EQ_I64(lb.ring_meta, 3LL * 10 * (int64_t)sizeof(yp_loader_image));
    o.validation = 0, o.epochs = 1;
    o.workers = 1, o.imgsz = 16384, o.batch = INT32_MAX, o.prefetch = INT32_MAX;
    CHECK(yp_loader_host_bytes(&o, 1LL << 39, 20, &lb, &err) == -1); /* overflow caught */
}

/* The planner's figures for a loader opened with o over the test's images (yp_host_mem.h, built
 * from the settings here, not through the loader). */
static yp_host_loader planned(const yp_loader_opts *o) {
    yp_host_loader_in in = {.pipe = {o->workers, o->prefetch, o->cache ? YP_CACHE_RAM : YP_CACHE_NONE},
                            .batch = o->batch, .imgsz = o->imgsz, .letterboxed = o->validation || o->no_augment,
                            .drop_last = o->drop_last, .passes = o->epochs - o->first_epoch,
                            .n_images = labels.n, .max_rows = labels.stats.max_labels};
    yp_host_loader b;
    yp_err err;
    if (yp_host_loader_bytes(&in, &b, &err)) printf("    (%s)\n", err.msg);
    return b;
}

/* Opens o, takes every batch, and checks what the loader allocated against the planner's figures,
 * term by term; the decoders' buffers (grown to the largest file and image read) stay within
 * theirs, as the images (80x48) are smaller than S x S. */
static void check_allocated(const char *what, const yp_loader_opts *o) {
    yp_err err;
    yp_loader *l = yp_loader_open(&labels, o, &err);
    if (!l) {
        printf("    %s: %s\n", what, err.msg);
        CHECK(0);
        return;
    }
    yp_loader_batch b;
    int rc;
    while ((rc = yp_loader_next(l, &b, &err)) == 1) {}
    CHECK_EQ_I64(rc, 0);
    yp_loader_bytes got, want = planned(o);
    yp_loader_allocated(l, &got);
    yp_loader_close(l);
    printf("    %s: %lld slots of %lld images, ring %lld + %lld + %lld, workspaces %lld, orders %lld, "
           "decoders %lld of %lld\n", what, (long long)got.slots, (long long)got.slot_images,
           (long long)got.ring_images, (long long)got.ring_labels, (long long)got.ring_meta, (long long)got.workspaces,
           (long long)got.orders, (long long)got.decoders, (long long)want.decoders);
    CHECK_EQ_I64(got.slots, want.slots);
    CHECK_EQ_I64(got.slot_images, want.slot_images);
    CHECK_EQ_I64(got.rows_cap, want.rows_cap);
    CHECK_EQ_I64(got.ring_images, want.ring_images);
    CHECK_EQ_I64(got.ring_labels, want.ring_labels);
    CHECK_EQ_I64(got.ring_meta, want.ring_meta);
    CHECK_EQ_I64(got.workspaces, want.workspaces);
    CHECK_EQ_I64(got.orders, want.orders);
    CHECK_EQ_I64(got.total, want.total);
    if (o->cache) CHECK_EQ_I64(got.decoders, 0);
    else CHECK(got.decoders > 0 && got.decoders <= want.decoders);
}

/* Every term of the planner's loader model is what the loader allocates: augmenting training
 * (the ring as big as workers x prefetch, and as the run's 3 batches when that is fewer),
 * --no-augment, validation with a slot larger than the split, and reading --cache ram images;
 * the augmenter's workspace is the planner's, and so are the cache's bytes (square images at S:
 * exactly n x S^2 x 3; 80x48 ones below it). */
static void test_allocations(void) {
    REQUIRE(ready);
    yp_err err;
    yp_loader_opts o = opts(2, 3, 2);
    check_allocated("training", &o);
    CHECK_EQ_I64(planned(&o).slots, 4);
    o = opts(3, 3, 1);
    check_allocated("training, 3 batches", &o);
    CHECK_EQ_I64(planned(&o).slots, 3);
    o = opts(2, 3, 1);
    o.no_augment = 1, o.drop_last = 1;
    check_allocated("--no-augment", &o);
    o = opts(2, 3, 2);
    o.validation = 1, o.batch = 16;
    check_allocated("validation", &o);
    CHECK_EQ_I64(planned(&o).slot_images, N_IMAGES);
    yp_aug_config cfg = {.imgsz = S, .n_images = N_IMAGES, .max_rows = labels.stats.max_labels};
    yp_aug_hyp_default(&cfg.hyp);
    size_t ws;
    REQUIRE(yp_aug_train_ws(&cfg, &ws) == 0);
    o = opts(2, 3, 1);
    CHECK_EQ_I64((int64_t)ws, planned(&o).worker_ws);
    CHECK_EQ_I64(planned(&o).canvases, 2LL * 2 * S * 2 * S * 3);
    yp_image_cache c;
    REQUIRE(yp_image_cache_fill(&c, &labels, S, 1, 2, &err) == 0);
    o.cache = &c;
    check_allocated("--cache ram", &o);
    CHECK(c.bytes == (int64_t)N_IMAGES * S * 39 * 3 && c.bytes < yp_host_cache_bytes(N_IMAGES, S)); /* 80x48 -> 64x39 */
    yp_image_cache_free(&c);
    char dir[600], yaml[700];
    yp_labels sq;
    snprintf(dir, sizeof dir, "%s/square", root);
    snprintf(yaml, sizeof yaml, "%s/data.yaml", dir);
    REQUIRE(write_synth(dir, 5, NC, S, S, 8, &err) == 0 && yp_labels_load(yaml, &sq, &err) == 0);
    REQUIRE(yp_image_cache_fill(&c, &sq, S, 1, 2, &err) == 0);
    CHECK_EQ_I64(c.bytes, yp_host_cache_bytes(5, S));
    yp_image_cache_free(&c);
    yp_labels_free(&sq);
}

int main(void) {
    setup();
    YP_RUN(test_workers_identical);
    YP_RUN(test_seeds_differ);
    YP_RUN(test_decode_only_what_is_read);
    YP_RUN(test_deleted_image);
    YP_RUN(test_validation_leaves_out_a_vanished_image);
    YP_RUN(test_stop_early);
    YP_RUN(test_validation);
    YP_RUN(test_host_bytes);
    YP_RUN(test_allocations);
    yp_labels_free(&labels);
    if (root[0] && strstr(root, "XXXXXX") == NULL) yp_test_remove_tree(root); /* mkdtemp made it */
    return yp_test_summary();
}
