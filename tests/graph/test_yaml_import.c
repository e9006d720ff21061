/* test_yaml_import.c - models/yolov5{n,s,m,l,x}.yaml import: layers, repeats, channels, node names,
 * parameter counts (exact, against the published totals), --nc, and the bad-input fixtures in
 * tests/data/yaml/. Parameters are counted here from node attrs, independent of graph/shapes.c. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "yp_ir.h"
#include "yp_test.h"
#include "yp_yaml.h"

static yp_graph *import_path(const char *path, int nc) {
    yp_err err = {{0}};
    yp_graph *g = yp_yaml_import(path, nc, &err);
    if (!g) fprintf(stderr, "  import failed: %s\n", err.msg);
    return g;
}

static yp_graph *import_model(const char *name, int nc) {
    char path[1024];
    snprintf(path, sizeof path, "%s/%s.yaml", YP_MODELS_DIR, name);
    return import_path(path, nc);
}

/* Trainable parameters of one node: conv weight (+ bias), BN weight + bias, detect convs. */
static int64_t node_params(const yp_node *n) {
    switch (n->op) {
    case YP_OP_CONV2D: {
        const yp_conv_attrs *a = &n->a.conv;
        return (int64_t)a->c_in / a->groups * a->c_out * a->kh * a->kw + (a->bias ? a->c_out : 0);
    }
    case YP_OP_BATCHNORM2D: return 2 * (int64_t)n->a.bn.c;
    case YP_OP_DETECT: {
        const yp_detect_attrs *d = &n->a.detect;
        int64_t no = (int64_t)d->na * (d->nc + 5), sum = 0;
        for (int l = 0; l < d->nl; l++) sum += d->c_in[l] * no + no;
        return sum;
    }
    default: return 0;
    }
}

/* Sum over the nodes of `layer` (-1: the whole graph). */
static int64_t params_of(const yp_graph *g, int layer) {
    int64_t sum = 0;
    for (int i = 0; i < g->n_nodes; i++)
        if (layer < 0 || g->nodes[i].layer == layer) sum += node_params(&g->nodes[i]);
    return sum;
}

/* Output channels of every node, like graph.c's check (detect: -1). ch holds g->n_nodes. */
static void node_channels(const yp_graph *g, int *ch) {
    for (int i = 0; i < g->n_nodes; i++) {
        const yp_node *n = &g->nodes[i];
        int c0 = n->inputs[0] == YP_INPUT_IMAGE ? g->in_channels : ch[n->inputs[0]];
        switch (n->op) {
        case YP_OP_CONV2D: ch[i] = n->a.conv.c_out; break;
        case YP_OP_CONCAT:
            ch[i] = 0;
            for (int k = 0; k < n->n_inputs; k++) ch[i] += ch[n->inputs[k]];
            break;
        case YP_OP_SPACE_TO_DEPTH: ch[i] = 4 * c0; break;
        case YP_OP_CONTRACT: ch[i] = c0 * n->a.s2d.gain * n->a.s2d.gain; break;
        case YP_OP_EXPAND: ch[i] = c0 / (n->a.s2d.gain * n->a.s2d.gain); break;
        case YP_OP_DETECT: ch[i] = -1; break;
        default: ch[i] = c0; break;
        }
    }
}

static const yp_node *find_node(const yp_graph *g, const char *name) {
    for (int i = 0; i < g->n_nodes; i++)
        if (strcmp(g->nodes[i].name, name) == 0) return &g->nodes[i];
    return NULL;
}

static int count_op(const yp_graph *g, yp_op op) {
    int n = 0;
    for (int i = 0; i < g->n_nodes; i++) n += g->nodes[i].op == op;
    return n;
}

static const char *const models[5] = {"yolov5n", "yolov5s", "yolov5m", "yolov5l", "yolov5x"};

/* docs/architecture.md §5: trainable parameters, BN not fused, nc 80. */
static void test_param_totals(void) {
    static const int64_t want[5] = {1872157, 7235389, 21190557, 46563709, 86749405};
    static const int conv_blocks[5] = {57, 57, 79, 101, 123};
    for (int m = 0; m < 5; m++) {
        yp_graph *g = import_model(models[m], 0);
        CHECK(g != NULL);
        if (!g) continue;
        printf("  %s: %lld parameters\n", models[m], (long long)params_of(g, -1));
        CHECK_EQ_I64(params_of(g, -1), want[m]);
        CHECK_EQ_I64(count_op(g, YP_OP_BATCHNORM2D), conv_blocks[m]);
        CHECK_EQ_I64(count_op(g, YP_OP_CONV2D), conv_blocks[m]);
        CHECK_EQ_I64(count_op(g, YP_OP_DETECT), 1);
        yp_graph_free(g);
    }
}

