/* shapes.c - shape inference, parameter counts and FLOPs for any batch and image size. */
#include <stdlib.h>

#include "yp_graph.h"

int yp_graph_max_stride(const yp_graph *g) {
    int m = 1;
    for (int l = 0; l < g->nl; l++)
        if (g->strides[l] > m) m = g->strides[l];
    return m;
}

/* a*b*c*d in 64 bits; returns -1 on overflow. */
static int64_t mul4(int64_t a, int64_t b, int64_t c, int64_t d) {
    int64_t r;
    if (__builtin_mul_overflow(a, b, &r) || __builtin_mul_overflow(r, c, &r) || __builtin_mul_overflow(r, d, &r))
        return -1;
    return r;
}

static int64_t conv_params(int c_in, int c_out, int k, int groups, int bias) {
    return (int64_t)(c_in / groups) * c_out * k * k + (bias ? c_out : 0);
}

static yp_shape in_shape(const yp_node_info *info, int id, yp_shape image) {
    return id == YP_INPUT_IMAGE ? image : info[id].out[0];
}

/* Output extent of a k/s/p window over n; <= 0 when the window does not fit. */
static int64_t window_out(int64_t n, int k, int s, int p) {
    return n + 2 * p < k ? 0 : (n + 2 * p - k) / s + 1;
}

static int infer_node(const yp_graph *g, const yp_node *n, yp_node_info *info, yp_shape image, yp_err *err) {
    yp_node_info *o = &info[n->id];
    yp_shape x = in_shape(info, n->inputs[0], image), y = x;
    o->n_out = 1;
    switch (n->op) {
    case YP_OP_CONV2D: {
        const yp_conv_attrs *a = &n->a.conv;
        y.c = a->c_out, y.h = window_out(x.h, a->k, a->s, a->p), y.w = window_out(x.w, a->k, a->s, a->p);
        o->params = conv_params(a->c_in, a->c_out, a->k, a->groups, a->bias);
        o->flops = mul4(2 * y.n, y.c * y.h, y.w, (int64_t)(a->c_in / a->groups) * a->k * a->k);
        break;
    }
    case YP_OP_BATCHNORM2D: o->params = 2 * (int64_t)n->a.bn.c, o->buffers = 2 * (int64_t)n->a.bn.c; break;
    case YP_OP_ADD: {
        yp_shape b = in_shape(info, n->inputs[1], image);
        if (b.h != x.h || b.w != x.w)
            return yp_err_set(err, "node %d (%s): add of %lldx%lld and %lldx%lld maps; the image size must be a "
                              "multiple of %d", n->id, n->name, (long long)x.h, (long long)x.w, (long long)b.h,
                              (long long)b.w, yp_graph_max_stride(g));
        break;
    }
    case YP_OP_CONCAT:
        y.c = 0;
        for (int k = 0; k < n->n_inputs; k++) {
            yp_shape b = in_shape(info, n->inputs[k], image);
            if (b.h != x.h || b.w != x.w)
                return yp_err_set(err, "node %d (%s): concat of %lldx%lld and %lldx%lld maps; the image size must "
                                  "be a multiple of %d", n->id, n->name, (long long)x.h, (long long)x.w,
                                  (long long)b.h, (long long)b.w, yp_graph_max_stride(g));
            y.c += b.c;
        }
        break;
    case YP_OP_UPSAMPLE_NEAREST: y.h = x.h * n->a.up.scale, y.w = x.w * n->a.up.scale; break;
    case YP_OP_MAXPOOL2D:
        y.h = window_out(x.h, n->a.pool.k, n->a.pool.s, n->a.pool.p);
        y.w = window_out(x.w, n->a.pool.k, n->a.pool.s, n->a.pool.p);
        break;
    case YP_OP_SPACE_TO_DEPTH: y.c = 4 * x.c, y.h = x.h / 2, y.w = x.w / 2; break;
    case YP_OP_DETECT: {
        const yp_detect_attrs *d = &n->a.detect;
        int64_t no = (int64_t)d->na * (d->nc + 5);
        o->n_out = d->nl, o->flops = 0;
        for (int l = 0; l < d->nl; l++) {
            yp_shape b = in_shape(info, n->inputs[l], image);
            o->out[l] = b, o->out[l].c = no;
            o->params += conv_params(d->c_in[l], (int)no, 1, 1, 1);
            o->flops += mul4(2 * b.n, no * b.h, b.w, d->c_in[l]);
        }
        return 0;
    }
    default: break; /* silu keeps the shape */
    }
    if (y.h <= 0 || y.w <= 0)
        return yp_err_set(err, "node %d (%s): output would be empty for a %lldx%lld input; use a larger image",
                          n->id, n->name, (long long)x.h, (long long)x.w);
    if (mul4(y.n, y.c, y.h, y.w) < 0 || o->flops < 0)
        return yp_err_set(err, "node %d (%s): tensor size overflows 64 bits; use a smaller batch or image", n->id,
                          n->name);
    o->out[0] = y;
    return 0;
}

int yp_graph_infer(const yp_graph *g, int64_t batch, int64_t h, int64_t w, yp_node_info *info, yp_err *err) {
    int stride = yp_graph_max_stride(g);
    if (batch < 1) return yp_err_set(err, "batch %lld: must be at least 1", (long long)batch);
    if (h < stride || w < stride || h % stride || w % stride)
        return yp_err_set(err, "image size %lldx%lld: must be a positive multiple of %d (the largest stride of %s); "
                          "try %lld", (long long)w, (long long)h, stride, g->name,
                          (long long)((w > h ? w : h) + stride - 1) / stride * stride);
    yp_shape image = {batch, g->in_channels, h, w};
    if (mul4(batch, g->in_channels, h, w) < 0)
        return yp_err_set(err, "batch %lld at %lldx%lld: the input size overflows 64 bits; use a smaller batch or "
                          "image", (long long)batch, (long long)w, (long long)h);
    for (int i = 0; i < g->n_nodes; i++) {
        info[i] = (yp_node_info){0};
        if (infer_node(g, &g->nodes[i], info, image, err)) return -1;
    }
    return 0;
}

int64_t yp_graph_params(const yp_graph *g) {
    yp_node_info *info = calloc((size_t)g->n_nodes, sizeof *info);
    int64_t total = 0;
    int s = yp_graph_max_stride(g);
    if (info && yp_graph_infer(g, 1, s, s, info, NULL) == 0)
        for (int i = 0; i < g->n_nodes; i++) total += info[i].params;
    else
        total = -1;
    free(info);
    return total;
}
