/* update.c - the trainer (yp_trainer, yp_executor.h): its hyperparameters and optimizer/EMA
 * links, one micro-batch through the training binding's steps (the interpreter runs each; this
 * file times them into the profile), and the optimizer + EMA update (YOLOv5 train.py:
 * clip_grad_norm_ 10, SGD/Adam/AdamW over three parameter groups, ModelEMA). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "yp_executor_internal.h"

yp_hyp yp_hyp_default(yp_optimizer opt) {
    yp_hyp h;
    h.lr = h.lr_bias = opt == YP_OPT_SGD ? 0.01 : 0.001;
    h.momentum = 0.937, h.beta2 = 0.999, h.eps = 1e-8;
    h.weight_decay = 5e-4, h.max_grad_norm = 10.0;
    h.ema_decay = 0.9999, h.ema_tau = 2000.0;
    return h;
}

/* ---------------------------------------------------------------- the trainer's tables */

int yp_trainer_init(yp_trainer *tr, const yp_plan *p, yp_err *err) {
    const yp_schedule *s = p->sched;
    int n = s->n_tensors;
    memset(tr, 0, sizeof *tr);
    tr->hyp = yp_hyp_default(p->cand.optimizer);
    tr->opt_m = malloc((size_t)n * sizeof(int)), tr->opt_v = malloc((size_t)n * sizeof(int));
    tr->ema = malloc((size_t)n * sizeof(int));
    tr->multi = malloc((size_t)n * sizeof *tr->multi + 1);
    if (!tr->opt_m || !tr->opt_v || !tr->ema || !tr->multi) return yp_err_set(err, "out of memory binding the arena");
    for (int t = 0; t < n; t++) tr->opt_m[t] = tr->opt_v[t] = tr->ema[t] = -1;
    tr->scaler = yp_grad_scaler_init();
    tr->scaler_on = p->cand.precision == YP_PREC_AMP_FP16; /* bf16 has fp32's range: no scaler */
    tr->lowp_stale = 1; /* the copies are cast before the first micro-step */
    for (int t = 0; t < n; t++) {
        const yp_tensor *d = &s->tensors[t];
        if (d->param < 0) continue;
        if (d->role == YP_ROLE_EMA) tr->ema[d->param] = t;
        if (d->role == YP_ROLE_MOMENTUM || d->role == YP_ROLE_ADAM_M) tr->opt_m[d->param] = t;
        if (d->role == YP_ROLE_ADAM_V) tr->opt_v[d->param] = t;
    }
    return 0;
}

void yp_trainer_free(yp_trainer *tr) {
    free(tr->opt_m), free(tr->opt_v), free(tr->ema), free(tr->multi);
    memset(tr, 0, sizeof *tr);
}

/* ---------------------------------------------------------------- micro-step and update */

int yp_exec_refresh_lowp(const yp_binding *b, yp_err *err) {
    const yp_schedule *s = b->s;
    for (int t = 0; t < s->n_tensors; t++) {
        const yp_tensor *c = &s->tensors[t];
        if (c->kind != YP_KIND_LOWP) continue;
        const yp_tensor *w = &s->tensors[c->param];
        if (b->ops->cast(b->be, yp_exec_elem(w->dtype), yp_bind_tensor(b, c->param), yp_exec_elem(c->dtype),
                         yp_bind_tensor(b, t), yp_shape_numel(c->shape)))
            return yp_err_set(err, "casting %s from %s: %s", c->name, w->name, b->be->last_error(b->be));
    }
    return 0;
}

int yp_exec_micro_step(yp_exec *x, const float *images, const float *targets, int64_t n_targets, double loss_out[4],
                       yp_err *err) {
    return yp_exec_micro_step_at(x, x->train.s->opts.h, images, targets, n_targets, loss_out, err);
}