/* Per-layer parameters of yolov5s as Ultralytics' parse_model prints them. */
static void test_yolov5s_layer_params(void) {
    static const int64_t want[25] = {3520,   18560,  18816,   73984,   115712,  295424, 625152,
                                     1180672, 1182720, 656896, 131584,  0,       0,      361984,
                                     33024,  0,      0,       90880,   147712,  0,      296448,
                                     590336, 0,      1182720, 229245};
    yp_graph *g = import_model("yolov5s", 0);
    REQUIRE(g != NULL);
    CHECK_EQ_I64(g->n_layers, 25);
    for (int i = 0; i < 25 && i < g->n_layers; i++) CHECK_EQ_I64(params_of(g, i), want[i]);
    yp_graph_free(g);
}

/* docs/architecture.md §5 (parse_model's rules): repeats and output channels per layer for n/s/m/l/x (0 = not a conv-like layer). */
static void test_scaling_all_models(void) {
    static const int reps[25][5] = {
        [2] = {1, 1, 2, 3, 4}, [4] = {2, 2, 4, 6, 8}, [6] = {3, 3, 6, 9, 12}, [8] = {1, 1, 2, 3, 4},
        [13] = {1, 1, 2, 3, 4}, [17] = {1, 1, 2, 3, 4}, [20] = {1, 1, 2, 3, 4}, [23] = {1, 1, 2, 3, 4}};
    static const int base[25] = {64, 128, 128, 256, 256, 512, 512, 1024, 1024, 1024, 512, 0, 0,
                                 512, 256, 0, 0, 256, 256, 0, 512, 512, 0, 1024, 0};
    static const int width_x8[5] = {2, 4, 6, 8, 10}; /* width_multiple * 8 */
    for (int m = 0; m < 5; m++) {
        yp_graph *g = import_model(models[m], 0);
        CHECK(g != NULL);
        if (!g) continue;
        int ch[4096];
        CHECK(g->n_nodes <= 4096);
        if (g->n_nodes <= 4096) node_channels(g, ch);
        for (int i = 0; i < 25 && i < g->n_layers && g->n_nodes <= 4096; i++) {
            CHECK_EQ_I64(g->layers[i].repeats, reps[i][m] ? reps[i][m] : 1);
            if (base[i]) CHECK_EQ_I64(ch[g->layers[i].output], base[i] * width_x8[m] / 8);
        }
        yp_graph_free(g);
    }
}

/* yolov5s output channels of all 24 feature layers, layer table, graph header. */
static void test_yolov5s_structure(void) {
    static const int want_ch[24] = {32,  64,  64,  128, 128, 256, 256, 512, 512, 512, 256, 256,
                                    512, 256, 128, 128, 256, 128, 128, 256, 256, 256, 512, 512};
    yp_graph *g = import_model("yolov5s", 0);
    REQUIRE(g != NULL);
    int ch[1024];
    CHECK(g->n_nodes <= 1024);
    if (g->n_nodes > 1024) return;
    node_channels(g, ch);
    for (int i = 0; i < 24; i++) CHECK_EQ_I64(ch[g->layers[i].output], want_ch[i]);
    CHECK(strcmp(g->name, "yolov5s") == 0);
    CHECK_EQ_I64(g->nc, 80);
    CHECK_EQ_I64(g->in_channels, 3);
    CHECK_EQ_I64(g->nl, 3);
    CHECK_EQ_I64(g->na, 3);
    CHECK_EQ_I64(g->strides[0], 8);
    CHECK_EQ_I64(g->strides[1], 16);
    CHECK_EQ_I64(g->strides[2], 32);
    CHECK(g->anchors[0][0][0] == 10.0f && g->anchors[0][0][1] == 13.0f);
    CHECK(g->anchors[2][2][0] == 373.0f && g->anchors[2][2][1] == 326.0f);
    CHECK(g->depth_multiple == 0.33 && g->width_multiple == 0.5);
    CHECK_EQ_I64(g->nodes[g->n_nodes - 1].op, YP_OP_DETECT);
    CHECK_EQ_I64(g->layers[24].output, g->n_nodes - 1);
    yp_graph_free(g);
}

