/* executor.c - creates and frees an executor: the checks of the plan against the backend, the
 * training binding (binding.c), the trainer's tables (update.c) and the validation binding
 * (eval.c), the one arena they share, and the weights' initialisation (each op's row gives its
 * parameters' values, exec_ops.h) and loading. Every access to the arena goes through the
 * backend's memory entries (host values are staged and copied), so the same code serves a host
 * arena and a device one. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "exec_ops.h"

void *yp_exec_tensor(const yp_exec *x, int t) { return yp_bind_tensor(&x->train, t); }

int yp_exec_check_guards(const yp_exec *x, int step, yp_err *err) { return yp_bind_check_guards(&x->train, step, err); }

/* ---------------------------------------------------------------- weights */

int yp_exec_find_param(const yp_exec *x, const char *name) {
    const yp_schedule *s = x->train.s;
    for (int t = 0; t < s->n_tensors; t++)
        if (s->tensors[t].kind == YP_KIND_WEIGHT && !strcmp(s->tensors[t].name, name)) return t;
    return -1;
}

int yp_exec_load_params(yp_exec *x, const yp_named_tensor *params, int n, yp_err *err) {
    const yp_binding *b = &x->train;
    const int *ema = x->trainer.ema;
    for (int i = 0; i < n; i++) {
        int t = yp_exec_find_param(x, params[i].name);
        if (t < 0) return yp_err_set(err, "parameter %s: the plan's model has no tensor of that name", params[i].name);
        if (b->s->tensors[t].shape.w != params[i].numel)
            return yp_err_set(err, "parameter %s: %lld values given, the model's tensor has %lld", params[i].name,
                              (long long)params[i].numel, (long long)b->s->tensors[t].shape.w);
        size_t bytes = (size_t)params[i].numel * sizeof(float);
        if (b->be->mem_copy(b->be, yp_bind_tensor(b, t), params[i].data, bytes, YP_COPY_HOST_TO_DEVICE) ||
            (ema[t] >= 0 &&
             b->be->mem_copy(b->be, yp_bind_tensor(b, ema[t]), params[i].data, bytes, YP_COPY_HOST_TO_DEVICE)))
            return yp_err_set(err, "parameter %s: %s", params[i].name, b->be->last_error(b->be));
    }
    x->trainer.lowp_stale = 1;
    return 0;
}

int64_t yp_process_rss_bytes(void) {
    FILE *f = fopen("/proc/self/statm", "r");
    long long size = 0, resident = -1;
    long page = sysconf(_SC_PAGESIZE);
    if (!f) return -1;
    int ok = fscanf(f, "%lld %lld", &size, &resident) == 2;
    fclose(f);
    return ok && resident >= 0 && page > 0 ? (int64_t)resident * page : -1;
}

/* Zeroes the arena, then initialises every parameter on the host by its op's row (PyTorch's
 * defaults, YOLOv5's Detect priors; seeded) and copies it (and its EMA). */
static int init_weights(yp_exec *x, uint64_t seed, yp_err *err) {
    const yp_binding *b = &x->train;
    const yp_schedule *s = b->s;
    const int *ema = x->trainer.ema;
    yp_backend *be = b->be;
    x->rss_before_arena = yp_process_rss_bytes(); /* host memory of everything but the arena's pages */
    if (be->mem_set(be, b->arena, 0, (size_t)b->arena_bytes))
        return yp_err_set(err, "zeroing the arena: %s", be->last_error(be));
    int64_t most = 0;
    for (int t = 0; t < s->n_tensors; t++)
        if (s->tensors[t].kind == YP_KIND_WEIGHT && s->tensors[t].bytes > most) most = s->tensors[t].bytes;
    float *host = malloc((size_t)most + 1);
    if (!host) return yp_err_set(err, "out of memory staging the weights");
    uint64_t rng = seed;
    int rc = 0;
    for (int t = 0; t < s->n_tensors && !rc; t++) {
        const yp_tensor *w = &s->tensors[t];
        if (w->kind != YP_KIND_WEIGHT) continue;
        yp_exec_op_row_get(s->g->nodes[w->node].op)->init_param(b, t, &rng, host);
        if (be->mem_copy(be, yp_bind_tensor(b, t), host, (size_t)w->bytes, YP_COPY_HOST_TO_DEVICE) ||
            (ema[t] >= 0 &&
             be->mem_copy(be, yp_bind_tensor(b, ema[t]), host, (size_t)w->bytes, YP_COPY_HOST_TO_DEVICE)))
            rc = yp_err_set(err, "initialising %s: %s", w->name, be->last_error(be));
    }
    free(host);
    return rc;
}

/* ---------------------------------------------------------------- init / free */

