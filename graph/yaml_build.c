/* yaml_build.c - the helpers the model-yaml importer's module expanders share (yaml_build.h):
 * errors that name the file and line, argument getters with Ultralytics' defaults, and node
 * builders for YOLOv5's Conv and Bottleneck. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "yaml_build.h"

int yb_fail(const builder *b, int line, const char *fmt, ...) {
    char msg[800];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (b->where[0]) return yp_err_set(b->err, "%s:%d: %s: %s", b->file, line, b->where, msg);
    return yp_err_set(b->err, "%s:%d: %s", b->file, line, msg);
}

int yb_type_error(const builder *b, const yp_ynode *n, const char *what, const char *expected) {
    char got[80];
    return yb_fail(b, n->line, "%s: expected %s, got %s; fix the value", what, expected,
                yp_yn_describe(n, got, sizeof got));
}

/* Integer in [lo, hi]. Returns 0, or -1 with err set. */
int yb_get_int(const builder *b, const yp_ynode *n, const char *what, int lo, int hi, int *out) {
    long v;
    if (yp_yn_long(n, &v)) return yb_type_error(b, n, what, "an integer");
    if (v < lo || v > hi) return yb_fail(b, n->line, "%s: %ld is out of range; use %d..%d", what, v, lo, hi);
    *out = (int)v;
    return 0;
}

/* Number in (0, hi]. Returns 0, or -1 with err set. */
int yb_get_positive(const builder *b, const yp_ynode *n, const char *what, double hi, double *out) {
    if (yp_yn_double(n, out)) return yb_type_error(b, n, what, "a number");
    if (*out <= 0 || *out > hi) return yb_fail(b, n->line, "%s: %g is out of range; use a number in (0, %g]", what,
                                            *out, hi);
    return 0;
}

/* ---- nodes ---- */

/* Appends a node to the current layer, its name formatted from fmt. Returns its id, or NO_NODE
 * when an input is NO_NODE (an earlier failure) or on OOM (err set). */
int yb_add_node(builder *b, yp_op op, const int *in, int n_in, yp_attrs a, const char *fmt, ...) {
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
const char *yb_pfx(char *buf, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, YP_NAME_LEN, fmt, ap);
    va_end(ap);
    return buf;
}

yp_conv_attrs yb_conv_attrs(int c_in, int c_out, int k, int s) { return yb_conv_attrs_hw(c_in, c_out, k, k, s, s); }

yp_conv_attrs yb_conv_attrs_hw(int c_in, int c_out, int kh, int kw, int sh, int sw) {
    return (yp_conv_attrs){.c_in = c_in, .c_out = c_out, .kh = kh, .kw = kw, .sh = sh, .sw = sw, .ph = kh / 2,
                           .pw = kw / 2, .groups = 1, .bias = 0};
}

/* Ultralytics Conv: conv2d (no bias) -> batchnorm2d -> silu, named PRE.conv/.bn/.act.
 * Returns the silu's id, or NO_NODE. */
int yb_add_act(builder *b, yb_act act, int in, const char *name) {
    if (act.op < 0) return in;
    return yb_add_node(b, (yp_op)act.op, &in, 1, act.attrs, "%s", name);
}

int yb_add_conv_act(builder *b, const char *pre, int in, yp_conv_attrs a, int act) {
    char t[YP_NAME_LEN];
    yp_bn_attrs bn = {.c = a.c_out, .eps = 1e-3, .momentum = 0.03};
    int x = yb_add_node(b, YP_OP_CONV2D, &in, 1, (yp_attrs){.conv = a}, "%s.conv", pre);
    int y = yb_add_node(b, YP_OP_BATCHNORM2D, &x, 1, (yp_attrs){.bn = bn}, "%s.bn", pre);
    return act ? yb_add_act(b, b->act, y, yb_pfx(t, "%s.act", pre)) : y;
}

