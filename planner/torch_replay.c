/* torch_replay.c - PyTorch eager's allocation/free sequence of a pytorch-policy schedule, replayed
 * through the caching-allocator model: training and inference passes, ComputeLoss, and
 * AutoBatch's probe (yp_torch_replay.h). */
#include <stdlib.h>
#include <string.h>

#include "torch_internal.h"

/* ---------------------------------------------------------------- state */

int yp_torch_state_init(yp_torch_state *st, const yp_schedule *s, yp_err *err) {
    memset(st, 0, sizeof *st);
    st->n = s->n_tensors;
    st->grads = malloc((size_t)st->n * sizeof(int));
    st->copies = malloc((size_t)st->n * sizeof(int));
    if (!st->grads || !st->copies) {
        yp_torch_state_free(st);
        return yp_err_set(err, "PyTorch replay: out of memory");
    }
    for (int t = 0; t < st->n; t++) st->grads[t] = st->copies[t] = -1;
    return 0;
}

void yp_torch_state_free(yp_torch_state *st) {
    free(st->grads), free(st->copies);
    st->grads = st->copies = NULL;
    st->n = 0;
}

int ytr_release(yp_torch_alloc *a, int *slot, yp_err *err) {
    int h = *slot;
    *slot = -1;
    return yp_torch_free(a, h, err);
}

static int drop_outputs(yp_torch_state *st, yp_torch_alloc *a, yp_err *err) {
    for (int l = 0; l < st->n_outputs; l++)
        if (ytr_release(a, &st->outputs[l], err)) return -1;
    st->n_outputs = 0;
    return 0;
}

int yp_torch_state_drop(yp_torch_state *st, yp_torch_alloc *a, yp_err *err) {
    for (int t = 0; t < st->n; t++)
        if (ytr_release(a, &st->grads[t], err) || ytr_release(a, &st->copies[t], err)) return -1;
    return drop_outputs(st, a, err);
}

/* The state must serve s: same tensor count, its gradients and copies where s has them. */
static int state_fits(const yp_torch_state *st, const yp_schedule *s) {
    if (st->n != s->n_tensors) return 0;
    for (int t = 0; t < st->n; t++) {
        yp_kind k = s->tensors[t].kind;
        if ((st->grads[t] >= 0 && k != YP_KIND_GRAD) || (st->copies[t] >= 0 && k != YP_KIND_LOWP)) return 0;
    }
    return 1;
}

/* ---------------------------------------------------------------- a pass */

typedef struct {
    const yp_schedule *s;
    yp_torch_alloc *a;
    yp_torch_state *st;
    int *held;                  /* the pass's own block per tensor */
    int *from, *to;             /* per tensor: the step before which it is allocated, after which freed */
    int detect_fwd, detect_bwd; /* Detect's forward and backward steps (-1: none) */
    int *tmp, n_tmp, cap_tmp;   /* blocks the pass holds outside the schedule's tensors (loss, copies) */
    yp_err *err;
} pass;

static int take(pass *p, int64_t bytes, int *slot) { return yp_torch_malloc(p->a, bytes, slot, p->err); }

/* A block outside the schedule's tensors, remembered so that a failed pass frees it. Its index
 * in p->tmp goes to *id. */
static int take_tmp(pass *p, int64_t bytes, int *id) {
    if (p->n_tmp == p->cap_tmp) {
        int c = p->cap_tmp ? 2 * p->cap_tmp : 64;
        int *n = realloc(p->tmp, (size_t)c * sizeof *n);
        if (!n) return yp_err_set(p->err, "PyTorch replay: out of memory");
        p->tmp = n, p->cap_tmp = c;
    }
    p->tmp[p->n_tmp] = -1;
    int rc = take(p, bytes, &p->tmp[p->n_tmp]);
    *id = p->n_tmp++;
    return rc;
}

static int drop_tmp(pass *p, int id) { return id >= 0 && id < p->n_tmp ? ytr_release(p->a, &p->tmp[id], p->err) : 0; }

/* A transient: allocated and freed at once (its only effect is on the cache and the peaks). */
static int blip(pass *p, int64_t bytes) {
    int h = -1, rc = take(p, bytes, &h);
    if (rc) return rc;
    return yp_torch_free(p->a, h, p->err);
}

static int setup(pass *p, const yp_schedule *s, yp_torch_alloc *a, yp_torch_state *st, yp_err *err) {
    memset(p, 0, sizeof *p);
    p->s = s, p->a = a, p->st = st, p->err = err;
    p->detect_fwd = p->detect_bwd = -1;
    if (!state_fits(st, s)) return yp_err_set(err, "PyTorch replay: the state was made for other parameters");
    p->held = malloc((size_t)s->n_tensors * sizeof(int));
    p->from = malloc((size_t)s->n_tensors * sizeof(int));
    p->to = malloc((size_t)s->n_tensors * sizeof(int));
    if (!p->held || !p->from || !p->to) return yp_err_set(err, "PyTorch replay: out of memory");
    for (int t = 0; t < s->n_tensors; t++) p->held[t] = p->from[t] = p->to[t] = -1;
    for (int i = 0; i < s->n_steps; i++)
        if (s->steps[i].op == YP_OP_DETECT) {
            if (s->steps[i].phase == YP_PHASE_FORWARD) p->detect_fwd = i;
            if (s->steps[i].phase == YP_PHASE_BACKWARD) p->detect_bwd = i;
        }
    return 0;
}

