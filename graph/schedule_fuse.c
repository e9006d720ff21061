/* schedule_fuse.c - the schedule's fusion pass (yp_sched_opts.fusions; yp_schedule.h says what
 * each fusion is). It runs on the built schedule with its lives: it decides where a fusion
 * applies, under exactly its conditions, rewrites those steps' operands (named and listed) so
 * that every step lists what it really reads and writes, drops the BN outputs that nothing
 * writes any more and the recompute BN steps that only fed fused SiLU steps, and computes the
 * lives again, so that liveness, the arena and the cost model see the real traffic. */
#include <stdlib.h>
#include <string.h>

#include "schedule_build.h"

/* FLOPs per element that move between steps: the BN apply (one multiply-add) runs inside each
 * fused SiLU step, and BN backward's first pass (sum(dy), sum(dy*(x - mean))) inside the SiLU
 * backward that hands it the sums. */
#define BN_APPLY_FLOPS 2
#define BN_SUMS_FLOPS 4

/* The decisions, per step and per tensor of the schedule as built. */
typedef struct {
    int n_steps, n_tensors; /* of the schedule before the pass */
    yp_fused *part;         /* per step: what it becomes */
    int *partner;           /* per fused SiLU step: the BN step applied inside it; else -1 */
    int *bn_out;            /* per fused step (and fused BN): the BN output it no longer reads or writes */
    int *sums;              /* per fused SiLU backward that hands the BN backward its sums: the sums tensor */
    char *drop_step;        /* per step: dropped (a recompute BN whose output is fused away) */
    char *drop_t;           /* per tensor: not created (a fused-away BN output) */
} decisions;

static int is_fwd(yp_phase p) { return p == YP_PHASE_FORWARD || p == YP_PHASE_RECOMPUTE; }

/* Step st's op's part in the fusion (YP_BN_SILU_*); none for a step without an op. */
static int part_of(const yp_step *st) { return st->op >= 0 ? yp_op_get((yp_op)st->op)->bn_silu : YP_BN_SILU_NONE; }

/* Can training BN step i be fused with the SiLU steps reading its output: only SiLU steps
 * (forward, recompute or backward, after it, reading it as their input) read it, none of them
 * is fused already, and the BN input and statistics live at least as long as the output (so
 * moving their reads into those steps lengthens no life). */
static int bn_silu_applies(const yp_schedule *s, const decisions *d, int i) {
    const yp_step *b = &s->steps[i];
    if (part_of(b) != YP_BN_SILU_NORM || !is_fwd(b->phase) || b->a.stats < 0 || b->a.y[0] < 0) return 0;
    const yp_tensor *y = &s->tensors[b->a.y[0]];
    if (y->producer != i || y->n_cons == 0) return 0;
    for (int k = 0; k < y->n_cons; k++) {
        int a = yp_tensor_consumers(s, y)[k];
        const yp_step *c = &s->steps[a];
        if (part_of(c) != YP_BN_SILU_ACT || a <= i || (!is_fwd(c->phase) && c->phase != YP_PHASE_BACKWARD) ||
            c->a.x[0] != b->a.y[0] || d->part[a] != YP_FUSED_NONE)
            return 0;
    }
    return s->tensors[b->a.x[0]].last >= y->last && s->tensors[b->a.stats].last >= y->last;
}

/* Marks BN step i and the SiLU steps reading its output; the BN's backward right after its
 * SiLU's, on the gradient that step writes, takes the sums. */
static void mark_bn_silu(const yp_schedule *s, decisions *d, int i) {
    const yp_step *b = &s->steps[i];
    const yp_tensor *y = &s->tensors[b->a.y[0]];
    d->drop_t[b->a.y[0]] = 1;
    d->bn_out[i] = b->a.y[0];
    if (b->phase == YP_PHASE_FORWARD) d->part[i] = YP_FUSED_BN_STATS;
    else d->drop_step[i] = 1;
    for (int k = 0; k < y->n_cons; k++) {
        int a = yp_tensor_consumers(s, y)[k];
        int bwd = s->steps[a].phase == YP_PHASE_BACKWARD;
        d->part[a] = bwd ? YP_FUSED_BN_SILU_BWD : YP_FUSED_BN_SILU;
        d->partner[a] = i, d->bn_out[a] = b->a.y[0];
        const yp_step *nb = a + 1 < s->n_steps ? &s->steps[a + 1] : NULL;
        if (bwd && nb && part_of(nb) == YP_BN_SILU_NORM && nb->phase == YP_PHASE_BACKWARD && nb->node == b->node &&
            nb->a.dy[0] == s->steps[a].a.dx[0])
            d->part[a + 1] = YP_FUSED_BN_BWD_SUMS;
    }
}

