/* augment.c - the random generator, hyp.scratch-low's defaults and the whole training item of
 * YOLOv5's __getitem__ (yp_augment.h), built from the pieces in augment_mosaic.c,
 * augment_warp.c, augment_resize.c and augment_color.c. Differences from YOLOv5, by design: one
 * generator for every draw (YOLOv5 takes augment_hsv's gains from numpy's), no albumentations
 * (YOLOv5 runs them only when the package is installed), and no mixup: yp_aug_hyp has no
 * field for it, since hyp.scratch-low sets it to 0, so a hyp file asking for mixup is refused
 * where it is read (hyp_file.c). Its draw is still taken, so the sequence keeps YOLOv5's order. */
#include <string.h>

#include "yp_augment.h"
#include "yp_host_mem.h"
#include "yp_splitmix64.h"

/* ---- xoshiro256** (Blackman and Vigna), seeded by splitmix64 ---- */

void yp_rng_seed(yp_rng *r, uint64_t seed, uint64_t stream) {
    uint64_t x = seed;
    uint64_t mixed = yp_splitmix64_next(&x) ^ stream; /* seed and stream both pass through the mixer */
    x = mixed;
    yp_splitmix64_next(&x);
    for (int i = 0; i < 4; i++) r->s[i] = yp_splitmix64_next(&x);
}

static uint64_t rotl(uint64_t v, int k) { return (v << k) | (v >> (64 - k)); }

uint64_t yp_rng_next(yp_rng *r) {
    uint64_t *s = r->s, out = rotl(s[1] * 5, 7) * 9, t = s[1] << 17;
    s[2] ^= s[0], s[3] ^= s[1], s[1] ^= s[2], s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return out;
}

double yp_rng_unit(yp_rng *r) { return (double)(yp_rng_next(r) >> 11) * 0x1.0p-53; }

double yp_rng_uniform(yp_rng *r, double a, double b) { return a + (b - a) * yp_rng_unit(r); }

int64_t yp_rng_below(yp_rng *r, int64_t n) {
    if (n <= 1) return 0;
    uint64_t un = (uint64_t)n, limit = UINT64_MAX - UINT64_MAX % un, v; /* reject the short last bucket */
    do v = yp_rng_next(r);
    while (v >= limit);
    return (int64_t)(v % un);
}

void yp_aug_hyp_default(yp_aug_hyp *h) {
    *h = (yp_aug_hyp){.hsv_h = 0.015, .hsv_s = 0.7, .hsv_v = 0.4, .degrees = 0, .translate = 0.1, .scale = 0.5,
                      .shear = 0, .perspective = 0, .flipud = 0, .fliplr = 0.5, .mosaic = 1};
}

/* ---- the training item ---- */

/* Workspace regions: the 2 imgsz canvas, one load_image'd tile, and scratch shared by the resize,
 * the letterbox and the warp (used one after another): the planner's layout (yp_host_aug_ws_of),
 * which the loader allocates by. */
static int layout(const yp_aug_config *cfg, yp_host_aug_ws *l) {
    if (cfg->imgsz < 2 || cfg->imgsz > (1 << 14) || cfg->n_images < 1 || cfg->max_rows < 0 ||
        cfg->max_rows > (INT64_MAX / 20))
        return -1;
    return yp_host_aug_ws_of(cfg->imgsz, l);
}

int yp_aug_train_ws(const yp_aug_config *cfg, size_t *bytes) {
    yp_host_aug_ws l;
    if (layout(cfg, &l)) return -1;
    *bytes = (size_t)l.total;
    return 0;
}

int64_t yp_aug_train_rows_cap(const yp_aug_config *cfg) { return 4 * cfg->max_rows; }

typedef struct {
    const yp_aug_config *cfg;
    yp_aug_source src;
    void *ctx;
    yp_err *err;
    yp_image canvas, tile; /* tile: the load_image'd image, in tile_ws or (no resize) the source's own pixels */
    uint8_t *tile_ws;
    uint8_t *scratch;
    size_t scratch_bytes;
} item_ctx;

/* Fetches image index and load_image-resizes it into c->tile (an image that needs no resize is
 * used where the source holds it: it stays valid until the next fetch); *item gets its labels. */
static int load(item_ctx *c, int64_t index, yp_aug_source_item *item) {
    int w, h;
    yp_interp interp;
    if (c->src(c->ctx, index, item, c->err)) return -1;
    if (item->n_rows < 0 || item->n_rows > c->cfg->max_rows)
        return yp_err_set(c->err, "augment: image %lld has %lld label rows, more than the %lld planned (max_rows)",
                          (long long)index, (long long)item->n_rows, (long long)c->cfg->max_rows);
    int need = item->loaded ? (w = item->w0, h = item->h0, interp = YP_INTER_LINEAR, 0)
                            : yp_aug_load_size(item->w0, item->h0, c->cfg->imgsz, 1, &w, &h, &interp);
    if (need < 0 || w > c->cfg->imgsz + 1 || h > c->cfg->imgsz + 1)
        return yp_err_set(c->err, "augment: image %lld has a bad size %dx%d", (long long)index, item->w0, item->h0);
    yp_image orig = {(uint8_t *)item->pixels, item->w0, item->h0};
    if (need == 0) {
        c->tile = orig; /* only read from here on (mosaic_place, letterbox) */
        return 0;
    }
    c->tile = (yp_image){c->tile_ws, w, h};
    if (yp_resize(&orig, &c->tile, interp, c->scratch, c->scratch_bytes))
        return yp_err_set(c->err, "augment: resizing image %lld failed (workspace too small)", (long long)index);
    return 0;
}