/* Frees what the pass still holds; returns rc, or -1 if a free failed. */
static int teardown(pass *p, int rc) {
    for (int t = 0; p->held && t < p->s->n_tensors; t++)
        if (p->held[t] >= 0 && ytr_release(p->a, &p->held[t], p->err) && !rc) rc = -1;
    for (int i = 0; i < p->n_tmp; i++)
        if (drop_tmp(p, i) && !rc) rc = -1;
    free(p->held), free(p->from), free(p->to), free(p->tmp);
    return rc;
}

/* Is t a Detect output (a raw level of the forward's result)? */
static int detect_output(const pass *p, int t) {
    if (p->detect_fwd < 0) return 0;
    const yp_step *st = &p->s->steps[p->detect_fwd];
    for (int k = 0; k < st->n_out; k++)
        if (yp_step_outputs(p->s, st)[k] == t) return 1;
    return 0;
}

/* Does YOLOv5's forward keep layer l's output in its `y` list (a layer other than the next
 * reads it: the model's save list)? */
static int kept_by_forward(const yp_graph *g, int l) {
    for (int j = 0; j < g->n_layers; j++)
        for (int k = 0; k < g->layers[j].n_from; k++)
            if (g->layers[j].from[k] == l && l != j - 1) return 1;
    return 0;
}

