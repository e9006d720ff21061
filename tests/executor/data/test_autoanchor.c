/* test_autoanchor.c - YOLOv5's AutoAnchor (executor/data/autoanchor.c): the metric on hand-worked
 * cases, k-means finding planted clusters, the evolution never lowering the fitness, seeding,
 * the random start when boxes are fewer than anchors, and the fit on a graph from `anchors: N`. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "yp_autoanchor.h"
#include "yp_test.h"
#include "yp_yaml.h"

static void test_metric(void) {
    /* boxes 10x10 and 40x10, one anchor 20x10: ratios min(0.5, 1) = 0.5 and min(0.5, 1) = 0.5 */
    const float wh[] = {10, 10, 40, 10}, k[] = {20, 10};
    yp_anchor_metric m = yp_anchor_measure(wh, 2, k, 1);
    CHECK(m.bpr == 1.0 && m.aat == 1.0 && fabs(m.fitness - 0.5) < 1e-7);
    /* a 100x100 box against a 20x10 anchor: ratio 0.1 < 1/4, so no recall and no fitness */
    const float far[] = {100, 100};
    m = yp_anchor_measure(far, 1, k, 1);
    CHECK(m.bpr == 0.0 && m.aat == 0.0 && m.fitness == 0.0);
}

/* Three planted clusters of box sizes, 300 boxes each, +-5 %. */
static float *clusters(int64_t *n) {
    static const float c[3][2] = {{12, 16}, {60, 40}, {200, 260}};
    yp_rng r;
    yp_rng_seed(&r, 7, 0);
    *n = 900;
    float *wh = malloc(900 * 2 * sizeof *wh);
    for (int i = 0; i < 900; i++)
        for (int d = 0; d < 2; d++) wh[2 * i + d] = c[i % 3][d] * (float)yp_rng_uniform(&r, 0.95, 1.05);
    return wh;
}

static void test_kmeans_finds_clusters(void) {
    int64_t n;
    float *wh = clusters(&n), k[6], again[6];
    yp_anchor_fit fit;
    yp_err err;
    yp_rng r;
    yp_rng_seed(&r, 1, 0);
    CHECK(yp_anchor_kmeans(wh, n, 3, 640, 0, &r, k, &fit, &err) == 0); /* no evolution: k-means alone */
    CHECK(fit.kmeans == 1 && fit.n_used == 900 && fit.n_small == 0);
    static const float want[3][2] = {{12, 16}, {60, 40}, {200, 260}}; /* sorted by area */
    for (int a = 0; a < 3; a++)
        for (int d = 0; d < 2; d++) CHECK(fabsf(k[2 * a + d] - want[a][d]) < 0.03f * want[a][d]);
    CHECK(fit.after.bpr == 1.0);
    /* with the evolution: the fitness never drops, and the same seed gives the same anchors */
    yp_rng_seed(&r, 1, 0);
    CHECK(yp_anchor_kmeans(wh, n, 3, 640, 300, &r, k, &fit, &err) == 0);
    CHECK(fit.after.fitness >= fit.before.fitness);
    yp_rng_seed(&r, 1, 0);
    CHECK(yp_anchor_kmeans(wh, n, 3, 640, 300, &r, again, &fit, &err) == 0);
    CHECK(memcmp(k, again, sizeof k) == 0);
    free(wh);
}

static void test_few_boxes_random_start(void) {
    const float wh[] = {30, 30, 1, 1}; /* one box of >= 2 px for 4 anchors; the 1x1 is small and left out */
    float k[8];
    yp_anchor_fit fit;
    yp_err err;
    yp_rng r;
    yp_rng_seed(&r, 3, 0);
    CHECK(yp_anchor_kmeans(wh, 2, 4, 64, 50, &r, k, &fit, &err) == 0);
    CHECK(fit.kmeans == 0 && fit.n_small == 1 && fit.n_used == 1);
    for (int a = 0; a < 8; a++) CHECK(k[a] >= 2.0f && k[a] <= 3 * 64);
    for (int a = 1; a < 4; a++) CHECK(k[2 * a - 2] * k[2 * a - 1] <= k[2 * a] * k[2 * a + 1]); /* by area */
    CHECK(yp_anchor_kmeans(wh, 0, 4, 64, 50, &r, k, &fit, &err) == -1);
    CHECK_STR_HAS(err.msg, "no boxes");
}

int main(void) {
    YP_RUN(test_metric);
    YP_RUN(test_kmeans_finds_clusters);
    YP_RUN(test_few_boxes_random_start);
    return yp_test_summary();
}
