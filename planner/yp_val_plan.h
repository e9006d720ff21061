/* yp_val_plan.h - validation planned into the training arena (docs/architecture.md §6).
 *
 * Validation runs between training steps in the one arena the executor allocates, so its plan is
 * the evaluation schedule (yp_candidate_val_opts: 2x batch, nominal size, BN in eval mode, the
 * loss without gradients, the decode), its liveness and its own arena layout, plus where each of
 * its tensors lies in the plan's arena:
 *   - a parameter (conv weight and bias, BN gamma and beta, running mean and variance) has no bytes
 *     of its own: it aliases the training tensor validation reads. With EMA on (candidate.ema)
 *     that is the parameter's EMA copy: YOLOv5 validates the EMA model, and the training schedule
 *     keeps an EMA of every parameter and of every BN running statistic (ModelEMA averages every
 *     floating-point state-dict entry), so validation reads no live training weight at all. With
 *     EMA off it is the parameter itself;
 *   - every other tensor (the input batch, activations, the decoded boxes, the loss's targets and
 *     buffers, conv scratch) is transient: it lies above training's whole-step region, at
 *     `base` (= the training arena's persistent bytes) plus its offset in the transient part of
 *     the evaluation arena. It may share bytes with training's transient tensors (validation runs
 *     between steps, when none of them is live), never with a whole-step one.
 * So validation needs `bytes` = base + the evaluation arena's transient bytes of the arena (the
 * plan's val_bytes), and a plan's arena_bytes covers both passes.
 *
 * Ownership: yp_val_plan_build fills out, which the caller releases with yp_val_plan_free; the
 * graph and the training schedule must outlive it. */
#ifndef YP_VAL_PLAN_H
#define YP_VAL_PLAN_H

#include "yp_arena.h"
#include "yp_candidate.h"

typedef struct {
    yp_schedule *sched; /* the evaluation pass */
    yp_liveness live;
    yp_arena arena;     /* its own layout: parameters packed at the bottom, the transient part above */
    int *alias;         /* per eval tensor: the training tensor it is (an EMA copy or a parameter), or -1 */
    int64_t *offsets;   /* per eval tensor: its byte offset in the plan's arena */
    int64_t base;       /* where the transient part starts: the training arena's persistent bytes */
    int64_t bytes;      /* arena bytes validation needs: base + the eval arena's transient bytes */
    int reads_ema;      /* 1: parameters alias EMA copies; 0: the training parameters themselves */
} yp_val_plan;

/* Plans validation of candidate c beside its training schedule `train` laid out in `ta`. 0, or
 * -1 with err set (bad size, out of memory, a training schedule without the tensors to alias). */
int yp_val_plan_build(const yp_graph *g, const yp_candidate *c, const yp_schedule *train, const yp_arena *ta,
                      yp_val_plan *out, yp_err *err);
void yp_val_plan_free(yp_val_plan *v);

/* The training side the mapping refers to: its schedule, its layout and the arena's size. */
typedef struct {
    const yp_schedule *sched;
    const yp_arena *arena;
    int64_t arena_bytes; /* the one allocation (yp_plan.arena_bytes) */
} yp_val_target;

/* Proves the mapping valid: every parameter of the evaluation schedule aliases a whole-step
 * training tensor of the same parameter (node, role, level; its EMA copy when reads_ema), shape,
 * dtype and bytes, at that tensor's offset, and no two alias the same one; every other eval
 * tensor aliases nothing, is aligned, inside the arena and shares no byte with a whole-step
 * training tensor; no two eval tensors live at a common step share a byte; both layouts have the
 * same alignment and bytes fits the arena.
 * 0, or -1 with err naming the first violation. */
int yp_val_plan_check(const yp_val_plan *v, const yp_val_target *t, yp_err *err);

#endif
