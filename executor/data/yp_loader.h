/* yp_loader.h - the data loader: worker threads (pthreads) building training or validation
 * batches of a dataset (yp_labels_load's images and rows) into a bounded ring of batch slots,
 * delivered in order to one consumer, as YOLOv5's InfiniteDataLoader over LoadImagesAndLabels.
 *
 * Order and randomness. Training: epoch e visits the images in a permutation drawn (Fisher-Yates
 * from yp_rng_seed(seed + e, YP_LOADER_ORDER_STREAM)), YOLOv5's "a permutation per epoch seeded by
 * seed + epoch" with our generator. Position p of epoch e is built by yp_aug_train_item with
 * yp_rng_seed(seed, yp_loader_stream(e, p)), so a batch depends only on (seed, epoch, the files),
 * never on the number of workers or their timing. Validation: the dataset order, every epoch,
 * load_image (imgsz, no augmentation) + letterbox to imgsz x imgsz (no auto, no scaleup), as
 * LoadImagesAndLabels with augment off and rect off, or with opts.rect val.py's rect batches (the
 * images sorted by aspect ratio, each batch letterboxed to its own shape); per image the original size and the ratio
 * and padding scale_boxes needs (yp_ratio_pad: gain h/h0, pad dw, dh, as val.py's shapes).
 * Batch b of an epoch holds positions b*batch .. min(n, (b+1)*batch) - 1 (the last may be short,
 * unless drop_last leaves it out).
 *
 * Bad images. The scan (yp_label_cache.h) has already dropped the images that do not decode, so
 * an image fails here only when it vanished or broke during the run. It is warned about once (one
 * stderr line, "loader: skipping FILE: reason", for the first YP_LOADER_WARNINGS_SHOWN, then one
 * line saying the rest are counted), counted (yp_loader_stats.bad_images) and never read again.
 * Validation never puts another image in its place (val.py scores each image once): the position
 * is left out, so the batch is one image shorter (it may hold none), and counted
 * (yp_loader_stats.skipped). Training keeps its batches whole (the plan's fixed batch shapes):
 * the position is filled with the next image of the epoch's order (cyclically) that loads,
 * counted (yp_loader_stats.replaced, which the trainer's epoch line reports), built with the
 * failed position's stream and, for the t-th retry, seed + t * 0x9e3779b97f4a7c15 (so a mosaic
 * draws other partners; still deterministic for the same files). In training a mosaic that needs
 * a bad partner fails the same way. Only a dataset in which no image loads any more is an error
 * (yp_loader_next returns -1, "no image of the dataset loads (the first to fail: FILE: reason)").
 *
 * Memory. yp_loader_open allocates everything the loader holds, by the planner's figures
 * (yp_loader_host_bytes): workers * prefetch batch slots (fewer when the run has fewer batches),
 * each for min(batch, images) images (their pixels, label rows and per-image records), per worker
 * the augmentation workspace (yp_aug_train_ws, independent of the source size) and its own copy of
 * the epoch order, one flag per image. The
 * validation resize workspace (INTER_AREA's depends on the source width and height) grows, per
 * worker, to the largest image met: grow-once, bounded by the decoder's pixel limit; so do each
 * worker's decoder buffers (yp_image_read_into: the file's bytes and the decoded pixels), so after
 * the first images a batch allocates nothing of the loader's own (libjpeg and libpng keep their
 * small per-image state). A worker keeps one decoded image at a time.
 *
 * Threads: yp_loader_next and yp_loader_close are called from one consumer thread; close may be
 * called at any time (after any number of batches, also none) and stops, joins and frees.
 * Defines: yp_loader_opts, yp_loader_opts_default, yp_loader_image, yp_loader_batch,
 * yp_loader_bytes, yp_loader_host_bytes, yp_loader_stream, yp_loader_open,
 * yp_loader_batches_per_epoch, yp_loader_next, yp_loader_stats, yp_loader_allocated,
 * yp_loader_close, yp_loader_to_float. */
#ifndef YP_LOADER_H
#define YP_LOADER_H

#include <stddef.h>
#include <stdint.h>

#include "yp_augment.h"
#include "yp_boxes.h"
#include "yp_error.h"
#include "yp_host_mem.h"
#include "yp_label_cache.h"

#define YP_LOADER_MAX_WORKERS YP_PIPE_MAX_WORKERS
#define YP_LOADER_ORDER_STREAM 0x6f72646572ull /* "order": the permutation's stream */
#define YP_LOADER_WARNINGS_SHOWN 5 /* images named on stderr when they fail; the rest are counted */

typedef struct {
    int workers;     /* threads, 1..YP_LOADER_MAX_WORKERS (YOLOv5's --workers, 8) */
    int prefetch;    /* batch slots per worker, >= 1 (torch's prefetch_factor, 2) */
    int batch;       /* images per batch, >= 1 */
    int imgsz;       /* output side S, 2..16384 */
    int validation;  /* 1: letterbox, dataset order, no augmentation */
    int no_augment;  /* training with augment off (--no-augment): the epoch's permutation, each image
                      * as validation builds it (load_image, letterbox without scaleup) */
    int64_t first_epoch; /* batches are delivered for epochs first_epoch .. epochs - 1 (a resumed run
                          * starts later; each epoch's batches are those of an uninterrupted run) */
    int64_t epochs;  /* >= first_epoch + 1 */
    int drop_last;   /* 1: only whole batches (floor(n / batch) per epoch; the last short one is not
                      * built); 0: the last batch of an epoch may be short */
    uint64_t seed;
    yp_aug_hyp hyp;  /* training only */
    const struct yp_val_rect *rect; /* validation only: val.py's rectangular batches (yp_val_rect.h,
                      * made for this split, batch and imgsz): the images in its order, batch b
                      * letterboxed to its shape b; NULL: the dataset order, imgsz x imgsz. Kept. */
    const struct yp_image_cache *cache; /* --cache ram: images from it instead of decoding (its
                      * resize rule must be this loader's: augment for training, not for validation
                      * and --no-augment); NULL: decode. Kept, not copied. */
} yp_loader_opts;

