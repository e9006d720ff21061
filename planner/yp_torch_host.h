/* yp_torch_host.h - the host memory (RAM) Ultralytics train.py takes on Linux, and what its own
 * host-side remedies (--workers, --cache) change: the host half of the PyTorch target's answer
 * (yp_torch_train.h is the device half).
 *
 * train.py's loaders (utils/dataloaders.py create_dataloader) are two InfiniteDataLoaders whose
 * worker processes start when the loader is made and live until training ends: the training
 * loader's min(cpus, batch, --workers) workers and validation's min(cpus, 2 x batch,
 * 2 x --workers) (0 workers: the main process loads). The workers are forked, so the pages of
 * the main process they only read stay shared (the RAM cache among them); what a worker adds is
 * what it writes. Terms:
 *   - main: the training process itself: Python, torch and the host side of the CUDA libraries
 *     (YP_TORCH_HOST_MAIN_BYTES), plus the datasets' Python objects, YP_TORCH_HOST_IMAGE_BYTES
 *     an image (its label array, path, shape and segments list) and 20 bytes a label row;
 *   - workers: per worker process YP_TORCH_HOST_WORKER_BYTES of its own pages, plus the pages of
 *     its dataset's objects that reference counting and the garbage collector write, and so copy,
 *     over an epoch (YP_TORCH_HOST_WORKER_IMAGE_BYTES an image of its split), plus its working
 *     images while it builds an item: a training worker's mosaic (2s x 2s x 3 uint8) of four
 *     images loaded at s on the long side, warped to s x s; a validation worker's letterbox of
 *     at most (s + 32)^2;
 *   - in flight: each worker keeps prefetch_factor (2) collated batches ready in shared memory
 *     (a training batch b x 3 x s x s uint8, a validation batch 2b x 3 x (s + 32) x (s + 32) at
 *     most), and the pin-memory thread copies each one it takes into pinned memory (one batch a
 *     loader). Validation's workers fill their queues when the loader is made, so its batches sit
 *     in memory for the whole run;
 *   - cache: --cache ram holds every training and validation image resized to s on its long side
 *     (uint8 BGR), in the main process (the workers share it).
 * The image sizes come from the dataset (yp_dataset_image_bytes samples 30 images, as YOLOv5's
 * check_cache_ram does) or, without one, COCO's typical 640 x 480 scaled to s.
 * Measured on this project's machine by bench/torch_host_check.py (PyTorch's own DataLoader,
 * Debian's CPU torch 1.13, OpenCV 4.6; bench/README.md has the table): a forked worker's private
 * pages, 30 MB with a 1000-image dataset, 67 MB with COCO's 118287 (so ~320 bytes an image); the
 * dataset's objects in the main process, 621 bytes an image at 7 label rows. An estimate, not
 * measured (it needs a GPU machine): the CUDA runtime, cuDNN and cuBLAS's host side in
 * YP_TORCH_HOST_MAIN_BYTES (0.27 GB measured for Python, torch, numpy and OpenCV without them).
 * The rest is computed from the shapes. Not modelled: train.py's other objects the collector
 * makes the workers copy (the model's modules, loggers), the page cache, a spawn start method
 * (Windows, macOS: each worker re-imports torch), --cache disk's .npy files, plots. */
#ifndef YP_TORCH_HOST_H
#define YP_TORCH_HOST_H

#include <stdint.h>

#include "yp_error.h"
#include "yp_torch_speed.h"

#define YP_TORCH_HOST_MAIN_BYTES ((int64_t)2000000000)
#define YP_TORCH_HOST_IMAGE_BYTES 480.0        /* + 20 a label row: 620 at COCO's 7 */
#define YP_TORCH_HOST_WORKER_BYTES ((int64_t)30000000)
#define YP_TORCH_HOST_WORKER_IMAGE_BYTES 320.0
#define YP_TORCH_PREFETCH_FACTOR 2
#define YP_TORCH_DEFAULT_WORKERS 8 /* train.py's --workers */
#define YP_TORCH_CHECK_CACHE_MARGIN 0.1 /* check_cache_ram's safety_margin */

