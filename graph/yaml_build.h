/* yaml_build.h - what the model-yaml importer's files share (graph-internal): the builder the
 * rows are expanded into, the row being expanded, the module table's row type, and the helpers
 * every module expander uses (errors, argument getters, node builders for YOLOv5's Conv and
 * Bottleneck). yaml_import.c reads the file and walks the rows; yaml_build.c holds the helpers;
 * yaml_modules.c the module table (one row per Ultralytics module); yaml_mod_*.c the expanders
 * by family. How to add a module: write `int ym_x(builder *, const row *)` in the yaml_mod_*.c
 * of its family, declare it below and add its row to the table. */
#ifndef YP_YAML_BUILD_H
#define YP_YAML_BUILD_H

#include "yaml_tree.h"
#include "yp_graph.h"

#define MAX_NC YP_GRAPH_MAX_NC
#define MAX_BASE_CH 65536
#define MAX_CH (1 << 20)
#define MAX_K 64
#define MAX_STRIDE 1024 /* the IR loader's strides cap (ir_load.c): an IR it refuses is never written */
#define MAX_REPEATS 1000
#define MAX_LAYERS 100000
#define ARG_REQUIRED (-999999)
#define NO_NODE (-2) /* "building failed" (OOM, err set); YP_INPUT_IMAGE is -1 and a valid input */

/* The top-level keys of a model yaml. */
enum { K_NC, K_DEPTH, K_WIDTH, K_ANCHORS, K_BACKBONE, K_HEAD, K_CH, K_ACTIVATION, K_CH_MUL, K_COUNT };

/* The activation every Conv ends with (Conv.default_act, set by the yaml's `activation:`). */
typedef struct {
    int op;         /* YP_OP_SILU, ...; -1: nn.Identity() (no node) */
    yp_attrs attrs; /* its node's attrs: LeakyReLU's negative slope */
} yb_act;

typedef struct {
    const char *file;
    yp_err *err;
    char where[48];      /* "layer 4 C3", prefixed to row errors */
    char prefix[32];     /* "model.4" (or "model.4.1", a repeat): node-name prefix of the current module */
    int nc, nc_override, in_ch, nl, na, ch_mul;
    int anchors_auto;    /* `anchors: N`: AutoAnchor computes them (the defaults stand in until then) */
    double gd, gw;
    yb_act act;
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
    int repeats_inside; /* `number` is the bottleneck count (C3); otherwise the module repeats */
    const char *usage;
};

/* The module table (yaml_modules.c): the row named `name`, or NULL. */
const module_info *yb_module_find(const char *name);
/* Writes the known module names, ", " separated, into buf (for the unknown-module message). */
void yb_module_names(char *buf, size_t size);

/* ---- errors ---- */
/* Sets err to "FILE:LINE: [where: ]message". Returns -1. */
int yb_fail(const builder *b, int line, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
int yb_type_error(const builder *b, const yp_ynode *n, const char *what, const char *expected);
/* Integer in [lo, hi]. Returns 0, or -1 with err set. */
int yb_get_int(const builder *b, const yp_ynode *n, const char *what, int lo, int hi, int *out);
/* Number in (0, hi]. Returns 0, or -1 with err set. */
int yb_get_positive(const builder *b, const yp_ynode *n, const char *what, double hi, double *out);

/* ---- nodes ---- */
/* Appends a node to the current layer, its name formatted from fmt. Returns its id, or NO_NODE
 * when an input is NO_NODE (an earlier failure) or on OOM (err set). */
int yb_add_node(builder *b, yp_op op, const int *in, int n_in, yp_attrs a, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 6, 7)))
#endif
    ;
