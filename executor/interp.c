/* interp.c - the step interpreter: each step of the schedule, with its operands by name
 * (yp_operands, documented in yp_schedule.h), through the backend's ops. */
#include <stdlib.h>
#include <string.h>

#include "yp_executor_internal.h"

typedef struct {
    yp_exec *x;
    const yp_step *st;
    yp_err *err;
} call;

static float *F(const call *c, int t) { return yp_exec_tensor(c->x, t); }
static const yp_tensor *T(const call *c, int t) { return &c->x->s->tensors[t]; }
/* The element type of tensor t as the backend's ops take it. */
static yp_elem E(const call *c, int t) { return yp_exec_elem(T(c, t)->dtype); }
static yp_dims dims(const call *c, int t) {
    yp_shape s = T(c, t)->shape;
    return (yp_dims){s.n, s.h, s.w, s.c};
}

static int fail(const call *c, const char *what) {
    const yp_step *st = c->st;
    const char *who = st->node >= 0 ? c->x->s->g->nodes[st->node].name : st->label;
    return yp_err_set(c->err, "step %d (%s %s %s): %s: %s", (int)(st - c->x->s->steps), yp_phase_name(st->phase),
                      st->op >= 0 ? yp_op_get((yp_op)st->op)->name : "-", who, what, c->x->be->last_error(c->x->be));
}

#define OK(expr, what)                          \
    do {                                        \
        if ((expr) != 0) return fail(c, what); \
    } while (0)

/* The scratch a conv step was given (yp_operands.scratch_image / scratch_fixed), or NULL. */
#define WS(c) OPT(c, (c)->st->a.scratch_image), OPT(c, (c)->st->a.scratch_fixed)

/* Dims of graph value v (a node's output, or the image) from its forward tensor. */
static yp_dims value_dims(const call *c, int v) {
    return dims(c, v == YP_INPUT_IMAGE ? c->x->images_t : c->x->fwd_t[v]);
}

static yp_conv_desc conv_desc(const call *c, const yp_node *n, int y) {
    yp_conv_desc d = {value_dims(c, n->inputs[0]), dims(c, y), n->a.conv.k, n->a.conv.s, n->a.conv.p,
                      n->a.conv.groups, E(c, y)};
    return d;
}

static yp_conv_desc detect_desc(const call *c, const yp_node *n, int l, int y) {
    yp_conv_desc d = {value_dims(c, n->inputs[l]), dims(c, y), 1, 1, 0, 1, E(c, y)};
    return d;
}

static yp_pool_desc pool_desc(const call *c, const yp_node *n, int x, int y) {
    yp_pool_desc d = {dims(c, x), dims(c, y), n->a.pool.k, n->a.pool.s, n->a.pool.p, E(c, x)};
    return d;
}

static yp_bn_desc bn_desc(const call *c, const yp_node *n, int x) {
    yp_bn_desc d = {dims(c, x), (float)n->a.bn.eps, (float)n->a.bn.momentum, E(c, x)};
    return d;
}

static int64_t numel(const call *c, int t) { return yp_shape_numel(T(c, t)->shape); }

/* An optional operand: NULL when the step has none (a conv without bias, an unwanted gradient). */
static float *OPT(const call *c, int t) { return t >= 0 ? F(c, t) : NULL; }

/* Fusions of a BN step with the SiLU steps that read its output (yp_exec_prepare_convs decides):
 * when only SiLU steps (forward, recompute or backward) read the BN output and the BN input and
 * statistics are still live at the last of them, the BN step computes only what must outlive it
 * (training statistics) and each SiLU step computes silu(bn(x)) or its gradient straight from the
 * BN input, so the BN output is never written or read (its planned bytes stay reserved). */
enum {
    FUSE_NONE,
    FUSE_BN_STATS, /* forward BN: statistics and running stats only */
    FUSE_BN_SKIP,  /* recompute BN: nothing (the SiLU step applies the saved statistics) */
    FUSE_SILU_FWD, /* forward or recompute SiLU: y = silu(bn(x)) */
    FUSE_SILU_BWD, /* backward SiLU: dx = silu'(bn(x)) * dy (and, before FUSE_BN_BWD_SUMS, its sums) */
    FUSE_BN_BWD_SUMS /* backward BN right after its SiLU's: takes the sums from it, one pass less */
};

