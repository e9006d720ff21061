/* family.c - the unit-size schedule of a candidate structure, scaled to any size. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "yp_family.h"

/* Does t's dtype follow the activation dtype (fp32, or fp16/bf16 under AMP)? */
static int follows_act(const yp_tensor *t) {
    int act_kind = t->kind == YP_KIND_INPUT || t->kind == YP_KIND_ACT || t->kind == YP_KIND_SAVED ||
                   t->kind == YP_KIND_ACTGRAD || t->kind == YP_KIND_RECOMPUTE || t->kind == YP_KIND_WORKSPACE;
    return act_kind && t->dtype != YP_DTYPE_I64 && (t->scale == YP_SCALE_PIXELS || t->scale == YP_SCALE_BATCH_PIXELS ||
                                                    t->scale == YP_SCALE_BATCH_PIXELS2);
}

static void lin_add(yp_lin *a, const yp_lin *b, double sign) {
    for (int s = 0; s < YP_SCALE_COUNT; s++) a->fixed[s] += sign * b->fixed[s], a->act[s] += sign * b->act[s];
}

static yp_lin tensor_lin(const yp_tensor *t) {
    yp_lin l = {{0}, {0}};
    if (follows_act(t)) l.act[t->scale] = (double)t->bytes;
    else l.fixed[t->scale] = (double)t->bytes;
    return l;
}

double yp_lin_eval(const yp_lin *l, double b, double q, double labels, double act_factor) {
    double m[YP_SCALE_COUNT] = {1, q, b * q, labels, b * q * q}, v = 0;
    for (int s = 0; s < YP_SCALE_COUNT; s++) v += m[s] * (l->fixed[s] + act_factor * l->act[s]);
    return v;
}

static int dominated(const yp_lin *a, const yp_lin *b) { /* every coefficient of a <= b's */
    for (int s = 0; s < YP_SCALE_COUNT; s++)
        if (a->fixed[s] > b->fixed[s] || a->act[s] > b->act[s]) return 0;
    return 1;
}

/* Live-byte coefficients at each step (whole-step tensors skipped if skip_whole), keeping only
 * steps no other step dominates. *out is malloc'd. */
static int live_steps(const yp_schedule *s, int skip_whole, yp_lin **out, int *n_out) {
    yp_lin *delta = calloc((size_t)s->n_steps + 1, sizeof *delta), *keep = malloc((size_t)s->n_steps * sizeof *keep);
    if (!delta || !keep) {
        free(delta), free(keep);
        return -1;
    }
    for (int t = 0; t < s->n_tensors; t++) {
        const yp_tensor *tt = &s->tensors[t];
        if (skip_whole && tt->first == 0 && tt->last == s->n_steps - 1) continue;
        yp_lin l = tensor_lin(tt);
        lin_add(&delta[tt->first], &l, 1);
        lin_add(&delta[tt->last + 1], &l, -1);
    }
    yp_lin run = {{0}, {0}};
    int n = 0;
    for (int st = 0; st < s->n_steps; st++) {
        lin_add(&run, &delta[st], 1);
        int dom = 0;
        for (int k = 0; k < n && !dom; k++) dom = dominated(&run, &keep[k]);
        if (dom) continue;
        int m = 0; /* drop kept steps the new one dominates */
        for (int k = 0; k < n; k++)
            if (!dominated(&keep[k], &run)) keep[m++] = keep[k];
        keep[m++] = run, n = m;
    }
    free(delta);
    *out = keep, *n_out = n;
    return 0;
}

/* A tensor's bytes as a step moves them: a conv's weight is read as the AMP copy when there is one. */
static yp_lin operand_lin(const yp_schedule *s, const yp_step *st, const yp_tensor *t) {
    yp_lin l = tensor_lin(t);
    if (yp_cost_matrix_math(st->op) && st->phase != YP_PHASE_OPTIMIZER && yp_tensor_amp_copied(s, t))
        l.act[YP_SCALE_CONST] = l.fixed[YP_SCALE_CONST], l.fixed[YP_SCALE_CONST] = 0;
    return l;
}

/* Does the step's cost grow only with batch x pixels? */
static int pure(const yp_family_step *fs) {
    for (int k = 0; k < YP_SCALE_COUNT; k++)
        if (k != YP_SCALE_BATCH_PIXELS && (fs->flops.fixed[k] || fs->bytes.fixed[k] || fs->bytes.act[k])) return 0;
    return fs->amp_extra == 0;
}

static void add_pure(yp_family *f, const yp_family_step *fs) {
    int x = YP_SCALE_BATCH_PIXELS;
    for (int p = 0; p < YP_PREC_COUNT; p++) {
        double act = p == YP_PREC_FP32 ? 1.0 : 0.5;
        f->pure.slope_s[p][fs->phase] += yp_cost_roofline_s(&f->gpu, (yp_precision)p, fs->rate_op, fs->flops.fixed[x],
                                                            fs->bytes.fixed[x] + act * fs->bytes.act[x]);
    }
    f->pure.launches[fs->phase] += yp_cost_launches(fs->op, fs->phase);
}

