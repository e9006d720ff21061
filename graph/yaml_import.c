/* yaml_import.c - import of Ultralytics-style model yaml files (models/yolov5s.yaml, ...).
 *
 * Ultralytics' parse_model rules on the yaml tree (yaml_tree.h; every node knows its line):
 * depth/width scaling, `from` resolution, and each module (Conv, C3, SPPF, ...) expanded into
 * primitive nodes named after the Ultralytics state dict ("model.2.m.0.cv1.conv"), in the order
 * PyTorch runs them. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "yaml_tree.h"
#include "yp_yaml.h"

#define MAX_NC 100000
#define MAX_BASE_CH 65536
#define MAX_CH (1 << 20)
#define MAX_K 64
#define MAX_STRIDE 1024 /* the IR loader's strides cap (ir_load.c): an IR it refuses is never written */
#define MAX_REPEATS 1000
#define MAX_LAYERS 100000
#define ARG_REQUIRED (-999999)
#define NO_NODE (-2) /* "building failed" (OOM, err set); YP_INPUT_IMAGE is -1 and a valid input */

enum { K_NC, K_DEPTH, K_WIDTH, K_ANCHORS, K_BACKBONE, K_HEAD, K_CH, K_COUNT };
static const char *const top_keys[K_COUNT] = {"nc", "depth_multiple", "width_multiple", "anchors",
                                              "backbone", "head", "ch"};
#define KNOWN_KEYS "nc, depth_multiple, width_multiple, anchors, backbone, head, ch"

typedef struct {
    const char *file;
    yp_err *err;
    char where[48];      /* "layer 4 C3", prefixed to row errors */
    char prefix[24];     /* "model.4": node-name prefix of the current layer */
    int nc, nc_override, in_ch, nl, na;
    double gd, gw;
    float anchors[YP_MAX_LEVELS][YP_MAX_ANCHORS][2];
    int strides[YP_MAX_LEVELS];
    const yp_ynode *v[K_COUNT]; /* top-level values */
    int n_layers;
    yp_layer *layers;
    int *ch, *stride;        /* per layer: output channels, downsampling of the output */
    int n_nodes, cap_nodes, cur;
    yp_node *nodes;
} builder;

typedef struct module_info module_info;

typedef struct {
    int line;
    const yp_ynode *args;
    const module_info *mi;
    yp_layer *L;
    int in, c1, in_stride; /* first input: node id, channels, stride */
} row;

struct module_info {
    const char *name;
    int (*expand)(builder *b, const row *r);
    int max_args;
    int multi_from;     /* takes a list of layers (Concat, Detect) */
    int repeats_inside; /* `number` is the bottleneck count (C3) */
    const char *usage;
};

/* Sets err to "FILE:LINE: [where: ]message". Returns -1. */
static int fail(const builder *b, int line, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
static int fail(const builder *b, int line, const char *fmt, ...) {
    char msg[800];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (b->where[0]) return yp_err_set(b->err, "%s:%d: %s: %s", b->file, line, b->where, msg);
    return yp_err_set(b->err, "%s:%d: %s", b->file, line, msg);
}

static int type_error(const builder *b, const yp_ynode *n, const char *what, const char *expected) {
    char got[80];
    return fail(b, n->line, "%s: expected %s, got %s; fix the value", what, expected,
                yp_yn_describe(n, got, sizeof got));
}

/* Integer in [lo, hi]. Returns 0, or -1 with err set. */
static int get_int(const builder *b, const yp_ynode *n, const char *what, int lo, int hi, int *out) {
    long v;
    if (yp_yn_long(n, &v)) return type_error(b, n, what, "an integer");
    if (v < lo || v > hi) return fail(b, n->line, "%s: %ld is out of range; use %d..%d", what, v, lo, hi);
    *out = (int)v;
    return 0;
}

/* Number in (0, hi]. Returns 0, or -1 with err set. */
static int get_positive(const builder *b, const yp_ynode *n, const char *what, double hi, double *out) {
    if (yp_yn_double(n, out)) return type_error(b, n, what, "a number");
    if (*out <= 0 || *out > hi) return fail(b, n->line, "%s: %g is out of range; use a number in (0, %g]", what,
                                            *out, hi);
    return 0;
}

/* ---- nodes ---- */

/* Appends a node to the current layer, its name formatted from fmt. Returns its id, or NO_NODE
 * when an input is NO_NODE (an earlier failure) or on OOM (err set). */
static int add_node(builder *b, yp_op op, const int *in, int n_in, yp_attrs a, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 6, 7)))
#endif
    ;