/* The BN step fused into SiLU step c and its operands. */
typedef struct {
    yp_bn_desc d;
    const float *x, *gamma, *beta, *stats;
} fused_bn;

static fused_bn fused_partner(const call *c) {
    const yp_schedule *s = c->x->s;
    const yp_step *b = &s->steps[c->x->fuse_bn[c->st - s->steps]];
    const yp_node *n = &s->g->nodes[b->node];
    fused_bn f;
    f.d = (yp_bn_desc){dims(c, b->a.x[0]), (float)n->a.bn.eps, (float)n->a.bn.momentum, E(c, b->a.x[0])};
    f.x = F(c, b->a.x[0]), f.gamma = F(c, b->a.gamma), f.beta = F(c, b->a.beta);
    f.stats = F(c, b->a.stats); /* forward: the batch statistics it writes; recompute: the saved ones */
    return f;
}

/* Forward and recompute share everything but BN (batch statistics vs the saved ones). */
static int forward_like(const call *c, int recompute) {
    const yp_ops *o = c->x->ops;
    const yp_node *n = &c->x->s->g->nodes[c->st->node];
    const yp_operands *a = &c->st->a;
    int k = n->n_inputs, fuse = c->x->fuse[c->st - c->x->s->steps];
    if (fuse == FUSE_BN_SKIP) return 0;
    if (fuse == FUSE_SILU_FWD) {
        fused_bn f = fused_partner(c);
        OK(o->bn_silu_apply(c->x->be, &f.d, f.x, f.gamma, f.beta, f.stats, F(c, a->y[0])), "bn + silu");
        return 0;
    }
    switch (n->op) {
    case YP_OP_CONV2D: {
        yp_conv_desc d = conv_desc(c, n, a->y[0]);
        OK(o->conv2d_forward(c->x->be, &d, F(c, a->x[0]), F(c, a->w[0]), OPT(c, a->bias[0]), F(c, a->y[0]), WS(c)), "conv2d");
        return 0;
    }
    case YP_OP_BATCHNORM2D: {
        yp_bn_desc d = bn_desc(c, n, a->x[0]);
        if (recompute) {
            OK(o->bn_apply(c->x->be, &d, F(c, a->x[0]), F(c, a->gamma), F(c, a->beta), F(c, a->stats), F(c, a->y[0])), "bn apply");
        } else {
            OK(o->bn_forward_train(c->x->be, &d, F(c, a->x[0]), F(c, a->gamma), F(c, a->beta),
                                   fuse == FUSE_BN_STATS ? NULL : F(c, a->y[0]), F(c, a->stats), F(c, a->running_mean),
                                   F(c, a->running_var)),
               "batchnorm");
        }
        return 0;
    }
    case YP_OP_SILU: OK(o->silu_forward(c->x->be, E(c, a->y[0]), F(c, a->x[0]), F(c, a->y[0]), numel(c, a->y[0])), "silu"); return 0;
    case YP_OP_ADD: OK(o->add_forward(c->x->be, E(c, a->y[0]), F(c, a->x[0]), F(c, a->x[1]), F(c, a->y[0]), numel(c, a->y[0])), "add"); return 0;
    case YP_OP_CONCAT: {
        const float *xs[YP_MAX_INPUTS];
        int64_t cs[YP_MAX_INPUTS];
        for (int i = 0; i < k; i++) xs[i] = F(c, a->x[i]), cs[i] = T(c, a->x[i])->shape.c;
        OK(o->concat_forward(c->x->be, E(c, a->y[0]), k, xs, cs, dims(c, a->y[0]), F(c, a->y[0])), "concat");
        return 0;
    }
    case YP_OP_UPSAMPLE_NEAREST:
        OK(o->upsample_forward(c->x->be, E(c, a->y[0]), dims(c, a->x[0]), n->a.up.scale, F(c, a->x[0]), F(c, a->y[0])), "upsample");
        return 0;
    case YP_OP_MAXPOOL2D: {
        yp_pool_desc d = pool_desc(c, n, a->x[0], a->y[0]);
        OK(o->maxpool_forward(c->x->be, &d, F(c, a->x[0]), F(c, a->y[0])), "maxpool");
        return 0;
    }
    case YP_OP_SPACE_TO_DEPTH:
        OK(o->space_to_depth_forward(c->x->be, E(c, a->y[0]), dims(c, a->x[0]), F(c, a->x[0]), F(c, a->y[0])), "s2d");
        return 0;
    case YP_OP_DETECT:
        for (int l = 0; l < k; l++) {
            yp_conv_desc d = detect_desc(c, n, l, a->y[l]);
            OK(o->conv2d_forward(c->x->be, &d, F(c, a->x[l]), F(c, a->w[l]), F(c, a->bias[l]), F(c, a->y[l]), WS(c)),
               "detect conv");
        }
        return 0;
    default: return yp_err_set(c->err, "op %d has no forward", n->op);
    }
}

