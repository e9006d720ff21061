/* test_shapes.c - shapes, parameter counts and FLOPs of the bundled models against the
 * YOLOv5 facts (docs/architecture.md §5; the shapes and parameters Ultralytics' model summary prints). */
#include <stdlib.h>

#include "yp_ir.h"
#include "yp_test.h"
#include "yp_test_models.h"

/* yolov5s at 640: C x H x W of every layer output (as Ultralytics' model prints them). */
static void test_yolov5s_shapes_640(void) {
    static const int c[24] = {32, 64, 64, 128, 128, 256, 256, 512, 512, 512, 256, 256,
                              512, 256, 128, 128, 256, 128, 128, 256, 256, 256, 512, 512};
    static const int hw[24] = {320, 160, 160, 80, 80, 40, 40, 20, 20, 20, 20, 40, 40, 40, 40, 80, 80, 80, 40, 40, 40, 20, 20, 20};
    yp_graph *g = yp_test_model("yolov5s");
    REQUIRE(g != NULL);
    yp_node_info *info = calloc((size_t)g->n_nodes, sizeof *info);
    yp_err err;
    CHECK(yp_graph_infer(g, 2, 640, 640, info, &err) == 0);
    for (int i = 0; i < 24; i++) {
        yp_shape s = info[g->layers[i].output].out[0];
        if (s.c != c[i] || s.h != hw[i] || s.w != hw[i] || s.n != 2)
            fprintf(stderr, "layer %d: %lldx%lldx%lld\n", i, (long long)s.c, (long long)s.h, (long long)s.w);
        CHECK(s.c == c[i] && s.h == hw[i] && s.w == hw[i] && s.n == 2);
    }
    const yp_node_info *d = &info[g->layers[24].output];
    CHECK_EQ_I64(d->n_out, 3);
    CHECK(d->out[0].c == 255 && d->out[0].h == 80 && d->out[1].h == 40 && d->out[2].h == 20);
    free(info);
    yp_graph_free(g);
}

static void test_rectangular(void) {
    yp_graph *g = yp_test_model("yolov5s");
    REQUIRE(g != NULL);
    yp_node_info *info = calloc((size_t)g->n_nodes, sizeof *info);
    yp_err err;
    CHECK(yp_graph_infer(g, 1, 384, 640, info, &err) == 0); /* h 384, w 640 */
    const yp_node_info *d = &info[g->layers[24].output];
    CHECK(d->out[0].h == 48 && d->out[0].w == 80 && d->out[2].h == 12 && d->out[2].w == 20);
    CHECK(yp_graph_infer(g, 1, 640, 650, info, &err) == -1);
    CHECK_STR_HAS(err.msg, "multiple of 32");
    free(info);
    yp_graph_free(g);
}

/* Per-layer parameters of yolov5s as printed by Ultralytics' parse_model. */
static void test_yolov5s_layer_params(void) {
    static const int64_t p[25] = {3520, 18560, 18816, 73984, 115712, 295424, 625152, 1180672, 1182720,
                                  656896, 131584, 0, 0, 361984, 33024, 0, 0, 90880, 147712, 0,
                                  296448, 590336, 0, 1182720, 229245};
    yp_graph *g = yp_test_model("yolov5s");
    REQUIRE(g != NULL);
    yp_node_info *info = calloc((size_t)g->n_nodes, sizeof *info);
    int64_t sum[25] = {0};
    yp_err err;
    CHECK(yp_graph_infer(g, 1, 640, 640, info, &err) == 0);
    for (int i = 0; i < g->n_nodes; i++) sum[g->nodes[i].layer] += info[i].params;
    for (int l = 0; l < 25; l++) CHECK_EQ_I64(sum[l], p[l]);
    free(info);
    yp_graph_free(g);
}

/* Totals for all five models: parameters exact, GFLOPs at 640 within 1 % of the published figure. */
static void test_zoo_totals(void) {
    static const char *names[5] = {"yolov5n", "yolov5s", "yolov5m", "yolov5l", "yolov5x"};
    static const int64_t params[5] = {1872157, 7235389, 21190557, 46563709, 86749405};
    static const double gflops[5] = {4.5, 16.5, 49.0, 109.1, 205.7};
    for (int m = 0; m < 5; m++) {
        yp_graph *g = yp_test_model(names[m]);
        CHECK(g != NULL);
        if (!g) continue;
        yp_node_info *info = calloc((size_t)g->n_nodes, sizeof *info);
        yp_err err;
        CHECK(yp_graph_infer(g, 1, 640, 640, info, &err) == 0);
        int64_t pp = 0, fl = 0;
        for (int i = 0; i < g->n_nodes; i++) pp += info[i].params, fl += info[i].flops;
        CHECK_EQ_I64(pp, params[m]);
        CHECK_EQ_I64(yp_graph_params(g), params[m]);
        double rel = fabs(fl / 1e9 - gflops[m]) / gflops[m];
        if (rel > 0.01) fprintf(stderr, "%s: %.2f GFLOPs vs %.1f\n", names[m], fl / 1e9, gflops[m]);
        CHECK(rel <= 0.01);
        /* FLOPs scale linearly with batch */
        CHECK(yp_graph_infer(g, 4, 640, 640, info, &err) == 0);
        int64_t fl4 = 0;
        for (int i = 0; i < g->n_nodes; i++) fl4 += info[i].flops;
        CHECK_EQ_I64(fl4, 4 * fl);
        free(info);
        yp_graph_free(g);
    }
}

int main(void) {
    YP_RUN(test_yolov5s_shapes_640);
    YP_RUN(test_rectangular);
    YP_RUN(test_yolov5s_layer_params);
    YP_RUN(test_zoo_totals);
    return yp_test_summary();
}
