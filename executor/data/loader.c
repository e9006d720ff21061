/* loader.c - the data loader (yp_loader.h): a ring of batch slots filled by worker threads in
 * claim order and handed to the consumer in batch order. One mutex guards the ring: slot s serves
 * global batches s, s + slots, s + 2 slots, ... in turn (next_g), so a worker that claimed batch g
 * waits for exactly its slot and the consumer waits for exactly the batch it delivers next. An
 * image that fails is skipped: left out of a validation batch, refilled in a training one.
 * A training worker decodes only what a mosaic reads: before the item it replays the mosaic's and
 * the warp's draws (yp_mosaic_draw, yp_warp_draw on a copy of the item's generator, in
 * yp_aug_train_item's order) to know the canvas rectangle the warp reads; a tile placed wholly
 * outside it is not decoded (its size is the scan's), and a JPEG tile that needs no resize decodes
 * only the part of it inside (yp_image_read_region_into). The items' bytes are the same; the
 * environment variable YP_LOADER_DECODE_ALL=1 turns both off (the tests compare the two). */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "yp_image.h"
#include "yp_image_cache.h"
#include "yp_loader.h"
#include "yp_val_rect.h"

enum { SLOT_FREE, SLOT_BUSY, SLOT_READY, SLOT_FAILED };

typedef struct {
    int state;
    int64_t next_g; /* the global batch this slot serves next */
    int64_t g;      /* the batch it holds (READY, FAILED) */
    uint8_t *images;
    float *labels;
    yp_loader_image *meta;
    int n;
    int64_t n_labels;
    int h, w;       /* the batch's image size */
    yp_err err;
} slot;

typedef struct {
    yp_loader *l;
    pthread_t th;
    int started;
    uint8_t *ws;        /* training: yp_aug_train_ws; validation: the load_image tile */
    size_t ws_bytes;
    uint8_t *vws;       /* validation: resize + letterbox workspace, grown to the largest image */
    size_t vws_bytes;
    float *rows;        /* one item's rows, 5 floats each */
    int64_t *order;     /* this worker's copy of order_epoch's order */
    int64_t order_epoch;
    yp_image px;        /* the image read last: a view of bufs */
    yp_image_buffers bufs; /* the decoder's file and pixel buffers, grown to the largest image */
    int source_failed;  /* the last item failed because an image did not load */
    int out_w, out_h;   /* letterboxed items: the size of the batch being built */
    int planned;        /* training mosaic: plan and clip hold the item's draws, call counts the fetches */
    int call;
    yp_mosaic_plan plan;
    int clip[4];        /* the canvas rectangle the item's warp reads (yp_warp_source_rect) */
} worker;

struct yp_loader {
    const yp_labels *labels;
    yp_loader_opts o;
    yp_aug_config cfg;
    int64_t n, rows_cap, bpe, total, nslots;
    yp_loader_bytes plan; /* yp_loader_host_bytes: what to allocate */
    yp_loader_bytes got;  /* what was allocated (yp_loader_allocated) */
    slot *slots;
    worker *w;
    atomic_uchar *bad;
    atomic_llong bad_count, replaced, skipped, unread, cropped;
    char first_bad[512];  /* the first failure's "FILE: reason" (under mu) */
    pthread_mutex_t mu;
    pthread_cond_t cv_free, cv_ready;
    int stop, holding;
    int decode_all;       /* YP_LOADER_DECODE_ALL: every tile decoded whole */
    int64_t next_claim, next_deliver, delivered;
};

/* ---- sizes ---- */

void yp_loader_opts_default(yp_loader_opts *o) {
    *o = (yp_loader_opts){.workers = YP_PIPE_WORKERS, .prefetch = YP_PIPE_PREFETCH, .batch = 16, .imgsz = 640,
                          .epochs = 1};
    yp_aug_hyp_default(&o->hyp);
}

/* Batches per epoch. */
static int64_t bpe_of(const yp_loader_opts *o, int64_t n) {
    return yp_host_batches_per_epoch(n, o->batch, o->drop_last);
}

