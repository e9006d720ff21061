/* ops_internal.h - what the op table (ops.c) and the per-op files share: the contexts the row
 * functions take, small helpers over them, and the per-op functions the table names. Graph-
 * internal: yp_graph.h is the interface and declares the contexts only by name.
 * Per-op files: op_conv.c (conv2d, detect), op_pointwise.c (batchnorm2d and the activations silu,
 * relu, leaky_relu, hardswish), op_join.c (add, concat), op_resample.c (upsample_nearest, maxpool2d,
 * space_to_depth, contract, expand, zero_pad), op_attention.c (attention); ops.c holds the table and
 * the defaults several rows share.
 * Defines: yp_check_ctx, yp_infer_ctx, yp_attrs_in, yp_attrs_out and their helpers. */
#ifndef YP_OPS_INTERNAL_H
#define YP_OPS_INTERNAL_H

#include "ir_json.h"
#include "yp_graph.h"

/* ---- the structural check (graph.c) ---- */
struct yp_check_ctx {
    const yp_graph *g;
    const char *file; /* names the source in messages */
    int i;            /* the node being checked */
    const int *ch;    /* output channels of nodes 0..i-1 (-1: no single output) */
    yp_err *err;
};

/* Output channels of node `id`, or of the image for YP_INPUT_IMAGE. */
static inline int yp_check_channels(const yp_check_ctx *c, int id) {
    return id == YP_INPUT_IMAGE ? c->g->in_channels : c->ch[id];
}

/* ---- shape inference (shapes.c) ---- */
struct yp_infer_ctx {
    const yp_graph *g;
    const yp_node_info *info; /* filled for nodes before the one being inferred */
    yp_shape image;           /* the network's input */
    yp_err *err;
};

/* Shape of node `id`'s (first) output, or of the image for YP_INPUT_IMAGE. */
static inline yp_shape yp_infer_shape(const yp_infer_ctx *c, int id) {
    return id == YP_INPUT_IMAGE ? c->image : c->info[id].out[0];
}

/* a*b*c*d in 64 bits; returns -1 on overflow. */
static inline int64_t yp_mul4(int64_t a, int64_t b, int64_t c, int64_t d) {
    int64_t r;
    if (__builtin_mul_overflow(a, b, &r) || __builtin_mul_overflow(r, c, &r) || __builtin_mul_overflow(r, d, &r))
        return -1;
    return r;
}

/* Output extent of a k/s/p window over n; <= 0 when the window does not fit. */
static inline int64_t yp_window_out(int64_t n, int k, int s, int p) {
    return n + 2 * p < k ? 0 : (n + 2 * p - k) / s + 1;
}

/* ---- attrs in JSON (ir_load.c, ir_write.c) ---- */
struct yp_attrs_in {
    yp_jctx *c;
    const cJSON *obj; /* the attrs object (empty when the node has none) */
    const char *path; /* "nodes[12].attrs", for messages */
};

struct yp_attrs_out {
    cJSON *obj; /* the attrs object; left empty, it is not written */
};

static inline int yp_attr_keys(const yp_attrs_in *in, const char *const *allowed) {
    return yp_jkeys(in->c, in->obj, in->path, allowed);
}
static inline int yp_attr_int(const yp_attrs_in *in, const char *key, long lo, long hi, int *out) {
    return yp_jint(in->c, in->obj, in->path, key, lo, hi, out);
}
static inline int yp_attr_num(const yp_attrs_in *in, const char *key, double lo, double hi, double *out) {
    return yp_jnum(in->c, in->obj, in->path, key, lo, hi, out);
}
static inline int yp_attr_bool(const yp_attrs_in *in, const char *key, int *out) {
    return yp_jbool(in->c, in->obj, in->path, key, out);
}
static inline int yp_attr_ints(const yp_attrs_in *in, const char *key, int max, long lo, long hi, int *out,
                               int *n_out) {
    return yp_jints(in->c, in->obj, in->path, key, max, lo, hi, out, n_out);
}
/* A per-axis attr: N (both axes) or [height, width], as PyTorch's kernel_size; into out[0], out[1]. */
static inline int yp_attr_pair(const yp_attrs_in *in, const char *key, long lo, long hi, int out[2]) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(in->obj, key);
    int n = 0;
    if (!cJSON_IsArray(v)) {
        if (yp_attr_int(in, key, lo, hi, &out[0])) return -1;
        out[1] = out[0];
        return 0;
    }
    if (yp_attr_ints(in, key, 2, lo, hi, out, &n)) return -1;
    if (n != 2)
        return yp_err_set(in->c->err, "%s: %s.%s: expected N or [height, width], got an array of %d", in->c->file,
                          in->path, key, n);
    return 0;
}
/* Writes a per-axis attr as N when both axes agree, else as [height, width]. */
static inline void yp_attr_write_pair(yp_attrs_out *out, const char *key, int h, int w) {
    if (h == w)
        cJSON_AddNumberToObject(out->obj, key, h);
    else
        cJSON_AddItemToObject(out->obj, key, cJSON_CreateIntArray((const int[]){h, w}, 2));
}

/* ---- defaults several rows share (ops.c) ---- */
int yp_op_same_channels(const yp_check_ctx *c, const yp_node *n, int *c_out);
int yp_op_same_shape(const yp_infer_ctx *c, const yp_node *n, yp_node_info *o);
int64_t yp_op_numel_flops(const yp_node *n, yp_shape out);
int yp_op_no_attrs(const yp_attrs_in *in, yp_node *n);
void yp_op_write_no_attrs(const yp_node *n, yp_attrs_out *out);

