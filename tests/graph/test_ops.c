/* test_ops.c - the op table: every row is complete (a half-added op fails here), and the facts
 * other layers read from the rows (matrix math, launches, elementwise FLOPs, the unknown-op hint,
 * the schedule's flags, the parameters) say what those layers assumed before they asked the rows. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops_internal.h" /* the rows' contexts, to ask contract's shape inference directly */
#include "yp_ir.h"
#include "yp_schedule.h"
#include "yp_test.h"
#include "yp_test_models.h"
#include "yp_yaml.h"

static void test_rows_complete(void) {
    for (int op = 0; op < YP_OP_COUNT; op++) {
        const yp_op_info *r = yp_op_get((yp_op)op);
        REQUIRE(r->name != NULL && r->name[0] != '\0');
        CHECK_EQ_I64(r->op, op);
        CHECK_EQ_I64(yp_op_from_name(r->name), op); /* also: no two rows share a name */
        CHECK(r->min_inputs >= 1 && r->min_inputs <= r->max_inputs && r->max_inputs <= YP_MAX_INPUTS);
        CHECK(r->matrix_math == 0 || r->matrix_math == 1);
        CHECK(r->fwd_launches >= 1 && r->bwd_launches >= 1);
        CHECK(r->check != NULL);
        CHECK(r->infer != NULL);
        CHECK(r->eltwise_flops != NULL);
        CHECK(r->load_attrs != NULL);
        CHECK(r->write_attrs != NULL);
    }
}

/* The ops the cost model and the schedule knew by id before they asked the rows (a new op is free
 * to differ). */
static const yp_op k_conv[] = {YP_OP_CONV2D, YP_OP_DETECT};
static const yp_op k_eltwise[] = {YP_OP_BATCHNORM2D, YP_OP_SILU, YP_OP_ADD, YP_OP_CONCAT, YP_OP_UPSAMPLE_NEAREST,
                                  YP_OP_MAXPOOL2D, YP_OP_SPACE_TO_DEPTH};

/* The cost model used to test "conv2d or detect" itself: tensor-core rate, and two backward
 * launches (data and weight gradients); one launch otherwise. */
static void test_matrix_math(void) {
    for (size_t k = 0; k < sizeof k_conv / sizeof *k_conv; k++) {
        const yp_op_info *r = yp_op_get(k_conv[k]);
        CHECK(r->matrix_math == 1 && r->fwd_launches == 1 && r->bwd_launches == 2);
    }
    for (size_t k = 0; k < sizeof k_eltwise / sizeof *k_eltwise; k++) {
        const yp_op_info *r = yp_op_get(k_eltwise[k]);
        CHECK(r->matrix_math == 0 && r->fwd_launches == 1 && r->bwd_launches == 1);
    }
}

/* The schedule's elementwise rule: BN 6 per element, SiLU 5, maxpool k*k, the rest 1. */
static void test_eltwise_flops(void) {
    yp_shape out = {2, 3, 5, 7};
    int64_t numel = 2 * 3 * 5 * 7;
    for (size_t k = 0; k < sizeof k_eltwise / sizeof *k_eltwise; k++) {
        yp_op op = k_eltwise[k];
        yp_node n = {0};
        n.op = op;
        n.a.pool = (yp_pool_attrs){5, 1, 2};
        int64_t per = op == YP_OP_BATCHNORM2D ? 6 : op == YP_OP_SILU ? 5 : op == YP_OP_MAXPOOL2D ? 25 : 1;
        CHECK_EQ_I64(yp_op_get(op)->eltwise_flops(&n, out), per * numel);
    }
}

static char *read_all(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    char *buf = malloc(1 << 16);
    *len = buf ? fread(buf, 1, (1 << 16) - 1, f) : 0;
    fclose(f);
    if (buf) buf[*len] = '\0';
    return buf;
}

