/* test_schedule.c - the training schedule of a tiny 4-layer graph (tests/data/ir/tiny.json:
 * conv k3 s2 -> bn -> silu, conv 1x1 -> bn -> silu, concat of both, detect), batch 1, 8x8 image,
 * whose steps and tensor lives were worked out by hand (comments give the reasoning). */
#include <stdlib.h>
#include <string.h>

#include "yp_ir.h"
#include "yp_schedule.h"
#include "yp_test.h"
#include "yp_test_models.h"

static yp_graph *tiny(void) {
    yp_err err;
    yp_graph *g = yp_ir_load_file(YP_TEST_DATA "/ir/tiny.json", &err);
    if (!g) fprintf(stderr, "%s\n", err.msg);
    return g;
}

/* Checks kind, bytes and live interval [first, last] of the tensor called name. */
static void expect(const yp_schedule *s, const char *name, yp_kind kind, int64_t bytes, int first, int last) {
    int t = yp_schedule_find(s, name);
    if (t < 0) {
        fprintf(stderr, "missing tensor %s\n", name);
        CHECK(t >= 0);
        return;
    }
    const yp_tensor *tt = &s->tensors[t];
    if (tt->kind != kind || tt->bytes != bytes || tt->first != first || tt->last != last)
        fprintf(stderr, "%s: kind %s bytes %lld life %d..%d\n", name, yp_kind_name(tt->kind), (long long)tt->bytes,
                tt->first, tt->last);
    CHECK(tt->kind == kind);
    CHECK_EQ_I64(tt->bytes, bytes);
    CHECK_EQ_I64(tt->first, first);
    CHECK_EQ_I64(tt->last, last);
}

/* PyTorch policy. Steps: 0 conv0, 1 bn1, 2 silu2, 3 conv3, 4 bn4, 5 silu5, 6 concat, 7 detect,
 * 8 loss, 9 detect', 10 concat', 11 silu5', 12 bn4', 13 conv3', 14 silu2', 15 bn1', 16 conv0',
 * 17 optimizer, 18 ema. Maps after conv0 are 4x4: 4 channels = 64 floats = 256 B. */
