/* test_torch_host.c - train.py's host memory (planner/yp_torch_host.h) against figures worked by
 * hand from its terms, train.py's worker counts, YOLOv5's load_image sizes (Python's own
 * arithmetic for the odd ones) and the host-side remedies. */
#include <string.h>

#include "yp_test.h"
#include "yp_torch_host.h"

static void test_workers(void) {
    CHECK_EQ_I64(yp_torch_train_workers(8, 16, 8), 8);
    CHECK_EQ_I64(yp_torch_train_workers(8, 4, 8), 4);  /* at most one per image of the batch */
    CHECK_EQ_I64(yp_torch_train_workers(8, 1, 8), 0);  /* batch 1: the process loads */
    CHECK_EQ_I64(yp_torch_train_workers(2, 16, 8), 2); /* the CPUs */
    CHECK_EQ_I64(yp_torch_train_workers(8, 16, 3), 3); /* --workers */
    CHECK_EQ_I64(yp_torch_val_workers(32, 16, 8), 16); /* 2 x --workers */
    CHECK_EQ_I64(yp_torch_val_workers(32, 2, 8), 4);   /* 2 x batch */
    CHECK_EQ_I64(yp_torch_val_workers(8, 16, 0), 0);
}

static void test_resized(void) {
    CHECK(yp_torch_resized_bytes(0, 0, 640) == 640.0 * 480 * 3); /* COCO's typical image */
    CHECK(yp_torch_resized_bytes(1000, 500, 640) == 640.0 * 320 * 3);
    /* Python: r = 640 / 999; math.ceil(333 * r), math.ceil(999 * r) -> 214, 640 */
    CHECK(yp_torch_resized_bytes(333, 999, 640) == 214.0 * 640 * 3);
    /* upscaled too: r = 640 / 427 -> 640, 480 */
    CHECK(yp_torch_resized_bytes(427, 320, 640) == 640.0 * 480 * 3);
}

static yp_torch_host_opts base(void) {
    yp_torch_host_opts o;
    memset(&o, 0, sizeof o);
    o.batch = 16, o.img = 640, o.workers_opt = 8, o.cpus = 8;
    o.train_images = 100, o.val_images = 50;
    o.train_image_bytes = o.val_image_bytes = 921600; /* 640 x 480 x 3 */
    o.train_labels = o.val_labels = 7.3;
    return o;
}

/* batch 16 at 640, 8 + 8 workers: worked by hand term by term */
static void test_predict(void) {
    yp_err err;
    yp_torch_host_opts o = base();
    yp_torch_host h;
    REQUIRE(yp_torch_host_predict(&o, &h, &err) == 0);
    CHECK_EQ_I64(h.workers, 8);
    CHECK_EQ_I64(h.val_workers, 8);
    /* the objects: 150 images x 480 bytes + 150 x 7.3 rows x 20 bytes */
    CHECK_EQ_I64(h.main_bytes, YP_TORCH_HOST_MAIN_BYTES + 72000 + 21900);
    /* a training worker: its pages, 100 images' objects x 320, the mosaic canvas 4 x 1228800 +
     * four loaded images 4 x 921600 + the warp 1228800 = 9830400; a validation worker: 50 x 320
     * and 672 x 672 x 3 = 1354752 */
    CHECK_EQ_I64(h.worker_bytes, 8 * (YP_TORCH_HOST_WORKER_BYTES + 32000 + 9830400) +
                                     8 * (YP_TORCH_HOST_WORKER_BYTES + 16000 + 1354752));
    /* (8 workers x 2 + 1 pinned) batches of 16 x 1228800, and of 32 x 1354752 */
    CHECK_EQ_I64(h.in_flight_bytes, 17LL * 19660800 + 17LL * 43352064);
    CHECK_EQ_I64(h.cache_bytes, 0);
    CHECK_EQ_I64(h.cache_would_bytes, 150LL * 921600);
    CHECK_EQ_I64(h.total_bytes, h.main_bytes + h.worker_bytes + h.in_flight_bytes);
    o.cache_train = o.cache_val = 1;
    yp_torch_host c;
    REQUIRE(yp_torch_host_predict(&o, &c, &err) == 0);
    CHECK_EQ_I64(c.cache_bytes, 150LL * 921600);
    CHECK_EQ_I64(c.total_bytes, h.total_bytes + 150LL * 921600);
    /* --workers 0: no worker processes; the process builds each batch (its working images) */
    o = base(), o.workers_opt = 0;
    REQUIRE(yp_torch_host_predict(&o, &c, &err) == 0);
    CHECK_EQ_I64(c.workers + c.val_workers, 0);
    CHECK_EQ_I64(c.worker_bytes, 0);
    CHECK_EQ_I64(c.main_bytes, YP_TORCH_HOST_MAIN_BYTES + 72000 + 21900 + 9830400);
    CHECK_EQ_I64(c.in_flight_bytes, 19660800LL + 43352064);
    /* no validation split: no validation loader */
    o = base(), o.val_images = 0;
    REQUIRE(yp_torch_host_predict(&o, &c, &err) == 0);
    CHECK_EQ_I64(c.val_workers, 0);
    CHECK_EQ_I64(c.in_flight_bytes, 17LL * 19660800);
    /* bad inputs */
    o = base(), o.batch = 0;
    CHECK(yp_torch_host_predict(&o, &c, &err) == -1);
    o = base(), o.workers_opt = -1;
    CHECK(yp_torch_host_predict(&o, &c, &err) == -1);
    o = base(), o.train_images = (int64_t)1 << 50;
    CHECK(yp_torch_host_predict(&o, &c, &err) == -1);
}

