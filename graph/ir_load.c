/* ir_load.c - loading and validating the JSON IR (graph/IR.md) with cJSON.
 *
 * Every error names the file and the JSON path of the offending value, says what was expected
 * and what to do; unknown keys are errors, never silently ignored. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "yp_ir.h"

typedef struct {
    const char *file;
    yp_err *err;
} ld_ctx;

#define LIM_CHANNELS (1 << 20)
#define LIM_KERNEL 64

static const char *json_type_name(const cJSON *v) {
    if (!v) return "nothing";
    if (cJSON_IsNumber(v)) return "a number";
    if (cJSON_IsString(v)) return "a string";
    if (cJSON_IsBool(v)) return "a boolean";
    if (cJSON_IsNull(v)) return "null";
    if (cJSON_IsArray(v)) return "an array";
    return "an object";
}

/* Short rendering of a value for messages ("3", "\"3\"", "an array"). */
static void json_show(const cJSON *v, char *buf, size_t n) {
    if (cJSON_IsNumber(v)) snprintf(buf, n, "%.17g", v->valuedouble);
    else if (cJSON_IsString(v)) snprintf(buf, n, "\"%.40s\"", v->valuestring);
    else snprintf(buf, n, "%s", json_type_name(v));
}

/* Reports every key of obj that is not in `allowed` (NULL-terminated). */
static int check_keys(ld_ctx *c, const cJSON *obj, const char *path, const char *const *allowed) {
    for (const cJSON *it = obj->child; it; it = it->next) {
        int ok = 0;
        for (const char *const *a = allowed; *a && !ok; a++) ok = strcmp(*a, it->string) == 0;
        if (ok) continue;
        char known[256] = "";
        for (const char *const *a = allowed; *a; a++) {
            strncat(known, *a, sizeof known - strlen(known) - 3);
            if (a[1]) strncat(known, ", ", sizeof known - strlen(known) - 1);
        }
        return yp_err_set(c->err, "%s: %s%s%s: unknown key; remove it (known keys: %s)", c->file, path,
                          *path ? "." : "", it->string, known);
    }
    return 0;
}

static const cJSON *get_req(ld_ctx *c, const cJSON *obj, const char *path, const char *key) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    if (!v) yp_err_set(c->err, "%s: %s%s%s: missing; add it", c->file, path, *path ? "." : "", key);
    return v;
}

/* Reads an integer in [lo, hi] from v (path names it). 0 or -1 with the error set. */
static int as_int(ld_ctx *c, const cJSON *v, const char *path, long lo, long hi, int *out) {
    char shown[64];
    if (!cJSON_IsNumber(v) || v->valuedouble != floor(v->valuedouble) || v->valuedouble < (double)lo ||
        v->valuedouble > (double)hi) {
        json_show(v, shown, sizeof shown);
        return yp_err_set(c->err, "%s: %s: expected an integer in %ld..%ld, got %s", c->file, path, lo, hi,
                          shown);
    }
    *out = (int)v->valuedouble;
    return 0;
}

static int get_int(ld_ctx *c, const cJSON *obj, const char *path, const char *key, long lo, long hi, int *out) {
    char p[160];
    const cJSON *v = get_req(c, obj, path, key);
    if (!v) return -1;
    snprintf(p, sizeof p, "%s%s%s", path, *path ? "." : "", key);
    return as_int(c, v, p, lo, hi, out);
}

static int get_num(ld_ctx *c, const cJSON *obj, const char *path, const char *key, double lo, double hi,
                   double *out) {
    char shown[64];
    const cJSON *v = get_req(c, obj, path, key);
    if (!v) return -1;
    if (!cJSON_IsNumber(v) || !(v->valuedouble >= lo && v->valuedouble <= hi)) {
        json_show(v, shown, sizeof shown);
        return yp_err_set(c->err, "%s: %s.%s: expected a number in %g..%g, got %s", c->file, path, key, lo, hi,
                          shown);
    }
    *out = v->valuedouble;
    return 0;
}