/* ---- op_conv.c ---- */
int yp_conv2d_check(const yp_check_ctx *c, const yp_node *n, int *c_out);
int yp_conv2d_infer(const yp_infer_ctx *c, const yp_node *n, yp_node_info *o);
int yp_conv2d_load(const yp_attrs_in *in, yp_node *n);
void yp_conv2d_write(const yp_node *n, yp_attrs_out *out);
void yp_conv2d_resample(const yp_node *n, int axis, int *down, int *up);
int yp_conv2d_params(const yp_node *n, yp_param_spec *out);
void yp_conv2d_geom(const yp_node *n, int level, yp_conv_geom *g);
unsigned yp_conv2d_fwd_writes(const yp_node *n);
int yp_detect_check(const yp_check_ctx *c, const yp_node *n, int *c_out);
int yp_detect_infer(const yp_infer_ctx *c, const yp_node *n, yp_node_info *o);
int yp_detect_load(const yp_attrs_in *in, yp_node *n);
void yp_detect_write(const yp_node *n, yp_attrs_out *out);
int yp_detect_params(const yp_node *n, yp_param_spec *out);
void yp_detect_geom(const yp_node *n, int level, yp_conv_geom *g);

/* ---- op_pointwise.c ---- */
int yp_bn_check(const yp_check_ctx *c, const yp_node *n, int *c_out);
int yp_bn_infer(const yp_infer_ctx *c, const yp_node *n, yp_node_info *o);
int64_t yp_bn_flops(const yp_node *n, yp_shape out);
int yp_bn_load(const yp_attrs_in *in, yp_node *n);
void yp_bn_write(const yp_node *n, yp_attrs_out *out);
int yp_bn_params(const yp_node *n, yp_param_spec *out);
unsigned yp_bn_fwd_writes(const yp_node *n);
int64_t yp_silu_flops(const yp_node *n, yp_shape out);
int64_t yp_leaky_flops(const yp_node *n, yp_shape out);
int yp_leaky_load(const yp_attrs_in *in, yp_node *n);
void yp_leaky_write(const yp_node *n, yp_attrs_out *out);
int64_t yp_hardswish_flops(const yp_node *n, yp_shape out);

/* ---- op_join.c ---- */
int yp_add_check(const yp_check_ctx *c, const yp_node *n, int *c_out);
int yp_add_infer(const yp_infer_ctx *c, const yp_node *n, yp_node_info *o);
int yp_concat_check(const yp_check_ctx *c, const yp_node *n, int *c_out);
int yp_concat_infer(const yp_infer_ctx *c, const yp_node *n, yp_node_info *o);
int yp_concat_load(const yp_attrs_in *in, yp_node *n);
void yp_concat_write(const yp_node *n, yp_attrs_out *out);

/* ---- op_resample.c ---- */
int yp_upsample_infer(const yp_infer_ctx *c, const yp_node *n, yp_node_info *o);
int yp_upsample_load(const yp_attrs_in *in, yp_node *n);
void yp_upsample_write(const yp_node *n, yp_attrs_out *out);
void yp_upsample_resample(const yp_node *n, int axis, int *down, int *up);
int yp_maxpool_infer(const yp_infer_ctx *c, const yp_node *n, yp_node_info *o);
int64_t yp_maxpool_flops(const yp_node *n, yp_shape out);
int yp_maxpool_load(const yp_attrs_in *in, yp_node *n);
void yp_maxpool_write(const yp_node *n, yp_attrs_out *out);
void yp_maxpool_resample(const yp_node *n, int axis, int *down, int *up);
unsigned yp_maxpool_fwd_writes(const yp_node *n);
int yp_s2d_check(const yp_check_ctx *c, const yp_node *n, int *c_out);
int yp_s2d_infer(const yp_infer_ctx *c, const yp_node *n, yp_node_info *o);
void yp_s2d_resample(const yp_node *n, int axis, int *down, int *up);
int yp_contract_check(const yp_check_ctx *c, const yp_node *n, int *c_out);
int yp_expand_check(const yp_check_ctx *c, const yp_node *n, int *c_out);
int yp_contract_infer(const yp_infer_ctx *c, const yp_node *n, yp_node_info *o);
int yp_expand_infer(const yp_infer_ctx *c, const yp_node *n, yp_node_info *o);
int yp_s2d_gain_load(const yp_attrs_in *in, yp_node *n); /* contract and expand: {"gain": g} */
void yp_s2d_gain_write(const yp_node *n, yp_attrs_out *out);
void yp_contract_resample(const yp_node *n, int axis, int *down, int *up);
void yp_expand_resample(const yp_node *n, int axis, int *down, int *up);
int yp_zero_pad_infer(const yp_infer_ctx *c, const yp_node *n, yp_node_info *o);
int yp_zero_pad_load(const yp_attrs_in *in, yp_node *n);
void yp_zero_pad_write(const yp_node *n, yp_attrs_out *out);

/* ---- op_attention.c ---- */
int yp_attn_check(const yp_check_ctx *c, const yp_node *n, int *c_out);
int yp_attn_infer(const yp_infer_ctx *c, const yp_node *n, yp_node_info *o);
int64_t yp_attn_flops(const yp_node *n, yp_shape out);
int yp_attn_load(const yp_attrs_in *in, yp_node *n);
void yp_attn_write(const yp_node *n, yp_attrs_out *out);
unsigned yp_attn_fwd_writes(const yp_node *n);

#endif
