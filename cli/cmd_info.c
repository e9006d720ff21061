/* cmd_info.c - `yoloplan info`: the per-layer table (index, from, repeats, params, module,
 * arguments, output shape, GFLOPs) and totals, as text or JSON. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "cli.h"

typedef struct {
    const char *model;
    int64_t w, h;
    long nc;
    int json;
} info_opts;

static int parse(int argc, char **argv, info_opts *o, yp_err *err) {
    o->model = "yolov5s", o->w = o->h = 640, o->nc = 0, o->json = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--json")) o->json = 1;
        else if (!strcmp(a, "--model") && v) o->model = v, i++;
        else if (!strcmp(a, "--img") && v) {
            if (cli_parse_img(v, &o->w, &o->h, err)) return -1;
            i++;
        } else if (!strcmp(a, "--nc") && v) {
            if (cli_parse_int("--nc", v, 1, 100000, &o->nc, err)) return -1;
            i++;
        } else
            return yp_err_set(err, "info: unknown or incomplete option \"%s\"; see yoloplan info --help", a);
    }
    return 0;
}

/* "-1", "[-1, 6]", "[17, 20, 23]" as Ultralytics prints `from`. */
static void fmt_from(const yp_layer *l, char *buf, size_t n) {
    char one[16];
    buf[0] = 0;
    for (int k = 0; k < l->n_from; k++) {
        int f = l->from[k];
        int prev = f == YP_INPUT_IMAGE || (f == l->index - 1 && k == 0); /* Ultralytics writes -1 first */
        snprintf(one, sizeof one, "%d", prev ? -1 : f);
        if (l->n_from > 1) strncat(buf, k ? ", " : "[", n - strlen(buf) - 1);
        strncat(buf, one, n - strlen(buf) - 1);
    }
    if (l->n_from > 1) strncat(buf, "]", n - strlen(buf) - 1);
}

static void fmt_args(const yp_layer *l, char *buf, size_t n) {
    char one[24];
    snprintf(buf, n, "[");
    for (int k = 0; k < l->n_args; k++) {
        snprintf(one, sizeof one, "%s%d", k ? ", " : "", l->args[k]);
        strncat(buf, one, n - strlen(buf) - 1);
    }
    strncat(buf, "]", n - strlen(buf) - 1);
}

static void fmt_shape(const yp_node_info *ni, char *buf, size_t n) {
    char one[64];
    buf[0] = 0;
    for (int l = 0; l < ni->n_out; l++) {
        snprintf(one, sizeof one, "%s%lldx%lldx%lld", l ? ", " : "", (long long)ni->out[l].c, (long long)ni->out[l].h,
                 (long long)ni->out[l].w);
        strncat(buf, one, n - strlen(buf) - 1);
    }
}

typedef struct {
    int64_t params, flops;
} layer_sum;

static void sum_layers(const yp_graph *g, const yp_node_info *info, layer_sum *ls) {
    memset(ls, 0, (size_t)g->n_layers * sizeof *ls);
    for (int i = 0; i < g->n_nodes; i++) {
        ls[g->nodes[i].layer].params += info[i].params;
        ls[g->nodes[i].layer].flops += info[i].flops;
    }
}

static void print_text(const yp_graph *g, const yp_node_info *info, const layer_sum *ls, const info_opts *o) {
    char from[48], args[96], shape[160];
    int64_t params = 0, flops = 0, buffers = 0;
    printf("%3s %14s %3s %10s  %-12s %-28s %-30s %8s\n", "", "from", "n", "params", "module", "arguments", "output",
           "GFLOPs");
    for (int i = 0; i < g->n_layers; i++) {
        const yp_layer *l = &g->layers[i];
        fmt_from(l, from, sizeof from), fmt_args(l, args, sizeof args),
            fmt_shape(&info[l->output], shape, sizeof shape);
        printf("%3d %14s %3d %10lld  %-12s %-28s %-30s %8.3f\n", i, from, l->repeats, (long long)ls[i].params,
               l->module, args, shape, ls[i].flops / 1e9);
        params += ls[i].params, flops += ls[i].flops;
    }
    for (int i = 0; i < g->n_nodes; i++) buffers += info[i].buffers;
    printf("%s summary: %d layers, %d nodes, %lld parameters, %lld gradients, %lld buffers, %.1f GFLOPs at %lldx%lld "
           "(batch 1)\n",
           g->name, g->n_layers, g->n_nodes, (long long)params, (long long)params, (long long)buffers, flops / 1e9,
           (long long)o->w, (long long)o->h);
    if (g->anchors_auto)
        printf("anchors: %d per level, given as a count; training fits them to the labels (AutoAnchor's k-means), "
               "until then stand-ins scaled by each level's stride\n", g->na);
}