/* The last forward step reading t (-1 when none). */
static int last_forward_reader(const yp_schedule *s, const yp_tensor *t) {
    int last = -1;
    for (int k = 0; k < t->n_cons; k++) {
        int st = yp_tensor_consumers(s, t)[k];
        if (s->steps[st].phase == YP_PHASE_FORWARD && st > last) last = st;
    }
    return last;
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

/* The outputs of the layers kept in `y` live at least until the forward returns (Detect). */
static void keep_y_list(pass *p) {
    const yp_schedule *s = p->s;
    if (p->detect_fwd < 0) return;
    for (int l = 0; l < s->g->n_layers; l++) {
        if (!kept_by_forward(s->g, l)) continue;
        int node = s->g->layers[l].output;
        for (int t = 0; t < s->n_tensors; t++) {
            const yp_tensor *tt = &s->tensors[t];
            if (tt->node == node && tt->role == YP_ROLE_VALUE && p->from[t] >= 0 && p->to[t] >= 0 &&
                p->to[t] < p->detect_fwd)
                p->to[t] = p->detect_fwd;
        }
    }
}

/* ---------------------------------------------------------------- ComputeLoss */

typedef struct {
    int64_t batch, na, nc, nl, labels, elem; /* elem: bytes of an output element */
    int64_t hw[YP_MAX_LEVELS];
} loss_shape;

static loss_shape loss_shape_of(const yp_schedule *s, int detect_fwd, int64_t labels) {
    loss_shape q = {0};
    const yp_graph *g = s->g;
    q.batch = s->opts.batch, q.na = g->na, q.nc = g->nc, q.nl = g->nl, q.labels = labels;
    q.elem = (int64_t)yp_dtype_size(s->opts.act_dtype);
    const yp_step *st = &s->steps[detect_fwd];
    for (int l = 0; l < q.nl && l < st->n_out; l++) {
        yp_shape sh = s->tensors[yp_step_outputs(s, st)[l]].shape;
        q.hw[l] = sh.h * sh.w;
    }
    return q;
}

/* Positives a level gets (every (label, anchor) pair matched, each with both neighbours). */
static int64_t loss_positives(const loss_shape *q) { return 3 * q->na * q->labels; }

#define LOSS_POS_KEPT_BYTES 64  /* b, a, gj, gi as int64 halves of two (n, 2) tensors, tbox, anchors */
#define LOSS_CIOU_TENSORS 10    /* the CIoU's saved tensors, each 4 fp32 a positive (an estimate) */

/* build_targets: its transients; the tensors it returns are pushed to p->tmp (kept[l][0..3]). */
static int build_targets(pass *p, const loss_shape *q, int kept[YP_MAX_LEVELS][4]) {
    int64_t L = q->labels, na = q->na, m = na * L, n = loss_positives(q);
    int ai, tg, rc;
    if ((rc = take_tmp(p, na * L * 4, &ai)) || (rc = blip(p, na * L * 6 * 4)) || (rc = take_tmp(p, na * L * 7 * 4, &tg)))
        return rc;
    int prev_t = -1, prev_off = -1;
    for (int l = 0; l < q->nl; l++) {
        int t, t2, t3, off;
        if ((rc = take_tmp(p, na * L * 7 * 4, &t)) || (rc = drop_tmp(p, prev_t)) || (rc = drop_tmp(p, prev_off)))
            return rc;
        for (int k = 0; k < 3 && !rc; k++) rc = blip(p, na * L * 2 * 4); /* r, 1/r, max(r, 1/r) */
        if (rc || (rc = take_tmp(p, m * 7 * 4, &t2)) || (rc = drop_tmp(p, t)) || (rc = blip(p, m * 2 * 4)) ||
            (rc = blip(p, 5 * m)) || (rc = blip(p, 5 * m * 7 * 4)) || (rc = take_tmp(p, n * 7 * 4, &t3)) ||
            (rc = drop_tmp(p, t2)) || (rc = blip(p, 5 * m * 2 * 4)) || (rc = take_tmp(p, n * 2 * 4, &off)))
            return rc;
        /* kept: a (int64), (b, c) (int64 x 2), gij (int64 x 2), tbox (fp32 x 4), anchors (fp32 x 2) */
        if ((rc = take_tmp(p, n * 8 + n * 16, &kept[l][0])) || (rc = blip(p, n * 2 * 4)) ||
            (rc = take_tmp(p, n * 16, &kept[l][1])) || (rc = take_tmp(p, n * 16, &kept[l][2])) ||
            (rc = take_tmp(p, n * 8, &kept[l][3])))
            return rc;
        prev_t = t3, prev_off = off;
    }
    if ((rc = drop_tmp(p, prev_t)) || (rc = drop_tmp(p, prev_off)) || (rc = drop_tmp(p, ai)) || (rc = drop_tmp(p, tg)))
        return rc;
    return 0;
}

/* Per level of the training loss: the blocks autograd keeps for the loss's backward. */
typedef struct {
    int obj32, tobj32;                   /* BCE's saved fp32 objectness logits and targets */
    int cls32, tcls32;                   /* BCE's saved fp32 class logits and targets */
    int ciou[LOSS_CIOU_TENSORS];         /* the box arithmetic's saved tensors */
    int kept[4];                         /* build_targets' results (indices, boxes, anchors) */
} loss_level;

/* ComputeLoss's forward under autocast (or fp32) with gradients, then its backward, which writes
 * the Detect outputs' gradients (the schedule's tensors dy[l] of Detect's backward step). */
static int yolo_loss(pass *p, int64_t labels) {
    const yp_schedule *s = p->s;
    if (p->detect_fwd < 0 || p->detect_bwd < 0) return yp_err_set(p->err, "PyTorch replay: no Detect step");
    loss_shape q = loss_shape_of(s, p->detect_fwd, labels);
    loss_level lv[YP_MAX_LEVELS];
    int kept[YP_MAX_LEVELS][4], rc, targets;
    memset(lv, -1, sizeof lv);
    int64_t n = loss_positives(&q), amp = q.elem != 4, e = q.elem, B = q.batch;
    if ((rc = take_tmp(p, q.labels * 6 * 4, &targets)) || (rc = build_targets(p, &q, kept))) return rc;
    int tobj = -1, ps = -1, tcls = -1;
    for (int l = 0; l < q.nl; l++) {
        int64_t map = B * q.na * q.hw[l];
        int nt, nps = -1, ntc = -1;
        memcpy(lv[l].kept, kept[l], sizeof kept[l]);
        if ((rc = take_tmp(p, map * e, &nt)) || (rc = drop_tmp(p, tobj))) return rc;
        tobj = nt;
        if (n > 0) {
            if ((rc = take_tmp(p, n * (q.nc + 5) * e, &nps)) || (rc = drop_tmp(p, ps))) return rc;
            ps = nps;
            for (int k = 0; k < LOSS_CIOU_TENSORS; k++)
                if ((rc = take_tmp(p, n * 4 * 4, &lv[l].ciou[k]))) return rc;
            if (q.nc > 1) {
                if ((rc = take_tmp(p, n * q.nc * e, &ntc)) || (rc = drop_tmp(p, tcls))) return rc;
                tcls = ntc;
                if ((rc = take_tmp(p, n * q.nc * 4, &lv[l].cls32)) || (rc = take_tmp(p, n * q.nc * 4, &lv[l].tcls32)))
                    return rc;
                for (int k = 0; k < 3; k++)
                    if ((rc = blip(p, n * q.nc * 4))) return rc;
            }
        }
        if ((rc = take_tmp(p, map * 4, &lv[l].obj32)) || (rc = take_tmp(p, map * 4, &lv[l].tobj32))) return rc;
        for (int k = 0; k < 3; k++)
            if ((rc = blip(p, map * 4))) return rc;
    }
    if ((rc = drop_tmp(p, targets)) || (rc = drop_tmp(p, tobj)) || (rc = drop_tmp(p, ps)) || (rc = drop_tmp(p, tcls)))
        return rc;
    /* backward, the last level first (its nodes were made last) */
    const yp_step *db = &s->steps[p->detect_bwd];
    for (int l = (int)q.nl - 1; l >= 0; l--) {
        int64_t map = B * q.na * q.hw[l];
        int dy = db->a.dy[l], g32, g16 = -1;
        if (dy < 0) return yp_err_set(p->err, "PyTorch replay: Detect level %d has no output gradient", l);
        if ((rc = take_tmp(p, map * 4, &g32))) return rc;
        if (amp && ((rc = take_tmp(p, map * e, &g16)) || (rc = drop_tmp(p, g32)))) return rc;
        if ((rc = take(p, s->tensors[dy].bytes, &p->held[dy])) || (rc = drop_tmp(p, amp ? g16 : g32)) ||
            (rc = drop_tmp(p, lv[l].obj32)) || (rc = drop_tmp(p, lv[l].tobj32)))
            return rc;
        if (n > 0) {
            if (q.nc > 1) {
                int c32, c16 = -1;
                if ((rc = take_tmp(p, n * q.nc * 4, &c32))) return rc;
                if (amp && ((rc = take_tmp(p, n * q.nc * e, &c16)) || (rc = drop_tmp(p, c32)))) return rc;
                if ((rc = drop_tmp(p, lv[l].cls32)) || (rc = drop_tmp(p, lv[l].tcls32)) ||
                    (rc = blip(p, s->tensors[dy].bytes)) || (rc = drop_tmp(p, amp ? c16 : c32)))
                    return rc;
            }
            for (int k = 0; k < LOSS_CIOU_TENSORS; k++)
                if ((rc = blip(p, n * 4 * 4)) || (rc = drop_tmp(p, lv[l].ciou[k]))) return rc;
            if ((rc = blip(p, s->tensors[dy].bytes))) return rc; /* the gathered positives' path */
        }
        for (int k = 0; k < 4; k++)
            if ((rc = drop_tmp(p, lv[l].kept[k]))) return rc;
    }
    return 0;
}

int yp_torch_replay_val_loss(const yp_schedule *s, yp_torch_alloc *a, int64_t labels, yp_err *err) {
    yp_torch_state st;
    if (yp_torch_state_init(&st, s, err)) return -1;
    pass p;
    int rc = setup(&p, s, a, &st, err);
    if (!rc && p.detect_fwd < 0) rc = yp_err_set(err, "PyTorch replay: no Detect step");
    loss_shape q = {0};
    if (!rc) q = loss_shape_of(s, p.detect_fwd, labels);
    int64_t n = loss_positives(&q), e = q.elem;
    int kept[YP_MAX_LEVELS][4], targets = -1;
    if (!rc) rc = take_tmp(&p, q.labels * 6 * 4, &targets);
    if (!rc) rc = build_targets(&p, &q, kept);
    for (int l = 0; !rc && l < q.nl; l++) {
        int64_t map = q.batch * q.na * q.hw[l];
        int tobj;
        if ((rc = take_tmp(&p, map * e, &tobj))) break;
        if (n > 0 && ((rc = blip(&p, n * (q.nc + 5) * e)) || (q.nc > 1 && (rc = blip(&p, 2 * n * q.nc * e))))) break;
        for (int k = 0; k < 3 && !rc; k++) rc = blip(&p, map * e);
        if (!rc) rc = drop_tmp(&p, tobj);
    }
    rc = teardown(&p, rc);
    yp_torch_state_free(&st);
    return rc;
}

/* ---------------------------------------------------------------- training pass */

/* What the training pass allocates and frees itself. The input batch is the pass's only when it
 * is autocast's low-precision cast of the caller's fp32 batch. */
static int transient(const yp_tensor *t) {
    switch (t->kind) {
    case YP_KIND_ACT: case YP_KIND_SAVED: case YP_KIND_ACTGRAD: case YP_KIND_RECOMPUTE: return 1;
    case YP_KIND_INPUT: return t->dtype != YP_DTYPE_F32;
    default: return 0;
    }
}

static void train_lives(pass *p, const yp_torch_pass_opts *o) {
    const yp_schedule *s = p->s;
    for (int t = 0; t < s->n_tensors; t++) {
        const yp_tensor *tt = &s->tensors[t];
        if (tt->kind == YP_KIND_LOWP) {
            copy_life(s, tt, &p->from[t], &p->to[t]);
            if (o->cache_weight_copies) p->to[t] = -1;
        } else if (transient(tt)) {
            p->from[t] = tt->first, p->to[t] = tt->last;
            if (o->hold_outputs && detect_output(p, t)) p->to[t] = -1;
        }
        /* ComputeLoss makes the output gradients itself (yolo_loss) */
        if (o->loss == YP_TORCH_LOSS_YOLO && tt->kind == YP_KIND_ACTGRAD && p->from[t] == s->loss_step) p->from[t] = -1;
    }
    keep_y_list(p);
}

/* Does autocast cast parameter t (a conv or Detect weight or bias) for its step? */
static int autocast_casts(const yp_schedule *s, int t) {
    yp_role r = s->tensors[t].role;
    return s->opts.act_dtype != YP_DTYPE_F32 && (r == YP_ROLE_CONV_WEIGHT || r == YP_ROLE_CONV_BIAS);
}

/* A weight gradient written by a backward step: computed (fp16 under autocast, then cast to
 * fp32), then made .grad or added into it. */
static int weight_grad(pass *p, int t) {
    const yp_tensor *g = &p->s->tensors[t];
    int cast = g->param >= 0 && autocast_casts(p->s, g->param);
    if (cast && p->st->weights_no_grad) return 0;
    int h16 = -1, h32 = -1, rc;
    if (cast && (rc = take(p, g->bytes / 2, &h16))) return rc;
    if ((rc = take(p, g->bytes, &h32)) || (rc = ytr_release(p->a, &h16, p->err))) return rc;
    if (p->st->grads[t] < 0) p->st->grads[t] = h32;
    else if (ytr_release(p->a, &h32, p->err)) return -1;
    return 0;
}

/* Allocations before step i: the pass's tensors starting there (a copy only when none is cached). */
static int train_before(pass *p, int i) {
    const yp_schedule *s = p->s;
    for (int t = 0; t < s->n_tensors; t++) {
        if (p->from[t] != i) continue;
        int *slot = s->tensors[t].kind == YP_KIND_LOWP ? &p->st->copies[t] : &p->held[t];
        int rc = *slot < 0 ? take(p, s->tensors[t].bytes, slot) : 0;
        if (rc) return rc;
    }
    return 0;
}

/* Frees after step i (with i = -1, every block the pass still holds). */
static int train_after(pass *p, int i) {
    for (int t = 0; t < p->s->n_tensors; t++) {
        int last = i < 0 || p->to[t] == i;
        if (last && p->held[t] >= 0 && ytr_release(p->a, &p->held[t], p->err)) return -1;
        if (last && p->to[t] >= 0 && p->s->tensors[t].kind == YP_KIND_LOWP && p->st->copies[t] >= 0 &&
            ytr_release(p->a, &p->st->copies[t], p->err))
            return -1;
    }
    return 0;
}

/* Detect's forward, level by level: the conv's output, its contiguous permuted copy (the
 * output), the conv's output freed. */
static int detect_forward(pass *p, int i) {
    const yp_step *st = &p->s->steps[i];
    for (int l = 0; l < st->n_out; l++) {
        int t = yp_step_outputs(p->s, st)[l], rc;
        int64_t bytes = p->s->tensors[t].bytes;
        int conv = -1;
        if ((rc = take_tmp(p, bytes, &conv))) return rc;
        if (p->from[t] == i && p->held[t] < 0 && (rc = take(p, bytes, &p->held[t]))) return rc;
        if ((rc = drop_tmp(p, conv))) return rc;
    }
    return 0;
}

/* After the forward has returned: the previous held outputs go, this pass's stay. */
static int hold(pass *p) {
    const yp_step *st = &p->s->steps[p->detect_fwd];
    if (drop_outputs(p->st, p->a, p->err)) return -1;
    for (int l = 0; l < st->n_out && l < YP_MAX_LEVELS; l++) {
        int t = yp_step_outputs(p->s, st)[l];
        p->st->outputs[l] = p->held[t], p->held[t] = -1;
    }
    p->st->n_outputs = st->n_out < YP_MAX_LEVELS ? st->n_out : YP_MAX_LEVELS;
    return 0;
}

/* A backward step: a gradient it adds to one that exists is a tensor of its own first; weight
 * gradients through weight_grad; under ComputeLoss, Detect copies each output gradient to its
 * conv's layout. Returns the blocks to free after the step in *extra (p->tmp ids). */
static int backward_extras(pass *p, int i, const yp_torch_pass_opts *o, int *extra, int *n_extra) {
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
            if ((rc = take_tmp(p, tt->bytes, &extra[(*n_extra)++]))) return rc;
        }
    }
    if (o->wgrad_ws > 0 && (st->op == YP_OP_CONV2D || st->op == YP_OP_DETECT) && !p->st->weights_no_grad) {
        int64_t io = 0, dw = 0; /* cuDNN's weight-gradient workspace: wgrad_ws x (x + dy) bytes */
        for (int q = 0; q < st->n_out; q++) dw |= s->tensors[yp_step_outputs(s, st)[q]].kind == YP_KIND_GRAD;
        for (int q = 0; q < st->n_in; q++) {
            const yp_tensor *tt = &s->tensors[yp_step_inputs(s, st)[q]];
            if (tt->kind == YP_KIND_ACTGRAD || tt->kind == YP_KIND_SAVED || tt->kind == YP_KIND_INPUT) io += tt->bytes;
        }
        if (dw && (rc = blip(p, (int64_t)((double)io * o->wgrad_ws)))) return rc;
    }
    if (o->loss == YP_TORCH_LOSS_YOLO && i == p->detect_bwd)
        for (int l = YP_MAX_LEVELS - 1; l >= 0; l--)
            if (st->a.dy[l] >= 0 && (rc = blip(p, s->tensors[st->a.dy[l]].bytes))) return rc;
    return 0;
}

