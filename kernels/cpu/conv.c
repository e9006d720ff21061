/* conv.c - conv2d forward, backward-data and backward-weights on the CPU through oneDNN (Debian's
 * libdnnl): NHWC activations and OIHW weights as the caller keeps them, every byte of scratch the
 * library needs taken from the plan's workspace tensors (oneDNN's user-scratchpad mode), so no
 * conv allocates tensor memory.
 *
 * Why oneDNN rather than im2col + sgemm: its direct (brgemm / jit) convolutions read NHWC in place
 * and run at 150-300 GFLOP/s on this machine's AVX-512 cores, and its Winograd ones faster still
 * (conv_build.c), where im2col + Debian's OpenBLAS (which does not recognise the CPU and falls
 * back to SSE3 kernels) ran at ~50 (bench/README.md).
 *
 * Per distinct conv (descriptor, bias) an entry of the instance caches its primitives
 * (conv_dnnl.h), built once by yp_cpu_conv2d_prepare: the executor calls it for every conv before
 * the first step, so no op call builds anything (an op met without it builds its entry on first
 * use). yp_cpu_conv2d_scratch only asks: it reads a built entry, or sizes a dry one (primitive
 * descriptors only) that it drops. Per op:
 *   forward          weights (and, for Winograd, x) reordered into `wt`, the conv, y out
 *   backward-data    beta == 0, or a primitive whose dx goes through the scratch (the reorder out
 *                    adds): the whole batch. Otherwise (dx written in place; oneDNN's backward
 *                    has no accumulate): an ungrouped 1x1 conv as one matmul that adds into
 *                    dx, any other one image at a time into `ws`, then dx = beta*dx + it
 *   backward-weights the weight and bias gradients into `wt`, then reordered out adding into dw
 * Scratch per stage (yp_cpu_conv2d_scratch): `fixed` bytes = the largest primitive's scratch of
 * the stage; `per_image` = one image of dx when the one-image form exists. oneDNN threads with
 * OpenMP; its scratchpad sizes depend on the thread count at build time, so every build runs
 * with the instance's count (build()), whatever the caller's setting. */
#include <omp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conv_dnnl.h"

#define MAX_ENTRIES 1024

int yp_cpu_conv_create(yp_cpu_backend *cb, char *why, size_t why_len) {
    yp_cpu_conv *c = calloc(1, sizeof *c);
    dnnl_status_t st = dnnl_out_of_memory;
    const char *what = "state";
    if (c) {
        what = "engine";
        st = dnnl_engine_create(&c->engine, dnnl_cpu, 0);
        if (st == dnnl_success)
            what = "stream", st = dnnl_stream_create(&c->stream, c->engine, dnnl_stream_default_flags);
    }
    cb->conv = c;
    if (st == dnnl_success) return 0;
    if (why && why_len) snprintf(why, why_len, "cpu backend: oneDNN %s: %s", what, dnnl_status2str(st));
    yp_cpu_conv_destroy(cb);
    return -1;
}

void yp_cpu_conv_destroy(yp_cpu_backend *cb) {
    yp_cpu_conv *c = cb->conv;
    if (!c) return;
    for (int i = 0; i < c->n_entries; i++) {
        yp_conv_entry_release(c->entries[i]);
        free(c->entries[i]);
    }
    free(c->entries);
    if (c->stream) dnnl_stream_destroy(c->stream);
    if (c->engine) dnnl_engine_destroy(c->engine);
    free(c);
    cb->conv = NULL;
}

