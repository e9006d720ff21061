/* op_resample.c - the ops that change a map's spatial size and keep its data per channel:
 * upsample_nearest, maxpool2d, space_to_depth (Focus: 2x2 pixel blocks to channels), contract
 * and expand (YOLOv5's Contract and Expand: gain x gain blocks to channels and back) and
 * zero_pad. */
#include "ops_internal.h"

/* ---------------------------------------------------------------- upsample_nearest */

int yp_upsample_infer(const yp_infer_ctx *c, const yp_node *n, yp_node_info *o) {
    (void)c;
    o->out[0].h *= n->a.up.scale, o->out[0].w *= n->a.up.scale;
    return 0;
}

int yp_upsample_load(const yp_attrs_in *in, yp_node *n) {
    static const char *const keys[] = {"scale", NULL};
    return yp_attr_keys(in, keys) || yp_attr_int(in, "scale", 2, 8, &n->a.up.scale) ? -1 : 0;
}

void yp_upsample_write(const yp_node *n, yp_attrs_out *out) {
    cJSON_AddNumberToObject(out->obj, "scale", n->a.up.scale);
}

/* ---------------------------------------------------------------- maxpool2d */

int yp_maxpool_infer(const yp_infer_ctx *c, const yp_node *n, yp_node_info *o) {
    const yp_pool_attrs *a = &n->a.pool;
    (void)c;
    o->out[0].h = yp_window_out(o->out[0].h, a->k, a->s, a->p);
    o->out[0].w = yp_window_out(o->out[0].w, a->k, a->s, a->p);
    return 0;
}

int64_t yp_maxpool_flops(const yp_node *n, yp_shape out) {
    return (int64_t)n->a.pool.k * n->a.pool.k * yp_shape_numel(out);
}

unsigned yp_maxpool_fwd_writes(const yp_node *n) {
    (void)n;
    return YP_FWD_INDICES;
}

int yp_maxpool_load(const yp_attrs_in *in, yp_node *n) {
    static const char *const keys[] = {"k", "s", "p", NULL};
    yp_pool_attrs *a = &n->a.pool;
    if (yp_attr_keys(in, keys) || yp_attr_int(in, "k", 1, YP_LIM_KERNEL, &a->k) ||
        yp_attr_int(in, "s", 1, YP_LIM_KERNEL, &a->s) || yp_attr_int(in, "p", 0, YP_LIM_KERNEL, &a->p))
        return -1;
    if (2 * a->p > a->k)
        return yp_err_set(in->c->err, "%s: %s.p: padding %d exceeds half the kernel %d; use p <= k/2", in->c->file,
                          in->path, a->p, a->k);
    return 0;
}

void yp_maxpool_write(const yp_node *n, yp_attrs_out *out) {
    cJSON_AddNumberToObject(out->obj, "k", n->a.pool.k);
    cJSON_AddNumberToObject(out->obj, "s", n->a.pool.s);
    cJSON_AddNumberToObject(out->obj, "p", n->a.pool.p);
}

/* ---------------------------------------------------------------- space_to_depth (no attrs) */

int yp_s2d_check(const yp_check_ctx *c, const yp_node *n, int *c_out) {
    int ch = yp_check_channels(c, n->inputs[0]);
    if (ch > YP_LIM_CHANNELS / 4)
        return yp_err_set(c->err, "%s: nodes[%d]: space_to_depth of %d channels makes %lld; a map has at most %d",
                          c->file, c->i, ch, 4LL * ch, YP_LIM_CHANNELS);
    *c_out = 4 * ch;
    return 0;
}

int yp_s2d_infer(const yp_infer_ctx *c, const yp_node *n, yp_node_info *o) {
    (void)c, (void)n;
    o->out[0].c *= 4, o->out[0].h /= 2, o->out[0].w /= 2;
    return 0;
}

void yp_upsample_resample(const yp_node *n, int axis, int *down, int *up) {
    (void)axis, *down = 1, *up = n->a.up.scale;
}
void yp_maxpool_resample(const yp_node *n, int axis, int *down, int *up) { (void)axis, *down = n->a.pool.s, *up = 1; }
void yp_s2d_resample(const yp_node *n, int axis, int *down, int *up) { (void)n, (void)axis, *down = 2, *up = 1; }

/* ---------------------------------------------------------------- contract, expand */