int yb_add_conv(builder *b, const char *pre, int in, yp_conv_attrs a) { return yb_add_conv_act(b, pre, in, a, 1); }

/* Bottleneck: cv1 1x1 c1 -> c_, cv2 3x3 c_ -> c2, plus the input when shortcut and c1 == c2. */
int yb_add_bottleneck(builder *b, const char *pre, int in, int c1, int c2, int c_, int shortcut) {
    char t[YP_NAME_LEN];
    int h = yb_add_conv(b, yb_pfx(t, "%s.cv1", pre), in, yb_conv_attrs(c1, c_, 1, 1));
    int y = yb_add_conv(b, yb_pfx(t, "%s.cv2", pre), h, yb_conv_attrs(c_, c2, 3, 1));
    if (!shortcut || c1 != c2) return y;
    return yb_add_node(b, YP_OP_ADD, (int[]){in, y}, 2, (yp_attrs){0}, "%s.add", pre);
}

int yb_add_concat(builder *b, const int *in, int n_in, const char *name) {
    return yb_add_node(b, YP_OP_CONCAT, in, n_in, (yp_attrs){.concat = {.axis = 1}}, "%s", name);
}

/* Records the layer's output and display args. Returns 0, or -1 when out is NO_NODE (err set). */
int yb_layer_done(builder *b, const row *r, int out, int c2, int stride, const int *args, int n_args) {
    if (out == NO_NODE) return -1;
    /* each layer multiplies the stride by at most 2 x MAX_K, so a capped one cannot overflow */
    if (stride > MAX_STRIDE)
        return yb_fail(b, r->line, "the layers up to here downsample the image %d times; at most %d (YOLOv5's P6 "
                    "models: 64)", stride, MAX_STRIDE);
    if (c2 > MAX_CH) return yb_fail(b, r->line, "%d output channels; at most %d", c2, MAX_CH);
    r->L->output = out;
    r->L->n_args = n_args;
    memcpy(r->L->args, args, (size_t)n_args * sizeof *args);
    b->ch[r->L->index] = c2;
    b->stride[r->L->index] = stride;
    return 0;
}

/* ---- module arguments ---- */

const yp_ynode *yb_arg_node(const row *r, int j) { return j < r->args->n ? r->args->kids[j] : NULL; }

int yb_arg_missing(const builder *b, const row *r, int j) {
    return yb_fail(b, r->line, "args[%d] is missing; write args as %s", j, r->mi->usage);
}

/* Integer argument j in [lo, hi]; dflt when absent (ARG_REQUIRED: absence is an error). */
int yb_arg_int(const builder *b, const row *r, int j, int dflt, int lo, int hi, int *out) {
    const yp_ynode *n = yb_arg_node(r, j);
    char what[24];
    if (!n && dflt == ARG_REQUIRED) return yb_arg_missing(b, r, j);
    if (!n) *out = dflt;
    snprintf(what, sizeof what, "args[%d]", j);
    return n ? yb_get_int(b, n, what, lo, hi, out) : 0;
}

int yb_arg_channels(const builder *b, const row *r, int j, int *c2) {
    int c;
    if (yb_arg_int(b, r, j, ARG_REQUIRED, 1, MAX_BASE_CH, &c)) return -1;
    *c2 = c == b->na * (b->nc + 5) ? c : (int)ceil(c * b->gw / b->ch_mul) * b->ch_mul;
    if (*c2 > MAX_CH) return yb_fail(b, r->line, "%d channels after width scaling; at most %d", *c2, MAX_CH);
    return 0;
}

/* Padding argument j: absent or None means k / 2 (autopad). */
int yb_arg_pad(const builder *b, const row *r, int j, int k, int *p) {
    const yp_ynode *n = yb_arg_node(r, j);
    if (!n || yp_yn_is_null(n)) {
        *p = k / 2;
        return 0;
    }
    return yb_arg_int(b, r, j, 0, 0, MAX_K, p);
}

