/* op_conv.c - the matrix-math ops: conv2d, and detect (per level a 1x1 conv with bias from c_in[l]
 * to na*(nc+5) channels). Their rows' check, shape inference, attrs, parameters and convolutions. */
#include <stdio.h>

#include "ops_internal.h"
#include "yp_schedule.h"

static int64_t conv_params(int c_in, int c_out, int kh, int kw, int groups, int bias) {
    return (int64_t)(c_in / groups) * c_out * kh * kw + (bias ? c_out : 0);
}

/* ---------------------------------------------------------------- conv2d */

int yp_conv2d_check(const yp_check_ctx *c, const yp_node *n, int *c_out) {
    const yp_conv_attrs *a = &n->a.conv;
    int c0 = yp_check_channels(c, n->inputs[0]);
    if (a->c_in != c0)
        return yp_err_set(c->err, "%s: nodes[%d].attrs.c_in: %d, but its input has %d channels; set c_in to %d",
                          c->file, c->i, a->c_in, c0, c0);
    if (a->groups < 1 || a->c_in % a->groups || a->c_out % a->groups)
        return yp_err_set(c->err, "%s: nodes[%d].attrs.groups: %d must divide c_in %d and c_out %d", c->file, c->i,
                          a->groups, a->c_in, a->c_out);
    *c_out = a->c_out;
    return 0;
}

int yp_conv2d_infer(const yp_infer_ctx *c, const yp_node *n, yp_node_info *o) {
    const yp_conv_attrs *a = &n->a.conv;
    yp_shape x = o->out[0], *y = &o->out[0];
    (void)c;
    y->c = a->c_out, y->h = yp_window_out(x.h, a->kh, a->sh, a->ph), y->w = yp_window_out(x.w, a->kw, a->sw, a->pw);
    o->params = conv_params(a->c_in, a->c_out, a->kh, a->kw, a->groups, a->bias);
    o->flops = yp_mul4(2 * y->n, y->c * y->h, y->w, (int64_t)(a->c_in / a->groups) * a->kh * a->kw);
    return 0;
}

int yp_conv2d_load(const yp_attrs_in *in, yp_node *n) {
    static const char *const keys[] = {"c_in", "c_out", "k", "s", "p", "groups", "bias", "torch_input_copy", NULL};
    yp_conv_attrs *a = &n->a.conv;
    int k[2], s[2], p[2];
    if (yp_attr_keys(in, keys) || yp_attr_int(in, "c_in", 1, YP_LIM_CHANNELS, &a->c_in) ||
        yp_attr_int(in, "c_out", 1, YP_LIM_CHANNELS, &a->c_out) || yp_attr_pair(in, "k", 1, YP_LIM_KERNEL, k) ||
        yp_attr_pair(in, "s", 1, YP_LIM_KERNEL, s) || yp_attr_pair(in, "p", 0, YP_LIM_KERNEL, p) ||
        yp_attr_int(in, "groups", 1, YP_LIM_CHANNELS, &a->groups) || yp_attr_bool(in, "bias", &a->bias) ||
        (cJSON_GetObjectItemCaseSensitive(in->obj, "torch_input_copy") &&
         yp_attr_bool(in, "torch_input_copy", &a->torch_input_copy)))
        return -1;
    a->kh = k[0], a->kw = k[1], a->sh = s[0], a->sw = s[1], a->ph = p[0], a->pw = p[1];
    return 0;
}

void yp_conv2d_write(const yp_node *n, yp_attrs_out *out) {
    const yp_conv_attrs *a = &n->a.conv;
    cJSON_AddNumberToObject(out->obj, "c_in", a->c_in);
    cJSON_AddNumberToObject(out->obj, "c_out", a->c_out);
    yp_attr_write_pair(out, "k", a->kh, a->kw);
    yp_attr_write_pair(out, "s", a->sh, a->sw);
    yp_attr_write_pair(out, "p", a->ph, a->pw);
    cJSON_AddNumberToObject(out->obj, "groups", a->groups);
    cJSON_AddBoolToObject(out->obj, "bias", a->bias);
    if (a->torch_input_copy) cJSON_AddBoolToObject(out->obj, "torch_input_copy", 1); /* optional: only when set */
}

/* A conv's parameter: its role, level and suffix, and its PyTorch shape (ndim entries of s). */
static yp_param_spec param(yp_role role, int level, const char *suffix, int ndim, const int64_t s[4]) {
    yp_param_spec p = {.role = role, .level = level, .ndim = ndim};
    snprintf(p.suffix, sizeof p.suffix, "%s", suffix);
    for (int k = 0; k < ndim; k++) p.shape[k] = s[k];
    return p;
}

/* weight (c_out, c_in/groups, kh, kw), then the bias (c_out) when it has one */
int yp_conv2d_params(const yp_node *n, yp_param_spec *out) {
    const yp_conv_attrs *a = &n->a.conv;
    out[0] = param(YP_ROLE_CONV_WEIGHT, 0, ".weight", 4, (int64_t[4]){a->c_out, a->c_in / a->groups, a->kh, a->kw});
    if (!a->bias) return 1;
    out[1] = param(YP_ROLE_CONV_BIAS, 0, ".bias", 1, (int64_t[4]){a->c_out});
    return 2;
}

