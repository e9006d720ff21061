/* ir_write.c - serialising a graph as IR JSON: stable key order, one layer or node per line,
 * so a regenerated model diffs cleanly against the checked-in file. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "ops_internal.h"
#include "yp_atomic_file.h"
#include "yp_ir.h"

typedef struct {
    char *s;
    size_t len, cap;
    int oom;
} sbuf;

static void sb_put(sbuf *b, const char *s) {
    size_t n = strlen(s);
    if (b->oom) return;
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 4096;
        while (b->len + n + 1 > cap) cap *= 2;
        char *ns = realloc(b->s, cap);
        if (!ns) { b->oom = 1; return; }
        b->s = ns, b->cap = cap;
    }
    memcpy(b->s + b->len, s, n + 1);
    b->len += n;
}

/* Appends the compact rendering of j (consumed) and a separator. */
static void sb_json(sbuf *b, cJSON *j, const char *sep) {
    char *s = j ? cJSON_PrintUnformatted(j) : NULL;
    if (!s) b->oom = 1;
    else sb_put(b, s);
    sb_put(b, sep);
    free(s);
    cJSON_Delete(j);
}

static cJSON *int_array(const int *v, int n) { return cJSON_CreateIntArray(v, n); }

static cJSON *node_attrs(const yp_node *n) {
    yp_attrs_out out = {cJSON_CreateObject()};
    yp_op_get(n->op)->write_attrs(n, &out);
    return out.obj;
}

static cJSON *node_json(const yp_node *n) {
    cJSON *j = cJSON_CreateObject();
    cJSON_AddNumberToObject(j, "id", n->id);
    cJSON_AddStringToObject(j, "op", yp_op_get(n->op)->name);
    cJSON_AddStringToObject(j, "name", n->name);
    cJSON_AddNumberToObject(j, "layer", n->layer);
    cJSON_AddItemToObject(j, "inputs", int_array(n->inputs, n->n_inputs));
    cJSON *a = node_attrs(n);
    if (a->child) cJSON_AddItemToObject(j, "attrs", a);
    else cJSON_Delete(a);
    return j;
}

static cJSON *layer_json(const yp_layer *l) {
    cJSON *j = cJSON_CreateObject();
    cJSON_AddNumberToObject(j, "index", l->index);
    cJSON_AddItemToObject(j, "from", int_array(l->from, l->n_from));
    cJSON_AddNumberToObject(j, "repeats", l->repeats);
    cJSON_AddStringToObject(j, "module", l->module);
    cJSON_AddItemToObject(j, "args", int_array(l->args, l->n_args));
    cJSON_AddNumberToObject(j, "output", l->output);
    return j;
}

static void put_header(sbuf *b, const yp_graph *g) {
    char line[256];
    cJSON *name = cJSON_CreateString(g->name);
    sb_put(b, "{\n  \"format\": \"" YP_IR_FORMAT "\",\n");
    snprintf(line, sizeof line, "  \"version\": %d,\n  \"name\": ", YP_IR_VERSION);
    sb_put(b, line);
    sb_json(b, name, ",\n");
    snprintf(line, sizeof line,
             "  \"nc\": %d,\n  \"depth_multiple\": %.15g,\n  \"width_multiple\": %.15g,\n"
             "  \"input\": {\"channels\": %d},\n  \"strides\": ",
             g->nc, g->depth_multiple, g->width_multiple, g->in_channels);
    sb_put(b, line);
    sb_json(b, int_array(g->strides, g->nl), ",\n  \"anchors\": [\n");
    for (int l = 0; l < g->nl; l++) {
        cJSON *row = cJSON_CreateArray();
        for (int k = 0; k < g->na; k++) {
            cJSON_AddItemToArray(row, cJSON_CreateNumber(g->anchors[l][k][0]));
            cJSON_AddItemToArray(row, cJSON_CreateNumber(g->anchors[l][k][1]));
        }
        sb_put(b, "    ");
        sb_json(b, row, l + 1 < g->nl ? ",\n" : "\n");
    }
    sb_put(b, g->anchors_auto ? "  ],\n  \"anchors_auto\": true,\n" : "  ],\n");
}

char *yp_ir_write_string(const yp_graph *g) {
    sbuf b = {0};
    put_header(&b, g);
    sb_put(&b, "  \"layers\": [\n");
    for (int i = 0; i < g->n_layers; i++) {
        sb_put(&b, "    ");
        sb_json(&b, layer_json(&g->layers[i]), i + 1 < g->n_layers ? ",\n" : "\n");
    }
    sb_put(&b, "  ],\n  \"nodes\": [\n");
    for (int i = 0; i < g->n_nodes; i++) {
        sb_put(&b, "    ");
        sb_json(&b, node_json(&g->nodes[i]), i + 1 < g->n_nodes ? ",\n" : "\n");
    }
    sb_put(&b, "  ]\n}\n");
    if (b.oom) {
        free(b.s);
        return NULL;
    }
    return b.s;
}

int yp_ir_write_file(const yp_graph *g, const char *path, yp_err *err) {
    char *s = yp_ir_write_string(g);
    if (!s) return yp_err_set(err, "%s: out of memory while serialising", path);
    int rc = yp_af_save_bytes(path, s, strlen(s), err);
    free(s);
    return rc;
}