static int conv_check(const char *op, const yp_conv_desc *d) {
    if (!d) return yp_cpu_fail("%s: NULL descriptor", op);
    if (yp_cpu_check_elem(op, d->dtype) || yp_cpu_check_elem(op, d->wdtype)) return -1;
    if (d->groups < 1 || d->in.c % d->groups || d->out.c % d->groups)
        return yp_cpu_fail("%s: groups %d must be >= 1 and divide c_in %lld and c_out %lld", op, d->groups,
                           (long long)d->in.c, (long long)d->out.c);
    if (d->kh < 1 || d->kw < 1 || d->sh < 1 || d->sw < 1 || d->ph < 0 || d->pw < 0)
        return yp_cpu_fail("%s: bad kernel %dx%d / stride %dx%d / padding %dx%d", op, d->kh, d->kw, d->sh, d->sw,
                           d->ph, d->pw);
    if (yp_cpu_check_dims(op, "input", d->in) || yp_cpu_check_dims(op, "output", d->out)) return -1;
    int64_t oh = (d->in.h + 2 * d->ph - d->kh) / d->sh + 1, ow = (d->in.w + 2 * d->pw - d->kw) / d->sw + 1;
    if (d->in.h + 2 * d->ph < d->kh || d->in.w + 2 * d->pw < d->kw || d->out.h != oh || d->out.w != ow ||
        d->out.n != d->in.n)
        return yp_cpu_fail("%s: output %lldx%lldx%lld does not follow from input %lldx%lldx%lld with k %dx%d "
                           "s %dx%d p %dx%d",
                           op, (long long)d->out.n, (long long)d->out.h, (long long)d->out.w,
                           (long long)d->in.n, (long long)d->in.h, (long long)d->in.w, d->kh, d->kw, d->sh, d->sw,
                           d->ph, d->pw);
    return 0;
}

static int same_desc(const yp_conv_desc *a, const yp_conv_desc *b) {
    return a->in.n == b->in.n && a->in.h == b->in.h && a->in.w == b->in.w && a->in.c == b->in.c &&
           a->out.n == b->out.n && a->out.h == b->out.h && a->out.w == b->out.w && a->out.c == b->out.c &&
           a->kh == b->kh && a->kw == b->kw && a->sh == b->sh && a->sw == b->sw && a->ph == b->ph && a->pw == b->pw &&
           a->groups == b->groups && a->dtype == b->dtype;
}

/* Builds e's stage (dry: sizes only) with the instance's OpenMP thread count, which oneDNN reads
 * when it sizes its scratchpad; the caller's count is restored after. */
static int build(const char *op, yp_cpu_backend *cb, conv_entry *e, yp_conv_stage stage, int dry) {
    int caller = omp_get_max_threads();
    if (caller != cb->threads) omp_set_num_threads(cb->threads);
    int rc = yp_conv_build(op, cb->conv->engine, e, stage, dry);
    if (caller != cb->threads) omp_set_num_threads(caller);
    return rc;
}

/* The entry of d with this bias (exactly) and `stage` built, or NULL. Builds nothing. */
static const conv_entry *entry_find(const yp_cpu_conv *c, const yp_conv_desc *d, int bias, yp_conv_stage stage) {
    for (int i = 0; i < c->n_entries; i++) {
        const conv_entry *e = c->entries[i];
        if (e->bias == bias && (stage == YP_CONV_FORWARD ? e->have_fwd : e->have_bwd) && same_desc(&e->d, d))
            return e;
    }
    return NULL;
}

/* The entry of d with `stage` built, or NULL with the reason recorded. bias -1: either (backward-
 * data does not depend on it; an entry already built is taken first, else one without bias). */
static conv_entry *entry_get(const char *op, yp_cpu_backend *cb, const yp_conv_desc *d, int bias,
                             yp_conv_stage stage) {
    if (conv_check(op, d)) return NULL;
    yp_cpu_conv *c = cb->conv;
    conv_entry *e = NULL;
    for (int i = 0; i < c->n_entries && !e; i++)
        if ((c->entries[i]->bias == bias || (bias < 0 && c->entries[i]->have_bwd)) && same_desc(&c->entries[i]->d, d))
            e = c->entries[i];
    if (bias < 0) bias = 0;
    for (int i = 0; i < c->n_entries && !e; i++)
        if (c->entries[i]->bias == bias && same_desc(&c->entries[i]->d, d)) e = c->entries[i];
    if (!e) {
        if (c->n_entries == MAX_ENTRIES) {
            yp_cpu_fail("%s: more than %d distinct convolutions", op, MAX_ENTRIES);
            return NULL;
        }
        if (c->n_entries == c->cap_entries) {
            int cap = c->cap_entries ? 2 * c->cap_entries : 64;
            conv_entry **grown = realloc(c->entries, (size_t)cap * sizeof *grown);
            if (!grown) {
                yp_cpu_fail("%s: out of memory", op);
                return NULL;
            }
            c->entries = grown, c->cap_entries = cap;
        }
        e = calloc(1, sizeof *e);
        if (!e) {
            yp_cpu_fail("%s: out of memory", op);
            return NULL;
        }
        e->d = *d, e->bias = bias;
        c->entries[c->n_entries++] = e;
    }
    if (stage == YP_CONV_FORWARD && !e->have_fwd) {
        if (build(op, cb, e, stage, 0)) return NULL;
        e->have_fwd = 1;
    }
    if (stage == YP_CONV_BACKWARD && !e->have_bwd) {
        if (build(op, cb, e, stage, 0)) return NULL;
        e->have_bwd = 1;
    }
    return e;
}

