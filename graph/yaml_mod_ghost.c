/* yaml_mod_ghost.c - GhostNet's modules as YOLOv5 has them (models/common.py): GhostConv,
 * GhostBottleneck, C3Ghost and DWConv, built on depthwise (grouped) convolutions. */
#include <stdio.h>

#include "yaml_build.h"

static int gcd(int a, int b) {
    while (b) {
        int t = a % b;
        a = b, b = t;
    }
    return a;
}

/* GhostConv(c1, c2, k, s, act): y = cv1(x) (Conv c1 -> c_ = c2 / 2, k, s), out = cat(y, cv2(y))
 * with cv2 a 5x5 depthwise Conv c_ -> c_. */
static int add_ghost_conv(builder *b, const char *pre, int in, int c1, int c2, int k, int s, int act) {
    char t[YP_NAME_LEN];
    int c_ = c2 / 2;
    int y = yb_add_conv_act(b, yb_pfx(t, "%s.cv1", pre), in, yb_conv_attrs(c1, c_, k, s), act);
    yp_conv_attrs dw = yb_conv_attrs(c_, c_, 5, 1);
    dw.groups = c_;
    int z = yb_add_conv_act(b, yb_pfx(t, "%s.cv2", pre), y, dw, act);
    return yb_add_concat(b, (int[]){y, z}, 2, yb_pfx(t, "%s.cat", pre));
}

/* DWConv(c1, c2, k, s, act): a Conv with groups gcd(c1, c2). */
static int add_dw_conv(builder *b, const char *pre, int in, int c1, int c2, int k, int s, int act) {
    yp_conv_attrs a = yb_conv_attrs(c1, c2, k, s);
    a.groups = gcd(c1, c2);
    return yb_add_conv_act(b, pre, in, a, act);
}

/* GhostBottleneck(c1, c2, k=3, s=1), c_ = c2 / 2:
 *   conv = GhostConv(c1, c_, 1, 1), DWConv(c_, c_, k, s, act=False) if s == 2, GhostConv(c_, c2, 1, 1, act=False)
 *   shortcut = DWConv(c1, c1, k, s, act=False), Conv(c1, c2, 1, 1, act=False) if s == 2, else the input
 * out = conv(x) + shortcut(x). Sequential indices: conv.0, conv.1 (Identity when s == 1), conv.2. */
static int add_ghost_bottleneck(builder *b, const char *pre, int in, int c1, int c2, int k, int s) {
    char t[YP_NAME_LEN];
    int c_ = c2 / 2;
    int x = add_ghost_conv(b, yb_pfx(t, "%s.conv.0", pre), in, c1, c_, 1, 1, 1);
    if (s == 2) x = add_dw_conv(b, yb_pfx(t, "%s.conv.1", pre), x, c_, c_, k, s, 0);
    x = add_ghost_conv(b, yb_pfx(t, "%s.conv.2", pre), x, c_, c2, 1, 1, 0);
    int sc = in;
    if (s == 2) {
        sc = add_dw_conv(b, yb_pfx(t, "%s.shortcut.0", pre), in, c1, c1, k, s, 0);
        sc = yb_add_conv_act(b, yb_pfx(t, "%s.shortcut.1", pre), sc, yb_conv_attrs(c1, c2, 1, 1), 0);
    }
    return yb_add_node(b, YP_OP_ADD, (int[]){x, sc}, 2, (yp_attrs){0}, "%s.add", pre);
}

/* The halves must split evenly down the module (a GhostConv cats two halves of c2; a
 * GhostBottleneck's first GhostConv makes c2 / 2): c2 a multiple of `m`. */
static int check_multiple(const builder *b, const row *r, int c2, int m) {
    if (c2 % m == 0) return 0;
    return yb_fail(b, r->line, "%s needs output channels divisible by %d (its halves must split evenly), got %d",
                   r->mi->name, m, c2);
}

/* GhostConv(c2, k=1, s=1, g=1, act=True) */
int ym_ghost_conv(builder *b, const row *r) {
    int c2, k, s, g, act;
    if (yb_arg_channels(b, r, 0, &c2) || yb_arg_int(b, r, 1, 1, 1, MAX_K, &k) || yb_arg_int(b, r, 2, 1, 1, MAX_K, &s) ||
        yb_arg_int(b, r, 3, 1, 1, 1, &g) || yb_arg_bool(b, r, 4, 1, &act) || check_multiple(b, r, c2, 2))
        return -1;
    int out = add_ghost_conv(b, b->prefix, r->in, r->c1, c2, k, s, act);
    return yb_layer_done(b, r, out, c2, r->in_stride * s, (int[]){r->c1, c2, k, s}, 4);
}

/* DWConv(c2, k=1, s=1, d=1, act=True) */
int ym_dw_conv(builder *b, const row *r) {
    int c2, k, s, d, act;
    if (yb_arg_channels(b, r, 0, &c2) || yb_arg_int(b, r, 1, 1, 1, MAX_K, &k) || yb_arg_int(b, r, 2, 1, 1, MAX_K, &s) ||
        yb_arg_int(b, r, 3, 1, 1, 1, &d) || yb_arg_bool(b, r, 4, 1, &act))
        return -1;
    int out = add_dw_conv(b, b->prefix, r->in, r->c1, c2, k, s, act);
    return yb_layer_done(b, r, out, c2, r->in_stride * s, (int[]){r->c1, c2, k, s}, 4);
}

/* GhostBottleneck(c2, k=3, s=1) */
int ym_ghost_bottleneck(builder *b, const row *r) {
    int c2, k, s;
    if (yb_arg_channels(b, r, 0, &c2) || yb_arg_int(b, r, 1, 3, 1, MAX_K, &k) || yb_arg_int(b, r, 2, 1, 1, 2, &s) ||
        check_multiple(b, r, c2, 4))
        return -1;
    if (s == 1 && r->c1 != c2)
        return yb_fail(b, r->line, "GhostBottleneck with stride 1 adds its input to its output, so it needs equal "
                       "input and output channels (%d and %d)", r->c1, c2);
    int out = add_ghost_bottleneck(b, b->prefix, r->in, r->c1, c2, k, s);
    return yb_layer_done(b, r, out, c2, r->in_stride * s, (int[]){r->c1, c2, k, s}, 4);
}

/* C3Ghost(c2, shortcut=True): a C3 whose m is `number` GhostBottleneck(c_, c_) (shortcut unused,
 * as in YOLOv5). */
int ym_c3ghost(builder *b, const row *r) {
    int c2, shortcut, n = r->L->repeats, c_;
    if (yb_arg_channels(b, r, 0, &c2) || yb_arg_bool(b, r, 1, 1, &shortcut)) return -1;
    if (check_multiple(b, r, c2, 8)) return -1;
    char t[YP_NAME_LEN];
    int x = yb_c3_begin(b, r, c2, &c_);
    for (int j = 0; j < n; j++) x = add_ghost_bottleneck(b, yb_pfx(t, "%s.m.%d", b->prefix, j), x, c_, c_, 3, 1);
    return yb_c3_end(b, r, x, c2, (int[]){r->c1, c2, n, shortcut}, 4);
}