static int add_node(builder *b, yp_op op, const int *in, int n_in, yp_attrs a, const char *fmt, ...) {
    YP_ASSERT(n_in >= 1 && n_in <= YP_MAX_INPUTS);
    for (int i = 0; i < n_in; i++)
        if (in[i] == NO_NODE) return NO_NODE;
    if (b->n_nodes == YP_GRAPH_MAX_NODES) {
        yp_err_set(b->err, "%s: the model expands to more than %d nodes (ten times yolov5x); lower depth_multiple or "
                   "the repeats", b->file, YP_GRAPH_MAX_NODES);
        return NO_NODE;
    }
    if (b->n_nodes == b->cap_nodes) {
        int cap = b->cap_nodes ? 2 * b->cap_nodes : 256;
        yp_node *nodes = realloc(b->nodes, (size_t)cap * sizeof *nodes);
        if (!nodes) {
            yp_err_set(b->err, "%s: out of memory", b->file);
            return NO_NODE;
        }
        b->nodes = nodes;
        b->cap_nodes = cap;
    }
    yp_node *n = &b->nodes[b->n_nodes];
    memset(n, 0, sizeof *n);
    n->id = b->n_nodes;
    n->op = op;
    n->layer = b->cur;
    n->n_inputs = n_in;
    memcpy(n->inputs, in, (size_t)n_in * sizeof *in);
    n->a = a;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(n->name, sizeof n->name, fmt, ap);
    va_end(ap);
    return b->n_nodes++;
}

/* Formats a name prefix into buf (YP_NAME_LEN bytes). Returns buf. */
static const char *pfx(char *buf, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
static const char *pfx(char *buf, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, YP_NAME_LEN, fmt, ap);
    va_end(ap);
    return buf;
}

static yp_conv_attrs conv_attrs(int c_in, int c_out, int k, int s) {
    return (yp_conv_attrs){.c_in = c_in, .c_out = c_out, .k = k, .s = s, .p = k / 2, .groups = 1, .bias = 0};
}

/* Ultralytics Conv: conv2d (no bias) -> batchnorm2d -> silu, named PRE.conv/.bn/.act.
 * Returns the silu's id, or NO_NODE. */
static int add_conv(builder *b, const char *pre, int in, yp_conv_attrs a) {
    yp_bn_attrs bn = {.c = a.c_out, .eps = 1e-3, .momentum = 0.03};
    int x = add_node(b, YP_OP_CONV2D, &in, 1, (yp_attrs){.conv = a}, "%s.conv", pre);
    int y = add_node(b, YP_OP_BATCHNORM2D, &x, 1, (yp_attrs){.bn = bn}, "%s.bn", pre);
    return add_node(b, YP_OP_SILU, &y, 1, (yp_attrs){0}, "%s.act", pre);
}

/* Bottleneck: cv1 1x1 c1 -> c_, cv2 3x3 c_ -> c2, plus the input when shortcut and c1 == c2. */
static int add_bottleneck(builder *b, const char *pre, int in, int c1, int c2, int c_, int shortcut) {
    char t[YP_NAME_LEN];
    int h = add_conv(b, pfx(t, "%s.cv1", pre), in, conv_attrs(c1, c_, 1, 1));
    int y = add_conv(b, pfx(t, "%s.cv2", pre), h, conv_attrs(c_, c2, 3, 1));
    if (!shortcut || c1 != c2) return y;
    return add_node(b, YP_OP_ADD, (int[]){in, y}, 2, (yp_attrs){0}, "%s.add", pre);
}

static int add_concat(builder *b, const int *in, int n_in, const char *name) {
    return add_node(b, YP_OP_CONCAT, in, n_in, (yp_attrs){.concat = {.axis = 1}}, "%s", name);
}

/* Records the layer's output and display args. Returns 0, or -1 when out is NO_NODE (err set). */
static int layer_done(builder *b, const row *r, int out, int c2, int stride, const int *args, int n_args) {
    if (out == NO_NODE) return -1;
    /* each layer multiplies the stride by at most 2 x MAX_K, so a capped one cannot overflow */
    if (stride > MAX_STRIDE)
        return fail(b, r->line, "the layers up to here downsample the image %d times; at most %d (YOLOv5's P6 "
                    "models: 64)", stride, MAX_STRIDE);
    if (c2 > MAX_CH) return fail(b, r->line, "%d output channels; at most %d", c2, MAX_CH);
    r->L->output = out;
    r->L->n_args = n_args;
    memcpy(r->L->args, args, (size_t)n_args * sizeof *args);
    b->ch[r->L->index] = c2;
    b->stride[r->L->index] = stride;
    return 0;
}

/* ---- module arguments ---- */

static const yp_ynode *arg_node(const row *r, int j) { return j < r->args->n ? r->args->kids[j] : NULL; }

static int arg_missing(const builder *b, const row *r, int j) {
    return fail(b, r->line, "args[%d] is missing; write args as %s", j, r->mi->usage);
}