int yp_torch_replay_pass(const yp_schedule *s, yp_torch_alloc *a, const yp_torch_pass_opts *o, yp_torch_state *st,
                         yp_err *err) {
    const yp_retention *r = s->opts.retention ? s->opts.retention : &yp_retention_table[s->opts.policy];
    if (!r->keep_all || s->opts.eval)
        return yp_err_set(err, "PyTorch replay: the schedule must be a training step under the pytorch policy");
    pass p;
    int rc = setup(&p, s, a, st, err);
    if (!rc && o->loss == YP_TORCH_LOSS_YOLO && (p.detect_fwd < 0 || p.detect_bwd < 0))
        rc = yp_err_set(err, "PyTorch replay: ComputeLoss needs a Detect step that trains");
    int *extra = rc ? NULL : malloc((size_t)(s->n_tensors + 1) * sizeof(int));
    if (!rc && !extra) rc = yp_err_set(err, "PyTorch replay: out of memory");
    if (!rc) train_lives(&p, o);
    for (int i = 0; !rc && i < s->n_steps; i++) {
        const yp_step *stp = &s->steps[i];
        int n_extra = 0;
        if (stp->phase == YP_PHASE_OPTIMIZER) continue;
        if (i == p.detect_fwd) rc = detect_forward(&p, i);
        if (!rc) rc = train_before(&p, i);
        if (!rc && i == s->loss_step && o->loss == YP_TORCH_LOSS_YOLO) rc = yolo_loss(&p, o->labels);
        if (!rc && stp->phase == YP_PHASE_BACKWARD) rc = backward_extras(&p, i, o, extra, &n_extra);
        for (int k = 0; !rc && k < n_extra; k++) rc = drop_tmp(&p, extra[k]);
        if (!rc) rc = train_after(&p, i);
        if (!rc && i == p.detect_fwd && o->hold_outputs) rc = hold(&p);
    }
    if (!rc && train_after(&p, -1)) rc = -1;
    free(extra);
    return teardown(&p, rc);
}