static void decide(bld *b, decisions *d) {
    const yp_schedule *s = b->s;
    if (!(s->opts.fusions & YP_FUSE_BN_SILU) || b->rules->keep_all) return;
    for (int i = 0; i < s->n_steps; i++)
        if (bn_silu_applies(s, d, i)) mark_bn_silu(s, d, i);
}

/* The sums tensor of every SiLU backward whose BN backward takes them (appended: no decision
 * about the tensors before it changes). */
static void make_sums(bld *b, decisions *d) {
    for (int i = 0; i + 1 < d->n_steps && !b->oom; i++) {
        if (d->part[i] != YP_FUSED_BN_SILU_BWD || d->part[i + 1] != YP_FUSED_BN_BWD_SUMS) continue;
        const yp_node *n = &b->g->nodes[b->s->steps[i + 1].node];
        const int64_t c = b->info[n->id].out[0].c; /* two sums per channel */
        tspec sp = {YP_ROLE_BN_SUMS, YP_KIND_ACTGRAD, YP_SCALE_CONST, YP_DTYPE_F64, sb_flat(2 * c), n->id, 0};
        d->sums[i] = sb_new_tensor(b, sp, "sums:%s%s", n->name, "");
    }
}

/* Appends t to the list being written. */
static void put(int *refs, int *n, int t) { refs[(*n)++] = t; }

/* Writes step i's lists, rewritten, at refs + *n, and renames its operands to match (steps
 * and tensors keep their indices until apply() removes the dropped ones). */
static void rewrite(bld *b, const decisions *d, int i, int *refs, int *n) {
    yp_schedule *s = b->s;
    yp_step *st = &s->steps[i];
    const yp_step *p = d->partner[i] >= 0 ? &s->steps[d->partner[i]] : NULL;
    const int *in = yp_step_inputs(s, st), *out = yp_step_outputs(s, st);
    yp_fused f = d->part[i];
    int y = d->bn_out[i];
    int64_t numel = y >= 0 ? yp_shape_numel(s->tensors[y].shape) : 0;
    int in_off = *n, out_off;
    for (int k = 0; k < st->n_in; k++) {
        if (!p || in[k] != y) {
            put(refs, n, in[k]);
            continue;
        }
        put(refs, n, p->a.x[0]), put(refs, n, p->a.gamma), put(refs, n, p->a.beta), put(refs, n, p->a.stats);
    }
    if (f == YP_FUSED_BN_BWD_SUMS) put(refs, n, st->a.bn_sums = d->sums[i - 1]);
    out_off = *n;
    for (int k = 0; k < st->n_out; k++)
        if (f != YP_FUSED_BN_STATS || out[k] != y) put(refs, n, out[k]);
    if (d->sums[i] >= 0) put(refs, n, st->a.bn_sums = d->sums[i]);
    st->in_off = in_off, st->n_in = out_off - in_off, st->out_off = out_off, st->n_out = *n - out_off;
    st->fused = f;
    if (f == YP_FUSED_BN_STATS) st->a.y[0] = -1, st->flops -= BN_APPLY_FLOPS * numel;
    if (p) {
        st->a.x[0] = -1;
        st->a.bn_x = p->a.x[0], st->a.bn_gamma = p->a.gamma, st->a.bn_beta = p->a.beta, st->a.bn_stats = p->a.stats;
        st->fused_node = p->node;
        st->flops += BN_APPLY_FLOPS * numel + (d->sums[i] >= 0 ? BN_SUMS_FLOPS * numel : 0);
        if (st->phase == YP_PHASE_RECOMPUTE) s->recompute_flops += BN_APPLY_FLOPS * numel;
    }
    if (f == YP_FUSED_BN_BWD_SUMS) st->flops -= BN_SUMS_FLOPS * yp_shape_numel(s->tensors[st->a.dy[0]].shape);
}