/* Integer argument j in [lo, hi]; dflt when absent (ARG_REQUIRED: absence is an error). */
static int arg_int(const builder *b, const row *r, int j, int dflt, int lo, int hi, int *out) {
    const yp_ynode *n = arg_node(r, j);
    char what[24];
    if (!n && dflt == ARG_REQUIRED) return arg_missing(b, r, j);
    if (!n) *out = dflt;
    snprintf(what, sizeof what, "args[%d]", j);
    return n ? get_int(b, n, what, lo, hi, out) : 0;
}

/* make_divisible(c * width_multiple, 8) = ceil(c * gw / 8) * 8, except for c == na * (nc + 5). */
static int arg_channels(const builder *b, const row *r, int j, int *c2) {
    int c;
    if (arg_int(b, r, j, ARG_REQUIRED, 1, MAX_BASE_CH, &c)) return -1;
    *c2 = c == b->na * (b->nc + 5) ? c : (int)ceil(c * b->gw / 8) * 8;
    if (*c2 > MAX_CH) return fail(b, r->line, "%d channels after width scaling; at most %d", *c2, MAX_CH);
    return 0;
}

/* Padding argument j: absent or None means k / 2 (autopad). */
static int arg_pad(const builder *b, const row *r, int j, int k, int *p) {
    const yp_ynode *n = arg_node(r, j);
    if (!n || yp_yn_is_null(n)) {
        *p = k / 2;
        return 0;
    }
    return arg_int(b, r, j, 0, 0, MAX_K, p);
}

static int arg_bool(const builder *b, const row *r, int j, int dflt, int *out) {
    const yp_ynode *n = arg_node(r, j);
    char what[24];
    *out = dflt;
    snprintf(what, sizeof what, "args[%d]", j);
    if (n && yp_yn_bool(n, out)) return type_error(b, n, what, "True or False");
    return 0;
}

static int check_odd_kernel(const builder *b, const row *r, int k) {
    if (k % 2) return 0;
    return fail(b, r->line, "pooling kernel %d is even, so its output would not match its input for the "
                "concat; use an odd kernel", k);
}

/* ---- modules ---- */

/* Conv(c2, k=1, s=1, p=None, g=1) */
static int expand_conv(builder *b, const row *r) {
    int c2, k, s, p, g;
    if (arg_channels(b, r, 0, &c2) || arg_int(b, r, 1, 1, 1, MAX_K, &k) || arg_int(b, r, 2, 1, 1, MAX_K, &s) ||
        arg_pad(b, r, 3, k, &p) || arg_int(b, r, 4, 1, 1, MAX_CH, &g))
        return -1;
    if (r->c1 % g || c2 % g)
        return fail(b, r->line, "groups %d must divide the input channels %d and the output channels %d", g,
                    r->c1, c2);
    yp_conv_attrs a = {.c_in = r->c1, .c_out = c2, .k = k, .s = s, .p = p, .groups = g, .bias = 0};
    int out = add_conv(b, b->prefix, r->in, a);
    return layer_done(b, r, out, c2, r->in_stride * s, (int[]){r->c1, c2, k, s, p, g}, g == 1 ? 5 : 6);
}

/* C3(c2, shortcut=True): cv1, n bottlenecks, cv2, cat(bottlenecks, cv2), cv3 (PyTorch's order). */
static int expand_c3(builder *b, const row *r) {
    int c2, shortcut, n = r->L->repeats;
    if (arg_channels(b, r, 0, &c2) || arg_bool(b, r, 1, 1, &shortcut)) return -1;
    int c_ = c2 / 2; /* int(c2 * e), e = 0.5 */
    if (c_ < 1) return fail(b, r->line, "C3 needs at least 2 output channels");
    char t[YP_NAME_LEN];
    int x = add_conv(b, pfx(t, "%s.cv1", b->prefix), r->in, conv_attrs(r->c1, c_, 1, 1));
    for (int j = 0; j < n; j++)
        x = add_bottleneck(b, pfx(t, "%s.m.%d", b->prefix, j), x, c_, c_, c_, shortcut);
    int y = add_conv(b, pfx(t, "%s.cv2", b->prefix), r->in, conv_attrs(r->c1, c_, 1, 1));
    int cat = add_concat(b, (int[]){x, y}, 2, pfx(t, "%s.cat", b->prefix));
    int out = add_conv(b, pfx(t, "%s.cv3", b->prefix), cat, conv_attrs(2 * c_, c2, 1, 1));
    return layer_done(b, r, out, c2, r->in_stride, (int[]){r->c1, c2, n, shortcut}, 4);
}

