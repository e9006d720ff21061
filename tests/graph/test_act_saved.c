/* test_act_saved.c - the activations other than SiLU and zero_pad in the schedule, on the network
 * of tests/data/ir/acts.json (conv-BN-LeakyReLU, conv-BN-Hardswish, conv-BN-ReLU, ZeroPad2d, then
 * MaxPool2d k2 s1 and k2 s2 as yolov3-tiny has them, Detect):
 *   - under the `pytorch` policy the bytes saved for backward equal, exactly, what
 *     saved_tensors_hooks counts in PyTorch 1.13 for the same network (tests/data/act_saved.json,
 *     written by tests/ref/make_act_saved_fixture.py), at two sizes and two batches;
 *   - what each backward reads: ReLU its own output (PyTorch saves the result), LeakyReLU and
 *     Hardswish their input, zero_pad nothing but its output gradient;
 *   - a layer's boundary conv is found through any activation, so that checkpointing a
 *     conv-BN-ReLU layer keeps its conv output and recomputes BN and ReLU, the ReLU backward then
 *     reading the recomputed output. */
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "yp_ir.h"
#include "yp_schedule.h"
#include "yp_test.h"
#include "yp_test_json.h"
#include "yp_test_sched.h"

static yp_graph *graph;

static yp_schedule *build(int64_t batch, int64_t side, yp_save_policy policy, uint64_t ckpt) {
    yp_err err;
    yp_sched_opts o = yp_sched_opts_default(batch, side, side);
    o.policy = policy, o.ckpt_layers = ckpt;
    yp_schedule *s = yp_schedule_build(graph, &o, &err);
    if (!s) fprintf(stderr, "schedule: %s\n", err.msg);
    return s;
}

static cJSON *fixture(void) { return yp_test_json_file(YP_TEST_DATA "/act_saved.json"); }

static void test_saved_bytes_equal_pytorch(void) {
    cJSON *fx = fixture();
    REQUIRE(fx != NULL);
    const cJSON *rows = cJSON_GetObjectItem(fx, "saved_bytes");
    int compared = 0;
    for (const cJSON *r = rows ? rows->child : NULL; r; r = r->next) {
        long long batch = 0, side = 0;
        REQUIRE(sscanf(r->string, "%lldx%lld", &batch, &side) == 2 && cJSON_IsNumber(r));
        yp_schedule *s = build(batch, side, YP_SAVE_PYTORCH, 0);
        REQUIRE(s != NULL);
        int64_t ours = yp_schedule_saved_bytes(s), theirs = (int64_t)r->valuedouble;
        if (ours != theirs) fprintf(stderr, "  batch %lld at %lld: %lld vs torch %lld\n", batch, side,
                                    (long long)ours, (long long)theirs);
        CHECK_EQ_I64(ours, theirs);
        compared++;
        yp_schedule_free(s);
    }
    CHECK_EQ_I64(compared, 3);
    cJSON_Delete(fx);
}


static int node_of_op(yp_op op) {
    for (int i = 0; i < graph->n_nodes; i++)
        if (graph->nodes[i].op == op) return i;
    return -1;
}

/* Under `pytorch`, which keeps everything a backward reads: the tensors each backward reads are
 * the forward values autograd saves for it. */
