/* conv.c - conv2d forward, backward-data and backward-weights on the CPU through oneDNN (Debian's
 * libdnnl): NHWC activations as they are, OIHW weights reordered into the layout the chosen
 * implementation wants, and every byte of scratch the library needs taken from the plan's
 * workspace tensors (oneDNN's user-scratchpad mode), so no conv allocates tensor memory.
 *
 * Why oneDNN rather than im2col + sgemm: its direct (brgemm / jit) convolutions read NHWC in place
 * and run at 150-300 GFLOP/s on this machine's AVX-512 cores, where im2col + Debian's OpenBLAS
 * (which does not recognise the CPU and falls back to SSE3 kernels) ran at ~50 (bench/README.md).
 *
 * Per distinct conv (descriptor, bias, thread count) an entry caches its primitives, built once by
 * yp_cpu_conv2d_scratch (the executor calls it for every conv before the first step, so no op call
 * builds anything; an op met without it builds its entry on first use):
 *   forward          weights OIHW -> layout (reorder, into `wt`), then the conv
 *   backward-data    beta == 0: the whole batch straight into dx. beta != 0 (dx already holds
 *                    another consumer's gradient; oneDNN's backward has no accumulate): one image
 *                    at a time into `ws`, then dx = beta*dx + that image
 *   backward-weights diff weights (and bias) into `wt` in the library's layout, then a reorder
 *                    to OIHW that adds (beta != 0) into dw
 * Scratch per stage (yp_cpu_conv2d_scratch): `fixed` bytes = reordered weights + the largest
 * scratchpad of what runs in that stage; `per_image` = one image of dx for the accumulating case.
 * oneDNN threads with OpenMP (yp_cpu_set_threads); its scratchpad sizes depend on the thread
 * count, which is part of the cache key. */
#include <dnnl.h>
#include <dnnl_debug.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "yp_cpu.h"

#define MAX_ENTRIES 1024
#define ALIGN 64

/* One primitive with its arguments' memory objects (created without buffers; the call sets them). */
typedef struct {
    dnnl_primitive_t prim;
    dnnl_memory_t src, wei, bias, dst, sp; /* as the conv names them; unused ones NULL */
    dnnl_primitive_t reorder;              /* weights into (fwd/bwd-data) or out of (bwd-weights) the layout */
    dnnl_primitive_t reorder_add;          /* bwd-weights: the same reorder adding into OIHW */
    dnnl_memory_t r_src, r_dst, r_sp, r_sp_add;
    size_t w_bytes;    /* the weights in the conv's layout (0: OIHW itself, no reorder) */
    size_t b_bytes;    /* bwd-weights: diff bias */
    size_t sp_bytes;   /* max(conv scratchpad, reorder scratchpad) */
} conv_prim;

typedef struct {
    yp_conv_desc d;
    int bias, nthr;
    int have_fwd, have_bwd;
    conv_prim fwd, bwd_data, bwd_data1, bwd_weights;
} conv_entry;

static dnnl_engine_t engine;
static dnnl_stream_t stream;
static conv_entry *entries[MAX_ENTRIES];
static int n_entries;

static size_t up(size_t b) { return (b + ALIGN - 1) / ALIGN * ALIGN; }

static int dnnl_fail(const char *op, const char *what, dnnl_status_t st) {
    return yp_cpu_fail("%s: oneDNN %s: %s", op, what, dnnl_status2str(st));
}
#define DN(op, what, expr)                                \
    do {                                                  \
        dnnl_status_t st_ = (expr);                       \
        if (st_ != dnnl_success) return dnnl_fail(op, what, st_); \
    } while (0)

static int conv_check(const char *op, const yp_conv_desc *d) {
    if (!d) return yp_cpu_fail("%s: NULL descriptor", op);
    if (d->groups != 1)
        return yp_cpu_fail("%s: groups %d not supported (the CPU backend runs groups == 1 only)", op, d->groups);
    if (d->k < 1 || d->s < 1 || d->p < 0)
        return yp_cpu_fail("%s: bad kernel %d / stride %d / padding %d", op, d->k, d->s, d->p);
    if (yp_cpu_check_dims(op, "input", d->in) || yp_cpu_check_dims(op, "output", d->out)) return -1;
    int64_t oh = (d->in.h + 2 * d->p - d->k) / d->s + 1, ow = (d->in.w + 2 * d->p - d->k) / d->s + 1;
    if (d->in.h + 2 * d->p < d->k || d->in.w + 2 * d->p < d->k || d->out.h != oh || d->out.w != ow ||
        d->out.n != d->in.n)
        return yp_cpu_fail("%s: output %lldx%lldx%lld does not follow from input %lldx%lldx%lld with k %d "
                           "s %d p %d",
                           op, (long long)d->out.n, (long long)d->out.h, (long long)d->out.w,
                           (long long)d->in.n, (long long)d->in.h, (long long)d->in.w, d->k, d->s, d->p);
    return 0;
}

