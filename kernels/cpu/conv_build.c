/* conv_build.c - builds the oneDNN primitives of one conv (conv_dnnl.h): the memory descriptors
 * of the caller's layouts, the algorithm, the primitive, and a reorder for every argument whose
 * layout the primitive wants otherwise.
 *
 * Algorithm: oneDNN's direct convolution on NHWC as it is (grouped and depthwise convs too: their
 * weights are oneDNN's 5-D grouped layout over PyTorch's bytes, mds_init), except for ungrouped
 * 3x3 stride-1 pad-1 convs with channel counts that are multiples of 16 and outputs of at least
 * 20x20, which run oneDNN's Winograd F(4x4, 3x3) in its blocked layout (1.5-1.6x the direct rate
 * here on forward, backward-data and backward-weights alike, reorders not counted; with them ~9%
 * off a yolov5s step at 320; a 10x10 map gains nothing). Winograd's fp32 results differ from the
 * direct ones by rounding (~1e-5 relative, test_cpu_conv checks 1e-4).
 * YP_CONV_WINOGRAD=0 in the environment keeps every conv direct.
 *
 * A dry build (the scratch query) goes through the same steps with primitive descriptors only:
 * the sizes come from the same code either way, so a query before conv2d_prepare and one after
 * answer alike. */
#include <stdlib.h>
#include <string.h>

#include "conv_dnnl.h"

#define ALIGN 64

static size_t up(size_t b) { return (b + ALIGN - 1) / ALIGN * ALIGN; }

int yp_conv_dnnl_fail(const char *op, const char *what, dnnl_status_t st) {
    return yp_cpu_fail("%s: oneDNN %s: %s", op, what, dnnl_status2str(st));
}

#define DN(op, what, expr)                                                \
    do {                                                                  \
        dnnl_status_t st_ = (expr);                                       \
        if (st_ != dnnl_success) return yp_conv_dnnl_fail(op, what, st_); \
    } while (0)

/* What every builder below works with: the instance's engine, and whether to build or only size. */
typedef struct {
    dnnl_engine_t engine;
    int dry;
} conv_bld;

/* ---------------------------------------------------------------- descriptors */

/* The caller's layouts of conv d over n images, "any" layouts for the primitive to choose, and
 * the geometry. */
typedef struct {
    dnnl_memory_desc_t src, dst, w_user, bias;                   /* the caller's */
    dnnl_memory_desc_t src_any, dst_any, w_any;                  /* the primitive's choice */
    dnnl_dims_t strides, pad_l, pad_r;
} conv_mds;

/* Weights: OIHW (c_out, c_in, kh, kw), or for groups g > 1 oneDNN's grouped GOIHW (g, c_out/g,
 * c_in/g, kh, kw) over the same bytes as PyTorch's (c_out, c_in/g, kh, kw): output channel o is
 * row o % (c_out/g) of group o / (c_out/g) either way. */
static int mds_init(const char *op, const yp_conv_desc *d, int64_t n, conv_mds *m) {
    const int64_t g = d->groups;
    dnnl_dims_t s = {n, d->in.c, d->in.h, d->in.w}, t = {n, d->out.c, d->out.h, d->out.w},
                w = {d->out.c, d->in.c, d->kh, d->kw}, b = {d->out.c};
    if (g > 1) w[0] = g, w[1] = d->out.c / g, w[2] = d->in.c / g, w[3] = d->kh, w[4] = d->kw;
    const int wn = g > 1 ? 5 : 4;
    DN(op, "source layout", dnnl_memory_desc_init_by_tag(&m->src, 4, s, dnnl_f32, dnnl_nhwc));
    DN(op, "destination layout", dnnl_memory_desc_init_by_tag(&m->dst, 4, t, dnnl_f32, dnnl_nhwc));
    DN(op, "weights layout", dnnl_memory_desc_init_by_tag(&m->w_user, wn, w, dnnl_f32, g > 1 ? dnnl_goihw : dnnl_oihw));
    DN(op, "bias layout", dnnl_memory_desc_init_by_tag(&m->bias, 1, b, dnnl_f32, dnnl_a));
    DN(op, "source layout", dnnl_memory_desc_init_by_tag(&m->src_any, 4, s, dnnl_f32, dnnl_format_tag_any));
    DN(op, "destination layout", dnnl_memory_desc_init_by_tag(&m->dst_any, 4, t, dnnl_f32, dnnl_format_tag_any));
    DN(op, "weights layout", dnnl_memory_desc_init_by_tag(&m->w_any, wn, w, dnnl_f32, dnnl_format_tag_any));
    /* PyTorch's symmetric padding: oneDNN checks out = (in + pad_l + pad_r - k) / s + 1 with the
     * same floor, and windows past the last one are simply not computed */
    m->strides[0] = d->sh, m->strides[1] = d->sw;
    m->pad_l[0] = m->pad_r[0] = d->ph, m->pad_l[1] = m->pad_r[1] = d->pw;
    return 0;
}