/* ---------------------------------------------------------------- inference pass */

static void infer_lives(pass *p, const yp_torch_infer_opts *o) {
    const yp_schedule *s = p->s;
    for (int t = 0; t < s->n_tensors; t++) {
        const yp_tensor *tt = &s->tensors[t];
        int first = tt->producer >= 0 && s->steps[tt->producer].phase == YP_PHASE_FORWARD ? tt->producer : -1;
        switch (tt->kind) {
        case YP_KIND_LOWP:
            if (o->autocast) copy_life(s, tt, &p->from[t], &p->to[t]), p->to[t] = -1;
            continue;
        case YP_KIND_INPUT:
            if (!o->autocast || tt->dtype == YP_DTYPE_F32) continue;
            p->from[t] = tt->first, p->to[t] = last_forward_reader(s, tt);
            continue;
        case YP_KIND_ACT: case YP_KIND_SAVED:
            if (first < 0 || tt->role == YP_ROLE_BN_STATS) continue; /* eval-mode BN: no batch statistics */
            p->from[t] = first;
            p->to[t] = tt->role == YP_ROLE_POOL_INDICES ? first : last_forward_reader(s, tt);
            if (p->to[t] < first) p->to[t] = first;
            if (detect_output(p, t)) p->to[t] = -1; /* returned: freed by the caller's rule */
            continue;
        default: continue;
        }
    }
    keep_y_list(p);
}

