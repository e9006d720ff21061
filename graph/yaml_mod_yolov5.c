/* yaml_mod_yolov5.c - the modules of YOLOv5's own models (Conv, C3, Bottleneck, SPPF, SPP,
 * Focus, Contract, Expand, nn.Upsample, Concat, Detect), expanded into primitive nodes named
 * after the Ultralytics state dict ("model.2.m.0.cv1.conv"), in the order PyTorch runs them. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "yaml_build.h"

/* Conv(c2, k=1, s=1, p=None, g=1) */
int ym_conv(builder *b, const row *r) {
    int c2, k, s, p, g;
    if (yb_arg_channels(b, r, 0, &c2) || yb_arg_int(b, r, 1, 1, 1, MAX_K, &k) || yb_arg_int(b, r, 2, 1, 1, MAX_K, &s) ||
        yb_arg_pad(b, r, 3, k, &p) || yb_arg_int(b, r, 4, 1, 1, MAX_CH, &g))
        return -1;
    if (r->c1 % g || c2 % g)
        return yb_fail(b, r->line, "groups %d must divide the input channels %d and the output channels %d", g,
                    r->c1, c2);
    yp_conv_attrs a = yb_conv_attrs(r->c1, c2, k, s);
    a.ph = a.pw = p, a.groups = g;
    int out = yb_add_conv(b, b->prefix, r->in, a);
    return yb_layer_done(b, r, out, c2, r->in_stride * s, (int[]){r->c1, c2, k, s, p, g}, g == 1 ? 5 : 6);
}

/* C3(c2, shortcut=True): cv1, n bottlenecks, cv2, cat(bottlenecks, cv2), cv3 (PyTorch's order). */
int ym_c3(builder *b, const row *r) {
    int c2, shortcut, n = r->L->repeats, c_;
    if (yb_arg_channels(b, r, 0, &c2) || yb_arg_bool(b, r, 1, 1, &shortcut)) return -1;
    char t[YP_NAME_LEN];
    int x = yb_c3_begin(b, r, c2, &c_);
    for (int j = 0; j < n; j++)
        x = yb_add_bottleneck(b, yb_pfx(t, "%s.m.%d", b->prefix, j), x, c_, c_, c_, shortcut);
    return yb_c3_end(b, r, x, c2, (int[]){r->c1, c2, n, shortcut}, 4);
}

int yb_c3_begin(builder *b, const row *r, int c2, int *c_) {
    char t[YP_NAME_LEN];
    *c_ = c2 / 2; /* int(c2 * e), e = 0.5 */
    if (*c_ < 1) return yb_fail(b, r->line, "%s needs at least 2 output channels", r->mi->name), NO_NODE;
    return yb_add_conv(b, yb_pfx(t, "%s.cv1", b->prefix), r->in, yb_conv_attrs(r->c1, *c_, 1, 1));
}

int yb_c3_end(builder *b, const row *r, int m, int c2, const int *args, int n_args) {
    char t[YP_NAME_LEN];
    int c_ = c2 / 2;
    int y = yb_add_conv(b, yb_pfx(t, "%s.cv2", b->prefix), r->in, yb_conv_attrs(r->c1, c_, 1, 1));
    int cat = yb_add_concat(b, (int[]){m, y}, 2, yb_pfx(t, "%s.cat", b->prefix));
    int out = yb_add_conv(b, yb_pfx(t, "%s.cv3", b->prefix), cat, yb_conv_attrs(2 * c_, c2, 1, 1));
    return yb_layer_done(b, r, out, c2, r->in_stride, args, n_args);
}

/* Bottleneck(c2, shortcut=True), standalone: c_ = c2 / 2. */
int ym_bottleneck(builder *b, const row *r) {
    int c2, shortcut;
    if (yb_arg_channels(b, r, 0, &c2) || yb_arg_bool(b, r, 1, 1, &shortcut)) return -1;
    if (c2 < 2) return yb_fail(b, r->line, "Bottleneck needs at least 2 output channels");
    int out = yb_add_bottleneck(b, b->prefix, r->in, r->c1, c2, c2 / 2, shortcut);
    return yb_layer_done(b, r, out, c2, r->in_stride, (int[]){r->c1, c2, shortcut}, 3);
}

