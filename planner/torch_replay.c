/* torch_replay.c - the training pass of PyTorch eager (forward, ComputeLoss,
 * backward) of a pytorch-policy schedule through the caching-allocator model
 * (yp_torch_replay_pass). */
#include <stdlib.h>
#include <string.h>

#include "torch_pass.h"

/* What the training pass allocates and frees itself. The input batch is the pass's only when it
 * is autocast's low-precision cast of the caller's fp32 batch. */
static int transient(const yp_tensor *t) {
    switch (t->kind) {
    case YP_KIND_ACT: case YP_KIND_SAVED: case YP_KIND_ACTGRAD: case YP_KIND_RECOMPUTE: return 1;
    case YP_KIND_INPUT: return t->dtype != YP_DTYPE_F32;
    default: return 0;
    }
}

static void train_lives(ytr_pass *p, const yp_torch_pass_opts *o) {
    const yp_schedule *s = p->s;
    for (int t = 0; t < s->n_tensors; t++) {
        const yp_tensor *tt = &s->tensors[t];
        if (tt->kind == YP_KIND_LOWP) {
            ytr_copy_life(s, tt, &p->from[t], &p->to[t]);
            if (o->cache_weight_copies) p->to[t] = -1;
        } else if (transient(tt)) {
            p->from[t] = tt->first, p->to[t] = tt->last;
            if (o->hold_outputs && ytr_detect_output(p, t)) p->to[t] = -1;
        }
        /* ComputeLoss makes the output gradients itself (yolo_loss) */
        if (o->loss == YP_TORCH_LOSS_YOLO && tt->kind == YP_KIND_ACTGRAD && p->from[t] == s->loss_step) p->from[t] = -1;
    }
    ytr_keep_y_list(p);
}

/* Does autocast cast parameter t (a conv or Detect weight or bias) for its step? */
static int autocast_casts(const yp_schedule *s, int t) {
    yp_role r = s->tensors[t].role;
    return s->opts.act_dtype != YP_DTYPE_F32 && (r == YP_ROLE_CONV_WEIGHT || r == YP_ROLE_CONV_BIAS);
}

/* A weight gradient written by a backward step: computed (fp16 under autocast, then cast to
 * fp32), then made .grad or added into it. */
static int weight_grad(ytr_pass *p, int t) {
    const yp_tensor *g = &p->s->tensors[t];
    int cast = g->param >= 0 && autocast_casts(p->s, g->param);
    if (cast && p->st->weights_no_grad) return 0;
    int h16 = -1, h32 = -1, rc;
    if (cast && (rc = ytr_take(p, g->bytes / 2, &h16))) return rc;
    if ((rc = ytr_take(p, g->bytes, &h32)) || (rc = ytr_release(p->a, &h16, p->err))) return rc;
    if (p->st->grads[t] < 0) p->st->grads[t] = h32;
    else if (ytr_release(p->a, &h32, p->err)) return -1;
    return 0;
}
/* A backward step: a gradient it adds to one that exists is a tensor of its own first; weight
 * gradients through weight_grad; under ComputeLoss, Detect copies each output gradient to its
 * conv's layout. Returns the blocks to free after the step in *extra (p->tmp ids). */
static int backward_extras(ytr_pass *p, int i, const yp_torch_pass_opts *o, int *extra, int *n_extra) {
    const yp_schedule *s = p->s;
    const yp_step *st = &s->steps[i];
    int rc;
    *n_extra = 0;
    for (int k = 0; k < st->n_out; k++) {
        int t = yp_step_outputs(s, st)[k];
        const yp_tensor *tt = &s->tensors[t];
        if (tt->kind == YP_KIND_GRAD) {
            if ((rc = weight_grad(p, t))) return rc;
        } else if (tt->kind == YP_KIND_ACTGRAD && tt->producer >= 0 && tt->producer < i && p->held[t] >= 0) {
            if ((rc = ytr_take_tmp(p, tt->bytes, &extra[(*n_extra)++]))) return rc;
        }
    }
    if (o->wgrad_ws > 0 && ytr_is_conv(st) && !p->st->weights_no_grad) {
        int64_t io = 0, dw = 0; /* cuDNN's weight-gradient workspace: wgrad_ws x (x + dy) bytes */
        for (int q = 0; q < st->n_out; q++) dw |= s->tensors[yp_step_outputs(s, st)[q]].kind == YP_KIND_GRAD;
        for (int q = 0; q < st->n_in; q++) {
            const yp_tensor *tt = &s->tensors[yp_step_inputs(s, st)[q]];
            if (tt->kind == YP_KIND_ACTGRAD || tt->kind == YP_KIND_SAVED || tt->kind == YP_KIND_INPUT) io += tt->bytes;
        }
        if (dw && (rc = ytr_blip(p, (int64_t)((double)io * o->wgrad_ws)))) return rc;
    }
    if (o->loss == YP_TORCH_LOSS_YOLO && i == p->detect_bwd)
        for (int l = YP_MAX_LEVELS - 1; l >= 0; l--)
            if (st->a.dy[l] >= 0 && (rc = ytr_blip(p, s->tensors[st->a.dy[l]].bytes))) return rc;
    return 0;
}

int yp_torch_replay_pass(const yp_schedule *s, yp_torch_alloc *a, const yp_torch_pass_opts *o, yp_torch_state *st,
                         yp_err *err) {
    const yp_retention *r = s->opts.retention ? s->opts.retention : &yp_retention_table[s->opts.policy];
    if (!r->keep_all || s->opts.eval)
        return yp_err_set(err, "PyTorch replay: the schedule must be a training step under the pytorch policy");
    ytr_pass p;
    int rc = ytr_pass_setup(&p, s, a, st, err);
    if (!rc && o->loss == YP_TORCH_LOSS_YOLO && (p.detect_fwd < 0 || p.detect_bwd < 0))
        rc = yp_err_set(err, "PyTorch replay: ComputeLoss needs a Detect step that trains");
    int *extra = rc ? NULL : malloc((size_t)(s->n_tensors + 1) * sizeof(int));
    if (!rc && !extra) rc = yp_err_set(err, "PyTorch replay: out of memory");
    if (!rc) train_lives(&p, o);
    for (int i = 0; !rc && i < s->n_steps; i++) {
        const yp_step *stp = &s->steps[i];
        int n_extra = 0;
        if (stp->phase == YP_PHASE_OPTIMIZER) continue;
        if (i == p.detect_fwd) rc = ytr_detect_forward(&p, i);
        if (!rc) rc = ytr_pass_before(&p, i);
        if (!rc && i == s->loss_step && o->loss == YP_TORCH_LOSS_YOLO) rc = ytr_yolo_loss(&p, o->labels);
        if (!rc && stp->phase == YP_PHASE_BACKWARD) rc = backward_extras(&p, i, o, extra, &n_extra);
        if (!rc && ytr_is_conv(stp) &&
            (st->find & (stp->phase == YP_PHASE_BACKWARD ? YP_TORCH_FIND_BWD : YP_TORCH_FIND_FWD)))
            yp_torch_empty_cache(a);
        for (int k = 0; !rc && k < n_extra; k++) rc = ytr_drop_tmp(&p, extra[k]);
        if (!rc) rc = ytr_pass_after(&p, i);
        if (!rc && i == p.detect_fwd && o->hold_outputs) rc = ytr_hold(&p);
    }
    if (!rc && ytr_pass_after(&p, -1)) rc = -1;
    if (!rc) st->find = 0;
    free(extra);
    return ytr_pass_teardown(&p, rc);
}
