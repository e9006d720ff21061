/* yp_synth.h - a synthetic YOLO dataset, the same bytes for the same options: filled and outlined
 * shapes (rectangles, ellipses, triangles, diamonds, crosses) of 16 colours on textured, noisy
 * backgrounds, 1 to 12 objects an image, JPEG and PNG mixed, for `yoloplan synth` and the tests.
 *
 * Class k is the kind k % 5 in colour k / 5 ("red_rectangle", "red_ellipse", ..., "green_..."),
 * whether filled or outlined. Object sides run from 2 % to 60 % of the image's shorter side
 * (at least 3 pixels), smaller ones more often; some objects cross the border (the label is the
 * part inside), and a new object may cover at most half of an earlier one's box. Labels are the
 * object's box clipped to the image, `class cx cy w h` normalised to [0, 1].
 *
 * The drawing is integer arithmetic (no libm, no floating point) from one 64-bit seed, each image
 * from its own stream (seed, split, index), so an image does not depend on how many others are
 * made nor on the machine; the files' bytes also depend on the libjpeg and zlib that encode them.
 *
 * Defines: yp_synth_opts, yp_synth_box, yp_synth_sample, yp_synth_stats, yp_synth_check,
 * yp_synth_class_name, yp_synth_make, yp_synth_sample_free, yp_synth_write. */
#ifndef YP_SYNTH_H
#define YP_SYNTH_H

#include <stddef.h>
#include <stdint.h>

#include "yp_error.h"
#include "yp_image.h"

#define YP_SYNTH_MAX_OBJECTS 12
#define YP_SYNTH_MAX_CLASSES 80 /* 5 kinds x 16 colours */
#define YP_SYNTH_MIN_SIDE 16
#define YP_SYNTH_MAX_SIDE 8192
#define YP_SYNTH_MAX_IMAGES 10000000

typedef struct {
    int64_t n_train, n_val; /* images per split: n_train >= 1, n_val >= 0 */
    int nc;                 /* classes, 1..YP_SYNTH_MAX_CLASSES */
    int w, h;               /* image size, YP_SYNTH_MIN_SIDE..YP_SYNTH_MAX_SIDE each */
    uint64_t seed;
} yp_synth_opts;

/* One object: its class and its box clipped to the image, in pixels, [x0, x1) x [y0, y1). */
typedef struct {
    int cls;
    int x0, y0, x1, y1;
} yp_synth_box;

typedef struct {
    yp_image image;
    yp_synth_box boxes[YP_SYNTH_MAX_OBJECTS];
    int n_boxes;  /* 1..YP_SYNTH_MAX_OBJECTS */
    int png;      /* 1: written as PNG, 0: as JPEG */
    int quality;  /* the JPEG quality, 70..95 */
} yp_synth_sample;

typedef struct {
    int64_t n_images, n_jpeg, n_png, n_labels;
} yp_synth_stats;

/* Checks the options. Returns 0, or -1 with err naming the option, its range and the fix. */
int yp_synth_check(const yp_synth_opts *o, yp_err *err);

/* Writes class k's name ("red_rectangle") into buf (32 bytes are enough). */
void yp_synth_class_name(int k, char *buf, size_t size);

/* Makes image `index` of split 0 (train) or 1 (val). Returns 0 with *s owning its image
 * (yp_synth_sample_free), or -1 with err set (bad options, out of memory). */
int yp_synth_make(const yp_synth_opts *o, int split, int64_t index, yp_synth_sample *s, yp_err *err);
void yp_synth_sample_free(yp_synth_sample *s);

/* Writes the dataset under dir (created, with its parents; it must not exist or be empty):
 * images/train/NNNNNN.{jpg,png}, labels/train/NNNNNN.txt, the same under val/ when n_val > 0,
 * and data.yaml (path: dir's absolute path; train; val, which is images/train when n_val is 0;
 * nc; names). Returns 0 with *st filled (st may be NULL), or -1 with err = "PATH: problem". */
int yp_synth_write(const char *dir, const yp_synth_opts *o, yp_synth_stats *st, yp_err *err);

#endif
