/* test_whatif.c - the what-if and the search give one answer. For random candidates (a fixed
 * seed: model, size, batch, card, reserve), the configuration the what-if plans
 * (yp_search_choose) is the table's first fitting row at that batch, and the search sized for that
 * configuration alone agrees with it on whether the batch fits and on the bytes it needs. */
#include <stdlib.h>
#include <string.h>

#include "yp_search.h"
#include "yp_test.h"
#include "yp_test_models.h"

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

int main(void) {
    YP_RUN(test_whatif_agrees_with_search);
    return yp_test_summary();
}
