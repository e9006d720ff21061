/* test_ir.c - the IR loads, writes back identically, and the atomic writer leaves no temp file. */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "yp_ir.h"
#include "yp_test.h"

static void test_load_tiny(void) {
    yp_err err;
    yp_graph *g = yp_ir_load_file(YP_TEST_DATA "/ir/tiny.json", &err);
    REQUIRE(g != NULL);
    CHECK_EQ_I64(g->n_layers, 4);
    CHECK_EQ_I64(g->n_nodes, 8);
    CHECK_EQ_I64(g->nl, 1);
    CHECK_EQ_I64(g->na, 1);
    CHECK(g->nodes[0].op == YP_OP_CONV2D && g->nodes[0].a.conv.kh == 3 && g->nodes[0].a.conv.kw == 3 && g->nodes[0].inputs[0] == YP_INPUT_IMAGE);
    CHECK(g->nodes[1].a.bn.eps == 0.001);
    CHECK(strcmp(g->nodes[7].name, "model.3") == 0);
    CHECK_EQ_I64(g->layers[2].from[1], 1);
    /* params: conv 4*3*9 + bn 8 + conv 16 + bn 8 + detect 8*6 + 6 */
    CHECK_EQ_I64(yp_graph_params(g), 108 + 8 + 16 + 8 + 48 + 6);
    yp_graph_free(g);
}

static void test_round_trip(void) {
    yp_err err;
    yp_graph *g = yp_ir_load_file(YP_TEST_DATA "/ir/tiny.json", &err);
    REQUIRE(g != NULL);
    char *a = yp_ir_write_string(g);
    CHECK(a != NULL);
    yp_graph *g2 = a ? yp_ir_load_buffer(a, strlen(a), "roundtrip", &err) : NULL;
    CHECK(g2 != NULL);
    char *b = g2 ? yp_ir_write_string(g2) : NULL;
    CHECK(b != NULL && strcmp(a, b) == 0);
    /* the file writer is atomic: the target appears complete and no .tmp is left behind */
    char path[] = "/tmp/yp_test_ir_XXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    if (fd >= 0) {
        close(fd);
        CHECK(yp_ir_write_file(g, path, &err) == 0);
        yp_graph *g3 = yp_ir_load_file(path, &err);
        CHECK(g3 != NULL);
        yp_graph_free(g3);
        char tmp[64];
        snprintf(tmp, sizeof tmp, "%s.tmp", path);
        CHECK(access(tmp, F_OK) != 0);
        unlink(path);
    }
    CHECK(yp_ir_write_file(g, "/nonexistent-dir/x.json", &err) == -1);
    CHECK_STR_HAS(err.msg, "cannot create a temporary file next to it");
    free(a);
    free(b);
    yp_graph_free(g);
    yp_graph_free(g2);
}

/* tiny.json with its first conv's `"k": 3, "s": 2, "p": 1` replaced by attrs; the load's graph or
 * NULL with err set. */
static yp_graph *load_conv0(const char *attrs, yp_err *err) {
    static char buf[1 << 16];
    FILE *f = fopen(YP_TEST_DATA "/ir/tiny.json", "rb");
    size_t n = f ? fread(buf, 1, sizeof buf - 1, f) : 0;
    if (f) fclose(f);
    buf[n] = 0;
    char *at = strstr(buf, "\"k\": 3, \"s\": 2, \"p\": 1");
    if (!at) return NULL;
    static char out[1 << 16];
    snprintf(out, sizeof out, "%.*s%s%s", (int)(at - buf), buf, attrs, at + strlen("\"k\": 3, \"s\": 2, \"p\": 1"));
    return yp_ir_load_buffer(out, strlen(out), "conv0.json", err);
}

/* Per-axis kernel, stride and padding: N or [h, w], written back as N when the axes agree; a
 * wrong array is refused naming the field. */
static void test_conv_per_axis(void) {
    yp_err err;
    yp_graph *g = load_conv0("\"k\": [1, 3], \"s\": [2, 2], \"p\": [0, 1]", &err);
    if (!g) fprintf(stderr, "  %s\n", err.msg);
    REQUIRE(g != NULL);
    const yp_conv_attrs *a = &g->nodes[0].a.conv;
    CHECK(a->kh == 1 && a->kw == 3 && a->sh == 2 && a->sw == 2 && a->ph == 0 && a->pw == 1);
    CHECK_EQ_I64(yp_graph_params(g), 4 * 3 * 3 + 8 + 16 + 8 + 48 + 6); /* conv 0: 4*3*(1*3) */
    char *ir = yp_ir_write_string(g);
    REQUIRE(ir != NULL);
    size_t m = 0; /* without white space, whatever the writer's layout */
    for (size_t i = 0; ir[i]; i++)
        if (ir[i] != ' ' && ir[i] != '\n') ir[m++] = ir[i];
    ir[m] = 0;
    CHECK(strstr(ir, "\"k\":[1,3],\"s\":2,\"p\":[0,1]") != NULL); /* equal axes: one number */
    free(ir);
    yp_graph_free(g);
    static const struct { const char *attrs, *words; } bad[] = {
        {"\"k\": [1, 3, 3], \"s\": 2, \"p\": 1", "nodes[0].attrs.k: expected an array of 1 to 2 integers"},
        {"\"k\": [3], \"s\": 2, \"p\": 1", "nodes[0].attrs.k: expected N or [height, width], got an array of 1"},
        {"\"k\": [0, 3], \"s\": 2, \"p\": 1", "nodes[0].attrs.k[0]"},
        {"\"k\": 3, \"s\": [2, \"2\"], \"p\": 1", "nodes[0].attrs.s[1]"},
        {"\"k\": 3, \"s\": 2, \"p\": 1, \"torch_input_copy\": 1", "torch_input_copy"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        g = load_conv0(bad[i].attrs, &err);
        CHECK(g == NULL);
        if (!g) CHECK_STR_HAS(err.msg, bad[i].words);
        yp_graph_free(g);
    }
}

static void test_op_table(void) {
    for (int op = 0; op < YP_OP_COUNT; op++) {
        CHECK((int)yp_op_get((yp_op)op)->op == op);
        CHECK_EQ_I64(yp_op_from_name(yp_op_get((yp_op)op)->name), op);
    }
    CHECK_EQ_I64(yp_op_from_name("gelu"), -1);
}

int main(void) {
    YP_RUN(test_load_tiny);
    YP_RUN(test_round_trip);
    YP_RUN(test_conv_per_axis);
    YP_RUN(test_op_table);
    return yp_test_summary();
}