/* The loader's hint for an unknown op names every row, in table order. */
/* What each backward reads: the schedule keeps (or recomputes) exactly these for it. */
static void test_bwd_reads(void) {
    CHECK(yp_op_get(YP_OP_CONV2D)->bwd_reads == YP_BWD_INPUT_IF_TRAINS);
    CHECK(yp_op_get(YP_OP_DETECT)->bwd_reads == YP_BWD_INPUT_IF_TRAINS);
    CHECK(yp_op_get(YP_OP_BATCHNORM2D)->bwd_reads == (YP_BWD_INPUT | YP_BWD_STATS));
    CHECK(yp_op_get(YP_OP_SILU)->bwd_reads == YP_BWD_INPUT);
    CHECK(yp_op_get(YP_OP_MAXPOOL2D)->bwd_reads == (YP_BWD_INPUT | YP_BWD_INDICES));
    const yp_op gradient_only[] = {YP_OP_ADD, YP_OP_CONCAT, YP_OP_UPSAMPLE_NEAREST, YP_OP_SPACE_TO_DEPTH};
    for (size_t k = 0; k < sizeof gradient_only / sizeof *gradient_only; k++)
        CHECK(yp_op_get(gradient_only[k])->bwd_reads == 0);
}

/* The rows added for YOLOv5's `activation:` key and yolov3-tiny: ReLU's backward reads its output
 * (PyTorch saves the result), LeakyReLU's and Hardswish's their input, the pad's nothing; FLOPs
 * per output element 1, 2, 4 and 1; the four activations, and only they, are what the checkpoint
 * boundary looks through. */
static void test_activation_rows(void) {
    CHECK(yp_op_get(YP_OP_RELU)->bwd_reads == YP_BWD_OUTPUT);
    CHECK(yp_op_get(YP_OP_LEAKY_RELU)->bwd_reads == YP_BWD_INPUT);
    CHECK(yp_op_get(YP_OP_HARDSWISH)->bwd_reads == YP_BWD_INPUT);
    CHECK(yp_op_get(YP_OP_ZERO_PAD)->bwd_reads == 0);
    yp_shape out = {2, 3, 5, 7};
    const struct { yp_op op; int64_t per; } fl[] = {
        {YP_OP_RELU, 1}, {YP_OP_LEAKY_RELU, 2}, {YP_OP_HARDSWISH, 4}, {YP_OP_ZERO_PAD, 1}};
    for (size_t k = 0; k < sizeof fl / sizeof *fl; k++) {
        yp_node n = {0};
        n.op = fl[k].op;
        const yp_op_info *r = yp_op_get(fl[k].op);
        CHECK_EQ_I64(r->eltwise_flops(&n, out), fl[k].per * yp_shape_numel(out));
        CHECK(r->matrix_math == 0 && r->fwd_launches == 1 && r->bwd_launches == 1);
    }
    for (int op = 0; op < YP_OP_COUNT; op++) {
        int act = op == YP_OP_SILU || op == YP_OP_RELU || op == YP_OP_LEAKY_RELU || op == YP_OP_HARDSWISH;
        CHECK_EQ_I64(yp_op_get((yp_op)op)->activation, act);
    }
}

/* acts.json with `from` replaced by `to` (which must occur) loads, or fails with a message holding
 * `want`. */
static void load_edited(const char *from, const char *to, const char *want) {
    size_t len = 0;
    char *buf = read_all(YP_TEST_DATA "/ir/acts.json", &len), *out = malloc(len + 256);
    REQUIRE(buf != NULL && out != NULL);
    char *at = strstr(buf, from);
    REQUIRE(at != NULL);
    snprintf(out, len + 256, "%.*s%s%s", (int)(at - buf), buf, to, at + strlen(from));
    yp_err err;
    yp_graph *g = yp_ir_load_buffer(out, strlen(out), "acts.json", &err);
    if (want) {
        CHECK(g == NULL);
        if (!g) CHECK_STR_HAS(err.msg, want);
    } else {
        CHECK(g != NULL);
    }
    yp_graph_free(g);
    free(buf), free(out);
}

/* The new attrs: read, range-checked with the path in the message, unknown keys refused, and
 * written back as read (a round trip gives the same file). */