/* SPPF(c2, k=5): cv1 (c1/2), three chained maxpools, cat(x, y1, y2, y3), cv2. */
int ym_sppf(builder *b, const row *r) {
    int c2, k, c_ = r->c1 / 2;
    if (yb_arg_channels(b, r, 0, &c2) || yb_arg_int(b, r, 1, 5, 1, MAX_K, &k) || yb_check_odd_kernel(b, r, k))
        return -1;
    if (c_ < 1) return yb_fail(b, r->line, "SPPF needs at least 2 input channels");
    char t[YP_NAME_LEN];
    int cat_in[4];
    int x = cat_in[0] = yb_add_conv(b, yb_pfx(t, "%s.cv1", b->prefix), r->in, yb_conv_attrs(r->c1, c_, 1, 1));
    yp_attrs pool = {.pool = {.k = k, .s = 1, .p = k / 2}};
    for (int j = 0; j < 3; j++)
        x = cat_in[j + 1] = yb_add_node(b, YP_OP_MAXPOOL2D, &x, 1, pool, "%s.m.%d", b->prefix, j);
    int cat = yb_add_concat(b, cat_in, 4, yb_pfx(t, "%s.cat", b->prefix));
    int out = yb_add_conv(b, yb_pfx(t, "%s.cv2", b->prefix), cat, yb_conv_attrs(4 * c_, c2, 1, 1));
    return yb_layer_done(b, r, out, c2, r->in_stride, (int[]){r->c1, c2, k}, 3);
}

/* Kernel list of SPP (args[1], default [5, 9, 13]). Returns the count (1..3), or -1. */
int yb_spp_kernels(const builder *b, const row *r, int k[3]) {
    const yp_ynode *n = yb_arg_node(r, 1);
    if (!n) {
        k[0] = 5, k[1] = 9, k[2] = 13;
        return 3;
    }
    if (n->kind != YP_YN_SEQ || n->n < 1 || n->n > YP_MAX_INPUTS - 1)
        return yb_fail(b, n->line, "args[1]: expected a list of 1 to %d pooling kernels like [5, 9, 13]",
                    YP_MAX_INPUTS - 1);
    for (int j = 0; j < n->n; j++)
        if (yb_get_int(b, n->kids[j], "args[1]", 1, MAX_K, &k[j]) || yb_check_odd_kernel(b, r, k[j])) return -1;
    return n->n;
}

/* SPP(c2, [5, 9, 13]): cv1 (c1/2), parallel maxpools, cat(x, pools...), cv2. */
int ym_spp(builder *b, const row *r) {
    int c2, k[3] = {0};
    int nk = yb_arg_channels(b, r, 0, &c2) ? -1 : yb_spp_kernels(b, r, k);
    if (nk < 0) return -1;
    if (r->c1 < 2) return yb_fail(b, r->line, "SPP needs at least 2 input channels");
    int out = yb_add_spp(b, b->prefix, r->in, r->c1, c2, k, nk);
    return yb_layer_done(b, r, out, c2, r->in_stride, (int[]){r->c1, c2, k[0], k[1], k[2]}, 2 + nk);
}

int yb_add_spp(builder *b, const char *pre, int in, int c1, int c2, const int *k, int nk) {
    char t[YP_NAME_LEN];
    int cat_in[YP_MAX_INPUTS], c_ = c1 / 2;
    int x = cat_in[0] = yb_add_conv(b, yb_pfx(t, "%s.cv1", pre), in, yb_conv_attrs(c1, c_, 1, 1));
    for (int j = 0; j < nk; j++) {
        yp_attrs pool = {.pool = {.k = k[j], .s = 1, .p = k[j] / 2}};
        cat_in[j + 1] = yb_add_node(b, YP_OP_MAXPOOL2D, &x, 1, pool, "%s.m.%d", pre, j);
    }
    int cat = yb_add_concat(b, cat_in, nk + 1, yb_pfx(t, "%s.cat", pre));
    return yb_add_conv(b, yb_pfx(t, "%s.cv2", pre), cat, yb_conv_attrs((nk + 1) * c_, c2, 1, 1));
}

