/* yp_augment.h - YOLOv5's training augmentation and validation letterbox on uint8 HWC RGB images
 * (3 channels, rows packed: w*3 bytes each) with their labels, as YOLOv5's dataloader does it:
 * load_image's resize, the 4-image mosaic, random_perspective with box_candidates, augment_hsv,
 * the flips, letterbox. Every random draw comes from a yp_rng the caller passes, so the same seed
 * gives the same output on any thread; a loader seeds one per image (yp_rng_seed(seed, index)).
 * Nothing here allocates: functions that need memory take a workspace sized by their _ws
 * function (checked arithmetic; -1 when a size does not fit in size_t or the inputs are bad).
 *
 * Resampling follows OpenCV 4.6's fixed-point rounding, which YOLOv5 runs (our kernels, not
 * OpenCV; augment_resize.c and augment_warp.c state each rule):
 *   resize INTER_LINEAR   11-bit weights, horizontal pass exact in int32, vertical pass as
 *                         OpenCV's SIMD rows (with its scalar rule for the last bytes of a row);
 *                         an exact 2x downscale is the 2x2 mean, (a+b+c+d+2)>>2, as OpenCV's;
 *   resize INTER_AREA     OpenCV's area weights in float (downscale only, what load_image uses);
 *   warpAffine/Perspective inverse map in 1/32 pixel, 15-bit bilinear weights, border 114.
 * Labels are rows of 5 floats, class then 4 coordinates: "xywhn" is normalised centre x, y,
 * width, height (the label files' form); "xyxy" is pixel corners x1 y1 x2 y2.
 * Defines: yp_rng, yp_aug_hyp, yp_interp, resize, letterbox, mosaic, perspective,
 * box_candidates, HSV, flips, and the whole training item (yp_aug_train_item). */
#ifndef YP_AUGMENT_H
#define YP_AUGMENT_H

#include <stddef.h>
#include <stdint.h>

#include "yp_error.h"
#include "yp_image.h"

/* ---- random numbers: xoshiro256** seeded by splitmix64 ---- */

typedef struct {
    uint64_t s[4];
} yp_rng;

/* Seeds r from (seed, stream): the same pair gives the same sequence; different streams (image
 * indices) give independent ones. */
void yp_rng_seed(yp_rng *r, uint64_t seed, uint64_t stream);
uint64_t yp_rng_next(yp_rng *r);
/* Python's random.random(): 53 random bits in [0, 1). */
double yp_rng_unit(yp_rng *r);
/* random.uniform(a, b) = a + (b - a) * unit. */
double yp_rng_uniform(yp_rng *r, double a, double b);
/* Uniform integer in [0, n), without bias; n >= 1. */
int64_t yp_rng_below(yp_rng *r, int64_t n);

/* ---- images ---- */

/* Images are yp_image.h's: w x h RGB, rows of w*3 bytes at `rgb`. Here `rgb` may also point at
 * caller memory (a canvas, a workspace): augmentation never frees an image. */

/* Bytes of a w x h image; -1 when w or h < 1 or the size overflows. */
int yp_image_bytes(int w, int h, size_t *bytes);

/* hyp.scratch-low.yaml's augmentation keys. */
typedef struct {
    double hsv_h, hsv_s, hsv_v;                       /* 0.015, 0.7, 0.4 */
    double degrees, translate, scale, shear, perspective; /* 0, 0.1, 0.5, 0, 0 */
    double flipud, fliplr, mosaic;                    /* 0, 0.5, 1 */
} yp_aug_hyp;

void yp_aug_hyp_default(yp_aug_hyp *h);

/* ---- resize (cv2.resize semantics, augment_resize.c) ---- */

typedef enum { YP_INTER_LINEAR, YP_INTER_AREA } yp_interp;

/* Workspace for resizing sw x sh to dw x dh. INTER_AREA only downscales (dw <= sw, dh <= sh). */
int yp_resize_ws(int sw, int sh, int dw, int dh, yp_interp interp, size_t *bytes);
/* dst->w, dst->h give the size. Same sizes: a copy. Returns 0, or -1 (bad sizes, small ws). */
int yp_resize(const yp_image *src, yp_image *dst, yp_interp interp, void *ws, size_t ws_bytes);

/* load_image's size: r = imgsz / max(w0, h0), sizes ceil(w0 r) x ceil(h0 r); INTER_LINEAR when
 * augmenting or upscaling (r > 1), else INTER_AREA. Returns 1 when a resize is needed (r != 1),
 * 0 when not (*w = w0, *h = h0), -1 on bad input (sizes or imgsz < 1, a size over INT_MAX). */
int yp_aug_load_size(int w0, int h0, int imgsz, int augment, int *w, int *h, yp_interp *interp);

/* ---- letterbox (validation; augment_resize.c) ---- */