int yp_cpu_conv2d_prepare(yp_backend *be, const yp_conv_desc *d, int has_bias, yp_conv_stage stage) {
    return entry_get("conv2d prepare", yp_cpu_of(be), d, has_bias != 0, stage) ? 0 : -1;
}

int yp_cpu_conv2d_scratch(yp_backend *be, const yp_conv_desc *d, int has_bias, yp_conv_stage stage,
                          int64_t *per_image, int64_t *fixed) {
    static const char op[] = "conv2d scratch";
    yp_cpu_backend *cb = yp_cpu_of(be);
    *per_image = *fixed = 0;
    if (conv_check(op, d)) return -1;
    const conv_entry *e = entry_find(cb->conv, d, has_bias != 0, stage);
    conv_entry dry; /* not built yet: size one that holds nothing, and drop it */
    if (!e) {
        memset(&dry, 0, sizeof dry);
        dry.d = *d, dry.bias = has_bias != 0;
        if (build(op, cb, &dry, stage, 1)) return -1;
        e = &dry;
    }
    size_t f = 0;
    if (stage == YP_CONV_FORWARD) {
        f = e->fwd.bytes;
    } else {
        f = e->bwd_data.bytes > e->bwd_weights.bytes ? e->bwd_data.bytes : e->bwd_weights.bytes;
        f = e->bwd_data1.bytes > f ? e->bwd_data1.bytes : f;
        f = e->bwd_data_add.bytes > f ? e->bwd_data_add.bytes : f;
        if (e->bwd_data1.present) *per_image = d->in.h * d->in.w * d->in.c;
    }
    *fixed = (int64_t)(f / sizeof(float));
    return 0;
}

/* ---------------------------------------------------------------- running */

static int set(const char *op, dnnl_memory_t m, const void *ptr) {
    if (!m) return 0;
    dnnl_status_t st = dnnl_memory_set_data_handle(m, (void *)ptr);
    return st == dnnl_success ? 0 : yp_conv_dnnl_fail(op, "binding a buffer", st);
}

static int run(const char *op, dnnl_stream_t s, dnnl_primitive_t prim, int n, const dnnl_exec_arg_t *args) {
    dnnl_status_t st = dnnl_primitive_execute(prim, s, n, args);
    if (st == dnnl_success) st = dnnl_stream_wait(s);
    return st == dnnl_success ? 0 : yp_conv_dnnl_fail(op, "execution", st);
}

static int reorder(const char *op, dnnl_stream_t s, dnnl_primitive_t r, dnnl_memory_t from, dnnl_memory_t to,
                   dnnl_memory_t sp) {
    dnnl_exec_arg_t a[] = {{DNNL_ARG_FROM, from}, {DNNL_ARG_TO, to}, {DNNL_ARG_SCRATCHPAD, sp}};
    return run(op, s, r, 3, a);
}

/* Runs p on the caller's buffers (bufs[k] for slot k; NULL: an argument left out) with its
 * scratch at s (NULL when it needs none). Inputs that go through the scratch are reordered in,
 * except those in the bit mask `staged` (already there from a previous call on the same scratch);
 * outputs that go through it are reordered out into the caller's buffer, adding to what it holds
 * when beta != 0 (callers scale it first when beta is not 1). */