/* check_cache_ram: 100 training and 50 validation images of 921600 bytes (92.16 MB and 46.08 MB,
 * x 1.1 each) against what is free beside the training process */
static void test_check_cache_ram(void) {
    yp_torch_host_opts o = base();
    const int64_t main = YP_TORCH_HOST_MAIN_BYTES;
    yp_torch_check_cache_ram(&o, 0); /* unknown: both cached */
    CHECK(o.cache_train && o.cache_val);
    yp_torch_check_cache_ram(&o, main + 200000000); /* 101.4 + 50.7 MB fit in 200 MB */
    CHECK(o.cache_train && o.cache_val);
    yp_torch_check_cache_ram(&o, main + 140000000); /* 101.4 fits; 50.7 does not in the 38.6 left */
    CHECK(o.cache_train && !o.cache_val);
    yp_torch_check_cache_ram(&o, main + 100000000); /* 101.4 does not; 50.7 fits in all 100 */
    CHECK(!o.cache_train && o.cache_val);
    yp_torch_check_cache_ram(&o, main + 40000000);
    CHECK(!o.cache_train && !o.cache_val);
    yp_torch_host h;
    yp_err err;
    o.cache_train = 1, o.cache_val = 0;
    REQUIRE(yp_torch_host_predict(&o, &h, &err) == 0);
    CHECK_EQ_I64(h.cache_bytes, 100LL * 921600); /* only the training images */
    CHECK_EQ_I64(h.cache_would_bytes, 150LL * 921600);
}

/* the remedies: half the workers and none, and the other two --cache choices, each against the
 * base's own total */
static void test_remedies(void) {
    yp_err err;
    yp_torch_host_opts o = base();
    yp_torch_host b;
    REQUIRE(yp_torch_host_predict(&o, &b, &err) == 0);
    yp_torch_host_remedy m[YP_TORCH_MAX_HOST_REMEDIES];
    int n = 0;
    REQUIRE(yp_torch_host_remedies(NULL, &o, YP_TORCH_CACHE_NONE, NULL, m, &n, &err) == 0);
    REQUIRE(n == 4);
    CHECK_STR_HAS(m[0].flag, "--workers 4");
    CHECK_EQ_I64(m[0].host.workers, 4);
    CHECK(m[0].saves > 0 && m[0].saves == b.total_bytes - m[0].host.total_bytes);
    CHECK_STR_HAS(m[1].flag, "--workers 0");
    CHECK(m[1].saves > m[0].saves);
    CHECK_STR_HAS(m[2].flag, "--cache ram");
    CHECK_EQ_I64(m[2].saves, -150LL * 921600);
    CHECK_STR_HAS(m[3].flag, "--cache disk");
    CHECK_EQ_I64(m[3].saves, 0);
    CHECK(m[0].images_per_s == 0); /* no speed asked */
    /* with --cache ram the base holds the images: "no --cache" saves them */
    o.cache_train = o.cache_val = 1;
    REQUIRE(yp_torch_host_remedies(NULL, &o, YP_TORCH_CACHE_RAM, NULL, m, &n, &err) == 0);
    REQUIRE(n == 4);
    CHECK_STR_HAS(m[2].flag, "no --cache");
    CHECK_EQ_I64(m[2].saves, 150LL * 921600);
    /* --cache ram with the training split refused (check_cache_ram): the workers' rows keep only
     * the validation images cached, as the run does, and "no --cache" saves those */
    o.cache_train = 0, o.cache_val = 1;
    REQUIRE(yp_torch_host_remedies(NULL, &o, YP_TORCH_CACHE_RAM, NULL, m, &n, &err) == 0);
    REQUIRE(n == 4);
    CHECK_EQ_I64(m[0].host.cache_bytes, 50LL * 921600);
    CHECK_EQ_I64(m[1].host.cache_bytes, 50LL * 921600);
    CHECK_STR_HAS(m[2].flag, "no --cache");
    CHECK_EQ_I64(m[2].saves, 50LL * 921600);
}

int main(void) {
    YP_RUN(test_workers);
    YP_RUN(test_resized);
    YP_RUN(test_predict);
    YP_RUN(test_check_cache_ram);
    YP_RUN(test_remedies);
    return yp_test_summary();
}
