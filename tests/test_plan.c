/* test_plan.c - the planner: the scaled family equals the real schedule at any size, the search
 * returns plans whose real arena fits and is valid, plan.json round-trips and refuses tampering,
 * the conv scratch model travels in it by name, so does the arena alignment, which the liveness
 * and the arena honour, and what-if remedies save memory. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

#include "yp_family.h"
#include "yp_ir.h"
#include "yp_plan_io.h"
#include "yp_search.h"
#include "yp_test.h"
#include "yp_test_models.h"
#include "yp_whatif.h"

/* Unaligned peak of live bytes; whole-step tensors skipped if skip_whole. */
static double peak_unaligned(const yp_schedule *s, int skip_whole, double *whole) {
    double *d = calloc((size_t)s->n_steps + 1, sizeof *d), run = 0, peak = 0;
    *whole = 0;
    for (int t = 0; t < s->n_tensors; t++) {
        const yp_tensor *x = &s->tensors[t];
        int w = x->first == 0 && x->last == s->n_steps - 1;
        if (w) *whole += (double)x->bytes;
        if (w && skip_whole) continue;
        d[x->first] += (double)x->bytes, d[x->last + 1] -= (double)x->bytes;
    }
    for (int i = 0; i < s->n_steps; i++) run += d[i], peak = run > peak ? run : peak;
    free(d);
    return peak;
}

/* The family's prediction equals the real schedules' peaks and cost, for assorted candidates. */
static void test_family_is_exact(void) {
    yp_graph *g = yp_test_model("yolov5s");
    REQUIRE(g != NULL);
    yp_gpu gpu;
    yp_err err;
    CHECK(yp_gpu_parse("a100-40gb", &gpu, &err) == 0);
    struct { int64_t b, w, h; yp_precision p; uint64_t ck; int mosaic, ms, freeze; yp_optimizer opt; } cases[] = {
        {1, 320, 320, YP_PREC_FP32, 0, 1, 0, 0, YP_OPT_SGD},
        {16, 640, 640, YP_PREC_AMP_FP16, 0, 1, 0, 0, YP_OPT_SGD},
        {7, 640, 384, YP_PREC_AMP_BF16, 1u << 2 | 1u << 17, 0, 0, 0, YP_OPT_ADAM},
        {3, 1280, 1280, YP_PREC_FP32, 1u << 4 | 1u << 6 | 1u << 9, 1, 1, 0, YP_OPT_ADAMW},
        {32, 416, 416, YP_PREC_AMP_FP16, 0, 1, 0, 10, YP_OPT_SGD},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        yp_candidate c = yp_candidate_default();
        c.batch = cases[i].b, c.img_w = cases[i].w, c.img_h = cases[i].h, c.precision = cases[i].p;
        c.ckpt_layers = cases[i].ck, c.mosaic = cases[i].mosaic, c.multi_scale = cases[i].ms;
        c.freeze = cases[i].freeze, c.optimizer = cases[i].opt;
        yp_family f;
        CHECK(yp_family_build(g, &c, &gpu, &f, &err) == 0);
        yp_sched_opts to = yp_candidate_train_opts(&c, 32), vo = yp_candidate_val_opts(&c, g->n_layers);
        yp_schedule *ts = yp_schedule_build(g, &to, &err), *vs = yp_schedule_build(g, &vo, &err);
        CHECK(ts && vs);
        if (ts && vs) {
            double whole, vwhole, train = peak_unaligned(ts, 0, &whole), val = peak_unaligned(vs, 1, &vwhole);
            double expect = train > whole + val ? train : whole + val, got = yp_family_peak(&f, g, &c, c.batch);
            if (fabs(got - expect) > 0.5) fprintf(stderr, "case %zu: family %.0f vs real %.0f\n", i, got, expect);
            CHECK(fabs(got - expect) <= 0.5);
            yp_timing a, b;
            yp_family_timing(&f, g, &c, &a);
            yp_cost_schedule(ts, &gpu, c.precision, &b);
            CHECK(fabs(a.update_ms - b.update_ms) <= 1e-9 * b.update_ms);
        }
        yp_schedule_free(ts);
        yp_schedule_free(vs);
        yp_family_free(&f);
    }
    yp_graph_free(g);
}

