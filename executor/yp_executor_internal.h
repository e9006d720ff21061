/* yp_executor_internal.h - shared between the executor's files (not a public interface): the
 * step interpreter, which runs steps of a binding (interp.c); the validation binding's creation
 * (eval.c); the trainer's tables (update.c); the profile's timing of a step (profile.c). */
#ifndef YP_EXECUTOR_INTERNAL_H
#define YP_EXECUTOR_INTERNAL_H

#include "yp_executor.h"

/* ---- the step interpreter (interp.c): a step of a binding, nothing else ---- */

/* What a training step's loss reads besides its tensors: the batch's n_targets label rows in
 * host memory (the loss assigns them on the host), and the loss scale S the gradients start from
 * (AMP's GradScaler; 1: none). */
typedef struct {
    const float *targets;
    int64_t n_targets;
    float loss_scale;
} yp_step_batch;

/* Runs one step of b's schedule (forward, loss, recompute or backward); loss_out: the loss
 * step's lbox, lobj, lcls, total (unscaled). */
int yp_exec_run_step(const yp_binding *b, int step, const yp_step_batch *in, double loss_out[4], yp_err *err);

/* Runs steps [first, end) of b, a run of device-only steps (yp_exec_run_end), as its recording:
 * launches it, recording it first when this is its first micro-step; falls back to plain calls
 * (and turns recording off) when recording fails. 0, or -1 with err set. */
int yp_exec_replay_run(yp_exec *x, const yp_binding *b, int first, int end, const yp_step_batch *in, double sum[4],
                       yp_err *err);

/* Whether the micro-step over b records its runs: the backend records, recording is not off, and
 * neither guards nor the profile are on. */
int yp_exec_replaying(const yp_exec *x, const yp_binding *b);

/* Frees every recording (yp_exec_free). */
void yp_exec_graphs_free(yp_exec *x);

/* Under AMP: casts every low-precision weight copy of b's schedule (YP_KIND_LOWP) from its fp32
 * master through the backend's cast entry; a no-op for fp32 schedules. The micro-step calls it
 * when yp_trainer.lowp_stale says the masters changed. 0, or -1 with err naming the copy. */
int yp_exec_refresh_lowp(const yp_binding *b, yp_err *err);

/* Checks every step of b against the executor's op table (exec_ops.h) before the first one runs:
 * its named operands are exactly the tensors it lists, it has an adapter, every parameter has an
 * initial value; then runs the rows' prepare (every conv's primitives built, its scratch checked
 * against what the backend asks for). Needs b's offsets and fwd_t, not the arena. 0, or -1 with
 * err naming the step. */
int yp_exec_prepare_steps(const yp_binding *b, yp_err *err);

/* Runs step `step` of an evaluation schedule (the binding yp_exec_eval_bind made): a node's
 * forward step through its row's evaluation adapter (exec_ops.h: BN with the running
 * statistics, nothing updated; every other op its forward). */
int yp_exec_run_eval_step(const yp_binding *b, int step, yp_err *err);

/* ---- the validation binding (eval.c) ---- */

/* Binds the plan's validation pass after train's layout and before the arena exists: checks the
 * plan's mapping, places its tensors (spread apart like train's under guards, raising
 * train->arena_bytes where they need more), its loss and its prepared steps. The binding, which
 * gets the arena when yp_exec_init has allocated it; or NULL with err set. */
yp_binding *yp_exec_eval_bind(yp_binding *train, yp_err *err);
/* Frees v's tables and v (the arena is the executor's); NULL is a no-op. */
void yp_exec_eval_free(yp_binding *v);

/* ---- the trainer's tables (update.c) ---- */

/* Links every parameter of p's training schedule to its optimizer states and EMA copy through the
 * schedule's roles; the hyperparameters are the defaults of p's optimizer, the counters 0. 0, or
 * -1 with err set (out of memory); free with yp_trainer_free either way. */
int yp_trainer_init(yp_trainer *tr, const yp_plan *p, yp_err *err);

/* Frees the added sizes (multiscale.c). */
void yp_exec_sizes_free(yp_exec *x);
/* Frees tr's tables and zeroes it; a zeroed trainer is a no-op. */
void yp_trainer_free(yp_trainer *tr);

/* ---- timing a step into a profile (profile.c) ---- */

/* Monotonic seconds. */
double yp_profile_clock(void);

/* The start of a step p times: the clock when p is on, else 0 (no clock is read). */
static inline double yp_profile_start(const yp_profile *p) { return p->s ? yp_profile_clock() : 0; }

/* Adds the time since t0 and one call to (phase, op) when p is on. */
static inline void yp_profile_add(yp_profile *p, int phase, int op, double t0) {
    if (!p->s) return;
    p->s[YP_EXEC_PROF_INDEX(phase, op)] += yp_profile_clock() - t0;
    p->n[YP_EXEC_PROF_INDEX(phase, op)]++;
}

#endif