static int engine_get(const char *op) {
    if (engine) return 0;
    DN(op, "engine", dnnl_engine_create(&engine, dnnl_cpu, 0));
    DN(op, "stream", dnnl_stream_create(&stream, engine, dnnl_stream_default_flags));
    return 0;
}

/* ---------------------------------------------------------------- building */

/* The mds of conv d over n images: NHWC activations, plain bias, and OIHW / "any" weights. */
typedef struct {
    dnnl_memory_desc_t src, dst, w_user, w_any, bias;
    dnnl_dims_t strides, pad_l, pad_r;
} conv_mds;

static int mds_init(const char *op, const yp_conv_desc *d, int64_t n, conv_mds *m) {
    dnnl_dims_t s = {n, d->in.c, d->in.h, d->in.w}, t = {n, d->out.c, d->out.h, d->out.w},
                w = {d->out.c, d->in.c, d->k, d->k}, b = {d->out.c};
    DN(op, "source layout", dnnl_memory_desc_init_by_tag(&m->src, 4, s, dnnl_f32, dnnl_nhwc));
    DN(op, "destination layout", dnnl_memory_desc_init_by_tag(&m->dst, 4, t, dnnl_f32, dnnl_nhwc));
    DN(op, "weights layout", dnnl_memory_desc_init_by_tag(&m->w_user, 4, w, dnnl_f32, dnnl_oihw));
    DN(op, "weights layout", dnnl_memory_desc_init_by_tag(&m->w_any, 4, w, dnnl_f32, dnnl_format_tag_any));
    DN(op, "bias layout", dnnl_memory_desc_init_by_tag(&m->bias, 1, b, dnnl_f32, dnnl_a));
    m->strides[0] = m->strides[1] = d->s;
    /* PyTorch's symmetric padding: oneDNN checks out = (in + pad_l + pad_r - k) / s + 1 with the
     * same floor, and windows past the last one are simply not computed */
    m->pad_l[0] = m->pad_l[1] = m->pad_r[0] = m->pad_r[1] = d->p;
    return 0;
}

static dnnl_primitive_attr_t user_scratchpad_attr(int add) {
    dnnl_primitive_attr_t a = NULL;
    if (dnnl_primitive_attr_create(&a) != dnnl_success) return NULL;
    dnnl_primitive_attr_set_scratchpad_mode(a, dnnl_scratchpad_mode_user);
    if (add) {
        dnnl_post_ops_t po = NULL;
        if (dnnl_post_ops_create(&po) != dnnl_success || dnnl_post_ops_append_sum(po, 1.0f) != dnnl_success ||
            dnnl_primitive_attr_set_post_ops(a, po) != dnnl_success) {
            dnnl_post_ops_destroy(po);
            dnnl_primitive_attr_destroy(a);
            return NULL;
        }
        dnnl_post_ops_destroy(po);
    }
    return a;
}

static size_t pd_md_bytes(const_dnnl_primitive_desc_t pd, dnnl_query_t q) {
    const dnnl_memory_desc_t *md = dnnl_primitive_desc_query_md(pd, q, 0);
    return md ? dnnl_memory_desc_get_size(md) : 0;
}

static int mem(const char *op, dnnl_memory_t *m, const dnnl_memory_desc_t *md) {
    DN(op, "memory object", dnnl_memory_create(m, md, engine, DNNL_MEMORY_NONE));
    return 0;
}

/* Creates pd's primitive and its scratchpad memory object; sp_bytes grows to cover it. */
static int finish(const char *op, dnnl_primitive_desc_t pd, dnnl_primitive_t *prim, dnnl_memory_t *sp,
                  size_t *sp_bytes) {
    DN(op, "primitive", dnnl_primitive_create(prim, pd));
    size_t b = pd_md_bytes(pd, dnnl_query_scratchpad_md);
    if (b > *sp_bytes) *sp_bytes = b;
    return mem(op, sp, dnnl_primitive_desc_query_md(pd, dnnl_query_scratchpad_md, 0));
}

