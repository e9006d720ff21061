/* yp_host_mem.h - the host memory of the data pipeline, term by term, as pure arithmetic: the
 * sizes the loader (executor/loader.c), its augmentation workspace (executor/augment.c, with the
 * resize and warp scratch of augment_resize.c and augment_warp.c) and the RAM image cache
 * (executor/image_cache.c) allocate by. They are computed here and allocated there from these
 * figures, so that every host figure printed (the plan's: --json, the table's host line, the
 * what-if's loader note; `yoloplan train`'s plan line, executor/yp_train_host.h) is what the
 * allocations are.
 *
 * Settings: the pipeline (yp_pipeline: loader workers, batch slots per worker, cache mode), which a
 * candidate carries and plan.json records. Facts: the split's image count and its most label rows
 * per image, and how many epochs a loader delivers. The planner without a dataset knows none of
 * them (0: unknown); then a batch slot holds `batch` images, the ring has workers x prefetch
 * slots, and the per-image tables (the epoch orders, the cache) are 0.
 * Defines: yp_cache_mode, yp_pipeline, yp_pipeline_default, yp_pipeline_check, yp_cache_mode_name,
 * yp_cache_mode_parse, yp_host_resize_linear_ws, yp_host_warp_affine_ws, yp_host_aug_ws,
 * yp_host_aug_ws_of, yp_host_loader_in, yp_host_loader, yp_host_batches_per_epoch,
 * yp_host_loader_bytes, yp_host_cache_bytes,
 * yp_host_input_bytes. */
#ifndef YP_HOST_MEM_H
#define YP_HOST_MEM_H

#include <stdint.h>

#include "yp_error.h"

#define YP_PIPE_WORKERS 8          /* train.py's --workers default */
#define YP_PIPE_PREFETCH 2         /* torch's DataLoader prefetch_factor default */
#define YP_PIPE_MAX_WORKERS 64
#define YP_PIPE_MAX_PREFETCH 1024  /* what a candidate or plan.json may ask for */
#define YP_HOST_MAX_SIDE (1 << 20) /* the largest side sized (the planner's --img bound; the loader
                                    * and the augmenter build at most 16384) */
#define YP_HOST_LOADER_RECORD 72   /* bytes of one image's record in a batch slot (yp_loader_image) */

typedef enum { YP_CACHE_NONE, YP_CACHE_RAM, YP_CACHE_COUNT } yp_cache_mode;

/* The data pipeline of a training run (train.py's --workers and --cache, torch's prefetch). */
typedef struct {
    int workers;         /* loader threads per loader, 1..YP_PIPE_MAX_WORKERS */
    int prefetch;        /* batch slots per worker, >= 1 */
    yp_cache_mode cache; /* YP_CACHE_RAM: every image decoded once and kept (--cache ram) */
} yp_pipeline;

/* 8 workers, prefetch 2, no cache. */
yp_pipeline yp_pipeline_default(void);

/* Refuses workers outside 1..YP_PIPE_MAX_WORKERS, prefetch outside 1..YP_PIPE_MAX_PREFETCH or an
 * unknown cache mode, with one line naming the setting. 0, or -1 with err set. */
int yp_pipeline_check(const yp_pipeline *p, yp_err *err);

const char *yp_cache_mode_name(yp_cache_mode m); /* "none", "ram" */
int yp_cache_mode_parse(const char *s);          /* -1 if unknown */

/* INTER_LINEAR's workspace for a dw x dh output, in the order augment_resize.c takes it: per output
 * column 4 ints (offsets and weights), per output row 4 ints, two rows of 3 dw int32 sums, each
 * block rounded up to 16 bytes. -1 for a side below 1 or above 2^31 - 1. */
int64_t yp_host_resize_linear_ws(int64_t dw, int64_t dh);

/* warpAffine's workspace for an out_w wide output (augment_warp.c): per column 2 ints and two rows
 * of 3 int16. -1 for a width below 1 or above 2^31 - 1. */
int64_t yp_host_warp_affine_ws(int64_t out_w);

/* The augmentation workspace of one training worker at imgsz S (yp_aug_train_ws): the mosaic
 * canvas, one load_image'd tile, and scratch shared by the resize, the letterbox and the warp (used
 * one after another: the larger of a linear resize to (S+1)^2, an S^2 image with it, and the warp),
 * each region starting at a multiple of 64 bytes. */
