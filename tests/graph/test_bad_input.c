/* test_bad_input.c - every kind of bad IR gets one clear line naming the file, the JSON path (or
 * line:column) and the fix; nothing crashes or leaks (the sanitizer build runs this too).
 * Each case mutates the valid tests/data/ir/tiny.json in memory. */
#include <stdint.h>
#include <stdlib.h>

#include "yp_ir.h"
#include "yp_test.h"

static char *tiny_text(void) {
    FILE *f = fopen(YP_TEST_DATA "/ir/tiny.json", "rb");
    if (!f) return NULL;
    char *buf = calloc(1, 1 << 16);
    size_t n = buf ? fread(buf, 1, (1 << 16) - 1, f) : 0;
    fclose(f);
    if (n == 0) {
        free(buf);
        return NULL;
    }
    return buf;
}

/* tiny.json with the first occurrence of `from` replaced by `to` (caller frees). */
static char *mutate(const char *from, const char *to) {
    char *src = tiny_text();
    if (!src) return NULL;
    char *at = strstr(src, from);
    if (!at) {
        fprintf(stderr, "fixture lacks \"%s\"\n", from);
        free(src);
        return NULL;
    }
    size_t n = strlen(src) + strlen(to) + 1;
    char *out = malloc(n);
    if (out) snprintf(out, n, "%.*s%s%s", (int)(at - src), src, to, at + strlen(from));
    free(src);
    return out;
}

/* Loads the mutated text; the load must fail with a message holding every fragment. */
static void expect_error(const char *from, const char *to, const char *frag1, const char *frag2) {
    char *text = mutate(from, to);
    CHECK(text != NULL);
    if (!text) return;
    yp_err err = {{0}};
    yp_graph *g = yp_ir_load_buffer(text, strlen(text), "bad.json", &err);
    CHECK(g == NULL);
    yp_graph_free(g);
    CHECK_STR_HAS(err.msg, "bad.json");
    CHECK_STR_HAS(err.msg, frag1);
    if (frag2) CHECK_STR_HAS(err.msg, frag2);
    CHECK(strchr(err.msg, '\n') == NULL); /* one line */
    free(text);
}

static void test_fixture_is_valid(void) {
    char *text = tiny_text();
    yp_err err;
    yp_graph *g = text ? yp_ir_load_buffer(text, strlen(text), "tiny.json", &err) : NULL;
    CHECK(g != NULL);
    yp_graph_free(g);
    free(text);
}

static void test_malformed_json(void) {
    /* a missing comma after "name": "tiny" (line 4): reported where the next key starts */
    expect_error("\"tiny\",", "\"tiny\"", "bad.json:5:3:", "malformed JSON");
    expect_error("\"layers\": [", "\"layers\": [[", "malformed JSON", NULL);
}

static void test_wrong_types(void) {
    expect_error("\"k\": 3,", "\"k\": \"3\",", "nodes[0].attrs.k", "got \"3\"");
    expect_error("\"nc\": 1,", "\"nc\": 1.5,", "nc: expected an integer", NULL);
    expect_error("\"bias\": false", "\"bias\": 0", "nodes[0].attrs.bias", "true or false");
    expect_error("\"inputs\": [2, 5]", "\"inputs\": 2", "nodes[6].inputs", "array");
    expect_error("\"eps\": 0.001", "\"eps\": -1", "nodes[1].attrs.eps", NULL);
}

static void test_missing_fields(void) {
    expect_error("\"c_out\": 4, ", "", "nodes[0].attrs.c_out: missing", "add it");
    expect_error("\"version\": 1,", "", "version: missing", NULL);
    expect_error("\"input\": {\"channels\": 3},", "", "input: missing", NULL);
}

static void test_unknown_op_and_keys(void) {
    expect_error("\"op\": \"silu\"", "\"op\": \"gelu\"", "nodes[2].op: unknown op \"gelu\"", "conv2d");
    expect_error("\"groups\": 1,", "\"groups\": 1, \"dilation\": 2,", "nodes[0].attrs.dilation: unknown key",
                 "known keys");
    expect_error("\"nc\": 1,", "\"nc\": 1, \"colour\": 3,", "colour: unknown key", NULL);
    expect_error("\"format\": \"yoloplan-ir\"", "\"format\": \"onnx\"", "format", "yoloplan-ir");
    expect_error("\"version\": 1", "\"version\": 2", "version: 2 is not supported", NULL);
}

