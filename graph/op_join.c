/* op_join.c - the ops that join several maps of one spatial size: add (same channels) and concat
 * (along channels). */
#include "ops_internal.h"

/* Refuses input k of node n when its map is not the size of input 0's (`what` names the op). */
static int same_map(const yp_infer_ctx *c, const yp_node *n, int k, const char *what) {
    yp_shape x = yp_infer_shape(c, n->inputs[0]), b = yp_infer_shape(c, n->inputs[k]);
    if (b.h != x.h || b.w != x.w)
        return yp_err_set(c->err, "node %d (%s): %s of %lldx%lld and %lldx%lld maps; the image size must be a "
                          "multiple of %d", n->id, n->name, what, (long long)x.h, (long long)x.w, (long long)b.h,
                          (long long)b.w, yp_graph_max_stride(c->g));
    return 0;
}

/* ---------------------------------------------------------------- add */

int yp_add_check(const yp_check_ctx *c, const yp_node *n, int *c_out) {
    int c0 = yp_check_channels(c, n->inputs[0]), c1 = yp_check_channels(c, n->inputs[1]);
    if (c1 != c0)
        return yp_err_set(c->err, "%s: nodes[%d].inputs: add of %d and %d channels; both inputs need the same "
                          "channel count", c->file, c->i, c0, c1);
    *c_out = c0;
    return 0;
}

int yp_add_infer(const yp_infer_ctx *c, const yp_node *n, yp_node_info *o) {
    (void)o;
    return same_map(c, n, 1, "add");
}

/* ---------------------------------------------------------------- concat */

int yp_concat_check(const yp_check_ctx *c, const yp_node *n, int *c_out) {
    if (n->a.concat.axis != 1)
        return yp_err_set(c->err, "%s: nodes[%d].attrs.axis: %d; only channel concat (axis 1) is supported",
                          c->file, c->i, n->a.concat.axis);
    int sum = 0;
    for (int k = 0; k < n->n_inputs; k++) {
        int ch = yp_check_channels(c, n->inputs[k]);
        if (ch > YP_LIM_CHANNELS - sum) /* past the cap (and an int could wrap) */
            return yp_err_set(c->err, "%s: nodes[%d]: concat of more than %d channels; a map has at most %d", c->file,
                              c->i, YP_LIM_CHANNELS, YP_LIM_CHANNELS);
        sum += ch;
    }
    *c_out = sum;
    return 0;
}

int yp_concat_infer(const yp_infer_ctx *c, const yp_node *n, yp_node_info *o) {
    o->out[0].c = 0;
    for (int k = 0; k < n->n_inputs; k++) {
        if (same_map(c, n, k, "concat")) return -1;
        o->out[0].c += yp_infer_shape(c, n->inputs[k]).c;
    }
    return 0;
}

int yp_concat_load(const yp_attrs_in *in, yp_node *n) {
    static const char *const keys[] = {"axis", NULL};
    return yp_attr_keys(in, keys) || yp_attr_int(in, "axis", 0, 3, &n->a.concat.axis) ? -1 : 0;
}

void yp_concat_write(const yp_node *n, yp_attrs_out *out) {
    cJSON_AddNumberToObject(out->obj, "axis", n->a.concat.axis);
}