static void test_activation_attrs(void) {
    yp_err err;
    yp_graph *g = yp_ir_load_file(YP_TEST_DATA "/ir/acts.json", &err);
    REQUIRE(g != NULL);
    CHECK(g->nodes[2].op == YP_OP_LEAKY_RELU && g->nodes[2].a.leaky.slope == 0.1);
    const yp_pad_attrs *p = &g->nodes[9].a.pad;
    CHECK(g->nodes[9].op == YP_OP_ZERO_PAD && p->left == 0 && p->right == 1 && p->top == 0 && p->bottom == 1);
    char *text = yp_ir_write_string(g);
    REQUIRE(text != NULL);
    yp_graph *g2 = yp_ir_load_buffer(text, strlen(text), "written", &err);
    REQUIRE(g2 != NULL);
    char *text2 = yp_ir_write_string(g2);
    CHECK(text2 && strcmp(text, text2) == 0);
    CHECK(g2->nodes[2].a.leaky.slope == 0.1 && g2->nodes[9].a.pad.bottom == 1);
    yp_node_info info[13];
    REQUIRE(g->n_nodes == 13);
    CHECK(yp_graph_infer(g, 1, 32, 32, info, &err) == 0);
    CHECK(info[9].out[0].h == 17 && info[9].out[0].w == 17 && info[9].out[0].c == 8); /* 16 + 0 + 1 */
    CHECK(info[10].out[0].h == 16 && info[11].out[0].h == 8);
    free(text), free(text2);
    yp_graph_free(g2), yp_graph_free(g);
    load_edited("\"slope\": 0.1", "\"slope\": 1.5", "acts.json: nodes[2].attrs.slope: expected a number in 0..1, got 1.5");
    load_edited("\"slope\": 0.1", "\"negative_slope\": 0.1", "negative_slope");
    load_edited("\"left\": 0", "\"left\": -1", "nodes[9].attrs.left");
    load_edited("\"bottom\": 1", "\"bottom\": 5000", "nodes[9].attrs.bottom");
    load_edited("\"right\": 1, ", "", "right");
    load_edited("\"inputs\": [7]}", "\"inputs\": [7], \"attrs\": {\"x\": 1}}", "nodes[8].attrs");
    load_edited("\"slope\": 0.1", "\"slope\": 0", NULL); /* the ends of the range load */
}

/* ---- contract and expand (YOLOv5's Contract and Expand) ---- */

/* A network through both at gains 3 and 2: Contract(3) of the image, Expand(3) back, two
 * stride-2 convs, Detect at stride 4. The image must be a multiple of 12, the least common
 * multiple of the strides 3 and 4, not of their maximum. */
static const char k_blocks_ir[] =
    "{\"format\": \"yoloplan-ir\", \"version\": 1, \"name\": \"blocks\", \"nc\": 1, \"depth_multiple\": 1,"
    " \"width_multiple\": 1, \"input\": {\"channels\": 3}, \"strides\": [4], \"anchors\": [[4, 4]],"
    " \"layers\": ["
    "  {\"index\": 0, \"from\": [-1], \"repeats\": 1, \"module\": \"Contract\", \"args\": [3], \"output\": 0},"
    "  {\"index\": 1, \"from\": [0], \"repeats\": 1, \"module\": \"Expand\", \"args\": [3], \"output\": 1},"
    "  {\"index\": 2, \"from\": [1], \"repeats\": 1, \"module\": \"Conv\", \"args\": [3, 8, 3, 2, 1], \"output\": 2},"
    "  {\"index\": 3, \"from\": [2], \"repeats\": 1, \"module\": \"Conv\", \"args\": [8, 8, 3, 2, 1], \"output\": 3},"
    "  {\"index\": 4, \"from\": [3], \"repeats\": 1, \"module\": \"Detect\", \"args\": [1, 8], \"output\": 4}],"
    " \"nodes\": ["
    "  {\"id\": 0, \"op\": \"contract\", \"name\": \"model.0\", \"layer\": 0, \"inputs\": [-1], \"attrs\": {\"gain\": 3}},"
    "  {\"id\": 1, \"op\": \"expand\", \"name\": \"model.1\", \"layer\": 1, \"inputs\": [0], \"attrs\": {\"gain\": 3}},"
    "  {\"id\": 2, \"op\": \"conv2d\", \"name\": \"model.2\", \"layer\": 2, \"inputs\": [1], \"attrs\": {\"c_in\": 3,"
    "   \"c_out\": 8, \"k\": 3, \"s\": 2, \"p\": 1, \"groups\": 1, \"bias\": false}},"
    "  {\"id\": 3, \"op\": \"conv2d\", \"name\": \"model.3\", \"layer\": 3, \"inputs\": [2], \"attrs\": {\"c_in\": 8,"
    "   \"c_out\": 8, \"k\": 3, \"s\": 2, \"p\": 1, \"groups\": 1, \"bias\": false}},"
    "  {\"id\": 4, \"op\": \"detect\", \"name\": \"model.4\", \"layer\": 4, \"inputs\": [3], \"attrs\": {\"nc\": 1,"
    "   \"na\": 1, \"nl\": 1, \"c_in\": [8]}}]}";