/* A reorder from `from` to `to` (adding into `to` when add), with its memory objects. */
static int reorder_make(const char *op, const dnnl_memory_desc_t *from, const dnnl_memory_desc_t *to, int add,
                        dnnl_primitive_t *r, conv_prim *p) {
    dnnl_primitive_attr_t a = user_scratchpad_attr(add);
    if (!a) return yp_cpu_fail("%s: oneDNN reorder attributes", op);
    dnnl_primitive_desc_t pd = NULL;
    dnnl_status_t st = dnnl_reorder_primitive_desc_create(&pd, from, engine, to, engine, a);
    dnnl_primitive_attr_destroy(a);
    if (st != dnnl_success) return dnnl_fail(op, "weights reorder", st);
    int rc = (!p->r_src && mem(op, &p->r_src, from)) || (!p->r_dst && mem(op, &p->r_dst, to)) ||
             finish(op, pd, r, add ? &p->r_sp_add : &p->r_sp, &p->sp_bytes);
    dnnl_primitive_desc_destroy(pd);
    return rc;
}

/* The forward pd of d over n images (also the hint the backward pds need). */
static int fwd_pd(const char *op, const yp_conv_desc *d, int bias, int64_t n, const conv_mds *m,
                  dnnl_primitive_desc_t *pd) {
    dnnl_convolution_desc_t cd;
    DN(op, "forward descriptor",
       dnnl_convolution_forward_desc_init(&cd, dnnl_forward_training, dnnl_convolution_direct, &m->src, &m->w_any,
                                          bias ? &m->bias : NULL, &m->dst, m->strides, m->pad_l, m->pad_r));
    dnnl_primitive_attr_t a = user_scratchpad_attr(0);
    if (!a) return yp_cpu_fail("%s: oneDNN attributes", op);
    dnnl_status_t st = dnnl_primitive_desc_create(pd, &cd, a, engine, NULL);
    dnnl_primitive_attr_destroy(a);
    if (st != dnnl_success) return dnnl_fail(op, "no forward convolution for this shape", st);
    (void)d, (void)n;
    return 0;
}

/* Weights in pd's layout (query q): a reorder from OIHW when it differs. */
static int weights_in(const char *op, dnnl_primitive_desc_t pd, dnnl_query_t q, const conv_mds *m, conv_prim *p) {
    const dnnl_memory_desc_t *w = dnnl_primitive_desc_query_md(pd, q, 0);
    if (mem(op, &p->wei, w)) return -1;
    if (dnnl_memory_desc_equal(w, &m->w_user)) return 0;
    p->w_bytes = up(dnnl_memory_desc_get_size(w));
    return reorder_make(op, &m->w_user, w, 0, &p->reorder, p);
}

static int build_fwd(const char *op, conv_entry *e) {
    conv_mds m;
    dnnl_primitive_desc_t pd = NULL;
    if (mds_init(op, &e->d, e->d.in.n, &m) || fwd_pd(op, &e->d, e->bias, e->d.in.n, &m, &pd)) return -1;
    conv_prim *p = &e->fwd;
    int rc = weights_in(op, pd, dnnl_query_weights_md, &m, p) || mem(op, &p->src, &m.src) || mem(op, &p->dst, &m.dst) ||
             (e->bias && mem(op, &p->bias, &m.bias)) || finish(op, pd, &p->prim, &p->sp, &p->sp_bytes);
    dnnl_primitive_desc_destroy(pd);
    return rc ? -1 : 0;
}

/* Backward-data over n images (n == 1: the accumulating form). */
static int build_bwd_data(const char *op, conv_entry *e, int64_t n, conv_prim *p) {
    conv_mds m;
    dnnl_primitive_desc_t hint = NULL, pd = NULL;
    if (mds_init(op, &e->d, n, &m) || fwd_pd(op, &e->d, 0, n, &m, &hint)) return -1;
    dnnl_convolution_desc_t cd;
    dnnl_status_t st = dnnl_convolution_backward_data_desc_init(&cd, dnnl_convolution_direct, &m.src, &m.w_any, &m.dst,
                                                                m.strides, m.pad_l, m.pad_r);
    dnnl_primitive_attr_t a = user_scratchpad_attr(0);
    if (st == dnnl_success && a) st = dnnl_primitive_desc_create(&pd, &cd, a, engine, hint);
    dnnl_primitive_attr_destroy(a);
    dnnl_primitive_desc_destroy(hint);
    if (st != dnnl_success || !a) return dnnl_fail(op, "no backward-data convolution for this shape", st);
    int rc = weights_in(op, pd, dnnl_query_weights_md, &m, p) || mem(op, &p->src, &m.src) || mem(op, &p->dst, &m.dst) ||
             finish(op, pd, &p->prim, &p->sp, &p->sp_bytes);
    dnnl_primitive_desc_destroy(pd);
    return rc ? -1 : 0;
}