static int winograd_wanted(const yp_conv_desc *d) {
    const char *env = getenv("YP_CONV_WINOGRAD");
    if (env && !strcmp(env, "0")) return 0;
    return d->groups == 1 && d->kh == 3 && d->kw == 3 && d->sh == 1 && d->sw == 1 && d->ph == 1 && d->pw == 1 &&
           d->in.c % 16 == 0 && d->out.c % 16 == 0 &&
           d->out.h * d->out.w >= 400;
}

static dnnl_primitive_attr_t attr_make(int add) {
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

/* pd from an op descriptor (hint: the forward pd, for backward ones); NULL-safe status. */
static dnnl_status_t pd_make(const conv_bld *b, dnnl_primitive_desc_t *pd, const void *desc,
                             const_dnnl_primitive_desc_t hint) {
    dnnl_primitive_attr_t a = attr_make(0);
    if (!a) return dnnl_out_of_memory;
    dnnl_status_t st = dnnl_primitive_desc_create(pd, desc, a, b->engine, hint);
    dnnl_primitive_attr_destroy(a);
    return st;
}

/* The forward pd of d over n images with algorithm alg (also the hint of the backward pds). */
static dnnl_status_t fwd_pd(const conv_bld *b, const conv_mds *m, int bias, dnnl_alg_kind_t alg,
                            dnnl_primitive_desc_t *pd) {
    int wino = alg == dnnl_convolution_winograd;
    dnnl_convolution_desc_t cd;
    dnnl_status_t st = dnnl_convolution_forward_desc_init(&cd, dnnl_forward_training, alg, wino ? &m->src_any : &m->src,
                                                          &m->w_any, bias ? &m->bias : NULL,
                                                          wino ? &m->dst_any : &m->dst, m->strides, m->pad_l, m->pad_r);
    return st == dnnl_success ? pd_make(b, pd, &cd, NULL) : st;
}

/* ---------------------------------------------------------------- slots */

/* The scratchpad of pd: grows p->bytes' scratchpad part and (unless dry) creates its memory object. */
static int scratchpad(const conv_bld *b, const char *op, const_dnnl_primitive_desc_t pd, dnnl_memory_t *m,
                      size_t *sp_bytes) {
    const dnnl_memory_desc_t *md = dnnl_primitive_desc_query_md(pd, dnnl_query_scratchpad_md, 0);
    size_t n = md ? dnnl_memory_desc_get_size(md) : 0;
    if (n > *sp_bytes) *sp_bytes = n;
    if (!b->dry) DN(op, "scratchpad memory", dnnl_memory_create(m, md, b->engine, DNNL_MEMORY_NONE));
    return 0;
}

/* A reorder from -> to (adding into `to` when add) and its scratchpad object (dry: its scratchpad size). */
static int reorder_make(const conv_bld *b, const char *op, const dnnl_memory_desc_t *from,
                        const dnnl_memory_desc_t *to, int add, dnnl_primitive_t *r, dnnl_memory_t *sp,
                        size_t *sp_bytes) {
    dnnl_primitive_attr_t a = attr_make(add);
    if (!a) return yp_cpu_fail("%s: oneDNN reorder attributes", op);
    dnnl_primitive_desc_t pd = NULL;
    dnnl_status_t st = dnnl_reorder_primitive_desc_create(&pd, from, b->engine, to, b->engine, a);
    dnnl_primitive_attr_destroy(a);
    if (st != dnnl_success) return yp_conv_dnnl_fail(op, "reorder", st);
    int rc = 0;
    if (!b->dry) {
        st = dnnl_primitive_create(r, pd);
        if (st != dnnl_success) rc = yp_conv_dnnl_fail(op, "reorder primitive", st);
    }
    if (!rc) rc = scratchpad(b, op, pd, sp, sp_bytes);
    dnnl_primitive_desc_destroy(pd);
    return rc;
}

/* Adds the slot for argument `arg`: the primitive's layout `prim_md`, the caller's `user_md`; a
 * reorder (both ways for outputs: plain and adding) when they differ or when `always` (outputs
 * the caller accumulates into). Its buffer is placed at *off in the scratch. */
static int slot_add(const conv_bld *b, const char *op, conv_prim *p, int arg, int output,
                    const dnnl_memory_desc_t *prim_md, const dnnl_memory_desc_t *user_md, int always, size_t *off,
                    size_t *sp_bytes) {
    conv_slot *s = &p->slot[p->n_slots++];
    s->arg = arg, s->output = output;
    if (!b->dry) DN(op, "memory object", dnnl_memory_create(&s->m, prim_md, b->engine, DNNL_MEMORY_NONE));
    if (!always && dnnl_memory_desc_equal(prim_md, user_md)) return 0;
    if (!b->dry) DN(op, "memory object", dnnl_memory_create(&s->user, user_md, b->engine, DNNL_MEMORY_NONE));
    s->via = 1;
    s->off = *off;
    *off += up(dnnl_memory_desc_get_size(prim_md));
    if (!output) return reorder_make(b, op, user_md, prim_md, 0, &s->re, &s->re_sp, sp_bytes);
    return reorder_make(b, op, prim_md, user_md, 0, &s->re, &s->re_sp, sp_bytes) ||
                   reorder_make(b, op, prim_md, user_md, 1, &s->re_add, &s->re_add_sp, sp_bytes)
               ? -1
               : 0;
}

typedef struct {
    int arg, output, always;
    dnnl_query_t q;
    int index;
    const dnnl_memory_desc_t *user;
} slot_spec;

/* The primitive of pd with the slots specs[] and its scratch layout (dry: the layout only). */
static int prim_make(const conv_bld *b, const char *op, dnnl_primitive_desc_t pd, const slot_spec *specs, int n,
                     conv_prim *p) {
    size_t off = 0, sp_bytes = 0;
    for (int k = 0; k < n; k++) {
        const dnnl_memory_desc_t *md = dnnl_primitive_desc_query_md(pd, specs[k].q, specs[k].index);
        if (!md) return yp_cpu_fail("%s: oneDNN: a primitive without an expected argument", op);
        if (slot_add(b, op, p, specs[k].arg, specs[k].output, md, specs[k].user, specs[k].always, &off, &sp_bytes))
            return -1;
    }
    if (!b->dry) DN(op, "primitive", dnnl_primitive_create(&p->prim, pd));
    if (scratchpad(b, op, pd, &p->sp, &sp_bytes)) return -1;
    const char *impl = NULL;
    dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &impl);
    p->winograd = impl && strstr(impl, "wino") != NULL;
    p->sp_off = off;
    p->bytes = off + up(sp_bytes);
    p->present = 1;
    return 0;
}

