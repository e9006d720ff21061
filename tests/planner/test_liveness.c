/* test_liveness.c - the liveness simulation against a direct count: at every step, the live bytes
 * (each tensor at its 256-aligned size, as the arena places it) and their split by kind equal a
 * sum over the tensors alive at that step; the peak is the largest such sum and its breakdown
 * adds up to it. Plans of yolov5n under each saving policy, with and without AMP, and the
 * 4-layer tests/data/ir/tiny.json. */
#include <stdlib.h>

#include "yp_ir.h"
#include "yp_plan.h"
#include "yp_test.h"
#include "yp_test_models.h"

/* Checks p.live against a recount of p.sched; returns the number of tensors whose bytes are not a
 * multiple of 256 (so that the test knows the alignment was exercised). */
static int check_against_recount(const yp_plan *p) {
    const yp_schedule *s = p->sched;
    const yp_liveness *l = &p->live;
    CHECK_EQ_I64(l->n_steps, s->n_steps);
    int unaligned = 0, steps_off = 0, kinds_off = 0;
    int64_t peak = -1;
    int peak_step = -1;
    int64_t *kind = malloc(sizeof *kind * YP_KIND_COUNT);
    if (!kind) {
        CHECK(0);
        return 0;
    }
    for (int t = 0; t < s->n_tensors; t++) unaligned += s->tensors[t].bytes % 256 != 0;
    for (int st = 0; st < s->n_steps; st++) {
        int64_t total = 0;
        memset(kind, 0, sizeof *kind * YP_KIND_COUNT);
        for (int t = 0; t < s->n_tensors; t++) {
            const yp_tensor *tt = &s->tensors[t];
            if (st < tt->first || st > tt->last) continue;
            int64_t b = (tt->bytes + 255) / 256 * 256;
            total += b, kind[tt->kind] += b;
        }
        steps_off += l->live[st] != total;
        for (int k = 0; k < YP_KIND_COUNT; k++) kinds_off += l->by_kind[(size_t)st * YP_KIND_COUNT + k] != kind[k];
        if (total > peak) peak = total, peak_step = st;
    }
    CHECK_EQ_I64(steps_off, 0);
    CHECK_EQ_I64(kinds_off, 0);
    CHECK_EQ_I64(l->peak, peak);
    CHECK_EQ_I64(l->peak_step, peak_step);
    CHECK_EQ_I64(p->arena.lower_bound, peak);
    int64_t sum = 0;
    for (int k = 0; k < YP_KIND_COUNT; k++) {
        sum += l->at_peak[k];
        CHECK_EQ_I64(l->at_peak[k], l->by_kind[(size_t)peak_step * YP_KIND_COUNT + k]);
    }
    CHECK_EQ_I64(sum, l->peak);
    CHECK(l->at_peak[YP_KIND_WEIGHT] > 0); /* the weights are live at every step */
    free(kind);
    return unaligned;
}

static void plan_and_check(const yp_graph *g, yp_save_policy policy, yp_precision prec, int64_t img) {
    yp_gpu gpu;
    yp_err err;
    yp_plan p;
    REQUIRE(yp_gpu_parse("a100-40gb", &gpu, &err) == 0);
    yp_candidate c = yp_candidate_default();
    c.batch = 2, c.img_w = c.img_h = img, c.policy = policy, c.precision = prec;
    if (yp_plan_build(g, &c, &gpu, 0, 0, &p, &err)) {
        fprintf(stderr, "%s\n", err.msg);
        CHECK(0);
        return;
    }
    int unaligned = check_against_recount(&p);
    CHECK(unaligned > 0);
    printf("  %s, %s, %lld px: peak %lld bytes at step %d of %d (%d tensors of unaligned size)\n",
           yp_save_policy_name(policy), yp_precision_name(prec), (long long)img, (long long)p.live.peak,
           p.live.peak_step, p.live.n_steps, unaligned);
    yp_plan_free(&p);
}

static void test_bundled_model(void) {
    yp_graph *g = yp_test_model("yolov5n");
    REQUIRE(g != NULL);
    for (int pol = 0; pol < YP_SAVE_COUNT; pol++) plan_and_check(g, (yp_save_policy)pol, YP_PREC_FP32, 96);
    plan_and_check(g, YP_SAVE_YOLOPLAN, YP_PREC_AMP_FP16, 160);
    yp_graph_free(g);
}

static void test_tiny_graph(void) {
    yp_err err;
    yp_graph *g = yp_ir_load_file(YP_TEST_DATA "/ir/tiny.json", &err);
    if (!g) fprintf(stderr, "%s\n", err.msg);
    REQUIRE(g != NULL);
    plan_and_check(g, YP_SAVE_PYTORCH, YP_PREC_FP32, 64);
    yp_graph_free(g);
}

int main(void) {
    YP_RUN(test_bundled_model);
    YP_RUN(test_tiny_graph);
    return yp_test_summary();
}