static int build_bwd_weights(const char *op, conv_entry *e) {
    conv_mds m;
    dnnl_primitive_desc_t hint = NULL, pd = NULL;
    if (mds_init(op, &e->d, e->d.in.n, &m) || fwd_pd(op, &e->d, e->bias, e->d.in.n, &m, &hint)) return -1;
    dnnl_convolution_desc_t cd;
    dnnl_status_t st = dnnl_convolution_backward_weights_desc_init(&cd, dnnl_convolution_direct, &m.src, &m.w_any,
                                                                   e->bias ? &m.bias : NULL, &m.dst, m.strides,
                                                                   m.pad_l, m.pad_r);
    dnnl_primitive_attr_t a = user_scratchpad_attr(0);
    if (st == dnnl_success && a) st = dnnl_primitive_desc_create(&pd, &cd, a, engine, hint);
    dnnl_primitive_attr_destroy(a);
    dnnl_primitive_desc_destroy(hint);
    if (st != dnnl_success || !a) return dnnl_fail(op, "no backward-weights convolution for this shape", st);
    conv_prim *p = &e->bwd_weights;
    const dnnl_memory_desc_t *dw = dnnl_primitive_desc_query_md(pd, dnnl_query_diff_weights_md, 0);
    p->w_bytes = up(dnnl_memory_desc_get_size(dw)); /* always through the scratch: the reorder adds */
    p->b_bytes = e->bias ? up((size_t)e->d.out.c * sizeof(float)) : 0;
    int rc = mem(op, &p->wei, dw) || mem(op, &p->src, &m.src) || mem(op, &p->dst, &m.dst) ||
             (e->bias && mem(op, &p->bias, &m.bias)) || finish(op, pd, &p->prim, &p->sp, &p->sp_bytes) ||
             reorder_make(op, dw, &m.w_user, 0, &p->reorder, p) || reorder_make(op, dw, &m.w_user, 1, &p->reorder_add, p);
    dnnl_primitive_desc_destroy(pd);
    return rc ? -1 : 0;
}

static int same_desc(const yp_conv_desc *a, const yp_conv_desc *b) {
    return a->in.n == b->in.n && a->in.h == b->in.h && a->in.w == b->in.w && a->in.c == b->in.c &&
           a->out.n == b->out.n && a->out.h == b->out.h && a->out.w == b->out.w && a->out.c == b->out.c &&
           a->k == b->k && a->s == b->s && a->p == b->p && a->groups == b->groups;
}

/* The entry of d with `stage` built, or NULL with the reason recorded. bias -1: either (backward-
 * data does not depend on it; an entry already built is taken first, else one without bias). */
static conv_entry *entry_get(const char *op, const yp_conv_desc *d, int bias, yp_conv_stage stage) {
    if (conv_check(op, d) || engine_get(op)) return NULL;
    int nthr = omp_get_max_threads();
    conv_entry *e = NULL;
    for (int i = 0; i < n_entries && !e; i++)
        if ((entries[i]->bias == bias || (bias < 0 && entries[i]->have_bwd)) && entries[i]->nthr == nthr &&
            same_desc(&entries[i]->d, d))
            e = entries[i];
    if (bias < 0) bias = 0;
    for (int i = 0; i < n_entries && !e; i++)
        if (entries[i]->bias == bias && entries[i]->nthr == nthr && same_desc(&entries[i]->d, d)) e = entries[i];
    if (!e) {
        if (n_entries == MAX_ENTRIES) {
            yp_cpu_fail("%s: more than %d distinct convolutions", op, MAX_ENTRIES);
            return NULL;
        }
        e = calloc(1, sizeof *e);
        if (!e) {
            yp_cpu_fail("%s: out of memory", op);
            return NULL;
        }
        e->d = *d, e->bias = bias, e->nthr = nthr;
        entries[n_entries++] = e;
    }
    if (stage == YP_CONV_FORWARD && !e->have_fwd) {
        if (build_fwd(op, e)) return NULL;
        e->have_fwd = 1;
    }
    if (stage == YP_CONV_BACKWARD && !e->have_bwd) {
        if (build_bwd_data(op, e, d->in.n, &e->bwd_data) || build_bwd_data(op, e, 1, &e->bwd_data1) ||
            build_bwd_weights(op, e))
            return NULL;
        e->have_bwd = 1;
    }
    return e;
}