/* train.py's --cache: none, ram (images decoded and resized, in RAM), disk (.npy files of the
 * decoded images beside the images: no RAM, the loader skips the decode) */
typedef enum { YP_TORCH_CACHE_NONE, YP_TORCH_CACHE_RAM, YP_TORCH_CACHE_DISK } yp_torch_cache;

typedef struct {
    int64_t batch, img;     /* --batch-size, --img */
    int workers_opt;        /* --workers (train.py's default YP_TORCH_DEFAULT_WORKERS) */
    int cpus;               /* the training machine's CPUs */
    int cache_train, cache_val; /* the splits --cache ram holds in RAM (--cache disk: none; a split
                                 * check_cache_ram refused: not that one) */
    int64_t train_images, val_images; /* val 0: no validation split (train.py makes the
                                       * validation loader whenever there is one) */
    double train_image_bytes, val_image_bytes; /* mean bytes of one image resized to img on its
                                                * long side (x 3 channels) */
    double train_labels, val_labels;           /* mean label rows per image in the files */
} yp_torch_host_opts;

typedef struct {
    int workers, val_workers;     /* train.py's worker counts */
    int64_t main_bytes;           /* the training process (without the cache) */
    int64_t worker_bytes;         /* every worker process's own pages and working images */
    int64_t in_flight_bytes;      /* batches queued in shared memory and pinned */
    int64_t cache_bytes;          /* --cache ram's images (0 without it) */
    int64_t cache_would_bytes;    /* what --cache ram would hold (whether on or not) */
    int64_t total_bytes;
} yp_torch_host;

/* The workers train.py starts: min(cpus, batch > 1 ? batch : 0, workers_opt) for training and
 * min(cpus, 2 x batch, 2 x workers_opt) for validation. */
int yp_torch_train_workers(int cpus, int64_t batch, int workers_opt);
int yp_torch_val_workers(int cpus, int64_t batch, int workers_opt);

/* The mean bytes of an image of w0 x h0 resized to img on its long side, as YOLOv5's
 * load_image (ceil of each side times img / max(w0, h0)), 3 channels; COCO's 640 x 480 for
 * w0 = h0 = 0. */
double yp_torch_resized_bytes(int64_t w0, int64_t h0, int64_t img);

/* What train.py's check_cache_ram decides under --cache ram on a machine with `available` bytes
 * free: each split is cached only if its images x (1 + YP_TORCH_CHECK_CACHE_MARGIN) are less than
 * what is free when it is cached (the available memory less the training process, and less the
 * training images for the validation split, which is cached second). Sets o->cache_train and
 * o->cache_val; available <= 0 (unknown): both cached. */
void yp_torch_check_cache_ram(yp_torch_host_opts *o, int64_t available);

/* Fills *out from o. 0, or -1 with err set (a size out of range or an overflow). */
int yp_torch_host_predict(const yp_torch_host_opts *o, yp_torch_host *out, yp_err *err);

/* ---------------------------------------------------------------- the host's remedies */

/* One of train.py's host-side flags applied to a configuration: its flag, the host memory it
 * gives and the training speed with it. */
typedef struct {
    char flag[32];       /* "--workers 4", "--workers 0", "--cache ram", "--cache disk", "no --cache" */
    yp_torch_cache cache;
    int workers_opt;
    yp_torch_host host;
    int64_t saves;       /* the base's total - this total (negative: it costs host memory) */
    double images_per_s; /* train.py's training images/s with it (yp_torch_speed.h; 0: not asked) */
} yp_torch_host_remedy;

#define YP_TORCH_MAX_HOST_REMEDIES 5

/* The host-side flags for base (each alone): --workers at half the workers base starts and 0
 * (when it starts any; the cache as base has it), and the two --cache choices other than `cache`,
 * the flag the run was given (ram: the images in RAM; disk: none in RAM, the loader still skips
 * the decode). When sp is given (the base's speed inputs for g, yp_torch_speed_predict's), each
 * gets its training images/s. *n gets their count. 0, or -1 with err set. */
int yp_torch_host_remedies(const yp_graph *g, const yp_torch_host_opts *base, yp_torch_cache cache,
                           const yp_torch_speed *sp, yp_torch_host_remedy *out, int *n, yp_err *err);

#endif