static int cost_steps(const yp_schedule *s, yp_family *f) {
    f->steps = calloc((size_t)s->n_steps, sizeof *f->steps);
    if (!f->steps) return -1;
    for (int i = 0; i < s->n_steps; i++) {
        const yp_step *st = &s->steps[i];
        yp_family_step *fs = &f->steps[f->n_steps];
        memset(fs, 0, sizeof *fs);
        fs->op = st->op, fs->phase = st->phase, fs->rate_op = yp_cost_rate_op(s->g, st->op, st->node);
        int square = 0; /* a step over L x L scores (attention): its FLOPs grow with them */
        for (int k = 0; k < st->n_out; k++)
            square |= s->tensors[yp_step_outputs(s, st)[k]].scale == YP_SCALE_BATCH_PIXELS2;
        for (int k = 0; k < st->n_in; k++)
            square |= s->tensors[yp_step_inputs(s, st)[k]].scale == YP_SCALE_BATCH_PIXELS2;
        if (st->phase != YP_PHASE_LOSS)
            fs->flops.fixed[st->phase == YP_PHASE_OPTIMIZER ? YP_SCALE_CONST
                            : square                      ? YP_SCALE_BATCH_PIXELS2
                                                          : YP_SCALE_BATCH_PIXELS] = (double)st->flops;
        for (int k = 0; k < st->n_out && st->phase == YP_PHASE_LOSS; k++) { /* 20 FLOPs per buffer float */
            const yp_tensor *t = &s->tensors[yp_step_outputs(s, st)[k]];
            if (t->kind == YP_KIND_LOSS && t->scale != YP_SCALE_CONST)
                fs->flops.fixed[t->scale] += 5.0 * (double)t->bytes;
        }
        for (int k = 0; k < st->n_in; k++) {
            const yp_tensor *t = &s->tensors[yp_step_inputs(s, st)[k]];
            yp_lin l = operand_lin(s, st, t);
            lin_add(&fs->bytes, &l, 1);
            if (st->phase == YP_PHASE_OPTIMIZER && !strcmp(st->label, "optimizer") && yp_tensor_amp_copied(s, t))
                fs->amp_extra += (double)t->bytes; /* the fp16 copy is read and written: 2 x half */
        }
        for (int k = 0; k < st->n_out; k++) {
            yp_lin l = operand_lin(s, st, &s->tensors[yp_step_outputs(s, st)[k]]);
            lin_add(&fs->bytes, &l, 1);
        }
        if (pure(fs)) add_pure(f, fs);
        else f->n_steps++;
    }
    return 0;
}

/* Totals of the training schedule that do not depend on the step: whole-step bytes, the AMP
 * weight copies (trainable non-BN weights, 2 bytes per element) and the saved bytes. */
static void totals(const yp_schedule *s, yp_family *f) {
    for (int t = 0; t < s->n_tensors; t++) {
        const yp_tensor *tt = &s->tensors[t];
        if (tt->first == 0 && tt->last == s->n_steps - 1) f->persistent_fixed += (double)tt->bytes;
        if (yp_tensor_amp_copied(s, tt)) f->lowp_bytes += (double)tt->bytes / 2;
        if (tt->kind == YP_KIND_SAVED || (tt->kind == YP_KIND_INPUT && tt->last > s->loss_step)) {
            if (tt->scale == YP_SCALE_CONST) f->saved_const += (double)tt->bytes;
            else f->saved_unit[follows_act(tt)] += (double)tt->bytes;
        }
    }
}

int yp_family_build(const yp_graph *g, const yp_candidate *c, const yp_gpu *gpu, yp_family *out, yp_err *err) {
    memset(out, 0, sizeof *out);
    if (yp_candidate_check_scratch(c, err)) return -1;
    out->gpu = *gpu;
    int stride = out->stride = yp_graph_max_stride(g);
    yp_candidate u = *c;
    u.batch = 1, u.img_w = u.img_h = stride, u.precision = YP_PREC_FP32, u.multi_scale = 0, u.val_rect = 0;
    yp_sched_opts o = yp_candidate_train_opts(&u, stride);
    o.labels = 1;
    yp_schedule *s = yp_schedule_build(g, &o, err);
    if (!s) return -1;
    yp_sched_opts vo = yp_candidate_val_opts(&u, stride, g->n_layers);
    vo.batch = 1, vo.labels = 1;
    yp_schedule *v = yp_schedule_build(g, &vo, err);
    int rc = v ? 0 : -1;
    if (!rc && (live_steps(s, 0, &out->live, &out->n_live) || live_steps(v, 1, &out->val_live, &out->n_val) ||
                cost_steps(s, out)))
        rc = yp_err_set(err, "out of memory building a candidate family");
    if (!rc) totals(s, out);
    yp_schedule_free(s);
    yp_schedule_free(v);
    if (rc) yp_family_free(out);
    return rc;
}