/* Before step i of an inference pass: its tensors (a copy only when none is cached). */
static int infer_before(pass *p, int i) { return train_before(p, i); }

static int infer_after(pass *p, int i) {
    for (int t = 0; t < p->s->n_tensors; t++)
        if ((i < 0 || p->to[t] == i) && p->held[t] >= 0 && ytr_release(p->a, &p->held[t], p->err)) return -1;
    return 0;
}

/* Detect's eval-mode decode of every level (models/yolo.py Detect.forward), then the concat of
 * the levels; *decoded gets the concat. */
static int decode(pass *p, int *decoded) {
    const yp_schedule *s = p->s;
    const yp_step *st = &s->steps[p->detect_fwd];
    int64_t e = (int64_t)yp_dtype_size(s->opts.act_dtype), total = 0;
    int z[YP_MAX_LEVELS], sig = -1, rc, nl = st->n_out < YP_MAX_LEVELS ? st->n_out : YP_MAX_LEVELS;
    for (int l = 0; l < nl; l++) {
        const yp_tensor *y = &s->tensors[yp_step_outputs(s, st)[l]];
        int64_t full = y->bytes, xy = yp_shape_numel(y->shape) / (s->g->nc + 5) * 2 * e;
        int ns, a1, a2, w1, w2;
        total += full;
        if ((rc = take_tmp(p, full, &ns)) || (rc = drop_tmp(p, sig))) return rc;
        sig = ns;
        /* xy = (xy * 2 + grid) * stride; wh = (wh * 2) ** 2 * anchor_grid: two live at a time */
        if ((rc = take_tmp(p, xy, &a1)) || (rc = take_tmp(p, xy, &a2)) || (rc = drop_tmp(p, a1)) ||
            (rc = take_tmp(p, xy, &a1)) || (rc = drop_tmp(p, a2)) || (rc = take_tmp(p, xy, &w1)) ||
            (rc = take_tmp(p, xy, &w2)) || (rc = drop_tmp(p, w1)) || (rc = take_tmp(p, xy, &w1)) ||
            (rc = drop_tmp(p, w2)) || (rc = take_tmp(p, full, &z[l])) || (rc = drop_tmp(p, a1)) ||
            (rc = drop_tmp(p, w1)))
            return rc;
    }
    if ((rc = take(p, total, decoded))) return rc;
    for (int l = 0; l < nl; l++)
        if ((rc = drop_tmp(p, z[l]))) return rc;
    return drop_tmp(p, sig);
}

int yp_torch_replay_infer(const yp_schedule *s, yp_torch_alloc *a, const yp_torch_infer_opts *o, yp_torch_state *st,
                          int *decoded, yp_err *err) {
    if (decoded) *decoded = -1;
    if (s->opts.eval) return yp_err_set(err, "PyTorch replay: an inference pass reads a training schedule's forward");
    pass p;
    int rc = setup(&p, s, a, st, err);
    if (!rc && p.detect_fwd < 0) rc = yp_err_set(err, "PyTorch replay: no Detect step");
    if (!rc && o->decode && !decoded) rc = yp_err_set(err, "PyTorch replay: decode needs somewhere to put the boxes");
    if (!rc) infer_lives(&p, o);
    for (int i = 0; !rc && i <= p.detect_fwd; i++) {
        if (s->steps[i].phase != YP_PHASE_FORWARD) continue;
        if (i == p.detect_fwd) rc = detect_forward(&p, i);
        if (!rc) rc = infer_before(&p, i);
        if (!rc && i == p.detect_fwd && o->decode) rc = decode(&p, decoded);
        if (!rc) rc = infer_after(&p, i);
    }
    if (!rc && o->autocast) st->weights_no_grad = 1;
    if (!rc && o->hold_outputs) rc = hold(&p);
    if (!rc && infer_after(&p, -1)) rc = -1;
    if (rc && decoded && *decoded >= 0 && ytr_release(a, decoded, err)) rc = -1;
    return teardown(&p, rc);
}