static int check_opts(const yp_loader_opts *o, int64_t n_images, int64_t max_rows, yp_err *err) {
    if (o->workers < 1 || o->workers > YP_LOADER_MAX_WORKERS)
        return yp_err_set(err, "loader: workers %d is outside 1..%d", o->workers, YP_LOADER_MAX_WORKERS);
    if (o->prefetch < 1 || o->batch < 1) return yp_err_set(err, "loader: prefetch and batch must be >= 1");
    if (o->imgsz < 2 || o->imgsz > 16384) return yp_err_set(err, "loader: imgsz %d is outside 2..16384", o->imgsz);
    if (o->epochs < 1 || o->epochs >= (1LL << 23)) return yp_err_set(err, "loader: epochs must be in 1..2^23-1");
    if (o->first_epoch < 0 || o->first_epoch >= o->epochs)
        return yp_err_set(err, "loader: first epoch %lld is outside 0..%lld", (long long)o->first_epoch,
                          (long long)o->epochs - 1);
    if (o->drop_last && n_images < o->batch)
        return yp_err_set(err, "loader: %lld images make no whole batch of %d; lower --batch to at most %lld",
                          (long long)n_images, o->batch, (long long)n_images);
    if (n_images < 1 || n_images >= (1LL << 40))
        return yp_err_set(err, "loader: the dataset has %lld images (1..2^40-1 needed)", (long long)n_images);
    if (max_rows < 0 || max_rows > (INT64_MAX / 64)) return yp_err_set(err, "loader: bad label row count");
    const yp_val_rect *r = o->rect;
    if (r && (!o->validation || r->n_images != n_images || r->batch != o->batch || r->max_side < 2 ||
              r->max_side > 16384 || r->n_batches != bpe_of(o, n_images)))
        return yp_err_set(err, "loader: the rectangular batches were made for %lld images in batches of %lld, not "
                          "this %s of %lld in batches of %d", (long long)r->n_images, (long long)r->batch,
                          o->validation ? "validation" : "training", (long long)n_images, o->batch);
    return 0;
}

/* Validation and training without augmentation build letterboxed single images. */
static int letterboxed(const yp_loader_opts *o) { return o->validation || o->no_augment; }

/* The planner's description of this loader (yp_host_mem.h): its sizing is the planner's. */
static yp_host_loader_in host_in(const yp_loader_opts *o, int64_t n_images, int64_t max_rows) {
    yp_pipeline pipe = {o->workers, o->prefetch, o->cache ? YP_CACHE_RAM : YP_CACHE_NONE};
    return (yp_host_loader_in){.pipe = pipe, .batch = o->batch, .imgsz = o->imgsz,
                               .side = o->rect ? o->rect->max_side : 0, .letterboxed = letterboxed(o),
                               .drop_last = o->drop_last, .passes = o->epochs - o->first_epoch,
                               .n_images = n_images, .max_rows = max_rows};
}

_Static_assert(sizeof(yp_loader_image) == YP_HOST_LOADER_RECORD, "the planner's per-image record size");
_Static_assert(sizeof(atomic_uchar) == 1, "the planner's one byte per image flag");

int yp_loader_host_bytes(const yp_loader_opts *o, int64_t n_images, int64_t max_rows, yp_loader_bytes *b,
                         yp_err *err) {
    memset(b, 0, sizeof *b);
    if (check_opts(o, n_images, max_rows, err)) return -1;
    yp_host_loader_in in = host_in(o, n_images, max_rows);
    yp_err why;
    if (yp_host_loader_bytes(&in, b, &why)) return yp_err_set(err, "loader: %s", why.msg);
    return 0;
}

uint64_t yp_loader_stream(int64_t epoch, int64_t position) {
    return ((uint64_t)epoch << 40) | ((uint64_t)position & ((1ull << 40) - 1));
}

/* ---- bad images ---- */