int yp_exec_micro_step_at(yp_exec *x, int64_t side, const float *images, const float *targets, int64_t n_targets,
                          double loss_out[4], yp_err *err) {
    const yp_binding *b = yp_exec_binding_for(x, side);
    if (!b)
        return yp_err_set(err, "no training binding for %lldx%lld batches: add the size first (yp_exec_add_size)",
                          (long long)side, (long long)side);
    const yp_schedule *s = b->s;
    yp_backend *be = b->be;
    const yp_tensor *img = &s->tensors[b->images_t], *tg = &s->tensors[b->targets_t];
    int64_t capacity = tg->bytes / (6 * (int64_t)sizeof(float));
    if (n_targets < 0 || n_targets > capacity)
        return yp_err_set(err,
                          "this batch has %lld labels; the plan holds at most %lld: re-plan with a higher --labels",
                          (long long)n_targets, (long long)capacity);
    double sum[4] = {0, 0, 0, 0};
    const yp_step_batch in = {targets, n_targets, x->trainer.scaler_on ? x->trainer.scaler.scale : 1.0f};
    if (be->thread_init) be->thread_init(be); /* cheap; the caller's thread may have changed */
    if (x->trainer.lowp_stale) { /* the AMP weight copies, after init, a load or an update */
        if (yp_exec_refresh_lowp(&x->train, err)) return -1;
        x->trainer.lowp_stale = 0;
    }
    for (int i = 0; i < s->n_steps; i++) {
        const yp_step *st = &s->steps[i];
        if (st->phase == YP_PHASE_OPTIMIZER) break;
        if (yp_bind_guard_arm(b, i, err)) return -1;
        const int end = i > 0 && yp_exec_replaying(x, b) ? yp_exec_run_end(s, i) : i;
        if (end - i >= 2) { /* a run of device-only steps: its recording (replay.c) */
            if (yp_exec_replay_run(x, b, i, end, &in, sum, err)) return -1;
            i = end - 1;
            continue;
        }
        if (i == 0 && yp_bind_upload_images(b, images, img->shape.n, err)) return -1;
        if (i == 0 && be->mem_copy(be, yp_bind_tensor(b, b->targets_t), targets, (size_t)n_targets * 6 * sizeof(float),
                                   YP_COPY_HOST_TO_DEVICE))
            return yp_err_set(err, "uploading the batch: %s", be->last_error(be));
        double t0 = yp_profile_start(&x->prof);
        if (yp_exec_run_step(b, i, &in, sum, err) || yp_bind_check_guards(b, i, err)) return -1;
        yp_profile_add(&x->prof, st->phase, st->op, t0);
    }
    if (be->sync(be)) return yp_err_set(err, "the step's queued work failed: %s", be->last_error(be));
    if (loss_out) memcpy(loss_out, sum, sizeof sum);
    x->trainer.micro++;
    return 0;
}

/* YOLOv5's groups: conv (and Detect) weights decay; BN weights and all biases do not. */
static int decays(const yp_tensor *w) {
    return w->role == YP_ROLE_CONV_WEIGHT;
}

/* Group 0, the biases (every parameter named "bias": conv and BN), has its own learning rate. */
static int is_bias(const yp_tensor *w) {
    return w->role == YP_ROLE_CONV_BIAS || w->role == YP_ROLE_BN_BETA;
}

/* The gradients' norm: through sum_squares_multi when the backend has it (one wait on a device
 * for every gradient, the tensors' sums added in tensor order as the loop below adds them). */
static double grad_norm_multi(const yp_binding *b, yp_err *err) {
    const yp_schedule *s = b->s;
    int k = 0;
    for (int t = 0; t < s->n_tensors; t++) k += s->tensors[t].kind == YP_KIND_GRAD;
    const float **xs = malloc((size_t)(k > 0 ? k : 1) * sizeof *xs);
    int64_t *ns = malloc((size_t)(k > 0 ? k : 1) * sizeof *ns);
    double total = -1;
    if (!xs || !ns) {
        yp_err_set(err, "gradient norm: out of memory");
    } else {
        int j = 0;
        yp_elem dt = YP_ELEM_F32;
        for (int t = 0; t < s->n_tensors; t++) {
            const yp_tensor *g = &s->tensors[t];
            if (g->kind != YP_KIND_GRAD) continue;
            xs[j] = yp_bind_tensor(b, t), ns[j++] = g->shape.w, dt = yp_exec_elem(g->dtype);
        }
        if (b->ops->sum_squares_multi(b->be, dt, k, xs, ns, &total)) {
            yp_err_set(err, "gradient norm: %s", b->be->last_error(b->be));
            total = -1;
        }
    }
    free(xs), free(ns);
    return total < 0 ? -1 : sqrt(total);
}

