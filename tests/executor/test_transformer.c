/* test_transformer.c - YOLOv5's TransformerBlock (C3TR's m) end to end on the tiny IR
 * tests/data/ir/transformer.json (Conv, TransformerBlock(8, 8, 2 heads, 1 layer), Detect), against
 * PyTorch 1.13 on the same module stack (tests/ref/make_transformer_fixture.py):
 *   - under the `pytorch` policy the bytes saved for backward equal saved_tensors_hooks' count
 *     (tests/data/transformer_saved.json) exactly, at batch > 1 with the copies PyTorch's Linears
 *     make of the block's permuted (L, B, C) tokens (torch_input_copy);
 *   - attention's softmax output is saved under `pytorch` only, elsewhere it is workspace and the
 *     backward's scratch holds it again;
 *   - one CPU training step (batch 2, 12x12) gives PyTorch's loss and every parameter gradient
 *     (tests/data/step/transformer.bin), and every saving policy the same gradients;
 *   - --weights from PyTorch's state dict of it (packed in_proj, nn.Linear's 2-D weights) loads
 *     every weight;
 *   - the importer's C3TR: yolov5s-transformer.yaml has Ultralytics' parameter count, state-dict
 *     node names, survives the IR round trip, and a C3TR whose heads do not divide c_ is refused. */
#include <math.h>

#include "step_fixture.h"
#include "yp_test_exec.h"
#include "yp_checkpoint.h"
#include "yp_executor.h"
#include "yp_executor_internal.h"
#include "yp_ir.h"
#include "yp_test.h"
#include "yp_test_json.h"
#include "yp_test_fs.h"
#include "yp_test_sched.h"
#include "yp_yaml.h"

#include <cjson/cJSON.h>

static yp_graph *graph;

static yp_schedule *schedule(int64_t batch, int64_t side, yp_save_policy pol) {
    return yp_test_schedule(graph, batch, side, pol);
}

/* The input copies the pytorch policy plans (torch_input_copy convs at batch > 1), saved ones. */
static int input_copies(const yp_schedule *s) {
    int n = 0;
    for (int t = 0; t < s->n_tensors; t++)
        n += s->tensors[t].role == YP_ROLE_INPUT_COPY && s->tensors[t].kind == YP_KIND_SAVED;
    return n;
}

static void test_saved_bytes_equal_pytorch(void) {
    cJSON *fx = yp_test_json_file(YP_TEST_DATA "/transformer_saved.json");
    REQUIRE(fx != NULL);
    const cJSON *rows = cJSON_GetObjectItem(fx, "saved_bytes");
    REQUIRE(rows != NULL);
    int compared = 0, batch1 = 0;
    for (const cJSON *r = rows->child; r; r = r->next) {
        long long batch, side;
        REQUIRE(sscanf(r->string, "%lldx%lld", &batch, &side) == 2);
        yp_schedule *s = schedule(batch, side, YP_SAVE_PYTORCH);
        REQUIRE(s != NULL);
        int64_t ours = yp_schedule_saved_bytes(s), theirs = (int64_t)r->valuedouble;
        printf("  batch %lld at %lld: %lld bytes (torch %lld)\n", batch, side, (long long)ours, (long long)theirs);
        CHECK_EQ_I64(ours, theirs);
        /* at batch > 1 linear's copy of p and the first layer's q, k and v copies of p + linear(p) */
        CHECK_EQ_I64(input_copies(s), batch > 1 ? 4 : 0);
        yp_schedule *own = schedule(batch, side, YP_SAVE_YOLOPLAN); /* a PyTorch artefact: not ours */
        REQUIRE(own != NULL);
        CHECK_EQ_I64(input_copies(own), 0);
        yp_schedule_free(own);
        compared++, batch1 += batch == 1;
        yp_schedule_free(s);
    }
    CHECK(compared == 4 && batch1 == 2);
    cJSON_Delete(fx);
}

/* Kind of the tensors of one role of the attention node, and the backward scratch's floats. */
static void probs_of(const yp_schedule *s, int *saved, int *workspace, int64_t *scratch, int *scalars) {
    *saved = *workspace = *scalars = 0, *scratch = 0;
    for (int t = 0; t < s->n_tensors; t++) {
        const yp_tensor *x = &s->tensors[t];
        if (x->role == YP_ROLE_ATTN_PROBS) *saved += x->kind == YP_KIND_SAVED, *workspace += x->kind == YP_KIND_WORKSPACE;
        if (x->role == YP_ROLE_ATTN_SCRATCH) *scratch += yp_shape_numel(x->shape);
        if (x->role == YP_ROLE_ATTN_SCALARS) *scalars += x->kind == YP_KIND_SAVED;
    }
}