/* The largest batch is the largest: it fits and one more does not. */
static void test_max_batch(void) {
    yp_graph *g = yp_test_model("yolov5s");
    REQUIRE(g != NULL);
    yp_candidate c = yp_candidate_default();
    yp_family f;
    yp_err err;
    yp_gpu gpu;
    yp_gpu_parse("8GB", &gpu, &err);
    CHECK(yp_family_build(g, &c, &gpu, &f, &err) == 0);
    double budget = 6.0 * (1 << 30);
    int64_t b = yp_family_max_batch(&f, g, &c, budget, YP_MAX_BATCH);
    CHECK(b > 1);
    CHECK(yp_family_peak(&f, g, &c, b) <= budget);
    CHECK(yp_family_peak(&f, g, &c, b + 1) > budget);
    CHECK_EQ_I64(yp_family_max_batch(&f, g, &c, 1e6, YP_MAX_BATCH), 0);
    yp_family_free(&f);
    yp_graph_free(g);
}

static void test_search_and_realize(void) {
    yp_graph *g = yp_test_model("yolov5s");
    REQUIRE(g != NULL);
    yp_gpu gpu;
    yp_err err;
    CHECK(yp_gpu_parse("8GB", &gpu, &err) == 0);
    yp_search_opts o = yp_search_opts_default();
    o.n_models = 1, o.models[0] = g, o.n_sizes = 1, o.size_w[0] = o.size_h[0] = 640;
    yp_search_result r;
    CHECK(yp_search(&o, &gpu, 0, &r, &err) == 0);
    CHECK(r.n_rows > 0);
    /* every (precision, mosaic, checkpoint set of the front) is one candidate: 3 x 2 x front */
    yp_front front;
    CHECK(yp_front_compute(g, 64, 64, &front, &err) == 0);
    CHECK(front.n >= 2);
    CHECK_EQ_I64(r.n_candidates, 3 * 2 * (int64_t)front.n);
    yp_front_free(&front);
    /* fastest first, to 3 significant digits (equally fast rows are ordered by defaults) */
    for (int i = 1; i < r.n_rows; i++) CHECK(r.rows[i].time.images_per_s <= r.rows[i - 1].time.images_per_s * 1.005);
    for (int i = 0; i < r.n_rows && i < 3; i++) {
        yp_plan p;
        CHECK(yp_search_realize(&o, &r.rows[i], &gpu, 0, 0, &p, &err) == 0);
        CHECK(p.fits);
        CHECK(p.arena_bytes + gpu.fixed_bytes <= gpu.mem_bytes);
        CHECK(yp_arena_check(p.sched, &p.arena, &err) == 0);
        CHECK((double)p.arena.size / (double)p.live.peak <= 1.02);
        CHECK(p.cand.batch >= r.rows[i].cand.batch - 2); /* alignment costs at most a little */
        yp_plan_free(&p);
    }
    yp_search_free(&r);
    /* nothing fits: yolov5x on 1 GiB */
    yp_graph *x = yp_test_model("yolov5x");
    CHECK(yp_gpu_parse("1GB", &gpu, &err) == 0);
    o.models[0] = x;
    CHECK(yp_search(&o, &gpu, 0, &r, &err) == 0);
    CHECK_EQ_I64(r.n_rows, 0);
    CHECK(r.smallest_bytes > (double)gpu.mem_bytes);
    CHECK(r.smallest.cand.batch == 1 && r.smallest.cand.mosaic == 0);
    yp_search_free(&r);
    yp_graph_free(x);
    yp_graph_free(g);
}