static void mark_bad(yp_loader *l, int64_t index, const char *why) {
    if (atomic_exchange(&l->bad[index], 1)) return;
    int64_t k = atomic_fetch_add(&l->bad_count, 1);
    if (k == 0) {
        pthread_mutex_lock(&l->mu);
        snprintf(l->first_bad, sizeof l->first_bad, "%s", why);
        pthread_mutex_unlock(&l->mu);
    }
    if (k < YP_LOADER_WARNINGS_SHOWN) fprintf(stderr, "loader: skipping %s\n", why);
    else if (k == YP_LOADER_WARNINGS_SHOWN)
        fprintf(stderr, "loader: more images fail to load; they are counted, not listed\n");
}

/* ---- decoding only what the mosaic reads ---- */

/* Replays yp_aug_train_item's first draws on a copy of r: whether the item is a mosaic, its plan,
 * the mixup draw, the warp, and from it the canvas rectangle the warp reads. */
static void plan_item(worker *w, int64_t index, const yp_rng *r) {
    yp_loader *l = w->l;
    yp_rng c = *r;
    int s = l->cfg.imgsz, border = -((s + 1) / 2);
    yp_warp wp;
    w->planned = 0, w->call = 0;
    if (l->decode_all || l->o.cache || !(yp_rng_unit(&c) < l->cfg.hyp.mosaic)) return;
    yp_mosaic_draw(&c, index, l->n, s, &w->plan);
    yp_rng_unit(&c); /* mixup */
    if (yp_warp_draw(&c, &l->cfg.hyp, 2 * s, 2 * s, border, border, &wp)) return;
    yp_warp_source_rect(&wp, 2 * s, 2 * s, w->clip);
    w->planned = 1;
}

/* For the mosaic's next fetch, of image index: 1 when the scan's size gives its tile's place and
 * *tw x *th (load_image's size) is the tile, with region (x1 y1 x2 y2 of the image, end exclusive)
 * the part of it the warp reads, maybe empty; *resized when load_image resizes it. 0 when not known
 * (not a mosaic, another order of fetches than planned, no size from the scan): decode it whole. */
static int tile_region(worker *w, int64_t index, int *tw, int *th, int *resized, int region[4]) {
    if (!w->planned) return 0;
    int k = w->call++, w0, h0, s = w->l->cfg.imgsz, a[4];
    yp_interp interp;
    if (k > 3 || w->plan.index[k] != index) return w->planned = 0;
    yp_labels_size(w->l->labels, index, &w0, &h0);
    if (w0 < 1 || h0 < 1) return 0;
    *resized = yp_aug_load_size(w0, h0, s, 1, tw, th, &interp);
    if (*resized < 0 || *tw > s + 1 || *th > s + 1) return 0;
    /* the tile's canvas rectangle: yp_mosaic_place_in with an empty clip copies no pixel */
    static uint8_t none[3];
    yp_image canvas = {NULL, 2 * s, 2 * s}, tile = {none, *tw, *th};
    const int empty[4] = {0, 0, 0, 0};
    if (yp_mosaic_place_in(&canvas, &w->plan, k, &tile, NULL, 0, NULL, empty, a)) return 0;
    /* the tile's offset on the canvas: slots 0 and 2 end at xc, 0 and 1 at yc */
    int padw = k == 0 || k == 2 ? a[2] - *tw : a[0], padh = k < 2 ? a[3] - *th : a[1];
    int x0 = a[0] > w->clip[0] ? a[0] : w->clip[0], x1 = a[2] < w->clip[2] ? a[2] : w->clip[2];
    int y0 = a[1] > w->clip[1] ? a[1] : w->clip[1], y1 = a[3] < w->clip[3] ? a[3] : w->clip[3];
    if (x0 >= x1 || y0 >= y1) x0 = x1 = padw, y0 = y1 = padh;
    region[0] = x0 - padw, region[1] = y0 - padh, region[2] = x1 - padw, region[3] = y1 - padh;
    return 1;
}

/* Image index did not load (err says why): marked bad, the item fails. -1. */
static int source_failed(worker *w, int64_t index, const yp_err *err) {
    mark_bad(w->l, index, err->msg);
    w->source_failed = 1;
    return -1;
}