/* k_blocks_ir with `from` replaced by `to` (which must occur): the graph, or NULL with err. */
static yp_graph *load_blocks(const char *from, const char *to, yp_err *err) {
    char buf[sizeof k_blocks_ir + 256];
    const char *at = from ? strstr(k_blocks_ir, from) : NULL;
    CHECK(!from || at != NULL);
    if (from && !at) return NULL;
    if (at)
        snprintf(buf, sizeof buf, "%.*s%s%s", (int)(at - k_blocks_ir), k_blocks_ir, to, at + strlen(from));
    else
        snprintf(buf, sizeof buf, "%s", k_blocks_ir);
    return yp_ir_load_buffer(buf, strlen(buf), "blocks.json", err);
}

static void blocks_refused(const char *from, const char *to, const char *want) {
    yp_err err;
    yp_graph *g = load_blocks(from, to, &err);
    CHECK(g == NULL);
    if (!g) CHECK_STR_HAS(err.msg, want);
    yp_graph_free(g);
}

/* Their rows: nothing read by the backward but the output gradient (autograd's view, permute
 * and contiguous save nothing), one launch each way, a FLOP per element, and the grid scaled
 * by the gain: down for contract, up for expand. */
static void test_block_rows(void) {
    const yp_op ops[] = {YP_OP_CONTRACT, YP_OP_EXPAND};
    yp_shape out = {2, 3, 5, 7};
    for (int k = 0; k < 2; k++) {
        const yp_op_info *r = yp_op_get(ops[k]);
        yp_node n = {0};
        n.op = ops[k], n.a.s2d.gain = 3;
        CHECK(r->bwd_reads == 0 && r->matrix_math == 0 && r->fwd_launches == 1 && r->bwd_launches == 1);
        CHECK(r->activation == 0 && r->min_inputs == 1 && r->max_inputs == 1);
        CHECK_EQ_I64(r->eltwise_flops(&n, out), yp_shape_numel(out));
        REQUIRE(r->resample != NULL);
        for (int axis = 0; axis < 2; axis++) { /* the same gain on both axes */
            int down = 0, up = 0;
            r->resample(&n, axis, &down, &up);
            CHECK(k == 0 ? down == 3 && up == 1 : down == 1 && up == 3);
        }
    }
    CHECK(strcmp(yp_op_get(YP_OP_CONTRACT)->name, "contract") == 0 && strcmp(yp_op_get(YP_OP_EXPAND)->name, "expand") == 0);
}

/* The IR: attrs read and written back unchanged, shapes, the least common multiple of the
 * strides, and every refusal naming the file and the node. */