/* Focus(c2, k=1, s=1, p=None, g=1): space_to_depth (c -> 4c, stride 2), then Conv. */
int ym_focus(builder *b, const row *r) {
    int c2, k, s, p, g;
    if (yb_arg_channels(b, r, 0, &c2) || yb_arg_int(b, r, 1, 1, 1, MAX_K, &k) || yb_arg_int(b, r, 2, 1, 1, MAX_K, &s) ||
        yb_arg_pad(b, r, 3, k, &p) || yb_arg_int(b, r, 4, 1, 1, MAX_CH, &g))
        return -1;
    if (4 * r->c1 % g || c2 % g)
        return yb_fail(b, r->line, "groups %d must divide the input channels %d and the output channels %d", g,
                    4 * r->c1, c2);
    char t[YP_NAME_LEN];
    int x = yb_add_node(b, YP_OP_SPACE_TO_DEPTH, &r->in, 1, (yp_attrs){0}, "%s.space_to_depth", b->prefix);
    yp_conv_attrs a = yb_conv_attrs(4 * r->c1, c2, k, s);
    a.ph = a.pw = p, a.groups = g;
    int out = yb_add_conv(b, yb_pfx(t, "%s.conv", b->prefix), x, a);
    return yb_layer_done(b, r, out, c2, r->in_stride * 2 * s, (int[]){r->c1, c2, k, s, p, g}, g == 1 ? 5 : 6);
}

/* Contract(gain=2) and Expand(gain=2) (models/common.py): gain x gain pixel blocks to channels
 * and back. parse_model keeps args as they are and sets c2 = ch[f] * gain**2 (Contract) or
 * ch[f] // gain**2 (Expand). Returns the gain, or -1 (err set) for a gain out of 2..YP_MAX_GAIN
 * (gain 1 would change nothing) or for `number` > 1: parse_model makes an nn.Sequential of copies
 * whose channels it does not follow (it records one copy's c2), so the next layer is built for
 * channels it never gets and YOLOv5 cannot run the model. */
static int block_gain(builder *b, const row *r) {
    const yp_ynode *n = yb_arg_node(r, 0);
    int gain = 2, reps = r->L->repeats;
    if (n && yb_get_int(b, n, "args[0] (gain)", 2, YP_MAX_GAIN, &gain)) return -1;
    if (reps > 1) {
        int64_t total = 1;
        for (int k = 0; k < reps && total <= YP_MAX_GAIN; k++) total *= gain;
        char alt[64] = "";
        if (total <= YP_MAX_GAIN)
            snprintf(alt, sizeof alt, " (one %s with gain %lld gives the same shapes)", r->mi->name, (long long)total);
        return yb_fail(b, r->line, "number: %d repeats of %s, but parse_model records one copy's channels for the "
                       "nn.Sequential of copies, so the next layer would be built for the wrong channel count and "
                       "YOLOv5 cannot run the model; use 1%s", reps, r->mi->name, alt);
    }
    return gain;
}

/* Contract(gain): c -> gain^2 c at 1/gain of the size (the size must split into whole blocks:
 * the graph's largest stride counts the gain). */
int ym_contract(builder *b, const row *r) {
    int g = block_gain(b, r);
    if (g < 0) return -1;
    if (r->c1 > MAX_CH / (g * g))
        return yb_fail(b, r->line, "Contract(%d) of %d channels makes %lld; at most %d", g, r->c1,
                       (long long)r->c1 * g * g, MAX_CH);
    int out = yb_add_node(b, YP_OP_CONTRACT, &r->in, 1, (yp_attrs){.s2d = {.gain = g}}, "%s", b->prefix);
    return yb_layer_done(b, r, out, r->c1 * g * g, r->in_stride * g, &g, 1);
}