/* yp_aug_source over the dataset: decodes image index into the worker's holder. */
static int source(void *ctx, int64_t index, yp_aug_source_item *out, yp_err *err) {
    worker *w = ctx;
    yp_loader *l = w->l;
    if (atomic_load(&l->bad[index])) {
        w->source_failed = 1;
        return yp_err_set(err, "loader: image %lld did not load before", (long long)index);
    }
    int64_t n;
    const float *rows = yp_labels_rows(l->labels, index, &n);
    if (l->o.cache) { /* --cache ram: load_image's result, kept */
        const yp_cached_image *ci = yp_image_cache_get(l->o.cache, index);
        if (!ci) {
            yp_err_set(err, "%s: not in the image cache (it did not decode)", yp_labels_image(l->labels, index));
            mark_bad(l, index, err->msg);
            w->source_failed = 1;
            return -1;
        }
        *out = (yp_aug_source_item){ci->rgb, ci->w, ci->h, rows, n, 1};
        return 0;
    }
    int tw, th, resized, region[4], known = tile_region(w, index, &tw, &th, &resized, region);
    if (known && region[0] >= region[2] && w->bufs.rgb_cap >= (size_t)tw * (size_t)th * 3) {
        /* not read by the warp: only its size and labels matter; the pixels (the buffer's last image,
         * already placed) are load_image's size and never copied */
        *out = (yp_aug_source_item){w->bufs.rgb, tw, th, rows, n, 1};
        atomic_fetch_add(&l->unread, 1);
        return 0;
    }
    /* the holder keeps one image, until the worker's next read into the same buffers; a tile placed
     * as it is (no resize) and read in part is decoded in part (pixels outside the region are
     * unspecified, and never copied onto the canvas) */
    int part = known && !resized && region[0] < region[2] &&
               (region[0] > 0 || region[1] > 0 || region[2] < tw || region[3] < th);
    const char *path = yp_labels_image(l->labels, index);
    if (part ? yp_image_read_region_into(path, NULL, &w->bufs, region, &w->px, err)
             : yp_image_read_into(path, NULL, &w->bufs, &w->px, err))
        return source_failed(w, index, err);
    if (part && (w->px.w != tw || w->px.h != th)) { /* not the scan's size: the region was another image's */
        part = 0;
        if (yp_image_read_into(path, NULL, &w->bufs, &w->px, err)) return source_failed(w, index, err);
    }
    if (part) atomic_fetch_add(&l->cropped, 1);
    *out = (yp_aug_source_item){w->px.rgb, w->px.w, w->px.h, rows, n, 0};
    return 0;
}

/* ---- items ---- */

/* Grows the validation workspace to need bytes (grow-once per larger image). */
static int vws_reserve(worker *w, size_t need, yp_err *err) {
    if (need <= w->vws_bytes) return 0;
    void *p = realloc(w->vws, need);
    if (!p) return yp_err_set(err, "loader: out of memory for a %zu-byte validation workspace", need);
    w->vws = p, w->vws_bytes = need;
    return 0;
}

/* LoadImagesAndLabels without augmentation: load_image, letterbox (no auto, no scaleup), rows
 * xywhn of the letterboxed image; *m gets the size and scale_boxes's ratio and pad. */
