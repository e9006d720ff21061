/* yaml_mod_csp.c - the CSP modules other than C3: BottleneckCSP (YOLOv5 up to v3.1), C3SPP (a C3
 * around an SPP), C3x (a C3 around CrossConvs) and CrossConv itself, with YOLOv5's argument
 * conventions (models/common.py). */
#include <stdio.h>

#include "yaml_build.h"

/* BottleneckCSP(c2, shortcut=True), number = its bottlenecks; c_ = c2 / 2:
 *   y1 = cv3(m(cv1(x))), y2 = cv2(x), out = cv4(act(bn(cat(y1, y2))))
 * cv1 and cv4 are Convs, cv2 and cv3 plain nn.Conv2d without bias, bn an nn.BatchNorm2d over 2 c_
 * (eps 1e-3 and momentum 0.03, as YOLOv5's initialize_weights sets every BatchNorm2d), act a fixed
 * nn.SiLU (not the yaml's activation), m n x Bottleneck(c_, c_, shortcut, e=1.0). */
int ym_bottleneck_csp(builder *b, const row *r) {
    int c2, shortcut, n = r->L->repeats;
    if (yb_arg_channels(b, r, 0, &c2) || yb_arg_bool(b, r, 1, 1, &shortcut)) return -1;
    int c_ = c2 / 2;
    if (c_ < 1) return yb_fail(b, r->line, "BottleneckCSP needs at least 2 output channels");
    char t[YP_NAME_LEN];
    const char *pre = b->prefix;
    int x = yb_add_conv(b, yb_pfx(t, "%s.cv1", pre), r->in, yb_conv_attrs(r->c1, c_, 1, 1));
    for (int j = 0; j < n; j++) x = yb_add_bottleneck(b, yb_pfx(t, "%s.m.%d", pre, j), x, c_, c_, c_, shortcut);
    int y1 = yb_add_node(b, YP_OP_CONV2D, &x, 1, (yp_attrs){.conv = yb_conv_attrs(c_, c_, 1, 1)}, "%s.cv3", pre);
    int y2 = yb_add_node(b, YP_OP_CONV2D, &r->in, 1, (yp_attrs){.conv = yb_conv_attrs(r->c1, c_, 1, 1)}, "%s.cv2",
                         pre);
    int cat = yb_add_concat(b, (int[]){y1, y2}, 2, yb_pfx(t, "%s.cat", pre));
    yp_bn_attrs bn = {.c = 2 * c_, .eps = 1e-3, .momentum = 0.03};
    int z = yb_add_node(b, YP_OP_BATCHNORM2D, &cat, 1, (yp_attrs){.bn = bn}, "%s.bn", pre);
    z = yb_add_act(b, (yb_act){.op = YP_OP_SILU}, z, yb_pfx(t, "%s.act", pre));
    int out = yb_add_conv(b, yb_pfx(t, "%s.cv4", pre), z, yb_conv_attrs(2 * c_, c2, 1, 1));
    return yb_layer_done(b, r, out, c2, r->in_stride, (int[]){r->c1, c2, n, shortcut}, 4);
}

/* C3SPP(c2, k=(5, 9, 13)): a C3 whose m is SPP(c_, c_, k); `number` repeats the whole module. */
int ym_c3spp(builder *b, const row *r) {
    int c2, k[3] = {0}, c_;
    int nk = yb_arg_channels(b, r, 0, &c2) ? -1 : yb_spp_kernels(b, r, k);
    if (nk < 0) return -1;
    char t[YP_NAME_LEN];
    int x = yb_c3_begin(b, r, c2, &c_);
    if (x != NO_NODE && c_ < 2) return yb_fail(b, r->line, "C3SPP needs at least 4 output channels");
    x = yb_add_spp(b, yb_pfx(t, "%s.m", b->prefix), x, c_, c_, k, nk);
    return yb_c3_end(b, r, x, c2, (int[]){r->c1, c2, k[0], k[1], k[2]}, 2 + nk);
}

/* CrossConv body: cv1 Conv(c1, c_, (1, k), (1, s)), cv2 Conv(c_, c2, (k, 1), (s, 1), g), plus the
 * input when shortcut and c1 == c2. Returns the output's id, or NO_NODE. */
static int add_cross_conv(builder *b, const char *pre, int in, int c1, int c2, int c_, int k, int s, int g,
                          int shortcut) {
    char t[YP_NAME_LEN];
    int h = yb_add_conv(b, yb_pfx(t, "%s.cv1", pre), in, yb_conv_attrs_hw(c1, c_, 1, k, 1, s));
    yp_conv_attrs a2 = yb_conv_attrs_hw(c_, c2, k, 1, s, 1);
    a2.groups = g;
    int y = yb_add_conv(b, yb_pfx(t, "%s.cv2", pre), h, a2);
    if (!shortcut || c1 != c2) return y;
    return yb_add_node(b, YP_OP_ADD, (int[]){in, y}, 2, (yp_attrs){0}, "%s.add", pre);
}

/* CrossConv(c2, k=3, s=1, g=1, e=1.0, shortcut=False); c_ = int(c2 * e). Its 1xk then kx1 convs
 * downsample by s on each axis in turn. */
int ym_cross_conv(builder *b, const row *r) {
    int c2, k, s, g, shortcut;
    double e = 1.0;
    const yp_ynode *en = yb_arg_node(r, 4);
    if (yb_arg_channels(b, r, 0, &c2) || yb_arg_int(b, r, 1, 3, 1, MAX_K, &k) || yb_arg_int(b, r, 2, 1, 1, MAX_K, &s) ||
        yb_arg_int(b, r, 3, 1, 1, MAX_CH, &g) || (en && yb_get_positive(b, en, "args[4] (e)", 16.0, &e)) ||
        yb_arg_bool(b, r, 5, 0, &shortcut))
        return -1;
    int c_ = (int)(c2 * e);
    if (c_ < 1)
        return yb_fail(b, r->line, "CrossConv's hidden width int(%d * %g) is 0; raise e or the output channels", c2, e);
    if (c_ % g || c2 % g)
        return yb_fail(b, r->line, "groups %d must divide the hidden channels %d and the output channels %d", g, c_,
                       c2);
    int out = add_cross_conv(b, b->prefix, r->in, r->c1, c2, c_, k, s, g, shortcut);
    return yb_layer_done(b, r, out, c2, r->in_stride * s, (int[]){r->c1, c2, k, s, g, shortcut}, 6);
}

/* C3x(c2, shortcut=True), number = its CrossConvs: C3's frame around n x CrossConv(c_, c_, 3, 1,
 * g=1, e=1.0, shortcut). */
int ym_c3x(builder *b, const row *r) {
    int c2, shortcut, n = r->L->repeats, c_;
    if (yb_arg_channels(b, r, 0, &c2) || yb_arg_bool(b, r, 1, 1, &shortcut)) return -1;
    char t[YP_NAME_LEN];
    int x = yb_c3_begin(b, r, c2, &c_);
    for (int j = 0; j < n; j++)
        x = add_cross_conv(b, yb_pfx(t, "%s.m.%d", b->prefix, j), x, c_, c_, c_, 3, 1, 1, shortcut);
    return yb_c3_end(b, r, x, c2, (int[]){r->c1, c2, n, shortcut}, 4);
}
