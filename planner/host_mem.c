/* host_mem.c - the data pipeline's host memory, term by term (yp_host_mem.h). */
#include <string.h>

#include "yp_candidate.h"
#include "yp_host_mem.h"

static int mul(int64_t a, int64_t b, int64_t *out) { return __builtin_mul_overflow(a, b, out) ? -1 : 0; }
static int addto(int64_t *acc, int64_t v) { return __builtin_add_overflow(*acc, v, acc) ? -1 : 0; }

/* v rounded up to a multiple of a (v and a small enough not to overflow: callers bound them). */
static int64_t round_up(int64_t v, int64_t a) { return (v + a - 1) / a * a; }

static const char *const cache_names[YP_CACHE_COUNT] = {"none", "ram"};

yp_pipeline yp_pipeline_default(void) { return (yp_pipeline){YP_PIPE_WORKERS, YP_PIPE_PREFETCH, YP_CACHE_NONE}; }

int yp_pipeline_check(const yp_pipeline *p, yp_err *err) {
    if (p->workers < 1 || p->workers > YP_PIPE_MAX_WORKERS)
        return yp_err_set(err, "pipeline: %d loader workers; give 1..%d", p->workers, YP_PIPE_MAX_WORKERS);
    if (p->prefetch < 1 || p->prefetch > YP_PIPE_MAX_PREFETCH)
        return yp_err_set(err, "pipeline: prefetch %d batches per worker; give 1..%d", p->prefetch,
                          YP_PIPE_MAX_PREFETCH);
    if ((int)p->cache < 0 || p->cache >= YP_CACHE_COUNT)
        return yp_err_set(err, "pipeline: cache mode %d; expected none or ram", (int)p->cache);
    return 0;
}

const char *yp_cache_mode_name(yp_cache_mode m) { return m >= 0 && m < YP_CACHE_COUNT ? cache_names[m] : "?"; }

int yp_cache_mode_parse(const char *s) {
    for (int i = 0; i < YP_CACHE_COUNT; i++)
        if (!strcmp(s, cache_names[i])) return i;
    return -1;
}

/* ---- the augmentation workspace ---- */

#define SIDE_MAX 2147483647LL /* an int side: what the resize and the warp take */

int64_t yp_host_resize_linear_ws(int64_t dw, int64_t dh) {
    if (dw < 1 || dh < 1 || dw > SIDE_MAX || dh > SIDE_MAX) return -1;
    return round_up(dw * 4 * (int64_t)sizeof(int), 16) + round_up(dh * 4 * (int64_t)sizeof(int), 16) +
           round_up(3 * dw * 2 * (int64_t)sizeof(int32_t), 16);
}

int64_t yp_host_warp_affine_ws(int64_t out_w) {
    if (out_w < 1 || out_w > SIDE_MAX) return -1;
    return out_w * (2 * (int64_t)sizeof(int) + 6 * (int64_t)sizeof(int16_t));
}

int yp_host_aug_ws_of(int64_t imgsz, yp_host_aug_ws *w) {
    memset(w, 0, sizeof *w);
    if (imgsz < 2 || imgsz > YP_HOST_MAX_SIDE) return -1;
    int64_t s = imgsz, img = s * s * 3, lin = yp_host_resize_linear_ws(s + 1, s + 1), warp = yp_host_warp_affine_ws(s);
    w->canvas = 4 * img, w->tile = (s + 1) * (s + 1) * 3;
    w->scratch = img + lin > warp ? img + lin : warp; /* the letterbox's image and resize; a resize alone is less */
    w->tile_at = round_up(w->canvas, 64);
    w->scratch_at = w->tile_at + round_up(w->tile, 64);
    w->total = w->scratch_at + round_up(w->scratch, 64);
    return 0;
}

/* ---- a loader ---- */

static int loader_in_ok(const yp_host_loader_in *in) {
    const yp_pipeline *p = &in->pipe;
    return p->workers >= 1 && p->workers <= YP_PIPE_MAX_WORKERS && p->prefetch >= 1 && in->batch >= 1 &&
           in->imgsz >= 2 && in->imgsz <= YP_HOST_MAX_SIDE && in->side >= 0 && in->side <= YP_HOST_MAX_SIDE &&
           in->passes >= 0 && in->n_images >= 0 && in->max_rows >= 0 && in->max_rows <= INT64_MAX / 64;
}

int64_t yp_host_batches_per_epoch(int64_t n, int64_t batch, int drop_last) {
    return drop_last ? n / batch : n / batch + (n % batch != 0);
}

