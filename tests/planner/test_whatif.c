/* test_whatif.c - the what-if and the search give one answer. For random candidates (a fixed
 * seed: model, size, batch, card, reserve), the configuration the what-if plans
 * (yp_search_choose) is the table's first fitting row at that batch, and the search sized for that
 * configuration alone agrees with it on whether the batch fits and on the bytes it needs. And the
 * remedies: each saves memory, ranked by time cost, non-remedies noted with their reason. */
#include <stdlib.h>
#include <string.h>

#include "yp_search.h"
#include "yp_test.h"
#include "yp_test_models.h"
#include "yp_whatif.h"

typedef struct {
    unsigned s;
} rng;

static unsigned next(rng *r) { /* xorshift32: the same sequence on every machine */
    r->s ^= r->s << 13, r->s ^= r->s >> 17, r->s ^= r->s << 5;
    return r->s;
}

static yp_search_opts one(const yp_graph *g, int64_t img, int64_t batch) {
    yp_search_opts o = yp_search_opts_default();
    o.n_models = 1, o.models[0] = g, o.n_sizes = 1, o.size_w[0] = o.size_h[0] = img;
    o.batch = batch;
    return o;
}

/* The table at a pinned batch: its first row whose real plan fits (what run_search prints first):
 * 1 with *out filled, 0 when none fits, -1 on error. */
static int table_first(const yp_search_opts *o, const yp_gpu *gpu, int64_t reserve, yp_plan *out) {
    yp_search_result r;
    yp_err err;
    if (yp_search(o, gpu, reserve, &r, &err)) return -1;
    int found = 0;
    for (int i = 0; i < r.n_rows && !found; i++) {
        if (yp_search_realize(o, &r.rows[i], gpu, reserve, 0, out, &err)) found = -1;
        else if (!(found = out->fits)) yp_plan_free(out);
    }
    yp_search_free(&r);
    return found;
}

/* The search for configuration c alone (its precision, mosaic and checkpoint set), batch searched
 * up to the largest the planner accepts: the realised batch, 0 when not even batch 1 fits, -1 on
 * error. */
static int64_t largest_batch(const yp_graph *g, const yp_candidate *c, const yp_gpu *gpu, int64_t reserve) {
    yp_search_opts o = one(g, c->img_w, 0);
    o.prec_mask = 1u << c->precision, o.mosaic_mask = 1u << c->mosaic;
    o.ckpt_pinned = 1, o.base.ckpt_layers = c->ckpt_layers, o.max_batch = YP_MAX_BATCH;
    yp_search_result r;
    yp_err err;
    if (yp_search(&o, gpu, reserve, &r, &err)) return -1;
    int64_t b = 0;
    if (r.n_rows) {
        yp_plan p;
        if (yp_search_realize(&o, &r.rows[0], gpu, reserve, 0, &p, &err)) b = -1;
        else b = p.fits ? p.cand.batch : 0, yp_plan_free(&p);
    }
    yp_search_free(&r);
    return b;
}

static void test_whatif_agrees_with_search(void) {
    static const char *const models[] = {"yolov5n", "yolov5s", "yolov5m"};
    static const char *const cards[] = {"4GB", "6GB", "8GB", "t4", "rtx3060", "gtx1080ti"};
    yp_graph *gs[3];
    for (int m = 0; m < 3; m++) REQUIRE((gs[m] = yp_test_model(models[m])) != NULL);
    rng r = {20260412u};
    int n_fit = 0, n_nofit = 0;
    for (int it = 0; it < 24; it++) {
        const yp_graph *g = gs[next(&r) % 3];
        int64_t img = 320 + 32 * (int64_t)(next(&r) % 21), batch = 1 + (int64_t)(next(&r) % 512);
        yp_gpu gpu;
        yp_err err;
        REQUIRE(yp_gpu_parse(cards[next(&r) % (sizeof cards / sizeof *cards)], &gpu, &err) == 0);
        int64_t reserve = (int64_t)(next(&r) % 3) * gpu.mem_bytes / 20; /* 0, 5 % or 10 % kept free */
        yp_search_opts o = one(g, img, batch);
        yp_candidate c;
        int fits = yp_search_choose(&o, &gpu, reserve, &c, &err);
        REQUIRE(fits >= 0);
        yp_plan w;
        REQUIRE(yp_plan_build(g, &c, &gpu, reserve, 0, &w, &err) == 0);
        yp_plan t;
        int in_table = table_first(&o, &gpu, reserve, &t);
        int64_t most = largest_batch(g, &c, &gpu, reserve);
        REQUIRE(in_table >= 0 && most >= 0);
        char ctx[256];
        snprintf(ctx, sizeof ctx, "%s img %lld batch %lld on %s, reserve %lld: what-if %s, table %s, largest batch %lld",
                 g->name, (long long)img, (long long)batch, gpu.name, (long long)reserve, fits ? "fits" : "no fit",
                 in_table ? "has a row" : "empty", (long long)most);
        int ok = w.fits == fits && in_table == fits && c.batch == batch && (fits ? most >= batch : most < batch);
        if (in_table) {
            ok = ok && t.device_bytes == w.device_bytes && t.arena_bytes == w.arena_bytes &&
                 t.cand.precision == c.precision && t.cand.mosaic == c.mosaic && t.cand.ckpt_layers == c.ckpt_layers;
            yp_plan_free(&t);
        }
        if (!ok) fprintf(stderr, "  disagree: %s\n", ctx);
        if (getenv("YP_TEST_VERBOSE")) fprintf(stderr, "  %s\n", ctx);
        CHECK(ok);
        /* the default precision is the search's: AMP on every card with tensor cores */
        if (gpu.fp16_tflops > 0) CHECK(c.precision != YP_PREC_FP32);
        n_fit += fits, n_nofit += !fits;
        yp_plan_free(&w);
    }
    CHECK(n_fit >= 3 && n_nofit >= 3); /* the seed exercises both answers */
    for (int m = 0; m < 3; m++) yp_graph_free(gs[m]);
}

