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

#endif
