/* torch_replay.c - PyTorch eager's allocation/free sequence of a pytorch-policy schedule, replayed
 * through the caching-allocator model, and AutoBatch's probe (yp_torch_replay.h). */
#include <stdlib.h>

#include "yp_torch_replay.h"

/* What the pass allocates and frees itself (weights, optimizer state, EMA and conv scratch are
 * not in the sequence; gradients and weight copies are handled apart). The input batch is the
 * pass's only when it is autocast's low-precision cast of the caller's fp32 batch. */
static int transient(const yp_tensor *t, const yp_torch_pass_opts *o) {
    switch (t->kind) {
    case YP_KIND_ACT: case YP_KIND_SAVED: case YP_KIND_ACTGRAD: case YP_KIND_RECOMPUTE: return 1;
    case YP_KIND_INPUT: return t->dtype != YP_DTYPE_F32;
    case YP_KIND_LOSS: return o->loss;
    default: return 0;
    }
}

/* The first forward step reading t and the last backward step reading it (-1 when none). */
static void copy_life(const yp_schedule *s, const yp_tensor *t, int *first, int *last) {
    *first = *last = -1;
    for (int k = 0; k < t->n_cons; k++) {
        int st = yp_tensor_consumers(s, t)[k];
        yp_phase ph = s->steps[st].phase;
        if (ph == YP_PHASE_FORWARD && (*first < 0 || st < *first)) *first = st;
        if (ph == YP_PHASE_BACKWARD && st > *last) *last = st;
    }
}

typedef struct {
    const yp_schedule *s;
    yp_torch_alloc *a;
    const yp_torch_pass_opts *o;
    int *grads, *copies, *held; /* held: the pass's own blocks */
    int *from, *to;             /* per tensor: the step before which it is allocated, after which freed */
    yp_err *err;
} pass;

static int take(pass *p, int t, int *slot) {
    return yp_torch_malloc(p->a, p->s->tensors[t].bytes, slot, p->err);
}

/* Allocations before step i: the pass's tensors and copies starting there, gradients first written there. */
static int before(pass *p, int i) {
    const yp_schedule *s = p->s;
    for (int t = 0; t < s->n_tensors; t++) {
        if (p->from[t] != i) continue;
        int *slot = s->tensors[t].kind == YP_KIND_LOWP ? &p->copies[t] : &p->held[t];
        int rc = *slot < 0 ? take(p, t, slot) : 0;
        if (rc) return rc;
    }
    const yp_step *st = &s->steps[i];
    for (int k = 0; k < st->n_out; k++) {
        int t = yp_step_outputs(s, st)[k];
        if (s->tensors[t].kind == YP_KIND_GRAD && p->grads[t] < 0) {
            int rc = take(p, t, &p->grads[t]);
            if (rc) return rc;
        }
    }
    return 0;
}

static int release(pass *p, int *slot) {
    int h = *slot;
    *slot = -1;
    return yp_torch_free(p->a, h, p->err);
}

/* Frees after step i (and, with i = -1, every block the pass still holds). */
static int after(pass *p, int i) {
    for (int t = 0; t < p->s->n_tensors; t++) {
        int last = i < 0 || p->to[t] == i;
        if (last && p->held[t] >= 0 && release(p, &p->held[t])) return -1;
        if (last && p->to[t] >= 0 && p->s->tensors[t].kind == YP_KIND_LOWP && p->copies[t] >= 0 &&
            release(p, &p->copies[t]))
            return -1;
    }
    return 0;
}

/* from/to of every tensor of the sequence (-1 for the others). */
static void lives(pass *p) {
    const yp_schedule *s = p->s;
    for (int t = 0; t < s->n_tensors; t++) {
        const yp_tensor *tt = &s->tensors[t];
        p->from[t] = p->to[t] = -1, p->held[t] = -1;
        if (tt->kind == YP_KIND_LOWP) {
            copy_life(s, tt, &p->from[t], &p->to[t]);
            if (p->o->cache_weight_copies) p->to[t] = -1;
        } else if (transient(tt, p->o)) {
            p->from[t] = tt->first, p->to[t] = tt->last;
        }
    }
}