/* Whether every gradient has one element type (sum_squares_multi takes one). */
static int one_grad_dtype(const yp_schedule *s) {
    int first = -1;
    for (int t = 0; t < s->n_tensors; t++) {
        if (s->tensors[t].kind != YP_KIND_GRAD) continue;
        if (first < 0) first = (int)s->tensors[t].dtype;
        else if ((int)s->tensors[t].dtype != first) return 0;
    }
    return 1;
}

static double grad_norm(const yp_binding *b, yp_err *err) {
    if (b->ops->sum_squares_multi && one_grad_dtype(b->s)) return grad_norm_multi(b, err);
    double total = 0;
    for (int t = 0; t < b->s->n_tensors; t++) {
        const yp_tensor *g = &b->s->tensors[t];
        double ss = 0;
        if (g->kind != YP_KIND_GRAD) continue;
        if (b->ops->sum_squares(b->be, yp_exec_elem(g->dtype), yp_bind_tensor(b, t), g->shape.w, &ss)) {
            yp_err_set(err, "gradient norm: %s", b->be->last_error(b->be));
            return -1;
        }
        total += ss;
    }
    return sqrt(total);
}

/* The hyperparameters of weight t's update (its group's lr and decay). */
static yp_optim_hyp hyp_of(const yp_binding *b, const yp_trainer *tr, int t, float scale, float d) {
    const yp_tensor *w = &b->s->tensors[t];
    const yp_hyp *h = &tr->hyp;
    return (yp_optim_hyp){
        .lr = (float)(is_bias(w) ? h->lr_bias : h->lr),
        .momentum = (float)h->momentum,
        .beta2 = (float)h->beta2,
        .eps = (float)h->eps,
        .weight_decay = decays(w) ? (float)h->weight_decay : 0.0f,
        .decoupled = b->s->opts.optimizer == YP_OPT_ADAMW,
        .step = tr->opt_steps + 1,
        .grad_scale = scale,
        .ema_decay = d,
    };
}

/* Every trained weight's step, gradient zeroing and EMA through the backend's multi-tensor entry
 * (a few launches on a GPU rather than three per tensor). 0, or -1 with err set. */
static int step_multi(const yp_binding *b, yp_trainer *tr, float scale, float d, yp_err *err) {
    const yp_schedule *s = b->s;
    int k = 0, first = -1;
    for (int t = 0; t < s->n_tensors; t++) {
        const yp_tensor *w = &s->tensors[t];
        if (w->kind != YP_KIND_WEIGHT || w->grad < 0) continue;
        if (tr->opt_m[t] < 0) return yp_err_set(err, "%s has no optimizer state in the plan", w->name);
        const yp_optim_hyp h = hyp_of(b, tr, t, scale, d);
        first = first < 0 ? t : first;
        tr->multi[k++] = (yp_optim_tensor){yp_bind_tensor(b, t),
                                           yp_bind_tensor(b, w->grad),
                                           yp_bind_tensor(b, tr->opt_m[t]),
                                           tr->opt_v[t] >= 0 ? yp_bind_tensor(b, tr->opt_v[t]) : NULL,
                                           tr->ema[t] >= 0 ? yp_bind_tensor(b, tr->ema[t]) : NULL,
                                           w->shape.w,
                                           h.lr,
                                           h.weight_decay};
    }
    if (k == 0) return 0;
    const yp_optim_hyp h = hyp_of(b, tr, first, scale, d); /* lr and decay are per tensor */
    if (b->ops->optim_multi(b->be, YP_ELEM_F32, s->opts.optimizer != YP_OPT_SGD, k, tr->multi, &h))
        return yp_err_set(err, "optimizer step: %s", b->be->last_error(b->be));
    return 0;
}

/* The optimizer step of weight t of b; `fused` (SGD with sgd_ema_step): its gradient zeroing and
 * EMA update (decay d) in the same pass. */