/* ---------------------------------------------------------------- the three primitives */

/* The forward pd of e over n images, Winograd when wanted and available; *alg says which. */
static int fwd_pd_for(const conv_bld *b, const char *op, const conv_entry *e, const conv_mds *m, int bias,
                      dnnl_alg_kind_t *alg, dnnl_primitive_desc_t *pd) {
    *alg = dnnl_convolution_direct;
    if (winograd_wanted(&e->d) && fwd_pd(b, m, bias, dnnl_convolution_winograd, pd) == dnnl_success) {
        *alg = dnnl_convolution_winograd;
        return 0;
    }
    DN(op, "no forward convolution for this shape", fwd_pd(b, m, bias, dnnl_convolution_direct, pd));
    return 0;
}

static int build_fwd(const conv_bld *b, const char *op, conv_entry *e) {
    conv_mds m;
    dnnl_primitive_desc_t pd = NULL;
    dnnl_alg_kind_t alg;
    if (mds_init(op, &e->d, e->d.in.n, &m) || fwd_pd_for(b, op, e, &m, e->bias, &alg, &pd)) return -1;
    slot_spec specs[] = {{DNNL_ARG_SRC, 0, 0, dnnl_query_src_md, 0, &m.src},
                         {DNNL_ARG_WEIGHTS, 0, 0, dnnl_query_weights_md, 0, &m.w_user},
                         {DNNL_ARG_DST, 1, 0, dnnl_query_dst_md, 0, &m.dst},
                         {DNNL_ARG_BIAS, 0, 0, dnnl_query_weights_md, 1, &m.bias}};
    int rc = prim_make(b, op, pd, specs, e->bias ? 4 : 3, &e->fwd);
    dnnl_primitive_desc_destroy(pd);
    return rc;
}

