/* ir_load.c - loading and validating the JSON IR (graph/IR.md) with cJSON.
 *
 * Every error names the file and the JSON path of the offending value, says what was expected
 * and what to do; unknown keys are errors, never silently ignored. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "ops_internal.h"
#include "yp_file.h"
#include "yp_ir.h"
#include "yp_json.h"

/* ---------------------------------------------------------------- attrs per op */

static int load_attrs(yp_jctx *c, const cJSON *attrs, const char *path, yp_node *n) {
    yp_attrs_in in = {c, attrs, path};
    return yp_op_get(n->op)->load_attrs(&in, n);
}

/* "conv2d, batchnorm2d, ...": every op's IR spelling, in table order, for the unknown-op message. */
static void op_names(char *buf, size_t n) {
    buf[0] = '\0';
    for (int i = 0; i < YP_OP_COUNT; i++) {
        if (i) strncat(buf, ", ", n - strlen(buf) - 1);
        strncat(buf, yp_op_get((yp_op)i)->name, n - strlen(buf) - 1);
    }
}

/* ---------------------------------------------------------------- nodes and layers */

static int load_node(yp_jctx *c, const cJSON *jn, int i, yp_node *n) {
    static const char *const keys[] = {"id", "op", "name", "layer", "inputs", "attrs", NULL};
    char path[64], opname[32], shown[64], names[256];
    snprintf(path, sizeof path, "nodes[%d]", i);
    if (!cJSON_IsObject(jn))
        return yp_err_set(c->err, "%s: %s: expected an object, got %s", c->file, path, yp_jtype(jn));
    if (yp_jkeys(c, jn, path, keys) || yp_jint(c, jn, path, "id", 0, 1 << 24, &n->id) ||
        yp_jstr(c, jn, path, "op", opname, sizeof opname) || yp_jstr(c, jn, path, "name", n->name, sizeof n->name) ||
        yp_jint(c, jn, path, "layer", 0, 1 << 24, &n->layer))
        return -1;
    int op = yp_op_from_name(opname);
    if (op < 0) {
        yp_jshow(cJSON_GetObjectItemCaseSensitive(jn, "op"), shown, sizeof shown);
        op_names(names, sizeof names);
        return yp_err_set(c->err, "%s: %s.op: unknown op %s; use one of %s", c->file, path, shown, names);
    }
    n->op = (yp_op)op;
    if (yp_jints(c, jn, path, "inputs", YP_MAX_INPUTS, -1, 1 << 24, n->inputs, &n->n_inputs)) return -1;
    const cJSON *attrs = cJSON_GetObjectItemCaseSensitive(jn, "attrs");
    cJSON empty = {0};
    empty.type = cJSON_Object;
    if (!attrs) attrs = &empty;
    if (!cJSON_IsObject(attrs))
        return yp_err_set(c->err, "%s: %s.attrs: expected an object, got %s", c->file, path, yp_jtype(attrs));
    char apath[80];
    snprintf(apath, sizeof apath, "%s.attrs", path);
    return load_attrs(c, attrs, apath, n);
}

static int load_layer(yp_jctx *c, const cJSON *jl, int i, yp_layer *l) {
    static const char *const keys[] = {"index", "from", "repeats", "module", "args", "output", NULL};
    char path[64];
    snprintf(path, sizeof path, "layers[%d]", i);
    if (!cJSON_IsObject(jl))
        return yp_err_set(c->err, "%s: %s: expected an object, got %s", c->file, path, yp_jtype(jl));
    if (yp_jkeys(c, jl, path, keys) || yp_jint(c, jl, path, "index", 0, 1 << 24, &l->index) ||
        yp_jints(c, jl, path, "from", YP_MAX_INPUTS, -1, 1 << 24, l->from, &l->n_from) ||
        yp_jint(c, jl, path, "repeats", 1, 1 << 16, &l->repeats) ||
        yp_jstr(c, jl, path, "module", l->module, sizeof l->module) ||
        yp_jint(c, jl, path, "output", 0, 1 << 24, &l->output))
        return -1;
    const cJSON *args = cJSON_GetObjectItemCaseSensitive(jl, "args");
    if (args && cJSON_GetArraySize(args) == 0 && cJSON_IsArray(args)) return 0;
    return args ? yp_jints(c, jl, path, "args", YP_MAX_ARGS, -(1L << 30), 1L << 30, l->args, &l->n_args) : 0;
}