/* Bottleneck(c2, shortcut=True), standalone: c_ = c2 / 2. */
static int expand_bottleneck(builder *b, const row *r) {
    int c2, shortcut;
    if (arg_channels(b, r, 0, &c2) || arg_bool(b, r, 1, 1, &shortcut)) return -1;
    if (c2 < 2) return fail(b, r->line, "Bottleneck needs at least 2 output channels");
    int out = add_bottleneck(b, b->prefix, r->in, r->c1, c2, c2 / 2, shortcut);
    return layer_done(b, r, out, c2, r->in_stride, (int[]){r->c1, c2, shortcut}, 3);
}

/* SPPF(c2, k=5): cv1 (c1/2), three chained maxpools, cat(x, y1, y2, y3), cv2. */
static int expand_sppf(builder *b, const row *r) {
    int c2, k, c_ = r->c1 / 2;
    if (arg_channels(b, r, 0, &c2) || arg_int(b, r, 1, 5, 1, MAX_K, &k) || check_odd_kernel(b, r, k)) return -1;
    if (c_ < 1) return fail(b, r->line, "SPPF needs at least 2 input channels");
    char t[YP_NAME_LEN];
    int cat_in[4];
    int x = cat_in[0] = add_conv(b, pfx(t, "%s.cv1", b->prefix), r->in, conv_attrs(r->c1, c_, 1, 1));
    yp_attrs pool = {.pool = {.k = k, .s = 1, .p = k / 2}};
    for (int j = 0; j < 3; j++)
        x = cat_in[j + 1] = add_node(b, YP_OP_MAXPOOL2D, &x, 1, pool, "%s.m.%d", b->prefix, j);
    int cat = add_concat(b, cat_in, 4, pfx(t, "%s.cat", b->prefix));
    int out = add_conv(b, pfx(t, "%s.cv2", b->prefix), cat, conv_attrs(4 * c_, c2, 1, 1));
    return layer_done(b, r, out, c2, r->in_stride, (int[]){r->c1, c2, k}, 3);
}

/* Kernel list of SPP (args[1], default [5, 9, 13]). Returns the count (1..3), or -1. */
static int spp_kernels(const builder *b, const row *r, int k[3]) {
    const yp_ynode *n = arg_node(r, 1);
    if (!n) {
        k[0] = 5, k[1] = 9, k[2] = 13;
        return 3;
    }
    if (n->kind != YP_YN_SEQ || n->n < 1 || n->n > YP_MAX_INPUTS - 1)
        return fail(b, n->line, "args[1]: expected a list of 1 to %d pooling kernels like [5, 9, 13]",
                    YP_MAX_INPUTS - 1);
    for (int j = 0; j < n->n; j++)
        if (get_int(b, n->kids[j], "args[1]", 1, MAX_K, &k[j]) || check_odd_kernel(b, r, k[j])) return -1;
    return n->n;
}

/* SPP(c2, [5, 9, 13]): cv1 (c1/2), parallel maxpools, cat(x, pools...), cv2. */
static int expand_spp(builder *b, const row *r) {
    int c2, k[3] = {0}, c_ = r->c1 / 2;
    int nk = arg_channels(b, r, 0, &c2) ? -1 : spp_kernels(b, r, k);
    if (nk < 0) return -1;
    if (c_ < 1) return fail(b, r->line, "SPP needs at least 2 input channels");
    char t[YP_NAME_LEN];
    int cat_in[4];
    int x = cat_in[0] = add_conv(b, pfx(t, "%s.cv1", b->prefix), r->in, conv_attrs(r->c1, c_, 1, 1));
    for (int j = 0; j < nk; j++) {
        yp_attrs pool = {.pool = {.k = k[j], .s = 1, .p = k[j] / 2}};
        cat_in[j + 1] = add_node(b, YP_OP_MAXPOOL2D, &x, 1, pool, "%s.m.%d", b->prefix, j);
    }
    int cat = add_concat(b, cat_in, nk + 1, pfx(t, "%s.cat", b->prefix));
    int out = add_conv(b, pfx(t, "%s.cv2", b->prefix), cat, conv_attrs((nk + 1) * c_, c2, 1, 1));
    return layer_done(b, r, out, c2, r->in_stride, (int[]){r->c1, c2, k[0], k[1], k[2]}, 2 + nk);
}

/* Focus(c2, k=1, s=1, p=None, g=1): space_to_depth (c -> 4c, stride 2), then Conv. */
static int expand_focus(builder *b, const row *r) {
    int c2, k, s, p, g;
    if (arg_channels(b, r, 0, &c2) || arg_int(b, r, 1, 1, 1, MAX_K, &k) || arg_int(b, r, 2, 1, 1, MAX_K, &s) ||
        arg_pad(b, r, 3, k, &p) || arg_int(b, r, 4, 1, 1, MAX_CH, &g))
        return -1;
    if (4 * r->c1 % g || c2 % g)
        return fail(b, r->line, "groups %d must divide the input channels %d and the output channels %d", g,
                    4 * r->c1, c2);
    char t[YP_NAME_LEN];
    int x = add_node(b, YP_OP_SPACE_TO_DEPTH, &r->in, 1, (yp_attrs){0}, "%s.space_to_depth", b->prefix);
    yp_conv_attrs a = {.c_in = 4 * r->c1, .c_out = c2, .k = k, .s = s, .p = p, .groups = g, .bias = 0};
    int out = add_conv(b, pfx(t, "%s.conv", b->prefix), x, a);
    return layer_done(b, r, out, c2, r->in_stride * 2 * s, (int[]){r->c1, c2, k, s, p, g}, g == 1 ? 5 : 6);
}

