/* yp_image_cache.h - `--cache ram`: every image of a split decoded once, before the first batch,
 * and kept as YOLOv5's load_image leaves it: resized so that its long side is imgsz (INTER_LINEAR
 * when augmenting or enlarging, INTER_AREA otherwise: yp_aug_load_size), uint8 RGB, with its
 * original size. The loader then reads the cached pixels instead of decoding: a batch is byte for
 * byte the batch it builds without the cache (the same resize, done once).
 *
 * Filling uses `threads` threads, each image once; an image that does not decode is warned about
 * (one stderr line, "cache: skipping FILE: reason") and left out, for the loader to skip as it
 * skips a bad image. Everything is allocated during yp_image_cache_fill: one block per image.
 * Defines: yp_cached_image, yp_image_cache, yp_image_cache_bytes, yp_image_cache_fill,
 * yp_image_cache_get, yp_image_cache_free. */
#ifndef YP_IMAGE_CACHE_H
#define YP_IMAGE_CACHE_H

#include <stdint.h>

#include "yp_error.h"
#include "yp_label_cache.h"

typedef struct {
    uint8_t *rgb;  /* h rows of w*3 bytes; NULL: the image did not decode */
    int w, h;      /* the cached (resized) size */
    int w0, h0;    /* the original size */
} yp_cached_image;

typedef struct yp_image_cache {
    int64_t n;
    yp_cached_image *im;
    int64_t bytes;  /* the pixels held */
    int64_t failed; /* images that did not decode */
} yp_image_cache;

/* The most a cache of n images at imgsz can hold: n * imgsz^2 * 3 (each image's long side is
 * imgsz): the planner's figure (yp_host_cache_bytes). -1 on overflow. */
int64_t yp_image_cache_bytes(int64_t n, int imgsz);

/* Fills c with every image of labels at imgsz (augment: the training loader's resize rule) on
 * `threads` threads. 0, or -1 with err set (out of memory, a thread that cannot start); c is
 * zeroed first and must be freed with yp_image_cache_free either way. */
int yp_image_cache_fill(yp_image_cache *c, const yp_labels *labels, int imgsz, int augment, int threads, yp_err *err);

/* Image i, or NULL when it did not decode. */
const yp_cached_image *yp_image_cache_get(const yp_image_cache *c, int64_t i);

void yp_image_cache_free(yp_image_cache *c);

#endif