/* ---------------------------------------------------------------- AutoBatch's probe */

yp_torch_probe_opts yp_torch_probe_opts_default(yp_torch_prior prior) {
    yp_torch_probe_opts o = {prior, 1, 0, 0};
    return o;
}

yp_schedule *ytr_schedule(const yp_graph *g, int64_t b, int64_t h, int64_t w, yp_dtype act, int freeze,
                          yp_err *err) {
    yp_sched_opts so = yp_sched_opts_default(b, h, w);
    so.policy = YP_SAVE_PYTORCH;
    so.act_dtype = act;
    so.freeze = freeze;
    so.ema = 0;
    return yp_schedule_build(g, &so, err);
}

int ytr_model_alloc(const yp_schedule *s, yp_torch_alloc *a, int half, ytr_model *m, yp_err *err) {
    m->n = s->n_tensors * 2;
    m->h = malloc((size_t)m->n * sizeof(int));
    if (!m->h) return yp_err_set(err, "PyTorch replay: out of memory");
    for (int i = 0; i < m->n; i++) m->h[i] = -1;
    for (int t = 0; t < s->n_tensors; t++) {
        const yp_tensor *tt = &s->tensors[t];
        if (tt->kind != YP_KIND_WEIGHT) continue;
        int rc = yp_torch_malloc(a, half ? tt->bytes / 2 : tt->bytes, &m->h[t], err);
        if (!rc && tt->role == YP_ROLE_RUNNING_VAR) rc = yp_torch_malloc(a, 8, &m->h[s->n_tensors + t], err);
        if (rc) return rc;
    }
    return 0;
}

int ytr_model_convert(const yp_schedule *s, yp_torch_alloc *a, int to_half, ytr_model *m, yp_err *err) {
    for (int t = 0; t < s->n_tensors; t++) {
        if (m->h[t] < 0) continue;
        int64_t b = s->tensors[t].bytes;
        int nh = -1, rc = yp_torch_malloc(a, to_half ? b / 2 : b, &nh, err);
        if (rc) return rc;
        if (ytr_release(a, &m->h[t], err)) return -1;
        m->h[t] = nh;
    }
    return 0;
}

int ytr_model_drop(ytr_model *m, yp_torch_alloc *a, yp_err *err) {
    int rc = 0;
    for (int i = 0; m->h && i < m->n; i++)
        if (m->h[i] >= 0 && ytr_release(a, &m->h[i], err)) rc = -1;
    free(m->h);
    m->h = NULL;
    return rc;
}

/* check_amp: AutoShape's batch-1 inference of a 640x480 image (img x 3/4 img), in fp32, then
 * under autocast (its cached copies go when the context exits). */
int ytr_check_amp(const yp_graph *g, int64_t img, yp_torch_alloc *a, yp_err *err) {
    int64_t h = (img * 3 / 4 + 31) / 32 * 32;
    yp_schedule *f32 = ytr_schedule(g, 1, h, img, YP_DTYPE_F32, 0, err), *f16 = NULL;
    if (!f32) return -1;
    f16 = ytr_schedule(g, 1, h, img, YP_DTYPE_F16, 0, err);
    yp_torch_state s32 = {0}, s16 = {0};
    int rc = f16 ? 0 : -1, dec = -1;
    if (!rc) rc = yp_torch_state_init(&s32, f32, err);
    if (!rc) rc = yp_torch_state_init(&s16, f16, err);
    yp_torch_infer_opts io = {0, 1, 0};
    if (!rc) rc = yp_torch_replay_infer(f32, a, &io, &s32, &dec, err);
    if (!rc) rc = ytr_release(a, &dec, err);
    io.autocast = 1;
    if (!rc) rc = yp_torch_replay_infer(f16, a, &io, &s16, &dec, err);
    if (!rc) rc = ytr_release(a, &dec, err);
    if (!rc) rc = yp_torch_state_drop(&s16, a, err);
    yp_torch_state_free(&s32), yp_torch_state_free(&s16);
    yp_schedule_free(f32), yp_schedule_free(f16);
    return rc;
}

