/* executor.c - the arena, tensor binding (validation's through eval.c), guard canaries, weight
 * initialisation (each op's row gives its parameters' values, exec_ops.h). Every access to the
 * arena goes through the backend's memory entries (host values are staged and copied), so the
 * same code binds a host arena and a device one. */
#include <stdlib.h>
#include <string.h>

#include "exec_ops.h"

#define YP_GUARD_BYTE 0xA5

yp_hyp yp_hyp_default(yp_optimizer opt) {
    yp_hyp h;
    h.lr = opt == YP_OPT_SGD ? 0.01 : 0.001;
    h.momentum = 0.937, h.beta2 = 0.999, h.eps = 1e-8;
    h.weight_decay = 5e-4, h.max_grad_norm = 10.0;
    h.ema_decay = 0.9999, h.ema_tau = 2000.0;
    return h;
}

void *yp_exec_tensor(const yp_exec *x, int t) { return x->arena + x->offset[t]; }

static int by_offset(const void *a, const void *b) {
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* Without guards: the plan's offsets. With guards g: offset + 2g*rank + g, rank = number of
 * distinct planned offsets below it, which keeps g bytes free before and after every tensor
 * against every tensor whose planned range is disjoint from it. */
static int layout(yp_exec *x, yp_err *err) {
    const yp_plan *p = x->plan;
    int n = x->s->n_tensors;
    x->offset = malloc((size_t)n * sizeof *x->offset);
    if (!x->offset) return yp_err_set(err, "out of memory binding the arena");
    memcpy(x->offset, p->arena.offsets, (size_t)n * sizeof *x->offset);
    x->arena_bytes = p->arena_bytes;
    if (!x->guard) return 0;
    int64_t *sorted = malloc((size_t)n * sizeof *sorted);
    if (!sorted) return yp_err_set(err, "out of memory binding the arena");
    memcpy(sorted, x->offset, (size_t)n * sizeof *sorted);
    qsort(sorted, (size_t)n, sizeof *sorted, by_offset);
    int m = 0;
    for (int i = 0; i < n; i++)
        if (!m || sorted[m - 1] != sorted[i]) sorted[m++] = sorted[i];
    for (int t = 0; t < n; t++) {
        int lo = 0, hi = m; /* rank: distinct offsets strictly below */
        while (lo < hi) {
            int mid = (lo + hi) / 2;
            if (sorted[mid] < x->offset[t]) lo = mid + 1;
            else hi = mid;
        }
        x->offset[t] += 2 * x->guard * lo + x->guard;
    }
    x->arena_bytes = p->arena_bytes + 2 * x->guard * m + x->guard;
    free(sorted);
    return 0;
}

int yp_exec_guard_arm(yp_exec *x, int step, yp_err *err) {
    yp_backend *be = x->be;
    for (int t = 0; t < x->s->n_tensors && x->guard; t++) {
        const yp_tensor *tt = &x->s->tensors[t];
        if (tt->first != step) continue;
        if (be->mem_set(be, x->arena + x->offset[t] - x->guard, YP_GUARD_BYTE, (size_t)x->guard) ||
            be->mem_set(be, x->arena + x->offset[t] + tt->bytes, YP_GUARD_BYTE, (size_t)x->guard))
            return yp_err_set(err, "writing the guards of %s: %s", tt->name, be->last_error(be));
    }
    return 0;
}

/* The guard bytes before (side 0) or after (1) tensor t are intact; -1 when they cannot be read. */
static int guard_intact(const yp_exec *x, int t, int side, unsigned char *host) {
    const unsigned char *at = x->arena + x->offset[t] + (side ? x->s->tensors[t].bytes : -x->guard);
    if (x->be->mem_copy(x->be, host, at, (size_t)x->guard, YP_COPY_DEVICE_TO_HOST)) return -1;
    for (int64_t k = 0; k < x->guard; k++)
        if (host[k] != YP_GUARD_BYTE) return 0;
    return 1;
}

int yp_exec_check_guards(const yp_exec *x, int step, yp_err *err) {
    if (!x->guard) return 0;
    unsigned char *host = malloc((size_t)x->guard);
    if (!host) return yp_err_set(err, "out of memory checking guards");
    int rc = 0;
    for (int t = 0; t < x->s->n_tensors && !rc; t++) {
        const yp_tensor *tt = &x->s->tensors[t];
        if (step < tt->first || step > tt->last) continue;
        for (int side = 0; side < 2 && !rc; side++) {
            int ok = guard_intact(x, t, side, host);
            if (ok < 0) rc = yp_err_set(err, "reading the guards of %s: %s", tt->name, x->be->last_error(x->be));
            else if (!ok)
                rc = yp_err_set(err, "guard bytes of %s %s after step %d: an op wrote outside its tensor", tt->name,
                                side ? "(after)" : "(before)", step);
        }
    }
    free(host);
    return rc;
}

/* ---------------------------------------------------------------- parameter state */

/* Links every parameter to its optimizer states and EMA copy through the schedule's roles. */
static int link_state(yp_exec *x, yp_err *err) {
    const yp_schedule *s = x->s;
    int n = s->n_tensors;
    x->opt_m = malloc((size_t)n * sizeof(int)), x->opt_v = malloc((size_t)n * sizeof(int));
    x->ema = malloc((size_t)n * sizeof(int));
    if (!x->opt_m || !x->opt_v || !x->ema) return yp_err_set(err, "out of memory binding the arena");
    for (int t = 0; t < n; t++) x->opt_m[t] = x->opt_v[t] = x->ema[t] = -1;
    for (int t = 0; t < n; t++) {
        const yp_tensor *d = &s->tensors[t];
        if (d->param < 0) continue;
        if (d->role == YP_ROLE_EMA) x->ema[d->param] = t;
        if (d->role == YP_ROLE_MOMENTUM || d->role == YP_ROLE_ADAM_M) x->opt_m[d->param] = t;
        if (d->role == YP_ROLE_ADAM_V) x->opt_v[d->param] = t;
    }
    return 0;
}

int yp_exec_find_param(const yp_exec *x, const char *name) {
    for (int t = 0; t < x->s->n_tensors; t++)
        if (x->s->tensors[t].kind == YP_KIND_WEIGHT && !strcmp(x->s->tensors[t].name, name)) return t;
    return -1;
}

/* ---------------------------------------------------------------- weights */

int yp_exec_load_params(yp_exec *x, const yp_named_tensor *params, int n, yp_err *err) {
    for (int i = 0; i < n; i++) {
        int t = yp_exec_find_param(x, params[i].name);
        if (t < 0) return yp_err_set(err, "parameter %s: the plan's model has no tensor of that name", params[i].name);
        if (x->s->tensors[t].shape.w != params[i].numel)
            return yp_err_set(err, "parameter %s: %lld values given, the model's tensor has %lld", params[i].name,
                              (long long)params[i].numel, (long long)x->s->tensors[t].shape.w);
        size_t bytes = (size_t)params[i].numel * sizeof(float);
        if (x->be->mem_copy(x->be, yp_exec_tensor(x, t), params[i].data, bytes, YP_COPY_HOST_TO_DEVICE) ||
            (x->ema[t] >= 0 && x->be->mem_copy(x->be, yp_exec_tensor(x, x->ema[t]), params[i].data, bytes, YP_COPY_HOST_TO_DEVICE)))
            return yp_err_set(err, "parameter %s: %s", params[i].name, x->be->last_error(x->be));
    }
    return 0;
}

/* Zeroes the arena, then initialises every parameter on the host by its op's row (PyTorch's
 * defaults, YOLOv5's Detect priors; seeded) and copies it (and its EMA). */
static int init_weights(yp_exec *x, uint64_t seed, yp_err *err) {
    yp_backend *be = x->be;
    if (be->mem_set(be, x->arena, 0, (size_t)x->arena_bytes))
        return yp_err_set(err, "zeroing the arena: %s", be->last_error(be));
    int64_t most = 0;
    for (int t = 0; t < x->s->n_tensors; t++)
        if (x->s->tensors[t].kind == YP_KIND_WEIGHT && x->s->tensors[t].bytes > most) most = x->s->tensors[t].bytes;
    float *host = malloc((size_t)most + 1);
    if (!host) return yp_err_set(err, "out of memory staging the weights");
    uint64_t rng = seed;
    int rc = 0;
    for (int t = 0; t < x->s->n_tensors && !rc; t++) {
        const yp_tensor *w = &x->s->tensors[t];
        if (w->kind != YP_KIND_WEIGHT) continue;
        yp_exec_op_row_get(x->s->g->nodes[w->node].op)->init_param(x, t, &rng, host);
        if (be->mem_copy(be, yp_exec_tensor(x, t), host, (size_t)w->bytes, YP_COPY_HOST_TO_DEVICE) ||
            (x->ema[t] >= 0 && be->mem_copy(be, yp_exec_tensor(x, x->ema[t]), host, (size_t)w->bytes, YP_COPY_HOST_TO_DEVICE)))
            rc = yp_err_set(err, "initialising %s: %s", w->name, be->last_error(be));
    }
    free(host);
    return rc;
}

/* ---------------------------------------------------------------- init / free */

/* Each node's forward output (-1 for a BN whose output a fusion left out). */
static void mark_nodes(yp_exec *x) {
    const yp_schedule *s = x->s;
    for (int i = 0; i < s->n_steps; i++)
        if (s->steps[i].phase == YP_PHASE_FORWARD && s->steps[i].node >= 0) x->fwd_t[s->steps[i].node] = s->steps[i].a.y[0];
}

/* The first fused step of the schedule, or -1. */
static int first_fused(const yp_schedule *s) {
    for (int i = 0; i < s->n_steps; i++)
        if (s->steps[i].fused) return i;
    return -1;
}

/* The loss's configuration, and the host buffer its target assignment is staged in before
 * mem_copy takes it to loss:assign (as large as that tensor). 0, or -1 when out of memory. */
static int loss_config(yp_exec *x) {
    const yp_graph *g = x->s->g;
    float anchors[YP_LOSS_MAX_LEVELS][YP_LOSS_MAX_ANCHORS][2];
    memcpy(anchors, g->anchors, sizeof anchors);
    yp_loss_cfg_default(&x->loss, g->nc, g->nl, g->na, (const float(*)[YP_LOSS_MAX_ANCHORS][2])anchors, g->strides,
                        x->s->opts.w, x->s->opts.h);
    int assign = x->s->loss_step >= 0 ? x->s->steps[x->s->loss_step].a.loss_assign : -1;
    x->loss_stage = malloc((size_t)(assign >= 0 ? x->s->tensors[assign].bytes : 0) + 1);
    return x->loss_stage ? 0 : -1;
}

/* The schedule's element types as the backend's ops name them: the one place they are mapped.
 * I64 (pooling indices) is no element type of an op: YP_ELEM_COUNT, which every backend refuses. */
yp_elem yp_exec_elem(yp_dtype d) {
    switch (d) {
    case YP_DTYPE_F32: return YP_ELEM_F32;
    case YP_DTYPE_F16: return YP_ELEM_F16;
    case YP_DTYPE_BF16: return YP_ELEM_BF16;
    default: return YP_ELEM_COUNT;
    }
}

/* The first op entry a training step needs that the table lacks, or NULL (conv2d_backward and
 * sgd_ema_step are optional: the step runs the separate ones; bn_silu_* only for a plan that
 * fuses, which yp_exec_init checks apart). */
#define NEED_OP(f)            \
    do {                      \
        if (!o->f) return #f; \
    } while (0)
static const char *missing_op(const yp_ops *o) {
    if (!o) return "op table";
    NEED_OP(silu_forward); NEED_OP(silu_backward); NEED_OP(conv2d_scratch); NEED_OP(conv2d_forward);
    NEED_OP(conv2d_backward_data); NEED_OP(conv2d_backward_weights); NEED_OP(bn_forward_train);
    NEED_OP(bn_apply); NEED_OP(bn_backward); NEED_OP(add_forward); NEED_OP(axpy_grad);
    NEED_OP(concat_forward); NEED_OP(concat_backward); NEED_OP(upsample_forward); NEED_OP(upsample_backward);
    NEED_OP(maxpool_forward); NEED_OP(maxpool_backward); NEED_OP(space_to_depth_forward);
    NEED_OP(space_to_depth_backward); NEED_OP(sgd_step); NEED_OP(adam_step); NEED_OP(ema_update);
    NEED_OP(sum_squares); NEED_OP(loss_level);
    return NULL;
}
#undef NEED_OP

int yp_exec_init(yp_exec *x, const yp_plan *p, yp_backend *be, int64_t guard_bytes, uint64_t seed,
                 yp_err *err) {
    memset(x, 0, sizeof *x);
    x->plan = p, x->s = p->sched, x->be = be, x->ops = be->ops, x->guard = guard_bytes;
    x->hyp = yp_hyp_default(p->cand.optimizer);
    x->images_t = x->s->images_t, x->targets_t = x->s->targets_t;
    const char *missing = missing_op(x->ops);
    if (missing)
        return yp_err_set(err, "backend %s has no %s op yet, which a training step needs; use the cpu backend",
                          be->name, missing);
    int fused = first_fused(x->s);
    if (fused >= 0 && !(yp_exec_fusions(be) & YP_FUSE_BN_SILU))
        return yp_err_set(err, "the plan fuses BN and SiLU steps (step %d is %s; candidate fusions: bn_silu), but backend %s "
                          "has no bn_silu_apply and bn_silu_backward ops to run them; plan for this backend "
                          "(yp_exec_candidate_for) or without fusions", fused, yp_fused_name(x->s->steps[fused].fused),
                          be->name);
    if (x->s->opts.eval) /* the planner sizes validation with it; running it comes with validation */
        return yp_err_set(err, "the executor runs training schedules; an evaluation schedule (the planner's sizing "
                          "of validation) is not something it steps through");
    if (x->s->opts.act_dtype != YP_DTYPE_F32)
        return yp_err_set(err, "the %s backend runs fp32 plans; re-plan with --precision fp32", be->name);
    const int64_t align = p->arena.align; /* the candidate's, as the arena was packed */
    if (align < 1 || guard_bytes % align)
        return yp_err_set(err, "guard bytes must be a multiple of the plan's alignment, %lld", (long long)align);
    if (!be->alignment || align % (int64_t)be->alignment)
        return yp_err_set(err, "the plan aligns tensors to %lld bytes; the %s backend needs a multiple of %zu: re-plan "
                          "for it (yp_exec_candidate_for)", (long long)align, be->name, be->alignment);
    int n_nodes = x->s->g->n_nodes;
    x->fwd_t = calloc((size_t)n_nodes, sizeof(int));
    if (!x->fwd_t || layout(x, err) || link_state(x, err)) {
        if (!err->msg[0]) yp_err_set(err, "out of memory");
        yp_exec_free(x);
        return -1;
    }
    if (yp_exec_eval_bind(x, err)) { /* may raise arena_bytes under guards */
        yp_exec_free(x);
        return -1;
    }
    x->arena = be->mem_alloc(be, (size_t)x->arena_bytes);
    if (!x->arena) {
        yp_err_set(err, "allocating the %lld-byte arena: %s", (long long)x->arena_bytes, be->last_error(be));
        yp_exec_free(x);
        return -1;
    }
    x->eval->arena = x->arena;
    mark_nodes(x);
    if (yp_exec_prepare_steps(x, err)) {
        yp_exec_free(x);
        return -1;
    }
    if (loss_config(x)) {
        yp_err_set(err, "out of memory staging the loss's target assignment");
        yp_exec_free(x);
        return -1;
    }
    if (init_weights(x, seed, err) || yp_exec_guard_arm(x, 0, err)) {
        yp_exec_free(x);
        return -1;
    }
    return 0;
}

void yp_exec_free(yp_exec *x) {
    yp_exec_eval_free(x);
    if (x->arena && x->be) x->be->mem_free(x->be, x->arena);
    free(x->prof_s), free(x->prof_n);
    free(x->loss_stage);
    free(x->offset), free(x->fwd_t), free(x->opt_m), free(x->opt_v), free(x->ema);
    memset(x, 0, sizeof *x);
}