static void check_layer(const yp_layer *l, const char *module, int n_from, const int *from, int n_args,
                        const int *args) {
    CHECK(strcmp(l->module, module) == 0);
    CHECK_EQ_I64(l->n_from, n_from);
    for (int k = 0; k < n_from && k < l->n_from; k++) CHECK_EQ_I64(l->from[k], from[k]);
    CHECK_EQ_I64(l->n_args, n_args);
    for (int k = 0; k < n_args && k < l->n_args; k++) CHECK_EQ_I64(l->args[k], args[k]);
}

/* Layer rows as Ultralytics prints them (scaled args), with absolute `from`. */
static void test_yolov5s_layers(void) {
    yp_graph *g = import_model("yolov5s", 0);
    REQUIRE(g != NULL);
    check_layer(&g->layers[0], "Conv", 1, (int[]){YP_INPUT_IMAGE}, 5, (int[]){3, 32, 6, 2, 2});
    check_layer(&g->layers[1], "Conv", 1, (int[]){0}, 5, (int[]){32, 64, 3, 2, 1});
    check_layer(&g->layers[4], "C3", 1, (int[]){3}, 4, (int[]){128, 128, 2, 1});
    check_layer(&g->layers[9], "SPPF", 1, (int[]){8}, 3, (int[]){512, 512, 5});
    check_layer(&g->layers[10], "Conv", 1, (int[]){9}, 5, (int[]){512, 256, 1, 1, 0});
    check_layer(&g->layers[11], "nn.Upsample", 1, (int[]){10}, 1, (int[]){2});
    check_layer(&g->layers[12], "Concat", 2, (int[]){11, 6}, 1, (int[]){1});
    check_layer(&g->layers[13], "C3", 1, (int[]){12}, 4, (int[]){512, 256, 1, 0});
    check_layer(&g->layers[22], "Concat", 2, (int[]){21, 10}, 1, (int[]){1});
    check_layer(&g->layers[24], "Detect", 3, (int[]){17, 20, 23}, 4, (int[]){80, 128, 256, 512});
    for (int i = 0; i < g->n_layers; i++) CHECK_EQ_I64(g->layers[i].index, i);
    yp_graph_free(g);
}

/* Node names are Ultralytics state-dict prefixes; check wiring of C3, SPPF, Detect. */
static void test_yolov5s_nodes(void) {
    yp_graph *g = import_model("yolov5s", 0);
    REQUIRE(g != NULL);
    static const char *const names[] = {
        "model.0.conv", "model.0.bn", "model.0.act", "model.2.cv1.conv", "model.2.m.0.cv1.conv",
        "model.2.m.0.cv2.act", "model.2.m.0.add", "model.2.cat", "model.2.cv3.bn", "model.4.m.1.add",
        "model.9.cv1.conv", "model.9.m.0", "model.9.m.1", "model.9.m.2", "model.9.cat", "model.9.cv2.act",
        "model.11", "model.12", "model.13.m.0.cv2.conv", "model.24"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        if (!find_node(g, names[i])) fprintf(stderr, "  missing node %s\n", names[i]);
        CHECK(find_node(g, names[i]) != NULL);
    }
    CHECK(find_node(g, "model.13.m.0.add") == NULL); /* head C3: no shortcut */
    CHECK(find_node(g, "model.4.m.2.cv1.conv") == NULL);
    const yp_node *c0 = find_node(g, "model.0.conv"), *bn = find_node(g, "model.0.bn");
    if (c0 && bn) {
        CHECK_EQ_I64(c0->inputs[0], YP_INPUT_IMAGE);
        CHECK(c0->a.conv.kh == 6 && c0->a.conv.kw == 6 && c0->a.conv.sh == 2 && c0->a.conv.sw == 2 && c0->a.conv.ph == 2 &&
              c0->a.conv.pw == 2 && c0->a.conv.bias == 0);
        CHECK(bn->a.bn.eps == 1e-3 && bn->a.bn.momentum == 0.03);
    }
    const yp_node *cat = find_node(g, "model.2.cat"), *add = find_node(g, "model.2.m.0.add");
    const yp_node *cv2 = find_node(g, "model.2.cv2.act");
    if (cat && add && cv2) { /* bottleneck branch first, then cv2 */
        CHECK(cat->n_inputs == 2 && cat->inputs[0] == add->id && cat->inputs[1] == cv2->id);
    }
    const yp_node *sp = find_node(g, "model.9.cat"), *p0 = find_node(g, "model.9.m.0");
    if (sp && p0) {
        CHECK_EQ_I64(sp->n_inputs, 4);
        CHECK(p0->a.pool.k == 5 && p0->a.pool.s == 1 && p0->a.pool.p == 2);
    }
    const yp_node *det = find_node(g, "model.24");
    if (det) {
        CHECK(det->a.detect.nc == 80 && det->a.detect.na == 3 && det->a.detect.nl == 3);
        for (int l = 0; l < 3; l++) CHECK_EQ_I64(det->inputs[l], g->layers[17 + 3 * l].output);
    }
    yp_graph_free(g);
}

