/* val_plan.c - validation planned into the training arena: the evaluation schedule's layout, the
 * mapping of its parameters onto training tensors, and the checker of that mapping (yp_val_plan.h). */
#include <stdlib.h>
#include <string.h>

#include "yp_val_plan.h"

#define N_PARAM_ROLES (YP_ROLE_RUNNING_VAR + 1) /* the roles yp_role_is_param accepts */

static int whole_step(const yp_schedule *s, int t) {
    return s->tensors[t].first == 0 && s->tensors[t].last == s->n_steps - 1;
}

/* The slot of parameter (node, level, role) in a table over the graph's parameters. */
static size_t param_slot(const yp_tensor *t) {
    return ((size_t)t->node * YP_MAX_LEVELS + (size_t)t->level) * N_PARAM_ROLES + (size_t)t->role;
}

/* Per training parameter slot: its tensor; per training tensor: its EMA copy (-1: none). */
typedef struct {
    int *param, *ema;
} train_index;

static int index_training(const yp_schedule *tr, train_index *ix) {
    size_t slots = (size_t)tr->g->n_nodes * YP_MAX_LEVELS * N_PARAM_ROLES;
    ix->param = malloc(slots * sizeof *ix->param);
    ix->ema = malloc((size_t)tr->n_tensors * sizeof *ix->ema);
    if (!ix->param || !ix->ema) return -1;
    for (size_t k = 0; k < slots; k++) ix->param[k] = -1;
    for (int t = 0; t < tr->n_tensors; t++) ix->ema[t] = -1;
    for (int t = 0; t < tr->n_tensors; t++) {
        const yp_tensor *x = &tr->tensors[t];
        if (yp_role_is_param(x->role) && x->node >= 0) ix->param[param_slot(x)] = t;
        if (x->role == YP_ROLE_EMA && x->param >= 0) ix->ema[x->param] = t;
    }
    return 0;
}

/* Eval tensor i: *a = the training tensor it aliases (a parameter's), or -1 for a transient one. */
static int alias_of(const yp_val_plan *v, const train_index *ix, int i, int *a, yp_err *err) {
    const yp_tensor *x = &v->sched->tensors[i];
    *a = -1;
    if (!yp_role_is_param(x->role)) {
        if (whole_step(v->sched, i) && x->bytes > 0)
            return yp_err_set(err, "validation: %s lives through the whole evaluation pass but is no parameter, so "
                              "it has no training tensor to alias", x->name);
        return 0;
    }
    int p = x->node >= 0 ? ix->param[param_slot(x)] : -1;
    *a = p >= 0 && v->reads_ema ? ix->ema[p] : p;
    if (*a < 0)
        return yp_err_set(err, "validation: parameter %s has no %s in the training schedule", x->name,
                          v->reads_ema ? "EMA copy" : "training tensor");
    return 0;
}

static int map_tensors(yp_val_plan *v, const yp_schedule *tr, const yp_arena *ta, yp_err *err) {
    const yp_schedule *e = v->sched;
    train_index ix = {NULL, NULL};
    v->alias = malloc((size_t)e->n_tensors * sizeof *v->alias);
    v->offsets = malloc((size_t)e->n_tensors * sizeof *v->offsets);
    int rc = 0;
    if (!v->alias || !v->offsets || index_training(tr, &ix)) rc = yp_err_set(err, "out of memory planning validation");
    for (int i = 0; i < e->n_tensors && !rc; i++) {
        int a;
        rc = alias_of(v, &ix, i, &a, err);
        v->alias[i] = a;
        v->offsets[i] = a >= 0 ? ta->offsets[a] : v->base + (v->arena.offsets[i] - v->arena.persistent);
    }
    free(ix.param), free(ix.ema);
    return rc;
}

int yp_val_plan_build(const yp_graph *g, const yp_candidate *c, const yp_schedule *train, const yp_arena *ta,
                      yp_val_plan *out, yp_err *err) {
    memset(out, 0, sizeof *out);
    yp_sched_opts vo = yp_candidate_val_opts(c, yp_graph_max_stride(g), g->n_layers);
    out->sched = yp_schedule_build(g, &vo, err);
    if (!out->sched || yp_liveness_compute(out->sched, c->alignment, &out->live, err) ||
        yp_arena_plan(out->sched, c->alignment, out->live.peak, &out->arena, err)) {
        yp_val_plan_free(out);
        return -1;
    }
    out->base = ta->persistent;
    out->bytes = out->base + (out->arena.size - out->arena.persistent);
    out->reads_ema = train->opts.ema;
    if (map_tensors(out, train, ta, err)) {
        yp_val_plan_free(out);
        return -1;
    }
    return 0;
}

void yp_val_plan_free(yp_val_plan *v) {
    yp_schedule_free(v->sched);
    yp_liveness_free(&v->live);
    yp_arena_free(&v->arena);
    free(v->alias), free(v->offsets);
    memset(v, 0, sizeof *v);
}

/* ---------------------------------------------------------------- checker */

typedef struct {
    int64_t off, end;
    int t;
} span;

static int by_start(const void *a, const void *b) {
    const span *x = a, *y = b;
    return (x->off > y->off) - (x->off < y->off);
}

/* The training tensors live through the whole step, sorted by offset (they share no byte: the
 * training arena's check proves that). NULL when out of memory; *n their count. */
static span *whole_step_spans(const yp_val_target *t, int *n) {
    const yp_schedule *tr = t->sched;
    span *s = malloc(((size_t)tr->n_tensors + 1) * sizeof *s);
    *n = 0;
    for (int i = 0; s && i < tr->n_tensors; i++) {
        int64_t off = t->arena->offsets[i];
        if (whole_step(tr, i) && tr->tensors[i].bytes > 0)
            s[(*n)++] = (span){off, off + yp_align_up(tr->tensors[i].bytes, t->arena->align), i};
    }
    if (s) qsort(s, (size_t)*n, sizeof *s, by_start);
    return s;
}