static void test_block_ir(void) {
    yp_err err;
    yp_graph *g = load_blocks(NULL, NULL, &err);
    if (!g) fprintf(stderr, "  %s\n", err.msg);
    REQUIRE(g != NULL);
    CHECK(g->nodes[0].op == YP_OP_CONTRACT && g->nodes[0].a.s2d.gain == 3);
    CHECK(g->nodes[1].op == YP_OP_EXPAND && g->nodes[1].a.s2d.gain == 3);
    CHECK_EQ_I64(yp_graph_max_stride(g), 12); /* strides 3 and 4: their lcm, not their maximum */
    yp_node_info info[5];
    REQUIRE(g->n_nodes == 5);
    CHECK(yp_graph_infer(g, 2, 24, 36, info, &err) == 0);
    CHECK(info[0].out[0].c == 27 && info[0].out[0].h == 8 && info[0].out[0].w == 12);
    CHECK(info[1].out[0].c == 3 && info[1].out[0].h == 24 && info[1].out[0].w == 36);
    CHECK(info[0].flops == 0 && info[0].params == 0 && info[1].params == 0);
    CHECK(yp_graph_infer(g, 1, 16, 16, info, &err) == -1);
    CHECK_STR_HAS(err.msg, "must be a positive multiple of 12");
    char *text = yp_ir_write_string(g);
    REQUIRE(text != NULL);
    CHECK(strstr(text, "\"op\":\"contract\"") && strstr(text, "\"attrs\":{\"gain\":3}"));
    yp_graph *g2 = yp_ir_load_buffer(text, strlen(text), "written", &err);
    REQUIRE(g2 != NULL);
    char *text2 = yp_ir_write_string(g2);
    CHECK(text2 && strcmp(text, text2) == 0);
    free(text), free(text2);
    yp_graph_free(g2), yp_graph_free(g);

    blocks_refused("{\"gain\": 3}},  {\"id\": 1", "{\"gain\": 1}},  {\"id\": 1",
                   "blocks.json: nodes[0].attrs.gain: expected an integer in 2..16, got 1");
    blocks_refused("\"attrs\": {\"gain\": 3}},  {\"id\": 2", "\"attrs\": {\"gain\": 17}},  {\"id\": 2",
                   "nodes[1].attrs.gain: expected an integer in 2..16, got 17");
    blocks_refused("{\"gain\": 3}},  {\"id\": 1", "{}},  {\"id\": 1", "nodes[0].attrs");
    blocks_refused("{\"gain\": 3}},  {\"id\": 1", "{\"gain\": 3, \"order\": 1}},  {\"id\": 1", "order");
    /* Expand(2) of Contract(3)'s 27 channels: not a multiple of 4 */
    blocks_refused("\"attrs\": {\"gain\": 3}},  {\"id\": 2", "\"attrs\": {\"gain\": 2}},  {\"id\": 2",
                   "blocks.json: nodes[1]: expand by 2 of 27 channels: the channels must be a multiple of gain^2 = 4");
    /* a map that a rounding conv left uneven (13x13) is refused by contract's shape inference
     * (the IR loader's own size check would refuse such a file, so the row is asked directly) */
    g = load_blocks(NULL, NULL, &err);
    REQUIRE(g != NULL);
    yp_infer_ctx ic = {g, info, {1, 3, 24, 24}, &err};
    yp_node_info o = {.n_out = 1, .out = {{1, 8, 13, 13}}};
    yp_node n = g->nodes[0];
    n.a.s2d.gain = 2;
    CHECK(yp_op_get(YP_OP_CONTRACT)->infer(&ic, &n, &o) == -1);
    CHECK_STR_HAS(err.msg, "node 0 (model.0): contract by 2 of a 13x13 map: its height and width must be multiples "
                           "of 2; use an image size that is a multiple of 12");
    o.out[0] = (yp_shape){1, 8, 12, 14};
    CHECK(yp_op_get(YP_OP_CONTRACT)->infer(&ic, &n, &o) == 0);
    CHECK(o.out[0].c == 32 && o.out[0].h == 6 && o.out[0].w == 7);
    yp_graph_free(g);
}

/* The flags the graph checks, the schedule and the cost model read from the rows, as they had them
 * by op before they asked (a new op is free to differ): conv2d and detect are the conv_like ops
 * (and only they have convs to describe), detect the head, BN the norm and the BN half of the
 * BN+SiLU fusion, SiLU its other half; what each forward writes besides its outputs. */