static int get_bool(ld_ctx *c, const cJSON *obj, const char *path, const char *key, int *out) {
    char shown[64];
    const cJSON *v = get_req(c, obj, path, key);
    if (!v) return -1;
    if (!cJSON_IsBool(v)) {
        json_show(v, shown, sizeof shown);
        return yp_err_set(c->err, "%s: %s.%s: expected true or false, got %s", c->file, path, key, shown);
    }
    *out = cJSON_IsTrue(v);
    return 0;
}

static int get_str(ld_ctx *c, const cJSON *obj, const char *path, const char *key, char *out, size_t n) {
    char shown[64];
    const cJSON *v = get_req(c, obj, path, key);
    if (!v) return -1;
    if (!cJSON_IsString(v) || strlen(v->valuestring) >= n || !*v->valuestring) {
        json_show(v, shown, sizeof shown);
        return yp_err_set(c->err, "%s: %s%s%s: expected a non-empty string of at most %zu characters, got %s",
                          c->file, path, *path ? "." : "", key, n - 1, shown);
    }
    memcpy(out, v->valuestring, strlen(v->valuestring) + 1);
    return 0;
}

/* Reads an array of 1..max integers in [lo, hi]. */
static int get_int_array(ld_ctx *c, const cJSON *obj, const char *path, const char *key, int max, long lo,
                         long hi, int *out, int *n_out) {
    char p[160];
    const cJSON *v = get_req(c, obj, path, key);
    if (!v) return -1;
    snprintf(p, sizeof p, "%s%s%s", path, *path ? "." : "", key);
    int n = cJSON_GetArraySize(v);
    if (!cJSON_IsArray(v) || n < 1 || n > max)
        return yp_err_set(c->err, "%s: %s: expected an array of 1 to %d integers, got %s%s", c->file, p, max,
                          json_type_name(v), cJSON_IsArray(v) ? " of the wrong length" : "");
    int i = 0;
    for (const cJSON *it = v->child; it; it = it->next, i++) {
        char pi[176];
        snprintf(pi, sizeof pi, "%s[%d]", p, i);
        if (as_int(c, it, pi, lo, hi, &out[i])) return -1;
    }
    *n_out = n;
    return 0;
}

/* ---------------------------------------------------------------- attrs per op */