/* The whole-step training tensor sharing a byte with [off, end), or -1. */
static int overlapping(const span *s, int n, int64_t off, int64_t end) {
    int lo = 0, hi = n; /* the first span ending after off (sorted disjoint spans end in order too) */
    while (lo < hi) {
        int mid = (lo + hi) / 2;
        if (s[mid].end <= off) lo = mid + 1;
        else hi = mid;
    }
    return lo < n && s[lo].off < end ? s[lo].t : -1;
}

static int same_layout(const yp_tensor *a, const yp_tensor *b) {
    return a->shape.n == b->shape.n && a->shape.c == b->shape.c && a->shape.h == b->shape.h &&
           a->shape.w == b->shape.w && a->dtype == b->dtype && a->bytes == b->bytes;
}

/* Eval parameter i and training tensor a, which it aliases. */
static int check_alias(const yp_val_plan *v, const yp_val_target *t, int i, int a, unsigned char *seen, yp_err *err) {
    const yp_tensor *x = &v->sched->tensors[i], *y = &t->sched->tensors[a];
    const yp_tensor *p = y; /* the parameter the alias is, or is the EMA copy of */
    if (v->reads_ema) p = y->role == YP_ROLE_EMA && y->param >= 0 ? &t->sched->tensors[y->param] : NULL;
    if (!p || !yp_role_is_param(p->role) || p->node != x->node || p->level != x->level || p->role != x->role)
        return yp_err_set(err, "validation: %s aliases %s, which is not %s of that parameter", x->name, y->name,
                          v->reads_ema ? "the EMA copy" : "the training tensor");
    if (!same_layout(x, y))
        return yp_err_set(err, "validation: %s (%s, %lld bytes) aliases %s (%s, %lld bytes): their shapes, dtypes or "
                          "bytes differ", x->name, yp_dtype_name(x->dtype), (long long)x->bytes, y->name,
                          yp_dtype_name(y->dtype), (long long)y->bytes);
    if (!whole_step(t->sched, a))
        return yp_err_set(err, "validation: %s aliases %s, which is not live through the whole training step",
                          x->name, y->name);
    if (v->offsets[i] != t->arena->offsets[a])
        return yp_err_set(err, "validation: %s is at offset %lld, but %s, which it aliases, is at %lld", x->name,
                          (long long)v->offsets[i], y->name, (long long)t->arena->offsets[a]);
    if (seen[a]++) return yp_err_set(err, "validation: %s and another eval tensor both alias %s", x->name, y->name);
    return 0;
}

static int check_tensor(const yp_val_plan *v, const yp_val_target *t, int i, const span *ws, int n_ws,
                        unsigned char *seen, yp_err *err) {
    const yp_tensor *x = &v->sched->tensors[i];
    int a = v->alias[i];
    if (a < -1 || a >= t->sched->n_tensors)
        return yp_err_set(err, "validation: %s aliases tensor %d; the training schedule has %d", x->name, a,
                          t->sched->n_tensors);
    if (yp_role_is_param(x->role)) {
        if (a < 0) return yp_err_set(err, "validation: parameter %s aliases no training tensor", x->name);
        return check_alias(v, t, i, a, seen, err);
    }
    if (a >= 0)
        return yp_err_set(err, "validation: %s (%s) is no parameter but aliases %s", x->name, yp_role_name(x->role),
                          t->sched->tensors[a].name);
    int64_t off = v->offsets[i], end = off + yp_align_up(x->bytes, t->arena->align);
    int w = x->bytes > 0 ? overlapping(ws, n_ws, off, end) : -1;
    if (w >= 0)
        return yp_err_set(err, "validation: %s [%lld, %lld) overlaps the whole-step training tensor %s [%lld, %lld)",
                          x->name, (long long)off, (long long)end, t->sched->tensors[w].name,
                          (long long)t->arena->offsets[w],
                          (long long)(t->arena->offsets[w] + yp_align_up(t->sched->tensors[w].bytes, t->arena->align)));
    return 0;
}

int yp_val_plan_check(const yp_val_plan *v, const yp_val_target *t, yp_err *err) {
    if (!v->sched || !v->alias || !v->offsets) return yp_err_set(err, "validation: the plan has no validation pass");
    if (v->arena.align != t->arena->align)
        return yp_err_set(err, "validation: laid out at %lld-byte alignment, the training arena at %lld",
                          (long long)v->arena.align, (long long)t->arena->align);
    if (v->bytes > t->arena_bytes)
        return yp_err_set(err, "validation: needs %lld bytes, the arena has %lld", (long long)v->bytes,
                          (long long)t->arena_bytes);
    int n_ws;
    span *ws = whole_step_spans(t, &n_ws);
    unsigned char *seen = calloc((size_t)t->sched->n_tensors + 1, 1);
    int rc = !ws || !seen ? yp_err_set(err, "out of memory checking validation") : 0;
    for (int i = 0; i < v->sched->n_tensors && !rc; i++) rc = check_tensor(v, t, i, ws, n_ws, seen, err);
    free(ws), free(seen);
    if (rc) return rc;
    /* every eval tensor at its offset in the plan's arena: aligned, inside, and apart from those live with it */
    yp_arena at = {.offsets = (int64_t *)v->offsets, .align = t->arena->align, .size = t->arena_bytes};
    yp_err why;
    if (yp_arena_check(v->sched, &at, &why)) return yp_err_set(err, "validation %s", why.msg);
    return 0;
}