typedef struct {
    int new_w, new_h;   /* target shape */
    int auto_pad;       /* auto: pad only to a multiple of stride */
    int scale_fill;     /* stretch to new_w x new_h, no padding (when not auto_pad) */
    int scaleup;        /* allow r > 1 */
    int stride;         /* 32 */
} yp_letterbox_opts;

typedef struct {
    int unpad_w, unpad_h;          /* the resized image: round(w r), round(h r) (or new, scale_fill) */
    int top, bottom, left, right;  /* padding: round(dh -+ 0.1), round(dw -+ 0.1) */
    int out_w, out_h;              /* unpad + padding */
    double ratio_w, ratio_h;       /* YOLOv5's returned ratio */
    double dw, dh;                 /* YOLOv5's returned padding (half the total, may be .5) */
} yp_letterbox_geom;

/* YOLOv5's letterbox geometry for a w x h image. Returns 0, or -1 on bad input. */
int yp_letterbox_geometry(int w, int h, const yp_letterbox_opts *o, yp_letterbox_geom *g);
int yp_letterbox_ws(int w, int h, const yp_letterbox_geom *g, size_t *bytes);
/* dst must be g->out_w x g->out_h: the image resized (INTER_LINEAR) into the border of 114. */
int yp_letterbox(const yp_image *src, const yp_letterbox_geom *g, yp_image *dst, void *ws, size_t ws_bytes);
/* xywhn rows of a w x h image -> xyxy pixels of the letterboxed image (YOLOv5's xywhn2xyxy with
 * ratio*w, ratio*h and the padding dw, dh). */
void yp_letterbox_labels(float *rows, int64_t n, int w, int h, const yp_letterbox_geom *g);

/* ---- mosaic (augment_mosaic.c) ---- */

typedef struct {
    int imgsz;        /* the canvas is 2 imgsz square */
    int xc, yc;       /* centre, each int(uniform(imgsz/2, 3 imgsz/2)) */
    int64_t index[4]; /* the images, placed top-left, top-right, bottom-left, bottom-right */
} yp_mosaic_plan;

/* load_mosaic's draws, in its order: yc, xc, 3 partners uniform over n_images (with
 * replacement), then a shuffle of the 4. */
void yp_mosaic_draw(yp_rng *r, int64_t index, int64_t n_images, int imgsz, yp_mosaic_plan *p);
/* Copies tile `slot` (0..3, already load_image-resized) onto canvas (2 imgsz square, filled with
 * 114 by the caller or yp_mosaic_fill) and writes its n xywhn rows to out as xyxy pixels shifted
 * by the tile's offset and clipped to [0, 2 imgsz]. Returns 0, or -1 on bad input. */
int yp_mosaic_place(yp_image *canvas, const yp_mosaic_plan *p, int slot, const yp_image *tile,
                    const float *rows, int64_t n, float *out);
void yp_mosaic_fill(yp_image *canvas);
/* yp_mosaic_place copying only the tile's pixels inside clip (x1 y1 x2 y2, end exclusive: the part
 * of the canvas a warp reads, yp_warp_source_rect); placed gets the tile's whole canvas rectangle
 * (x1 y1 x2 y2), the labels are yp_mosaic_place's. Then yp_mosaic_fill_rest writes 114 to the
 * pixels of clip that none of the n placed rectangles covers: inside clip the canvas is then
 * yp_mosaic_fill's and yp_mosaic_place's, byte for byte, at a fraction of the memory traffic. */
int yp_mosaic_place_in(yp_image *canvas, const yp_mosaic_plan *p, int slot, const yp_image *tile,
                       const float *rows, int64_t n, float *out, const int clip[4], int placed[4]);
void yp_mosaic_fill_rest(yp_image *canvas, const int clip[4], const int (*placed)[4], int n);

/* ---- random_perspective (augment_warp.c) ---- */

typedef struct {
    double m[9];     /* M = T S R P C, row-major 3x3, input pixel -> output pixel */
    double s;        /* the scale drawn (box_candidates compares areas against it) */
    int perspective; /* warpPerspective (else warpAffine on the first two rows) */
    int out_w, out_h;
} yp_warp;

/* random_perspective's draws for an in_w x in_h input with border (border_x, border_y) (the
 * mosaic's is -imgsz/2 each, else 0), in its order: perspective x, y; angle, scale; shear x, y;
 * translation x, y. Output size in + 2 border. Returns 0, or -1 when the output would be empty. */
int yp_warp_draw(yp_rng *r, const yp_aug_hyp *h, int in_w, int in_h, int border_x, int border_y,
                 yp_warp *w);
/* Whether random_perspective warps the image: a border, or M not the identity. */
int yp_warp_changes_image(const yp_warp *w, int border_x, int border_y);
int yp_warp_ws(const yp_warp *w, size_t *bytes);
/* The source pixels yp_warp_image can read for a src_w x src_h source: rect x1 y1 x2 y2 (end
 * exclusive, within the source, maybe empty): the inverse-mapped output corners' box with a margin
 * of 2 pixels (affine, no fixed-point term near saturation), else the whole source. */