/* Tensor indices after the dropped ones are removed: map[t], -1 for a dropped one. */
static void renumber(yp_schedule *s, const decisions *d, int *map) {
    int m = 0;
    for (int t = 0; t < s->n_tensors; t++) {
        map[t] = t < d->n_tensors && d->drop_t[t] ? -1 : m;
        if (map[t] >= 0) s->tensors[m++] = s->tensors[t];
    }
    s->n_tensors = m;
    for (int t = 0; t < m; t++) {
        yp_tensor *x = &s->tensors[t];
        if (x->param >= 0) x->param = map[x->param];
        if (x->grad >= 0) x->grad = map[x->grad];
    }
    s->images_t = map[s->images_t], s->targets_t = map[s->targets_t];
}

/* Steps and lists rewritten into refs (n entries), dropped steps and tensors removed, every
 * index renamed; the lives are left to compute again. */
static void apply(bld *b, const decisions *d, int *refs, int *map) {
    yp_schedule *s = b->s;
    int n = 0, m = 0, loss = s->loss_step;
    for (int i = 0; i < s->n_steps; i++)
        if (!d->drop_step[i]) rewrite(b, d, i, refs, &n);
    for (int i = 0; i < s->n_steps; i++) {
        if (!d->drop_step[i]) {
            s->steps[m++] = s->steps[i];
            continue;
        }
        s->recompute_flops -= s->steps[i].flops;
        if (i < s->loss_step) loss--;
    }
    s->n_steps = m, s->loss_step = loss;
    renumber(s, d, map);
    for (int k = 0; k < n; k++) refs[k] = map[refs[k]];
    for (int i = 0; i < s->n_steps; i++) {
        int *slot = (int *)&s->steps[i].a;
        for (size_t k = 0; k < sizeof s->steps[i].a / sizeof(int); k++)
            if (slot[k] >= 0) slot[k] = map[slot[k]];
    }
    free(s->refs);
    s->refs = refs, s->n_refs = n;
    for (int t = 0; t < s->n_tensors; t++) {
        yp_tensor *x = &s->tensors[t];
        x->producer = x->first = x->last = -1, x->cons_off = x->n_cons = 0;
        if (x->kind == YP_KIND_SAVED) x->kind = YP_KIND_ACT; /* sb_compute_lives says again which are */
    }
}

void sb_fuse(bld *b) {
    yp_schedule *s = b->s;
    decisions d = {s->n_steps, s->n_tensors, NULL, NULL, NULL, NULL, NULL, NULL};
    d.part = calloc((size_t)s->n_steps, sizeof *d.part);
    d.partner = malloc((size_t)s->n_steps * sizeof *d.partner);
    d.bn_out = malloc((size_t)s->n_steps * sizeof *d.bn_out);
    d.sums = malloc((size_t)s->n_steps * sizeof *d.sums);
    d.drop_step = calloc((size_t)s->n_steps, 1);
    d.drop_t = calloc((size_t)s->n_tensors, 1);
    int *refs = NULL, *map = NULL;
    if (!d.part || !d.partner || !d.bn_out || !d.sums || !d.drop_step || !d.drop_t) goto oom;
    for (int i = 0; i < s->n_steps; i++) d.partner[i] = d.bn_out[i] = d.sums[i] = -1;
    decide(b, &d);
    make_sums(b, &d);
    if (b->oom) goto done;
    int listed = 0; /* the steps' lists: a fused SiLU reads 3 tensors more, a sums tensor is listed twice */
    for (int i = 0; i < s->n_steps; i++) listed += s->steps[i].n_in + s->steps[i].n_out + 5;
    refs = malloc((size_t)listed * sizeof *refs);
    map = malloc((size_t)s->n_tensors * sizeof *map);
    if (!refs || !map) goto oom;
    apply(b, &d, refs, map);
    s->cap_r = listed;
    refs = NULL; /* the schedule's now */
    sb_compute_lives(b);
    goto done;
oom:
    b->oom = 1;
done:
    free(refs), free(map);
    free(d.part), free(d.partner), free(d.bn_out), free(d.sums), free(d.drop_step), free(d.drop_t);
}