static void test_pytorch_lives(void) {
    yp_graph *g = tiny();
    REQUIRE(g != NULL);
    yp_sched_opts o = yp_sched_opts_default(1, 8, 8);
    o.policy = YP_SAVE_PYTORCH;
    yp_err err;
    yp_schedule *s = yp_schedule_build(g, &o, &err);
    CHECK(s != NULL);
    if (!s) {
        fprintf(stderr, "%s\n", err.msg);
        yp_graph_free(g);
        return;
    }
    CHECK_EQ_I64(s->n_steps, 19);
    CHECK_EQ_I64(s->loss_step, 8);
    CHECK(s->steps[9].phase == YP_PHASE_BACKWARD && s->steps[9].node == 7);
    CHECK(s->steps[16].phase == YP_PHASE_BACKWARD && s->steps[16].node == 0);
    CHECK(s->steps[17].phase == YP_PHASE_OPTIMIZER);
    /* the image: read by conv0 forward (0) and by conv0's weight gradient (16) */
    expect(s, "input:images", YP_KIND_INPUT, 3 * 8 * 8 * 4, 0, 16);
    /* conv0 output = BN input: read by bn1 (1) and bn1' (15) */
    expect(s, "act:model.0.conv", YP_KIND_SAVED, 256, 0, 15);
    expect(s, "stats:model.0.bn", YP_KIND_SAVED, 2 * 4 * 4, 1, 15);
    /* bn1 output = SiLU input: silu2 (2), silu2' (14) */
    expect(s, "act:model.0.bn", YP_KIND_SAVED, 256, 1, 14);
    /* silu2 output = conv3 input and concat input: conv3 (3), concat (6), conv3' (13) */
    expect(s, "act:model.0.act", YP_KIND_SAVED, 256, 2, 13);
    expect(s, "act:model.1.conv", YP_KIND_SAVED, 256, 3, 12);
    expect(s, "act:model.1.bn", YP_KIND_SAVED, 256, 4, 11);
    /* silu5 output feeds only the concat, whose backward needs nothing: freed in forward */
    expect(s, "act:model.1.act", YP_KIND_ACT, 256, 5, 6);
    /* concat output (8 channels) = detect input: detect (7), detect' (9) */
    expect(s, "act:model.2", YP_KIND_SAVED, 512, 6, 9);
    /* detect output: 1 anchor x (1 class + 5) = 6 channels x 16 cells, read by the loss only */
    expect(s, "act:model.3.l0", YP_KIND_ACT, 6 * 16 * 4, 7, 8);
    expect(s, "dact:model.3.l0", YP_KIND_ACTGRAD, 6 * 16 * 4, 8, 9);
    expect(s, "dact:model.2", YP_KIND_ACTGRAD, 512, 9, 10);
    /* silu2's gradient: written by concat' (10), accumulated by conv3' (13), read by silu2' (14) */
    expect(s, "dact:model.0.act", YP_KIND_ACTGRAD, 256, 10, 14);
    expect(s, "dact:model.1.act", YP_KIND_ACTGRAD, 256, 10, 11);
    expect(s, "dact:model.1.bn", YP_KIND_ACTGRAD, 256, 11, 12);
    expect(s, "dact:model.1.conv", YP_KIND_ACTGRAD, 256, 12, 13);
    expect(s, "dact:model.0.bn", YP_KIND_ACTGRAD, 256, 14, 15);
    expect(s, "dact:model.0.conv", YP_KIND_ACTGRAD, 256, 15, 16);
    CHECK(yp_schedule_find(s, "dact:images") < 0); /* the image needs no gradient */
    /* conv0 k3 s2: im2col of one image = 3*9 rows x 16 columns floats, in forward and backward */
    expect(s, "ws:model.0.conv:fwd", YP_KIND_WORKSPACE, 27 * 16 * 4, 0, 0);
    expect(s, "ws:model.0.conv:bwd", YP_KIND_WORKSPACE, 27 * 16 * 4, 16, 16);
    CHECK(yp_schedule_find(s, "ws:model.1.conv:fwd") < 0); /* 1x1 conv: no im2col */
    /* parameters and their state live through the whole step */
    expect(s, "model.0.conv.weight", YP_KIND_WEIGHT, 4 * 3 * 9 * 4, 0, 18);
    expect(s, "grad:model.0.conv.weight", YP_KIND_GRAD, 4 * 3 * 9 * 4, 0, 18);
    expect(s, "momentum:model.0.conv.weight", YP_KIND_OPTSTATE, 4 * 3 * 9 * 4, 0, 18);
    expect(s, "ema:model.0.bn.running_var", YP_KIND_EMA, 16, 0, 18);
    expect(s, "grad:model.3.m.0.bias", YP_KIND_GRAD, 6 * 4, 0, 18);
    CHECK(yp_schedule_find(s, "grad:model.0.bn.running_mean") < 0);
    /* saved = conv0, stats1, bn1, silu2, conv3, stats4, bn4, concat + the image */
    CHECK_EQ_I64(yp_schedule_saved_bytes(s), 256 + 32 + 256 + 256 + 256 + 32 + 256 + 512 + 768);
    /* consumers of silu2's output: conv3 (3), concat (6), conv3' (13) */
    int t = yp_schedule_find(s, "act:model.0.act");
    CHECK_EQ_I64(s->tensors[t].n_cons, 3);
    CHECK_EQ_I64(yp_tensor_consumers(s, &s->tensors[t])[2], 13);
    CHECK_EQ_I64(s->tensors[t].producer, 2);
    yp_schedule_free(s);
    yp_graph_free(g);
}

/* yoloplan policy: only conv outputs and BN statistics are saved; detect' needs the concat
 * output, which is recomputed from conv0/conv3's outputs before it (BN-apply, SiLU, concat). */