/* Slots in the ring: workers x prefetch, or every batch of the loader's life when there are fewer
 * (a validation pass of one batch holds one slot, not two workers' worth). */
static int slots_of(const yp_host_loader_in *in, int64_t *slots) {
    int64_t n = in->n_images, bpe, all;
    *slots = (int64_t)in->pipe.workers * in->pipe.prefetch;
    if (n < 1 || in->passes < 1) return 0;
    bpe = yp_host_batches_per_epoch(n, in->batch, in->drop_last);
    if (mul(bpe, in->passes, &all)) return 0; /* more than any ring */
    if (all < *slots) *slots = all;
    return 0;
}

/* The per-slot and per-worker units. */
static int units(const yp_host_loader_in *in, yp_host_loader *b) {
    int64_t s = in->imgsz, side = in->side ? in->side : s, t, n = in->n_images;
    b->slot_images = n > 0 && n < in->batch ? n : in->batch;
    b->rows_cap = in->letterboxed ? in->max_rows : 4 * in->max_rows;
    if (b->rows_cap < 1) b->rows_cap = 1;
    if (in->letterboxed) {
        b->worker_ws = (s + 1) * (s + 1) * 3;
    } else {
        yp_host_aug_ws a;
        yp_host_aug_ws_of(s, &a);
        b->worker_ws = a.total;
        b->canvases = a.tile_at; /* times the workers below */
    }
    b->worker_order = n * (int64_t)sizeof(int64_t), b->flags = n;
    if (mul(b->slot_images, side * side * 3, &b->slot_pixels) || mul(b->slot_images, b->rows_cap, &t) ||
        mul(t, 6 * (int64_t)sizeof(float), &b->slot_labels) ||
        mul(b->rows_cap, 5 * (int64_t)sizeof(float), &b->worker_rows))
        return -1;
    b->slot_meta = b->slot_images * YP_HOST_LOADER_RECORD;
    return 0;
}

int yp_host_loader_bytes(const yp_host_loader_in *in, yp_host_loader *b, yp_err *err) {
    memset(b, 0, sizeof *b);
    if (!loader_in_ok(in))
        return yp_err_set(err, "host memory: bad loader settings (%d workers, prefetch %d, batch %lld, img %lld)",
                          in->pipe.workers, in->pipe.prefetch, (long long)in->batch, (long long)in->imgsz);
    int64_t w = in->pipe.workers, img = in->imgsz * in->imgsz * 3, ws;
    if (slots_of(in, &b->slots) || units(in, b) || mul(b->slots, b->slot_pixels, &b->ring_images) ||
        mul(b->slots, b->slot_labels, &b->ring_labels) || mul(b->slots, b->slot_meta, &b->ring_meta) ||
        (ws = b->worker_ws, addto(&ws, b->worker_rows)) || mul(ws, w, &b->workspaces) ||
        mul(b->worker_order, w, &b->orders) || addto(&b->orders, b->flags))
        return yp_err_set(err, "host memory: the loader's size overflows");
    b->canvases *= w;
    b->total = b->ring_images;
    if (addto(&b->total, b->ring_labels) || addto(&b->total, b->ring_meta) || addto(&b->total, b->workspaces) ||
        addto(&b->total, b->orders))
        return yp_err_set(err, "host memory: the loader's size overflows");
    b->decoders = in->pipe.cache == YP_CACHE_RAM ? 0 : w * 2 * img;
    return 0;
}

/* ---- the cache and the float batch ---- */

int64_t yp_host_cache_bytes(int64_t n, int64_t imgsz) {
    int64_t px, b;
    if (n < 0 || mul(imgsz, imgsz, &px) || mul(px, 3, &px) || mul(px, n, &b)) return -1;
    return b;
}

int64_t yp_host_input_bytes(int64_t batch, int64_t imgsz, int multi_scale, int stride) {
    int64_t one, b, m;
    if (batch < 0 || imgsz < 0 || stride < 1 || mul(imgsz, imgsz, &one) || mul(one, 3 * (int64_t)sizeof(float), &one) ||
        mul(one, batch, &b))
        return -1;
    if (!multi_scale) return b;
    yp_candidate c = yp_candidate_default(); /* the schedule's training size: one rule */
    c.img_w = c.img_h = imgsz, c.multi_scale = 1;
    int64_t mw, mh;
    yp_candidate_train_size(&c, stride, &mw, &mh);
    if (mul(mw, mh, &m) || mul(m, 3 * (int64_t)sizeof(float), &m) || mul(m, batch, &m) || addto(&b, m)) return -1;
    return b;
}
