/* test_replay.c - the training step's recorded runs (executor/replay.c), on the CPU: the CPU
 * backend does not record (CUDA graphs are the GPU's), so these tests check what the executor
 * decides and how it falls back, not a replay:
 *   - the runs: from any step, yp_exec_run_end stops at the first step that is not a node's
 *     forward, recompute or backward step of an op without host I/O, so the loss, the
 *     optimizer and attention's steps (which upload scalars) are never recorded; for yolov5n
 *     the runs cover every node step of the micro-step but the first;
 *   - recording only where it can work: never without the backend's graph entries, with guards
 *     or with the profile on;
 *   - a backend whose recording fails: the executor says why once (x->graphs.why, stderr), runs
 *     the same steps plainly and stays plain, so two micro-steps and an update give the weights,
 *     gradients and momentum of an executor that never tried, bit for bit. */
#include <string.h>

#include "yp_executor.h"
#include "yp_executor_internal.h"
#include "yp_ir.h"
#include "yp_test.h"
#include "yp_test_models.h"

#define SIDE 16
#define BATCH 2

static yp_backend *cpu;
static yp_gpu gpu;
static int begins;

static int is_node_step(const yp_step *st) {
    return st->op >= 0 && (st->phase == YP_PHASE_FORWARD || st->phase == YP_PHASE_RECOMPUTE ||
                           st->phase == YP_PHASE_BACKWARD);
}

/* Checks the runs of s from every step; returns the node steps inside runs started at a step
 * that follows one outside a run (as the micro-step walks them from step 1). */
static int check_runs(const yp_schedule *s, int *attention_in_run) {
    int covered = 0;
    *attention_in_run = 0;
    for (int i = 0; i < s->n_steps; i++) {
        int end = yp_exec_run_end(s, i);
        CHECK(end >= i && end <= s->n_steps);
        for (int k = i; k < end; k++) {
            CHECK(is_node_step(&s->steps[k]));
            *attention_in_run += s->steps[k].op == YP_OP_ATTENTION;
        }
        if (end < s->n_steps) CHECK(!is_node_step(&s->steps[end]) || s->steps[end].op == YP_OP_ATTENTION);
    }
    for (int i = 1; i < s->n_steps; i++) {
        int end = yp_exec_run_end(s, i);
        if (end > i) covered += end - i, i = end - 1;
    }
    return covered;
}

static int plan_of(const yp_graph *g, int side, yp_plan *p) {
    yp_candidate c = yp_candidate_default();
    c.batch = BATCH, c.img_w = c.img_h = side, c.mosaic = 0, c.labels_per_image = 2;
    yp_exec_candidate_for(&c, cpu);
    yp_err err;
    int rc = yp_plan_build(g, &c, &gpu, 0, 0, p, &err);
    if (rc) fprintf(stderr, "plan: %s\n", err.msg);
    return rc;
}

static void test_runs(void) {
    yp_graph *g = yp_test_model("yolov5n");
    REQUIRE(g != NULL);
    yp_plan p;
    REQUIRE(plan_of(g, 64, &p) == 0);
    int attn, nodes = 0;
    for (int i = 1; i < p.sched->n_steps; i++) nodes += is_node_step(&p.sched->steps[i]);
    CHECK_EQ_I64(check_runs(p.sched, &attn), nodes);
    CHECK_EQ_I64(attn, 0);
    yp_plan_free(&p);
    yp_graph_free(g);
    yp_err err;
    g = yp_ir_load_file(YP_TEST_DATA "/ir/transformer.json", &err);
    REQUIRE(g != NULL);
    REQUIRE(plan_of(g, 16, &p) == 0);
    int has_attention = 0;
    for (int i = 0; i < p.sched->n_steps; i++) has_attention += p.sched->steps[i].op == YP_OP_ATTENTION;
    CHECK(has_attention > 0);
    check_runs(p.sched, &attn);
    CHECK_EQ_I64(attn, 0);
    yp_plan_free(&p);
    yp_graph_free(g);
}

/* A recording that cannot start, as a backend whose capture is refused. */
static int begin_refused(yp_backend *be) {
    (void)be;
    begins++;
    return -1;
}
static int end_unused(yp_backend *be, void **graph) { return (void)be, *graph = NULL, -1; }
static int launch_unused(yp_backend *be, void *graph) { return (void)be, (void)graph, -1; }
static void free_unused(yp_backend *be, void *graph) { (void)be, (void)graph; }