static int exec(const char *op, dnnl_stream_t str, conv_prim *p, const void *const *bufs, int n_bufs, char *s,
                float beta, unsigned staged) {
    if (!s && p->bytes)
        return yp_cpu_fail("%s: no scratch given, %zu bytes needed (a plan made without the CPU backend's conv "
                           "scratch rule)",
                           op, p->bytes);
    if ((uintptr_t)s % 64)
        return yp_cpu_fail("%s: scratch at %p is not 64-byte aligned (the library's blocked buffers need it)", op,
                           (void *)s);
    char *sp = s ? s + p->sp_off : NULL;
    dnnl_exec_arg_t args[CONV_MAX_SLOTS + 1];
    int n = 0;
    for (int k = 0; k < p->n_slots && k < n_bufs; k++) {
        conv_slot *c = &p->slot[k];
        if (!bufs[k]) continue;
        if (c->re) {
            if (set(op, c->m, s + c->off) || set(op, c->user, bufs[k])) return -1;
            if (!c->output && !(staged >> k & 1u) &&
                (set(op, c->re_sp, sp) || reorder(op, str, c->re, c->user, c->m, c->re_sp)))
                return -1;
        } else if (set(op, c->m, bufs[k])) {
            return -1;
        }
        args[n++] = (dnnl_exec_arg_t){c->arg, c->m};
    }
    if (set(op, p->sp, sp)) return -1;
    args[n++] = (dnnl_exec_arg_t){DNNL_ARG_SCRATCHPAD, p->sp};
    if (run(op, str, p->prim, n, args)) return -1;
    for (int k = 0; k < p->n_slots && k < n_bufs; k++) {
        conv_slot *c = &p->slot[k];
        if (!bufs[k] || !c->output || !c->re) continue;
        dnnl_memory_t rsp = beta != 0.0f ? c->re_add_sp : c->re_sp;
        if (set(op, rsp, sp) || reorder(op, str, beta != 0.0f ? c->re_add : c->re, c->m, c->user, rsp)) return -1;
    }
    return 0;
}

int yp_cpu_conv2d_forward(yp_backend *be, const yp_conv_desc *d, const float *x, const float *w, const float *bias,
                          float *y, float *ws, float *wt) {
    const char *op = "conv2d forward";
    yp_cpu_backend *cb = yp_cpu_of(be);
    (void)ws;
    conv_entry *e = entry_get(op, cb, d, bias != NULL, YP_CONV_FORWARD);
    if (!e) return -1;
    const void *ptrs[] = {x, w, y};
    if (yp_cpu_check_ptrs(op, 3, ptrs)) return -1;
    const void *bufs[] = {x, w, y, bias};
    return exec(op, cb->conv->stream, &e->fwd, bufs, 4, (char *)wt, 0.0f, 0);
}

/* Backward-data of entry e; *whole says whether the whole-batch primitive ran (its dy slot then
 * holds dy in its layout, which backward-weights may reuse). */
static int bwd_data_run(const char *op, dnnl_stream_t str, conv_entry *e, const float *dy, const float *w,
                        float *dx, float beta, float *ws, float *wt, int *whole) {
    const yp_conv_desc *d = &e->d;
    *whole = 0;
    if (beta != 0.0f && beta != 1.0f) yp_cpu_scale_beta(dx, d->in.n * d->in.h * d->in.w * d->in.c, beta);
    float b = beta != 0.0f ? 1.0f : 0.0f;
    if (b == 0.0f || e->bwd_data.slot[2].re) {
        const void *bufs[] = {dy, w, dx};
        *whole = 1;
        return exec(op, str, &e->bwd_data, bufs, 3, (char *)wt, b, 0);
    }
    if (e->bwd_data_add.prim) { /* one matmul whose sum post-op adds into dx */
        const void *bufs[] = {dy, w, dx};
        return exec(op, str, &e->bwd_data_add, bufs, 3, (char *)wt, 0.0f, 0);
    }
    if (!ws) return yp_cpu_fail("%s: accumulating into dx needs one image of scratch, none given", op);
    const int64_t in_img = d->in.h * d->in.w * d->in.c, out_img = d->out.h * d->out.w * d->out.c;
    for (int64_t i = 0; i < d->in.n; i++) {
        const void *bufs[] = {dy + i * out_img, w, ws};
        /* the weights are reordered for the first image and stay in the scratch for the rest */
        if (exec(op, str, &e->bwd_data1, bufs, 3, (char *)wt, 0.0f, i ? 1u << 1 : 0u)) return -1;
        float *dxi = dx + i * in_img;
        const float *t = ws;
#pragma omp parallel for simd schedule(static) if (in_img >= YP_PAR_MIN)
        for (int64_t j = 0; j < in_img; j++) dxi[j] += t[j];
    }
    return 0;
}