/* The loss: predictions in, gradients of the predictions out, through the backend's loss_level;
 * the targets (host memory, the caller's batch) are assigned on the host, staged in x->loss_stage. */
static int loss_step(const call *c, const float *targets, int64_t n_targets, double out4[4]) {
    yp_exec *x = c->x;
    const yp_operands *a = &c->st->a;
    const float *preds[YP_MAX_LEVELS];
    float *dpreds[YP_MAX_LEVELS];
    yp_loss_desc d = {.cfg = x->loss, .batch = x->s->opts.batch, .dtype = E(c, a->x[0])};
    int nl = x->s->g->nl, has_grad = a->dx[0] >= 0;
    for (int l = 0; l < nl; l++) {
        preds[l] = F(c, a->x[l]), d.grid_h[l] = T(c, a->x[l])->shape.h, d.grid_w[l] = T(c, a->x[l])->shape.w;
        dpreds[l] = has_grad ? F(c, a->dx[l]) : NULL;
    }
    const yp_loss_buffers b = {preds, has_grad ? dpreds : NULL, F(c, a->loss_assign), T(c, a->loss_assign)->bytes,
                               F(c, a->loss_objmap), T(c, a->loss_objmap)->bytes, x->loss_stage};
    char msg[256];
    if (yp_loss_compute(x->be, &d, targets, n_targets, &b, out4, msg, sizeof msg))
        return yp_err_set(c->err, "loss: %s", msg);
    return 0;
}

/* beta for an activation gradient this step writes: 0 when the step creates it, 1 to add. */
static float beta_of(const call *c, int t) {
    return t < 0 || T(c, t)->producer == (int)(c->st - c->x->s->steps) ? 0.0f : 1.0f;
}

static int backward_detect(const call *c, const yp_node *n) {
    const yp_ops *o = c->x->ops;
    const yp_operands *a = &c->st->a;
    for (int l = 0; l < n->n_inputs; l++) { /* dw absent: a frozen head */
        yp_conv_desc d = detect_desc(c, n, l, a->dy[l]);
        if (a->dx[l] >= 0)
            OK(o->conv2d_backward_data(c->x->be, &d, F(c, a->dy[l]), F(c, a->w[l]), F(c, a->dx[l]), beta_of(c, a->dx[l]), WS(c)),
               "detect backward data");
        if (a->dw[l] >= 0)
            OK(o->conv2d_backward_weights(c->x->be, &d, F(c, a->x[l]), F(c, a->dy[l]), F(c, a->dw[l]), F(c, a->dbias[l]), 1.0f,
                                              WS(c)),
                   "detect backward weights");
    }
    return 0;
}