static void set_graph_entries(int on) {
    cpu->graph_begin = on ? begin_refused : NULL, cpu->graph_end = on ? end_unused : NULL;
    cpu->graph_launch = on ? launch_unused : NULL, cpu->graph_free = on ? free_unused : NULL;
}

/* Two micro-steps on fixed batches and an update. */
static int train(yp_exec *x) {
    float img[BATCH * SIDE * SIDE * 3], tg[6 * 2 * BATCH];
    for (int i = 0; i < BATCH * SIDE * SIDE * 3; i++) img[i] = (float)((i * 37) % 101) / 101.0f;
    for (int i = 0; i < 2 * BATCH; i++) {
        const float row[6] = {(float)(i / 2), 0, 0.3f + 0.1f * (float)(i % 3), 0.45f, 0.3f, 0.25f};
        memcpy(tg + 6 * i, row, sizeof row);
    }
    yp_err err;
    double loss[4];
    for (int k = 0; k < 2; k++)
        if (yp_exec_micro_step(x, img, tg, 2 * BATCH, loss, &err)) return fprintf(stderr, "step: %s\n", err.msg), -1;
    if (yp_exec_update(x, &err)) return fprintf(stderr, "update: %s\n", err.msg), -1;
    return 0;
}

static void test_fallback(void) {
    yp_err err;
    yp_graph *g = yp_ir_load_file(YP_TEST_DATA "/ir/tiny.json", &err);
    REQUIRE(g != NULL);
    yp_plan p;
    REQUIRE(plan_of(g, SIDE, &p) == 0);
    yp_exec plain, tried;
    REQUIRE(yp_exec_init(&plain, &p, cpu, 0, 7, &err) == 0);
    CHECK(!yp_exec_replaying(&plain, &plain.train)); /* the CPU backend has no graph entries */
    CHECK(train(&plain) == 0);
    set_graph_entries(1);
    REQUIRE(yp_exec_init(&tried, &p, cpu, 0, 7, &err) == 0);
    CHECK(yp_exec_replaying(&tried, &tried.train));
    CHECK(yp_exec_profile(&tried, 1) == 0);
    CHECK(!yp_exec_replaying(&tried, &tried.train)); /* the profile times each step */
    yp_exec_profile(&tried, 0);
    begins = 0;
    CHECK(train(&tried) == 0);
    CHECK_EQ_I64(begins, 1); /* tried once, then plain */
    CHECK(tried.graphs.off);
    CHECK_STR_HAS(tried.graphs.why, "recording steps 1..");
    CHECK(!yp_exec_replaying(&tried, &tried.train));
    int64_t differ = 0;
    for (int t = 0; t < p.sched->n_tensors; t++) {
        const yp_tensor *w = &p.sched->tensors[t];
        if (w->kind != YP_KIND_WEIGHT && w->kind != YP_KIND_OPTSTATE && w->kind != YP_KIND_EMA) continue;
        differ += memcmp(yp_exec_tensor(&plain, t), yp_exec_tensor(&tried, t), (size_t)w->bytes) != 0;
    }
    CHECK_EQ_I64(differ, 0);
    yp_exec_free(&tried);
    /* guards check each step: no recording */
    REQUIRE(yp_exec_init(&tried, &p, cpu, 256, 7, &err) == 0);
    CHECK(!yp_exec_replaying(&tried, &tried.train));
    yp_exec_free(&tried);
    set_graph_entries(0);
    yp_exec_free(&plain);
    yp_plan_free(&p);
    yp_graph_free(g);
}

int main(void) {
    char why[256];
    yp_err err;
    cpu = yp_backend_cpu_new(NULL, why, sizeof why);
    if (!cpu) return fprintf(stderr, "no CPU backend: %s\n", why), 1;
    if (yp_gpu_parse("a100-40gb", &gpu, &err)) return fprintf(stderr, "%s\n", err.msg), 1;
    YP_RUN(test_runs);
    YP_RUN(test_fallback);
    yp_backend_free(cpu);
    return yp_test_summary();
}