void yp_conv2d_geom(const yp_node *n, int level, yp_conv_geom *g) {
    const yp_conv_attrs *a = &n->a.conv;
    (void)level;
    *g = (yp_conv_geom){a->kh, a->kw, a->sh, a->sw, a->ph, a->pw, a->groups, a->bias};
}

unsigned yp_conv2d_fwd_writes(const yp_node *n) { return n->a.conv.torch_input_copy ? YP_FWD_INPUT_COPY : 0u; }

/* ---------------------------------------------------------------- detect */

int yp_detect_check(const yp_check_ctx *c, const yp_node *n, int *c_out) {
    const yp_detect_attrs *d = &n->a.detect;
    const yp_graph *g = c->g;
    if (d->nl != g->nl || d->na != g->na || d->nc != g->nc || n->n_inputs != d->nl)
        return yp_err_set(c->err, "%s: nodes[%d].attrs: detect has nc %d, nl %d, na %d and %d inputs; the graph "
                          "has nc %d, %d levels of %d anchors: make them agree", c->file, c->i, d->nc, d->nl, d->na,
                          n->n_inputs, g->nc, g->nl, g->na);
    for (int l = 0; l < d->nl; l++) {
        int ch = yp_check_channels(c, n->inputs[l]);
        if (d->c_in[l] != ch)
            return yp_err_set(c->err, "%s: nodes[%d].attrs.c_in[%d]: %d, but input %d has %d channels; set it to %d",
                              c->file, c->i, l, d->c_in[l], n->inputs[l], ch, ch);
    }
    *c_out = -1; /* one output per level: only the loss consumes them */
    return 0;
}

int yp_detect_infer(const yp_infer_ctx *c, const yp_node *n, yp_node_info *o) {
    const yp_detect_attrs *d = &n->a.detect;
    int64_t no = (int64_t)d->na * (d->nc + 5);
    o->n_out = d->nl, o->flops = 0;
    for (int l = 0; l < d->nl; l++) {
        yp_shape b = yp_infer_shape(c, n->inputs[l]);
        o->out[l] = b, o->out[l].c = no;
        o->params += conv_params(d->c_in[l], (int)no, 1, 1, 1, 1);
        o->flops += yp_mul4(2 * b.n, no * b.h, b.w, d->c_in[l]);
    }
    return 0;
}

int yp_detect_load(const yp_attrs_in *in, yp_node *n) {
    static const char *const keys[] = {"nc", "na", "nl", "c_in", NULL};
    yp_detect_attrs *d = &n->a.detect;
    int nl = 0;
    if (yp_attr_keys(in, keys) || yp_attr_int(in, "nc", 1, 100000, &d->nc) ||
        yp_attr_int(in, "na", 1, YP_MAX_ANCHORS, &d->na) || yp_attr_int(in, "nl", 1, YP_MAX_LEVELS, &d->nl) ||
        yp_attr_ints(in, "c_in", YP_MAX_LEVELS, 1, YP_LIM_CHANNELS, d->c_in, &nl))
        return -1;
    if (nl != d->nl)
        return yp_err_set(in->c->err, "%s: %s.c_in: %d entries for nl %d levels; give one per level", in->c->file,
                          in->path, nl, d->nl);
    return 0;
}

void yp_detect_write(const yp_node *n, yp_attrs_out *out) {
    const yp_detect_attrs *d = &n->a.detect;
    cJSON_AddNumberToObject(out->obj, "nc", d->nc);
    cJSON_AddNumberToObject(out->obj, "na", d->na);
    cJSON_AddNumberToObject(out->obj, "nl", d->nl);
    cJSON_AddItemToObject(out->obj, "c_in", cJSON_CreateIntArray(d->c_in, d->nl));
}

/* per level l, model.24.m.<l>: weight (na*(nc+5), c_in[l], 1, 1), bias (na*(nc+5)) */
int yp_detect_params(const yp_node *n, yp_param_spec *out) {
    const yp_detect_attrs *d = &n->a.detect;
    const int64_t no = (int64_t)d->na * (d->nc + 5);
    for (int l = 0; l < d->nl; l++) {
        char w[24], b[24];
        snprintf(w, sizeof w, ".m.%d.weight", l);
        snprintf(b, sizeof b, ".m.%d.bias", l);
        out[2 * l] = param(YP_ROLE_CONV_WEIGHT, l, w, 4, (int64_t[4]){no, d->c_in[l], 1, 1});
        out[2 * l + 1] = param(YP_ROLE_CONV_BIAS, l, b, 1, (int64_t[4]){no});
    }
    return 2 * d->nl;
}

void yp_detect_geom(const yp_node *n, int level, yp_conv_geom *g) {
    (void)n, (void)level;
    *g = (yp_conv_geom){.kh = 1, .kw = 1, .sh = 1, .sw = 1, .groups = 1, .bias = 1};
}

void yp_conv2d_resample(const yp_node *n, int axis, int *down, int *up) {
    *down = axis ? n->a.conv.sw : n->a.conv.sh, *up = 1;
}