static cJSON *shape_json(const yp_shape *s) {
    int v[4] = {(int)s->n, (int)s->c, (int)s->h, (int)s->w};
    return cJSON_CreateIntArray(v, 4);
}

static void print_json(const yp_graph *g, const yp_node_info *info, const layer_sum *ls, const info_opts *o) {
    cJSON *root = cJSON_CreateObject(), *layers = cJSON_AddArrayToObject(root, "layers");
    int64_t params = 0, flops = 0, buffers = 0;
    cJSON_AddStringToObject(root, "model", g->name);
    cJSON_AddNumberToObject(root, "nc", g->nc);
    int img[2] = {(int)o->w, (int)o->h};
    cJSON_AddItemToObject(root, "img", cJSON_CreateIntArray(img, 2));
    for (int i = 0; i < g->n_layers; i++) {
        const yp_layer *l = &g->layers[i];
        cJSON *j = cJSON_CreateObject(), *outs = cJSON_CreateArray();
        cJSON_AddNumberToObject(j, "index", i);
        cJSON_AddItemToObject(j, "from", cJSON_CreateIntArray(l->from, l->n_from));
        cJSON_AddNumberToObject(j, "repeats", l->repeats);
        cJSON_AddNumberToObject(j, "params", (double)ls[i].params);
        cJSON_AddStringToObject(j, "module", l->module);
        cJSON_AddItemToObject(j, "args", cJSON_CreateIntArray(l->args, l->n_args));
        for (int k = 0; k < info[l->output].n_out; k++) cJSON_AddItemToArray(outs, shape_json(&info[l->output].out[k]));
        cJSON_AddItemToObject(j, "output", outs);
        cJSON_AddNumberToObject(j, "flops", (double)ls[i].flops);
        cJSON_AddItemToArray(layers, j);
        params += ls[i].params, flops += ls[i].flops;
    }
    for (int i = 0; i < g->n_nodes; i++) buffers += info[i].buffers;
    cJSON *t = cJSON_AddObjectToObject(root, "totals");
    cJSON_AddNumberToObject(t, "layers", g->n_layers);
    cJSON_AddNumberToObject(t, "nodes", g->n_nodes);
    cJSON_AddNumberToObject(t, "params", (double)params);
    cJSON_AddNumberToObject(t, "gradients", (double)params);
    cJSON_AddNumberToObject(t, "buffers", (double)buffers);
    cJSON_AddNumberToObject(t, "flops", (double)flops);
    cJSON_AddNumberToObject(t, "gflops", flops / 1e9);
    char *s = cJSON_Print(root);
    if (s) puts(s);
    free(s);
    cJSON_Delete(root);
}

int cmd_info(int argc, char **argv) {
    info_opts o;
    yp_err err;
    if (parse(argc, argv, &o, &err)) return cli_fail(&err);
    yp_graph *g = cli_load_model(o.model, (int)o.nc, &err);
    if (!g) return cli_fail(&err);
    yp_node_info *info = calloc((size_t)g->n_nodes, sizeof *info);
    layer_sum *ls = calloc((size_t)g->n_layers, sizeof *ls);
    int rc = YP_EXIT_OK;
    if (!info || !ls) {
        yp_err_set(&err, "out of memory");
        rc = cli_fail(&err);
    } else if (yp_graph_infer(g, 1, o.h, o.w, info, &err)) {
        rc = cli_fail(&err);
    } else {
        sum_layers(g, info, ls);
        if (o.json) print_json(g, info, ls, &o);
        else print_text(g, info, ls, &o);
    }
    free(ls);
    free(info);
    yp_graph_free(g);
    return rc;
}
