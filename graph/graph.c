/* graph.c - graph lifetime and the structural checks every graph must pass, whether it
 * came from the JSON IR or from a model yaml. */
#include <stdlib.h>
#include <string.h>

#include "ops_internal.h"

yp_graph *yp_graph_new(int n_layers, int n_nodes) {
    yp_graph *g = calloc(1, sizeof *g);
    if (!g) return NULL;
    g->layers = calloc(n_layers > 0 ? (size_t)n_layers : 1, sizeof *g->layers);
    g->nodes = calloc(n_nodes > 0 ? (size_t)n_nodes : 1, sizeof *g->nodes);
    if (!g->layers || !g->nodes) {
        yp_graph_free(g);
        return NULL;
    }
    g->n_layers = n_layers;
    g->n_nodes = n_nodes;
    return g;
}

void yp_graph_free(yp_graph *g) {
    if (!g) return;
    free(g->layers);
    free(g->nodes);
    free(g);
}

static int check_node(const yp_graph *g, const char *file, int i, int *ch, yp_err *err) {
    const yp_node *n = &g->nodes[i];
    const yp_op_info *oi = yp_op_get(n->op);
    if (n->n_inputs < oi->min_inputs || n->n_inputs > oi->max_inputs)
        return yp_err_set(err, "%s: nodes[%d].inputs: %s takes %d to %d inputs, got %d; fix the list",
                          file, i, oi->name, oi->min_inputs, oi->max_inputs, n->n_inputs);
    for (int k = 0; k < n->n_inputs; k++) {
        int in = n->inputs[k];
        if (in == YP_INPUT_IMAGE) continue;
        if (in < 0 || in >= g->n_nodes)
            return yp_err_set(err, "%s: nodes[%d].inputs[%d]: node %d does not exist; use an id in 0..%d "
                              "or -1 for the input image", file, i, k, in, g->n_nodes - 1);
        if (in >= i)
            return yp_err_set(err, "%s: nodes[%d].inputs[%d]: refers to node %d, which is not earlier; "
                              "list nodes in topological order", file, i, k, in);
        if (ch[in] < 0)
            return yp_err_set(err, "%s: nodes[%d].inputs[%d]: node %d is a detect head and has no single "
                              "output; only the loss consumes it", file, i, k, in);
    }
    if (n->layer < 0 || n->layer >= g->n_layers)
        return yp_err_set(err, "%s: nodes[%d].layer: %d is not a layer index (0..%d)", file, i, n->layer,
                          g->n_layers - 1);
    yp_check_ctx c = {g, file, i, ch, err};
    return oi->check(&c, n, &ch[i]);
}

static int check_layers(const yp_graph *g, const char *file, yp_err *err) {
    for (int i = 0; i < g->n_layers; i++) {
        const yp_layer *l = &g->layers[i];
        if (l->index != i)
            return yp_err_set(err, "%s: layers[%d].index: %d; layers must be numbered 0, 1, 2, ... in order",
                              file, i, l->index);
        if (l->n_from < 1)
            return yp_err_set(err, "%s: layers[%d].from: empty; name at least one earlier layer", file, i);
        for (int k = 0; k < l->n_from; k++) {
            int f = l->from[k];
            if (f == YP_INPUT_IMAGE && i == 0) continue;
            if (f < 0 || f >= g->n_layers)
                return yp_err_set(err, "%s: layers[%d].from[%d]: layer %d does not exist; use an index in 0..%d",
                                  file, i, k, f, i - 1);
            if (f >= i)
                return yp_err_set(err, "%s: layers[%d].from[%d]: points forward to layer %d; a layer can only "
                                  "take earlier layers", file, i, k, f);
        }
        if (l->output < 0 || l->output >= g->n_nodes || g->nodes[l->output].layer != i)
            return yp_err_set(err, "%s: layers[%d].output: %d is not a node of layer %d", file, i, l->output, i);
    }
    return 0;
}

/* The strides the graph declares are the downsampling its Detect inputs really have: the loss
 * places its anchors by them, so a wrong one trains on misplaced targets (a loss near 0). Shapes
 * are inferred at 8 times the largest declared stride. */