static size_t prim_fixed(const conv_prim *p) { return p->w_bytes + p->b_bytes + up(p->sp_bytes); }

int yp_cpu_conv2d_scratch(const yp_conv_desc *d, int has_bias, yp_conv_stage stage, int64_t *per_image,
                          int64_t *fixed) {
    *per_image = *fixed = 0;
    const conv_entry *e = entry_get("conv2d scratch", d, has_bias != 0, stage);
    if (!e) return -1;
    size_t f = 0;
    if (stage == YP_CONV_FORWARD) {
        f = prim_fixed(&e->fwd);
    } else {
        size_t a = prim_fixed(&e->bwd_data), b = prim_fixed(&e->bwd_data1), c = prim_fixed(&e->bwd_weights);
        f = a > b ? a : b;
        f = f > c ? f : c;
        *per_image = d->in.h * d->in.w * d->in.c;
    }
    *fixed = (int64_t)(f / sizeof(float));
    return 0;
}

/* ---------------------------------------------------------------- running */

static int set(const char *op, dnnl_memory_t m, const void *ptr) {
    if (m) DN(op, "binding a buffer", dnnl_memory_set_data_handle(m, (void *)ptr));
    return 0;
}

static int run(const char *op, dnnl_primitive_t prim, int n, const dnnl_exec_arg_t *args) {
    DN(op, "execution", dnnl_primitive_execute(prim, stream, n, args));
    DN(op, "wait", dnnl_stream_wait(stream));
    return 0;
}

/* s + off, or NULL when there is no scratch (every offset is then 0). */
static char *at(char *s, size_t off) { return s ? s + off : NULL; }

/* Weights w (OIHW) as p's conv reads them: w itself, or reordered into scratch. */
static int weights_for(const char *op, conv_prim *p, const float *w, char *scratch, const void **out) {
    *out = w;
    if (!p->reorder) return 0;
    if (set(op, p->r_src, w) || set(op, p->r_dst, scratch) || set(op, p->r_sp, at(scratch, p->w_bytes))) return -1;
    dnnl_exec_arg_t a[] = {{DNNL_ARG_FROM, p->r_src}, {DNNL_ARG_TO, p->r_dst}, {DNNL_ARG_SCRATCHPAD, p->r_sp}};
    *out = scratch;
    return run(op, p->reorder, 3, a);
}

static int need_scratch(const char *op, const conv_prim *p, const void *wt) {
    if (!wt && prim_fixed(p) > 0)
        return yp_cpu_fail("%s: no scratch given, %zu bytes needed (a plan made without the CPU backend's conv "
                           "scratch rule)",
                           op, prim_fixed(p));
    return 0;
}

int yp_cpu_conv2d_forward(const yp_conv_desc *d, const float *x, const float *w, const float *bias, float *y,
                          float *ws, float *wt) {
    const char *op = "conv2d forward";
    (void)ws;
    conv_entry *e = entry_get(op, d, bias != NULL, YP_CONV_FORWARD);
    if (!e) return -1;
    const void *ptrs[] = {x, w, y};
    if (yp_cpu_check_ptrs(op, 3, ptrs)) return -1;
    conv_prim *p = &e->fwd;
    if (need_scratch(op, p, wt)) return -1;
    char *s = (char *)wt;
    const void *wl;
    if (weights_for(op, p, w, s, &wl) || set(op, p->src, x) || set(op, p->wei, wl) || set(op, p->bias, bias) ||
        set(op, p->dst, y) || set(op, p->sp, at(s, p->w_bytes)))
        return -1;
    dnnl_exec_arg_t a[] = {{DNNL_ARG_SRC, p->src}, {DNNL_ARG_WEIGHTS, p->wei}, {DNNL_ARG_DST, p->dst},
                           {DNNL_ARG_SCRATCHPAD, p->sp}, {DNNL_ARG_BIAS, p->bias}};
    return run(op, p->prim, bias ? 5 : 4, a);
}

