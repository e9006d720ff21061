/* yp_plan.h - the plan: the contract between planner, reports and executor (docs/architecture.md §2).
 *
 * A plan is one candidate made concrete: its training schedule (every tensor with kind, dtype,
 * shape, bytes and life; every step with its operands), the liveness simulation, the arena with
 * every tensor's byte offset, the validation pass planned into the same arena (yp_val_plan.h:
 * its parameters alias training's EMA copies, its transient tensors lie above training's
 * whole-step region), the predicted timing and the device and host memory it takes. Reports draw it; the executor
 * allocates arena_bytes once and runs the steps verbatim. Ownership: yp_plan_build fills a plan whose members the
 * caller releases with yp_plan_free; the graph must outlive the plan. */
#ifndef YP_PLAN_H
#define YP_PLAN_H

#include "yp_arena.h"
#include "yp_cost.h"
#include "yp_val_plan.h"

/* Host (CPU) memory of the training data pipeline, bytes (docs/architecture.md §6), from the
 * loader's own sizing (yp_host_mem.h) for the candidate's pipeline, batch and size S (the larger
 * side: the loader builds square batches): the augmenting training loader over the images when
 * their count is known, with room for ceil(labels_per_image) label rows per image, its float
 * batch, and with the RAM cache the images kept. Validation's loader and buffers and the process
 * itself are `yoloplan train`'s to add (executor/yp_train_host.h). */
typedef struct {
    int64_t loader_workers;
    int64_t prefetch;         /* the ring's uint8 images: workers x prefetch slots of min(batch, images) */
    int64_t ring_labels;      /* the ring's label rows and per-image records */
    int64_t mosaic_canvases;  /* per worker the 2S x 2S x 3 mosaic canvas of its augmentation workspace */
    int64_t workspaces;       /* per worker the rest of that workspace (tile, scratch) and one item's rows */
    int64_t orders;           /* per worker the epoch's order, and a flag per image (0: count unknown) */
    int64_t decoded_images;   /* per worker the decoder's file and pixels, S x S x 3 each (0 with the cache) */
    int64_t pinned_batch;     /* the float input batch staged for the device (with multi-scale also the
                               * batch resized to the largest size) */
    int64_t image_cache;      /* cache ram: every training image decoded at S (0 if the count is unknown) */
    int64_t total;
} yp_host_memory;

typedef struct {
    const yp_graph *g;
    yp_candidate cand;
    yp_gpu gpu;
    int64_t reserve_bytes;    /* user --reserve, outside the arena */
    yp_schedule *sched;       /* training step at its worst-case size and label count */
    yp_liveness live;
    yp_arena arena;
    yp_val_plan val; /* validation: the evaluation schedule, its layout and its mapping onto training's tensors */
    int64_t val_bytes;        /* arena bytes validation needs (val.bytes): whole-step region + its transient arena */
    int64_t arena_bytes;      /* what the executor allocates: max(training arena, val_bytes) */
    int64_t device_bytes;     /* arena_bytes + gpu.fixed_bytes + reserve_bytes */
    int64_t budget_bytes;     /* gpu.mem_bytes - gpu.fixed_bytes - reserve_bytes */
    int64_t saved_bytes;      /* saved for backward by one forward pass */
    int fits;                 /* device_bytes <= gpu.mem_bytes */
    yp_timing time;
    yp_host_memory host;
} yp_plan;

/* Builds the plan of candidate c on gpu. n_images > 0 sizes the loader's per-image tables and,
 * with the candidate's cache ram, the image cache. 0, or -1 with err set (bad size or pipeline, out
 * of memory). A plan that does not fit is still built (fits = 0). */
int yp_plan_build(const yp_graph *g, const yp_candidate *c, const yp_gpu *gpu, int64_t reserve, int64_t n_images,
                  yp_plan *out, yp_err *err);
void yp_plan_free(yp_plan *p);

/* The plan checker: the training arena is valid (yp_arena_check) and within arena_bytes, and so is
 * validation's mapping onto it (yp_val_plan_check). 0, or -1 with err naming the first violation. */
int yp_plan_check(const yp_plan *p, yp_err *err);

/* Memory at the peak step grouped as the table shows it. */
typedef struct {
    int64_t weights;     /* fp32 master weights + BN statistics */
    int64_t ema, lowp;
    int64_t grads, optimizer;
    int64_t activations; /* input, saved, transient activations, their gradients, recompute, loss */
    int64_t workspace;
} yp_plan_groups;

yp_plan_groups yp_plan_groups_at_peak(const yp_plan *p);

/* Host memory of the data pipeline for candidate c of a model whose largest stride is `stride`,
 * over n_images training images (0: unknown), into *h (see yp_host_memory). 0, or -1 with err set
 * (a bad pipeline or size, an overflow). */
int yp_host_memory_estimate(const yp_candidate *c, int stride, int64_t n_images, yp_host_memory *h, yp_err *err);

#endif