/* workers 8, prefetch 2, batch 16, imgsz 640, training, epoch 0 only, short batches kept, seed 0,
 * hyp.scratch-low. */
void yp_loader_opts_default(yp_loader_opts *o);

/* One image of a batch. */
typedef struct {
    int64_t index;     /* dataset image (yp_labels_image) actually used at this position */
    int64_t position;  /* position in the epoch's order */
    int64_t w0, h0;    /* validation: its original size; training: 0 (a mosaic has four) */
    yp_ratio_pad rp;   /* validation: scale_boxes's ratio and padding; training: zero */
} yp_loader_image;

/* A delivered batch; valid until the next yp_loader_next or yp_loader_close. */
typedef struct {
    int64_t epoch, index;     /* batch index within the epoch */
    int n;                    /* images, 1..batch (validation: 0..batch, images that failed left out) */
    int imgsz;                /* load_image's long side */
    int h, w;                 /* the images' size: imgsz x imgsz, or the batch's rect shape */
    const uint8_t *images;    /* n x h x w x 3, uint8 NHWC RGB */
    const float *labels;      /* n_labels rows of 6: image in batch, class, cx, cy, w, h (normalised) */
    int64_t n_labels;
    const yp_loader_image *meta; /* n records */
} yp_loader_batch;

/* What the loader allocates for opts over a dataset of n_images whose largest label count is
 * max_rows, term by term: the planner's sizing (yp_host_loader_bytes, planner/yp_host_mem.h), which
 * yp_loader_open allocates by; the validation workspace's growth is not included, and the
 * decoders' buffers are the `decoders` estimate outside `total`. */
typedef yp_host_loader yp_loader_bytes;

/* Fills *b. Returns 0, or -1 with err set (bad options, a size that overflows). */
int yp_loader_host_bytes(const yp_loader_opts *o, int64_t n_images, int64_t max_rows, yp_loader_bytes *b,
                         yp_err *err);

/* The random stream of position p of epoch e: (e << 40) | p (p < 2^40, e < 2^23). */
uint64_t yp_loader_stream(int64_t epoch, int64_t position);

typedef struct yp_loader yp_loader;

/* Starts the workers over labels (kept, not copied: it must outlive the loader). Returns the
 * loader, or NULL with err set (bad options, an empty dataset, out of memory, a thread that
 * cannot start). */
yp_loader *yp_loader_open(const yp_labels *labels, const yp_loader_opts *o, yp_err *err);

/* Batches per epoch: ceil(n / batch), or floor(n / batch) with drop_last. */
int64_t yp_loader_batches_per_epoch(const yp_loader *l);

/* The next batch, in order. Returns 1 with *b set, 0 when every epoch has been delivered, or -1
 * with err set (no image of the dataset loads, a worker's error). Blocks until it is ready. */
int yp_loader_next(yp_loader *l, yp_loader_batch *b, yp_err *err);

typedef struct {
    int64_t bad_images;   /* distinct images that failed (each warned once) */
    int64_t replaced;     /* training: positions filled by a later image because theirs failed */
    int64_t skipped;      /* validation: positions left out because their image failed */
    int64_t tiles_unread; /* training: mosaic tiles not decoded, as the warp reads none of their pixels */
    int64_t tiles_cropped; /* training: unresized mosaic tiles read asking for only the part the warp reads
                              (yp_image_read_region_into: a JPEG then decodes only that part) */
    int64_t delivered;    /* batches returned by yp_loader_next */
    char first_bad[512];  /* the first failure, "FILE: reason" ("" if none) */
} yp_loader_stats;

void yp_loader_get_stats(yp_loader *l, yp_loader_stats *s);

/* What l allocated, counted at each allocation: the slots allocated, the ring, workspace and order
 * totals and their sum (`slot_images` and `rows_cap` as opened; the per-slot and per-worker units
 * and `canvases`, a region of each workspace, are 0), with `decoders` the workers' decoder buffers
 * as they have grown so far (file and pixel capacities). Call it when no batch is being built:
 * after yp_loader_next returned 0 (every batch delivered). */
void yp_loader_allocated(const yp_loader *l, yp_loader_bytes *b);

/* Stops the workers (also while they wait for a slot or decode), joins them and frees all. NULL
 * is fine. */
void yp_loader_close(yp_loader *l);

/* The executor's input (yp_exec_micro_step: NHWC float in [0, 1]): b's n h x w images as x / 255 into
 * out, which holds cap floats. A short last batch fills n images; the trainer decides about the
 * rest (yp_exec_micro_step's batch is the plan's). Returns the floats written, or -1 when cap is
 * too small. The label rows are already the executor's targets (image, class, cx, cy, w, h). */
int64_t yp_loader_to_float(const yp_loader_batch *b, float *out, int64_t cap);

#endif