static void test_plan_json_round_trip(void) {
    yp_graph *g = yp_test_model("yolov5n"), *g2 = NULL;
    REQUIRE(g != NULL);
    yp_gpu gpu;
    yp_err err;
    yp_gpu_parse("t4", &gpu, &err);
    yp_candidate c = yp_candidate_default();
    c.batch = 4, c.img_w = c.img_h = 256, c.precision = YP_PREC_AMP_FP16, c.ckpt_layers = 1u << 2;
    yp_plan p, q;
    CHECK(yp_plan_build(g, &c, &gpu, 1 << 20, 0, &p, &err) == 0);
    char path[] = "/tmp/yp_test_plan_XXXXXX";
    int fd = mkstemp(path);
    close(fd);
    CHECK(yp_plan_save(&p, path, &err) == 0);
    CHECK(yp_plan_load(path, &q, &g2, &err) == 0);
    if (g2) {
        CHECK_EQ_I64(q.arena_bytes, p.arena_bytes);
        CHECK_EQ_I64(q.sched->n_tensors, p.sched->n_tensors);
        CHECK(memcmp(q.arena.offsets, p.arena.offsets, (size_t)p.sched->n_tensors * sizeof(int64_t)) == 0);
        CHECK(q.cand.ckpt_layers == c.ckpt_layers && q.cand.precision == c.precision && q.reserve_bytes == 1 << 20);
        yp_plan_free(&q);
        yp_graph_free(g2);
    }
    /* tamper with the first offset that is not 0 */
    FILE *f = fopen(path, "rb");
    static char text[1 << 24];
    size_t n = f ? fread(text, 1, sizeof text - 1, f) : 0;
    if (f) fclose(f);
    text[n] = 0;
    char *at = strstr(text, "\"offset\":");
    at = at ? strstr(at + 1, "\"offset\":") : NULL; /* the second tensor's offset, not 0 */
    CHECK(at != NULL);
    if (at) {
        at[9] = at[9] == '9' ? '1' : '9';
        f = fopen(path, "wb");
        fwrite(text, 1, n, f);
        fclose(f);
        CHECK(yp_plan_load(path, &q, &g2, &err) == -1);
        CHECK_STR_HAS(err.msg, "differs from the re-planned tensor");
    }
    unlink(path);
    CHECK(yp_plan_load("/nonexistent/plan.json", &q, &g2, &err) == -1);
    CHECK_STR_HAS(err.msg, "cannot open");
    yp_plan_free(&p);
    yp_graph_free(g);
}

static void test_whatif(void) {
    yp_graph *g = yp_test_model("yolov5s"), *n = yp_test_model("yolov5n");
    REQUIRE(g != NULL && n != NULL);
    yp_gpu gpu;
    yp_err err;
    yp_gpu_parse("8GB", &gpu, &err);
    yp_candidate c = yp_candidate_default();
    c.batch = 128;
    yp_whatif w;
    CHECK(yp_whatif_run(g, n, &c, &gpu, 0, &w, &err) == 0);
    CHECK(!w.base.fits);
    CHECK(w.n >= 8);
    int amp = 0, half = 0;
    for (int i = 0; i < w.n; i++) {
        if (!strcmp(w.r[i].what, "AMP fp16")) {
            amp = 1;
            CHECK(w.r[i].plan.device_bytes < w.base.device_bytes);
        }
        if (w.r[i].plan.cand.batch == 64) {
            half = 1;
            CHECK(w.r[i].plan.device_bytes < w.base.device_bytes);
        }
    }
    CHECK(amp && half);
    yp_whatif_free(&w);
    yp_graph_free(g);
    yp_graph_free(n);
}

/* A backend model the planner does not know, as a caller's resolver supplies it: "twice:K" plans
 * K times the im2col scratch. */
static int twice_rule(void *ctx, const yp_conv_query *q, int64_t *per_image, int64_t *fixed, yp_err *err) {
    yp_conv_scratch_im2col(NULL, q, per_image, fixed, err);
    *per_image *= (int64_t)(intptr_t)ctx, *fixed *= (int64_t)(intptr_t)ctx;
    return 0;
}

static int twice_resolve(const char *name, yp_scratch_rule *rule, yp_err *err) {
    if (strncmp(name, "twice:", 6)) return 1;
    int k = atoi(name + 6);
    if (k < 1 || k > 4) return yp_err_set(err, "K must be 1..4");
    rule->fn = twice_rule, rule->ctx = (void *)(intptr_t)k;
    return 0;
}

/* The conv scratch model is a named part of the candidate: written to plan.json as
 * candidate.conv_scratch, resolved again on load through the caller's resolver (a plan the
 * caller cannot resolve is refused, naming the model), and it changes the planned scratch. */
