/* test_device_plan.c - the plan for one device (planner/yp_device_plan.h) on yolov5n at 128 px: the
 * search's fastest plan fits the budget; a pinned batch that does not fit names the fastest plan
 * with the batch free; a candidate as given is built fitting or not, and the best that fits is the
 * largest batch whose plan fits (the next does not); with nothing fitting, the smallest
 * configuration and its bytes. */
#include <string.h>

#include "yp_device_plan.h"
#include "yp_test.h"
#include "yp_test_models.h"

static yp_graph *g;

static yp_device_plan_opts opts(int64_t batch, int as_given) {
    yp_device_plan_opts o = {.so = yp_search_opts_default(), .as_given = as_given, .find_best = 1};
    o.so.n_models = 1, o.so.models[0] = g;
    o.so.n_sizes = 1, o.so.size_w[0] = o.so.size_h[0] = 128;
    o.so.prec_mask = 1u << YP_PREC_FP32, o.so.mosaic_mask = 1u << 0;
    o.so.batch = batch;
    o.so.base.batch = 1, o.so.base.img_w = o.so.base.img_h = 128, o.so.base.mosaic = 0;
    return o;
}

/* yp_device_plan_make, reporting a failure: 0 or -1. */
static int make(const yp_device_plan_opts *o, const yp_gpu *dev, yp_device_plan *d) {
    yp_err err;
    if (yp_device_plan_make(o, dev, d, &err)) return fprintf(stderr, "  %s\n", err.msg), -1;
    return 0;
}

static int fits(int64_t batch, const yp_gpu *dev) {
    yp_device_plan_opts o = opts(batch, 1);
    yp_device_plan d;
    if (make(&o, dev, &d)) return -1;
    int f = d.plan.fits;
    yp_device_plan_free(&d);
    return f;
}

static void test_search(void) {
    yp_gpu dev;
    yp_gpu_host((int64_t)1 << 30, &dev);
    yp_device_plan_opts o = opts(0, 0);
    yp_device_plan d;
    REQUIRE(make(&o, &dev, &d) == 0);
    CHECK(d.have_plan);
    CHECK(d.plan.fits);
    CHECK(d.plan.cand.batch >= 1 && d.plan.cand.batch <= o.so.max_batch);
    int64_t fastest = d.plan.cand.batch;
    yp_device_plan_free(&d);
    CHECK(!d.have_plan);
    /* a pinned batch far beyond the budget: no plan, and the best with the batch free */
    o.so.batch = 1024;
    REQUIRE(make(&o, &dev, &d) == 0);
    CHECK(!d.have_plan);
    CHECK_EQ_I64(d.best.batch, fastest);
    CHECK(d.smallest_bytes > 0);
    yp_device_plan_free(&d);
    /* without find_best it does not look */
    o.find_best = 0;
    REQUIRE(make(&o, &dev, &d) == 0);
    CHECK_EQ_I64(d.best.batch, 0);
}

static void test_as_given(void) {
    yp_gpu dev;
    yp_gpu_host((int64_t)1 << 40, &dev);
    yp_device_plan_opts o = opts(64, 1);
    yp_device_plan d;
    REQUIRE(make(&o, &dev, &d) == 0);
    REQUIRE(d.have_plan && d.plan.fits);
    yp_gpu_host(d.plan.device_bytes * 3 / 5, &dev); /* three fifths: fewer than 64 images fit */
    yp_device_plan_free(&d);
    REQUIRE(make(&o, &dev, &d) == 0);
    REQUIRE(d.have_plan);
    CHECK_EQ_I64(d.plan.cand.batch, 64);
    CHECK(!d.plan.fits);
    int64_t b = d.best.batch;
    yp_device_plan_free(&d);
    CHECK(b >= 1 && b < 64);
    CHECK_EQ_I64(fits(b, &dev), 1);
    CHECK_EQ_I64(fits(b + 1, &dev), 0);
    /* a batch that fits is built as it is, with no best to find */
    o.so.batch = b;
    REQUIRE(make(&o, &dev, &d) == 0);
    CHECK(d.plan.fits);
    CHECK_EQ_I64(d.best.batch, 0);
    yp_device_plan_free(&d);
}

static void test_nothing_fits(void) {
    yp_gpu dev;
    yp_gpu_host((int64_t)1 << 20, &dev);
    yp_device_plan_opts o = opts(4, 1);
    yp_device_plan d;
    REQUIRE(make(&o, &dev, &d) == 0);
    CHECK(d.have_plan && !d.plan.fits);
    CHECK_EQ_I64(d.best.batch, 0);
    yp_device_plan_free(&d);
    o = opts(0, 0);
    REQUIRE(make(&o, &dev, &d) == 0);
    CHECK(!d.have_plan);
    CHECK_EQ_I64(d.smallest.batch, 1);
    CHECK(d.smallest_bytes > (double)dev.mem_bytes);
}

int main(void) {
    g = yp_test_model("yolov5n");
    if (!g) return 1;
    YP_RUN(test_search);
    YP_RUN(test_as_given);
    YP_RUN(test_nothing_fits);
    yp_graph_free(g);
    return yp_test_summary();
}