static int check_strides(const yp_graph *g, const char *file, yp_err *err) {
    const yp_node *d = &g->nodes[g->n_nodes - 1];
    const int64_t side = 8 * (int64_t)yp_graph_max_stride(g);
    yp_node_info *info = malloc((size_t)g->n_nodes * sizeof *info);
    if (!info) return yp_err_set(err, "%s: out of memory", file);
    yp_err why;
    int rc = 0;
    if (yp_graph_infer(g, 1, side, side, info, &why)) {
        rc = yp_err_set(err, "%s: at %lldx%lld (8 times the largest stride): %s", file, (long long)side,
                        (long long)side, why.msg);
    } else {
        for (int l = 0; l < d->n_inputs && l < g->nl && !rc; l++) {
            int64_t h = info[d->inputs[l]].out[0].h, w = info[d->inputs[l]].out[0].w;
            if (h * g->strides[l] != side || w * g->strides[l] != side)
                rc = yp_err_set(err, "%s: strides[%d]: %d, but detection level %d sees a %lldx%lld map of a %lldx%lld "
                                "image (stride %lld); set strides[%d] to %lld", file, l, g->strides[l], l,
                                (long long)w, (long long)h, (long long)side, (long long)side,
                                (long long)(h > 0 ? side / h : 0), l, (long long)(h > 0 ? side / h : 0));
        }
    }
    free(info);
    return rc;
}

int yp_graph_check(const yp_graph *g, const char *file, yp_err *err) {
    if (g->n_layers < 1 || g->n_nodes < 1)
        return yp_err_set(err, "%s: the graph has no layers or no nodes", file);
    if (g->n_layers > YP_GRAPH_MAX_LAYERS || g->n_nodes > YP_GRAPH_MAX_NODES)
        return yp_err_set(err, "%s: %d layers and %d nodes; yoloplan takes at most %d layers and %d nodes (ten times "
                          "yolov5x); split or shrink the model", file, g->n_layers, g->n_nodes, YP_GRAPH_MAX_LAYERS,
                          YP_GRAPH_MAX_NODES);
    if (g->in_channels < 1)
        return yp_err_set(err, "%s: input.channels: must be a positive integer", file);
    if (g->nl < 1 || g->nl > YP_MAX_LEVELS || g->na < 1 || g->na > YP_MAX_ANCHORS)
        return yp_err_set(err, "%s: anchors: %d levels of %d anchors; need 1..%d levels of 1..%d anchors", file,
                          g->nl, g->na, YP_MAX_LEVELS, YP_MAX_ANCHORS);
    int *ch = malloc((size_t)g->n_nodes * sizeof *ch);
    if (!ch) return yp_err_set(err, "%s: out of memory", file);
    int rc = 0, n_detect = 0;
    for (int i = 0; i < g->n_nodes && rc == 0; i++) {
        if (g->nodes[i].id != i)
            rc = yp_err_set(err, "%s: nodes[%d].id: %d; ids must equal the position in the list", file, i,
                            g->nodes[i].id);
        else
            rc = check_node(g, file, i, ch, err);
        if (rc == 0 && yp_op_get(g->nodes[i].op)->head) n_detect++;
    }
    free(ch);
    if (rc == 0 && n_detect != 1)
        rc = yp_err_set(err, "%s: nodes: %d detect nodes; a YOLOv5 graph has exactly one", file, n_detect);
    if (rc == 0 && !yp_op_get(g->nodes[g->n_nodes - 1].op)->head)
        rc = yp_err_set(err, "%s: nodes: the detect node must be the last node", file);
    if (rc == 0) rc = check_layers(g, file, err);
    if (rc == 0) rc = check_strides(g, file, err);
    return rc;
}

/* A layer's conv: a conv_like node other than the head (conv2d). */
static int layer_conv(const yp_node *n) {
    const yp_op_info *r = yp_op_get(n->op);
    return r->conv_like && !r->head;
}

/* What follows a conv inside its block: a normalisation or an activation (BN, SiLU, ...). */
static int after_conv(const yp_node *n) {
    const yp_op_info *r = yp_op_get(n->op);
    return r->activation || r->norm;
}

int yp_layer_boundary_conv(const yp_graph *g, int l) {
    int v = g->layers[l].output;
    while (v >= 0 && g->nodes[v].layer == l && after_conv(&g->nodes[v])) v = g->nodes[v].inputs[0];
    return v >= 0 && g->nodes[v].layer == l && layer_conv(&g->nodes[v]) ? v : -1;
}

int yp_layer_inner_convs(const yp_graph *g, int l) {
    int n = 0, b = yp_layer_boundary_conv(g, l);
    for (int i = 0; i < g->n_nodes; i++) n += g->nodes[i].layer == l && layer_conv(&g->nodes[i]) && i != b;
    return n;
}

void yp_graph_standin_anchors(yp_graph *g) {
    static const float p3[3][2] = {{1.25f, 1.625f}, {2.0f, 3.75f}, {4.125f, 2.875f}};
    for (int l = 0; l < g->nl; l++)
        for (int a = 0; a < g->na; a++) {
            float scale = (float)g->strides[l] * (float)(1 << (a / 3));
            g->anchors[l][a][0] = p3[a % 3][0] * scale;
            g->anchors[l][a][1] = p3[a % 3][1] * scale;
        }
}