static void test_probs_kept_under_pytorch_only(void) {
    const int64_t P = yp_attn_probs_floats(2, 2, 5, 5); /* batch 2 at 10 px: 5x5 map, 2 heads */
    CHECK_EQ_I64(P, 2 * 2 * 25 * 25);
    for (int pol = 0; pol < YP_SAVE_COUNT; pol++) {
        yp_schedule *s = schedule(2, 10, (yp_save_policy)pol);
        REQUIRE(s != NULL);
        int saved, ws, scalars;
        int64_t scratch;
        probs_of(s, &saved, &ws, &scratch, &scalars);
        int keep = pol == YP_SAVE_PYTORCH;
        CHECK_EQ_I64(saved, keep);
        CHECK_EQ_I64(scalars, keep ? 2 : 0);
        CHECK_EQ_I64(ws, keep ? 0 : 2); /* the forward's, and the recompute's for out_proj's backward */
        CHECK_EQ_I64(scratch, keep ? P : 2 * P);
        yp_schedule_free(s);
    }
    CHECK(yp_attn_probs_floats(1, 1, INT64_C(1) << 31, INT64_C(1) << 31) == -1);
}

/* ---------------------------------------------------------------- one training step */

static fx_file fx;
static yp_backend *cpu;
static yp_gpu gpu;

static int make_exec(yp_plan *p, yp_exec *x, yp_save_policy pol) {
    yp_err err;
    yp_candidate c = yp_candidate_default();
    c.batch = 2, c.img_w = c.img_h = 12, c.mosaic = 0, c.labels_per_image = 2, c.policy = pol;
    yp_exec_candidate_for(&c, cpu);
    if (yp_plan_build(graph, &c, &gpu, 0, 0, p, &err)) return fprintf(stderr, "plan: %s\n", err.msg), -1;
    if (yp_test_exec_init(x, p, cpu, 0, &fx)) return yp_plan_free(p), -1;
    return 0;
}

static void test_step_matches_pytorch(void) {
    const fx_record *img = fx_get(&fx, "images"), *tg = fx_get(&fx, "targets"), *ref = fx_get(&fx, "loss/1");
    REQUIRE(img && tg && ref);
    yp_plan base;
    yp_exec a;
    REQUIRE(make_exec(&base, &a, YP_SAVE_YOLOPLAN) == 0);
    double loss[4], worst;
    yp_err err;
    /* k's bias adds q_i . b_k to every score of row i: softmax does not see it, so its gradient is
     * 0 and both sides hold rounding noise (torch's ~5e-11) */
    int grads = yp_test_step_vs_fixture(&a, &fx, "model.1.tr.0.ma.in_proj.k.bias", 1e-3, &worst);
    CHECK_EQ_I64(grads, 20); /* 3 of layer 0's conv and BN, 15 of the block (in_proj as 3 + 3), Detect's 2 */
    CHECK(worst <= 1e-3);
    for (int pol = 0; pol < YP_SAVE_COUNT; pol++) { /* P kept or computed again: the same gradients */
        if (pol == YP_SAVE_YOLOPLAN) continue;
        yp_plan p;
        yp_exec b;
        REQUIRE(make_exec(&p, &b, (yp_save_policy)pol) == 0);
        CHECK(yp_exec_micro_step(&b, img->data, tg->data, tg->numel / 6, loss, &err) == 0);
        double diff = 0;
        for (int t = 0; t < a.train.s->n_tensors; t++) {
            const yp_tensor *w = &a.train.s->tensors[t];
            if (w->kind != YP_KIND_GRAD) continue;
            int u = yp_schedule_find(b.train.s, w->name);
            double e = u < 0 ? 1e9 : fx_rel_err(yp_exec_tensor(&b, u), yp_exec_tensor(&a, t), w->shape.w);
            diff = e > diff ? e : diff;
        }
        printf("  %s policy: worst gradient difference %.2e\n", yp_save_policy_name((yp_save_policy)pol), diff);
        CHECK(diff <= 1e-5);
        yp_exec_free(&b), yp_plan_free(&p);
    }
    yp_exec_free(&a), yp_plan_free(&base);
}

