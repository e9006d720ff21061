/* test_plan.c - the planner: the scaled family equals the real schedule at any size, the search
 * returns plans whose real arena fits and is valid, plan.json round-trips and refuses tampering,
 * the conv scratch model travels in it by name, so does the arena alignment, which the liveness
 * and the arena honour, and the data pipeline, which sizes the host memory; validation's plan maps
 * its parameters onto training's EMA copies (the checker refuses a corrupted mapping, plan.json
 * carries it and a disagreeing file is refused). */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

#include "yp_family.h"
#include "yp_ir.h"
#include "yp_plan_io.h"
#include "yp_search.h"
#include "yp_test.h"
#include "yp_yaml.h"
#include "yp_test_models.h"

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

/* The family's prediction equals the real schedules' peaks and cost, for assorted candidates
 * (one with the BN+SiLU fusion, whose pass the family must see), for yolov5s and for
 * yolov5s-transformer (whose attention scores grow with the square of the pixels). */
static void family_is_exact(yp_graph *g) {
    REQUIRE(g != NULL);
    yp_gpu gpu;
    yp_err err;
    CHECK(yp_gpu_parse("a100-40gb", &gpu, &err) == 0);
    struct { int64_t b, w, h; yp_precision p; uint64_t ck; int mosaic, ms, freeze; yp_optimizer opt; unsigned fus; } cases[] = {
        {1, 320, 320, YP_PREC_FP32, 0, 1, 0, 0, YP_OPT_SGD, 0},
        {16, 640, 640, YP_PREC_AMP_FP16, 0, 1, 0, 0, YP_OPT_SGD, 0},
        {7, 640, 384, YP_PREC_AMP_BF16, 1u << 2 | 1u << 17, 0, 0, 0, YP_OPT_ADAM, 0},
        {3, 1280, 1280, YP_PREC_FP32, 1u << 4 | 1u << 6 | 1u << 9, 1, 1, 0, YP_OPT_ADAMW, 0},
        {32, 416, 416, YP_PREC_AMP_FP16, 0, 1, 0, 10, YP_OPT_SGD, 0},
        {5, 416, 320, YP_PREC_FP32, 1u << 6, 0, 0, 0, YP_OPT_SGD, YP_FUSE_BN_SILU},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        yp_candidate c = yp_candidate_default();
        c.batch = cases[i].b, c.img_w = cases[i].w, c.img_h = cases[i].h, c.precision = cases[i].p;
        c.ckpt_layers = cases[i].ck, c.mosaic = cases[i].mosaic, c.multi_scale = cases[i].ms;
        c.freeze = cases[i].freeze, c.optimizer = cases[i].opt, c.fusions = cases[i].fus;
        yp_family f;
        CHECK(yp_family_build(g, &c, &gpu, &f, &err) == 0);
        yp_sched_opts to = yp_candidate_train_opts(&c, 32), vo = yp_candidate_val_opts(&c, 32, g->n_layers);
        yp_schedule *ts = yp_schedule_build(g, &to, &err), *vs = yp_schedule_build(g, &vo, &err);
        CHECK(ts && vs);
        CHECK_EQ_I64(to.fusions, cases[i].fus);
        if (ts && vs) {
            int fused = 0;
            for (int k = 0; k < ts->n_steps; k++) fused += ts->steps[k].fused != YP_FUSED_NONE;
            CHECK(!fused == !cases[i].fus);
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

static void test_family_is_exact(void) {
    family_is_exact(yp_test_model("yolov5s"));
    yp_err err;
    family_is_exact(yp_yaml_import(YP_TEST_DATA "/zoo/hub/yolov5s-transformer.yaml", 0, &err));
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
        CHECK(yp_plan_check(&p, &err) == 0); /* validation's mapping too */
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

/* ---------------------------------------------------------------- validation's plan */

/* A plan of yolov5n at batch 2, 128 px, EMA on or off. */
static int val_test_plan(yp_graph *g, int ema, yp_plan *p) {
    yp_gpu gpu;
    yp_err err;
    yp_gpu_parse("8GB", &gpu, &err);
    yp_candidate c = yp_candidate_default();
    c.batch = 2, c.img_w = c.img_h = 128, c.ema = ema;
    if (yp_plan_build(g, &c, &gpu, 0, 0, p, &err)) {
        fprintf(stderr, "%s\n", err.msg);
        return -1;
    }
    return 0;
}

/* The first eval tensor of this role, or -1. */
static int val_find_role(const yp_val_plan *v, yp_role r) {
    for (int t = 0; t < v->sched->n_tensors; t++)
        if (v->sched->tensors[t].role == r) return t;
    return -1;
}

/* Validation's plan: its figure is what the planner always charged (training's whole-step bytes
 * plus the evaluation arena's transient part); every eval parameter aliases the training tensor
 * it reads (the EMA copy with EMA on, also of the BN running statistics; the parameter with it
 * off) at that tensor's offset; every other eval tensor lies above the whole-step region. */
static void test_val_plan_mapping(void) {
    yp_graph *g = yp_test_model("yolov5n");
    REQUIRE(g != NULL);
    for (int ema = 1; ema >= 0; ema--) {
        yp_plan p;
        yp_err err;
        if (val_test_plan(g, ema, &p)) {
            CHECK(0);
            break;
        }
        const yp_val_plan *v = &p.val;
        CHECK(yp_plan_check(&p, &err) == 0);
        CHECK_EQ_I64(v->sched->opts.batch, 4); /* YOLOv5 validates at twice the batch */
        CHECK(v->sched->opts.eval && v->reads_ema == ema);
        /* the figure, computed as the planner always did */
        yp_sched_opts vo = yp_candidate_val_opts(&p.cand, yp_graph_max_stride(g), g->n_layers);
        yp_schedule *vs = yp_schedule_build(g, &vo, &err);
        yp_liveness l;
        yp_arena a;
        REQUIRE(vs && yp_liveness_compute(vs, p.cand.alignment, &l, &err) == 0 &&
                yp_arena_plan(vs, p.cand.alignment, l.peak, &a, &err) == 0);
        CHECK_EQ_I64(p.val_bytes, p.arena.persistent + (a.size - a.persistent));
        CHECK_EQ_I64(v->bytes, p.val_bytes);
        yp_arena_free(&a), yp_liveness_free(&l), yp_schedule_free(vs);
        int n_alias = 0, n_stats = 0, n_transient = 0;
        for (int t = 0; t < v->sched->n_tensors; t++) {
            const yp_tensor *x = &v->sched->tensors[t];
            if (v->alias[t] < 0) {
                CHECK(!yp_role_is_param(x->role));
                CHECK(v->offsets[t] >= p.arena.persistent);
                n_transient++;
                continue;
            }
            const yp_tensor *y = &p.sched->tensors[v->alias[t]];
            const yp_tensor *w = ema ? &p.sched->tensors[y->param] : y;
            CHECK(y->role == (ema ? YP_ROLE_EMA : x->role) && !strcmp(w->name, x->name));
            CHECK_EQ_I64(v->offsets[t], p.arena.offsets[v->alias[t]]);
            n_alias++;
            n_stats += x->role == YP_ROLE_RUNNING_MEAN || x->role == YP_ROLE_RUNNING_VAR;
        }
        CHECK(n_alias > 0 && n_stats > 0 && n_transient > 0);
        printf("  ema %s: %d parameters alias training tensors (%d running statistics), %d transient; validation "
               "needs %lld of %lld bytes\n", ema ? "on" : "off", n_alias, n_stats, n_transient,
               (long long)v->bytes, (long long)p.arena_bytes);
        yp_plan_free(&p);
    }
    yp_graph_free(g);
}

/* The plan checker refuses each way a mapping can be wrong, naming it. */
static void test_val_plan_check_refuses(void) {
    yp_graph *g = yp_test_model("yolov5n");
    REQUIRE(g != NULL);
    yp_plan p;
    REQUIRE(val_test_plan(g, 1, &p) == 0);
    yp_val_plan *v = &p.val;
    yp_err err;
    int w = val_find_role(v, YP_ROLE_CONV_WEIGHT), img = val_find_role(v, YP_ROLE_IMAGES);
    int dec = val_find_role(v, YP_ROLE_DECODED), other = -1;
    REQUIRE(w >= 0 && img >= 0 && dec >= 0);
    for (int t = w + 1; t < v->sched->n_tensors && other < 0; t++) /* another conv weight */
        if (v->sched->tensors[t].role == YP_ROLE_CONV_WEIGHT) other = t;
    REQUIRE(other >= 0);
    int wa = v->alias[w];
    int64_t woff = v->offsets[w], ioff = v->offsets[img];

    v->alias[w] = v->alias[other], v->offsets[w] = v->offsets[other]; /* another parameter's EMA */
    CHECK(yp_plan_check(&p, &err) == -1);
    CHECK_STR_HAS(err.msg, "which is not the EMA copy of that parameter");
    v->alias[w] = p.sched->tensors[wa].param, v->offsets[w] = p.arena.offsets[v->alias[w]]; /* the live weight */
    CHECK(yp_plan_check(&p, &err) == -1);
    CHECK_STR_HAS(err.msg, "which is not the EMA copy");
    v->alias[w] = -1;
    CHECK(yp_plan_check(&p, &err) == -1);
    CHECK_STR_HAS(err.msg, "aliases no training tensor");
    v->alias[w] = wa, v->offsets[w] = woff + p.arena.align;
    CHECK(yp_plan_check(&p, &err) == -1);
    CHECK_STR_HAS(err.msg, "which it aliases, is at");
    v->offsets[w] = woff;
    v->sched->tensors[w].bytes += 4; /* an eval parameter of another size than its alias */
    CHECK(yp_plan_check(&p, &err) == -1);
    CHECK_STR_HAS(err.msg, "differ");
    v->sched->tensors[w].bytes -= 4;
    CHECK(yp_plan_check(&p, &err) == 0);

    v->alias[img] = wa; /* a transient tensor aliasing a training tensor */
    CHECK(yp_plan_check(&p, &err) == -1);
    CHECK_STR_HAS(err.msg, "is no parameter but aliases");
    v->alias[img] = -1, v->offsets[img] = woff; /* over the EMA weights */
    CHECK(yp_plan_check(&p, &err) == -1);
    CHECK_STR_HAS(err.msg, "overlaps the whole-step training tensor");
    v->offsets[img] = p.arena_bytes; /* past the arena */
    CHECK(yp_plan_check(&p, &err) == -1);
    CHECK_STR_HAS(err.msg, "outside");
    v->offsets[img] = ioff + p.arena.align / 2; /* misaligned */
    CHECK(yp_plan_check(&p, &err) == -1);
    CHECK_STR_HAS(err.msg, "misaligned");
    /* two eval tensors live at the same step on the same bytes: the first conv's output is
     * written while the images are read */
    int y0 = v->sched->steps[0].a.y[0];
    REQUIRE(y0 >= 0 && v->alias[y0] < 0);
    v->offsets[img] = v->offsets[y0];
    CHECK(yp_plan_check(&p, &err) == -1);
    CHECK_STR_HAS(err.msg, "overlap while both live");
    v->offsets[img] = ioff;
    CHECK(yp_plan_check(&p, &err) == 0);

    /* two eval parameters on one training tensor: BN beta relabelled as its node's gamma */
    int gm = val_find_role(v, YP_ROLE_BN_GAMMA), bt = val_find_role(v, YP_ROLE_BN_BETA);
    REQUIRE(gm >= 0 && bt >= 0 && v->sched->tensors[gm].node == v->sched->tensors[bt].node);
    int ba = v->alias[bt];
    int64_t boff = v->offsets[bt];
    v->sched->tensors[bt].role = YP_ROLE_BN_GAMMA, v->alias[bt] = v->alias[gm], v->offsets[bt] = v->offsets[gm];
    CHECK(yp_plan_check(&p, &err) == -1);
    CHECK_STR_HAS(err.msg, "both alias");
    v->sched->tensors[bt].role = YP_ROLE_BN_BETA, v->alias[bt] = ba, v->offsets[bt] = boff;

    v->reads_ema = 0; /* the mapping says EMA copies; the flag must agree */
    CHECK(yp_plan_check(&p, &err) == -1);
    CHECK_STR_HAS(err.msg, "which is not the training tensor of that parameter");
    v->reads_ema = 1;
    int64_t bytes = v->bytes;
    v->bytes = p.arena_bytes + 1;
    CHECK(yp_plan_check(&p, &err) == -1);
    CHECK_STR_HAS(err.msg, "validation: needs");
    v->bytes = bytes;
    CHECK(yp_plan_check(&p, &err) == 0);
    yp_plan_free(&p);
    yp_graph_free(g);
}

/* Writes j to path; 0 on success. */
static int write_json(const char *path, const cJSON *j) {
    char *s = cJSON_PrintUnformatted(j);
    FILE *f = s ? fopen(path, "wb") : NULL;
    int rc = f && fputs(s, f) >= 0 ? 0 : -1;
    if (f) rc |= fclose(f);
    free(s);
    return rc;
}

static cJSON *read_json(const char *path) {
    FILE *f = fopen(path, "rb");
    static char text[1 << 24];
    size_t n = f ? fread(text, 1, sizeof text - 1, f) : 0;
    if (f) fclose(f);
    text[n] = 0;
    return cJSON_Parse(text);
}

/* plan.json carries the validation section; a loaded plan rebuilds the same one, and a file whose
 * section disagrees with the rebuilt one (or lacks it) is refused, naming the file and the field. */
static void test_val_plan_json(void) {
    yp_graph *g = yp_test_model("yolov5n"), *g2 = NULL;
    REQUIRE(g != NULL);
    yp_plan p, q;
    yp_err err;
    REQUIRE(val_test_plan(g, 1, &p) == 0);
    char path[] = "/tmp/yp_test_val_plan_XXXXXX";
    int fd = mkstemp(path);
    close(fd);
    REQUIRE(yp_plan_save(&p, path, &err) == 0);
    cJSON *j = read_json(path);
    REQUIRE(j != NULL);
    const cJSON *val = cJSON_GetObjectItem(j, "validation");
    CHECK(cJSON_GetObjectItem(val, "batch")->valuedouble == 4);
    CHECK(cJSON_GetObjectItem(val, "arena_bytes")->valuedouble == (double)p.val_bytes);
    CHECK(!strcmp(cJSON_GetObjectItem(val, "reads")->valuestring, "ema"));
    const cJSON *ts = cJSON_GetObjectItem(val, "tensors");
    CHECK_EQ_I64(cJSON_GetArraySize(ts), p.val.sched->n_tensors);
    int w = val_find_role(&p.val, YP_ROLE_CONV_WEIGHT);
    const cJSON *wt = cJSON_GetArrayItem(ts, w), *al = cJSON_GetObjectItem(wt, "aliases");
    CHECK(!strcmp(cJSON_GetObjectItem(wt, "name")->valuestring, "model.0.conv.weight"));
    CHECK(!strcmp(cJSON_GetObjectItem(al, "name")->valuestring, "ema:model.0.conv.weight"));
    CHECK(!strcmp(cJSON_GetObjectItem(al, "role")->valuestring, "ema"));
    CHECK(cJSON_IsNull(cJSON_GetObjectItem(cJSON_GetArrayItem(ts, p.val.sched->images_t), "aliases")));

    CHECK(yp_plan_load(path, &q, &g2, &err) == 0);
    if (g2) {
        CHECK_EQ_I64(q.val.bytes, p.val.bytes);
        CHECK_EQ_I64(q.val.sched->n_tensors, p.val.sched->n_tensors);
        CHECK(memcmp(q.val.alias, p.val.alias, (size_t)p.val.sched->n_tensors * sizeof(int)) == 0);
        CHECK(memcmp(q.val.offsets, p.val.offsets, (size_t)p.val.sched->n_tensors * sizeof(int64_t)) == 0);
        CHECK(yp_plan_check(&q, &err) == 0);
        yp_plan_free(&q);
        yp_graph_free(g2);
    }
    /* each edit below is refused with the file and the field */
    struct { const char *field; const char *expect; } edits[] = {
        {"arena_bytes", "validation.arena_bytes"},
        {"batch", "validation.batch"},
        {"alias", ".aliases.name"},
        {"offset", "validation.tensors[0].offset"},
        {"null", ".aliases: null"},
        {"missing", "validation: missing"},
    };
    for (size_t k = 0; k < sizeof edits / sizeof *edits; k++) {
        cJSON *e = cJSON_Duplicate(j, 1), *ve = cJSON_GetObjectItem(e, "validation");
        cJSON *te = cJSON_GetObjectItem(ve, "tensors"), *we = cJSON_GetArrayItem(te, w);
        const char *f = edits[k].field;
        if (!strcmp(f, "arena_bytes") || !strcmp(f, "batch"))
            cJSON_SetNumberValue(cJSON_GetObjectItem(ve, f), cJSON_GetObjectItem(ve, f)->valuedouble + 1);
        else if (!strcmp(f, "alias"))
            cJSON_SetValuestring(cJSON_GetObjectItem(cJSON_GetObjectItem(we, "aliases"), "name"), "model.0.conv.weight");
        else if (!strcmp(f, "offset"))
            cJSON_SetNumberValue(cJSON_GetObjectItem(cJSON_GetArrayItem(te, 0), "offset"), 0);
        else if (!strcmp(f, "null"))
            cJSON_ReplaceItemInObject(we, "aliases", cJSON_CreateNull());
        else
            cJSON_DeleteItemFromObject(e, "validation");
        CHECK(write_json(path, e) == 0);
        cJSON_Delete(e);
        CHECK(yp_plan_load(path, &q, &g2, &err) == -1);
        CHECK_STR_HAS(err.msg, path);
        CHECK_STR_HAS(err.msg, edits[k].expect);
        CHECK(strchr(err.msg, '\n') == NULL);
    }
    cJSON_Delete(j);
    unlink(path);
    yp_plan_free(&p);
    yp_graph_free(g);
}

/* A backend model the planner does not know, as a caller's resolver supplies it: "twice:K" plans
 * K times the im2col scratch. */
static int twice_rule(void *ctx, const yp_conv_query *q, int64_t *per_image, int64_t *fixed, yp_err *err) {
    yp_conv_scratch_im2col(NULL, q, per_image, fixed, err);
    *per_image *= (int64_t)(intptr_t)ctx, *fixed *= (int64_t)(intptr_t)ctx;
    return 0;
}

static int twice_resolve(void *ctx, const char *name, yp_scratch_rule *rule, yp_err *err) {
    (void)ctx;
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
    static const yp_scratch_resolver twice = {"twice:K", twice_resolve, NULL};
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

static char edit_text[1 << 24];

/* p saved to path with the first `from` of its text replaced by `to` (removed: to ""); 0 when
 * from does not occur. */
static int save_edited(const yp_plan *p, const char *path, const char *from, const char *to) {
    yp_err err;
    if (yp_plan_save(p, path, &err)) return 0;
    size_t n = replace_once(edit_text, read_text(path, edit_text, sizeof edit_text), from, to);
    if (n) write_text(path, edit_text, n);
    return n > 0;
}

/* p saved with `from` replaced by `to` does not load, and the one line says `key`. */
static void load_refuses(const yp_plan *p, const char *path, const char *from, const char *to, const char *key) {
    yp_plan q;
    yp_graph *g2 = NULL;
    yp_err err;
    CHECK(save_edited(p, path, from, to));
    CHECK(yp_plan_load(path, &q, &g2, &err) == -1);
    CHECK_STR_HAS(err.msg, key);
    CHECK(strchr(err.msg, '\n') == NULL);
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
    for (size_t k = 0; k < sizeof bad_json / sizeof *bad_json; k++)
        load_refuses(&p512, path, "\"alignment\":512", bad_json[k], "candidate.alignment");
    /* a file from before the key: a 256 plan */
    CHECK(save_edited(&p256, path, ",\"alignment\":256", "") && !strstr(edit_text, "alignment"));
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

/* The data pipeline is the candidate's: its workers, prefetch and cache size the plan's host memory
 * (the RAM cache instead of the decoders once the images are known) and travel in plan.json,
 * where a file without them has 8, 2 and no cache; a value out of range is refused by the planner
 * and by the loader, naming it. */
static void test_pipeline_round_trip(void) {
    yp_graph *g = yp_test_model("yolov5n"), *g2 = NULL;
    REQUIRE(g != NULL);
    yp_gpu gpu;
    yp_err err;
    yp_gpu_parse("8GB", &gpu, &err);
    yp_candidate c = yp_candidate_default(), d;
    CHECK(c.pipe.workers == 8 && c.pipe.prefetch == 2 && c.pipe.cache == YP_CACHE_NONE);
    c.batch = 2, c.img_w = c.img_h = 128;
    d = c;
    d.pipe = (yp_pipeline){3, 4, YP_CACHE_RAM};
    yp_plan p, q, r;
    REQUIRE(yp_plan_build(g, &c, &gpu, 0, 100, &p, &err) == 0);
    REQUIRE(yp_plan_build(g, &d, &gpu, 0, 100, &q, &err) == 0);
    CHECK_EQ_I64(p.arena_bytes, q.arena_bytes); /* the pipeline is host memory only */
    CHECK(p.host.loader_workers == 8 && q.host.loader_workers == 3);
    CHECK(p.host.decoded_images == 8LL * 2 * 128 * 128 * 3 && q.host.decoded_images == 0);
    CHECK(p.host.image_cache == 0 && q.host.image_cache == 100LL * 128 * 128 * 3);
    CHECK_EQ_I64(q.host.prefetch, 3LL * 4 * 2 * 128 * 128 * 3); /* 12 slots of 2 images */
    CHECK_EQ_I64(q.host.orders, 3LL * 100 * 8 + 100);
    char path[] = "/tmp/yp_test_plan_pipe_XXXXXX";
    int fd = mkstemp(path);
    close(fd);
    CHECK(yp_plan_save(&q, path, &err) == 0);
    CHECK(yp_plan_load(path, &r, &g2, &err) == 0);
    if (g2) {
        CHECK(r.cand.pipe.workers == 3 && r.cand.pipe.prefetch == 4 && r.cand.pipe.cache == YP_CACHE_RAM);
        yp_plan_free(&r);
        yp_graph_free(g2);
    }
    static const struct {
        const char *from, *to, *key;
    } bad[] = {{"\"workers\":3", "\"workers\":0", "candidate.workers"},
               {"\"workers\":3", "\"workers\":65", "candidate.workers"},
               {"\"workers\":3", "\"workers\":2.5", "candidate.workers"},
               {"\"prefetch\":4", "\"prefetch\":0", "candidate.prefetch"},
               {"\"cache\":\"ram\"", "\"cache\":\"disk\"", "candidate.cache"},
               {"\"cache\":\"ram\"", "\"cache\":1", "candidate.cache"}};
    for (size_t k = 0; k < sizeof bad / sizeof *bad; k++) load_refuses(&q, path, bad[k].from, bad[k].to, bad[k].key);
    /* a file from before the keys (the three written last, in this order): the defaults */
    CHECK(save_edited(&q, path, ",\"workers\":3,\"prefetch\":4,\"cache\":\"ram\"", ""));
    CHECK(!strstr(edit_text, "\"workers\"") && !strstr(edit_text, "\"cache\""));
    CHECK(yp_plan_load(path, &r, &g2, &err) == 0);
    if (g2) {
        CHECK(r.cand.pipe.workers == 8 && r.cand.pipe.prefetch == 2 && r.cand.pipe.cache == YP_CACHE_NONE);
        yp_plan_free(&r);
        yp_graph_free(g2);
    }
    unlink(path);
    static const yp_pipeline wrong[] = {{0, 2, YP_CACHE_NONE}, {65, 2, YP_CACHE_NONE}, {8, 0, YP_CACHE_NONE},
                                        {8, 2, YP_CACHE_COUNT}};
    for (size_t k = 0; k < sizeof wrong / sizeof *wrong; k++) {
        d.pipe = wrong[k];
        CHECK(yp_plan_build(g, &d, &gpu, 0, 0, &r, &err) == -1);
        CHECK_STR_HAS(err.msg, "pipeline");
    }
    yp_plan_free(&p);
    yp_plan_free(&q);
    yp_graph_free(g);
}

/* Grouped convs are not matrix math to the cost model (yp_cost.h): on tiny_dw.json the depthwise
 * and groups=2 convs run at the elementwise FP32 rate at every precision, the dense conv and
 * Detect at the tensor-core one; the family's timing still equals the schedule's. */
static void test_grouped_conv_rate(void) {
    yp_err err;
    yp_graph *g = yp_ir_load_file(YP_TEST_DATA "/ir/tiny_dw.json", &err);
    REQUIRE(g != NULL);
    yp_gpu gpu;
    CHECK(yp_gpu_parse("a100-40gb", &gpu, &err) == 0);
    const double eltwise = 1.0 / (gpu.fp32_tflops * 1e12 * YP_ELTWISE_EFFICIENCY);
    int grouped = 0, dense = 0;
    for (int i = 0; i < g->n_nodes; i++) {
        const yp_node *n = &g->nodes[i];
        int r = yp_cost_rate_op(g, n->op, i);
        if (n->op == YP_OP_CONV2D && n->a.conv.groups > 1) {
            CHECK_EQ_I64(r, -1);
            CHECK(yp_cost_s_per_flop(&gpu, YP_PREC_AMP_FP16, r) == eltwise);
            grouped++;
        } else {
            CHECK_EQ_I64(r, n->op);
            if (n->op == YP_OP_CONV2D || n->op == YP_OP_DETECT) {
                CHECK(yp_cost_s_per_flop(&gpu, YP_PREC_AMP_FP16, r) < eltwise / 4);
                dense++;
            }
        }
    }
    CHECK_EQ_I64(grouped, 3);
    CHECK_EQ_I64(dense, 2);
    CHECK_EQ_I64(yp_cost_rate_op(NULL, YP_OP_CONV2D, 0), YP_OP_CONV2D); /* no graph: the op's own rate */
    yp_candidate c = yp_candidate_default();
    c.batch = 8, c.img_w = c.img_h = 256, c.precision = YP_PREC_AMP_FP16;
    yp_family f;
    CHECK(yp_family_build(g, &c, &gpu, &f, &err) == 0);
    yp_sched_opts to = yp_candidate_train_opts(&c, 32);
    yp_schedule *ts = yp_schedule_build(g, &to, &err);
    CHECK(ts != NULL);
    if (ts) {
        yp_timing a, b;
        yp_family_timing(&f, g, &c, &a);
        yp_cost_schedule(ts, &gpu, c.precision, &b);
        CHECK(fabs(a.update_ms - b.update_ms) <= 1e-9 * b.update_ms);
    }
    yp_schedule_free(ts);
    yp_family_free(&f);
    yp_graph_free(g);
}

int main(void) {
    YP_RUN(test_family_is_exact);
    YP_RUN(test_grouped_conv_rate);
    YP_RUN(test_max_batch);
    YP_RUN(test_search_and_realize);
    YP_RUN(test_plan_json_round_trip);
    YP_RUN(test_scratch_model_round_trip);
    YP_RUN(test_arena_alignment);
    YP_RUN(test_pipeline_round_trip);
    YP_RUN(test_val_plan_mapping);
    YP_RUN(test_val_plan_check_refuses);
    YP_RUN(test_val_plan_json);
    return yp_test_summary();
}