void yp_warp_source_rect(const yp_warp *w, int src_w, int src_h, int rect[4]);
/* Warps src into dst (w->out_w x w->out_h), bilinear, border 114. Returns 0 or -1. */
int yp_warp_image(const yp_image *src, yp_image *dst, const yp_warp *w, void *ws, size_t ws_bytes);
/* Warps the n xyxy rows (4 corners each, then their min/max, clipped to the output), keeps the
 * box_candidates (against the old box times w->s), compacting rows. Returns the rows kept. */
int64_t yp_warp_labels(float *rows, int64_t n, const yp_warp *w);

/* box_candidates: box1 before (xyxy, already scaled), box2 after: w2 > 2 and h2 > 2 pixels, area
 * ratio w2 h2 / (w1 h1 + 1e-16) > 0.1, aspect max(w2/(h2+eps), h2/(w2+eps)) < 100. */
int yp_box_candidate(const float box1[4], const double box2[4]);

/* ---- colour and flips (augment_color.c) ---- */

/* augment_hsv's gains: r = uniform(-1, 1) * gain + 1 for h, s, v. Draws nothing and returns 0
 * when all three gains are 0 (YOLOv5 then leaves the image alone); else returns 1. */
int yp_hsv_draw(yp_rng *r, const yp_aug_hyp *h, double gain[3]);
/* RGB -> HSV (OpenCV's uint8 rule, H in [0, 180)), look-up tables hue (x g0) mod 180, saturation
 * and value clip(x g, 0, 255) (truncated to uint8), -> RGB (OpenCV's float rule), in place. */
void yp_hsv_apply(yp_image *img, const double gain[3]);
/* yp_hsv_apply, then with flip_lr yp_flip_lr, in one pass over the image (each pixel converted by
 * the rule of its place before the flip, as the two calls would). */
void yp_hsv_apply_flip(yp_image *img, const double gain[3], int flip_lr);
/* OpenCV's uint8 conversions of a row of n pixels (in place allowed; augment_color.c states
 * the rule: HSV -> RGB truncates, but rounds the last n mod 32 pixels, as OpenCV does). */
void yp_rgb_to_hsv_row(const uint8_t *rgb, uint8_t *hsv, int n);
void yp_hsv_to_rgb_row(const uint8_t *hsv, uint8_t *rgb, int n);

void yp_flip_lr(yp_image *img);
void yp_flip_ud(yp_image *img);

/* xyxy pixel rows of a w x h image -> xywhn (xyxy2xywhn with clip, eps 1e-3), in place. */
void yp_labels_xyxy_to_xywhn(float *rows, int64_t n, int w, int h);

/* ---- the training item (augment.c) ---- */

/* One dataset image as the loader holds it: decoded (original size) and its xywhn rows. */
typedef struct {
    const uint8_t *pixels; /* h0 rows of w0*3 bytes, RGB */
    int w0, h0;
    const float *rows;
    int64_t n_rows;
    int loaded; /* 1: the pixels are load_image's result already (--cache ram): no resize */
} yp_aug_source_item;

/* Gives image `index` (0 <= index < n_images). Returns 0, or -1 with err set. The item must stay
 * valid until the next call. */
typedef int (*yp_aug_source)(void *ctx, int64_t index, yp_aug_source_item *out, yp_err *err);

typedef struct {
    int imgsz;          /* output is imgsz x imgsz */
    int64_t n_images;
    int64_t max_rows;   /* most label rows one image has (yp_dataset_stats.max_labels) */
    yp_aug_hyp hyp;
} yp_aug_config;

/* Workspace for yp_aug_train_item with cfg. */
int yp_aug_train_ws(const yp_aug_config *cfg, size_t *bytes);
/* Labels out needs room for 4 * cfg->max_rows rows. */
int64_t yp_aug_train_rows_cap(const yp_aug_config *cfg);

/* YOLOv5's __getitem__ for training (mixup and albumentations off, as with hyp.scratch-low and
 * no albumentations installed), drawing in its order: mosaic?; load_mosaic + random_perspective
 * with the mosaic border, or load_image + letterbox (auto off, scaleup) + random_perspective;
 * augment_hsv; flipud?; fliplr?. out is imgsz x imgsz; rows gets *n_out xywhn rows.
 * Returns 0, or -1 with err set (source error, more rows than max_rows, small workspace). */
int yp_aug_train_item(const yp_aug_config *cfg, yp_aug_source src, void *ctx, int64_t index, yp_rng *r,
                      yp_image *out, float *rows, int64_t *n_out, void *ws, size_t ws_bytes, yp_err *err);

#endif
