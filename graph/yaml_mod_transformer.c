/* yaml_mod_transformer.c - YOLOv5's transformer module (models/common.py): C3TR, a C3 whose
 * bottlenecks are one TransformerBlock(c_, c_, 4 heads, n layers). The tokens are a feature
 * map's pixels, so every nn.Linear is a 1x1 conv2d node (with bias where the Linear has one,
 * weight (out, in) = OIHW (out, in, 1, 1)), and nn.MultiheadAttention is its in_proj -- three
 * 1x1 convs with bias on the q, k, v chunks of in_proj_weight / in_proj_bias, named
 * <ma>.in_proj.q/k/v (a state dict's in_proj_weight is their weights stacked) -- the attention
 * node (named <ma>) and out_proj. Names follow the state dict: model.8.m.tr.0.q, ... */
#include "yaml_build.h"

enum { C3TR_HEADS = 4 }; /* C3TR: TransformerBlock(c_, c_, 4, n) */

/* nn.Linear(c, c, bias) on the tokens of node in, named NAME; strided: PyTorch holds those tokens
 * as a permuted view, which the Linear copies (yp_conv_attrs.torch_input_copy). */
static int add_linear_on(builder *b, int in, int c, int bias, int strided, const char *name) {
    yp_conv_attrs a = yb_conv_attrs(c, c, 1, 1);
    a.bias = bias, a.torch_input_copy = strided;
    return yb_add_node(b, YP_OP_CONV2D, &in, 1, (yp_attrs){.conv = a}, "%s", name);
}
static int add_linear(builder *b, int in, int c, int bias, const char *name) {
    return add_linear_on(b, in, c, bias, 0, name);
}

static int add_sum(builder *b, int x, int y, const char *name) {
    return yb_add_node(b, YP_OP_ADD, (int[]){x, y}, 2, (yp_attrs){0}, "%s", name);
}

/* TransformerLayer(c, heads) named PRE: x = ma(q(x), k(x), v(x)) + x; x = fc2(fc1(x)) + x.
 * strided: x is the block's p + linear(p), which keeps p's permuted layout (the first layer). */
static int add_transformer_layer(builder *b, const char *pre, int x, int c, int heads, int strided) {
    char t[YP_NAME_LEN];
    static const char qkv[3] = {'q', 'k', 'v'};
    int in[3], proj[3];
    for (int j = 0; j < 3; j++) in[j] = add_linear_on(b, x, c, 0, strided, yb_pfx(t, "%s.%c", pre, qkv[j]));
    for (int j = 0; j < 3; j++) /* inside ma, after its arguments: PyTorch's order */
        proj[j] = add_linear(b, in[j], c, 1, yb_pfx(t, "%s.ma.in_proj.%c", pre, qkv[j]));
    int a = yb_add_node(b, YP_OP_ATTENTION, proj, 3, (yp_attrs){.attn = {.heads = heads}}, "%s.ma", pre);
    int o = add_linear(b, a, c, 1, yb_pfx(t, "%s.ma.out_proj", pre));
    x = add_sum(b, o, x, yb_pfx(t, "%s.add1", pre));
    int f = add_linear(b, x, c, 0, yb_pfx(t, "%s.fc1", pre));
    f = add_linear(b, f, c, 0, yb_pfx(t, "%s.fc2", pre));
    return add_sum(b, f, x, yb_pfx(t, "%s.add2", pre));
}

/* TransformerBlock(c1, c2, heads, n) named PRE: Conv(c1, c2) when c1 != c2, then the learnable
 * position embedding p + linear(p) (linear with bias) and n TransformerLayers. */
static int add_transformer_block(builder *b, const char *pre, int x, int c1, int c2, int heads, int n) {
    char t[YP_NAME_LEN];
    if (c1 != c2) x = yb_add_conv(b, yb_pfx(t, "%s.conv", pre), x, yb_conv_attrs(c1, c2, 1, 1));
    /* p = x.flatten(2).permute(2, 0, 1) is a view in x's layout: linear copies it, and p + linear(p)
     * follows p's strides (the sum's first operand), so the first layer's q, k and v copy it too;
     * every later sum starts from a contiguous operand */
    int lin = add_linear_on(b, x, c2, 1, 1, yb_pfx(t, "%s.linear", pre));
    x = add_sum(b, x, lin, yb_pfx(t, "%s.add", pre));
    for (int j = 0; j < n; j++) x = add_transformer_layer(b, yb_pfx(t, "%s.tr.%d", pre, j), x, c2, heads, j == 0);
    return x;
}

/* C3TR(c2, shortcut=True): C3's frame (yb_c3_begin / yb_c3_end) around m = TransformerBlock(c_,
 * c_, 4, n), c_ = c2 / 2. `shortcut` is accepted as C3's and unused (the block has its own
 * residuals). */
int ym_c3tr(builder *b, const row *r) {
    int c2, shortcut, n = r->L->repeats, c_;
    if (yb_arg_channels(b, r, 0, &c2) || yb_arg_bool(b, r, 1, 1, &shortcut)) return -1;
    if (c2 / 2 % C3TR_HEADS)
        return yb_fail(b, r->line, "C3TR's %d attention heads must divide its hidden channels c2/2 = %d; use a c2 "
                       "that is a multiple of %d", C3TR_HEADS, c2 / 2, 2 * C3TR_HEADS);
    char t[YP_NAME_LEN];
    int x = yb_c3_begin(b, r, c2, &c_); /* NO_NODE (c2 < 2) passes through to yb_c3_end's -1 */
    x = add_transformer_block(b, yb_pfx(t, "%s.m", b->prefix), x, c_, c_, C3TR_HEADS, n);
    return yb_c3_end(b, r, x, c2, (int[]){r->c1, c2, n, shortcut}, 4);
}