static void test_scratch_model_round_trip(void) {
    static const yp_scratch_resolver twice = {"twice:K", twice_resolve};
    yp_graph *g = yp_test_model("yolov5n"), *g2 = NULL;
    REQUIRE(g != NULL);
    yp_gpu gpu;
    yp_err err;
    yp_gpu_parse("8GB", &gpu, &err);
    yp_candidate c = yp_candidate_default();
    c.batch = 2, c.img_w = c.img_h = 128;
    CHECK_STR_HAS(yp_candidate_scratch_name(&c), "im2col");
    cJSON *j = yp_candidate_json(g, &c);
    const cJSON *sc = cJSON_GetObjectItem(j, "conv_scratch");
    CHECK(cJSON_IsString(sc) && !strcmp(sc->valuestring, "im2col"));
    cJSON_Delete(j);
    yp_plan p0, p2, q;
    REQUIRE(yp_plan_build(g, &c, &gpu, 0, 0, &p0, &err) == 0);
    CHECK(yp_candidate_set_scratch(&c, "twice:2", NULL, &err) == -1); /* no resolver: the planner knows im2col only */
    CHECK_STR_HAS(err.msg, "\"twice:2\"");
    CHECK(yp_candidate_set_scratch(&c, "twice:9", &twice, &err) == -1);
    CHECK_STR_HAS(err.msg, "K must be 1..4");
    CHECK(yp_candidate_set_scratch(&c, "cudnn:auto:0", &twice, &err) == -1);
    CHECK_STR_HAS(err.msg, "known: im2col, twice:K");
    REQUIRE(yp_candidate_set_scratch(&c, "twice:2", &twice, &err) == 0);
    REQUIRE(yp_plan_build(g, &c, &gpu, 0, 0, &p2, &err) == 0);
    int64_t ws0 = 0, ws2 = 0;
    for (int t = 0; t < p0.sched->n_tensors; t++)
        if (p0.sched->tensors[t].kind == YP_KIND_WORKSPACE) ws0 += p0.sched->tensors[t].bytes;
    for (int t = 0; t < p2.sched->n_tensors; t++)
        if (p2.sched->tensors[t].kind == YP_KIND_WORKSPACE) ws2 += p2.sched->tensors[t].bytes;
    CHECK(ws0 > 0);
    CHECK_EQ_I64(ws2, 2 * ws0);
    /* a name copied without its rule is refused, not planned as im2col */
    yp_candidate bare = c;
    bare.scratch_rule.fn = NULL;
    CHECK(yp_plan_build(g, &bare, &gpu, 0, 0, &q, &err) == -1);
    CHECK_STR_HAS(err.msg, "not resolved");
    char path[] = "/tmp/yp_test_plan_scratch_XXXXXX";
    int fd = mkstemp(path);
    close(fd);
    CHECK(yp_plan_save(&p2, path, &err) == 0);
    CHECK(yp_plan_load(path, &q, &g2, &err) == -1);
    CHECK_STR_HAS(err.msg, "candidate.conv_scratch");
    CHECK_STR_HAS(err.msg, "\"twice:2\"");
    CHECK(yp_plan_load_with(path, &twice, &q, &g2, &err) == 0);
    if (g2) {
        CHECK(!strcmp(q.cand.scratch, "twice:2"));
        CHECK_EQ_I64(q.arena_bytes, p2.arena_bytes);
        yp_plan_free(&q);
        yp_graph_free(g2);
    }
    unlink(path);
    yp_plan_free(&p0);
    yp_plan_free(&p2);
    yp_graph_free(g);
}

/* Replaces the first `from` in text (n bytes, room for more) by `to`; returns the new length, or
 * 0 when from does not occur. */
static size_t replace_once(char *text, size_t n, const char *from, const char *to) {
    char *at = strstr(text, from);
    if (!at) return 0;
    size_t lf = strlen(from), lt = strlen(to);
    memmove(at + lt, at + lf, n - (size_t)(at - text) - lf + 1);
    memcpy(at, to, lt);
    return n - lf + lt;
}

static size_t read_text(const char *path, char *text, size_t cap) {
    FILE *f = fopen(path, "rb");
    size_t n = f ? fread(text, 1, cap - 1, f) : 0;
    if (f) fclose(f);
    text[n] = 0;
    return n;
}

static void write_text(const char *path, const char *text, size_t n) {
    FILE *f = fopen(path, "wb");
    if (f) fwrite(text, 1, n, f), fclose(f);
}

/* The arena alignment is the candidate's: a plan aligned to 512 has every offset a multiple of
 * 512 (the checker holds it to that), a lower bound and an arena at least the 256 plan's; the value
 * travels in plan.json, where a file without it is a 256 one; a value that is not a power of two
 * in 16..4096 is refused by the planner and by the loader, naming candidate.alignment. */