void yp_family_free(yp_family *f) {
    free(f->live), free(f->val_live), free(f->steps);
    memset(f, 0, sizeof *f);
}

typedef struct {
    double q_train, q_val, lab_per_img_train, lab_per_img_val, act, lowp;
} scales;

static scales scales_of(const yp_graph *g, const yp_candidate *c, const yp_family *f) {
    (void)g; /* the family's own graph: its stride was taken once, at build */
    int stride = f->stride; /* this runs for every batch the search tries */
    int64_t w, h, vw, vh;
    yp_candidate_train_size(c, stride, &w, &h);
    yp_candidate_val_size(c, stride, &vw, &vh);
    scales s;
    s.q_train = (double)(w * h) / (double)(stride * stride);
    s.q_val = (double)(vw * vh) / (double)(stride * stride);
    s.lab_per_img_train = c->labels_per_image * (c->mosaic ? 4.0 : 1.0);
    s.lab_per_img_val = c->labels_per_image;
    s.act = c->precision == YP_PREC_FP32 ? 1.0 : 0.5;
    s.lowp = c->precision == YP_PREC_FP32 ? 0.0 : f->lowp_bytes;
    return s;
}

double yp_family_peak(const yp_family *f, const yp_graph *g, const yp_candidate *c, int64_t b) {
    scales k = scales_of(g, c, f);
    double peak = 0, bd = (double)b;
    for (int i = 0; i < f->n_live; i++) {
        double v = yp_lin_eval(&f->live[i], bd, k.q_train, ceil(bd * k.lab_per_img_train), k.act);
        if (v > peak) peak = v;
    }
    double val = 0;
    for (int i = 0; i < f->n_val; i++) {
        double v = yp_lin_eval(&f->val_live[i], 2 * bd, k.q_val, ceil(2 * bd * k.lab_per_img_val), k.act);
        if (v > val) val = v;
    }
    val += f->persistent_fixed;
    return (peak > val ? peak : val) + k.lowp;
}

/* Tightens *best with the batches step l allows: A + b*B <= budget, per-batch multiplier m. */
static void bound(const yp_lin *l, double q, double lab_per_img, double act, double m, double budget,
                  double *best) {
    double a = yp_lin_eval(l, 0, q, 0, act), per = yp_lin_eval(l, m, q, m * lab_per_img, act) - a;
    if (a > budget) *best = 0;
    else if (per > 0 && (budget - a) / per < *best) *best = (budget - a) / per;
}

int64_t yp_family_max_batch(const yp_family *f, const yp_graph *g, const yp_candidate *c, double budget,
                            int64_t max_batch) {
    scales k = scales_of(g, c, f);
    double best = (double)max_batch;
    budget -= k.lowp;
    for (int i = 0; i < f->n_live; i++) bound(&f->live[i], k.q_train, k.lab_per_img_train, k.act, 1, budget, &best);
    for (int i = 0; i < f->n_val; i++)
        bound(&f->val_live[i], k.q_val, k.lab_per_img_val, k.act, 2, budget - f->persistent_fixed, &best);
    int64_t b = (int64_t)floor(best);
    /* the closed form ignores rounding the label count up: step down until the exact peak fits */
    while (b > 0 && yp_family_peak(f, g, c, b) > budget + k.lowp) b--;
    return b;
}

void yp_family_timing(const yp_family *f, const yp_graph *g, const yp_candidate *c, yp_timing *out) {
    scales k = scales_of(g, c, f);
    double b = (double)c->batch, labels = ceil(b * k.lab_per_img_train), x = b * k.q_train;
    double m[YP_SCALE_COUNT] = {1, k.q_train, x, labels, x * k.q_train}, ph[YP_PHASE_COUNT] = {0};
    for (int i = 0; i < f->n_steps; i++) {
        const yp_family_step *st = &f->steps[i];
        double fl = 0, by = k.lowp > 0 ? st->amp_extra : 0;
        for (int s = 0; s < YP_SCALE_COUNT; s++)
            fl += m[s] * st->flops.fixed[s], by += m[s] * (st->bytes.fixed[s] + k.act * st->bytes.act[s]);
        ph[st->phase] += yp_cost_step_s(&f->gpu, c->precision, st->op, st->rate_op, st->phase, fl, by);
    }
    memset(out, 0, sizeof *out);
    for (int p = 0; p < YP_PHASE_COUNT; p++)
        yp_timing_add(out, (yp_phase)p,
                      ph[p] + x * f->pure.slope_s[c->precision][p] + f->pure.launches[p] * YP_LAUNCH_S);
    yp_timing_finish(out, c->batch);
}