static void test_yoloplan_recompute(void) {
    yp_graph *g = tiny();
    REQUIRE(g != NULL);
    yp_sched_opts o = yp_sched_opts_default(1, 8, 8);
    yp_err err;
    yp_schedule *s = yp_schedule_build(g, &o, &err);
    CHECK(s != NULL);
    if (!s) {
        yp_graph_free(g);
        return;
    }
    CHECK_EQ_I64(yp_schedule_saved_bytes(s), 256 + 32 + 256 + 32 + 768);
    /* steps 9..13 recompute bn0, silu0, bn1, silu1, concat; 14 is detect' */
    CHECK(s->steps[9].phase == YP_PHASE_RECOMPUTE && s->steps[9].node == 1);
    CHECK(s->steps[13].phase == YP_PHASE_RECOMPUTE && s->steps[13].node == 6);
    CHECK(s->steps[14].phase == YP_PHASE_BACKWARD && s->steps[14].node == 7);
    expect(s, "act:model.1.act", YP_KIND_ACT, 256, 5, 6);
    expect(s, "act:model.2", YP_KIND_ACT, 512, 6, 7);
    expect(s, "act:model.0.conv", YP_KIND_SAVED, 256, 0, s->tensors[yp_schedule_find(s, "act:model.0.conv")].last);
    expect(s, "re:model.2#4", YP_KIND_RECOMPUTE, 512, 13, 14);
    CHECK(s->recompute_flops > 0);
    yp_schedule_free(s);
    yp_graph_free(g);
}

/* yoloplan+cat also keeps the concat output (512 bytes): detect' reads it as saved, and neither
 * the concat nor silu1 (read by nothing else) is recomputed; silu0 still is, for conv1's weight
 * gradient. A checkpoint on the concat's layer drops it again. */
static void test_keepcat(void) {
    yp_graph *g = tiny();
    REQUIRE(g != NULL);
    yp_sched_opts o = yp_sched_opts_default(1, 8, 8);
    o.policy = YP_SAVE_CONCAT;
    yp_schedule *s = yp_schedule_build(g, &o, NULL);
    CHECK(s != NULL);
    if (s) {
        CHECK_EQ_I64(yp_schedule_saved_bytes(s), 256 + 32 + 256 + 32 + 768 + 512);
        CHECK(s->tensors[yp_schedule_find(s, "act:model.2")].kind == YP_KIND_SAVED);
        int rec_silu0 = 0;
        for (int i = 0; i < s->n_steps; i++) {
            if (s->steps[i].phase != YP_PHASE_RECOMPUTE) continue;
            CHECK(s->steps[i].node != 5 && s->steps[i].node != 6);
            rec_silu0 += s->steps[i].node == 2;
        }
        CHECK_EQ_I64(rec_silu0, 1);
        yp_schedule_free(s);
    }
    o.ckpt_layers = 1u << g->nodes[6].layer;
    s = yp_schedule_build(g, &o, NULL);
    CHECK(s != NULL);
    if (s) CHECK_EQ_I64(yp_schedule_saved_bytes(s), 256 + 32 + 256 + 32 + 768);
    yp_schedule_free(s);
    CHECK(yp_save_policy_parse("yoloplan+cat") == YP_SAVE_CONCAT && yp_save_policy_parse("cat") == -1);
    CHECK(!strcmp(yp_save_policy_name(YP_SAVE_PYTORCH), "pytorch"));
    yp_graph_free(g);
}

/* Checkpointing a layer keeps its boundary conv (the one its output is BN+SiLU of): for a Conv
 * layer that is its only conv, so nothing changes. */
static void test_checkpoint_conv_layer_is_noop(void) {
    yp_graph *g = tiny();
    REQUIRE(g != NULL);
    yp_sched_opts o = yp_sched_opts_default(1, 8, 8);
    o.ckpt_layers = 1u << 1;
    yp_schedule *s = yp_schedule_build(g, &o, NULL);
    CHECK(s != NULL);
    if (s) {
        CHECK_EQ_I64(yp_schedule_saved_bytes(s), 256 + 32 + 256 + 32 + 768);
        for (int i = 0; i < s->n_steps; i++) CHECK(!(s->steps[i].phase == YP_PHASE_RECOMPUTE && s->steps[i].node == 3));
    }
    yp_schedule_free(s);
    yp_graph_free(g);
}