/* Formats a name prefix into buf (YP_NAME_LEN bytes). Returns buf. */
const char *yb_pfx(char *buf, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
/* k x k conv, stride s, autopad, groups 1, no bias. */
yp_conv_attrs yb_conv_attrs(int c_in, int c_out, int k, int s);
/* kh x kw conv, stride sh x sw, autopad per axis (YOLOv5's autopad of a list: [kh // 2, kw // 2]),
 * groups 1, no bias: Conv(c1, c2, (kh, kw), (sh, sw)). */
yp_conv_attrs yb_conv_attrs_hw(int c_in, int c_out, int kh, int kw, int sh, int sw);
/* Ultralytics Conv: conv2d (no bias) -> batchnorm2d -> the default activation, named
 * PRE.conv/.bn/.act. Returns the output's id, or NO_NODE. */
int yb_add_conv(builder *b, const char *pre, int in, yp_conv_attrs a);
/* The same with act = 0: Conv(..., act=False), no activation. */
int yb_add_conv_act(builder *b, const char *pre, int in, yp_conv_attrs a, int act);
/* The activation `act` (yb_act) on node in, named NAME; in itself for nn.Identity(). */
int yb_add_act(builder *b, yb_act act, int in, const char *name);
/* Bottleneck: cv1 1x1 c1 -> c_, cv2 3x3 c_ -> c2, plus the input when shortcut and c1 == c2. */
int yb_add_bottleneck(builder *b, const char *pre, int in, int c1, int c2, int c_, int shortcut);
int yb_add_concat(builder *b, const int *in, int n_in, const char *name);
/* Records the layer's output and display args. Returns 0, or -1 when out is NO_NODE (err set). */
int yb_layer_done(builder *b, const row *r, int out, int c2, int stride, const int *args, int n_args);
/* Node id, channels and stride of layer f's output (f may be YP_INPUT_IMAGE). */
void yb_layer_output(const builder *b, int f, int *node, int *ch, int *stride);

/* ---- module arguments ---- */
const yp_ynode *yb_arg_node(const row *r, int j);
int yb_arg_missing(const builder *b, const row *r, int j);
/* Integer argument j in [lo, hi]; dflt when absent (ARG_REQUIRED: absence is an error). */
int yb_arg_int(const builder *b, const row *r, int j, int dflt, int lo, int hi, int *out);
/* make_divisible(c * width_multiple, channel_multiple), except for c == na * (nc + 5). */
int yb_arg_channels(const builder *b, const row *r, int j, int *c2);
/* Padding argument j: absent or None means k / 2 (autopad). */
int yb_arg_pad(const builder *b, const row *r, int j, int k, int *p);
int yb_arg_bool(const builder *b, const row *r, int j, int dflt, int *out);
int yb_check_odd_kernel(const builder *b, const row *r, int k);

/* `activation:` (nn.SiLU(), nn.LeakyReLU(0.1), ...). Returns 0, or -1 with err set. */
int yb_parse_act(const builder *b, const yp_ynode *n, yb_act *out);

/* ---- anchors (yaml_mod_yolov5.c) ---- */
/* `anchors`: rows of 2*na positive numbers (w h pairs, pixels), one row per level, or a count N
 * of anchors per level (AutoAnchor's). Returns 0, or -1 with err set. */
int yb_parse_anchors(builder *b, const yp_ynode *n);

/* ---- module bodies several modules share (yaml_mod_yolov5.c) ---- */
/* C3's frame around its inner modules m: yb_c3_begin adds cv1 (c1 -> c_ = c2 / 2) and returns its
 * output (NO_NODE on error); the caller adds m on it; yb_c3_end adds cv2 (c1 -> c_), cat(m, cv2)
 * and cv3 (2 c_ -> c2) and finishes the layer. PyTorch's order: cv1, m, cv2, cat, cv3. */
int yb_c3_begin(builder *b, const row *r, int c2, int *c_);
int yb_c3_end(builder *b, const row *r, int m, int c2, const int *args, int n_args);
/* SPP's kernels (args[1], default [5, 9, 13]): the count (1..3), or -1. */
int yb_spp_kernels(const builder *b, const row *r, int k[3]);
/* SPP(c1 -> c2, kernels k[0..nk)) named PRE.cv1, PRE.m.j, PRE.cat, PRE.cv2. */
int yb_add_spp(builder *b, const char *pre, int in, int c1, int c2, const int *k, int nk);

/* ---- module expanders ---- */
/* yaml_mod_yolov5.c: the modules of YOLOv5's own models */
int ym_conv(builder *b, const row *r);
int ym_c3(builder *b, const row *r);
int ym_bottleneck(builder *b, const row *r);
int ym_sppf(builder *b, const row *r);
int ym_spp(builder *b, const row *r);
int ym_focus(builder *b, const row *r);
int ym_contract(builder *b, const row *r);
int ym_expand(builder *b, const row *r);
int ym_upsample(builder *b, const row *r);
int ym_concat(builder *b, const row *r);
int ym_detect(builder *b, const row *r);
int ym_segment(builder *b, const row *r);
/* yaml_mod_csp.c: BottleneckCSP (YOLOv5 <= v3.1), C3SPP */
int ym_bottleneck_csp(builder *b, const row *r);
int ym_c3spp(builder *b, const row *r);
int ym_c3x(builder *b, const row *r);
int ym_cross_conv(builder *b, const row *r);
/* yaml_mod_ghost.c: GhostNet's modules (depthwise convolutions) */
int ym_ghost_conv(builder *b, const row *r);
int ym_dw_conv(builder *b, const row *r);
int ym_ghost_bottleneck(builder *b, const row *r);
int ym_c3ghost(builder *b, const row *r);
/* yaml_mod_torch.c: plain torch.nn modules */
int ym_maxpool(builder *b, const row *r);
int ym_zero_pad(builder *b, const row *r);
int ym_batchnorm(builder *b, const row *r);
/* yaml_mod_transformer.c: C3TR (its TransformerBlock's Linears as 1x1 convs, attention) */
int ym_c3tr(builder *b, const row *r);

#endif