/* Backward-data over n images into p. */
static int build_bwd_data(const conv_bld *b, const char *op, conv_entry *e, int64_t n, conv_prim *p) {
    conv_mds m;
    dnnl_primitive_desc_t hint = NULL, pd = NULL;
    dnnl_alg_kind_t alg;
    if (mds_init(op, &e->d, n, &m) || fwd_pd_for(b, op, e, &m, 0, &alg, &hint)) return -1;
    int wino = alg == dnnl_convolution_winograd;
    dnnl_convolution_desc_t cd;
    dnnl_status_t st = dnnl_convolution_backward_data_desc_init(&cd, alg, wino ? &m.src_any : &m.src, &m.w_any,
                                                                wino ? &m.dst_any : &m.dst, m.strides, m.pad_l,
                                                                m.pad_r);
    if (st == dnnl_success) st = pd_make(b, &pd, &cd, hint);
    dnnl_primitive_desc_destroy(hint);
    if (st != dnnl_success) return yp_conv_dnnl_fail(op, "no backward-data convolution for this shape", st);
    slot_spec specs[] = {{DNNL_ARG_DIFF_DST, 0, 0, dnnl_query_diff_dst_md, 0, &m.dst},
                         {DNNL_ARG_WEIGHTS, 0, 0, dnnl_query_weights_md, 0, &m.w_user},
                         {DNNL_ARG_DIFF_SRC, 1, 0, dnnl_query_diff_src_md, 0, &m.src}};
    int rc = prim_make(b, op, pd, specs, 3, p);
    dnnl_primitive_desc_destroy(pd);
    return rc;
}

static int build_bwd_weights(const conv_bld *b, const char *op, conv_entry *e) {
    conv_mds m;
    dnnl_primitive_desc_t hint = NULL, pd = NULL;
    dnnl_alg_kind_t alg;
    if (mds_init(op, &e->d, e->d.in.n, &m) || fwd_pd_for(b, op, e, &m, e->bias, &alg, &hint)) return -1;
    int wino = alg == dnnl_convolution_winograd;
    dnnl_convolution_desc_t cd;
    dnnl_status_t st = dnnl_convolution_backward_weights_desc_init(&cd, alg, wino ? &m.src_any : &m.src, &m.w_any,
                                                                   e->bias ? &m.bias : NULL,
                                                                   wino ? &m.dst_any : &m.dst, m.strides, m.pad_l,
                                                                   m.pad_r);
    if (st == dnnl_success) st = pd_make(b, &pd, &cd, hint);
    dnnl_primitive_desc_destroy(hint);
    if (st != dnnl_success) return yp_conv_dnnl_fail(op, "no backward-weights convolution for this shape", st);
    /* the weight and bias gradients always land in the scratch first: the reorder out adds */
    /* dy first, as in backward-data, so that the two may share its reorder (conv.c) */
    slot_spec specs[] = {{DNNL_ARG_DIFF_DST, 0, 0, dnnl_query_diff_dst_md, 0, &m.dst},
                         {DNNL_ARG_SRC, 0, 0, dnnl_query_src_md, 0, &m.src},
                         {DNNL_ARG_DIFF_WEIGHTS, 1, 1, dnnl_query_diff_weights_md, 0, &m.w_user},
                         {DNNL_ARG_DIFF_BIAS, 1, 1, dnnl_query_diff_weights_md, 1, &m.bias}};
    int rc = prim_make(b, op, pd, specs, e->bias ? 4 : 3, &e->bwd_weights);
    dnnl_primitive_desc_destroy(pd);
    return rc;
}

/* A 1x1 stride-1 conv's backward-data adding into dx: the NHWC batch is the matrix dy (P, c_out),
 * the OIHW weights are (c_out, c_in), so dx (P, c_in) += dy . W is one matmul with a sum post-op.
 * 0 when built, 1 when oneDNN has no such matmul here (the caller falls back), -1 on error. */