/* Checkpointing a C3 (yolov5n layer 2, 1 bottleneck) drops cv1, cv2 and the bottleneck's two
 * conv outputs (not cv3, its boundary) and recomputes exactly those four convs in its backward. */
static void test_checkpoint_c3(void) {
    yp_err err;
    yp_graph *g = yp_ir_load_file(YP_MODELS_DIR "/yolov5n.json", &err);
    REQUIRE(g != NULL);
    yp_sched_opts o = yp_sched_opts_default(1, 64, 64);
    yp_schedule *base = yp_schedule_build(g, &o, &err);
    o.ckpt_layers = 1u << 2;
    yp_schedule *ck = yp_schedule_build(g, &o, &err);
    CHECK(base && ck);
    if (base && ck) {
        /* layer 2 of yolov5n at 64 px: 16x16 maps, c_ = 16 channels: 4 conv outputs of 16*256 floats */
        CHECK_EQ_I64(yp_schedule_saved_bytes(base) - yp_schedule_saved_bytes(ck), 4 * 16 * 256 * 4);
        int64_t conv_flops = 0;
        for (int i = 0; i < ck->n_steps; i++) {
            const yp_step *st = &ck->steps[i];
            if (st->phase == YP_PHASE_RECOMPUTE && st->op == YP_OP_CONV2D) {
                CHECK_EQ_I64(g->nodes[st->node].layer, 2);
                conv_flops += st->flops;
            }
        }
        /* cv1, cv2: 32->16 1x1; m.0.cv1 16->16 1x1; m.0.cv2 16->16 3x3; 256 pixels, 2 flops per MAC */
        CHECK_EQ_I64(conv_flops, 2 * 256 * (32 * 16 * 2 + 16 * 16 + 16 * 16 * 9));
        CHECK_EQ_I64(ck->recompute_flops - base->recompute_flops, conv_flops);
    }
    yp_schedule_free(base);
    yp_schedule_free(ck);
    yp_graph_free(g);
}

/* Freezing layers 0-1: they get no gradients or optimizer state and save nothing. */
static void test_freeze(void) {
    yp_graph *g = tiny();
    REQUIRE(g != NULL);
    yp_sched_opts o = yp_sched_opts_default(1, 8, 8);
    o.policy = YP_SAVE_PYTORCH;
    o.freeze = 2;
    yp_schedule *s = yp_schedule_build(g, &o, NULL);
    CHECK(s != NULL);
    if (s) {
        CHECK(yp_schedule_find(s, "grad:model.0.conv.weight") < 0);
        CHECK(yp_schedule_find(s, "momentum:model.1.bn.weight") < 0);
        CHECK(yp_schedule_find(s, "grad:model.3.m.0.weight") >= 0);
        /* only the detect input (concat output) is saved */
        CHECK_EQ_I64(yp_schedule_saved_bytes(s), 512);
        CHECK(yp_schedule_find(s, "dact:model.2") < 0);
    }
    yp_schedule_free(s);
    yp_graph_free(g);
}

/* AMP: activations in fp16 (half the bytes) and fp16 copies of conv weights. */
static void test_amp_and_adam(void) {
    yp_graph *g = tiny();
    REQUIRE(g != NULL);
    yp_sched_opts o = yp_sched_opts_default(2, 8, 8);
    o.act_dtype = YP_DTYPE_F16;
    o.optimizer = YP_OPT_ADAM;
    yp_schedule *s = yp_schedule_build(g, &o, NULL);
    CHECK(s != NULL);
    if (s) {
        expect(s, "act:model.0.conv", YP_KIND_SAVED, 2 * 256 / 2, 0, s->tensors[yp_schedule_find(s, "act:model.0.conv")].last);
        CHECK(yp_schedule_find(s, "f16:model.0.conv.weight") >= 0);
        CHECK(yp_schedule_find(s, "adam.v:model.0.conv.weight") >= 0);
        CHECK(yp_schedule_find(s, "momentum:model.0.conv.weight") < 0);
    }
    yp_schedule_free(s);
    yp_graph_free(g);
}