static int val_item(worker *w, int64_t index, yp_image *out, int64_t *n, yp_loader_image *m, yp_err *err) {
    yp_aug_source_item it;
    int s = w->l->o.imgsz, ow = w->out_w, oh = w->out_h, rw, rh;
    yp_interp interp;
    size_t need_r = 0, need_l;
    if (source(w, index, &it, err)) return -1;
    int w0 = it.w0, h0 = it.h0; /* the original size (a cached image is already load_image's) */
    if (it.loaded) {
        const yp_cached_image *ci = yp_image_cache_get(w->l->o.cache, index);
        w0 = ci->w0, h0 = ci->h0;
    }
    int resize = it.loaded ? (rw = it.w0, rh = it.h0, interp = YP_INTER_AREA, 0)
                           : yp_aug_load_size(it.w0, it.h0, s, 0, &rw, &rh, &interp);
    if (resize < 0 || rw > s + 1 || rh > s + 1 || it.n_rows > w->l->rows_cap)
        return yp_err_set(err, "loader: image %lld: bad size %dx%d or too many rows", (long long)index, it.w0, it.h0);
    yp_image src = {(uint8_t *)it.pixels, it.w0, it.h0}, tile = src;
    yp_letterbox_opts o = {.new_w = ow, .new_h = oh, .stride = 32};
    yp_letterbox_geom g;
    if ((resize && yp_resize_ws(it.w0, it.h0, rw, rh, interp, &need_r)) || yp_letterbox_geometry(rw, rh, &o, &g) ||
        g.out_w != ow || g.out_h != oh || yp_letterbox_ws(rw, rh, &g, &need_l))
        return yp_err_set(err, "loader: image %lld: no letterbox for %dx%d", (long long)index, it.w0, it.h0);
    if (vws_reserve(w, need_r > need_l ? need_r : need_l, err)) return -1;
    if (resize) {
        tile = (yp_image){w->ws, rw, rh};
        if (yp_resize(&src, &tile, interp, w->vws, w->vws_bytes)) return yp_err_set(err, "loader: resize failed");
    }
    if (yp_letterbox(&tile, &g, out, w->vws, w->vws_bytes)) return yp_err_set(err, "loader: letterbox failed");
    memcpy(w->rows, it.rows, (size_t)it.n_rows * 5 * sizeof(float));
    yp_letterbox_labels(w->rows, it.n_rows, rw, rh, &g);
    yp_labels_xyxy_to_xywhn(w->rows, it.n_rows, ow, oh);
    *n = it.n_rows;
    m->w0 = w0, m->h0 = h0;
    m->rp = (yp_ratio_pad){.gain = (double)rh / h0, .pad_w = g.dw, .pad_h = g.dh, .h0 = h0, .w0 = w0};
    return 0;
}

static int train_item(worker *w, int64_t index, yp_rng *r, yp_image *out, int64_t *n, yp_loader_image *m,
                      yp_err *err) {
    plan_item(w, index, r);
    if (yp_aug_train_item(&w->l->cfg, source, w, index, r, out, w->rows, n, w->ws, w->ws_bytes, err)) return -1;
    m->w0 = m->h0 = 0; /* a mosaic combines four images: no one original size */
    return 0;
}

/* ---- batches ---- */

/* The worker's copy of epoch e's order: the identity (validation) or the seeded permutation. */
static void ensure_order(worker *w, int64_t epoch) {
    yp_loader *l = w->l;
    if (w->order_epoch == epoch) return;
    for (int64_t i = 0; i < l->n; i++) w->order[i] = l->o.rect ? l->o.rect->order[i] : i;
    if (!l->o.validation) {
        yp_rng r;
        yp_rng_seed(&r, l->o.seed + (uint64_t)epoch, YP_LOADER_ORDER_STREAM);
        for (int64_t i = l->n - 1; i > 0; i--) {
            int64_t j = yp_rng_below(&r, i + 1), t = w->order[i];
            w->order[i] = w->order[j], w->order[j] = t;
        }
    }
    w->order_epoch = epoch;
}

static int stopping(yp_loader *l) {
    pthread_mutex_lock(&l->mu);
    int s = l->stop;
    pthread_mutex_unlock(&l->mu);
    return s;
}

/* "no image of the dataset loads" at epoch e position p, with the first failure. -1. */
static int none_loads(yp_loader *l, int64_t epoch, int64_t p, yp_err *err) {
    char first[512];
    pthread_mutex_lock(&l->mu);
    snprintf(first, sizeof first, "%s", l->first_bad);
    pthread_mutex_unlock(&l->mu);
    return yp_err_set(err, "loader: epoch %lld position %lld: no image of the dataset loads (the first to fail: %s)",
                      (long long)epoch, (long long)p, first[0] ? first : "unknown");
}