typedef struct {
    int64_t canvas;   /* 2S x 2S x 3 */
    int64_t tile;     /* (S+1) x (S+1) x 3 */
    int64_t scratch;
    int64_t tile_at, scratch_at; /* the regions' offsets (the canvas is at 0) */
    int64_t total;
} yp_host_aug_ws;

/* 0, or -1 for S outside 2..YP_HOST_MAX_SIDE. */
int yp_host_aug_ws_of(int64_t imgsz, yp_host_aug_ws *w);

/* One loader: its settings and the facts of its split. */
typedef struct {
    yp_pipeline pipe;  /* workers, prefetch; cache RAM: the images come decoded from the cache */
    int64_t batch;     /* images per batch, >= 1 */
    int64_t imgsz;     /* load_image's long side S, 2..YP_HOST_MAX_SIDE */
    int64_t side;      /* the largest batch side: 0 for S, or val.py's rect batches' largest side */
    int letterboxed;   /* 1: validation or --no-augment (single letterboxed images); 0: augmenting */
    int drop_last;     /* only whole batches (training) */
    int64_t passes;    /* epochs it delivers (0: unknown, at least workers x prefetch batches) */
    int64_t n_images;  /* the split's images (0: unknown) */
    int64_t max_rows;  /* the most label rows one image of the split has */
} yp_host_loader_in;

/* Its host memory. What yp_loader_open allocates is the ring (per slot its images, label rows and
 * records), per worker a workspace, one item's rows and a copy of the epoch order, and one flag
 * per image; the decoders come on top as images are read. */
typedef struct {
    int64_t slots;        /* workers x prefetch, or every batch of the loader's life when fewer */
    int64_t slot_images;  /* min(batch, n_images) */
    int64_t rows_cap;     /* label rows per image a slot has room for: max_rows, x4 augmenting (mosaic) */
    int64_t slot_pixels;  /* one slot's images: slot_images x side^2 x 3 */
    int64_t slot_labels;  /* slot_images x rows_cap x 6 floats */
    int64_t slot_meta;    /* slot_images x YP_HOST_LOADER_RECORD */
    int64_t worker_ws;    /* yp_host_aug_ws_of's total, or letterboxed the (S+1)^2 x 3 load_image tile */
    int64_t worker_rows;  /* one item's rows: rows_cap x 5 floats */
    int64_t worker_order; /* n_images int64 */
    int64_t flags;        /* n_images bytes: the images that failed to load */
    int64_t ring_images;  /* slots x slot_pixels (the planner's `prefetch` figure) */
    int64_t ring_labels;  /* slots x slot_labels */
    int64_t ring_meta;    /* slots x slot_meta */
    int64_t canvases;     /* workers x the mosaic canvas region (part of workspaces; 0 letterboxed) */
    int64_t workspaces;   /* workers x (worker_ws + worker_rows) */
    int64_t orders;       /* workers x worker_order + flags */
    int64_t total;        /* ring_images + ring_labels + ring_meta + workspaces + orders */
    int64_t decoders;     /* not in total: per worker the decoder's file bytes and pixels, each taken as
                           * S x S x 3 (they grow to the largest image read: an original larger than S
                           * needs w h / S^2 times as much); 0 with the cache (nothing is decoded) */
} yp_host_loader;

/* Batches per epoch of n images: ceil(n / batch), or floor(n / batch) with drop_last (batch >= 1). */
int64_t yp_host_batches_per_epoch(int64_t n, int64_t batch, int drop_last);

/* Fills *b. 0, or -1 with err set (a setting out of range, a size that overflows). */
int yp_host_loader_bytes(const yp_host_loader_in *in, yp_host_loader *b, yp_err *err);

/* The most a RAM cache of n images at S holds: n x S^2 x 3 (load_image makes each long side S). -1
 * on overflow or a negative count. */
int64_t yp_host_cache_bytes(int64_t n, int64_t imgsz);

/* The float batch the training loop hands the executor: batch x S^2 x 3 floats, and with
 * multi-scale the batch resized, batch x M^2 x 3 floats at the largest side train.py draws,
 * M = (int(1.5 S) + stride - 1) // stride * stride (yp_candidate_train_size). -1 on overflow. */
int64_t yp_host_input_bytes(int64_t batch, int64_t imgsz, int multi_scale, int stride);

#endif