static int load_attrs(ld_ctx *c, const cJSON *attrs, const char *path, yp_node *n) {
    static const char *const k_conv[] = {"c_in", "c_out", "k", "s", "p", "groups", "bias", NULL};
    static const char *const k_bn[] = {"c", "eps", "momentum", NULL};
    static const char *const k_cat[] = {"axis", NULL};
    static const char *const k_up[] = {"scale", NULL};
    static const char *const k_pool[] = {"k", "s", "p", NULL};
    static const char *const k_det[] = {"nc", "na", "nl", "c_in", NULL};
    static const char *const k_none[] = {NULL};
    int rc = 0, nl = 0;
    switch (n->op) {
    case YP_OP_CONV2D: {
        yp_conv_attrs *a = &n->a.conv;
        rc = check_keys(c, attrs, path, k_conv) || get_int(c, attrs, path, "c_in", 1, LIM_CHANNELS, &a->c_in) ||
             get_int(c, attrs, path, "c_out", 1, LIM_CHANNELS, &a->c_out) ||
             get_int(c, attrs, path, "k", 1, LIM_KERNEL, &a->k) || get_int(c, attrs, path, "s", 1, LIM_KERNEL, &a->s) ||
             get_int(c, attrs, path, "p", 0, LIM_KERNEL, &a->p) ||
             get_int(c, attrs, path, "groups", 1, LIM_CHANNELS, &a->groups) ||
             get_bool(c, attrs, path, "bias", &a->bias);
        break;
    }
    case YP_OP_BATCHNORM2D:
        rc = check_keys(c, attrs, path, k_bn) || get_int(c, attrs, path, "c", 1, LIM_CHANNELS, &n->a.bn.c) ||
             get_num(c, attrs, path, "eps", 1e-12, 1.0, &n->a.bn.eps) ||
             get_num(c, attrs, path, "momentum", 0.0, 1.0, &n->a.bn.momentum);
        break;
    case YP_OP_CONCAT:
        rc = check_keys(c, attrs, path, k_cat) || get_int(c, attrs, path, "axis", 0, 3, &n->a.concat.axis);
        break;
    case YP_OP_UPSAMPLE_NEAREST:
        rc = check_keys(c, attrs, path, k_up) || get_int(c, attrs, path, "scale", 2, 8, &n->a.up.scale);
        break;
    case YP_OP_MAXPOOL2D:
        rc = check_keys(c, attrs, path, k_pool) || get_int(c, attrs, path, "k", 1, LIM_KERNEL, &n->a.pool.k) ||
             get_int(c, attrs, path, "s", 1, LIM_KERNEL, &n->a.pool.s) ||
             get_int(c, attrs, path, "p", 0, LIM_KERNEL, &n->a.pool.p);
        if (!rc && 2 * n->a.pool.p > n->a.pool.k)
            rc = yp_err_set(c->err, "%s: %s.p: padding %d exceeds half the kernel %d; use p <= k/2", c->file,
                            path, n->a.pool.p, n->a.pool.k);
        break;
    case YP_OP_DETECT: {
        yp_detect_attrs *d = &n->a.detect;
        rc = check_keys(c, attrs, path, k_det) || get_int(c, attrs, path, "nc", 1, 100000, &d->nc) ||
             get_int(c, attrs, path, "na", 1, YP_MAX_ANCHORS, &d->na) ||
             get_int(c, attrs, path, "nl", 1, YP_MAX_LEVELS, &d->nl) ||
             get_int_array(c, attrs, path, "c_in", YP_MAX_LEVELS, 1, LIM_CHANNELS, d->c_in, &nl);
        if (!rc && nl != d->nl)
            rc = yp_err_set(c->err, "%s: %s.c_in: %d entries for nl %d levels; give one per level", c->file, path,
                            nl, d->nl);
        break;
    }
    default: rc = check_keys(c, attrs, path, k_none); break;
    }
    return rc ? -1 : 0;
}

/* ---------------------------------------------------------------- nodes and layers */

static int load_node(ld_ctx *c, const cJSON *jn, int i, yp_node *n) {
    static const char *const keys[] = {"id", "op", "name", "layer", "inputs", "attrs", NULL};
    char path[64], opname[32], shown[64];
    snprintf(path, sizeof path, "nodes[%d]", i);
    if (!cJSON_IsObject(jn))
        return yp_err_set(c->err, "%s: %s: expected an object, got %s", c->file, path, json_type_name(jn));
    if (check_keys(c, jn, path, keys) || get_int(c, jn, path, "id", 0, 1 << 24, &n->id) ||
        get_str(c, jn, path, "op", opname, sizeof opname) || get_str(c, jn, path, "name", n->name, sizeof n->name) ||
        get_int(c, jn, path, "layer", 0, 1 << 24, &n->layer))
        return -1;
    int op = yp_op_from_name(opname);
    if (op < 0) {
        json_show(cJSON_GetObjectItemCaseSensitive(jn, "op"), shown, sizeof shown);
        return yp_err_set(c->err, "%s: %s.op: unknown op %s; use one of conv2d, batchnorm2d, silu, add, concat, "
                          "upsample_nearest, maxpool2d, detect, space_to_depth", c->file, path, shown);
    }
    n->op = (yp_op)op;
    if (get_int_array(c, jn, path, "inputs", YP_MAX_INPUTS, -1, 1 << 24, n->inputs, &n->n_inputs)) return -1;
    const cJSON *attrs = cJSON_GetObjectItemCaseSensitive(jn, "attrs");
    cJSON empty = {0};
    empty.type = cJSON_Object;
    if (!attrs) attrs = &empty;
    if (!cJSON_IsObject(attrs))
        return yp_err_set(c->err, "%s: %s.attrs: expected an object, got %s", c->file, path, json_type_name(attrs));
    char apath[80];
    snprintf(apath, sizeof apath, "%s.attrs", path);
    return load_attrs(c, attrs, apath, n);
}