/* --nc replaces nc: only the Detect convs change. */
static void test_nc_override(void) {
    yp_graph *g = import_model("yolov5s", 20);
    REQUIRE(g != NULL);
    CHECK_EQ_I64(g->nc, 20);
    CHECK_EQ_I64(params_of(g, 24), (128 + 256 + 512) * 75 + 3 * 75);
    CHECK_EQ_I64(params_of(g, -1), 7235389 - 229245 + 67425);
    CHECK_EQ_I64(g->layers[24].args[0], 20);
    yp_graph_free(g);
}

/* YOLOv5s as of v5.0 (Focus, SPP): 7,066,239 parameters at nc 2 in a published training log,
 * so 7,276,605 at nc 80. */
static void test_focus_spp(void) {
    char path[1024];
    snprintf(path, sizeof path, "%s/yaml/good/yolov5s-v5.0.yaml", YP_TEST_DATA);
    yp_graph *g = import_path(path, 2);
    REQUIRE(g != NULL);
    CHECK_EQ_I64(params_of(g, -1), 7066239);
    CHECK_EQ_I64(params_of(g, 0), 3520);
    CHECK_EQ_I64(params_of(g, 4), 156928);
    CHECK_EQ_I64(params_of(g, 8), 656896);
    CHECK(find_node(g, "model.0.space_to_depth") != NULL);
    CHECK(find_node(g, "model.0.conv.conv") != NULL);
    const yp_node *cat = find_node(g, "model.8.cat");
    CHECK(cat != NULL && cat->n_inputs == 4);
    CHECK(strcmp(g->layers[0].module, "Focus") == 0 && strcmp(g->layers[8].module, "SPP") == 0);
    CHECK(g->strides[0] == 8 && g->strides[1] == 16 && g->strides[2] == 32);
    CHECK(strcmp(g->name, "yolov5s-v5.0") == 0);
    yp_graph_free(g);
    g = import_path(path, 0);
    CHECK(g != NULL);
    if (g) CHECK_EQ_I64(params_of(g, -1), 7276605);
    yp_graph_free(g);
}

/* YOLOv5's Contract and Expand (tests/data/yaml/good/contract_expand.yaml): one node each, named
 * model.i (no parameters), with parse_model's channels (c * gain^2, c / gain^2; Expand's gain
 * defaults to 2) and strides (Contract(3) at stride 4 reaches 12, so sizes are multiples of 24);
 * the IR the executor's tests run (tests/data/ir/contract_expand.json) is exactly its import. */