static void test_arena_alignment(void) {
    yp_graph *g = yp_test_model("yolov5n"), *g2 = NULL;
    REQUIRE(g != NULL);
    yp_gpu gpu;
    yp_err err;
    yp_gpu_parse("8GB", &gpu, &err);
    yp_candidate c = yp_candidate_default();
    CHECK_EQ_I64(c.alignment, 256);
    c.batch = 2, c.img_w = c.img_h = 128;
    yp_candidate c512 = c;
    c512.alignment = 512;
    yp_plan p256, p512, q;
    REQUIRE(yp_plan_build(g, &c, &gpu, 0, 0, &p256, &err) == 0);
    REQUIRE(yp_plan_build(g, &c512, &gpu, 0, 0, &p512, &err) == 0);
    CHECK(p256.arena.align == 256 && p512.arena.align == 512 && p512.live.align == 512);
    int misaligned = 0;
    for (int t = 0; t < p512.sched->n_tensors; t++) misaligned += p512.arena.offsets[t] % 512 != 0;
    CHECK_EQ_I64(misaligned, 0);
    CHECK(yp_arena_check(p512.sched, &p512.arena, &err) == 0);
    /* BN parameters of 16..256 channels take 512 bytes instead of 256: strictly more */
    CHECK(p512.live.peak > p256.live.peak);
    CHECK(p512.arena.size >= p512.live.peak && p512.arena.size >= p256.arena.size);
    CHECK(p512.arena_bytes >= p256.arena_bytes);
    int t1 = 1;
    while (t1 < p512.sched->n_tensors && p512.sched->tensors[t1].bytes == 0) t1++;
    p512.arena.offsets[t1] += 256; /* 256-aligned, not 512 */
    CHECK(yp_arena_check(p512.sched, &p512.arena, &err) == -1);
    CHECK_STR_HAS(err.msg, "misaligned");
    p512.arena.offsets[t1] -= 256;

    cJSON *j = yp_candidate_json(g, &c512);
    const cJSON *al = cJSON_GetObjectItem(j, "alignment");
    CHECK(cJSON_IsNumber(al) && al->valuedouble == 512);
    cJSON_Delete(j);
    char path[] = "/tmp/yp_test_plan_align_XXXXXX";
    int fd = mkstemp(path);
    close(fd);
    static char text[1 << 24];
    CHECK(yp_plan_save(&p512, path, &err) == 0);
    CHECK(yp_plan_load(path, &q, &g2, &err) == 0);
    if (g2) {
        CHECK_EQ_I64(q.cand.alignment, 512);
        CHECK_EQ_I64(q.arena_bytes, p512.arena_bytes);
        CHECK(memcmp(q.arena.offsets, p512.arena.offsets, (size_t)p512.sched->n_tensors * sizeof(int64_t)) == 0);
        yp_plan_free(&q);
        yp_graph_free(g2);
    }
    static const char *const bad_json[] = {"\"alignment\":100", "\"alignment\":8192", "\"alignment\":\"512\"",
                                           "\"alignment\":512.5"};
    for (size_t k = 0; k < sizeof bad_json / sizeof *bad_json; k++) {
        size_t n = read_text(path, text, sizeof text);
        n = replace_once(text, n, "\"alignment\":512", bad_json[k]);
        CHECK(n > 0);
        write_text(path, text, n);
        CHECK(yp_plan_load(path, &q, &g2, &err) == -1);
        CHECK_STR_HAS(err.msg, "candidate.alignment");
        CHECK(strchr(err.msg, '\n') == NULL);
        CHECK(yp_plan_save(&p512, path, &err) == 0);
    }
    /* a file from before the key: a 256 plan */
    CHECK(yp_plan_save(&p256, path, &err) == 0);
    size_t n = read_text(path, text, sizeof text);
    n = replace_once(text, n, ",\"alignment\":256", "");
    CHECK(n > 0 && !strstr(text, "alignment"));
    write_text(path, text, n);
    CHECK(yp_plan_load(path, &q, &g2, &err) == 0);
    if (g2) {
        CHECK_EQ_I64(q.cand.alignment, 256);
        CHECK(memcmp(q.arena.offsets, p256.arena.offsets, (size_t)p256.sched->n_tensors * sizeof(int64_t)) == 0);
        yp_plan_free(&q);
        yp_graph_free(g2);
    }
    unlink(path);
    static const int64_t bad[] = {100, 8, 8192, 0, -256, 768};
    for (size_t k = 0; k < sizeof bad / sizeof *bad; k++) {
        yp_candidate b = c;
        b.alignment = bad[k];
        CHECK(yp_plan_build(g, &b, &gpu, 0, 0, &q, &err) == -1);
        CHECK_STR_HAS(err.msg, "candidate.alignment");
    }
    yp_plan_free(&p256);
    yp_plan_free(&p512);
    yp_graph_free(g);
}

int main(void) {
    YP_RUN(test_family_is_exact);
    YP_RUN(test_max_batch);
    YP_RUN(test_search_and_realize);
    YP_RUN(test_plan_json_round_trip);
    YP_RUN(test_scratch_model_round_trip);
    YP_RUN(test_arena_alignment);
    YP_RUN(test_whatif);
    return yp_test_summary();
}