/* load_mosaic + random_perspective with the mosaic border: into out, rows. The warp's draws come
 * before the tiles are placed (loading draws nothing, so the sequence is load_mosaic's), so that
 * only the part of the canvas the warp reads is written: the tiles' pixels there, 114 around them. */
static int mosaic_item(item_ctx *c, int64_t index, yp_rng *r, yp_image *out, float *rows, int64_t *n) {
    yp_mosaic_plan p;
    int s = c->cfg->imgsz, border = -((s + 1) / 2), clip[4], placed[4][4];
    yp_mosaic_draw(r, index, c->cfg->n_images, s, &p);
    yp_rng_unit(r); /* YOLOv5's mixup draw (mixup is 0) */
    yp_warp w;
    if (yp_warp_draw(r, &c->cfg->hyp, 2 * s, 2 * s, border, border, &w) || w.out_w != out->w || w.out_h != out->h)
        return yp_err_set(c->err, "augment: the mosaic warp to %dx%d failed", out->w, out->h);
    yp_warp_source_rect(&w, 2 * s, 2 * s, clip);
    *n = 0;
    for (int i = 0; i < 4; i++) {
        yp_aug_source_item item;
        if (load(c, p.index[i], &item)) return -1;
        if (yp_mosaic_place_in(&c->canvas, &p, i, &c->tile, item.rows, item.n_rows, rows + 5 * *n, clip, placed[i]))
            return yp_err_set(c->err, "augment: the mosaic tile of image %lld does not fit", (long long)p.index[i]);
        *n += item.n_rows;
    }
    yp_mosaic_fill_rest(&c->canvas, clip, (const int (*)[4])placed, 4);
    if (yp_warp_image(&c->canvas, out, &w, c->scratch, c->scratch_bytes))
        return yp_err_set(c->err, "augment: the mosaic warp to %dx%d failed", out->w, out->h);
    *n = yp_warp_labels(rows, *n, &w);
    return 0;
}

/* load_image + letterbox (no auto, scaleup) + random_perspective without border. */
static int single_item(item_ctx *c, int64_t index, yp_rng *r, yp_image *out, float *rows, int64_t *n) {
    yp_aug_source_item item;
    yp_letterbox_geom g;
    yp_warp w;
    int s = c->cfg->imgsz;
    yp_letterbox_opts o = {.new_w = s, .new_h = s, .scaleup = 1, .stride = 32};
    if (load(c, index, &item)) return -1;
    yp_image boxed = {c->canvas.rgb, s, s};
    if (yp_letterbox_geometry(c->tile.w, c->tile.h, &o, &g) || g.out_w != s || g.out_h != s ||
        yp_letterbox(&c->tile, &g, &boxed, c->scratch, c->scratch_bytes))
        return yp_err_set(c->err, "augment: letterboxing image %lld failed", (long long)index);
    memcpy(rows, item.rows, (size_t)item.n_rows * 5 * sizeof *rows);
    yp_letterbox_labels(rows, item.n_rows, c->tile.w, c->tile.h, &g);
    if (yp_warp_draw(r, &c->cfg->hyp, s, s, 0, 0, &w)) return yp_err_set(c->err, "augment: bad warp");
    if (!yp_warp_changes_image(&w, 0, 0)) memcpy(out->rgb, boxed.rgb, (size_t)s * (size_t)s * 3);
    else if (yp_warp_image(&boxed, out, &w, c->scratch, c->scratch_bytes))
        return yp_err_set(c->err, "augment: the warp of image %lld failed", (long long)index);
    *n = yp_warp_labels(rows, item.n_rows, &w);
    return 0;
}

int yp_aug_train_item(const yp_aug_config *cfg, yp_aug_source src, void *ctx, int64_t index, yp_rng *r,
                      yp_image *out, float *rows, int64_t *n_out, void *ws, size_t ws_bytes, yp_err *err) {
    yp_host_aug_ws l;
    if (layout(cfg, &l) || ws_bytes < (size_t)l.total || !ws)
        return yp_err_set(err, "augment: the workspace is smaller than yp_aug_train_ws's size");
    if (index < 0 || index >= cfg->n_images || out->w != cfg->imgsz || out->h != cfg->imgsz)
        return yp_err_set(err, "augment: image %lld or output %dx%d does not match the configuration (%lld images, %d)",
                          (long long)index, out->w, out->h, (long long)cfg->n_images, cfg->imgsz);
    uint8_t *base = ws;
    item_ctx c = {cfg, src, ctx, err, {base, 2 * cfg->imgsz, 2 * cfg->imgsz}, {NULL, 0, 0}, base + l.tile_at,
                  base + l.scratch_at, (size_t)l.scratch};
    int mosaic = yp_rng_unit(r) < cfg->hyp.mosaic;
    int rc = mosaic ? mosaic_item(&c, index, r, out, rows, n_out) : single_item(&c, index, r, out, rows, n_out);
    if (rc) return -1;
    yp_labels_xyxy_to_xywhn(rows, *n_out, out->w, out->h);
    /* augment_hsv, flipud?, fliplr?: all three drawn first (they read no pixels), then the colour
     * and the left-right flip in one pass; the flips commute */
    double gain[3];
    int hsv = yp_hsv_draw(r, &cfg->hyp, gain);
    int ud = yp_rng_unit(r) < cfg->hyp.flipud;
    int lr = yp_rng_unit(r) < cfg->hyp.fliplr;
    if (hsv) yp_hsv_apply_flip(out, gain, lr);
    else if (lr) yp_flip_lr(out);
    if (ud) {
        yp_flip_ud(out);
        for (int64_t i = 0; i < *n_out; i++) rows[5 * i + 2] = 1 - rows[5 * i + 2];
    }
    if (lr)
        for (int64_t i = 0; i < *n_out; i++) rows[5 * i + 1] = 1 - rows[5 * i + 1];
    return 0;
}
