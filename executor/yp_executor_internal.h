/* yp_executor_internal.h - shared between the executor's files (not a public interface). */
#ifndef YP_EXECUTOR_INTERNAL_H
#define YP_EXECUTOR_INTERNAL_H

#include "yp_executor.h"

/* Writes the canaries of the tensors that come to life at `step` (guards on). 0, or -1 with err. */
int yp_exec_guard_arm(yp_exec *x, int step, yp_err *err);


/* Runs one step of the schedule (forward, loss, recompute or backward). targets: the batch's
 * n_targets label rows in host memory (the loss assigns them on the host); loss_out: the loss
 * step's lbox, lobj, lcls, total. */
int yp_exec_run_step(yp_exec *x, int step, const float *targets, int64_t n_targets, double loss_out[4],
                     yp_err *err);

/* Checks every step against the executor's op table (exec_ops.h) before the first one runs: its
 * named operands are exactly the tensors it lists, it has an adapter, every parameter has an
 * initial value; then runs the rows' prepare (every conv's primitives built, its scratch checked
 * against what the backend asks for). 0, or -1 with err naming the step. */
int yp_exec_prepare_steps(yp_exec *x, yp_err *err);

/* Runs step `step` of an evaluation schedule (a binding made by yp_exec_eval_bind): a node's
 * forward step through its row's evaluation adapter (exec_ops.h: BN with the running
 * statistics, nothing updated; every other op its forward). */
int yp_exec_run_eval_step(yp_exec *x, int step, yp_err *err);

/* Binds the plan's validation pass (x->eval) after x's own layout and before the arena exists:
 * checks the plan's mapping, places its tensors (spread apart like x's under guards, raising
 * x->arena_bytes where they need more) and prepares its steps. 0, or -1 with err set. */
int yp_exec_eval_bind(yp_exec *x, yp_err *err);
/* Frees x->eval's tables (the arena is x's); NULL is a no-op. */
void yp_exec_eval_free(yp_exec *x);

#endif
