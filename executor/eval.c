/* eval.c - validation on the executor: the plan's evaluation pass (planner/yp_val_plan.h) bound
 * into the training arena and run between training steps (contract in yp_executor.h).
 *
 * The binding is a second yp_binding over the same arena, x->eval: its schedule is the plan's
 * evaluation schedule and its offsets are the validation plan's (each parameter at the training
 * tensor it aliases, so the interpreter reads the EMA copies in place; the rest above training's
 * whole-step region), so interp.c runs its node steps as it runs training's. It owns only its
 * tables: the arena is the executor's, the backend and the plan the training binding's; no
 * trainer state is involved and nothing is profiled. */
#include <stdlib.h>
#include <string.h>

#include "exec_ops.h"

/* ---------------------------------------------------------------- binding */

static int by_value(const void *a, const void *b) {
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* Distinct values of the sorted array a (n of them) below v. */
static int64_t rank_below(const int64_t *a, int64_t n, int64_t v) {
    int64_t lo = 0, hi = n;
    while (lo < hi) {
        int64_t mid = (lo + hi) / 2;
        if (a[mid] < v) lo = mid + 1;
        else hi = mid;
    }
    return lo;
}

/* Sorts and deduplicates a in place; returns the distinct count. */
static int64_t distinct(int64_t *a, int64_t n) {
    qsort(a, (size_t)n, sizeof *a, by_value);
    int64_t m = 0;
    for (int64_t i = 0; i < n; i++)
        if (!m || a[m - 1] != a[i]) a[m++] = a[i];
    return m;
}

/* With guards g, training's layout puts a tensor planned at o at o + 2g*rank + g (rank: distinct
 * planned offsets below o). The transient eval tensors get the same rule over the union of
 * training's whole-step offsets (all below base, k distinct) and their own, so each keeps g bytes
 * clear of every other and of training's whole-step tensors and their guards; the arena grows to
 * what they reach. */
static int guard_layout(yp_binding *train, yp_binding *v, yp_err *err) {
    const yp_val_plan *vp = &train->plan->val;
    const yp_schedule *tr = train->s;
    int n = vp->sched->n_tensors;
    int64_t *mine = malloc(((size_t)n + 1) * sizeof *mine);
    int64_t *below = malloc(((size_t)tr->n_tensors + 1) * sizeof *below);
    if (!mine || !below) {
        free(mine), free(below);
        return yp_err_set(err, "out of memory binding validation");
    }
    int64_t n_mine = 0, n_below = 0, g = train->guard;
    for (int t = 0; t < n; t++)
        if (vp->alias[t] < 0) mine[n_mine++] = vp->offsets[t];
    for (int t = 0; t < tr->n_tensors; t++)
        if (train->plan->arena.offsets[t] < vp->base) below[n_below++] = train->plan->arena.offsets[t];
    n_mine = distinct(mine, n_mine);
    int64_t k = distinct(below, n_below);
    for (int t = 0; t < n; t++) {
        if (vp->alias[t] >= 0) continue;
        v->offset[t] = vp->offsets[t] + 2 * g * (k + rank_below(mine, n_mine, vp->offsets[t])) + g;
        int64_t end = v->offset[t] + vp->sched->tensors[t].bytes + g;
        if (end > train->arena_bytes) train->arena_bytes = end;
    }
    free(mine), free(below);
    return 0;
}

/* v's offsets: an aliased parameter where the training binding puts the training tensor, the rest
 * as planned. */
static int layout(yp_binding *train, yp_binding *v, yp_err *err) {
    const yp_val_plan *vp = &train->plan->val;
    int n = vp->sched->n_tensors;
    v->offset = malloc((size_t)n * sizeof *v->offset);
    if (!v->offset) return yp_err_set(err, "out of memory binding validation");
    for (int t = 0; t < n; t++) v->offset[t] = vp->alias[t] >= 0 ? train->offset[vp->alias[t]] : vp->offsets[t];
    return train->guard ? guard_layout(train, v, err) : 0;
}

/* Each node's forward output in the evaluation schedule (the decode step has no node). */
static int mark_nodes(yp_binding *v, yp_err *err) {
    const yp_schedule *s = v->s;
    v->fwd_t = malloc((size_t)s->g->n_nodes * sizeof *v->fwd_t);
    if (!v->fwd_t) return yp_err_set(err, "out of memory binding validation");
    for (int i = 0; i < s->g->n_nodes; i++) v->fwd_t[i] = -1;
    for (int i = 0; i < s->n_steps; i++)
        if (s->steps[i].phase == YP_PHASE_FORWARD && s->steps[i].node >= 0)
            v->fwd_t[s->steps[i].node] = yp_step_outputs(s, &s->steps[i])[0];
    return 0;
}

yp_binding *yp_exec_eval_bind(yp_binding *train, yp_err *err) {
    const yp_plan *p = train->plan;
    yp_val_target target = {p->sched, &p->arena, p->arena_bytes};
    yp_err why;
    if (yp_val_plan_check(&p->val, &target, &why)) {
        yp_err_set(err, "the plan's validation pass cannot be bound: %s; re-plan", why.msg);
        return NULL;
    }
    yp_binding *v = calloc(1, sizeof *v);
    if (!v) {
        yp_err_set(err, "out of memory binding validation");
        return NULL;
    }
    v->plan = p, v->s = p->val.sched, v->be = train->be, v->ops = train->ops, v->guard = train->guard;
    v->images_t = v->s->images_t, v->targets_t = v->s->targets_t;
    if (layout(train, v, err) || mark_nodes(v, err) ||
        (yp_bind_loss(v) && yp_err_set(err, "out of memory staging validation's target assignment")) ||
        yp_exec_prepare_steps(v, err)) { /* every eval step's operands, adapter and conv scratch */
        yp_exec_eval_free(v);
        return NULL;
    }
    /* the loss's gains are training's (train.py's val loss is its ComputeLoss), whatever the shape */
    v->loss.box = train->loss.box, v->loss.obj = train->loss.obj, v->loss.cls = train->loss.cls;
    v->arena_bytes = train->arena_bytes; /* as layout left it */
    return v;
}

void yp_exec_eval_free(yp_binding *v) {
    if (!v) return;
    yp_bind_free(v);
    free(v);
}

/* ---------------------------------------------------------------- running */

/* The sizes of the pass b runs. */
static yp_eval_shape shape_of(const yp_binding *b) {
    const yp_schedule *s = b->s;
    const yp_candidate *c = &b->plan->cand;
    yp_eval_shape e = {s->opts.batch, s->opts.h, s->opts.w, 0, s->g->nc + 5, c->img_w, c->val_rect};
    for (int t = 0; t < s->n_tensors; t++)
        if (s->tensors[t].role == YP_ROLE_DECODED) e.boxes = s->tensors[t].shape.h;
    return e;
}

yp_eval_shape yp_exec_eval_shape(const yp_exec *x) {
    yp_binding b = {.s = x->train.plan->val.sched, .plan = x->train.plan};
    return shape_of(&b);
}

/* The batch into the pass's input tensors: n_images images, zeros for the rest of the planned
 * batch (so every step reads defined values), and the label rows. */
static int upload(const yp_binding *v, const yp_eval_batch *in, yp_err *err) {
    yp_backend *be = v->be;
    const yp_tensor *img = &v->s->tensors[v->images_t];
    size_t given = (size_t)(img->bytes / img->shape.n * in->n_images);
    unsigned char *at = yp_bind_tensor(v, v->images_t);
    if (yp_bind_upload_images(v, in->images, in->n_images, err)) return -1;
    if (be->mem_set(be, at + given, 0, (size_t)img->bytes - given) ||
        (in->targets && be->mem_copy(be, yp_bind_tensor(v, v->targets_t), in->targets,
                                     (size_t)in->n_targets * 6 * sizeof(float), YP_COPY_HOST_TO_DEVICE)))
        return yp_err_set(err, "validation: uploading the batch: %s", be->last_error(be));
    return 0;
}

/* The loss step without gradients over the n_images given (the padding is no part of it), through
 * the backend's loss_level; the labels are assigned on the host from the caller's rows. */
static int eval_loss(const yp_binding *v, const yp_step *st, const yp_eval_batch *in, double out[4], yp_err *err) {
    const yp_operands *a = &st->a;
    const float *preds[YP_MAX_LEVELS];
    yp_loss_desc d = {.cfg = v->loss, .batch = in->n_images, .dtype = yp_exec_elem(v->s->tensors[a->x[0]].dtype)};
    for (int l = 0; l < v->s->g->nl; l++) {
        const yp_tensor *t = &v->s->tensors[a->x[l]];
        preds[l] = yp_bind_tensor(v, a->x[l]), d.grid_h[l] = t->shape.h, d.grid_w[l] = t->shape.w;
    }
    const yp_loss_buffers b = {preds, NULL, yp_bind_tensor(v, a->loss_assign), v->s->tensors[a->loss_assign].bytes,
                               yp_bind_tensor(v, a->loss_objmap), v->s->tensors[a->loss_objmap].bytes, v->loss_stage};
    char msg[256];
    if (yp_loss_compute(v->be, &d, in->targets, in->n_targets, &b, out, msg, sizeof msg))
        return yp_err_set(err, "validation loss: %s", msg);
    return 0;
}

_Static_assert(YP_DECODE_MAX_LEVELS == YP_MAX_LEVELS && YP_DECODE_MAX_ANCHORS == YP_MAX_ANCHORS,
               "the decode descriptor holds every level and anchor a graph may have");

/* The decode step: Detect's outputs of the n_images into boxes (detect_decode). */
static int eval_decode(const yp_binding *v, const yp_step *st, int64_t n_images, yp_err *err) {
    const yp_graph *g = v->s->g;
    const yp_operands *a = &st->a;
    yp_decode_desc d = {n_images, g->nl, g->na, g->nc, {0}, {0}, {0}, {{{0}}},
                        yp_exec_elem(v->s->tensors[a->x[0]].dtype)};
    const float *xs[YP_DECODE_MAX_LEVELS];
    for (int l = 0; l < g->nl; l++) {
        const yp_tensor *t = &v->s->tensors[a->x[l]];
        d.h[l] = t->shape.h, d.w[l] = t->shape.w, d.stride[l] = (float)g->strides[l];
        memcpy(d.anchors[l], g->anchors[l], sizeof d.anchors[l]);
        xs[l] = yp_bind_tensor(v, a->x[l]);
    }
    if (v->ops->detect_decode(v->be, &d, xs, yp_bind_tensor(v, a->decoded)))
        return yp_err_set(err, "validation decode: %s", v->be->last_error(v->be));
    return 0;
}

static int eval_step(const yp_binding *v, int i, const yp_eval_batch *in, yp_eval_out *out, yp_err *err) {
    const yp_step *st = &v->s->steps[i];
    if (st->phase == YP_PHASE_LOSS) return in->targets ? eval_loss(v, st, in, out->loss, err) : 0;
    if (st->a.decoded >= 0) return eval_decode(v, st, in->n_images, err);
    return yp_exec_run_eval_step(v, i, err);
}

/* The batch fits the plan: images and labels within what was planned. */
static int check_batch(const yp_binding *v, const yp_eval_batch *in, yp_err *err) {
    int64_t batch = v->s->opts.batch, rows = v->s->tensors[v->targets_t].bytes / (6 * (int64_t)sizeof(float));
    if (!in->images || in->n_images < 1 || in->n_images > batch)
        return yp_err_set(err, "validation: %lld images given; the plan validates 1..%lld per call (twice the "
                          "training batch)", (long long)in->n_images, (long long)batch);
    if (in->targets && (in->n_targets < 0 || in->n_targets > rows))
        return yp_err_set(err, "validation: this batch has %lld labels; the plan holds at most %lld: re-plan with a "
                          "higher --labels", (long long)in->n_targets, (long long)rows);
    return 0;
}

int yp_exec_eval(yp_exec *x, const yp_eval_batch *in, yp_eval_out *out, yp_err *err) {
    if (!x->eval) return yp_err_set(err, "validation: this executor has no validation pass bound");
    const yp_binding *v = in->h || in->w ? yp_exec_eval_binding_for(x, in->h, in->w) : x->eval;
    if (!v)
        return yp_err_set(err, "validation: no pass at %lldx%lld was prepared (yp_exec_add_eval_shape)",
                          (long long)in->w, (long long)in->h);
    const char *missing = yp_exec_missing_entry(v->s, v->ops); /* BN's eval entry, the decode's, the loss's */
    if (missing)
        return yp_err_set(err, "backend %s has no %s op yet, which validation needs; use the cpu backend", v->be->name,
                          missing);
    if (check_batch(v, in, err)) return -1;
    memset(out->loss, 0, sizeof out->loss);
    if (v->be->thread_init) v->be->thread_init(v->be);
    for (int i = 0; i < v->s->n_steps; i++) {
        if (yp_bind_guard_arm(v, i, err) || (i == 0 && upload(v, in, err)) || eval_step(v, i, in, out, err) ||
            yp_bind_check_guards(v, i, err))
            return -1;
    }
    if (v->be->sync(v->be)) return yp_err_set(err, "validation's queued work failed: %s", v->be->last_error(v->be));
    yp_eval_shape e = shape_of(v);
    out->boxes = e.boxes;
    if (!out->decoded) return 0;
    int t = v->s->steps[v->s->n_steps - 1].a.decoded;
    size_t bytes = (size_t)(in->n_images * e.boxes * e.fields) * sizeof(float);
    if (t < 0 || v->be->mem_copy(v->be, out->decoded, yp_bind_tensor(v, t), bytes, YP_COPY_DEVICE_TO_HOST))
        return yp_err_set(err, "validation: copying the boxes out: %s",
                          t < 0 ? "no decode step" : v->be->last_error(v->be));
    return 0;
}