/* The typed roles agree with the names the state dict uses and with the kinds; every derived
 * tensor points at its parameter (same node, level and element count); the inputs are exported. */
static void check_roles(const yp_schedule *s) {
    static const struct { yp_role role; const char *prefix; yp_kind kind; } derived[] = {
        {YP_ROLE_GRAD, "grad:", YP_KIND_GRAD},          {YP_ROLE_MOMENTUM, "momentum:", YP_KIND_OPTSTATE},
        {YP_ROLE_ADAM_M, "adam.m:", YP_KIND_OPTSTATE},  {YP_ROLE_ADAM_V, "adam.v:", YP_KIND_OPTSTATE},
        {YP_ROLE_EMA, "ema:", YP_KIND_EMA},             {YP_ROLE_LOWP, "f16:", YP_KIND_LOWP},
    };
    CHECK(s->tensors[s->images_t].role == YP_ROLE_IMAGES && !strcmp(s->tensors[s->images_t].name, "input:images"));
    CHECK(s->tensors[s->targets_t].role == YP_ROLE_TARGETS && !strcmp(s->tensors[s->targets_t].name, "loss:targets"));
    for (int t = 0; t < s->n_tensors; t++) {
        const yp_tensor *x = &s->tensors[t];
        CHECK(yp_role_is_param(x->role) == (x->kind == YP_KIND_WEIGHT));
        const char *dot = strrchr(x->name, '.');
        if (x->role == YP_ROLE_CONV_WEIGHT || x->role == YP_ROLE_BN_GAMMA) CHECK(dot && !strcmp(dot, ".weight"));
        if (x->role == YP_ROLE_CONV_BIAS || x->role == YP_ROLE_BN_BETA) CHECK(dot && !strcmp(dot, ".bias"));
        if (x->role == YP_ROLE_RUNNING_VAR) CHECK(dot && !strcmp(dot, ".running_var"));
        if (x->role == YP_ROLE_SCRATCH_IMAGE) CHECK(!strncmp(x->name, "ws:", 3) && x->scale == YP_SCALE_PIXELS);
        if (x->role == YP_ROLE_SCRATCH_FIXED) CHECK(!strncmp(x->name, "wt:", 3) && x->scale == YP_SCALE_CONST);
        if (x->role == YP_ROLE_CONV_WEIGHT && s->g->nodes[x->node].op == YP_OP_DETECT) {
            char want[96];
            snprintf(want, sizeof want, "%s.m.%d.weight", s->g->nodes[x->node].name, x->level);
            CHECK(!strcmp(x->name, want));
        }
        int is_derived = 0;
        for (size_t k = 0; k < sizeof derived / sizeof *derived; k++) {
            if (x->role != derived[k].role) continue;
            is_derived = 1;
            const yp_tensor *p = &s->tensors[x->param];
            CHECK(x->param >= 0 && yp_role_is_param(p->role) && x->kind == derived[k].kind);
            CHECK(x->node == p->node && x->level == p->level && x->shape.w == p->shape.w);
            char want[160];
            snprintf(want, sizeof want, "%s%s", derived[k].prefix, p->name);
            CHECK(!strcmp(x->name, want));
            if (x->role == YP_ROLE_GRAD) CHECK(p->grad == t);
        }
        if (!is_derived) CHECK(x->param == -1);
    }
}

static int listed(const int *list, int n, int t) {
    for (int k = 0; k < n; k++)
        if (list[k] == t) return 1;
    return 0;
}

/* Every step's named operands are exactly the tensors of its lists, each in the list its phase
 * says (yp_schedule.h): written ones among the outputs, read ones among the inputs. */
