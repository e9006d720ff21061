/* test_graph_edit.c - the graph edits (yp_graph.h): a new class count reaches Detect, its displayed
 * argument and its output channels; keeping fewer anchors per level keeps the first ones and leaves
 * the copied-from graph alone; out-of-range values are refused; the same values change nothing. */
#include <stdlib.h>
#include <string.h>

#include "yp_ir.h"
#include "yp_test.h"
#include "yp_test_models.h"

/* Detect's output channels per level at 64x64 (na * (nc + 5) each), or -1. */
static int64_t detect_channels(const yp_graph *g) {
    yp_node_info *info = malloc((size_t)g->n_nodes * sizeof *info);
    yp_err err;
    int64_t c = -1;
    if (info && yp_graph_infer(g, 1, 64, 64, info, &err) == 0) c = info[g->n_nodes - 1].out[0].c;
    free(info);
    return c;
}

static int detect_layer_nc(const yp_graph *g) {
    for (int i = 0; i < g->n_layers; i++)
        if (!strcmp(g->layers[i].module, "Detect")) return g->layers[i].args[0];
    return -1;
}

static void test_set_nc(void) {
    yp_err err;
    yp_graph *g = yp_test_model("yolov5n");
    REQUIRE(g != NULL);
    CHECK(g->nc == 80 && detect_channels(g) == 3 * 85);
    int64_t params = yp_graph_params(g);
    CHECK_EQ_I64(yp_graph_set_nc(g, 3, "yolov5n", &err), 0);
    CHECK(g->nc == 3 && g->nodes[g->n_nodes - 1].a.detect.nc == 3 && detect_layer_nc(g) == 3);
    CHECK_EQ_I64(detect_channels(g), 3 * 8);
    CHECK(yp_graph_params(g) < params);
    CHECK_EQ_I64(yp_graph_set_nc(g, 3, "yolov5n", &err), 0); /* the same: no change */
    CHECK_EQ_I64(detect_channels(g), 3 * 8);
    static const int bad[] = {0, -1, YP_GRAPH_MAX_NC + 1};
    for (size_t k = 0; k < sizeof bad / sizeof *bad; k++) {
        CHECK_EQ_I64(yp_graph_set_nc(g, bad[k], "yolov5n", &err), -1);
        CHECK_STR_HAS(err.msg, "yolov5n: nc ");
        CHECK_EQ_I64(g->nc, 3);
    }
    char *ir = yp_ir_write_string(g); /* the edit is the graph's: it survives the IR */
    yp_graph *h = ir ? yp_ir_load_buffer(ir, strlen(ir), "edited", &err) : NULL;
    CHECK(h && h->nc == 3 && detect_layer_nc(h) == 3);
    yp_graph_free(h);
    free(ir);
    yp_graph_free(g);
}

static void test_keep_anchors(void) {
    yp_err err;
    yp_graph *g = yp_test_model("yolov5s");
    REQUIRE(g != NULL);
    REQUIRE(g->na == 3 && g->nl == 3);
    yp_graph *h = yp_graph_copy(g, &err);
    REQUIRE(h != NULL);
    char *a = yp_ir_write_string(g), *b = yp_ir_write_string(h);
    CHECK(a && b && !strcmp(a, b)); /* the copy is the graph */
    free(a), free(b);
    CHECK_EQ_I64(yp_graph_keep_anchors(h, 2, "yolov5s", &err), 0);
    CHECK(h->na == 2 && h->nodes[h->n_nodes - 1].a.detect.na == 2);
    CHECK_EQ_I64(detect_channels(h), 2 * 85);
    for (int l = 0; l < h->nl; l++) {
        CHECK(!memcmp(h->anchors[l], g->anchors[l], 2 * sizeof g->anchors[l][0])); /* the first two */
        CHECK(h->anchors[l][2][0] == 0 && h->anchors[l][2][1] == 0);
    }
    CHECK(g->na == 3 && detect_channels(g) == 3 * 85); /* the original stays */
    CHECK_EQ_I64(yp_graph_keep_anchors(h, 2, "yolov5s", &err), 0);
    CHECK_EQ_I64(h->na, 2);
    static const int bad[] = {0, 3, -2};
    for (size_t k = 0; k < sizeof bad / sizeof *bad; k++) {
        CHECK_EQ_I64(yp_graph_keep_anchors(h, bad[k], "yolov5s", &err), -1);
        CHECK_STR_HAS(err.msg, "anchors per level");
        CHECK_EQ_I64(h->na, 2);
    }
    CHECK_EQ_I64(yp_graph_keep_anchors(h, 1, "yolov5s", &err), 0);
    CHECK_EQ_I64(detect_channels(h), 85);
    yp_graph_free(h);
    yp_graph_free(g);
}

int main(void) {
    YP_RUN(test_set_nc);
    YP_RUN(test_keep_anchors);
    return yp_test_summary();
}