/* Expand(gain): c -> c / gain^2 at gain times the size; PyTorch's view needs c % gain^2 == 0. */
int ym_expand(builder *b, const row *r) {
    int g = block_gain(b, r);
    if (g < 0) return -1;
    const int g2 = g * g;
    if (r->c1 % g2) {
        char from[32];
        if (r->L->from[0] == YP_INPUT_IMAGE)
            snprintf(from, sizeof from, "the image has");
        else
            snprintf(from, sizeof from, "layer %d gives", r->L->from[0]);
        return yb_fail(b, r->line, "Expand(%d) splits its input's channels into %dx%d blocks, so they must be a "
                       "multiple of gain**2 = %d, but %s %d; make them a multiple of %d or use a gain whose square "
                       "divides %d", g, g, g, g2, from, r->c1, g2, r->c1);
    }
    if (r->in_stride % g)
        return yb_fail(b, r->line, "expanding stride-%d features by %d leaves a fractional stride", r->in_stride, g);
    int out = yb_add_node(b, YP_OP_EXPAND, &r->in, 1, (yp_attrs){.s2d = {.gain = g}}, "%s", b->prefix);
    return yb_layer_done(b, r, out, r->c1 / g2, r->in_stride / g, &g, 1);
}

/* nn.Upsample(None, scale, 'nearest') */
int ym_upsample(builder *b, const row *r) {
    const yp_ynode *size = yb_arg_node(r, 0), *mode = yb_arg_node(r, 2);
    int scale;
    if (!size) return yb_arg_missing(b, r, 0);
    if (!yp_yn_is_null(size))
        return yb_fail(b, size->line, "args[0]: only size None is supported; give the factor as args[1]");
    if (yb_arg_int(b, r, 1, ARG_REQUIRED, 1, MAX_K, &scale)) return -1;
    if (mode && (mode->kind != YP_YN_SCALAR || strcmp(mode->text, "nearest") != 0))
        return yb_fail(b, mode->line, "args[2]: only mode 'nearest' is supported");
    if (r->in_stride % scale)
        return yb_fail(b, r->line, "upsampling stride-%d features by %d leaves a fractional stride", r->in_stride,
                    scale);
    int out = yb_add_node(b, YP_OP_UPSAMPLE_NEAREST, &r->in, 1, (yp_attrs){.up = {.scale = scale}}, "%s", b->prefix);
    return yb_layer_done(b, r, out, r->c1, r->in_stride / scale, &scale, 1);
}

/* Node id, channels and stride of layer f's output (f may be YP_INPUT_IMAGE). */
/* Concat([1]): channel concat of the `from` layers, which must share one stride. */
int ym_concat(builder *b, const row *r) {
    int dim, in[YP_MAX_INPUTS], c2 = 0;
    if (yb_arg_int(b, r, 0, 1, -8, 8, &dim)) return -1;
    if (dim != 1) return yb_fail(b, r->line, "only dimension 1 (channels) is supported, got %d; use [1]", dim);
    if (r->L->n_from < 2)
        return yb_fail(b, r->line, "from must list 2 to %d layers, like [-1, 6]", YP_MAX_INPUTS);
    for (int j = 0; j < r->L->n_from; j++) {
        int c, s;
        yb_layer_output(b, r->L->from[j], &in[j], &c, &s);
        if (s != r->in_stride)
            return yb_fail(b, r->line, "from[%d] (layer %d) has stride %d but from[0] has stride %d; concat needs "
                        "equal sizes", j, r->L->from[j], s, r->in_stride);
        if (c > MAX_CH - c2) /* the sum would pass the cap (and could wrap an int) */
            return yb_fail(b, r->line, "concat of more than %d channels; at most %d", MAX_CH, MAX_CH);
        c2 += c;
    }
    int out = yb_add_concat(b, in, r->L->n_from, b->prefix);
    return yb_layer_done(b, r, out, c2, r->in_stride, &dim, 1);
}

/* Anchors: rows of 2*na positive numbers (w h pairs, pixels), one row per level. */
/* Detect's nc argument: the name nc or a number equal to the top-level nc (--nc wins). */
static int detect_nc(const builder *b, const row *r) {
    const yp_ynode *n = yb_arg_node(r, 0);
    int nc = 0;
    if (!n) return yb_arg_missing(b, r, 0);
    if (n->kind == YP_YN_SCALAR && n->plain && strcmp(n->text, "nc") == 0) return 0;
    if (yb_get_int(b, n, "args[0]", 1, MAX_NC, &nc)) return -1;
    if (nc != b->nc && !b->nc_override)
        return yb_fail(b, n->line, "args[0]: %d classes, but the top-level nc is %d; write nc", nc, b->nc);
    return 0;
}

