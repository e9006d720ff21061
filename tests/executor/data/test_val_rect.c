/* test_val_rect.c - val.py's rectangular validation batches (executor/data/yp_val_rect.h) and the
 * loader's rect mode (yp_loader.h opts.rect): the order and shapes against hand-computed ones,
 * five images of five aspect ratios sorted and letterboxed into their batch's shape (pixels, pad,
 * label rows, and the rows mapped back to the original pixels), an unreadable image sorted as
 * square, and options that do not belong together refused. */
#define _XOPEN_SOURCE 700 /* mkdtemp */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "yp_image.h"
#include "yp_label_cache.h"
#include "yp_loader.h"
#include "yp_metrics.h"
#include "yp_test.h"
#include "yp_test_fs.h"
#include "yp_val_rect.h"

static char root[512];

/* ceil(ratio * 640 / 32 + 0.5) * 32 worked by hand below. */
static void test_shapes_by_hand(void) {
    CHECK_EQ_I64(yp_val_rect_side(640, 32, 0.5), 672); /* ceil(20.5) = 21 */
    CHECK_EQ_I64(yp_val_rect_side(256, 32, 0.5), 288);
    CHECK_EQ_I64(yp_val_rect_side(1280, 64, 0.5), 1344);
    CHECK_EQ_I64(yp_val_rect_side(0, 32, 0.5), -1);
    /* ar 0.75, 1.5, 1.0, 0.5, 2.0 in batches of 2: sorted 0.5 (3), 0.75 (0), 1.0 (2), 1.5 (1), 2.0 (4);
     * [0.5, 0.75]: all < 1: (0.75, 1) -> h ceil(15.5) = 16 -> 512, w 672; [1.0, 1.5]: (1, 1) -> 672 x 672;
     * [2.0]: all > 1: (1, 1 / 2) -> h 672, w ceil(10.5) = 11 -> 352 */
    const double ar[] = {0.75, 1.5, 1.0, 0.5, 2.0};
    yp_val_rect r;
    yp_err err;
    REQUIRE(yp_val_rect_shapes(ar, 5, 2, 640, 32, 0.5, &r, &err) == 0);
    const int64_t order[] = {3, 0, 2, 1, 4}, h[] = {512, 672, 672}, w[] = {672, 672, 352};
    CHECK_EQ_I64(r.n_batches, 3);
    CHECK_EQ_I64(r.max_side, 672);
    for (int i = 0; i < 5; i++) CHECK_EQ_I64(r.order[i], order[i]);
    for (int b = 0; b < 3; b++) CHECK(r.h[b] == h[b] && r.w[b] == w[b]);
    yp_val_rect_free(&r);
    /* ties keep the image order; 1.0 exactly is neither < 1 nor > 1 */
    const double ties[] = {1.0, 0.6, 1.0, 0.6};
    REQUIRE(yp_val_rect_shapes(ties, 4, 2, 640, 32, 0.5, &r, &err) == 0);
    CHECK(r.order[0] == 1 && r.order[1] == 3 && r.order[2] == 0 && r.order[3] == 2);
    CHECK(r.h[0] == 416 && r.w[0] == 672 && r.h[1] == 672 && r.w[1] == 672); /* ceil(0.6 * 20 + 0.5) = 13 */
    yp_val_rect_free(&r);
    CHECK(yp_val_rect_shapes(ar, 0, 2, 640, 32, 0.5, &r, &err) == -1);
    yp_val_rect_free(&r);
}

/* Image NAME of w x h, every pixel (v, v, v), with one label: class 0, a box of half the image
 * in its centre. */
static void write_item(const char *name, int w, int h, int v) {
    char path[700];
    yp_image im;
    yp_err err;
    REQUIRE(yp_image_alloc(&im, w, h, &err) == 0);
    memset(im.rgb, v, (size_t)w * (size_t)h * 3);
    snprintf(path, sizeof path, "%s/images/%s.png", root, name);
    REQUIRE(yp_image_write_png(path, &im, &err) == 0);
    yp_image_free(&im);
    snprintf(path, sizeof path, "%s/labels/%s.txt", root, name);
    FILE *f = fopen(path, "w");
    REQUIRE(f);
    fputs("0 0.5 0.5 0.5 0.5\n", f);
    fclose(f);
}