/* nn.Upsample(None, scale, 'nearest') */
static int expand_upsample(builder *b, const row *r) {
    const yp_ynode *size = arg_node(r, 0), *mode = arg_node(r, 2);
    int scale;
    if (!size) return arg_missing(b, r, 0);
    if (!yp_yn_is_null(size))
        return fail(b, size->line, "args[0]: only size None is supported; give the factor as args[1]");
    if (arg_int(b, r, 1, ARG_REQUIRED, 1, MAX_K, &scale)) return -1;
    if (mode && (mode->kind != YP_YN_SCALAR || strcmp(mode->text, "nearest") != 0))
        return fail(b, mode->line, "args[2]: only mode 'nearest' is supported");
    if (r->in_stride % scale)
        return fail(b, r->line, "upsampling stride-%d features by %d leaves a fractional stride", r->in_stride,
                    scale);
    int out = add_node(b, YP_OP_UPSAMPLE_NEAREST, &r->in, 1, (yp_attrs){.up = {.scale = scale}}, "%s", b->prefix);
    return layer_done(b, r, out, r->c1, r->in_stride / scale, &scale, 1);
}

/* Node id, channels and stride of layer f's output (f may be YP_INPUT_IMAGE). */
static void layer_output(const builder *b, int f, int *node, int *ch, int *stride) {
    *node = f == YP_INPUT_IMAGE ? YP_INPUT_IMAGE : b->layers[f].output;
    *ch = f == YP_INPUT_IMAGE ? b->in_ch : b->ch[f];
    *stride = f == YP_INPUT_IMAGE ? 1 : b->stride[f];
}

/* Concat([1]): channel concat of the `from` layers, which must share one stride. */
static int expand_concat(builder *b, const row *r) {
    int dim, in[YP_MAX_INPUTS], c2 = 0;
    if (arg_int(b, r, 0, 1, -8, 8, &dim)) return -1;
    if (dim != 1) return fail(b, r->line, "only dimension 1 (channels) is supported, got %d; use [1]", dim);
    if (r->L->n_from < 2)
        return fail(b, r->line, "from must list 2 to %d layers, like [-1, 6]", YP_MAX_INPUTS);
    for (int j = 0; j < r->L->n_from; j++) {
        int c, s;
        layer_output(b, r->L->from[j], &in[j], &c, &s);
        if (s != r->in_stride)
            return fail(b, r->line, "from[%d] (layer %d) has stride %d but from[0] has stride %d; concat needs "
                        "equal sizes", j, r->L->from[j], s, r->in_stride);
        if (c > MAX_CH - c2) /* the sum would pass the cap (and could wrap an int) */
            return fail(b, r->line, "concat of more than %d channels; at most %d", MAX_CH, MAX_CH);
        c2 += c;
    }
    int out = add_concat(b, in, r->L->n_from, b->prefix);
    return layer_done(b, r, out, c2, r->in_stride, &dim, 1);
}

/* Anchors: rows of 2*na positive numbers (w h pairs, pixels), one row per level. */
static int parse_anchors(builder *b, const yp_ynode *n) {
    if (n->kind != YP_YN_SEQ) return type_error(b, n, "anchors", "a list of rows [w, h, w, h, ...], one per level");
    if (n->n < 1 || n->n > YP_MAX_LEVELS)
        return fail(b, n->line, "anchors: %d rows; use 1 to %d rows, one per detection level", n->n, YP_MAX_LEVELS);
    for (int l = 0; l < n->n; l++) {
        const yp_ynode *row_n = n->kids[l];
        if (row_n->kind != YP_YN_SEQ) return type_error(b, row_n, "anchors row", "a list [w, h, w, h, ...]");
        if (row_n->n < 2 || row_n->n % 2 || row_n->n > 2 * YP_MAX_ANCHORS || row_n->n != n->kids[0]->n)
            return fail(b, row_n->line, "anchors row %d: %d numbers; every row needs the same even count, "
                        "2 to %d (w h pairs)", l, row_n->n, 2 * YP_MAX_ANCHORS);
        for (int j = 0; j < row_n->n; j++) {
            double v;
            if (get_positive(b, row_n->kids[j], "anchors", 1e6, &v)) return -1;
            b->anchors[l][j / 2][j % 2] = (float)v;
        }
    }
    b->nl = n->n;
    b->na = n->kids[0]->n / 2;
    return 0;
}