static int load_layer(ld_ctx *c, const cJSON *jl, int i, yp_layer *l) {
    static const char *const keys[] = {"index", "from", "repeats", "module", "args", "output", NULL};
    char path[64];
    snprintf(path, sizeof path, "layers[%d]", i);
    if (!cJSON_IsObject(jl))
        return yp_err_set(c->err, "%s: %s: expected an object, got %s", c->file, path, json_type_name(jl));
    if (check_keys(c, jl, path, keys) || get_int(c, jl, path, "index", 0, 1 << 24, &l->index) ||
        get_int_array(c, jl, path, "from", YP_MAX_INPUTS, -1, 1 << 24, l->from, &l->n_from) ||
        get_int(c, jl, path, "repeats", 1, 1 << 16, &l->repeats) ||
        get_str(c, jl, path, "module", l->module, sizeof l->module) ||
        get_int(c, jl, path, "output", 0, 1 << 24, &l->output))
        return -1;
    const cJSON *args = cJSON_GetObjectItemCaseSensitive(jl, "args");
    if (args && cJSON_GetArraySize(args) == 0 && cJSON_IsArray(args)) return 0;
    return args ? get_int_array(c, jl, path, "args", YP_MAX_ARGS, -(1L << 30), 1L << 30, l->args, &l->n_args) : 0;
}

