/* yp_plan.h - the plan: the contract between planner, reports and executor (docs/architecture.md §2).
 *
 * A plan is one candidate made concrete: its training schedule (every tensor with kind, dtype,
 * shape, bytes and life; every step with its operands), the liveness simulation, the arena with
 * every tensor's byte offset, the validation pass planned into the same arena (yp_val_plan.h:
 * its parameters alias training's EMA copies, its transient tensors lie above training's
 * whole-step region), the predicted timing and the device and host memory it takes. Reports draw it; the executor allocates arena_bytes once and runs
 * the steps verbatim. Ownership: yp_plan_build fills a plan whose members the caller releases
 * with yp_plan_free; the graph must outlive the plan. */
#ifndef YP_PLAN_H
#define YP_PLAN_H

#include "yp_arena.h"
#include "yp_cost.h"
#include "yp_val_plan.h"

/* Host (CPU) memory of the data pipeline, bytes (docs/architecture.md §6). */
typedef struct {
    int64_t loader_workers;
    int64_t mosaic_canvases;  /* per worker one 2*img square canvas of uint8 RGB */
    int64_t decoded_images;   /* per worker the 4 (mosaic) or 1 decoded images it combines */
    int64_t prefetch;         /* collated uint8 batches waiting in the loader queue (2 per worker) */
    int64_t pinned_batch;     /* the float input batch staged for the device */
    int64_t image_cache;      /* --cache ram: every training image decoded at imgsz (0 if unknown) */
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
    yp_val_plan val;          /* validation: the evaluation schedule, its layout and its mapping onto training's tensors */
    int64_t val_bytes;        /* arena bytes validation needs (val.bytes): whole-step region + its transient arena */
    int64_t arena_bytes;      /* what the executor allocates: max(training arena, val_bytes) */
    int64_t device_bytes;     /* arena_bytes + gpu.fixed_bytes + reserve_bytes */
    int64_t budget_bytes;     /* gpu.mem_bytes - gpu.fixed_bytes - reserve_bytes */
    int64_t saved_bytes;      /* saved for backward by one forward pass */
    int fits;                 /* device_bytes <= gpu.mem_bytes */
    yp_timing time;
    yp_host_memory host;
} yp_plan;

/* Builds the plan of candidate c on gpu. n_images > 0 sizes the RAM image cache. 0, or -1 with
 * err set (bad size, out of memory). A plan that does not fit is still built (fits = 0). */
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

/* Host memory of the data pipeline for candidate c (see yp_host_memory). */
yp_host_memory yp_host_memory_estimate(const yp_candidate *c, int64_t n_images);

#endif
