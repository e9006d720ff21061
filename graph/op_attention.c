/* op_attention.c - attention: the core of nn.MultiheadAttention as YOLOv5's TransformerLayer
 * (C3TR) runs it, between its in_proj and out_proj (1x1 convs with bias). Inputs q, k, v of one
 * shape (n, c, h, w); per image and head (channels h*d .. h*d+d-1, d = c/heads) over the L = h*w
 * pixels as tokens: softmax(q_h k_h^T / sqrt(d)) v_h, output (n, c, h, w). */
#include "ops_internal.h"

int yp_attn_check(const yp_check_ctx *c, const yp_node *n, int *c_out) {
    int cq = yp_check_channels(c, n->inputs[0]), heads = n->a.attn.heads;
    for (int k = 1; k < 3; k++) {
        int ck = yp_check_channels(c, n->inputs[k]);
        if (ck != cq)
            return yp_err_set(c->err, "%s: nodes[%d].inputs[%d]: attention of q with %d channels and %s with %d; "
                              "q, k and v need the same channel count", c->file, c->i, k, cq, k == 1 ? "k" : "v", ck);
    }
    if (cq % heads)
        return yp_err_set(c->err, "%s: nodes[%d].attrs.heads: %d does not divide the %d channels; use a divisor "
                          "of %d", c->file, c->i, heads, cq, cq);
    *c_out = cq;
    return 0;
}

int yp_attn_infer(const yp_infer_ctx *c, const yp_node *n, yp_node_info *o) {
    yp_shape q = o->out[0];
    for (int k = 1; k < 3; k++) {
        yp_shape x = yp_infer_shape(c, n->inputs[k]);
        if (x.h != q.h || x.w != q.w)
            return yp_err_set(c->err, "node %d (%s): attention of q on a %lldx%lld map and %s on %lldx%lld; q, k "
                              "and v need one map size", n->id, n->name, (long long)q.h, (long long)q.w,
                              k == 1 ? "k" : "v", (long long)x.h, (long long)x.w);
    }
    o->flops = yp_attn_flops(n, q);
    return 0;
}

/* The two batched matmuls (q k^T and P v: 2*L*L*c each per image) and the softmax (5 per score:
 * max, subtract, exp, sum, divide), for output shape `out`; -1 on overflow. */
int64_t yp_attn_flops(const yp_node *n, yp_shape out) {
    int64_t L = out.h * out.w;
    int64_t mm = yp_mul4(4 * out.n, L, L, out.c), sm = yp_mul4(5 * out.n, L, L, n->a.attn.heads);
    int64_t sum;
    if (mm < 0 || sm < 0 || __builtin_add_overflow(mm, sm, &sum)) return -1;
    return sum;
}

int yp_attn_load(const yp_attrs_in *in, yp_node *n) {
    static const char *const keys[] = {"heads", NULL};
    return yp_attr_keys(in, keys) || yp_attr_int(in, "heads", 1, YP_LIM_CHANNELS, &n->a.attn.heads) ? -1 : 0;
}

void yp_attn_write(const yp_node *n, yp_attrs_out *out) {
    cJSON_AddNumberToObject(out->obj, "heads", n->a.attn.heads);
}

unsigned yp_attn_fwd_writes(const yp_node *n) {
    (void)n;
    return YP_FWD_ATTN_PROBS;
}