static int step_param(const yp_binding *b, const yp_trainer *tr, int t, float scale, int fused, float d) {
    const yp_tensor *w = &b->s->tensors[t];
    float *p = yp_bind_tensor(b, t), *g = yp_bind_tensor(b, w->grad), *m = yp_bind_tensor(b, tr->opt_m[t]);
    const yp_optim_hyp oh = hyp_of(b, tr, t, scale, d);
    const yp_elem dt = yp_exec_elem(w->dtype);
    if (fused)
        return b->ops->sgd_ema_step(b->be, dt, p, g, m, tr->ema[t] >= 0 ? yp_bind_tensor(b, tr->ema[t]) : NULL,
                                    w->shape.w, &oh);
    if (b->s->opts.optimizer == YP_OPT_SGD) return b->ops->sgd_step(b->be, dt, p, g, m, w->shape.w, &oh);
    return b->ops->adam_step(b->be, dt, p, g, m, yp_bind_tensor(b, tr->opt_v[t]), w->shape.w, &oh);
}

int yp_exec_update(yp_exec *x, yp_err *err) {
    const yp_binding *b = &x->train;
    const yp_schedule *s = b->s;
    yp_backend *be = b->be;
    yp_trainer *tr = &x->trainer;
    double t0 = yp_profile_start(&x->prof);
    if (be->thread_init) be->thread_init(be);
    double norm = grad_norm(b, err); /* of the gradients as they are: times the loss scale S */
    if (norm < 0) return -1;
    /* GradScaler: unscale_ (the gradients times 1/S, here folded into the step's grad_scale, exact
     * for a power of two), then step only when they are finite, then update the scale */
    const float inv = tr->scaler_on ? yp_grad_scaler_inv_scale(&tr->scaler) : 1.0f;
    const int step = !tr->scaler_on || yp_grad_scaler_update(&tr->scaler, !isfinite(norm));
    norm *= inv;
    tr->last_grad_norm = norm;
    double coef = tr->hyp.max_grad_norm / (norm + 1e-6); /* torch.nn.utils.clip_grad_norm_ */
    float scale = (coef < 1.0 ? (float)coef : 1.0f) * inv;
    double d = tr->hyp.ema_decay * (1.0 - exp(-(double)(tr->updates + 1) / tr->hyp.ema_tau));
    /* every trained tensor's step, zeroing and EMA in a few launches when the backend has it;
     * else SGD, zeroing and the EMA of a tensor in one pass when it has that */
    const int multi = step && b->ops->optim_multi && !x->per_tensor_optim;
    const int fused = multi || (step && s->opts.optimizer == YP_OPT_SGD && b->ops->sgd_ema_step);
    if (multi && step_multi(b, tr, scale, (float)d, err)) return -1;
    for (int t = 0; !multi && t < s->n_tensors; t++) {
        const yp_tensor *w = &s->tensors[t];
        if (w->kind != YP_KIND_WEIGHT || w->grad < 0) continue;
        if (tr->opt_m[t] < 0) return yp_err_set(err, "%s has no optimizer state in the plan", w->name);
        if (step && step_param(b, tr, t, scale, fused, (float)d))
            return yp_err_set(err, "optimizer step of %s: %s", w->name, be->last_error(be));
        if (!fused && be->mem_set(be, yp_bind_tensor(b, w->grad), 0, (size_t)s->tensors[w->grad].bytes))
            return yp_err_set(err, "zeroing %s: %s", s->tensors[w->grad].name, be->last_error(be));
    }
    tr->updates++, tr->opt_steps += step;
    tr->lowp_stale |= step; /* the masters moved */
    for (int t = 0; t < s->n_tensors; t++) { /* a skipped step still updates the EMA, as train.py does */
        const yp_tensor *w = &s->tensors[t];
        if (w->kind != YP_KIND_WEIGHT || tr->ema[t] < 0 || (fused && w->grad >= 0)) continue;
        if (b->ops->ema_update(be, yp_exec_elem(w->dtype), yp_bind_tensor(b, tr->ema[t]), yp_bind_tensor(b, t),
                               w->shape.w, (float)d))
            return yp_err_set(err, "EMA update of %s: %s", w->name, be->last_error(be));
    }
    tr->micro = 0;
    if (be->sync(be)) return yp_err_set(err, "the update's queued work failed: %s", be->last_error(be));
    yp_profile_add(&x->prof, YP_PHASE_OPTIMIZER, -1, t0);
    return 0;
}