static int backward_conv(const call *c, const yp_node *n) {
    const yp_ops *o = c->x->ops;
    const yp_operands *a = &c->st->a;
    int tr = a->dw[0] >= 0, dx = a->dx[0]; /* dw absent: a frozen conv */
    yp_conv_desc d = conv_desc(c, n, a->dy[0]);
    if (dx >= 0 && tr && o->conv2d_backward) {
        OK(o->conv2d_backward(c->x->be, &d, F(c, a->x[0]), F(c, a->dy[0]), F(c, a->w[0]), F(c, dx), F(c, a->dw[0]),
                              OPT(c, a->dbias[0]), (yp_betas){beta_of(c, dx), 1.0f}, WS(c)),
           "conv backward");
        return 0;
    }
    if (dx >= 0)
        OK(o->conv2d_backward_data(c->x->be, &d, F(c, a->dy[0]), F(c, a->w[0]), F(c, dx), beta_of(c, dx), WS(c)),
           "conv backward data");
    if (tr) OK(o->conv2d_backward_weights(c->x->be, &d, F(c, a->x[0]), F(c, a->dy[0]), F(c, a->dw[0]), OPT(c, a->dbias[0]), 1.0f,
                                          WS(c)),
               "conv backward weights");
    return 0;
}

static int backward_silu(const call *c) {
    const yp_ops *o = c->x->ops;
    const yp_operands *a = &c->st->a;
    int i = (int)(c->st - c->x->s->steps);
    if (beta_of(c, a->dx[0]) != 0.0f) return yp_err_set(c->err, "silu backward cannot accumulate");
    if (c->x->fuse[i] == FUSE_SILU_BWD) {
        fused_bn f = fused_partner(c);
        double *sums = c->x->fuse[i + 1] == FUSE_BN_BWD_SUMS ? c->x->bn_sums : NULL;
        OK(o->bn_silu_backward(c->x->be, &f.d, f.x, f.gamma, f.beta, f.stats, F(c, a->dy[0]), F(c, a->dx[0]), sums),
           "bn + silu backward");
        return 0;
    }
    OK(o->silu_backward(c->x->be, E(c, a->dx[0]), F(c, a->x[0]), F(c, a->dy[0]), F(c, a->dx[0]), numel(c, a->dy[0])), "silu backward");
    return 0;
}

static int backward_concat(const call *c, const yp_node *n) {
    const yp_operands *a = &c->st->a;
    float *dxs[YP_MAX_INPUTS];
    float betas[YP_MAX_INPUTS];
    int64_t cs[YP_MAX_INPUTS];
    for (int k = 0; k < n->n_inputs; k++) {
        cs[k] = value_dims(c, n->inputs[k]).c;
        dxs[k] = OPT(c, a->dx[k]), betas[k] = beta_of(c, a->dx[k]);
    }
    OK(c->x->ops->concat_backward(c->x->be, E(c, a->dy[0]), n->n_inputs, dxs, cs, dims(c, a->dy[0]), F(c, a->dy[0]), betas), "concat backward");
    return 0;
}

static int backward(const call *c) {
    const yp_ops *o = c->x->ops;
    const yp_node *n = &c->x->s->g->nodes[c->st->node];
    const yp_operands *a = &c->st->a;
    int dx = a->dx[0];
    switch (n->op) {
    case YP_OP_CONV2D: return backward_conv(c, n);
    case YP_OP_BATCHNORM2D: {
        yp_bn_desc d = bn_desc(c, n, a->x[0]);
        const double *sums = c->x->fuse[c->st - c->x->s->steps] == FUSE_BN_BWD_SUMS ? c->x->bn_sums : NULL;
        OK(o->bn_backward(c->x->be, &d, F(c, a->x[0]), F(c, a->stats), F(c, a->gamma), F(c, a->dy[0]), sums,
                          OPT(c, dx), OPT(c, a->dgamma), OPT(c, a->dbeta), (yp_betas){beta_of(c, dx), 1.0f}),
           "bn backward");
        return 0;
    }
    case YP_OP_SILU: return backward_silu(c);
    case YP_OP_ADD:
        for (int k = 0; k < 2; k++)
            if (a->dx[k] >= 0)
                OK(o->axpy_grad(c->x->be, E(c, a->dy[0]), F(c, a->dy[0]), F(c, a->dx[k]), beta_of(c, a->dx[k]), numel(c, a->dy[0])), "add backward");
        return 0;
    case YP_OP_CONCAT: return backward_concat(c, n);
    case YP_OP_UPSAMPLE_NEAREST:
        if (dx < 0) return 0; /* the input needs no gradient */
        OK(o->upsample_backward(c->x->be, E(c, dx), dims(c, dx), n->a.up.scale, F(c, a->dy[0]), F(c, dx), beta_of(c, dx)),
           "upsample backward");
        return 0;
    case YP_OP_MAXPOOL2D: {
        if (dx < 0) return 0;
        yp_pool_desc d = pool_desc(c, n, a->x[0], a->dy[0]);
        OK(o->maxpool_backward(c->x->be, &d, F(c, a->x[0]), F(c, a->dy[0]), F(c, dx), beta_of(c, dx)), "maxpool backward");
        return 0;
    }
    case YP_OP_SPACE_TO_DEPTH:
        if (dx < 0) return 0; /* the input needs no gradient */
        OK(o->space_to_depth_backward(c->x->be, E(c, dx), dims(c, dx), F(c, a->dy[0]), F(c, dx), beta_of(c, dx)), "s2d backward");
        return 0;
    case YP_OP_DETECT: return backward_detect(c, n);
    default: return yp_err_set(c->err, "op %d has no backward", n->op);
    }
}