/* --weights from PyTorch's own state dict of the same network (transformer_state.safetensors):
 * nn.Linear's (out, in) weights go into the 1x1 convs, and nn.MultiheadAttention's packed
 * in_proj_weight / in_proj_bias into in_proj.{q,k,v}, a third each; every weight ends as the
 * fixture's (IR-named) initial value, with nothing skipped or missing. The model's weights are
 * NaN before, so a tensor the load leaves alone shows. */
static void test_weights_from_pytorch_state_dict(void) {
    yp_plan p;
    yp_exec x;
    REQUIRE(make_exec(&p, &x, YP_SAVE_YOLOPLAN) == 0);
    int weights = 0;
    for (int t = 0; t < x.train.s->n_tensors; t++) {
        const yp_tensor *w = &x.train.s->tensors[t];
        if (w->kind != YP_KIND_WEIGHT) continue;
        float *v = yp_exec_tensor(&x, t);
        for (int64_t j = 0; j < w->shape.w; j++) v[j] = NAN;
        weights++;
    }
    yp_ckpt_transfer r;
    yp_err err;
    char log[4096] = "";
    FILE *lf = fmemopen(log, sizeof log, "w");
    REQUIRE(lf != NULL);
    int rc = yp_ckpt_load_weights(&x, YP_TEST_DATA "/step/transformer_state.safetensors", lf, &r, &err);
    fclose(lf);
    if (rc) fprintf(stderr, "  %s\n", err.msg);
    CHECK(rc == 0);
    printf("  %s", log);
    CHECK_EQ_I64(r.loaded, weights);
    CHECK_EQ_I64(r.skipped, 0);
    CHECK_EQ_I64(r.missing, 0);
    CHECK_EQ_I64(r.unused, 2); /* the two BNs' num_batches_tracked */
    int compared = 0;
    for (int i = 0; i < fx.n; i++) {
        if (strncmp(fx.r[i].name, "init/", 5)) continue;
        int t = yp_schedule_find(x.train.s, fx.r[i].name + 5);
        CHECK(t >= 0);
        if (t < 0) continue;
        const float *v = yp_exec_tensor(&x, t);
        int same = memcmp(v, fx.r[i].data, (size_t)fx.r[i].numel * sizeof *v) == 0;
        if (!same) fprintf(stderr, "  %s differs from PyTorch's\n", fx.r[i].name + 5);
        CHECK(same);
        compared++;
    }
    CHECK_EQ_I64(compared, weights);
    yp_exec_free(&x), yp_plan_free(&p);
}

/* ---------------------------------------------------------------- the importer's C3TR */

static int find_node(const yp_graph *g, const char *name) {
    for (int i = 0; i < g->n_nodes; i++)
        if (!strcmp(g->nodes[i].name, name)) return i;
    return -1;
}

