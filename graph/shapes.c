/* shapes.c - shape inference, parameter counts and FLOPs for any batch and image size: the
 * image checks here, each node through its op's row (ops.c), then the checks all outputs share. */
#include <stdlib.h>

#include "ops_internal.h"

static int64_t gcd64(int64_t a, int64_t b) {
    while (b) {
        int64_t t = a % b;
        a = b, b = t;
    }
    return a;
}

/* lcm(m, a), capped at 2^20 (m, a in 1..2^20, so the product fits). */
static int64_t lcm_capped(int64_t m, int64_t a) {
    int64_t l = m / gcd64(m, a) * a;
    return l < (1 << 20) ? l : (1 << 20);
}

/* The least common multiple of m and of every node output's downsampling of the image along
 * `axis` (0 height, 1 width): what the image's side must be a multiple of. */
static int64_t max_stride_axis(const yp_graph *g, int axis, int64_t m) {
    /* each node's downsampling, as a fraction num/den of the image in lowest terms (exact: capped
     * only so that a hostile graph cannot overflow). Its map is the image times den/num, a whole
     * size exactly where num divides the image: every num counts, also after an upsampling (an
     * Expand then a Contract of gain 3 is stride 3/2, which needs multiples of 3). */
    int64_t *num = malloc((size_t)g->n_nodes * sizeof *num), *den = malloc((size_t)g->n_nodes * sizeof *den);
    for (int i = 0; num && den && i < g->n_nodes; i++) {
        const yp_node *n = &g->nodes[i];
        int64_t a = 1, b = 1;
        for (int k = 0; k < n->n_inputs; k++) { /* the largest input stride */
            int v = n->inputs[k];
            int64_t va = v < 0 || v >= i ? 1 : num[v], vb = v < 0 || v >= i ? 1 : den[v];
            if (va * b > a * vb) a = va, b = vb;
        }
        const yp_op_info *op = (unsigned)n->op < YP_OP_COUNT ? yp_op_get(n->op) : NULL;
        int down = 1, up = 1;
        if (op && op->resample) op->resample(n, axis, &down, &up);
        a *= down > 0 ? down : 1, b *= up > 0 ? up : 1;
        int64_t d = gcd64(a, b);
        a /= d, b /= d;
        if (a > (1 << 20)) a = 1 << 20;
        if (b > (1 << 20)) b = 1 << 20;
        num[i] = a, den[i] = b;
        m = lcm_capped(m, a);
    }
    free(num);
    free(den);
    return m;
}

int yp_graph_max_stride(const yp_graph *g) {
    int64_t m = 1;
    for (int l = 0; l < g->nl; l++)
        if (g->strides[l] > 0) m = lcm_capped(m, g->strides[l] < (1 << 20) ? g->strides[l] : (1 << 20));
    return (int)max_stride_axis(g, 1, max_stride_axis(g, 0, m)); /* square images: both axes' */
}

/* The checks every op's outputs get: non-empty, and element counts and FLOPs within 64 bits. */
static int check_outputs(const yp_node *n, yp_shape x, const yp_node_info *o, yp_err *err) {
    for (int l = 0; l < o->n_out; l++) {
        yp_shape y = o->out[l];
        if (y.h <= 0 || y.w <= 0)
            return yp_err_set(err, "node %d (%s): output would be empty for a %lldx%lld input; use a larger image",
                              n->id, n->name, (long long)x.h, (long long)x.w);
        if (yp_mul4(y.n, y.c, y.h, y.w) < 0)
            return yp_err_set(err, "node %d (%s): tensor size overflows 64 bits; use a smaller batch or image",
                              n->id, n->name);
    }
    if (o->flops < 0)
        return yp_err_set(err, "node %d (%s): tensor size overflows 64 bits; use a smaller batch or image", n->id,
                          n->name);
    return 0;
}

static int infer_node(const yp_infer_ctx *c, const yp_node *n, yp_node_info *o) {
    yp_shape x = yp_infer_shape(c, n->inputs[0]);
    o->n_out = 1, o->out[0] = x;
    if (yp_op_get(n->op)->infer(c, n, o)) return -1;
    return check_outputs(n, x, o, c->err);
}

int yp_graph_infer(const yp_graph *g, int64_t batch, int64_t h, int64_t w, yp_node_info *info, yp_err *err) {
    int stride = yp_graph_max_stride(g);
    if (batch < 1) return yp_err_set(err, "batch %lld: must be at least 1", (long long)batch);
    if (h < stride || w < stride || h % stride || w % stride)
        return yp_err_set(err, "image size %lldx%lld: must be a positive multiple of %d (the largest stride of %s); "
                          "try %lld", (long long)w, (long long)h, stride, g->name,
                          (long long)((w > h ? w : h) + stride - 1) / stride * stride);
    yp_shape image = {batch, g->in_channels, h, w};
    if (yp_mul4(batch, g->in_channels, h, w) < 0)
        return yp_err_set(err, "batch %lld at %lldx%lld: the input size overflows 64 bits; use a smaller batch or "
                          "image", (long long)batch, (long long)w, (long long)h);
    yp_infer_ctx c = {g, info, image, err};
    for (int i = 0; i < g->n_nodes; i++) {
        info[i] = (yp_node_info){0};
        if (infer_node(&c, &g->nodes[i], &info[i])) return -1;
    }
    return 0;
}

int64_t yp_graph_params(const yp_graph *g) {
    yp_node_info *info = calloc((size_t)g->n_nodes, sizeof *info);
    int64_t total = 0;
    int64_t s = yp_graph_max_stride(g); /* the parameters do not depend on the size: the smallest one */
    if (info && yp_graph_infer(g, 1, s, s, info, NULL) == 0)
        for (int i = 0; i < g->n_nodes; i++) total += info[i].params;
    else
        total = -1;
    free(info);
    return total;
}