static void test_bad_references(void) {
    /* layer from pointing forward, and to a layer that does not exist */
    expect_error("\"from\": [0, 1]", "\"from\": [0, 3]", "layers[2].from[1]", "points forward");
    expect_error("\"from\": [0, 1]", "\"from\": [0, 9]", "layers[2].from[1]", "does not exist");
    /* node input that does not exist, and one pointing to a later node that reads it back */
    expect_error("\"inputs\": [2, 5]", "\"inputs\": [2, 42]", "nodes[6].inputs[1]", "does not exist");
    expect_error("\"inputs\": [2, 5]", "\"inputs\": [2, 7]", "cycle: node 7 depends on node 6", NULL);
    /* a cycle: node 1 reads node 2, which reads node 1 */
    expect_error("\"layer\": 0, \"inputs\": [0]", "\"layer\": 0, \"inputs\": [2]", "cycle", "acyclic");
}

static void test_channel_mismatch(void) {
    expect_error("\"c_in\": 4, \"c_out\": 4, \"k\": 1", "\"c_in\": 5, \"c_out\": 4, \"k\": 1", "nodes[3].attrs.c_in",
                 "set c_in to 4");
    expect_error("\"c\": 4, \"eps\"", "\"c\": 8, \"eps\"", "nodes[1].attrs.c", "4 channels");
    expect_error("\"c_in\": [8]", "\"c_in\": [16]", "nodes[7].attrs.c_in[0]", "set it to 8");
}

static void test_sizes(void) {
    char *text = tiny_text();
    yp_err err;
    yp_graph *g = text ? yp_ir_load_buffer(text, strlen(text), "tiny.json", &err) : NULL;
    CHECK(g != NULL);
    if (g) {
        yp_node_info *info = calloc((size_t)g->n_nodes, sizeof *info);
        CHECK(yp_graph_infer(g, 1, 9, 8, info, &err) == -1); /* not a multiple of the stride 2 */
        CHECK_STR_HAS(err.msg, "multiple of 2");
        CHECK(yp_graph_infer(g, 0, 8, 8, info, &err) == -1);
        CHECK_STR_HAS(err.msg, "batch 0");
        CHECK(yp_graph_infer(g, INT64_MAX / 4, 1 << 20, 1 << 20, info, &err) == -1);
        CHECK_STR_HAS(err.msg, "overflows 64 bits");
        CHECK(yp_graph_infer(g, 2, 64, 32, info, &err) == 0); /* rectangular is fine */
        CHECK_EQ_I64(info[0].out[0].h, 32);
        CHECK_EQ_I64(info[0].out[0].w, 16);
        free(info);
    }
    yp_graph_free(g);
    free(text);
    /* absurd attribute values are refused before any arithmetic */
    expect_error("\"c_out\": 4,", "\"c_out\": 1e30,", "nodes[0].attrs.c_out", "integer");
}

static void test_empty_and_huge(void) {
    yp_err err;
    CHECK(yp_ir_load_buffer("", 0, "empty.json", &err) == NULL);
    CHECK_STR_HAS(err.msg, "empty.json: the file is empty");
    CHECK(yp_ir_load_buffer(" \n\t ", 4, "blank.json", &err) == NULL);
    CHECK_STR_HAS(err.msg, "empty");
    size_t n = (size_t)YP_IR_MAX_BYTES + 16;
    char *huge = malloc(n);
    CHECK(huge != NULL);
    if (huge) {
        memset(huge, ' ', n);
        huge[0] = '{';
        CHECK(yp_ir_load_buffer(huge, n, "huge.json", &err) == NULL);
        CHECK_STR_HAS(err.msg, "larger than");
        free(huge);
    }
    CHECK(yp_ir_load_buffer("[1, 2]", 6, "array.json", &err) == NULL);
    CHECK_STR_HAS(err.msg, "top level must be an object");
    CHECK(yp_ir_load_file(YP_TEST_DATA "/ir/does-not-exist.json", &err) == NULL);
    CHECK_STR_HAS(err.msg, "cannot open");
}

int main(void) {
    YP_RUN(test_fixture_is_valid);
    YP_RUN(test_malformed_json);
    YP_RUN(test_wrong_types);
    YP_RUN(test_missing_fields);
    YP_RUN(test_unknown_op_and_keys);
    YP_RUN(test_bad_references);
    YP_RUN(test_channel_mismatch);
    YP_RUN(test_sizes);
    YP_RUN(test_empty_and_huge);
    return yp_test_summary();
}