int yp_contract_check(const yp_check_ctx *c, const yp_node *n, int *c_out) {
    int ch = yp_check_channels(c, n->inputs[0]), g2 = n->a.s2d.gain * n->a.s2d.gain;
    if (ch > YP_LIM_CHANNELS / g2)
        return yp_err_set(c->err, "%s: nodes[%d]: contract by %d of %d channels makes %lld; a map has at most %d",
                          c->file, c->i, n->a.s2d.gain, ch, (long long)g2 * ch, YP_LIM_CHANNELS);
    *c_out = g2 * ch;
    return 0;
}

int yp_expand_check(const yp_check_ctx *c, const yp_node *n, int *c_out) {
    int ch = yp_check_channels(c, n->inputs[0]), g = n->a.s2d.gain;
    if (ch % (g * g))
        return yp_err_set(c->err, "%s: nodes[%d]: expand by %d of %d channels: the channels must be a multiple of "
                          "gain^2 = %d", c->file, c->i, g, ch, g * g);
    *c_out = ch / (g * g);
    return 0;
}

/* Contract's view needs whole blocks (PyTorch refuses the rest); yp_graph_max_stride counts the
 * gain, so a size it allows always gives them. */
int yp_contract_infer(const yp_infer_ctx *c, const yp_node *n, yp_node_info *o) {
    const int g = n->a.s2d.gain;
    yp_shape *y = &o->out[0];
    if (y->h % g || y->w % g)
        return yp_err_set(c->err, "node %d (%s): contract by %d of a %lldx%lld map: its height and width must be "
                          "multiples of %d; use an image size that is a multiple of %d", n->id, n->name, g,
                          (long long)y->w, (long long)y->h, g, yp_graph_max_stride(c->g));
    y->c *= (int64_t)g * g, y->h /= g, y->w /= g;
    return 0;
}

int yp_expand_infer(const yp_infer_ctx *c, const yp_node *n, yp_node_info *o) {
    const int g = n->a.s2d.gain;
    yp_shape *y = &o->out[0];
    (void)c;
    y->c /= (int64_t)g * g, y->h *= g, y->w *= g;
    return 0;
}

int yp_s2d_gain_load(const yp_attrs_in *in, yp_node *n) {
    static const char *const keys[] = {"gain", NULL};
    return yp_attr_keys(in, keys) || yp_attr_int(in, "gain", 2, YP_MAX_GAIN, &n->a.s2d.gain) ? -1 : 0;
}

void yp_s2d_gain_write(const yp_node *n, yp_attrs_out *out) {
    cJSON_AddNumberToObject(out->obj, "gain", n->a.s2d.gain);
}

void yp_contract_resample(const yp_node *n, int axis, int *down, int *up) {
    (void)axis, *down = n->a.s2d.gain, *up = 1;
}
void yp_expand_resample(const yp_node *n, int axis, int *down, int *up) { (void)axis, *down = 1, *up = n->a.s2d.gain; }

/* ---------------------------------------------------------------- zero_pad */

/* The widest zero border a side takes: yolov3-tiny pads one pixel; a border beyond this is no
 * network's and would only make shapes that overflow later. */
#define YP_PAD_MAX 1024

int yp_zero_pad_infer(const yp_infer_ctx *c, const yp_node *n, yp_node_info *o) {
    const yp_pad_attrs *a = &n->a.pad;
    (void)c;
    o->out[0].h += a->top + a->bottom, o->out[0].w += a->left + a->right;
    return 0;
}

int yp_zero_pad_load(const yp_attrs_in *in, yp_node *n) {
    static const char *const keys[] = {"left", "right", "top", "bottom", NULL};
    yp_pad_attrs *a = &n->a.pad;
    if (yp_attr_keys(in, keys) || yp_attr_int(in, "left", 0, YP_PAD_MAX, &a->left) ||
        yp_attr_int(in, "right", 0, YP_PAD_MAX, &a->right) || yp_attr_int(in, "top", 0, YP_PAD_MAX, &a->top) ||
        yp_attr_int(in, "bottom", 0, YP_PAD_MAX, &a->bottom))
        return -1;
    return 0;
}

void yp_zero_pad_write(const yp_node *n, yp_attrs_out *out) {
    cJSON_AddNumberToObject(out->obj, "left", n->a.pad.left);
    cJSON_AddNumberToObject(out->obj, "right", n->a.pad.right);
    cJSON_AddNumberToObject(out->obj, "top", n->a.pad.top);
    cJSON_AddNumberToObject(out->obj, "bottom", n->a.pad.bottom);
}