static void test_c3tr_import(void) {
    yp_err err;
    yp_graph *g = yp_yaml_import(YP_TEST_DATA "/zoo/hub/yolov5s-transformer.yaml", 0, &err);
    if (!g) fprintf(stderr, "%s\n", err.msg);
    REQUIRE(g != NULL);
    CHECK_EQ_I64(yp_graph_params(g), 7235645); /* tests/data/zoo/params.tsv: YOLOv5's parse_model */
    const yp_layer *L = &g->layers[8];
    CHECK(!strcmp(L->module, "C3TR") && L->repeats == 1);
    int a = find_node(g, "model.8.m.tr.0.ma");
    REQUIRE(a >= 0);
    CHECK(g->nodes[a].op == YP_OP_ATTENTION && g->nodes[a].a.attn.heads == 4 && g->nodes[a].layer == 8);
    /* the Linears PyTorch feeds a permuted view of the tokens: linear and the first layer's q, k, v */
    static const char *const copying[] = {"model.8.m.linear", "model.8.m.tr.0.q", "model.8.m.tr.0.k", "model.8.m.tr.0.v"};
    int flagged = 0;
    for (int i = 0; i < g->n_nodes; i++) flagged += g->nodes[i].op == YP_OP_CONV2D && g->nodes[i].a.conv.torch_input_copy;
    CHECK_EQ_I64(flagged, 4);
    for (int i = 0; i < 4; i++) {
        int v = find_node(g, copying[i]);
        CHECK(v >= 0 && g->nodes[v].a.conv.torch_input_copy);
    }
    static const char *const names[] = {"model.8.cv1.conv", "model.8.m.linear", "model.8.m.add", "model.8.m.tr.0.q",
                                        "model.8.m.tr.0.k", "model.8.m.tr.0.v", "model.8.m.tr.0.ma.in_proj.q",
                                        "model.8.m.tr.0.ma.in_proj.k", "model.8.m.tr.0.ma.in_proj.v",
                                        "model.8.m.tr.0.ma.out_proj", "model.8.m.tr.0.fc1", "model.8.m.tr.0.fc2",
                                        "model.8.cv2.conv", "model.8.cat", "model.8.cv3.conv"};
    int prev = -1;
    for (size_t k = 0; k < sizeof names / sizeof *names; k++) { /* in PyTorch's order */
        int i = find_node(g, names[k]);
        if (i <= prev) fprintf(stderr, "  %s: node %d after %d\n", names[k], i, prev);
        CHECK(i > prev);
        prev = i;
    }
    int lin = find_node(g, "model.8.m.linear"), ip = find_node(g, "model.8.m.tr.0.ma.in_proj.v"),
        q = find_node(g, "model.8.m.tr.0.q");
    CHECK(lin >= 0 && g->nodes[lin].a.conv.bias && g->nodes[lin].a.conv.c_in == 256 && g->nodes[lin].a.conv.kh == 1 && g->nodes[lin].a.conv.kw == 1);
    CHECK(ip >= 0 && g->nodes[ip].a.conv.bias);
    CHECK(q >= 0 && !g->nodes[q].a.conv.bias);
    char *json = yp_ir_write_string(g); /* the IR keeps heads */
    REQUIRE(json != NULL);
    yp_graph *back = yp_ir_load_buffer(json, strlen(json), "c3tr.json", &err);
    CHECK(back && back->n_nodes == g->n_nodes && back->nodes[a].op == YP_OP_ATTENTION &&
          back->nodes[a].a.attn.heads == 4);
    free(json);
    yp_graph_free(back);
    yp_graph_free(g);
}

static void test_c3tr_heads_must_divide(void) {
    char dir[] = "/tmp/yp_c3tr_XXXXXX", path[64];
    REQUIRE(mkdtemp(dir) != NULL);
    snprintf(path, sizeof path, "%s/c3tr.yaml", dir);
    FILE *f = fopen(path, "w");
    REQUIRE(f != NULL);
    fputs("nc: 1\ndepth_multiple: 1.0\nwidth_multiple: 1.0\nchannel_multiple: 2\nanchors:\n  - [4, 4]\n"
          "backbone:\n  [[-1, 1, Conv, [12, 3, 2]],\n   [-1, 1, C3TR, [12]]]\n"
          "head:\n  [[[1], 1, Detect, [nc, anchors]]]\n", f);
    fclose(f);
    yp_err err;
    yp_graph *g = yp_yaml_import(path, 0, &err);
    CHECK(g == NULL);
    if (!g) CHECK_STR_HAS(err.msg, "C3TR's 4 attention heads must divide its hidden channels c2/2 = 6");
    yp_graph_free(g);
    yp_test_remove_tree(dir);
}

int main(void) {
    yp_err err;
    graph = yp_ir_load_file(YP_TEST_DATA "/ir/transformer.json", &err);
    if (!graph) return fprintf(stderr, "%s\n", err.msg), 1;
    if (fx_load(YP_TEST_DATA "/step/transformer.bin", &fx) || yp_gpu_parse("a100-40gb", &gpu, &err))
        return fprintf(stderr, "cannot read %s/step/transformer.bin\n", YP_TEST_DATA), 1;
    char why[256] = "";
    cpu = yp_backend_cpu_new(NULL, why, sizeof why);
    if (!cpu) return fprintf(stderr, "no CPU backend: %s\n", why), 1;
    YP_RUN(test_saved_bytes_equal_pytorch);
    YP_RUN(test_probs_kept_under_pytorch_only);
    YP_RUN(test_step_matches_pytorch);
    YP_RUN(test_weights_from_pytorch_state_dict);
    YP_RUN(test_c3tr_import);
    YP_RUN(test_c3tr_heads_must_divide);
    yp_backend_free(cpu);
    fx_free(&fx);
    yp_graph_free(graph);
    return yp_test_summary();
}