/* Finds a cycle through node inputs (ids may point anywhere while loading). Returns 0 if none. */
static int find_cycle(ld_ctx *c, const yp_graph *g) {
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

static int load_anchors(ld_ctx *c, const cJSON *root, yp_graph *g) {
    const cJSON *a = get_req(c, root, "", "anchors");
    if (!a) return -1;
    int nl = cJSON_GetArraySize(a);
    if (!cJSON_IsArray(a) || nl < 1 || nl > YP_MAX_LEVELS)
        return yp_err_set(c->err, "%s: anchors: expected an array of 1 to %d levels, got %s", c->file,
                          YP_MAX_LEVELS, json_type_name(a));
    g->nl = nl;
    for (int l = 0; l < nl; l++) {
        const cJSON *row = cJSON_GetArrayItem(a, l);
        int n = cJSON_GetArraySize(row);
        if (!cJSON_IsArray(row) || n < 2 || n % 2 || n / 2 > YP_MAX_ANCHORS || (l && n / 2 != g->na))
            return yp_err_set(c->err, "%s: anchors[%d]: expected w,h pairs (%s), got %s", c->file, l,
                              l ? "as many as level 0" : "1 to 8 pairs", json_type_name(row));
        g->na = n / 2;
        for (int k = 0; k < n; k++) {
            const cJSON *v = cJSON_GetArrayItem(row, k);
            if (!cJSON_IsNumber(v) || !(v->valuedouble > 0 && v->valuedouble < 1e6))
                return yp_err_set(c->err, "%s: anchors[%d][%d]: expected a positive number of pixels", c->file, l, k);
            g->anchors[l][k / 2][k % 2] = (float)v->valuedouble;
        }
    }
    int ns = 0;
    if (get_int_array(c, root, "", "strides", YP_MAX_LEVELS, 1, 1024, g->strides, &ns)) return -1;
    if (ns != nl)
        return yp_err_set(c->err, "%s: strides: %d entries for %d anchor levels; give one stride per level",
                          c->file, ns, nl);
    return 0;
}

static int load_header(ld_ctx *c, const cJSON *root, yp_graph *g) {
    static const char *const keys[] = {"format", "version", "name", "nc", "depth_multiple", "width_multiple",
                                       "input", "strides", "anchors", "layers", "nodes", NULL};
    static const char *const in_keys[] = {"channels", NULL};
    char fmt[32];
    int version = 0;
    if (check_keys(c, root, "", keys) || get_str(c, root, "", "format", fmt, sizeof fmt)) return -1;
    if (strcmp(fmt, YP_IR_FORMAT) != 0)
        return yp_err_set(c->err, "%s: format: \"%s\" is not a yoloplan IR; expected \"%s\"", c->file, fmt,
                          YP_IR_FORMAT);
    if (get_int(c, root, "", "version", 1, 1000, &version)) return -1;
    if (version != YP_IR_VERSION)
        return yp_err_set(c->err, "%s: version: %d is not supported by this build (reads version %d); "
                          "re-import the model with `yoloplan import`", c->file, version, YP_IR_VERSION);
    const cJSON *in = get_req(c, root, "", "input");
    if (!in) return -1;
    if (!cJSON_IsObject(in))
        return yp_err_set(c->err, "%s: input: expected an object like {\"channels\": 3}, got %s", c->file,
                          json_type_name(in));
    if (get_str(c, root, "", "name", g->name, sizeof g->name) || get_int(c, root, "", "nc", 1, 100000, &g->nc) ||
        get_num(c, root, "", "depth_multiple", 0.0, 100.0, &g->depth_multiple) ||
        get_num(c, root, "", "width_multiple", 0.0, 100.0, &g->width_multiple) ||
        check_keys(c, in, "input", in_keys) || get_int(c, in, "input", "channels", 1, 4096, &g->in_channels))
        return -1;
    return load_anchors(c, root, g);
}

static const cJSON *get_list(ld_ctx *c, const cJSON *root, const char *key) {
    const cJSON *v = get_req(c, root, "", key);
    if (v && (!cJSON_IsArray(v) || cJSON_GetArraySize(v) == 0)) {
        yp_err_set(c->err, "%s: %s: expected a non-empty array, got %s", c->file, key, json_type_name(v));
        return NULL;
    }
    return v;
}

static yp_graph *load_root(ld_ctx *c, const cJSON *root) {
    if (!cJSON_IsObject(root)) {
        yp_err_set(c->err, "%s: the top level must be an object, got %s", c->file, json_type_name(root));
        return NULL;
    }
    const cJSON *layers = get_list(c, root, "layers");
    const cJSON *nodes = layers ? get_list(c, root, "nodes") : NULL;
    if (!nodes) return NULL;
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
    ld_ctx c = {file, err};
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
    yp_graph *g = load_root(&c, root);
    cJSON_Delete(root);
    return g;
}

yp_graph *yp_ir_load_file(const char *path, yp_err *err) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        yp_err_set(err, "%s: cannot open: %s; check the path (bundled models: models/yolov5{n,s,m,l,x}.json)", path,
                   strerror(errno));
        return NULL;
    }
    char *buf = NULL;
    size_t len = 0, cap = 0;
    yp_graph *g = NULL;
    for (;;) {
        if (len == cap) {
            if (cap > YP_IR_MAX_BYTES) break; /* stop reading: reported as too large */
            cap = cap ? cap * 2 : 1 << 16;
            char *nb = realloc(buf, cap);
            if (!nb) { yp_err_set(err, "%s: out of memory", path); goto done; }
            buf = nb;
        }
        size_t got = fread(buf + len, 1, cap - len, f);
        len += got;
        if (got == 0) break;
    }
    if (ferror(f)) {
        yp_err_set(err, "%s: read error: %s", path, strerror(errno));
        goto done;
    }
    g = yp_ir_load_buffer(buf ? buf : "", len, path, err);
done:
    free(buf);
    fclose(f);
    return g;
}