static void check_operands(const yp_schedule *s) {
    for (int i = 0; i < s->n_steps; i++) {
        const yp_step *st = &s->steps[i];
        if (st->phase == YP_PHASE_OPTIMIZER) continue; /* no named operands */
        const int *slots = (const int *)&st->a, n_slots = (int)(sizeof st->a / sizeof(int));
        const int *in = yp_step_inputs(s, st), *out = yp_step_outputs(s, st);
        for (int k = 0; k < n_slots; k++)
            if (slots[k] >= 0) CHECK(listed(in, st->n_in, slots[k]) || listed(out, st->n_out, slots[k]));
        for (int k = 0; k < st->n_in; k++) CHECK(listed(slots, n_slots, in[k]));
        for (int k = 0; k < st->n_out; k++) CHECK(listed(slots, n_slots, out[k]));
        int fwd = st->phase == YP_PHASE_FORWARD || st->phase == YP_PHASE_RECOMPUTE;
        if (fwd && st->node >= 0) CHECK(st->a.y[0] >= 0 && listed(out, st->n_out, st->a.y[0]));
        if (st->phase == YP_PHASE_BACKWARD) CHECK(st->a.dy[0] >= 0 || st->op == YP_OP_DETECT);
        if (st->op == YP_OP_CONV2D) CHECK(st->a.w[0] >= 0 && (st->a.x[0] >= 0 || !fwd));
        if (st->phase == YP_PHASE_LOSS) CHECK(st->a.targets == s->targets_t && st->a.loss_value >= 0);
    }
}

static void test_roles(void) {
    yp_graph *g = yp_test_model("yolov5n"); /* three Detect levels */
    REQUIRE(g != NULL);
    for (int variant = 0; variant < 2; variant++) {
        yp_sched_opts o = yp_sched_opts_default(2, 64, 64);
        if (variant) o.act_dtype = YP_DTYPE_F16, o.optimizer = YP_OPT_ADAM, o.policy = YP_SAVE_PYTORCH;
        else o.ckpt_layers = 0x5a, o.freeze = 2; /* recompute steps, frozen layers */
        yp_schedule *s = yp_schedule_build(g, &o, NULL);
        REQUIRE(s != NULL);
        check_roles(s);
        check_operands(s);
        yp_schedule_free(s);
    }
    yp_graph_free(g);
}

/* The evaluation pass: forward with BN in eval mode, the loss without gradients, the decoded
 * boxes; nothing trains, nothing is updated. */
static void test_eval(void) {
    yp_graph *g = yp_test_model("yolov5n");
    REQUIRE(g != NULL);
    yp_sched_opts o = yp_sched_opts_default(2, 64, 64);
    o.eval = 1, o.ema = 0;
    yp_schedule *s = yp_schedule_build(g, &o, NULL);
    REQUIRE(s != NULL);
    int decoded = -1;
    for (int i = 0; i < s->n_steps; i++) {
        const yp_step *st = &s->steps[i];
        CHECK(st->phase == YP_PHASE_FORWARD || st->phase == YP_PHASE_LOSS);
        if (st->phase == YP_PHASE_LOSS) CHECK(st->a.dx[0] < 0);
        if (st->op == YP_OP_BATCHNORM2D) CHECK(st->a.stats < 0 && st->a.running_mean >= 0 && st->n_out == 1);
        if (st->a.decoded >= 0) {
            decoded = st->a.decoded;
            CHECK(i == s->n_steps - 1 && !strcmp(st->label, "decode"));
        }
    }
    for (int t = 0; t < s->n_tensors; t++) CHECK(s->tensors[t].kind != YP_KIND_GRAD && s->tensors[t].role != YP_ROLE_BN_STATS);
    REQUIRE(decoded >= 0);
    /* 64x64: grids 8x8, 4x4, 2x2 -> 84 cells, 3 anchors, 80 classes + 5 */
    CHECK_EQ_I64(s->tensors[decoded].bytes, 2 * 3 * 84 * 85 * 4);
    check_operands(s);
    yp_schedule_free(s);
    yp_graph_free(g);
}

int main(void) {
    YP_RUN(test_roles);
    YP_RUN(test_eval);
    YP_RUN(test_pytorch_lives);
    YP_RUN(test_yoloplan_recompute);
    YP_RUN(test_keepcat);
    YP_RUN(test_checkpoint_conv_layer_is_noop);
    YP_RUN(test_checkpoint_c3);
    YP_RUN(test_freeze);
    YP_RUN(test_amp_and_adam);
    return yp_test_summary();
}
