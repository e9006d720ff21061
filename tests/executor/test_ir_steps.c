/* test_ir_steps.c - small IR networks end to end against PyTorch 1.13 running the modules' own
 * code (tests/ref/make_ir_fixture.py):
 *   - tests/data/ir/contract_expand.json (the import of tests/data/yaml/good/contract_expand.yaml:
 *     Focus, Contract(2), a Conv, an Expand(2) of the Contract's output, a stride-2 Conv,
 *     Contract(3), Expand(3), Concat, a stride-2 Conv, Detect): YOLOv5's Contract and Expand;
 *   - tests/data/ir/cross.json (the import of tests/data/yaml/good/cross.yaml: a Conv, a C3x, a
 *     CrossConv strided on each axis in turn and grouped, Detect): the non-square convs.
 * For each:
 *   - under the `pytorch` policy the bytes saved for backward equal saved_tensors_hooks' count
 *     (tests/data/<name>_saved.json) exactly, at two sizes and two batches (Contract and Expand
 *     save nothing: their backward steps read the output gradient only, as view, permute and
 *     contiguous keep nothing);
 *   - one CPU training step (batch 2) gives PyTorch's loss and every parameter gradient
 *     (tests/data/step/<name>.bin): through both Expands and Contracts, the Contract(2)'s output
 *     gradient the sum of its two consumers' (a Conv and the Expand, one writing and one adding);
 *     through the 1x3 and 3x1 convs, which the executor describes to the kernels axis by axis;
 *   - every saving policy, and checkpointing every layer, gives the same gradients, with guard
 *     canaries around every tensor (the executor checks them after each step), so no step writes
 *     outside its tensors and the recompute steps run the same rows. */
#include <math.h>

#include <cjson/cJSON.h>

#include "step_fixture.h"
#include "yp_test_exec.h"
#include "yp_executor.h"
#include "yp_executor_internal.h"
#include "yp_ir.h"
#include "yp_test.h"
#include "yp_test_json.h"
#include "yp_test_sched.h"

#define BATCH 2

/* One network: its files, the step's image side and the gradients its step has. */
typedef struct {
    const char *ir, *saved, *step;
    int64_t side;
    int grads;
} network;

static const network contract = {YP_TEST_DATA "/ir/contract_expand.json", YP_TEST_DATA "/contract_saved.json",
                                 YP_TEST_DATA "/step/contract.bin", 48,
                                 4 * 3 + 2}; /* four Convs' weight, BN gamma and beta; Detect's two */
static const network cross = {YP_TEST_DATA "/ir/cross.json", YP_TEST_DATA "/cross_saved.json",
                              YP_TEST_DATA "/step/cross.bin", 32,
                              8 * 3 + 2}; /* eight Convs (C3x's five, CrossConv's two, the stem) */

static const network *net; /* the one the tests run on (main loads it) */
static yp_graph *graph;

static yp_schedule *schedule(int64_t batch, int64_t side, yp_save_policy pol) {
    return yp_test_schedule(graph, batch, side, pol);
}

static void test_saved_bytes_equal_pytorch(void) {
    cJSON *fx = yp_test_json_file(net->saved);
    REQUIRE(fx != NULL);
    const cJSON *rows = cJSON_GetObjectItem(fx, "saved_bytes");
    int compared = 0;
    for (const cJSON *r = rows ? rows->child : NULL; r; r = r->next) {
        long long batch = 0, side = 0;
        REQUIRE(sscanf(r->string, "%lldx%lld", &batch, &side) == 2 && cJSON_IsNumber(r));
        yp_schedule *s = schedule(batch, side, YP_SAVE_PYTORCH);
        REQUIRE(s != NULL);
        int64_t ours = yp_schedule_saved_bytes(s), theirs = (int64_t)r->valuedouble;
        printf("  batch %lld at %lld: %lld bytes (torch %lld)\n", batch, side, (long long)ours, (long long)theirs);
        CHECK_EQ_I64(ours, theirs);
        compared++;
        yp_schedule_free(s);
    }
    CHECK_EQ_I64(compared, 3);
    cJSON_Delete(fx);
}


/* Under `pytorch`, which keeps everything a backward reads: each Contract's and Expand's backward
 * reads its output gradient and nothing else, and writes its input's gradient. */
static void test_backward_reads_only_the_gradient(void) {
    yp_schedule *s = schedule(1, net->side, YP_SAVE_PYTORCH);
    REQUIRE(s != NULL);
    int seen = 0;
    for (int v = 0; v < graph->n_nodes; v++) {
        yp_op op = graph->nodes[v].op;
        if (op != YP_OP_CONTRACT && op != YP_OP_EXPAND) continue;
        CHECK(yp_op_get(op)->bwd_reads == 0);
        const yp_step *b = yp_test_backward_of(s, v);
        REQUIRE(b != NULL);
        CHECK(b->a.x[0] == -1 && b->a.y[0] == -1 && b->a.dy[0] >= 0 && b->a.dx[0] >= 0);
        /* dy only, or dy and the gradient it adds to (the Contract(2) output's second consumer) */
        CHECK(b->n_in == 1 || (b->n_in == 2 && s->tensors[b->a.dx[0]].producer != (int)(b - s->steps)));
        seen++;
    }
    CHECK_EQ_I64(seen, 4);
    yp_schedule_free(s);
}

/* ---------------------------------------------------------------- one training step */