/* Detect's nc argument: the name nc or a number equal to the top-level nc (--nc wins). */
static int detect_nc(const builder *b, const row *r) {
    const yp_ynode *n = arg_node(r, 0);
    int nc = 0;
    if (!n) return arg_missing(b, r, 0);
    if (n->kind == YP_YN_SCALAR && n->plain && strcmp(n->text, "nc") == 0) return 0;
    if (get_int(b, n, "args[0]", 1, MAX_NC, &nc)) return -1;
    if (nc != b->nc && !b->nc_override)
        return fail(b, n->line, "args[0]: %d classes, but the top-level nc is %d; write nc", nc, b->nc);
    return 0;
}

/* Detect's anchors argument: the name anchors, or the anchors written out. */
static int detect_anchors(builder *b, const row *r) {
    const yp_ynode *n = arg_node(r, 1);
    if (!n) return arg_missing(b, r, 1);
    if (n->kind == YP_YN_SCALAR && n->plain && strcmp(n->text, "anchors") == 0) return 0;
    return parse_anchors(b, n);
}

/* Detect([nc, anchors]) on the `from` layers: one node, the graph's last. */
static int expand_detect(builder *b, const row *r) {
    if (detect_nc(b, r) || detect_anchors(b, r)) return -1;
    if (r->L->index != b->n_layers - 1)
        return fail(b, r->line, "Detect must be the last row of head");
    if (r->L->n_from != b->nl)
        return fail(b, r->line, "Detect takes %d layer(s) in from, but anchors has %d row(s); give one layer "
                    "per level", r->L->n_from, b->nl);
    yp_detect_attrs d = {.nc = b->nc, .na = b->na, .nl = b->nl};
    int in[YP_MAX_LEVELS], args[YP_MAX_ARGS] = {b->nc};
    for (int l = 0; l < b->nl; l++) {
        layer_output(b, r->L->from[l], &in[l], &d.c_in[l], &b->strides[l]);
        args[1 + l] = d.c_in[l];
    }
    int out = add_node(b, YP_OP_DETECT, in, b->nl, (yp_attrs){.detect = d}, "%s", b->prefix);
    return layer_done(b, r, out, -1, 0, args, 1 + b->nl);
}

static const module_info modules[] = {
    {"Conv", expand_conv, 5, 0, 0, "[c2, k=1, s=1, p=None, g=1]"},
    {"C3", expand_c3, 2, 0, 1, "[c2, shortcut=True]"},
    {"Bottleneck", expand_bottleneck, 2, 0, 0, "[c2, shortcut=True]"},
    {"SPPF", expand_sppf, 2, 0, 0, "[c2, k=5]"},
    {"SPP", expand_spp, 2, 0, 0, "[c2, [5, 9, 13]]"},
    {"Focus", expand_focus, 5, 0, 0, "[c2, k=1, s=1, p=None, g=1]"},
    {"nn.Upsample", expand_upsample, 3, 0, 0, "[None, 2, 'nearest']"},
    {"Concat", expand_concat, 1, 1, 0, "[1]"},
    {"Detect", expand_detect, 2, 1, 0, "[nc, anchors]"},
};
#define KNOWN_MODULES "Conv, C3, Bottleneck, SPPF, SPP, Focus, nn.Upsample, Concat, Detect"

static const module_info *module_find(const char *name) {
    for (size_t i = 0; i < sizeof modules / sizeof modules[0]; i++)
        if (strcmp(modules[i].name, name) == 0) return &modules[i];
    return NULL;
}

/* ---- rows ---- */

/* One `from` entry of layer i: -1 is the previous layer (the image for layer 0), other negative
 * values count back, non-negative values are absolute and must be earlier. */
static int parse_from_one(const builder *b, const yp_ynode *n, int i, int *out) {
    int v = 0;
    if (get_int(b, n, "from", -MAX_LAYERS, MAX_LAYERS, &v)) return -1;
    if (i == 0 && v == -1) {
        *out = YP_INPUT_IMAGE;
        return 0;
    }
    if (i == 0) return fail(b, n->line, "from %d: layer 0 can only take the input image; write -1", v);
    *out = v < 0 ? i + v : v;
    if (*out < 0 || *out >= b->n_layers)
        return fail(b, n->line, "from %d: layer %d does not exist; layer %d can take layers 0..%d, or -1 for the "
                    "previous one", v, *out, i, i - 1);
    if (*out >= i)
        return fail(b, n->line, "from %d points forward; layer %d can only take earlier layers (0..%d), or -1 "
                    "for the previous one", v, i, i - 1);
    return 0;
}