/* What train.py holds when AutoBatch starts (yp_torch_prior); the blocks go to m[0..2]. */
static int prior_state(const yp_graph *g, const yp_schedule *s, int64_t img, yp_torch_prior prior, yp_torch_alloc *a,
                       ytr_model m[3], yp_err *err) {
    if (prior == YP_TORCH_PRIOR_NONE) return 0;
    int rc = ytr_model_alloc(s, a, 0, &m[0], err);
    if (!rc && prior == YP_TORCH_PRIOR_V6) {
        rc = ytr_model_alloc(s, a, 1, &m[1], err);         /* torch.load(map_location=device): fp16 */
        if (!rc) rc = ytr_model_convert(s, a, 0, &m[1], err); /* ckpt['model'].float() */
    }
    if (!rc && prior == YP_TORCH_PRIOR_HEAD) rc = ytr_check_amp(g, img, a, err);
    if (!rc) rc = ytr_model_alloc(s, a, 0, &m[2], err); /* AutoBatch's deepcopy(model) */
    return rc;
}

/* One batch of the probe: the input, thop's forward, three passes, the reading, the input and
 * its gradient dropped, empty_cache. */
static int probe_batch(const yp_schedule *s, const yp_torch_probe_opts *po, yp_torch_alloc *a, yp_torch_state *st,
                       yp_torch_probe_row *row, yp_err *err) {
    yp_torch_pass_opts pass_o = {YP_TORCH_LOSS_SUM, 0, s->opts.act_dtype != YP_DTYPE_F32, 1, 0};
    const yp_tensor *im = &s->tensors[s->images_t];
    int64_t in_bytes = yp_shape_numel(im->shape) * 4, lowp = yp_shape_numel(im->shape) * 2;
    int x = -1, xg = -1, dec = -1, rc = yp_torch_malloc(a, in_bytes, &x, err);
    if (!rc && po->thop) {
        yp_torch_infer_opts io = {s->opts.act_dtype != YP_DTYPE_F32, 1, 0};
        rc = yp_torch_replay_infer(s, a, &io, st, &dec, err);
        if (!rc) rc = ytr_release(a, &dec, err);
        if (!rc && po->cast_fix) st->weights_no_grad = 0;
    }
    for (int it = 0; it < 3 && !rc; it++) {
        rc = yp_torch_replay_pass(s, a, &pass_o, st, err);
        /* the image's gradient: conv 0's (fp16 under autocast), cast to fp32, then x.grad or added to it */
        int g16 = -1, g32 = -1;
        if (!rc && pass_o.cache_weight_copies) rc = yp_torch_malloc(a, lowp, &g16, err);
        if (!rc) rc = yp_torch_malloc(a, in_bytes, &g32, err);
        if (!rc) rc = ytr_release(a, &g16, err);
        if (!rc && xg < 0) xg = g32, g32 = -1;
        if (!rc) rc = ytr_release(a, &g32, err);
    }
    if (rc > 0) { /* out of memory: profile() records None, empty_cache, the next batch */
        *row = (yp_torch_probe_row){s->opts.batch, 0, 0, 0, 1};
        yp_torch_empty_cache(a);
        if (yp_torch_free(a, x, err) || yp_torch_free(a, xg, err)) return -1;
        yp_torch_reset_peaks(a);
        return 0;
    }
    if (rc) return -1;
    yp_torch_alloc_stats ast = yp_torch_alloc_stats_get(a);
    row->batch = s->opts.batch, row->reserved = ast.reserved, row->allocated = ast.allocated;
    row->peak_allocated = ast.peak_allocated, row->failed = 0;
    /* empty_cache runs while x and x.grad are alive: the loop rebinds x only at the next batch */
    yp_torch_empty_cache(a);
    if (yp_torch_free(a, x, err) || yp_torch_free(a, xg, err)) return -1;
    yp_torch_reset_peaks(a);
    return 0;
}

int yp_torch_autobatch_probe(const yp_graph *g, int64_t img, yp_dtype act, const yp_torch_probe_opts *po,
                             const int64_t *batches, int n, yp_torch_probe_row *rows, yp_torch_probe_start *start,
                             yp_err *err) {
    if (n < 1) return yp_err_set(err, "AutoBatch probe: no batch sizes");
    yp_torch_alloc *a = yp_torch_alloc_new(po->capacity, err);
    if (!a) return -1;
    yp_torch_state st = {0};
    ytr_model m[3] = {{NULL, 0}, {NULL, 0}, {NULL, 0}};
    yp_schedule *s = ytr_schedule(g, batches[0], img, img, act, 0, err);
    int rc = s ? yp_torch_state_init(&st, s, err) : -1;
    if (!rc) rc = prior_state(g, s, img, po->prior, a, m, err);
    if (rc > 0) rc = yp_err_set(err, "AutoBatch probe: the model itself does not fit in the card's memory");
    if (!rc && start) {
        yp_torch_alloc_stats ast = yp_torch_alloc_stats_get(a);
        start->reserved = ast.reserved, start->allocated = ast.allocated;
    }
    if (!rc) yp_torch_reset_peaks(a);
    for (int i = 0; i < n && !rc; i++) {
        if (i > 0) {
            yp_schedule_free(s);
            s = ytr_schedule(g, batches[i], img, img, act, 0, err);
            if (!s) rc = -1;
            else if (s->n_tensors != st.n) rc = yp_err_set(err, "AutoBatch probe: parameters differ between batches");
        }
        if (!rc) rc = probe_batch(s, po, a, &st, &rows[i], err);
    }
    for (int k = 0; k < 3; k++) ytr_model_drop(&m[k], a, err);
    yp_torch_state_free(&st);
    yp_schedule_free(s);
    yp_torch_alloc_free(a);
    return rc;
}
