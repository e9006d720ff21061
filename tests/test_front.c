/* test_front.c - the checkpoint front by DP equals the front by brute force (every subset's
 * real schedule), and its extremes are what they must be. */
#include <stdlib.h>

#include "yp_front.h"
#include "yp_ir.h"
#include "yp_test.h"
#include "yp_test_models.h"

/* yolov5n has 9 checkpointable layers (8 C3 + SPPF): 512 subsets, each a real schedule. */
static void test_dp_equals_brute_force(void) {
    yp_graph *g = yp_test_model("yolov5n");
    CHECK(g != NULL);
    if (!g) return;
    yp_front dp, bf;
    yp_err err;
    CHECK(yp_front_compute(g, 64, 96, &dp, &err) == 0);
    CHECK(yp_front_brute(g, 64, 96, 12, &bf, &err) == 0);
    CHECK_EQ_I64(dp.n, bf.n);
    for (int i = 0; i < dp.n && i < bf.n; i++) {
        CHECK_EQ_I64(dp.p[i].saved_bytes, bf.p[i].saved_bytes);
        CHECK_EQ_I64(dp.p[i].recompute_flops, bf.p[i].recompute_flops);
    }
    printf("  yolov5n at 96x64: %d front points of 512 subsets\n", dp.n);
    yp_front_free(&dp);
    yp_front_free(&bf);
    yp_graph_free(g);
}

/* The front starts at "no checkpoint", ends at "every checkpointable layer", and is monotone. */
static void test_front_shape(void) {
    yp_graph *g = yp_test_model("yolov5s");
    if (!g) return;
    yp_front f;
    yp_err err;
    CHECK(yp_front_compute(g, 640, 640, &f, &err) == 0);
    CHECK(f.n >= 2);
    CHECK_EQ_I64((long long)f.p[0].layers, 0);
    uint64_t all = 0;
    for (int l = 0; l < g->n_layers; l++)
        if (yp_layer_inner_convs(g, l)) all |= 1ull << l;
    CHECK(f.p[f.n - 1].layers == all);
    for (int i = 1; i < f.n; i++) {
        CHECK(f.p[i].saved_bytes < f.p[i - 1].saved_bytes);
        CHECK(f.p[i].recompute_flops > f.p[i - 1].recompute_flops);
    }
    yp_front_free(&f);
    yp_graph_free(g);
}

static void test_parse_layers(void) {
    yp_graph *g = yp_test_model("yolov5s");
    if (!g) return;
    uint64_t set;
    yp_err err;
    CHECK(yp_front_parse_layers(g, "2,4,6", &set, &err) == 0 && set == (1u << 2 | 1u << 4 | 1u << 6));
    CHECK(yp_front_parse_layers(g, "none", &set, &err) == 0 && set == 0);
    CHECK(yp_front_parse_layers(g, "2,31", &set, &err) == -1);
    CHECK_STR_HAS(err.msg, "layer 31 does not exist");
    CHECK(yp_front_parse_layers(g, "3", &set, &err) == -1); /* a Conv layer */
    CHECK_STR_HAS(err.msg, "nothing to recompute");
    CHECK(yp_front_parse_layers(g, "2;4", &set, &err) == -1);
    char buf[64];
    yp_front_layers_str(1u << 2 | 1u << 17, buf, sizeof buf);
    CHECK(strcmp(buf, "2,17") == 0);
    yp_graph_free(g);
}

int main(void) {
    YP_RUN(test_dp_equals_brute_force);
    YP_RUN(test_front_shape);
    YP_RUN(test_parse_layers);
    return yp_test_summary();
}