/* `from`: one index or a list of 1..YP_MAX_INPUTS indices, resolved to absolute layers. */
static int parse_from(const builder *b, const yp_ynode *n, yp_layer *L) {
    if (n->kind != YP_YN_SEQ) {
        L->n_from = 1;
        return parse_from_one(b, n, L->index, &L->from[0]);
    }
    if (n->n < 1 || n->n > YP_MAX_INPUTS)
        return fail(b, n->line, "from lists %d layers; use 1 to %d", n->n, YP_MAX_INPUTS);
    L->n_from = n->n;
    for (int j = 0; j < n->n; j++)
        if (parse_from_one(b, n->kids[j], L->index, &L->from[j])) return -1;
    return 0;
}

/* Module name and `number` (scaled: max(round(n * depth_multiple), 1) when n > 1). */
static int parse_module(builder *b, const yp_ynode *const *k, row *r) {
    int n = 0;
    if (k[2]->kind != YP_YN_SCALAR) return type_error(b, k[2], "module", "a module name like Conv");
    r->mi = module_find(k[2]->text);
    if (!r->mi)
        return fail(b, k[2]->line, "unknown module \"%.40s\"; known modules: " KNOWN_MODULES, k[2]->text);
    snprintf(r->L->module, sizeof r->L->module, "%s", r->mi->name);
    snprintf(b->where, sizeof b->where, "layer %d %s", r->L->index, r->mi->name);
    if (get_int(b, k[1], "number", 1, MAX_REPEATS, &n)) return -1;
    r->L->repeats = n > 1 ? (int)fmax(nearbyint(n * b->gd), 1) : n; /* round half to even, as Python */
    if (r->L->repeats > MAX_REPEATS)
        return fail(b, k[1]->line, "number: %d repeats after depth scaling; at most %d", r->L->repeats, MAX_REPEATS);
    if (r->L->repeats > 1 && !r->mi->repeats_inside)
        return fail(b, k[1]->line, "number: %d repeats; only C3 repeats (its bottlenecks), use 1", r->L->repeats);
    if (r->L->n_from > 1 && !r->mi->multi_from)
        return fail(b, k[0]->line, "%s takes one input; from must be a single layer", r->mi->name);
    return 0;
}

/* Imports row `rn` (section[j]) as layer i. */
static int build_row(builder *b, const yp_ynode *rn, const char *section, int j, int i) {
    row r = {.line = rn->line, .L = &b->layers[i]};
    snprintf(b->where, sizeof b->where, "layer %d", i);
    snprintf(b->prefix, sizeof b->prefix, "model.%d", i);
    b->cur = i;
    r.L->index = i;
    char got[80];
    if (rn->kind != YP_YN_SEQ)
        return fail(b, rn->line, "%s[%d]: a row must be [from, number, module, args], got %s", section, j,
                    yp_yn_describe(rn, got, sizeof got));
    if (rn->n != 4)
        return fail(b, rn->line, "%s[%d]: a row must be [from, number, module, args], got %d items", section, j,
                    rn->n);
    const yp_ynode *const *k = (const yp_ynode *const *)rn->kids;
    if (parse_from(b, k[0], r.L) || parse_module(b, k, &r)) return -1;
    if (k[3]->kind != YP_YN_SEQ) return type_error(b, k[3], "args", "a list like [64, 3, 2]");
    if (k[3]->n > r.mi->max_args)
        return fail(b, k[3]->line, "%d args; %s takes at most %d: %s", k[3]->n, r.mi->name, r.mi->max_args,
                    r.mi->usage);
    r.args = k[3];
    layer_output(b, r.L->from[0], &r.in, &r.c1, &r.in_stride);
    return r.mi->expand(b, &r);
}

/* Builds every row of backbone then head. */
static int build_layers(builder *b) {
    const yp_ynode *bb = b->v[K_BACKBONE], *hd = b->v[K_HEAD];
    b->n_layers = bb->n + hd->n;
    if (b->n_layers < 1) return fail(b, bb->line, "backbone and head are empty; list the layers");
    b->layers = calloc((size_t)b->n_layers, sizeof *b->layers);
    b->ch = calloc((size_t)b->n_layers, sizeof *b->ch);
    b->stride = calloc((size_t)b->n_layers, sizeof *b->stride);
    if (!b->layers || !b->ch || !b->stride) return yp_err_set(b->err, "%s: out of memory", b->file);
    for (int i = 0; i < b->n_layers; i++) {
        int in_bb = i < bb->n;
        if (build_row(b, in_bb ? bb->kids[i] : hd->kids[i - bb->n], in_bb ? "backbone" : "head",
                      in_bb ? i : i - bb->n, i))
            return -1;
    }
    b->where[0] = '\0';
    const char *last = b->layers[b->n_layers - 1].module;
    const yp_ynode *last_row = hd->n ? hd->kids[hd->n - 1] : bb->kids[bb->n - 1];
    if (strcmp(last, "Detect") != 0)
        return fail(b, last_row->line, "the last row is %s; a model ends with a Detect row", last);
    return 0;
}