static void test_schedule_flags(void) {
    for (int op = 0; op < YP_OP_COUNT; op++) {
        const yp_op_info *r = yp_op_get((yp_op)op);
        CHECK_EQ_I64(r->conv_like, op == YP_OP_CONV2D || op == YP_OP_DETECT);
        CHECK_EQ_I64(r->conv_geom != NULL, r->conv_like);
        CHECK_EQ_I64(r->head, op == YP_OP_DETECT);
        CHECK_EQ_I64(r->norm, op == YP_OP_BATCHNORM2D);
        CHECK_EQ_I64(r->bn_silu, op == YP_OP_BATCHNORM2D ? YP_BN_SILU_NORM : op == YP_OP_SILU ? YP_BN_SILU_ACT : 0);
        yp_node n = {0};
        n.op = (yp_op)op;
        unsigned want = op == YP_OP_BATCHNORM2D ? YP_FWD_STATS | YP_FWD_RUNNING
                        : op == YP_OP_MAXPOOL2D ? YP_FWD_INDICES
                        : op == YP_OP_ATTENTION ? YP_FWD_ATTN_PROBS
                                                : 0u;
        CHECK_EQ_I64(yp_op_fwd_writes(&n), want);
    }
    yp_node conv = {.op = YP_OP_CONV2D};
    conv.a.conv = (yp_conv_attrs){.c_in = 8, .c_out = 16, .kh = 3, .kw = 1, .sh = 2, .sw = 1, .ph = 1, .groups = 2};
    CHECK_EQ_I64(yp_op_fwd_writes(&conv), 0);
    conv.a.conv.torch_input_copy = 1; /* only a conv whose attrs ask copies its input */
    CHECK_EQ_I64(yp_op_fwd_writes(&conv), YP_FWD_INPUT_COPY);
    yp_conv_geom cg;
    yp_op_get(YP_OP_CONV2D)->conv_geom(&conv, 0, &cg);
    CHECK(cg.kh == 3 && cg.kw == 1 && cg.sh == 2 && cg.sw == 1 && cg.ph == 1 && cg.pw == 0 && cg.groups == 2 &&
          cg.bias == 0);
    yp_node det = {.op = YP_OP_DETECT};
    yp_op_get(YP_OP_DETECT)->conv_geom(&det, 2, &cg); /* each level a 1x1 conv with bias */
    CHECK(cg.kh == 1 && cg.kw == 1 && cg.sh == 1 && cg.sw == 1 && cg.ph == 0 && cg.pw == 0 && cg.groups == 1 &&
          cg.bias == 1);
}

/* g's parameters from the rows: a (role, level) once a node, PyTorch's rank (4 for a conv weight,
 * 1 otherwise), and elements that add up to the params and buffers shape inference counts (the
 * counts test_shapes and test_zoo check). Adds its parameter tensors to *total. */
static void check_params(const yp_graph *g, int *total) {
    yp_node_info *info = calloc((size_t)g->n_nodes, sizeof *info);
    yp_err err;
    REQUIRE(info != NULL);
    const int64_t side = yp_stride_gs(yp_graph_max_stride(g)); /* a size every graph takes */
    REQUIRE(yp_graph_infer(g, 1, side, side, info, &err) == 0);
    for (int i = 0; i < g->n_nodes; i++) {
        yp_param_spec ps[YP_MAX_NODE_PARAMS];
        int k = yp_op_params(&g->nodes[i], ps);
        int64_t params = 0, buffers = 0;
        CHECK(k >= 0 && k <= YP_MAX_NODE_PARAMS);
        for (int j = 0; j < k; j++) {
            CHECK(yp_role_is_param(ps[j].role));
            CHECK_EQ_I64(ps[j].ndim, ps[j].role == YP_ROLE_CONV_WEIGHT ? 4 : 1);
            CHECK(ps[j].suffix[0] == '.');
            for (int q = 0; q < j; q++) CHECK(ps[q].role != ps[j].role || ps[q].level != ps[j].level);
            int buffer = ps[j].role == YP_ROLE_RUNNING_MEAN || ps[j].role == YP_ROLE_RUNNING_VAR;
            *(buffer ? &buffers : &params) += yp_param_numel(&ps[j]);
        }
        CHECK_EQ_I64(params, info[i].params);
        CHECK_EQ_I64(buffers, info[i].buffers);
        *total += k;
    }
    free(info);
}

/* The parameters of every bundled model and test graph; yolov5n's first conv, first BN and Detect
 * level by name and shape, as its state dict has them. */
