/* test_front.c - the checkpoint front by DP equals the front by brute force (every subset's
 * real schedule) on several graphs and sizes, and its extremes are what they must be. */
#include <stdlib.h>

#include "yp_front.h"
#include "yp_ir.h"
#include "yp_test.h"
#include "yp_test_models.h"
#include "yp_yaml.h"

/* The DP front of one graph at one size equals the brute-force front (every subset's real
 * schedule, at most 2^12). */
static void check_dp_equals_brute(const char *what, const yp_graph *g, int64_t h, int64_t w) {
    yp_front dp, bf;
    yp_err err;
    REQUIRE(yp_front_compute(g, h, w, &dp, &err) == 0);
    if (yp_front_brute(g, h, w, 12, &bf, &err)) {
        fprintf(stderr, "%s: %s\n", what, err.msg);
        CHECK(0);
        yp_front_free(&dp);
        return;
    }
    CHECK_EQ_I64(dp.n, bf.n);
    for (int i = 0; i < dp.n && i < bf.n; i++) {
        CHECK_EQ_I64(dp.p[i].layers, bf.p[i].layers);
        CHECK_EQ_I64(dp.p[i].saved_bytes, bf.p[i].saved_bytes);
        CHECK_EQ_I64(dp.p[i].recompute_flops, bf.p[i].recompute_flops);
    }
    int k = 0;
    for (int l = 0; l < g->n_layers; l++) k += yp_layer_inner_convs(g, l) > 0;
    CHECK(k >= 2); /* a front over fewer layers would prove little */
    printf("  %s at %lldx%lld: %d front points of %d subsets\n", what, (long long)w, (long long)h, dp.n, 1 << k);
    yp_front_free(&dp);
    yp_front_free(&bf);
}

/* Several graphs (two bundled models, the narrow yolov5t, the v5.0 Focus+SPP architecture, a
 * four-level P6 layout with 12 checkpointable layers) at several sizes, square and not: the DP is exact wherever the brute force can reach. */
static void test_dp_equals_brute_force(void) {
    static const struct { const char *model, *yaml; int64_t sizes[3][2]; } cases[] = {
        {"yolov5n", NULL, {{64, 96}, {128, 128}, {256, 160}}},
        {"yolov5s", NULL, {{96, 64}, {320, 320}, {0, 0}}},
        {NULL, "yolov5t.yaml", {{128, 128}, {192, 64}, {0, 0}}},
        {NULL, "yolov5s-v5.0.yaml", {{64, 64}, {160, 224}, {0, 0}}},
        {NULL, "yolov5t6.yaml", {{128, 128}, {0, 0}, {0, 0}}},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        yp_graph *g;
        char path[512];
        yp_err err;
        if (cases[c].model) {
            g = yp_test_model(cases[c].model);
        } else {
            snprintf(path, sizeof path, "%s/yaml/good/%s", YP_TEST_DATA, cases[c].yaml);
            g = yp_yaml_import(path, 0, &err);
            if (!g) fprintf(stderr, "%s\n", err.msg);
        }
        REQUIRE(g != NULL);
        for (int k = 0; k < 3 && cases[c].sizes[k][0]; k++)
            check_dp_equals_brute(cases[c].model ? cases[c].model : cases[c].yaml, g, cases[c].sizes[k][0],
                                  cases[c].sizes[k][1]);
        yp_graph_free(g);
    }
}

/* The front starts at "no checkpoint", ends at "every checkpointable layer", and is monotone. */
static void test_front_shape(void) {
    yp_graph *g = yp_test_model("yolov5s");
    REQUIRE(g != NULL);
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
    REQUIRE(g != NULL);
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