static void test_loader_rect(void) {
    char p[700];
    snprintf(p, sizeof p, "%s/images", root);
    REQUIRE(mkdir(p, 0700) == 0);
    snprintf(p, sizeof p, "%s/labels", root);
    REQUIRE(mkdir(p, 0700) == 0);
    /* a 64x32 (ar 0.5), b 32x64 (2), c 64x48 (0.75), d 48x64 (1.33), e 64x64 (1); at imgsz 64,
     * batch 2, stride 32: order a c e d b; [a, c] -> (0.75, 1) -> h ceil(2) = 2 -> 64, w ceil(2.5) = 3
     * -> 96; [e, d] -> 96 x 96; [b] -> (1, 0.5) -> h 96, w ceil(1.5) = 2 -> 64 */
    write_item("a", 64, 32, 10), write_item("b", 32, 64, 20), write_item("c", 64, 48, 30);
    write_item("d", 48, 64, 40), write_item("e", 64, 64, 50);
    snprintf(p, sizeof p, "%s/data.yaml", root);
    FILE *f = fopen(p, "w");
    REQUIRE(f);
    fprintf(f, "path: %s\ntrain: images\nval: images\nnc: 1\nnames: [box]\n", root);
    fclose(f);
    yp_labels val = {0};
    yp_err err;
    REQUIRE(yp_labels_load_split(p, "val", &val, &err) == 0);
    REQUIRE(val.n == 5);
    yp_val_rect r;
    REQUIRE(yp_val_rect_build(&val, 2, 64, 32, &r, &err) == 0);
    CHECK_EQ_I64(r.unreadable, 0);
    const int64_t order[] = {0, 2, 4, 3, 1}, h[] = {64, 96, 96}, w[] = {96, 96, 64};
    for (int i = 0; i < 5; i++) CHECK_EQ_I64(r.order[i], order[i]);
    for (int b = 0; b < 3; b++) CHECK(r.h[b] == h[b] && r.w[b] == w[b]);

    yp_loader_opts o;
    yp_loader_opts_default(&o);
    o.workers = 2, o.batch = 2, o.imgsz = 64, o.validation = 1, o.rect = &r;
    yp_loader *l = yp_loader_open(&val, &o, &err);
    REQUIRE(l);
    yp_loader_batch b;
    for (int k = 0; k < 3; k++) {
        REQUIRE(yp_loader_next(l, &b, &err) == 1);
        CHECK(b.h == h[k] && b.w == w[k] && b.n == (k < 2 ? 2 : 1));
        for (int i = 0; i < b.n; i++) CHECK_EQ_I64(b.meta[i].index, order[2 * k + i]);
        if (k == 0) { /* a: 64x32 centred in 96x64 (no scale-up): pad 16 left and right, 16 above and below */
            const uint8_t *px = b.images;
            CHECK(px[0] == 114 && px[(16 * 96 + 15) * 3] == 114 && px[(16 * 96 + 16) * 3] == 10);
            CHECK(px[(47 * 96 + 79) * 3] == 10 && px[(48 * 96 + 79) * 3] == 114);
            /* its box (16, 8)-(48, 24) moves by the pad to (32, 24)-(64, 40): xywhn of 96 x 64 */
            CHECK(b.n_labels == 2 && b.labels[0] == 0 && fabsf(b.labels[2] - 0.5f) < 1e-6f);
            CHECK(fabsf(b.labels[3] - 0.5f) < 1e-6f && fabsf(b.labels[4] - 32.0f / 96) < 1e-6f &&
                  fabsf(b.labels[5] - 0.25f) < 1e-6f);
            float back[5];
            yp_labels_native(&b.meta[0].rp, b.w, b.h, b.labels + 1, 1, back); /* to a's own pixels */
            CHECK(fabsf(back[1] - 16) < 1e-4f && fabsf(back[2] - 8) < 1e-4f && fabsf(back[3] - 48) < 1e-4f &&
                  fabsf(back[4] - 24) < 1e-4f);
        }
    }
    CHECK(yp_loader_next(l, &b, &err) == 0);
    yp_loader_close(l);

    o.batch = 3; /* batches made for 2 */
    CHECK(yp_loader_open(&val, &o, &err) == NULL);
    CHECK_STR_HAS(err.msg, "rectangular batches were made for 5 images in batches of 2");
    o.batch = 2, o.validation = 0;
    CHECK(yp_loader_open(&val, &o, &err) == NULL);
    yp_val_rect_free(&r);

    snprintf(p, sizeof p, "%s/images/b.png", root); /* b unreadable: sorted as square, between e and d */
    f = fopen(p, "w");
    REQUIRE(f);
    fputs("not a png", f);
    fclose(f);
    REQUIRE(yp_val_rect_build(&val, 2, 64, 32, &r, &err) == 0);
    CHECK_EQ_I64(r.unreadable, 1);
    CHECK(r.order[2] == 1 && r.order[3] == 4 && r.order[4] == 3);
    yp_val_rect_free(&r);
    yp_labels_free(&val);
}

int main(void) {
    const char *tmp = getenv("TMPDIR");
    snprintf(root, sizeof root, "%s/yp_val_rect_XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(root)) {
        perror("test_val_rect: mkdtemp");
        return 1;
    }
    YP_RUN(test_shapes_by_hand);
    YP_RUN(test_loader_rect);
    yp_test_remove_tree(root);
    return yp_test_summary();
}