int yp_cpu_conv2d_backward_data(const yp_conv_desc *d, const float *dy, const float *w, float *dx, float beta,
                                float *ws, float *wt) {
    const char *op = "conv2d backward-data";
    conv_entry *e = entry_get(op, d, -1, YP_CONV_BACKWARD);
    if (!e) return -1;
    const void *ptrs[] = {dy, w, dx};
    if (yp_cpu_check_ptrs(op, 3, ptrs)) return -1;
    int whole = beta == 0.0f;
    conv_prim *p = whole ? &e->bwd_data : &e->bwd_data1;
    if (need_scratch(op, p, wt)) return -1;
    if (!whole && !ws) return yp_cpu_fail("%s: accumulating into dx needs one image of scratch, none given", op);
    char *s = (char *)wt;
    const void *wl;
    if (weights_for(op, p, w, s, &wl) || set(op, p->wei, wl) || set(op, p->sp, at(s, p->w_bytes))) return -1;
    dnnl_exec_arg_t a[] = {{DNNL_ARG_DIFF_DST, p->dst}, {DNNL_ARG_WEIGHTS, p->wei}, {DNNL_ARG_DIFF_SRC, p->src},
                           {DNNL_ARG_SCRATCHPAD, p->sp}};
    if (whole) return set(op, p->dst, dy) || set(op, p->src, dx) ? -1 : run(op, p->prim, 4, a);
    const int64_t in_img = d->in.h * d->in.w * d->in.c, out_img = d->out.h * d->out.w * d->out.c;
    for (int64_t i = 0; i < d->in.n; i++) {
        if (set(op, p->dst, dy + i * out_img) || set(op, p->src, ws) || run(op, p->prim, 4, a)) return -1;
        float *dxi = dx + i * in_img;
        const float *t = ws;
#pragma omp parallel for simd schedule(static)
        for (int64_t j = 0; j < in_img; j++) dxi[j] = beta * dxi[j] + t[j];
    }
    return 0;
}

int yp_cpu_conv2d_backward_weights(const yp_conv_desc *d, const float *x, const float *dy, float *dw,
                                   float *dbias, float beta, float *ws, float *wt) {
    const char *op = "conv2d backward-weights";
    (void)ws;
    conv_entry *e = entry_get(op, d, dbias != NULL, YP_CONV_BACKWARD);
    if (!e) return -1;
    const void *ptrs[] = {x, dy, dw};
    if (yp_cpu_check_ptrs(op, 3, ptrs)) return -1;
    conv_prim *p = &e->bwd_weights;
    if (need_scratch(op, p, wt)) return -1;
    char *s = (char *)wt, *sb = at(s, p->w_bytes), *sp = at(s, p->w_bytes + p->b_bytes);
    if (set(op, p->src, x) || set(op, p->dst, dy) || set(op, p->wei, s) || set(op, p->bias, dbias ? sb : NULL) ||
        set(op, p->sp, sp))
        return -1;
    dnnl_exec_arg_t a[] = {{DNNL_ARG_SRC, p->src}, {DNNL_ARG_DIFF_DST, p->dst}, {DNNL_ARG_DIFF_WEIGHTS, p->wei},
                           {DNNL_ARG_SCRATCHPAD, p->sp}, {DNNL_ARG_DIFF_BIAS, p->bias}};
    if (run(op, p->prim, dbias ? 5 : 4, a)) return -1;
    /* dw = beta*dw + the result: scale first (beta 1: nothing), then a reorder that adds */
    if (beta != 0.0f) yp_cpu_scale_beta(dw, d->out.c * d->in.c * d->k * d->k, beta);
    dnnl_memory_t rsp = beta != 0.0f ? p->r_sp_add : p->r_sp;
    if (set(op, p->r_src, s) || set(op, p->r_dst, dw) || set(op, rsp, sp)) return -1;
    dnnl_exec_arg_t r[] = {{DNNL_ARG_FROM, p->r_src}, {DNNL_ARG_TO, p->r_dst}, {DNNL_ARG_SCRATCHPAD, rsp}};
    if (run(op, beta != 0.0f ? p->reorder_add : p->reorder, 3, r)) return -1;
    if (dbias) {
        const float *t = (const float *)sb;
        for (int64_t c = 0; c < d->out.c; c++) dbias[c] = (beta != 0.0f ? beta * dbias[c] : 0.0f) + t[c];
    }
    return 0;
}