static void test_contract_expand(void) {
    char path[1024];
    snprintf(path, sizeof path, "%s/yaml/good/contract_expand.yaml", YP_TEST_DATA);
    yp_graph *g = import_path(path, 0);
    REQUIRE(g != NULL);
    static const int want_ch[9] = {8, 32, 16, 8, 8, 72, 8, 24, 16};
    int ch[64];
    REQUIRE(g->n_nodes <= 64 && g->n_layers == 10);
    node_channels(g, ch);
    for (int i = 0; i < 9; i++) CHECK_EQ_I64(ch[g->layers[i].output], want_ch[i]);
    static const struct { const char *name; yp_op op; int gain, layer; } blocks[] = {
        {"model.1", YP_OP_CONTRACT, 2, 1}, {"model.3", YP_OP_EXPAND, 2, 3},
        {"model.5", YP_OP_CONTRACT, 3, 5}, {"model.6", YP_OP_EXPAND, 3, 6}};
    for (size_t k = 0; k < sizeof blocks / sizeof *blocks; k++) {
        const yp_node *n = find_node(g, blocks[k].name);
        CHECK(n != NULL);
        if (!n) continue;
        CHECK(n->op == blocks[k].op && n->a.s2d.gain == blocks[k].gain && n->layer == blocks[k].layer);
        CHECK_EQ_I64(g->layers[blocks[k].layer].output, n->id);
        check_layer(&g->layers[blocks[k].layer], blocks[k].op == YP_OP_CONTRACT ? "Contract" : "Expand", 1,
                    (int[]){blocks[k].layer == 3 ? 1 : blocks[k].layer - 1}, 1, (int[]){blocks[k].gain});
    }
    CHECK(find_node(g, "model.3")->inputs[0] == find_node(g, "model.1")->id); /* Expand of layer 1 */
    CHECK_EQ_I64(count_op(g, YP_OP_CONTRACT), 2);
    CHECK_EQ_I64(count_op(g, YP_OP_EXPAND), 2);
    CHECK(g->nl == 1 && g->strides[0] == 8);
    CHECK_EQ_I64(yp_graph_max_stride(g), 24);
    /* 880 Focus + 544 + 592 + 3488 (Convs) + 102 Detect; Contract and Expand have none */
    CHECK_EQ_I64(params_of(g, -1), 5606);
    yp_node_info info[64];
    yp_err err = {{0}};
    CHECK(yp_graph_infer(g, 1, 48, 72, info, &err) == 0);
    const yp_shape c3 = info[find_node(g, "model.5")->id].out[0], e3 = info[find_node(g, "model.6")->id].out[0];
    CHECK(c3.c == 72 && c3.h == 4 && c3.w == 6 && e3.c == 8 && e3.h == 12 && e3.w == 18);
    CHECK(yp_graph_infer(g, 1, 32, 32, info, &err) == -1);
    CHECK_STR_HAS(err.msg, "must be a positive multiple of 24");
    char ir[1024];
    snprintf(ir, sizeof ir, "%s/ir/contract_expand.json", YP_TEST_DATA);
    FILE *f = fopen(ir, "rb");
    static char stored[1 << 16];
    size_t n = f ? fread(stored, 1, sizeof stored - 1, f) : 0;
    if (f) fclose(f);
    stored[n] = 0;
    char *fresh = yp_ir_write_string(g);
    if (fresh && strcmp(fresh, stored))
        fprintf(stderr, "  %s differs from a fresh import: ./build/yoloplan import %s -o %s\n", ir, path, ir);
    CHECK(fresh && strcmp(fresh, stored) == 0);
    free(fresh);
    yp_graph_free(g);
}

/* A bad file: NULL, and a message with FILE:LINE and the key words. */
static void check_bad(const char *file, int line, const char *words) {
    char path[1024], where[256];
    snprintf(path, sizeof path, "%s/yaml/%s", YP_TEST_DATA, file);
    snprintf(where, sizeof where, "%s:%d:", file, line);
    yp_err err = {{0}};
    yp_graph *g = yp_yaml_import(path, 0, &err);
    CHECK(g == NULL);
    yp_graph_free(g);
    CHECK_STR_HAS(err.msg, where);
    CHECK_STR_HAS(err.msg, words);
    const char *rel = strstr(err.msg, "/yaml/");
    printf("    %s\n", rel ? rel + 6 : err.msg);
}