static void test_params_match_counts(void) {
    static const char *const bundled[] = {"yolov5n", "yolov5s", "yolov5m", "yolov5l", "yolov5x"};
    static const char *const irs[] = {"transformer", "acts", "contract_expand", "tiny", "tiny_dw", "cross"};
    yp_err err;
    for (size_t m = 0; m < sizeof bundled / sizeof *bundled; m++) {
        yp_graph *g = yp_test_model(bundled[m]);
        int n = 0;
        REQUIRE(g != NULL);
        check_params(g, &n);
        CHECK(n > 0);
        yp_graph_free(g);
    }
    for (size_t m = 0; m < sizeof irs / sizeof *irs; m++) {
        char path[512];
        snprintf(path, sizeof path, "%s/ir/%s.json", YP_TEST_DATA, irs[m]);
        yp_graph *g = yp_ir_load_file(path, &err);
        int n = 0;
        REQUIRE(g != NULL);
        check_params(g, &n);
        CHECK(n > 0);
        yp_graph_free(g);
    }
    yp_graph *g = yp_yaml_import(YP_TEST_DATA "/yaml/good/yolov5t6.yaml", 0, &err); /* four Detect levels */
    int n = 0;
    REQUIRE(g != NULL);
    check_params(g, &n);
    CHECK(n > 0);
    yp_graph_free(g);

    g = yp_test_model("yolov5n");
    REQUIRE(g != NULL);
    yp_param_spec ps[YP_MAX_NODE_PARAMS];
    REQUIRE(yp_op_params(&g->nodes[0], ps) == 1); /* model.0.conv: 6x6 stride 2, no bias */
    CHECK(!strcmp(ps[0].suffix, ".weight") && ps[0].shape[0] == 16 && ps[0].shape[1] == 3 && ps[0].shape[2] == 6 &&
          ps[0].shape[3] == 6);
    REQUIRE(yp_op_params(&g->nodes[1], ps) == 4); /* model.0.bn */
    CHECK(!strcmp(ps[3].suffix, ".running_var") && ps[3].role == YP_ROLE_RUNNING_VAR && ps[3].shape[0] == 16);
    const yp_node *d = &g->nodes[g->n_nodes - 1];
    REQUIRE(yp_op_params(d, ps) == 6); /* model.24.m.0..2: weight (255, c_in, 1, 1), bias (255) */
    CHECK(!strcmp(ps[4].suffix, ".m.2.weight") && ps[4].level == 2 && ps[4].shape[0] == 255 &&
          ps[4].shape[1] == d->a.detect.c_in[2] && ps[4].shape[2] == 1 && ps[4].shape[3] == 1);
    CHECK(!strcmp(ps[5].suffix, ".m.2.bias") && ps[5].role == YP_ROLE_CONV_BIAS && ps[5].shape[0] == 255);
    for (int i = 0; i < g->n_nodes; i++) /* no parameters but conv2d's, BN's and Detect's */
        if (g->nodes[i].op != YP_OP_CONV2D && g->nodes[i].op != YP_OP_BATCHNORM2D && g->nodes[i].op != YP_OP_DETECT)
            CHECK_EQ_I64(yp_op_params(&g->nodes[i], ps), 0);
    yp_graph_free(g);
}

/* YOLOv5's gs = max(stride, 32) that train.py rounds sizes to and val.py pads to: the same for
 * power-of-two strides, the least common multiple otherwise (a stride of 24 or 12 needs the 3). */
static void test_stride_gs(void) {
    const int64_t in[] = {1, 8, 16, 32, 64, 128, 12, 24, 96, 0}, want[] = {32, 32, 32, 32, 64, 128, 96, 96, 96, 32};
    for (size_t k = 0; k < sizeof in / sizeof *in; k++) CHECK_EQ_I64(yp_stride_gs(in[k]), want[k]);
}

static void test_unknown_op_lists_rows(void) {
    size_t len = 0;
    char *buf = read_all(YP_TEST_DATA "/ir/tiny.json", &len);
    REQUIRE(buf != NULL);
    char *silu = strstr(buf, "\"silu\"");
    REQUIRE(silu != NULL);
    memcpy(silu + 1, "gelu", 4);
    yp_err err;
    CHECK(yp_ir_load_buffer(buf, len, "tiny.json", &err) == NULL);
    char expect[256] = "use one of ";
    for (int op = 0; op < YP_OP_COUNT && yp_op_get((yp_op)op)->name; op++) {
        if (op) strncat(expect, ", ", sizeof expect - strlen(expect) - 1);
        strncat(expect, yp_op_get((yp_op)op)->name, sizeof expect - strlen(expect) - 1);
    }
    CHECK_STR_HAS(err.msg, expect);
    free(buf);
}

int main(void) {
    YP_RUN(test_rows_complete);
    YP_RUN(test_matrix_math);
    YP_RUN(test_eltwise_flops);
    YP_RUN(test_bwd_reads);
    YP_RUN(test_activation_rows);
    YP_RUN(test_activation_attrs);
    YP_RUN(test_block_rows);
    YP_RUN(test_block_ir);
    YP_RUN(test_stride_gs);
    YP_RUN(test_schedule_flags);
    YP_RUN(test_params_match_counts);
    YP_RUN(test_unknown_op_lists_rows);
    return yp_test_summary();
}