/* Finds a cycle through node inputs (ids may point anywhere while loading). Returns 0 if none. */
static int find_cycle(yp_jctx *c, const yp_graph *g) {
    char *state = calloc((size_t)g->n_nodes, 1); /* 0 new, 1 on stack, 2 done */
    int *stack = malloc((size_t)g->n_nodes * 2 * sizeof *stack);
    int rc = 0;
    if (!state || !stack) rc = yp_err_set(c->err, "%s: out of memory", c->file);
    for (int root = 0; root < g->n_nodes && !rc; root++) {
        if (state[root]) continue;
        int sp = 0; /* stack of (node, next input index) */
        stack[sp++] = root, stack[sp++] = 0, state[root] = 1;
        while (sp && !rc) {
            int v = stack[sp - 2], k = stack[sp - 1]++;
            if (k >= g->nodes[v].n_inputs) { state[v] = 2, sp -= 2; continue; }
            int u = g->nodes[v].inputs[k];
            if (u < 0 || u >= g->n_nodes) continue; /* reported by yp_graph_check */
            if (state[u] == 1)
                rc = yp_err_set(c->err, "%s: nodes[%d].inputs[%d]: cycle: node %d depends on node %d, which "
                                "depends on node %d; a network must be acyclic", c->file, v, k, v, u, v);
            else if (!state[u]) stack[sp++] = u, stack[sp++] = 0, state[u] = 1;
        }
    }
    free(state);
    free(stack);
    return rc;
}

/* ---------------------------------------------------------------- top level */

static int load_anchors(yp_jctx *c, const cJSON *root, yp_graph *g) {
    const cJSON *a = yp_jreq(c, root, "", "anchors");
    if (!a) return -1;
    int nl = cJSON_GetArraySize(a);
    if (!cJSON_IsArray(a) || nl < 1 || nl > YP_MAX_LEVELS)
        return yp_err_set(c->err, "%s: anchors: expected an array of 1 to %d levels, got %s", c->file,
                          YP_MAX_LEVELS, yp_jtype(a));
    g->nl = nl;
    for (int l = 0; l < nl; l++) {
        const cJSON *row = cJSON_GetArrayItem(a, l);
        int n = cJSON_GetArraySize(row);
        if (!cJSON_IsArray(row) || n < 2 || n % 2 || n / 2 > YP_MAX_ANCHORS || (l && n / 2 != g->na))
            return yp_err_set(c->err, "%s: anchors[%d]: expected w,h pairs (%s), got %s", c->file, l,
                              l ? "as many as level 0" : "1 to 8 pairs", yp_jtype(row));
        g->na = n / 2;
        for (int k = 0; k < n; k++) {
            const cJSON *v = cJSON_GetArrayItem(row, k);
            if (!cJSON_IsNumber(v) || !(v->valuedouble > 0 && v->valuedouble < 1e6))
                return yp_err_set(c->err, "%s: anchors[%d][%d]: expected a positive number of pixels", c->file, l, k);
            g->anchors[l][k / 2][k % 2] = (float)v->valuedouble;
        }
    }
    int ns = 0;
    if (yp_jints(c, root, "", "strides", YP_MAX_LEVELS, 1, 1024, g->strides, &ns)) return -1;
    if (ns != nl)
        return yp_err_set(c->err, "%s: strides: %d entries for %d anchor levels; give one stride per level",
                          c->file, ns, nl);
    return 0;
}

static int load_header(yp_jctx *c, const cJSON *root, yp_graph *g) {
    static const char *const keys[] = {"format", "version", "name", "nc", "depth_multiple", "width_multiple",
                                       "input", "strides", "anchors", "anchors_auto", "layers", "nodes", NULL};
    static const char *const in_keys[] = {"channels", NULL};
    char fmt[32];
    int version = 0;
    if (yp_jkeys(c, root, "", keys) || yp_jstr(c, root, "", "format", fmt, sizeof fmt)) return -1;
    if (strcmp(fmt, YP_IR_FORMAT) != 0)
        return yp_err_set(c->err, "%s: format: \"%s\" is not a yoloplan IR; expected \"%s\"", c->file, fmt,
                          YP_IR_FORMAT);
    if (yp_jint(c, root, "", "version", 1, 1000, &version)) return -1;
    if (version != YP_IR_VERSION)
        return yp_err_set(c->err, "%s: version: %d is not supported by this build (reads version %d); "
                          "re-import the model with `yoloplan import`", c->file, version, YP_IR_VERSION);
    const cJSON *in = yp_jreq(c, root, "", "input");
    if (!in) return -1;
    if (!cJSON_IsObject(in))
        return yp_err_set(c->err, "%s: input: expected an object like {\"channels\": 3}, got %s", c->file,
                          yp_jtype(in));
    if (yp_jstr(c, root, "", "name", g->name, sizeof g->name) || yp_jint(c, root, "", "nc", 1, 100000, &g->nc) ||
        yp_jnum(c, root, "", "depth_multiple", 0.0, 100.0, &g->depth_multiple) ||
        yp_jnum(c, root, "", "width_multiple", 0.0, 100.0, &g->width_multiple) || yp_jkeys(c, in, "input", in_keys) ||
        yp_jint(c, in, "input", "channels", 1, YP_GRAPH_MAX_IN_CHANNELS, &g->in_channels))
        return -1;
    if (cJSON_GetObjectItemCaseSensitive(root, "anchors_auto") &&
        yp_jbool(c, root, "", "anchors_auto", &g->anchors_auto))
        return -1;
    return load_anchors(c, root, g);
}

