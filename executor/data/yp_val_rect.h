/* yp_val_rect.h - val.py's rectangular batches (LoadImagesAndLabels with rect=True and pad 0.5,
 * as train.py's validation loader and val.py itself use): the images sorted by aspect ratio
 * ar = h / w, batch i of that order letterboxed to one shape (h, w) for all its images:
 *   ratio (1, 1); (max ar, 1) when every ar of the batch is < 1; (1, 1 / min ar) when every one is
 *   > 1; shape = ceil(ratio * imgsz / stride + pad) * stride per side.
 * So every side is a multiple of the stride and at most yp_val_rect_side(imgsz, stride, pad) =
 * ceil(imgsz / stride + pad) * stride (672 for 640 at stride 32): the size validation is planned
 * at. The sizes are the images as the loader decodes them (yp_image_probe: EXIF orientations 5..8
 * swap them; YOLOv5's PIL check swaps for 6 and 8 only). An image whose header cannot be read sorts
 * as square (ar 1); the loader warns about it and fills its place when it comes to it. The sort is
 * stable (numpy's argsort is not: images of equal ar may sit in another order there, in batches
 * of the same shapes).
 * Defines: yp_val_rect, yp_val_rect_side, yp_val_rect_shapes, yp_val_rect_build, yp_val_rect_free. */
#ifndef YP_VAL_RECT_H
#define YP_VAL_RECT_H

#include <stdint.h>

#include "yp_error.h"
#include "yp_label_cache.h"

#define YP_VAL_RECT_PAD 0.5 /* val.py's pad for rect batches */

typedef struct yp_val_rect {
    int64_t n_images, batch, n_batches;
    int64_t *order;       /* position -> image index (yp_labels_image), n_images */
    int64_t *h, *w;       /* per batch: its letterbox shape */
    int64_t max_side;     /* yp_val_rect_side: no shape side exceeds it */
    int64_t unreadable;   /* images whose header did not read (sorted as square) */
} yp_val_rect;

/* ceil(imgsz / stride + pad) * stride; -1 when imgsz or stride < 1. */
int64_t yp_val_rect_side(int64_t imgsz, int64_t stride, double pad);

/* The order and shapes for n images of aspect ratios ar (h / w, > 0) in batches of `batch`.
 * 0, or -1 with err set (bad sizes, out of memory). Free with yp_val_rect_free either way. */
int yp_val_rect_shapes(const double *ar, int64_t n, int64_t batch, int64_t imgsz, int64_t stride, double pad,
                       yp_val_rect *out, yp_err *err);

/* The same for the images of val, their sizes read from the headers (yp_image_probe), pad 0.5. */
int yp_val_rect_build(const yp_labels *val, int64_t batch, int64_t imgsz, int64_t stride, yp_val_rect *out,
                      yp_err *err);

void yp_val_rect_free(yp_val_rect *r);

#endif