int yp_torch_replay_pass(const yp_schedule *s, yp_torch_alloc *a, const yp_torch_pass_opts *o, int *grads,
                         int *copies, yp_err *err) {
    const yp_retention *r = s->opts.retention ? s->opts.retention : &yp_retention_table[s->opts.policy];
    if (!r->keep_all || s->opts.eval)
        return yp_err_set(err, "PyTorch replay: the schedule must be a training step under the pytorch policy");
    pass p = {s, a, o, grads, copies, NULL, NULL, NULL, err};
    p.held = malloc((size_t)s->n_tensors * sizeof(int));
    p.from = malloc((size_t)s->n_tensors * sizeof(int));
    p.to = malloc((size_t)s->n_tensors * sizeof(int));
    int rc = 0;
    if (!p.held || !p.from || !p.to) rc = yp_err_set(err, "PyTorch replay: out of memory");
    if (!rc) lives(&p);
    for (int i = 0; !rc && i < s->n_steps; i++) {
        yp_phase ph = s->steps[i].phase;
        if (ph == YP_PHASE_OPTIMIZER) continue;
        rc = before(&p, i);
        if (!rc) rc = after(&p, i);
    }
    if (p.held && p.from && p.to && after(&p, -1) && !rc) rc = -1;
    free(p.held), free(p.from), free(p.to);
    return rc;
}

/* ---------------------------------------------------------------- AutoBatch's probe */

static yp_schedule *probe_schedule(const yp_graph *g, int64_t b, int64_t img, yp_dtype act, yp_err *err) {
    yp_sched_opts so = yp_sched_opts_default(b, img, img);
    so.policy = YP_SAVE_PYTORCH;
    so.act_dtype = act;
    so.ema = 0;
    return yp_schedule_build(g, &so, err);
}

/* The gradient and copy tensors of s must be those the handles were kept for (same index, bytes). */
static int same_params(const yp_schedule *s, const int64_t *bytes, int n) {
    if (s->n_tensors != n) return 0;
    for (int t = 0; t < n; t++) {
        yp_kind k = s->tensors[t].kind;
        if ((k == YP_KIND_GRAD || k == YP_KIND_LOWP) != (bytes[t] >= 0)) return 0;
        if (bytes[t] >= 0 && bytes[t] != s->tensors[t].bytes) return 0;
    }
    return 1;
}

/* One batch of the probe: input, three passes, the reading, the input and its gradient dropped. */
static int probe_batch(const yp_schedule *s, yp_torch_alloc *a, int *grads, int *copies, yp_torch_probe_row *row,
                       yp_err *err) {
    yp_torch_pass_opts po = {0, s->opts.act_dtype != YP_DTYPE_F32};
    const yp_tensor *im = &s->tensors[s->images_t];
    int64_t in_bytes = yp_shape_numel(im->shape) * 4;
    int x = -1, xg = -1, rc = yp_torch_malloc(a, in_bytes, &x, err);
    for (int it = 0; it < 3 && !rc; it++) {
        rc = yp_torch_replay_pass(s, a, &po, grads, copies, err);
        if (!rc && it == 0) rc = yp_torch_malloc(a, in_bytes, &xg, err); /* x.grad, accumulated from then on */
    }
    if (rc) return rc > 0 ? yp_err_set(err, "PyTorch replay: out of the allocator's capacity") : -1;
    yp_torch_alloc_stats st = yp_torch_alloc_stats_get(a);
    row->batch = s->opts.batch, row->reserved = st.reserved, row->allocated = st.allocated;
    row->peak_allocated = st.peak_allocated;
    if (yp_torch_free(a, x, err) || yp_torch_free(a, xg, err)) return -1;
    yp_torch_empty_cache(a);
    yp_torch_reset_peaks(a);
    return 0;
}

int yp_torch_autobatch_probe(const yp_graph *g, int64_t img, yp_dtype act, const int64_t *batches, int n,
                             yp_torch_probe_row *rows, yp_err *err) {
    yp_torch_alloc *a = yp_torch_alloc_new(0, err);
    if (!a) return -1;
    int *grads = NULL, *copies = NULL, nt = 0, rc = 0;
    int64_t *bytes = NULL;
    for (int i = 0; i < n && !rc; i++) {
        yp_schedule *s = probe_schedule(g, batches[i], img, act, err);
        if (!s) rc = -1;
        if (!rc && i == 0) {
            nt = s->n_tensors;
            grads = malloc((size_t)nt * sizeof(int)), copies = malloc((size_t)nt * sizeof(int));
            bytes = malloc((size_t)nt * sizeof(int64_t));
            if (!grads || !copies || !bytes) rc = yp_err_set(err, "PyTorch replay: out of memory");
            for (int t = 0; !rc && t < nt; t++) {
                yp_kind k = s->tensors[t].kind;
                grads[t] = copies[t] = -1;
                bytes[t] = k == YP_KIND_GRAD || k == YP_KIND_LOWP ? s->tensors[t].bytes : -1;
            }
        }
        if (!rc && !same_params(s, bytes, nt)) rc = yp_err_set(err, "PyTorch replay: parameters differ between batches");
        if (!rc) rc = probe_batch(s, a, grads, copies, &rows[i], err);
        yp_schedule_free(s);
    }
    free(grads), free(copies), free(bytes);
    yp_torch_alloc_free(a);
    return rc;
}