static void test_bad_inputs(void) {
    check_bad("empty.yaml", 1, "empty file");
    check_bad("comments_only.yaml", 1, "empty file");
    check_bad("unknown_module.yaml", 9, "unknown module \"C4\"; known modules: Conv, C3");
    check_bad("unknown_key.yaml", 4, "unknown key \"width\"; known keys: nc, depth_multiple");
    check_bad("missing_key.yaml", 2, "missing required key \"head\"");
    check_bad("wrong_type.yaml", 3, "depth_multiple: expected a number, got the string \"third\"");
    check_bad("wrong_type_arg.yaml", 9, "args[1]: expected an integer, got the quoted string \"3\"");
    check_bad("forward_from.yaml", 10, "from 3 points forward");
    check_bad("missing_layer.yaml", 10, "from -5: layer -3 does not exist");
    check_bad("bad_row.yaml", 9, "a row must be [from, number, module, args], got 3 items");
    check_bad("syntax_error.yaml", 10, "syntax error");  /* libyaml notices at line 10 */
    check_bad("bad_anchors.yaml", 7, "anchors row 1: 5 numbers");
    check_bad("no_detect.yaml", 10, "a model ends with a Detect row");
    check_bad("duplicate_key.yaml", 7, "duplicate key \"nc\"");
    check_bad("detect_levels.yaml", 11, "Detect takes 1 layer(s) in from, but anchors has 2 row(s)");
    check_bad("bad_upsample.yaml", 10, "only mode 'nearest'");
    check_bad("not_utf8.yaml", 3, "syntax error: incomplete UTF-8");
    check_bad("repeat_channels.yaml", 10, "2 repeats of Conv, but it turns 64 channels into 128");
    check_bad("bad_activation.yaml", 6, "activation: \"nn.GELU()\" is not supported; use one of nn.SiLU(), nn.ReLU()");
    check_bad("bad_anchor_count.yaml", 5, "anchors: 12 anchors per level; use 1 to 8");
    check_bad("repeat_concat.yaml", 10, "number: 2 repeats; Concat cannot repeat");
    check_bad("bad_crossconv_e.yaml", 10, "args[4] (e): 0 is out of range");
    check_bad("bad_crossconv_groups.yaml", 10, "groups 3 must divide the hidden channels 64");
    check_bad("bad_expand_channels.yaml", 10, "layer 2 Expand: Expand(3) splits its input's channels into 3x3 "
              "blocks, so they must be a multiple of gain**2 = 9, but layer 1 gives 8; make them a multiple of 9");
    check_bad("bad_contract_gain.yaml", 9, "layer 1 Contract: args[0] (gain): 1 is out of range; use 2..16");
    check_bad("repeat_contract.yaml", 10, "number: 2 repeats of Contract, but parse_model records one copy's "
              "channels for the nn.Sequential of copies");
}

static void check_conv(const yp_graph *g, const char *name, int kh, int kw, int sh, int sw, int groups) {
    const yp_node *n = find_node(g, name);
    CHECK(n != NULL && n->op == YP_OP_CONV2D);
    if (!n) return;
    const yp_conv_attrs *a = &n->a.conv;
    if (a->kh != kh || a->kw != kw || a->sh != sh || a->sw != sw || a->groups != groups)
        fprintf(stderr, "  %s: k %dx%d s %dx%d g %d\n", name, a->kh, a->kw, a->sh, a->sw, a->groups);
    CHECK(a->kh == kh && a->kw == kw && a->sh == sh && a->sw == sw && a->groups == groups);
    CHECK(a->ph == kh / 2 && a->pw == kw / 2); /* YOLOv5's autopad of a list */
}

/* C3x and CrossConv (tests/data/zoo/custom/yolov5s-c3x.yaml): 1x3 then 3x1 convs, a stride on
 * one axis each, groups on the second, the shortcut inside C3x, and a repeated CrossConv. */