static fx_file fx;
static yp_backend *cpu;
static yp_gpu gpu;

/* A plan under policy and checkpoint set ckpt, its executor (with guards), the fixture's initial
 * weights and BN statistics loaded. 0, or -1. */
static int make_exec(yp_plan *p, yp_exec *x, yp_save_policy pol, uint64_t ckpt) {
    yp_err err;
    yp_candidate c = yp_candidate_default();
    c.batch = BATCH, c.img_w = c.img_h = net->side, c.mosaic = 0, c.labels_per_image = 2, c.policy = pol;
    c.ckpt_layers = ckpt;
    yp_exec_candidate_for(&c, cpu);
    if (yp_plan_build(graph, &c, &gpu, 0, 0, p, &err)) return fprintf(stderr, "plan: %s\n", err.msg), -1;
    if (yp_test_exec_init(x, p, cpu, 256, &fx)) return yp_plan_free(p), -1; /* 256: guards, the plan's alignment */
    return 0;
}

static void test_step_matches_pytorch(void) {
    const fx_record *img = fx_get(&fx, "images"), *tg = fx_get(&fx, "targets"), *ref = fx_get(&fx, "loss/1");
    REQUIRE(img && tg && ref);
    REQUIRE(img->numel == BATCH * net->side * net->side * 3);
    yp_plan base;
    yp_exec a;
    REQUIRE(make_exec(&base, &a, YP_SAVE_PYTORCH, 0) == 0);
    double loss[4], worst;
    yp_err err;
    int grads = yp_test_step_vs_fixture(&a, &fx, NULL, 1e-4, &worst);
    CHECK_EQ_I64(grads, net->grads);
    CHECK(worst <= 1e-4);
    const struct { yp_save_policy p; uint64_t ckpt; } other[] = {
        {YP_SAVE_YOLOPLAN, 0}, {YP_SAVE_CONCAT, 0}, {YP_SAVE_YOLOPLAN, 0x1ff}};
    for (size_t o = 0; o < sizeof other / sizeof *other; o++) {
        yp_plan p;
        yp_exec b;
        REQUIRE(make_exec(&p, &b, other[o].p, other[o].ckpt) == 0);
        CHECK(yp_exec_micro_step(&b, img->data, tg->data, tg->numel / 6, loss, &err) == 0);
        int recomputed = 0; /* checkpointed: Contract and Expand, or the non-square convs, run again */
        for (int i = 0; i < b.train.s->n_steps; i++) {
            const yp_step *st = &b.train.s->steps[i];
            const int of_interest = net == &contract ? st->op == YP_OP_CONTRACT || st->op == YP_OP_EXPAND
                                                     : st->op == YP_OP_CONV2D && b.train.s->g->nodes[st->node].a.conv.kh !=
                                                                                     b.train.s->g->nodes[st->node].a.conv.kw;
            recomputed += st->phase == YP_PHASE_RECOMPUTE && of_interest;
        }
        if (other[o].ckpt) CHECK(recomputed > 0);
        double diff = 0;
        for (int t = 0; t < a.train.s->n_tensors; t++) {
            const yp_tensor *w = &a.train.s->tensors[t];
            if (w->kind != YP_KIND_GRAD) continue;
            int u = yp_schedule_find(b.train.s, w->name);
            double e = u < 0 ? 1e9 : fx_rel_err(yp_exec_tensor(&b, u), yp_exec_tensor(&a, t), yp_shape_numel(w->shape));
            diff = e > diff ? e : diff;
        }
        printf("  %s policy, checkpoints %#llx: worst gradient difference %.2e\n", yp_save_policy_name(other[o].p),
               (unsigned long long)other[o].ckpt, diff);
        CHECK(diff <= 1e-5);
        yp_exec_free(&b), yp_plan_free(&p);
    }
    yp_exec_free(&a), yp_plan_free(&base);
}

/* Loads network n for the tests: its graph and step fixture. 0, or -1 after a message. */
static int use(const network *n) {
    yp_err err;
    if (graph) yp_graph_free(graph), fx_free(&fx);
    net = n, graph = yp_ir_load_file(n->ir, &err);
    if (!graph) return fprintf(stderr, "setup: %s\n", err.msg), -1;
    if (fx_load(n->step, &fx)) return fprintf(stderr, "setup: %s\n", n->step), -1;
    return 0;
}

static void test_contract_saved_bytes(void) { test_saved_bytes_equal_pytorch(); }
static void test_contract_step(void) { test_step_matches_pytorch(); }
static void test_cross_saved_bytes(void) { test_saved_bytes_equal_pytorch(); }
static void test_cross_step(void) { test_step_matches_pytorch(); }

int main(void) {
    yp_err err;
    char why[256] = "";
    cpu = yp_backend_cpu_new(NULL, why, sizeof why);
    if (!cpu || yp_gpu_parse("8GB", &gpu, &err)) return fprintf(stderr, "setup: %s\n", why), 1;
    if (use(&contract)) return 1;
    YP_RUN(test_contract_saved_bytes);
    YP_RUN(test_backward_reads_only_the_gradient);
    YP_RUN(test_contract_step);
    if (use(&cross)) return 1;
    YP_RUN(test_cross_saved_bytes);
    YP_RUN(test_cross_step);
    fx_free(&fx);
    yp_backend_free(cpu);
    yp_graph_free(graph);
    return yp_test_summary();
}