/* The what-if of an fp32 candidate: AMP and halving the batch save memory and are ranked,
 * cheapest in time first; bf16 (the bytes of fp16), mosaic off and Adam are notes with a reason;
 * the largest batch that fits is found; a candidate that does not fit gets other hardware, and
 * one that nothing single helps gets the cheapest combination. */
static void test_whatif(void) {
    yp_graph *g = yp_test_model("yolov5s"), *n = yp_test_model("yolov5n"), *x = yp_test_model("yolov5x");
    yp_graph *l = yp_test_model("yolov5l");
    REQUIRE(g != NULL && n != NULL && x != NULL && l != NULL);
    yp_gpu gpu;
    yp_err err;
    yp_gpu_parse("8GB", &gpu, &err);
    yp_candidate c = yp_candidate_default();
    c.batch = 128;
    yp_whatif w;
    yp_whatif_opts wo = {g, n, NULL, &gpu, 0, (1u << YP_PREC_COUNT) - 1, 0};
    CHECK(yp_whatif_run(&wo, &c, &w, &err) == 0);
    CHECK(!w.base.fits);
    CHECK(w.n >= 6);
    int amp = 0, half = 0;
    for (int i = 0; i < w.n; i++) {
        CHECK(w.r[i].plan.device_bytes < w.base.device_bytes); /* every ranked remedy saves memory */
        if (i) CHECK(w.r[i].time_cost >= w.r[i - 1].time_cost);
        if (!strcmp(w.r[i].what, "AMP fp16")) amp = 1;
        if (w.r[i].plan.cand.batch == 64) half = 1;
        CHECK(strcmp(w.r[i].what, "AMP bf16") && strcmp(w.r[i].what, "mosaic off") && !strstr(w.r[i].what, "Adam"));
    }
    CHECK(amp && half);
    int notes = 0;
    for (int i = 0; i < w.n_notes; i++) {
        CHECK(w.notes[i].why[0] != 0);
        notes += !strcmp(w.notes[i].what, "mosaic off") || !strcmp(w.notes[i].what, "Adam instead of SGD") ||
                 !strcmp(w.notes[i].what, "AMP bf16");
    }
    CHECK_EQ_I64(notes, 3); /* a bare size has an RTX 3070's rates: bf16 too, a note beside fp16 */
    CHECK(w.largest_batch >= 32 && w.largest_batch < 128);
    CHECK(w.n_cards >= 1 && w.cards[0].mem_bytes > gpu.mem_bytes && w.cards[0].need_bytes <= w.cards[0].mem_bytes);
    CHECK(w.n_gpus >= 1);
    CHECK_EQ_I64(w.gpus[0].plan.cand.batch, 64);
    CHECK(!w.has_combo); /* a single remedy fits */
    yp_whatif_free(&w);
    /* yolov5x at 1280 on 2 GB: not even batch 1 fits, nor any single remedy */
    yp_gpu_parse("2GB", &gpu, &err);
    c = yp_candidate_default();
    c.batch = 16, c.img_w = c.img_h = 1280, c.precision = YP_PREC_AMP_FP16;
    wo.g = x, wo.smaller = l;
    CHECK(yp_whatif_run(&wo, &c, &w, &err) == 0);
    CHECK(!w.base.fits);
    CHECK_EQ_I64(w.largest_batch, 0);
    for (int i = 0; i < w.n; i++) CHECK(!w.r[i].plan.fits);
    CHECK(w.has_combo && w.combo.plan.fits);
    CHECK(w.combo.plan.cand.batch >= 1 && w.combo.plan.cand.batch <= 16);
    yp_whatif_free(&w);
    yp_graph_free(g);
    yp_graph_free(n);
    yp_graph_free(x);
    yp_graph_free(l);
}

int main(void) {
    YP_RUN(test_whatif_agrees_with_search);
    YP_RUN(test_whatif);
    return yp_test_summary();
}