/* Position p of epoch e into out: the image at p, or when it fails to load, in validation
 * nothing (2: the position is left out), in training the next one in the order that loads,
 * always with p's stream. Returns 0, 1 when stopped, 2 (left out), -1 with err set. */
static int build_item(worker *w, int64_t epoch, int64_t p, yp_image *out, int64_t *n, yp_loader_image *m,
                      yp_err *err) {
    yp_loader *l = w->l;
    for (int64_t t = 0; t < l->n; t++) {
        if (stopping(l)) return 1;
        int64_t idx = w->order[(p + t) % l->n];
        if (l->o.validation && t > 0) break; /* val.py scores each image once: never another in its place */
        if (atomic_load(&l->bad[idx])) continue;
        yp_rng r; /* a retry draws anew (else a mosaic would pick the same bad partner again) */
        yp_rng_seed(&r, l->o.seed + (uint64_t)t * 0x9e3779b97f4a7c15ull, yp_loader_stream(epoch, p));
        w->source_failed = 0;
        int rc = letterboxed(&l->o) ? val_item(w, idx, out, n, m, err) : train_item(w, idx, &r, out, n, m, err);
        if (rc == 0) {
            if (t > 0) atomic_fetch_add(&l->replaced, 1);
            m->index = idx, m->position = p;
            if (!l->o.validation) m->rp = (yp_ratio_pad){0};
            return 0;
        }
        if (!w->source_failed) return -1; /* not a bad image: a real error */
    }
    if (!l->o.validation) return none_loads(l, epoch, p, err);
    if (atomic_load(&l->bad_count) >= l->n) return none_loads(l, epoch, p, err);
    atomic_fetch_add(&l->skipped, 1);
    return 2;
}

/* Global batch g into slot s. Returns 0, 1 when stopped, -1 with s->err set. */
static int build_batch(worker *w, int64_t g, slot *s) {
    yp_loader *l = w->l;
    int64_t epoch = l->o.first_epoch + g / l->bpe, start = (g % l->bpe) * l->o.batch, left = l->n - start;
    const yp_val_rect *rect = l->o.rect;
    int H = rect ? (int)rect->h[g % l->bpe] : l->o.imgsz, W = rect ? (int)rect->w[g % l->bpe] : l->o.imgsz;
    size_t img = (size_t)H * (size_t)W * 3;
    ensure_order(w, epoch);
    int positions = (int)(left < l->o.batch ? left : l->o.batch);
    s->n = 0, s->n_labels = 0, s->h = H, s->w = W;
    w->out_w = W, w->out_h = H;
    for (int q = 0; q < positions; q++) {
        int i = s->n;
        yp_image out = {s->images + (size_t)i * img, W, H};
        int64_t k = 0;
        int rc = build_item(w, epoch, start + q, &out, &k, &s->meta[i], &s->err);
        if (rc == 2) continue; /* validation: left out, the batch is one image shorter */
        if (rc) return rc;
        s->n++;
        float *dst = s->labels + 6 * s->n_labels;
        for (int64_t j = 0; j < k; j++) {
            dst[6 * j] = (float)i;
            memcpy(dst + 6 * j + 1, w->rows + 5 * j, 5 * sizeof(float));
        }
        s->n_labels += k;
    }
    return 0;
}

static void *worker_main(void *arg) {
    worker *w = arg;
    yp_loader *l = w->l;
    pthread_mutex_lock(&l->mu);
    while (!l->stop && l->next_claim < l->total) {
        int64_t g = l->next_claim++;
        slot *s = &l->slots[g % l->nslots];
        while (!l->stop && !(s->state == SLOT_FREE && s->next_g == g)) pthread_cond_wait(&l->cv_free, &l->mu);
        if (l->stop) break;
        s->state = SLOT_BUSY;
        pthread_mutex_unlock(&l->mu);
        int rc = build_batch(w, g, s);
        pthread_mutex_lock(&l->mu);
        if (rc == 1) break;
        s->g = g, s->state = rc ? SLOT_FAILED : SLOT_READY;
        pthread_cond_broadcast(&l->cv_ready);
    }
    pthread_mutex_unlock(&l->mu);
    return NULL;
}