/* ---- top level ---- */

/* Collects the top-level keys into b->v. Unknown, duplicate and missing keys are errors. */
static int read_keys(builder *b, const yp_ynode *root) {
    if (yp_yn_is_null(root))
        return fail(b, 1, "empty file; a model yaml needs nc, depth_multiple, width_multiple, anchors, backbone "
                    "and head");
    if (root->kind != YP_YN_MAP)
        return type_error(b, root, "the file", "a mapping with the keys " KNOWN_KEYS);
    for (int i = 0; i < root->n; i += 2) {
        const yp_ynode *key = root->kids[i];
        int k = 0;
        while (k < K_COUNT && strcmp(top_keys[k], key->text) != 0) k++;
        if (k == K_COUNT)
            return fail(b, key->line, "unknown key \"%.40s\"; known keys: " KNOWN_KEYS, key->text);
        if (b->v[k])
            return fail(b, key->line, "duplicate key \"%s\" (first given at line %d); keep one", key->text,
                        b->v[k]->line);
        b->v[k] = root->kids[i + 1];
    }
    for (int k = 0; k < K_CH; k++)
        if (!b->v[k])
            return fail(b, root->line, "missing required key \"%s\"; a model yaml needs " KNOWN_KEYS
                        " (ch optional)", top_keys[k]);
    return 0;
}

/* Reads the scalar keys and anchors; backbone and head must be lists. */
static int read_header(builder *b, const yp_ynode *root) {
    if (read_keys(b, root)) return -1;
    int nc = 0;
    if (get_int(b, b->v[K_NC], "nc", 1, MAX_NC, &nc) ||
        get_positive(b, b->v[K_DEPTH], "depth_multiple", 100, &b->gd) ||
        get_positive(b, b->v[K_WIDTH], "width_multiple", 100, &b->gw) || parse_anchors(b, b->v[K_ANCHORS]))
        return -1;
    b->nc = b->nc_override > 0 ? b->nc_override : nc;
    b->in_ch = 3;
    if (b->v[K_CH] && get_int(b, b->v[K_CH], "ch", 1, YP_GRAPH_MAX_IN_CHANNELS, &b->in_ch)) return -1;
    if (b->v[K_BACKBONE]->kind != YP_YN_SEQ) return type_error(b, b->v[K_BACKBONE], "backbone", "a list of rows");
    if (b->v[K_HEAD]->kind != YP_YN_SEQ) return type_error(b, b->v[K_HEAD], "head", "a list of rows");
    return 0;
}

/* Copies the builder's result into a new graph. Returns it, or NULL (OOM) with err set. */
static yp_graph *finish(const builder *b, const char *path) {
    yp_graph *g = yp_graph_new(b->n_layers, b->n_nodes);
    if (!g) {
        yp_err_set(b->err, "%s: out of memory", path);
        return NULL;
    }
    memcpy(g->layers, b->layers, (size_t)b->n_layers * sizeof *g->layers);
    memcpy(g->nodes, b->nodes, (size_t)b->n_nodes * sizeof *g->nodes);
    const char *base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
    const char *dot = strrchr(base, '.');
    int len = dot && dot != base ? (int)(dot - base) : (int)strlen(base);
    snprintf(g->name, sizeof g->name, "%.*s", len, base);
    g->nc = b->nc;
    g->depth_multiple = b->gd;
    g->width_multiple = b->gw;
    g->in_channels = b->in_ch;
    g->nl = b->nl;
    g->na = b->na;
    memcpy(g->strides, b->strides, sizeof g->strides);
    memcpy(g->anchors, b->anchors, sizeof g->anchors);
    return g;
}

yp_graph *yp_yaml_import(const char *path, int nc_override, yp_err *err) {
    if (nc_override > MAX_NC) {
        yp_err_set(err, "%s: --nc %d is out of range; use 1..%d", path, nc_override, MAX_NC);
        return NULL;
    }
    yp_ynode *root = yp_yn_read(path, err);
    if (!root) return NULL;
    builder b = {.file = path, .err = err, .nc_override = nc_override > 0 ? nc_override : 0};
    yp_graph *g = NULL;
    if (read_header(&b, root) == 0 && build_layers(&b) == 0) g = finish(&b, path);
    if (g && yp_graph_check(g, path, err)) {
        yp_graph_free(g);
        g = NULL;
    }
    free(b.layers);
    free(b.ch);
    free(b.stride);
    free(b.nodes);
    yp_yn_free(root);
    return g;
}