static const cJSON *get_list(yp_jctx *c, const cJSON *root, const char *key) {
    const cJSON *v = yp_jreq(c, root, "", key);
    if (v && (!cJSON_IsArray(v) || cJSON_GetArraySize(v) == 0)) {
        yp_err_set(c->err, "%s: %s: expected a non-empty array, got %s", c->file, key, yp_jtype(v));
        return NULL;
    }
    return v;
}

static yp_graph *load_root(yp_jctx *c, const cJSON *root) {
    if (!cJSON_IsObject(root)) {
        yp_err_set(c->err, "%s: the top level must be an object, got %s", c->file, yp_jtype(root));
        return NULL;
    }
    const cJSON *layers = get_list(c, root, "layers");
    const cJSON *nodes = layers ? get_list(c, root, "nodes") : NULL;
    if (!nodes) return NULL;
    if (cJSON_GetArraySize(layers) > YP_GRAPH_MAX_LAYERS || cJSON_GetArraySize(nodes) > YP_GRAPH_MAX_NODES) {
        yp_err_set(c->err, "%s: %d layers and %d nodes; yoloplan takes at most %d layers and %d nodes (ten times "
                   "yolov5x); split or shrink the model", c->file, cJSON_GetArraySize(layers),
                   cJSON_GetArraySize(nodes), YP_GRAPH_MAX_LAYERS, YP_GRAPH_MAX_NODES);
        return NULL;
    }
    yp_graph *g = yp_graph_new(cJSON_GetArraySize(layers), cJSON_GetArraySize(nodes));
    if (!g) {
        yp_err_set(c->err, "%s: out of memory", c->file);
        return NULL;
    }
    int rc = load_header(c, root, g), i = 0;
    for (const cJSON *it = layers->child; it && !rc; it = it->next, i++) rc = load_layer(c, it, i, &g->layers[i]);
    i = 0;
    for (const cJSON *it = nodes->child; it && !rc; it = it->next, i++) rc = load_node(c, it, i, &g->nodes[i]);
    if (!rc) rc = find_cycle(c, g);
    if (!rc) rc = yp_graph_check(g, c->file, c->err);
    if (rc) {
        yp_graph_free(g);
        return NULL;
    }
    return g;
}

/* Line and column (1-based) of byte offset `off` in buf. */
static void line_col(const char *buf, size_t off, int *line, int *col) {
    *line = 1, *col = 1;
    for (size_t i = 0; i < off; i++) {
        if (buf[i] == '\n') (*line)++, *col = 1;
        else (*col)++;
    }
}

yp_graph *yp_ir_load_buffer(const char *buf, size_t len, const char *file, yp_err *err) {
    yp_jctx c = {file, err};
    size_t i = 0;
    while (i < len && (buf[i] == ' ' || buf[i] == '\n' || buf[i] == '\r' || buf[i] == '\t')) i++;
    if (i == len) {
        yp_err_set(err, "%s: the file is empty; it must hold a yoloplan IR (see graph/IR.md) or be produced by "
                   "`yoloplan import`", file);
        return NULL;
    }
    if (len > YP_IR_MAX_BYTES) {
        yp_err_set(err, "%s: %zu bytes is larger than the %u MiB an IR may have; is this the right file?", file,
                   len, YP_IR_MAX_BYTES >> 20);
        return NULL;
    }
    const char *end = NULL;
    cJSON *root = cJSON_ParseWithLengthOpts(buf, len, &end, 0);
    if (!root) {
        int line, col;
        size_t off = end && end >= buf && end <= buf + len ? (size_t)(end - buf) : 0;
        const char *e = cJSON_GetErrorPtr();
        if (!end && e && e >= buf && e <= buf + len) off = (size_t)(e - buf);
        line_col(buf, off, &line, &col);
        yp_err_set(err, "%s:%d:%d: malformed JSON near here; fix the syntax (a missing comma, quote or bracket?)",
                   file, line, col);
        return NULL;
    }
    char dup[320];
    if (yp_json_duplicate_key(root, dup, sizeof dup)) {
        yp_err_set(err, "%s: %s appears twice in one object; keep one (a JSON reader takes either)", file, dup);
        cJSON_Delete(root);
        return NULL;
    }
    yp_graph *g = load_root(&c, root);
    cJSON_Delete(root);
    return g;
}

yp_graph *yp_ir_load_file(const char *path, yp_err *err) {
    char *buf;
    size_t len;
    if (yp_file_read(path, "an IR file", YP_IR_MAX_BYTES, &buf, &len, err)) return NULL;
    yp_graph *g = yp_ir_load_buffer(buf, len, path, err);
    free(buf);
    return g;
}