int yb_arg_bool(const builder *b, const row *r, int j, int dflt, int *out) {
    const yp_ynode *n = yb_arg_node(r, j);
    char what[24];
    *out = dflt;
    snprintf(what, sizeof what, "args[%d]", j);
    if (n && yp_yn_bool(n, out)) return yb_type_error(b, n, what, "True or False");
    return 0;
}

int yb_check_odd_kernel(const builder *b, const row *r, int k) {
    if (k % 2) return 0;
    return yb_fail(b, r->line, "pooling kernel %d is even, so its output would not match its input for the "
                "concat; use an odd kernel", k);
}

/* ---- modules ---- */

/* Node id, channels and stride of layer f's output (f may be YP_INPUT_IMAGE). */
void yb_layer_output(const builder *b, int f, int *node, int *ch, int *stride) {
    *node = f == YP_INPUT_IMAGE ? YP_INPUT_IMAGE : b->layers[f].output;
    *ch = f == YP_INPUT_IMAGE ? b->in_ch : b->ch[f];
    *stride = f == YP_INPUT_IMAGE ? 1 : b->stride[f];
}

/* The activations `activation:` names, as Python source (Conv.default_act = eval(act)). */
static const struct {
    const char *name; /* up to the "(" */
    int op;           /* -1: none */
    int takes_slope;  /* nn.LeakyReLU(negative_slope=0.01) */
} acts[] = {
    {"nn.SiLU", YP_OP_SILU, 0},
    {"nn.ReLU", YP_OP_RELU, 0},
    {"nn.LeakyReLU", YP_OP_LEAKY_RELU, 1},
    {"nn.Hardswish", YP_OP_HARDSWISH, 0},
    {"nn.Identity", -1, 0},
};

int yb_parse_act(const builder *b, const yp_ynode *n, yb_act *out) {
    char known[160] = "";
    for (size_t i = 0; i < sizeof acts / sizeof acts[0]; i++)
        snprintf(known + strlen(known), sizeof known - strlen(known), "%s%s()", i ? ", " : "", acts[i].name);
    if (n->kind != YP_YN_SCALAR) return yb_type_error(b, n, "activation", "a module like nn.SiLU()");
    const char *t = n->text, *open = strchr(t, '('), *close = strrchr(t, ')');
    if (!open || !close || close < open || close[1])
        return yb_fail(b, n->line, "activation: \"%.40s\" is not a module call; write one of %s", t, known);
    for (size_t i = 0; i < sizeof acts / sizeof acts[0]; i++) {
        if (strlen(acts[i].name) != (size_t)(open - t) || strncmp(t, acts[i].name, (size_t)(open - t)) != 0) continue;
        *out = (yb_act){.op = acts[i].op};
        double *slope = &out->attrs.leaky.slope;
        if (acts[i].takes_slope) *slope = 0.01;
        char arg[40];
        int len = (int)(close - open - 1);
        if (len >= (int)sizeof arg) len = (int)sizeof arg - 1;
        snprintf(arg, sizeof arg, "%.*s", len, open + 1);
        const char *a = strncmp(arg, "negative_slope=", 15) == 0 ? arg + 15 : arg;
        char *end = NULL;
        if (!arg[0] || strcmp(arg, "inplace=True") == 0) return 0;
        if (acts[i].takes_slope) *slope = strtod(a, &end);
        if (!acts[i].takes_slope || end == a || *end || !(*slope >= 0 && *slope <= 1))
            return yb_fail(b, n->line, "activation: \"%.40s\": %s takes %s; write e.g. %s(%s)", t, acts[i].name,
                           acts[i].takes_slope ? "a negative slope in [0, 1]" : "no arguments", acts[i].name,
                           acts[i].takes_slope ? "0.1" : "");
        return 0;
    }
    return yb_fail(b, n->line, "activation: \"%.40s\" is not supported; use one of %s", t, known);
}
