/* op_pointwise.c - the per-element ops that keep their input's shape: batchnorm2d (with its
 * parameters and running statistics) and the activations silu, relu, leaky_relu, hardswish. */
#include <stdio.h>

#include "ops_internal.h"
#include "yp_schedule.h"

/* ---------------------------------------------------------------- batchnorm2d */

int yp_bn_check(const yp_check_ctx *c, const yp_node *n, int *c_out) {
    int c0 = yp_check_channels(c, n->inputs[0]);
    if (n->a.bn.c != c0)
        return yp_err_set(c->err, "%s: nodes[%d].attrs.c: %d, but its input has %d channels; set c to %d", c->file,
                          c->i, n->a.bn.c, c0, c0);
    *c_out = c0;
    return 0;
}

int yp_bn_infer(const yp_infer_ctx *c, const yp_node *n, yp_node_info *o) {
    (void)c;
    o->params = 2 * (int64_t)n->a.bn.c;  /* weight, bias */
    o->buffers = 2 * (int64_t)n->a.bn.c; /* running mean, var */
    return 0;
}

/* weight, bias, then the running mean and variance: (c) each */
int yp_bn_params(const yp_node *n, yp_param_spec *out) {
    static const struct {
        yp_role role;
        const char *suffix;
    } p[4] = {{YP_ROLE_BN_GAMMA, ".weight"}, {YP_ROLE_BN_BETA, ".bias"}, {YP_ROLE_RUNNING_MEAN, ".running_mean"},
              {YP_ROLE_RUNNING_VAR, ".running_var"}};
    for (int k = 0; k < 4; k++) {
        out[k] = (yp_param_spec){.role = p[k].role, .level = 0, .ndim = 1, .shape = {n->a.bn.c}};
        snprintf(out[k].suffix, sizeof out[k].suffix, "%s", p[k].suffix);
    }
    return 4;
}

unsigned yp_bn_fwd_writes(const yp_node *n) {
    (void)n;
    return YP_FWD_STATS | YP_FWD_RUNNING;
}

int64_t yp_bn_flops(const yp_node *n, yp_shape out) {
    (void)n;
    return 6 * yp_shape_numel(out); /* statistics + normalise + affine */
}

int yp_bn_load(const yp_attrs_in *in, yp_node *n) {
    static const char *const keys[] = {"c", "eps", "momentum", NULL};
    yp_bn_attrs *a = &n->a.bn;
    if (yp_attr_keys(in, keys) || yp_attr_int(in, "c", 1, YP_LIM_CHANNELS, &a->c) ||
        yp_attr_num(in, "eps", 1e-12, 1.0, &a->eps) || yp_attr_num(in, "momentum", 0.0, 1.0, &a->momentum))
        return -1;
    return 0;
}

void yp_bn_write(const yp_node *n, yp_attrs_out *out) {
    cJSON_AddNumberToObject(out->obj, "c", n->a.bn.c);
    cJSON_AddNumberToObject(out->obj, "eps", n->a.bn.eps);
    cJSON_AddNumberToObject(out->obj, "momentum", n->a.bn.momentum);
}

/* ---------------------------------------------------------------- silu (checks, shape, attrs: the defaults) */

int64_t yp_silu_flops(const yp_node *n, yp_shape out) {
    (void)n;
    return 5 * yp_shape_numel(out);
}

/* ---------------------------------------------------------------- relu (every function a default) */

/* ---------------------------------------------------------------- leaky_relu */

int64_t yp_leaky_flops(const yp_node *n, yp_shape out) {
    (void)n;
    return 2 * yp_shape_numel(out); /* compare, multiply */
}

int yp_leaky_load(const yp_attrs_in *in, yp_node *n) {
    static const char *const keys[] = {"slope", NULL};
    return yp_attr_keys(in, keys) || yp_attr_num(in, "slope", 0.0, 1.0, &n->a.leaky.slope) ? -1 : 0;
}

void yp_leaky_write(const yp_node *n, yp_attrs_out *out) {
    cJSON_AddNumberToObject(out->obj, "slope", n->a.leaky.slope);
}

/* ---------------------------------------------------------------- hardswish (checks, shape, attrs: the defaults) */

int64_t yp_hardswish_flops(const yp_node *n, yp_shape out) {
    (void)n;
    return 4 * yp_shape_numel(out); /* x * clamp(x + 3, 0, 6) / 6 */
}
