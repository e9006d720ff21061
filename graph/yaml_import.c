/* yaml_import.c - import of Ultralytics-style model yaml files (models/yolov5s.yaml, ...).
 *
 * Ultralytics' parse_model rules on the yaml tree (yaml_tree.h; every node knows its line):
 * the top-level keys, depth/width scaling, `from` resolution and `number` (a module's repeats,
 * or a C3's bottleneck count); each row's module is expanded through the module table
 * (yaml_modules.c, expanders in yaml_mod_*.c, shared helpers in yaml_build.h). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "yaml_build.h"
#include "yp_yaml.h"

static const char *const top_keys[K_COUNT] = {"nc", "depth_multiple", "width_multiple", "anchors", "backbone",
                                              "head", "ch", "activation", "channel_multiple"};
#define KNOWN_KEYS "nc, depth_multiple, width_multiple, anchors, backbone, head, ch, activation, channel_multiple"

/* ---- rows ---- */

/* One `from` entry of layer i: -1 is the previous layer (the image for layer 0), other negative
 * values count back, non-negative values are absolute and must be earlier. */
static int parse_from_one(const builder *b, const yp_ynode *n, int i, int *out) {
    int v = 0;
    if (yb_get_int(b, n, "from", -MAX_LAYERS, MAX_LAYERS, &v)) return -1;
    if (i == 0 && v == -1) {
        *out = YP_INPUT_IMAGE;
        return 0;
    }
    if (i == 0) return yb_fail(b, n->line, "from %d: layer 0 can only take the input image; write -1", v);
    *out = v < 0 ? i + v : v;
    if (*out < 0 || *out >= b->n_layers)
        return yb_fail(b, n->line, "from %d: layer %d does not exist; layer %d can take layers 0..%d, or -1 for the "
                    "previous one", v, *out, i, i - 1);
    if (*out >= i)
        return yb_fail(b, n->line, "from %d points forward; layer %d can only take earlier layers (0..%d), or -1 "
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
        return yb_fail(b, n->line, "from lists %d layers; use 1 to %d", n->n, YP_MAX_INPUTS);
    L->n_from = n->n;
    for (int j = 0; j < n->n; j++)
        if (parse_from_one(b, n->kids[j], L->index, &L->from[j])) return -1;
    return 0;
}

/* Module name and `number` (scaled: max(round(n * depth_multiple), 1) when n > 1). */
static int parse_module(builder *b, const yp_ynode *const *k, row *r) {
    int n = 0;
    if (k[2]->kind != YP_YN_SCALAR) return yb_type_error(b, k[2], "module", "a module name like Conv");
    r->mi = yb_module_find(k[2]->text);
    if (!r->mi) {
        char known[512];
        yb_module_names(known, sizeof known);
        return yb_fail(b, k[2]->line, "unknown module \"%.40s\"; known modules: %s", k[2]->text, known);
    }
    snprintf(r->L->module, sizeof r->L->module, "%s", r->mi->name);
    snprintf(b->where, sizeof b->where, "layer %d %s", r->L->index, r->mi->name);
    if (yb_get_int(b, k[1], "number", 1, MAX_REPEATS, &n)) return -1;
    r->L->repeats = n > 1 ? (int)fmax(nearbyint(n * b->gd), 1) : n; /* round half to even, as Python */
    if (r->L->repeats > MAX_REPEATS)
        return yb_fail(b, k[1]->line, "number: %d repeats after depth scaling; at most %d", r->L->repeats, MAX_REPEATS);
    if (r->L->repeats > 1 && r->mi->multi_from)
        return yb_fail(b, k[1]->line, "number: %d repeats; %s cannot repeat, use 1", r->L->repeats, r->mi->name);
    if (r->L->n_from > 1 && !r->mi->multi_from)
        return yb_fail(b, k[0]->line, "%s takes one input; from must be a single layer", r->mi->name);
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
        return yb_fail(b, rn->line, "%s[%d]: a row must be [from, number, module, args], got %s", section, j,
                    yp_yn_describe(rn, got, sizeof got));
    if (rn->n != 4)
        return yb_fail(b, rn->line, "%s[%d]: a row must be [from, number, module, args], got %d items", section, j,
                    rn->n);
    const yp_ynode *const *k = (const yp_ynode *const *)rn->kids;
    if (parse_from(b, k[0], r.L) || parse_module(b, k, &r)) return -1;
    if (k[3]->kind != YP_YN_SEQ) return yb_type_error(b, k[3], "args", "a list like [64, 3, 2]");
    if (k[3]->n > r.mi->max_args)
        return yb_fail(b, k[3]->line, "%d args; %s takes at most %d: %s", k[3]->n, r.mi->name, r.mi->max_args,
                    r.mi->usage);
    r.args = k[3];
    yb_layer_output(b, r.L->from[0], &r.in, &r.c1, &r.in_stride);
    /* `number` repeats the module as nn.Sequential does (model.i.0, model.i.1, ...), each copy
     * built with the row's own arguments, unless it counts the module's inner bottlenecks */
    int reps = r.mi->repeats_inside ? 1 : r.L->repeats;
    for (int rep = 0; rep < reps; rep++) {
        if (reps > 1) snprintf(b->prefix, sizeof b->prefix, "model.%d.%d", i, rep);
        if (rep > 0 && b->ch[i] != r.c1)
            return yb_fail(b, k[1]->line, "number: %d repeats of %s, but it turns %d channels into %d, so the second "
                           "copy (built for %d) cannot take the first one's output; use 1", reps, r.mi->name, r.c1,
                           b->ch[i], r.c1);
        if (rep > 0) r.in = r.L->output, r.in_stride = b->stride[i];
        if (r.mi->expand(b, &r)) return -1;
    }
    return 0;
}

/* Builds every row of backbone then head. */
static int build_layers(builder *b) {
    const yp_ynode *bb = b->v[K_BACKBONE], *hd = b->v[K_HEAD];
    b->n_layers = bb->n + hd->n;
    if (b->n_layers < 1) return yb_fail(b, bb->line, "backbone and head are empty; list the layers");
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
    if (strcmp(last, "Detect") != 0 && strcmp(last, "Segment") != 0)
        return yb_fail(b, last_row->line, "the last row is %s; a model ends with a Detect row", last);
    return 0;
}

/* ---- top level ---- */

/* Collects the top-level keys into b->v. Unknown, duplicate and missing keys are errors. */
static int read_keys(builder *b, const yp_ynode *root) {
    if (yp_yn_is_null(root))
        return yb_fail(b, 1, "empty file; a model yaml needs nc, depth_multiple, width_multiple, anchors, backbone "
                    "and head");
    if (root->kind != YP_YN_MAP)
        return yb_type_error(b, root, "the file", "a mapping with the keys " KNOWN_KEYS);
    for (int i = 0; i < root->n; i += 2) {
        const yp_ynode *key = root->kids[i];
        int k = 0;
        while (k < K_COUNT && strcmp(top_keys[k], key->text) != 0) k++;
        if (k == K_COUNT)
            return yb_fail(b, key->line, "unknown key \"%.40s\"; known keys: " KNOWN_KEYS, key->text);
        if (b->v[k])
            return yb_fail(b, key->line, "duplicate key \"%s\" (first given at line %d); keep one", key->text,
                        b->v[k]->line);
        b->v[k] = root->kids[i + 1];
    }
    for (int k = 0; k < K_CH; k++)
        if (!b->v[k])
            return yb_fail(b, root->line, "missing required key \"%s\"; a model yaml needs " KNOWN_KEYS
                        " (ch, activation and channel_multiple optional)", top_keys[k]);
    return 0;
}

/* Reads the scalar keys and anchors; backbone and head must be lists. */
static int read_header(builder *b, const yp_ynode *root) {
    if (read_keys(b, root)) return -1;
    int nc = 0;
    if (yb_get_int(b, b->v[K_NC], "nc", 1, MAX_NC, &nc) ||
        yb_get_positive(b, b->v[K_DEPTH], "depth_multiple", 100, &b->gd) ||
        yb_get_positive(b, b->v[K_WIDTH], "width_multiple", 100, &b->gw) || yb_parse_anchors(b, b->v[K_ANCHORS]))
        return -1;
    b->nc = b->nc_override > 0 ? b->nc_override : nc;
    b->in_ch = 3;
    if (b->v[K_CH] && yb_get_int(b, b->v[K_CH], "ch", 1, YP_GRAPH_MAX_IN_CHANNELS, &b->in_ch)) return -1;
    b->ch_mul = 8;
    if (b->v[K_CH_MUL] && yb_get_int(b, b->v[K_CH_MUL], "channel_multiple", 1, 1024, &b->ch_mul)) return -1;
    b->act = (yb_act){.op = YP_OP_SILU};
    if (b->v[K_ACTIVATION] && yb_parse_act(b, b->v[K_ACTIVATION], &b->act)) return -1;
    if (b->v[K_BACKBONE]->kind != YP_YN_SEQ) return yb_type_error(b, b->v[K_BACKBONE], "backbone", "a list of rows");
    if (b->v[K_HEAD]->kind != YP_YN_SEQ) return yb_type_error(b, b->v[K_HEAD], "head", "a list of rows");
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
    g->anchors_auto = b->anchors_auto;
    if (g->anchors_auto) yp_graph_standin_anchors(g);
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