/* Backward-weights of entry e; staged: dy is already in the scratch in its layout. */
static int bwd_weights_run(const char *op, dnnl_stream_t str, conv_entry *e, const float *x, const float *dy,
                           float *dw, float *dbias, float beta, float *wt, int staged) {
    const yp_conv_desc *d = &e->d;
    if (beta != 0.0f && beta != 1.0f) {
        yp_cpu_scale_beta(dw, d->out.c * (d->in.c / d->groups) * d->kh * d->kw, beta);
        if (dbias) yp_cpu_scale_beta(dbias, d->out.c, beta);
    }
    const void *bufs[] = {dy, x, dw, dbias};
    return exec(op, str, &e->bwd_weights, bufs, 4, (char *)wt, beta != 0.0f ? 1.0f : 0.0f, staged ? 1u : 0u);
}

int yp_cpu_conv2d_backward_data(yp_backend *be, const yp_conv_desc *d, const float *dy, const float *w, float *dx,
                                float beta, float *ws, float *wt) {
    const char *op = "conv2d backward-data";
    yp_cpu_backend *cb = yp_cpu_of(be);
    conv_entry *e = entry_get(op, cb, d, -1, YP_CONV_BACKWARD);
    if (!e) return -1;
    const void *ptrs[] = {dy, w, dx};
    if (yp_cpu_check_ptrs(op, 3, ptrs)) return -1;
    int whole;
    return bwd_data_run(op, cb->conv->stream, e, dy, w, dx, beta, ws, wt, &whole);
}

int yp_cpu_conv2d_backward_weights(yp_backend *be, const yp_conv_desc *d, const float *x, const float *dy, float *dw,
                                   float *dbias, float beta, float *ws, float *wt) {
    const char *op = "conv2d backward-weights";
    yp_cpu_backend *cb = yp_cpu_of(be);
    (void)ws;
    conv_entry *e = entry_get(op, cb, d, dbias != NULL, YP_CONV_BACKWARD);
    if (!e) return -1;
    const void *ptrs[] = {x, dy, dw};
    if (yp_cpu_check_ptrs(op, 3, ptrs)) return -1;
    return bwd_weights_run(op, cb->conv->stream, e, x, dy, dw, dbias, beta, wt, 0);
}

int yp_cpu_conv2d_backward(yp_backend *be, const yp_conv_desc *d, const float *x, const float *dy, const float *w,
                           float *dx, float *dw, float *dbias, yp_betas beta, float *ws, float *wt) {
    const char *op = "conv2d backward";
    yp_cpu_backend *cb = yp_cpu_of(be);
    conv_entry *e = entry_get(op, cb, d, dbias != NULL, YP_CONV_BACKWARD);
    if (!e) return -1;
    const void *ptrs[] = {dy, w};
    if (yp_cpu_check_ptrs(op, 2, ptrs) || (dw && !x)) return yp_cpu_fail("%s: NULL buffer", op);
    int whole = 0;
    if (dx && bwd_data_run(op, cb->conv->stream, e, dy, w, dx, beta.dx, ws, wt, &whole)) return -1;
    /* the reordered dy stays where backward-weights wants it when both put it first, alike */
    return dw ? bwd_weights_run(op, cb->conv->stream, e, x, dy, dw, dbias, beta.w, wt, whole && e->share_dy) : 0;
}