/* Detect's anchors argument: the name anchors, or the anchors written out. */
static int detect_anchors(builder *b, const row *r) {
    const yp_ynode *n = yb_arg_node(r, 1);
    if (!n) return yb_arg_missing(b, r, 1);
    if (n->kind == YP_YN_SCALAR && n->plain && strcmp(n->text, "anchors") == 0) return 0;
    b->anchors_auto = 0;
    return yb_parse_anchors(b, n);
}

/* Detect([nc, anchors]) on the `from` layers: one node, the graph's last. */
int ym_detect(builder *b, const row *r) {
    if (detect_nc(b, r) || detect_anchors(b, r)) return -1;
    if (r->L->index != b->n_layers - 1)
        return yb_fail(b, r->line, "Detect must be the last row of head");
    if (b->anchors_auto) b->nl = r->L->n_from; /* anchors: N, N per level of from */
    if (r->L->n_from != b->nl)
        return yb_fail(b, r->line, "Detect takes %d layer(s) in from, but anchors has %d row(s); give one layer "
                    "per level", r->L->n_from, b->nl);
    yp_detect_attrs d = {.nc = b->nc, .na = b->na, .nl = b->nl};
    int in[YP_MAX_LEVELS], args[YP_MAX_ARGS] = {b->nc};
    for (int l = 0; l < b->nl; l++) {
        yb_layer_output(b, r->L->from[l], &in[l], &d.c_in[l], &b->strides[l]);
        args[1 + l] = d.c_in[l];
    }
    int out = yb_add_node(b, YP_OP_DETECT, in, b->nl, (yp_attrs){.detect = d}, "%s", b->prefix);
    return yb_layer_done(b, r, out, -1, 0, args, 1 + b->nl);
}

int yb_parse_anchors(builder *b, const yp_ynode *n) {
    long count;
    if (n->kind == YP_YN_SCALAR && yp_yn_long(n, &count) == 0) { /* anchors: N, AutoAnchor's count */
        if (count < 1 || count > YP_MAX_ANCHORS)
            return yb_fail(b, n->line, "anchors: %ld anchors per level; use 1 to %d", count, YP_MAX_ANCHORS);
        b->na = (int)count;
        b->nl = 0; /* Detect's from gives the levels */
        b->anchors_auto = 1;
        return 0;
    }
    if (n->kind != YP_YN_SEQ) return yb_type_error(b, n, "anchors", "a list of rows [w, h, w, h, ...], one per level");
    if (n->n < 1 || n->n > YP_MAX_LEVELS)
        return yb_fail(b, n->line, "anchors: %d rows; use 1 to %d rows, one per detection level", n->n, YP_MAX_LEVELS);
    for (int l = 0; l < n->n; l++) {
        const yp_ynode *row_n = n->kids[l];
        if (row_n->kind != YP_YN_SEQ) return yb_type_error(b, row_n, "anchors row", "a list [w, h, w, h, ...]");
        if (row_n->n < 2 || row_n->n % 2 || row_n->n > 2 * YP_MAX_ANCHORS || row_n->n != n->kids[0]->n)
            return yb_fail(b, row_n->line, "anchors row %d: %d numbers; every row needs the same even count, "
                        "2 to %d (w h pairs)", l, row_n->n, 2 * YP_MAX_ANCHORS);
        for (int j = 0; j < row_n->n; j++) {
            double v;
            if (yb_get_positive(b, row_n->kids[j], "anchors", 1e6, &v)) return -1;
            b->anchors[l][j / 2][j % 2] = (float)v;
        }
    }
    b->nl = n->n;
    b->na = n->kids[0]->n / 2;
    return 0;
}

/* Segment([nc, anchors, nm, npr]): YOLOv5's segmentation head, refused with the reason. */
int ym_segment(builder *b, const row *r) {
    return yb_fail(b, r->line, "this is a segmentation model (Segment head); yoloplan plans and trains detection "
                   "models only, segmentation training is not supported yet; use a detection yaml (its last row "
                   "a Detect)");
}