static int build_bwd_data_add(const conv_bld *b, const char *op, conv_entry *e) {
    const yp_conv_desc *d = &e->d;
    if (yp_conv_taps(d) != 1 || d->sh != 1 || d->sw != 1 || d->ph || d->pw || d->groups != 1)
        return 1; /* a grouped one is g matmuls */
    const int64_t rows = d->in.n * d->in.h * d->in.w;
    dnnl_dims_t s = {rows, d->out.c}, w = {d->out.c, d->in.c}, t = {rows, d->in.c};
    dnnl_memory_desc_t src, wei, dst;
    DN(op, "matmul layout", dnnl_memory_desc_init_by_tag(&src, 2, s, dnnl_f32, dnnl_ab));
    DN(op, "matmul layout", dnnl_memory_desc_init_by_tag(&wei, 2, w, dnnl_f32, dnnl_ab));
    DN(op, "matmul layout", dnnl_memory_desc_init_by_tag(&dst, 2, t, dnnl_f32, dnnl_ab));
    dnnl_matmul_desc_t md;
    DN(op, "matmul descriptor", dnnl_matmul_desc_init(&md, &src, &wei, NULL, &dst));
    dnnl_primitive_attr_t a = attr_make(1);
    if (!a) return yp_cpu_fail("%s: oneDNN attributes", op);
    dnnl_primitive_desc_t pd = NULL;
    dnnl_status_t st = dnnl_primitive_desc_create(&pd, &md, a, b->engine, NULL);
    dnnl_primitive_attr_destroy(a);
    if (st != dnnl_success) return 1;
    slot_spec specs[] = {{DNNL_ARG_SRC, 0, 0, dnnl_query_src_md, 0, &src},
                         {DNNL_ARG_WEIGHTS, 0, 0, dnnl_query_weights_md, 0, &wei},
                         {DNNL_ARG_DST, 1, 0, dnnl_query_dst_md, 0, &dst}};
    int rc = prim_make(b, op, pd, specs, 3, &e->bwd_data_add);
    dnnl_primitive_desc_destroy(pd);
    return rc;
}

static int build_bwd(const conv_bld *b, const char *op, conv_entry *e) {
    if (build_bwd_data(b, op, e, e->d.in.n, &e->bwd_data) || build_bwd_weights(b, op, e)) return -1;
    const conv_slot *a = &e->bwd_data.slot[0], *w = &e->bwd_weights.slot[0];
    const dnnl_memory_desc_t *ma = NULL, *mb = NULL;
    if (!b->dry && a->re && w->re && dnnl_memory_get_memory_desc(a->m, &ma) == dnnl_success &&
        dnnl_memory_get_memory_desc(w->m, &mb) == dnnl_success)
        e->share_dy = a->off == 0 && w->off == 0 && dnnl_memory_desc_equal(ma, mb);
    /* dx written in place (no reorder out): accumulating needs the matmul or the one-image form */
    if (e->bwd_data.slot[2].via) return 0;
    int rc = build_bwd_data_add(b, op, e);
    return rc <= 0 ? rc : build_bwd_data(b, op, e, 1, &e->bwd_data1);
}

/* ---------------------------------------------------------------- entry points */

static void prim_destroy(dnnl_primitive_t p) {
    if (p) dnnl_primitive_destroy(p);
}
static void mem_destroy(dnnl_memory_t m) {
    if (m) dnnl_memory_destroy(m);
}

static void prim_release(conv_prim *p) {
    for (int k = 0; k < p->n_slots; k++) {
        conv_slot *s = &p->slot[k];
        prim_destroy(s->re), prim_destroy(s->re_add);
        mem_destroy(s->m), mem_destroy(s->user), mem_destroy(s->re_sp), mem_destroy(s->re_add_sp);
    }
    prim_destroy(p->prim);
    mem_destroy(p->sp);
    memset(p, 0, sizeof *p);
}

int yp_conv_build(const char *op, dnnl_engine_t engine, conv_entry *e, yp_conv_stage stage, int dry) {
    const conv_bld b = {engine, dry};
    int rc = stage == YP_CONV_FORWARD ? build_fwd(&b, op, e) : build_bwd(&b, op, e);
    if (rc && stage == YP_CONV_FORWARD) {
        prim_release(&e->fwd);
    } else if (rc) {
        prim_release(&e->bwd_data), prim_release(&e->bwd_weights);
        prim_release(&e->bwd_data_add), prim_release(&e->bwd_data1);
        e->share_dy = 0;
    }
    return rc;
}

void yp_conv_entry_release(conv_entry *e) {
    prim_release(&e->fwd), prim_release(&e->bwd_data), prim_release(&e->bwd_weights);
    prim_release(&e->bwd_data_add), prim_release(&e->bwd_data1);
}