static void test_backward_reads(void) {
    yp_schedule *s = build(1, 32, YP_SAVE_PYTORCH, 0);
    REQUIRE(s != NULL);
    int relu = node_of_op(YP_OP_RELU), leaky = node_of_op(YP_OP_LEAKY_RELU), hs = node_of_op(YP_OP_HARDSWISH);
    int pad = node_of_op(YP_OP_ZERO_PAD);
    REQUIRE(relu >= 0 && leaky >= 0 && hs >= 0 && pad >= 0);
    CHECK(yp_op_get(YP_OP_RELU)->bwd_reads == YP_BWD_OUTPUT);
    CHECK(yp_op_get(YP_OP_LEAKY_RELU)->bwd_reads == YP_BWD_INPUT);
    CHECK(yp_op_get(YP_OP_HARDSWISH)->bwd_reads == YP_BWD_INPUT);
    CHECK(yp_op_get(YP_OP_ZERO_PAD)->bwd_reads == 0);
    const yp_step *b = yp_test_backward_of(s, relu);
    REQUIRE(b != NULL);
    CHECK(b->a.x[0] == -1);
    REQUIRE(b->a.y[0] >= 0);
    CHECK(s->tensors[b->a.y[0]].role == YP_ROLE_VALUE && s->tensors[b->a.y[0]].node == relu);
    CHECK(s->tensors[b->a.y[0]].kind == YP_KIND_SAVED);
    for (int k = 0; k < 2; k++) {
        int v = k ? hs : leaky;
        b = yp_test_backward_of(s, v);
        REQUIRE(b != NULL);
        CHECK(b->a.y[0] == -1);
        REQUIRE(b->a.x[0] >= 0);
        CHECK(s->tensors[b->a.x[0]].node == graph->nodes[v].inputs[0]); /* the BN output */
        CHECK(s->tensors[b->a.x[0]].kind == YP_KIND_SAVED);
    }
    b = yp_test_backward_of(s, pad);
    REQUIRE(b != NULL);
    CHECK(b->a.x[0] == -1 && b->a.y[0] == -1 && b->a.dy[0] >= 0 && b->a.dx[0] >= 0);
    CHECK(b->n_in == 1); /* dy only */
    /* the pad's output is saved by the maxpool after it, its input (ReLU's output) by ReLU */
    yp_schedule_free(s);
}

/* Each conv-BN-activation layer ends at its conv through the activation; the pad and pool
 * layers end at no conv. */
static void test_boundary_through_activations(void) {
    for (int l = 0; l < graph->n_layers; l++) {
        int want = l < 3 ? 3 * l : -1; /* the convs are nodes 0, 3, 6 */
        CHECK_EQ_I64(yp_layer_boundary_conv(graph, l), want);
    }
    CHECK_EQ_I64(yp_layer_inner_convs(graph, 2), 0);
}

/* yoloplan's policy keeps conv outputs only: the ReLU backward reads a recomputed ReLU output
 * (BN then ReLU rebuilt from the kept conv output); with layer 2 checkpointed too, its conv
 * output, the boundary, is still kept and nothing before it is rebuilt. */
static void test_relu_output_recomputed(void) {
    for (int ck = 0; ck < 2; ck++) {
        yp_schedule *s = build(1, 32, YP_SAVE_YOLOPLAN, ck ? 1u << 2 : 0);
        REQUIRE(s != NULL);
        int relu = node_of_op(YP_OP_RELU);
        const yp_step *b = yp_test_backward_of(s, relu);
        REQUIRE(b != NULL && b->a.y[0] >= 0);
        const yp_tensor *y = &s->tensors[b->a.y[0]];
        CHECK(y->kind == YP_KIND_RECOMPUTE && y->role == YP_ROLE_RECOMPUTED && y->node == relu);
        REQUIRE(y->producer >= 0);
        const yp_step *re = &s->steps[y->producer];
        CHECK(re->phase == YP_PHASE_RECOMPUTE && re->op == YP_OP_RELU);
        REQUIRE(re->a.x[0] >= 0);
        const yp_tensor *bn = &s->tensors[re->a.x[0]]; /* the recomputed BN output */
        CHECK(bn->kind == YP_KIND_RECOMPUTE && bn->node == 7);
        int conv_recomputed = 0;
        for (int i = 0; i < s->n_steps; i++)
            conv_recomputed += s->steps[i].phase == YP_PHASE_RECOMPUTE && s->steps[i].op == YP_OP_CONV2D;
        CHECK_EQ_I64(conv_recomputed, 0);
        yp_schedule_free(s);
    }
}

int main(void) {
    yp_err err;
    graph = yp_ir_load_file(YP_TEST_DATA "/ir/acts.json", &err);
    if (!graph) {
        fprintf(stderr, "%s\n", err.msg);
        return 1;
    }
    YP_RUN(test_saved_bytes_equal_pytorch);
    YP_RUN(test_backward_reads);
    YP_RUN(test_boundary_through_activations);
    YP_RUN(test_relu_output_recomputed);
    yp_graph_free(graph);
    return yp_test_summary();
}
