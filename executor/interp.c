/* interp.c - the step interpreter: runs each step of a binding's schedule (yp_binding.h: the
 * training one or the evaluation pass's; it needs nothing else) through the adapter its op's
 * row of the executor's op table gives it (exec_ops.h; the fused forms of a fused schedule
 * too, and an evaluation schedule's node steps through the rows' eval entries), the loss step
 * itself, and checks at init that every step's named operands (yp_operands, documented in
 * yp_schedule.h) are exactly the tensors it lists and that every step has an adapter. */
#include <stdlib.h>
#include <string.h>

#include "exec_ops.h"

typedef yp_exec_call call;

/* The loss: predictions in, gradients of the predictions out, through the backend's loss_level;
 * the targets (host memory, the caller's batch) are assigned on the host, staged in b->loss_stage. */
static int loss_step(const call *c, const yp_step_batch *in, double out4[4]) {
    const yp_binding *b = c->b;
    const yp_operands *a = &c->st->a;
    const float *preds[YP_MAX_LEVELS];
    float *dpreds[YP_MAX_LEVELS];
    yp_loss_desc d = {.cfg = b->loss, .batch = b->s->opts.batch, .dtype = E(c, a->x[0]), .grad_scale = in->loss_scale};
    int nl = b->s->g->nl, has_grad = a->dx[0] >= 0;
    for (int l = 0; l < nl; l++) {
        preds[l] = F(c, a->x[l]), d.grid_h[l] = T(c, a->x[l])->shape.h, d.grid_w[l] = T(c, a->x[l])->shape.w;
        dpreds[l] = has_grad ? F(c, a->dx[l]) : NULL;
    }
    const yp_loss_buffers lb = {preds, has_grad ? dpreds : NULL, F(c, a->loss_assign), T(c, a->loss_assign)->bytes,
                                F(c, a->loss_objmap), T(c, a->loss_objmap)->bytes, b->loss_stage};
    char msg[256];
    if (yp_loss_compute(b->be, &d, in->targets, in->n_targets, &lb, out4, msg, sizeof msg))
        return yp_err_set(c->err, "loss: %s", msg);
    return 0;
}

int yp_exec_run_step(const yp_binding *b, int step, const yp_step_batch *in, double loss_out[4], yp_err *err) {
    const yp_step *st = &b->s->steps[step];
    call c = {b, st, err};
    switch (st->phase) {
    case YP_PHASE_LOSS: return loss_step(&c, in, loss_out);
    case YP_PHASE_OPTIMIZER: return 0; /* the optimizer and EMA run in yp_exec_update */
    default: return yp_exec_step_adapter(st)(&c); /* yp_exec_prepare_steps checked it has one */
    }
}

int yp_exec_run_eval_step(const yp_binding *b, int step, yp_err *err) {
    const yp_step *st = &b->s->steps[step];
    call c = {b, st, err};
    yp_exec_step_fn f = yp_exec_eval_adapter(st);
    if (!f) return yp_err_set(err, "step %d (%s): not a node's forward step of the evaluation pass", step, st->label);
    return f(&c);
}

static int in_list(const int *list, int n, int t) {
    for (int k = 0; k < n; k++)
        if (list[k] == t) return 1;
    return 0;
}

/* Step i's named operands are exactly the tensors of its lists: the schedule and this
 * interpreter agree on what every operand is. */
static int check_operands(const yp_schedule *s, int i, yp_err *err) {
    const yp_step *st = &s->steps[i];
    const int *slot = (const int *)&st->a, n_slot = (int)(sizeof st->a / sizeof(int));
    const int *in = yp_step_inputs(s, st), *out = yp_step_outputs(s, st);
    int named = 0, listed = 0, stray = 0;
    for (int k = 0; k < n_slot; k++) {
        if (slot[k] < 0 || in_list(slot, k, slot[k])) continue;
        named++;
        stray |= !in_list(in, st->n_in, slot[k]) && !in_list(out, st->n_out, slot[k]);
    }
    for (int k = 0; k < st->n_in + st->n_out; k++) {
        int t = k < st->n_in ? in[k] : out[k - st->n_in];
        listed += !in_list(in, k < st->n_in ? k : st->n_in, t) && !in_list(out, k - st->n_in, t);
    }
    if (named != listed || stray)
        return yp_err_set(err, "step %d (%s %s): its %d named operands are not the %d tensors it lists; the schedule "
                          "and the executor disagree (rebuild both)", i, yp_phase_name(st->phase),
                          st->op >= 0 ? yp_op_get((yp_op)st->op)->name : st->label, named, listed);
    return 0;
}

/* Step i runs: it has an adapter, and a fused one only on a backend with the fused entries. */
static int check_adapter(const yp_binding *b, int i, yp_err *err) {
    const yp_step *st = &b->s->steps[i];
    if (st->phase == YP_PHASE_LOSS || st->phase == YP_PHASE_OPTIMIZER) return 0;
    if (b->s->opts.eval && st->a.decoded >= 0) return 0; /* the decode: eval.c runs it */
    if (!(b->s->opts.eval ? yp_exec_eval_adapter(st) : yp_exec_step_adapter(st)))
        return yp_err_set(err, "step %d (%s %s%s%s): the executor's op table has no entry for it "
                          "(executor/exec_ops.c); this executor cannot run the plan", i, yp_phase_name(st->phase),
                          st->op >= 0 ? yp_op_get((yp_op)st->op)->name : st->label, st->fused ? " " : "",
                          yp_fused_name(st->fused));
    return 0;
}

/* Every parameter's op has an initial value for it. */
static int check_init(const yp_binding *b, yp_err *err) {
    for (int t = 0; t < b->s->n_tensors; t++) {
        const yp_tensor *w = &b->s->tensors[t];
        if (w->kind != YP_KIND_WEIGHT) continue;
        yp_op op = b->s->g->nodes[w->node].op;
        if (!yp_exec_op_row_get(op)->init_param)
            return yp_err_set(err, "parameter %s: the executor's %s row has no initial value for it "
                              "(executor/exec_ops.c)", w->name, yp_op_get(op)->name);
    }
    return 0;
}

int yp_exec_prepare_steps(const yp_binding *b, yp_err *err) {
    if (check_init(b, err)) return -1;
    for (int i = 0; i < b->s->n_steps; i++)
        if (b->s->steps[i].phase != YP_PHASE_OPTIMIZER && (check_operands(b->s, i, err) || check_adapter(b, i, err)))
            return -1;
    for (int i = 0; i < b->s->n_steps; i++) {
        const yp_step *st = &b->s->steps[i];
        if (st->node < 0 || (st->phase != YP_PHASE_FORWARD && st->phase != YP_PHASE_RECOMPUTE &&
                             st->phase != YP_PHASE_BACKWARD))
            continue;
        yp_exec_step_fn prepare = yp_exec_op_row_get((yp_op)st->op)->prepare;
        call c = {b, st, err};
        if (prepare && prepare(&c)) return -1;
    }
    return 0;
}