int yp_exec_run_step(yp_exec *x, int step, const float *targets, int64_t n_targets, double loss_out[4],
                     yp_err *err) {
    const yp_step *st = &x->s->steps[step];
    call c = {x, st, err};
    switch (st->phase) {
    case YP_PHASE_FORWARD: return forward_like(&c, 0);
    case YP_PHASE_RECOMPUTE: return forward_like(&c, 1);
    case YP_PHASE_LOSS: return loss_step(&c, targets, n_targets, loss_out);
    case YP_PHASE_BACKWARD: return backward(&c);
    default: return 0; /* the optimizer and EMA run in yp_exec_update */
    }
}

/* Builds what the backend keeps for conv d at stage st, and checks its scratch against what step
 * c was given. */
static int check_scratch(const call *c, const yp_conv_desc *d, int bias, yp_conv_stage st) {
    int64_t per_image, fixed;
    if ((c->x->ops->conv2d_prepare && c->x->ops->conv2d_prepare(c->x->be, d, bias, st)) ||
        c->x->ops->conv2d_scratch(c->x->be, d, bias, st, &per_image, &fixed))
        return fail(c, "preparing the conv");
    const int given[2] = {c->st->a.scratch_image, c->st->a.scratch_fixed};
    int64_t need[2] = {per_image * (int64_t)sizeof(float), fixed * (int64_t)sizeof(float)};
    for (int k = 0; k < 2; k++) {
        int t = given[k];
        int64_t have = t >= 0 ? T(c, t)->bytes : 0;
        if (have < need[k]) {
            char model[YP_SCRATCH_NAME_MAX];
            yp_exec_scratch_model(c->x->be, model, sizeof model);
            return yp_err_set(c->err, "step %d (%s): the plan gives %lld bytes of %s scratch, the %s backend needs "
                              "%lld: the plan's conv scratch model is %s, this backend needs %s; plan with "
                              "--scratch %s", (int)(c->st - c->x->s->steps), c->x->s->g->nodes[c->st->node].name,
                              (long long)have, k ? "fixed" : "per-image", c->x->be->name, (long long)need[k],
                              yp_candidate_scratch_name(&c->x->plan->cand), model, model);
        }
    }
    return 0;
}