/* ---- life cycle ---- */

/* The ring, by the planner's per-slot figures (l->plan); l->got counts what was allocated. */
static int alloc_slots(yp_loader *l, yp_err *err) {
    const yp_loader_bytes *b = &l->plan;
    size_t per = (size_t)b->slot_images;
    l->slots = calloc((size_t)l->nslots, sizeof *l->slots);
    if (!l->slots) return yp_err_set(err, "loader: out of memory");
    for (int64_t i = 0; i < l->nslots; i++) {
        slot *s = &l->slots[i];
        s->next_g = i;
        s->images = malloc((size_t)b->slot_pixels), s->labels = malloc((size_t)b->slot_labels);
        s->meta = calloc(per, sizeof *s->meta);
        if (!s->images || !s->labels || !s->meta)
            return yp_err_set(err, "loader: out of memory for %lld batch slots", (long long)l->nslots);
        l->got.slots++;
        l->got.ring_images += b->slot_pixels, l->got.ring_labels += b->slot_labels;
        l->got.ring_meta += (int64_t)(per * sizeof *s->meta);
    }
    return 0;
}

/* Per worker its workspace, one item's rows and its copy of the order, by the planner's figures. */
static int alloc_workers(yp_loader *l, yp_err *err) {
    const yp_loader_bytes *b = &l->plan;
    l->w = calloc((size_t)l->o.workers, sizeof *l->w);
    if (!l->w) return yp_err_set(err, "loader: out of memory");
    for (int i = 0; i < l->o.workers; i++) {
        worker *w = &l->w[i];
        w->l = l, w->order_epoch = -1, w->ws_bytes = (size_t)b->worker_ws;
        w->ws = malloc(w->ws_bytes), w->rows = malloc((size_t)b->worker_rows);
        w->order = malloc((size_t)b->worker_order);
        if (!w->ws || !w->rows || !w->order) return yp_err_set(err, "loader: out of memory for the workers");
        l->got.workspaces += b->worker_ws + b->worker_rows, l->got.orders += b->worker_order;
    }
    return 0;
}

static int start_workers(yp_loader *l, yp_err *err) {
    for (int i = 0; i < l->o.workers; i++) {
        if (pthread_create(&l->w[i].th, NULL, worker_main, &l->w[i]))
            return yp_err_set(err, "loader: cannot start worker thread %d", i);
        l->w[i].started = 1;
    }
    return 0;
}

yp_loader *yp_loader_open(const yp_labels *labels, const yp_loader_opts *o, yp_err *err) {
    int64_t max_rows = yp_labels_max_rows(labels);
    yp_loader_bytes b;
    if (yp_loader_host_bytes(o, labels->n, max_rows, &b, err)) return NULL;
    yp_loader *l = calloc(1, sizeof *l);
    if (!l) return yp_err_set(err, "loader: out of memory"), NULL;
    l->labels = labels, l->o = *o, l->n = labels->n, l->nslots = b.slots, l->plan = b;
    const char *all = getenv("YP_LOADER_DECODE_ALL");
    l->decode_all = all && *all && strcmp(all, "0") != 0;
    l->cfg = (yp_aug_config){.imgsz = o->imgsz, .n_images = l->n, .max_rows = max_rows, .hyp = o->hyp};
    l->rows_cap = b.rows_cap;
    l->bpe = bpe_of(o, l->n);
    l->got.slot_images = b.slot_images, l->got.rows_cap = b.rows_cap;
    pthread_mutex_init(&l->mu, NULL);
    pthread_cond_init(&l->cv_free, NULL);
    pthread_cond_init(&l->cv_ready, NULL);
    l->bad = calloc((size_t)b.flags, sizeof *l->bad);
    if (l->bad) l->got.orders += b.flags;
    if (__builtin_mul_overflow(l->bpe, o->epochs - o->first_epoch, &l->total) || !l->bad) {
        yp_err_set(err, "loader: out of memory");
    } else if (!alloc_slots(l, err) && !alloc_workers(l, err) && !start_workers(l, err)) {
        return l;
    }
    yp_loader_close(l);
    return NULL;
}