/* The first fused step of the schedule, or -1. */
static int first_fused(const yp_schedule *s) {
    for (int i = 0; i < s->n_steps; i++)
        if (s->steps[i].fused) return i;
    return -1;
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

unsigned yp_exec_precisions(const yp_backend *be) {
    unsigned mask = 0;
    for (int p = 0; p < YP_PREC_COUNT && be->ops; p++)
        if (be->ops->elems & YP_ELEM_BIT(yp_exec_elem(yp_precision_dtype((yp_precision)p)))) mask |= 1u << p;
    return mask;
}

/* "fp32", "fp32, amp-fp16 and amp-bf16": the precisions of mask, for a message. */
static const char *precisions_str(unsigned mask, char *buf, size_t n) {
    buf[0] = 0;
    int k = 0, total = 0;
    for (int p = 0; p < YP_PREC_COUNT; p++) total += (mask >> p) & 1;
    for (int p = 0; p < YP_PREC_COUNT; p++) {
        if (!((mask >> p) & 1)) continue;
        size_t len = strlen(buf);
        snprintf(buf + len, n - len, "%s%s",
                 k == 0           ? ""
                 : k == total - 1 ? " and "
                                  : ", ",
                 yp_precision_name((yp_precision)p));
        k++;
    }
    return buf;
}

/* The plan runs on be: its op table has every entry the plan's steps call (their rows say which;
 * conv2d_backward and sgd_ema_step are optional: the step runs the separate ones) and the fused
 * ones where the plan fuses; a training schedule; guards and the plan's alignment that be can
 * take. 0, or -1 with err set. */
static int check_runs(const yp_plan *p, yp_backend *be, int64_t guard_bytes, yp_err *err) {
    const yp_schedule *s = p->sched;
    const char *missing = be->ops ? yp_exec_missing_entry(s, be->ops) : "op table";
    if (missing)
        return yp_err_set(err, "backend %s has no %s op yet, which a training step needs; use the cpu backend",
                          be->name, missing);
    int fused = first_fused(s);
    if (fused >= 0 && !(yp_exec_fusions(be) & YP_FUSE_BN_SILU))
        return yp_err_set(
            err,
            "the plan fuses BN and SiLU steps (step %d is %s; candidate fusions: bn_silu), but backend %s "
            "has no bn_silu_apply and bn_silu_backward ops to run them; plan for this backend "
            "(yp_exec_candidate_for) or without fusions",
            fused, yp_fused_name(s->steps[fused].fused), be->name);
    if (s->opts.eval) /* the planner sizes validation with it; running it comes with validation */
        return yp_err_set(err, "the executor runs training schedules; an evaluation schedule (the planner's sizing "
                          "of validation) is not something it steps through");
    if (!(be->ops->elems & YP_ELEM_BIT(yp_exec_elem(s->opts.act_dtype)))) {
        char have[64];
        return yp_err_set(err, "the %s backend runs %s plans; re-plan with --precision fp32", be->name,
                          precisions_str(yp_exec_precisions(be), have, sizeof have));
    }
    if (s->opts.act_dtype != YP_DTYPE_F32 && !be->ops->cast)
        return yp_err_set(err, "backend %s has no cast op, which an AMP plan needs for its fp16/bf16 weight copies",
                          be->name);
    const int64_t align = p->arena.align; /* the candidate's, as the arena was packed */
    if (align < 1 || guard_bytes % align)
        return yp_err_set(err, "guard bytes must be a multiple of the plan's alignment, %lld", (long long)align);
    if (!be->alignment || align % (int64_t)be->alignment)
        return yp_err_set(err, "the plan aligns tensors to %lld bytes; the %s backend needs a multiple of %zu: re-plan "
                          "for it (yp_exec_candidate_for)", (long long)align, be->name, be->alignment);
    return 0;
}

/* Binds training, links the trainer, binds validation (which may raise the arena's size under
 * guards), then allocates the one arena both bindings use. 0, or -1 with err set. */
static int bind_all(yp_exec *x, const yp_plan *p, yp_backend *be, int64_t guard_bytes, yp_err *err) {
    yp_binding *b = &x->train;
    if (yp_bind_train(b, p, be, guard_bytes, err) || yp_trainer_init(&x->trainer, p, err)) return -1;
    x->eval = yp_exec_eval_bind(b, err);
    if (!x->eval) return -1;
    b->arena = be->mem_alloc(be, (size_t)b->arena_bytes);
    if (!b->arena)
        return yp_err_set(err, "allocating the %lld-byte arena: %s", (long long)b->arena_bytes, be->last_error(be));
    x->eval->arena = b->arena;
    return 0;
}

int yp_exec_init(yp_exec *x, const yp_plan *p, yp_backend *be, int64_t guard_bytes, uint64_t seed,
                 yp_err *err) {
    memset(x, 0, sizeof *x);
    if (check_runs(p, be, guard_bytes, err)) return -1;
    if (bind_all(x, p, be, guard_bytes, err) || yp_exec_prepare_steps(&x->train, err) || init_weights(x, seed, err) ||
        yp_bind_guard_arm(&x->train, 0, err)) {
        yp_exec_free(x);
        return -1;
    }
    return 0;
}

void yp_exec_free(yp_exec *x) {
    yp_exec_graphs_free(x);
    yp_exec_sizes_free(x);
    yp_exec_eval_free(x->eval);
    if (x->train.arena) x->train.be->mem_free(x->train.be, x->train.arena);
    yp_exec_profile(x, 0);
    yp_trainer_free(&x->trainer);
    yp_bind_free(&x->train);
    memset(x, 0, sizeof *x);
}

void yp_exec_set_loss_hyp(yp_exec *x, const yp_loss_hyp *h) {
    const yp_candidate *c = &x->train.plan->cand;
    for (int i = -2; i < x->n_sizes + x->n_eval_sizes; i++) { /* training, validation, the added sizes */
        yp_binding *v = i == -2 ? &x->train : i == -1 ? x->eval : i < x->n_sizes ? &x->sizes[i].b
                                                                                 : &x->eval_sizes[i - x->n_sizes].b;
        if (!v) continue;
        /* train.py scales by its --img, the nominal size, whatever size a batch has */
        yp_loss_cfg_scale_gains(&v->loss, h->box, h->obj, h->cls, c->img_w, c->img_h);
        v->loss.anchor_t = (float)h->anchor_t;
        v->loss.label_smoothing = (float)h->label_smoothing;
    }
}