/* The fusion BN step i allows (FUSE_* of it and of the SiLU steps reading its output). */
static void find_fusion(yp_exec *x, int i) {
    const yp_schedule *s = x->s;
    const yp_step *b = &s->steps[i];
    if (b->op != YP_OP_BATCHNORM2D || (b->phase != YP_PHASE_FORWARD && b->phase != YP_PHASE_RECOMPUTE) ||
        !x->ops->bn_silu_apply || !x->ops->bn_silu_backward)
        return;
    const yp_tensor *y = &s->tensors[b->a.y[0]];
    if (y->producer != i || y->n_cons == 0) return;
    for (int k = 0; k < y->n_cons; k++) {
        const yp_step *a = &s->steps[s->refs[y->cons_off + k]];
        int fwd = a->phase == YP_PHASE_FORWARD || a->phase == YP_PHASE_RECOMPUTE;
        if (a->op != YP_OP_SILU || a <= b || (!fwd && a->phase != YP_PHASE_BACKWARD) || a->a.x[0] != b->a.y[0] ||
            x->fuse[a - s->steps])
            return;
    }
    if (s->tensors[b->a.x[0]].last < y->last || s->tensors[b->a.stats].last < y->last) return;
    x->fuse[i] = b->phase == YP_PHASE_FORWARD ? FUSE_BN_STATS : FUSE_BN_SKIP;
    for (int k = 0; k < y->n_cons; k++) {
        int a = s->refs[y->cons_off + k];
        x->fuse[a] = s->steps[a].phase == YP_PHASE_BACKWARD ? FUSE_SILU_BWD : FUSE_SILU_FWD;
        x->fuse_bn[a] = i;
        /* the BN's own backward right after its SiLU's, on the gradient that step writes */
        const yp_step *nb = &s->steps[a + 1];
        if (x->fuse[a] == FUSE_SILU_BWD && a + 1 < s->n_steps && nb->op == YP_OP_BATCHNORM2D &&
            nb->phase == YP_PHASE_BACKWARD && nb->node == b->node && nb->a.dy[0] == s->steps[a].a.dx[0])
            x->fuse[a + 1] = FUSE_BN_BWD_SUMS;
    }
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

int yp_exec_prepare_convs(yp_exec *x, yp_err *err) {
    x->fuse = calloc((size_t)x->s->n_steps + 1, 1);
    x->fuse_bn = calloc((size_t)x->s->n_steps + 1, sizeof *x->fuse_bn);
    int64_t max_c = 1;
    for (int i = 0; i < x->s->g->n_nodes; i++)
        if (x->s->g->nodes[i].op == YP_OP_BATCHNORM2D && x->s->g->nodes[i].a.bn.c > max_c) max_c = x->s->g->nodes[i].a.bn.c;
    x->bn_sums = calloc((size_t)(2 * max_c), sizeof *x->bn_sums);
    if (!x->fuse || !x->fuse_bn || !x->bn_sums) return yp_err_set(err, "out of memory");
    for (int i = 0; i < x->s->n_steps; i++)
        if (x->s->steps[i].phase != YP_PHASE_OPTIMIZER && check_operands(x->s, i, err)) return -1;
    for (int i = 0; i < x->s->n_steps; i++) find_fusion(x, i);
    for (int i = 0; i < x->s->n_steps; i++) {
        const yp_step *st = &x->s->steps[i];
        if (st->node < 0 || (st->phase != YP_PHASE_FORWARD && st->phase != YP_PHASE_RECOMPUTE &&
                             st->phase != YP_PHASE_BACKWARD))
            continue;
        const yp_node *n = &x->s->g->nodes[st->node];
        call c = {x, st, err};
        yp_conv_stage stage = st->phase == YP_PHASE_BACKWARD ? YP_CONV_BACKWARD : YP_CONV_FORWARD;
        if (n->op == YP_OP_CONV2D) {
            yp_conv_desc d = {value_dims(&c, n->inputs[0]), dims(&c, x->fwd_t[n->id]), n->a.conv.k, n->a.conv.s,
                              n->a.conv.p, n->a.conv.groups, E(&c, x->fwd_t[n->id])};
            if (check_scratch(&c, &d, n->a.conv.bias, stage)) return -1;
        } else if (n->op == YP_OP_DETECT) {
            for (int l = 0; l < n->n_inputs; l++) {
                /* the forward step creates the levels' outputs one after another */
                yp_conv_desc d = {value_dims(&c, n->inputs[l]), dims(&c, x->fwd_t[n->id] + l), 1, 1, 0, 1,
                                  E(&c, x->fwd_t[n->id] + l)};
                if (check_scratch(&c, &d, 1, stage)) return -1;
            }
        }
    }
    return 0;
}