int yp_loader_next(yp_loader *l, yp_loader_batch *b, yp_err *err) {
    pthread_mutex_lock(&l->mu);
    if (l->holding) { /* the batch returned last time goes back to the ring */
        slot *h = &l->slots[(l->next_deliver - 1) % l->nslots];
        h->state = SLOT_FREE, h->next_g += l->nslots, l->holding = 0;
        pthread_cond_broadcast(&l->cv_free);
    }
    if (l->next_deliver >= l->total) {
        pthread_mutex_unlock(&l->mu);
        return 0;
    }
    int64_t g = l->next_deliver;
    slot *s = &l->slots[g % l->nslots];
    while (!((s->state == SLOT_READY || s->state == SLOT_FAILED) && s->g == g)) pthread_cond_wait(&l->cv_ready, &l->mu);
    if (s->state == SLOT_FAILED) {
        if (err) *err = s->err;
        pthread_mutex_unlock(&l->mu);
        return -1;
    }
    *b = (yp_loader_batch){.epoch = l->o.first_epoch + g / l->bpe,
                           .index = g % l->bpe,
                           .n = s->n,
                           .imgsz = l->o.imgsz,
                           .h = s->h,
                           .w = s->w,
                           .images = s->images,
                           .labels = s->labels,
                           .n_labels = s->n_labels,
                           .meta = s->meta};
    l->next_deliver++, l->delivered++, l->holding = 1;
    pthread_mutex_unlock(&l->mu);
    return 1;
}

int64_t yp_loader_batches_per_epoch(const yp_loader *l) { return l->bpe; }

void yp_loader_allocated(const yp_loader *l, yp_loader_bytes *b) {
    *b = l->got;
    b->total = b->ring_images + b->ring_labels + b->ring_meta + b->workspaces + b->orders;
    b->decoders = 0;
    for (int i = 0; i < l->o.workers; i++) b->decoders += (int64_t)(l->w[i].bufs.file_cap + l->w[i].bufs.rgb_cap);
}

void yp_loader_get_stats(yp_loader *l, yp_loader_stats *s) {
    pthread_mutex_lock(&l->mu);
    s->delivered = l->delivered;
    snprintf(s->first_bad, sizeof s->first_bad, "%s", l->first_bad);
    pthread_mutex_unlock(&l->mu);
    s->bad_images = atomic_load(&l->bad_count);
    s->replaced = atomic_load(&l->replaced);
    s->skipped = atomic_load(&l->skipped);
    s->tiles_unread = atomic_load(&l->unread);
    s->tiles_cropped = atomic_load(&l->cropped);
}

void yp_loader_close(yp_loader *l) {
    if (!l) return;
    pthread_mutex_lock(&l->mu);
    l->stop = 1;
    pthread_cond_broadcast(&l->cv_free);
    pthread_cond_broadcast(&l->cv_ready);
    pthread_mutex_unlock(&l->mu);
    for (int i = 0; l->w && i < l->o.workers; i++) {
        worker *w = &l->w[i];
        if (w->started) pthread_join(w->th, NULL);
        yp_image_buffers_free(&w->bufs);
        free(w->ws), free(w->vws), free(w->rows), free(w->order);
    }
    for (int64_t i = 0; l->slots && i < l->nslots; i++)
        free(l->slots[i].images), free(l->slots[i].labels), free(l->slots[i].meta);
    free(l->w), free(l->slots), free(l->bad);
    pthread_cond_destroy(&l->cv_free);
    pthread_cond_destroy(&l->cv_ready);
    pthread_mutex_destroy(&l->mu);
    free(l);
}

int64_t yp_loader_to_float(const yp_loader_batch *b, float *out, int64_t cap) {
    int64_t n = (int64_t)b->n * b->h * b->w * 3;
    if (cap < n) return -1;
    for (int64_t i = 0; i < n; i++) out[i] = (float)b->images[i] / 255.0f;
    return n;
}