static void test_cross_conv(void) {
    yp_graph *g = import_path(YP_TEST_DATA "/zoo/custom/yolov5s-c3x.yaml", 0);
    CHECK(g != NULL);
    if (!g) return;
    check_conv(g, "model.2.m.0.cv1.conv", 1, 3, 1, 1, 1); /* C3x's CrossConv(c_, c_, 3, 1, 1, 1.0, True) */
    check_conv(g, "model.2.m.0.cv2.conv", 3, 1, 1, 1, 1);
    CHECK(find_node(g, "model.2.m.0.add") != NULL);
    CHECK(find_node(g, "model.13.m.0.add") == NULL); /* C3x(..., False) */
    check_conv(g, "model.3.cv1.conv", 1, 3, 1, 2, 1); /* CrossConv(256, 3, 2) */
    check_conv(g, "model.3.cv2.conv", 3, 1, 2, 1, 1);
    check_conv(g, "model.7.cv1.conv", 1, 3, 1, 2, 1); /* CrossConv(1024, 3, 2, g=2, e=0.5) */
    check_conv(g, "model.7.cv2.conv", 3, 1, 2, 1, 2);
    CHECK(find_node(g, "model.7.cv1.conv")->a.conv.c_out == 256);
    CHECK(find_node(g, "model.18.1.add") != NULL); /* the second copy, with its shortcut */
    yp_node_info *info = calloc((size_t)g->n_nodes, sizeof *info);
    yp_err err;
    CHECK(info && yp_graph_infer(g, 1, 640, 640, info, &err) == 0);
    const yp_node *h = find_node(g, "model.3.cv1.act"), *o = find_node(g, "model.3.cv2.act");
    CHECK(h && o);
    if (info && h && o) { /* the 1x3 halves the width only, the 3x1 the height */
        CHECK(info[h->id].out[0].h == 160 && info[h->id].out[0].w == 80);
        CHECK(info[o->id].out[0].h == 80 && info[o->id].out[0].w == 80);
    }
    CHECK(yp_graph_max_stride(g) == 32);
    free(info);
    yp_graph_free(g);
}

/* `number` repeats any module as nn.Sequential (model.i.j), activation: nn.Identity() drops the
 * activations, channel_multiple rounds the widths, anchors: N leaves the anchors to AutoAnchor. */
static void test_repeats_identity(void) {
    char path[1024];
    snprintf(path, sizeof path, "%s/yaml/good/repeats_identity.yaml", YP_TEST_DATA);
    yp_graph *g = import_path(path, 0);
    CHECK(g != NULL);
    if (!g) return;
    CHECK(find_node(g, "model.1.0.cv1.conv") && find_node(g, "model.1.1.cv2.conv") && find_node(g, "model.2.1.conv"));
    CHECK(find_node(g, "model.1.cv1.conv") == NULL);
    CHECK(count_op(g, YP_OP_SILU) == 0);
    CHECK(find_node(g, "model.0.conv")->a.conv.c_out == 32); /* ceil(64 * 0.3 / 16) * 16 */
    CHECK(g->anchors_auto && g->na == 2 && g->nl == 1 && g->strides[0] == 8); /* 2, then two stride-2 Convs */
    CHECK(g->anchors[0][0][0] == 1.25f * 8 && g->anchors[0][1][1] == 3.75f * 8); /* the stand-ins */
    /* 928 (layer 0) + 2 x 5216 (Bottleneck 32 -> 16 -> 32) + 2 x 9280 (Conv 3x3 s2) + 528 (Detect 32 -> 2 x 8) */
    CHECK_EQ_I64(params_of(g, -1), 30448);
    yp_graph_free(g);
}

static void test_file_not_found(void) {
    yp_err err = {{0}};
    yp_graph *g = yp_yaml_import("no/such/model.yaml", 0, &err);
    CHECK(g == NULL);
    CHECK_STR_HAS(err.msg, "no/such/model.yaml: cannot open: ");
    CHECK_STR_HAS(err.msg, strerror(ENOENT));
}

/* Not regular files are refused without reading: /dev/zero would never end, a folder is no yaml. */
static void test_not_a_regular_file(void) {
    yp_err err = {{0}};
    CHECK(yp_yaml_import("/dev/zero", 0, &err) == NULL);
    CHECK_STR_HAS(err.msg, "/dev/zero: a device, not a yaml file; give a regular file");
    CHECK(yp_yaml_import(YP_TEST_DATA, 0, &err) == NULL);
    CHECK_STR_HAS(err.msg, ": a folder, not a yaml file");
}

int main(void) {
    YP_RUN(test_param_totals);
    YP_RUN(test_yolov5s_layer_params);
    YP_RUN(test_scaling_all_models);
    YP_RUN(test_yolov5s_structure);
    YP_RUN(test_yolov5s_layers);
    YP_RUN(test_yolov5s_nodes);
    YP_RUN(test_nc_override);
    YP_RUN(test_focus_spp);
    YP_RUN(test_contract_expand);
    YP_RUN(test_bad_inputs);
    YP_RUN(test_cross_conv);
    YP_RUN(test_repeats_identity);
    YP_RUN(test_file_not_found);
    YP_RUN(test_not_a_regular_file);
    return yp_test_summary();
}
