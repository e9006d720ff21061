/* test_cudnn_scratch.c - the CUDA backend's conv workspace rule (kernels/yp_cudnn_scratch.h) and
 * the "cuda" conv scratch model built on it (executor/scratch_model.c), without a GPU: the bound's
 * figures for fabricated convs (the 16 MiB floor, activations above it, the KRSC weights of k > 1,
 * none for 1x1, groups; under fp16/bf16 the filter and gradient staged at 2 bytes, per stage and
 * weight type), the resolver's rule giving the same (the query's weight type included), a plan made for a CUDA instance
 * (yp_exec_candidate_for) granting it to every conv, and that plan saved and loaded back
 * (re-planned offline) to the byte. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "yp_cudnn_scratch.h"
#include "yp_executor.h"
#include "yp_plan_io.h"
#include "yp_test.h"
#include "yp_test_models.h"

static yp_conv_desc conv(int64_t n, int64_t h, int64_t c_in, int64_t c_out, int k, int s, int groups) {
    int p = k / 2;
    int64_t oh = (h + 2 * p - k) / s + 1;
    return (yp_conv_desc){.in = {n, h, h, c_in}, .out = {n, oh, oh, c_out}, .kh = k, .kw = k, .sh = s, .sw = s, .ph = p,
                          .pw = p, .groups = groups, .dtype = YP_ELEM_F32};
}

static void test_bound(void) {
    int64_t pi, fx;
    /* small activations: the floor, 16 MiB = 4 Mi floats; 3x3 weights reordered */
    yp_conv_desc d = conv(2, 32, 16, 32, 3, 1, 1);
    CHECK_EQ_I64(yp_cudnn_workspace_cap(&d), 16 << 20);
    yp_cudnn_scratch_bound(&d, YP_CONV_FORWARD, &pi, &fx);
    CHECK_EQ_I64(pi, 4 << 20);
    CHECK_EQ_I64(fx, 32 * 16 * 9);
    /* activations above the floor: input + output bytes, 64x160x160x32 in, 64x80x80x64 out */
    d = conv(64, 160, 32, 64, 3, 2, 1);
    const int64_t act = 64LL * 160 * 160 * 32 + 64LL * 80 * 80 * 64;
    CHECK_EQ_I64(yp_cudnn_workspace_cap(&d), act * 4);
    yp_cudnn_scratch_bound(&d, YP_CONV_FORWARD, &pi, &fx);
    CHECK_EQ_I64(pi, act);
    CHECK_EQ_I64(fx, 64 * 32 * 9);
    /* 1x1: the same bytes in both layouts, no fixed scratch */
    d = conv(2, 40, 128, 255, 1, 1, 1);
    yp_cudnn_scratch_bound(&d, YP_CONV_FORWARD, &pi, &fx);
    CHECK_EQ_I64(fx, 0);
    CHECK_EQ_I64(pi, 4 << 20);
    /* grouped: c_in / groups per filter */
    d = conv(1, 20, 64, 64, 3, 1, 4);
    yp_cudnn_scratch_bound(&d, YP_CONV_FORWARD, &pi, &fx);
    CHECK_EQ_I64(fx, 64 * 16 * 9);
    /* depthwise (GhostConv's 5x5 cv2): one input channel per filter; the cap as for any conv */
    d = conv(8, 80, 128, 128, 5, 1, 128);
    yp_cudnn_scratch_bound(&d, YP_CONV_FORWARD, &pi, &fx);
    CHECK_EQ_I64(fx, 128 * 1 * 25);
    CHECK_EQ_I64(pi, (int64_t)2 * 8 * 80 * 80 * 128);
}

/* fp16/bf16 data: the filter (unless a 1x1 reads its low-precision copy in place) and the weight
 * gradient are staged in the data's type, 2 bytes an element, rounded up to floats; the cap is
 * fp32's. */
static void test_bound_lowp(void) {
    int64_t pi, fx, pi32, fx32;
    yp_conv_desc d = conv(2, 32, 16, 33, 3, 1, 1); /* 33*16*9 = 4752 elements */
    yp_cudnn_scratch_bound(&d, YP_CONV_FORWARD, &pi32, &fx32);
    d.dtype = d.wdtype = YP_ELEM_F16;
    yp_cudnn_scratch_bound(&d, YP_CONV_FORWARD, &pi, &fx);
    CHECK_EQ_I64(pi, pi32);
    CHECK_EQ_I64(fx, 4752 / 2);
    yp_cudnn_scratch_bound(&d, YP_CONV_BACKWARD, &pi, &fx);
    CHECK_EQ_I64(fx, 4752 / 2);
    /* a 1x1 of an odd weight count: nothing staged forward from its copy, the gradient backward */
    d = conv(2, 40, 3, 255, 1, 1, 1); /* 765 elements */
    d.dtype = d.wdtype = YP_ELEM_BF16;
    yp_cudnn_scratch_bound(&d, YP_CONV_FORWARD, &pi, &fx);
    CHECK_EQ_I64(fx, 0);
    yp_cudnn_scratch_bound(&d, YP_CONV_BACKWARD, &pi, &fx);
    CHECK_EQ_I64(fx, 383);
    /* a frozen 1x1 under AMP reads its fp32 master: converted into the staging forward too */
    d.wdtype = YP_ELEM_F32;
    yp_cudnn_scratch_bound(&d, YP_CONV_FORWARD, &pi, &fx);
    CHECK_EQ_I64(fx, 383);
}

static int fake_device_info(yp_backend *be, char *name, size_t n, int64_t *total, int64_t *free_b) {
    (void)be;
    snprintf(name, n, "NVIDIA GeForce RTX 3070 Laptop GPU");
    *total = *free_b = (int64_t)8 << 30;
    return 0;
}

/* The resolver's "cuda" rule answers the bound of the query's conv. */
static void test_resolver(void) {
    yp_scratch_rule rule = {0};
    yp_err err;
    REQUIRE(yp_scratch_resolve("cuda", yp_exec_scratch_resolver(), &rule, &err) == 0);
    REQUIRE(rule.fn != NULL);
    yp_conv_query q = {.in = {64, 32, 160, 160}, .out = {64, 64, 80, 80}, .kh = 3, .kw = 3, .sh = 2, .sw = 2, .ph = 1,
                       .pw = 1, .groups = 1, .backward = 1, .dtype = YP_DTYPE_F32};
    int64_t pi = -1, fx = -1, want_pi, want_fx;
    CHECK(rule.fn(rule.ctx, &q, &pi, &fx, &err) == 0);
    yp_conv_desc d = conv(64, 160, 32, 64, 3, 2, 1);
    yp_cudnn_scratch_bound(&d, q.backward ? YP_CONV_BACKWARD : YP_CONV_FORWARD, &want_pi, &want_fx);
    CHECK_EQ_I64(pi, want_pi);
    CHECK_EQ_I64(fx, want_fx);
    /* the weight type travels: a frozen 1x1 under AMP (fp32 weights) stages them forward */
    yp_conv_query q1 = {.in = {2, 3, 40, 40}, .out = {2, 255, 40, 40}, .kh = 1, .kw = 1, .sh = 1, .sw = 1,
                        .groups = 1, .dtype = YP_DTYPE_F16, .wdtype = YP_DTYPE_F16};
    CHECK(rule.fn(rule.ctx, &q1, &pi, &fx, &err) == 0);
    CHECK_EQ_I64(fx, 0);
    q1.wdtype = YP_DTYPE_F32;
    CHECK(rule.fn(rule.ctx, &q1, &pi, &fx, &err) == 0);
    CHECK_EQ_I64(fx, 383);
    CHECK(yp_scratch_resolve("cudnn", yp_exec_scratch_resolver(), &rule, &err) == -1);
    CHECK_STR_HAS(err.msg, "known: im2col, onednn:T");
    CHECK_STR_HAS(err.msg, "cuda, cuda:CARD");
    /* "cuda:CARD" asks that card's cuDNN: without it (no GPU here) a loader refuses the plan in one
     * line, naming the way out */
    yp_backend *card = yp_backend_cuda_new(0, NULL, 0);
    if (!card) {
        CHECK(yp_scratch_resolve("cuda:nvidia-h200", yp_exec_scratch_resolver(), &rule, &err) == -1);
        CHECK_STR_HAS(err.msg, "cuda:nvidia-h200");
        CHECK_STR_HAS(err.msg, "the conv workspaces cuDNN chose on that card");
        CHECK_STR_HAS(err.msg, "no usable GPU");
        CHECK_STR_HAS(err.msg, "--scratch cuda");
    }
    yp_backend_free(card);
    CHECK_EQ_I64(yp_exec_model_fusions("cuda:nvidia-h200"), yp_exec_model_fusions("cuda"));
    /* the card's name as the model names it: a slug, cut to fit the name field */
    yp_backend named = {.name = "cuda", .device_info = fake_device_info};
    char model[YP_SCRATCH_NAME_MAX];
    yp_exec_card_model(&named, model, sizeof model);
    CHECK(!strcmp(model, "cuda:nvidia-geforce-rtx-3070-la"));
    yp_backend unnamed = {.name = "cuda"};
    yp_exec_card_model(&unnamed, model, sizeof model);
    CHECK(model[0] == 0);
    /* the fusions of a plan for "cuda" are those of the CUDA op table (none in a build without it) */
    const yp_ops *ops = yp_backend_cuda_ops();
    unsigned want = ops && ops->bn_silu_apply && ops->bn_silu_backward ? YP_FUSE_BN_SILU : 0u;
    CHECK_EQ_I64(yp_exec_model_fusions("cuda"), want);
}

/* yolov5n's plan at batch 2, 128 px, in precision prec, made for a CUDA instance (a stand-in that
 * names no device: yp_exec_candidate_for reads its name, alignment and op table only, and gives it
 * the "cuda" bound) on an A100. 0, or -1 after a message. */
static int stand_in_plan(const yp_graph *g, yp_precision prec, yp_candidate *c, yp_plan *p) {
    static yp_backend gpu_be;
    gpu_be = (yp_backend){.name = "cuda", .alignment = 256, .ops = yp_backend_cuda_ops()};
    yp_gpu gpu;
    yp_err err;
    *c = yp_candidate_default();
    c->batch = 2, c->img_w = c->img_h = 128, c->mosaic = 0, c->labels_per_image = 4, c->precision = prec;
    yp_exec_candidate_for(c, &gpu_be);
    if (yp_gpu_parse("a100-40gb", &gpu, &err) || yp_plan_build(g, c, &gpu, 0, 0, p, &err))
        return fprintf(stderr, "  plan: %s\n", err.msg), -1;
    return 0;
}

/* A plan made for a CUDA instance grants every conv the bound, and re-plans from its plan.json to
 * the byte. */
static void test_plan_round_trip(void) {
    yp_graph *g = yp_test_model("yolov5n"), *g2 = NULL;
    REQUIRE(g != NULL);
    yp_candidate c;
    yp_plan p, q;
    yp_err err;
    REQUIRE(stand_in_plan(g, YP_PREC_FP32, &c, &p) == 0);
    CHECK(!strcmp(yp_candidate_scratch_name(&c), "cuda"));
    CHECK_EQ_I64(c.alignment, 256);
    int n_ws = 0, all_floor = 1;
    for (int t = 0; t < p.sched->n_tensors; t++) {
        const yp_tensor *x = &p.sched->tensors[t];
        if (x->role != YP_ROLE_SCRATCH_IMAGE) continue;
        n_ws++;
        all_floor &= x->bytes == YP_CUDNN_WORKSPACE_FLOOR; /* every conv of yolov5n at 128 px is below it */
    }
    CHECK(n_ws > 0);
    CHECK(all_floor);
    char path[] = "/tmp/yp_test_cudnn_scratch_XXXXXX";
    int fd = mkstemp(path);
    REQUIRE(fd >= 0);
    close(fd);
    CHECK(yp_plan_save(&p, path, &err) == 0);
    int loaded = yp_plan_load_with(path, yp_exec_scratch_resolver(), &q, &g2, &err) == 0;
    if (!loaded) fprintf(stderr, "%s\n", err.msg);
    CHECK(loaded);
    if (loaded) {
        CHECK(!strcmp(yp_candidate_scratch_name(&q.cand), "cuda"));
        CHECK_EQ_I64(q.arena_bytes, p.arena_bytes);
        CHECK_EQ_I64(q.cand.fusions, c.fusions);
        yp_plan_free(&q);
        yp_graph_free(g2);
    }
    unlink(path);
    yp_plan_free(&p);
    yp_graph_free(g);
}

/* An AMP plan for CUDA stages what the kernels need: a trained 1x1 conv reads its fp16 copy in
 * place (no forward "wt:"), a frozen one converts its fp32 master into the staging (a forward
 * "wt:" of its weights at 2 bytes); both stage the gradient backward when they have one. */
static int64_t tensor_bytes(const yp_schedule *s, const char *name) {
    int t = yp_schedule_find(s, name);
    return t < 0 ? 0 : s->tensors[t].bytes;
}

static void test_plan_lowp(void) {
    yp_graph *g = yp_test_model("yolov5n");
    REQUIRE(g != NULL);
    yp_candidate c;
    yp_plan p;
    yp_gpu gpu;
    yp_err err;
    REQUIRE(stand_in_plan(g, YP_PREC_AMP_FP16, &c, &p) == 0);
    REQUIRE(yp_gpu_parse("a100-40gb", &gpu, &err) == 0);
    /* model.2.cv1.conv: yolov5n's C3 1x1, 32 -> 16 channels: 512 weights, 256 floats staged */
    CHECK_EQ_I64(tensor_bytes(p.sched, "wt:model.2.cv1.conv:fwd"), 0);
    CHECK_EQ_I64(tensor_bytes(p.sched, "wt:model.2.cv1.conv:bwd"), 256 * 4);
    yp_plan_free(&p);
    c.freeze = 10; /* the backbone */
    REQUIRE(yp_plan_build(g, &c, &gpu, 0, 0, &p, &err) == 0);
    CHECK_EQ_I64(tensor_bytes(p.sched, "wt:model.2.cv1.conv:fwd"), 256 * 4);
    yp_plan_free(&p);
    yp_graph_free(g);
}

/* A stand-in CUDA instance on a named card whose conv2d_scratch answers 7 per image, 3 fixed. */
static int fake_scratch(yp_backend *be, const yp_conv_desc *d, int has_bias, yp_conv_stage st, int64_t *per_image,
                        int64_t *fixed) {
    (void)be, (void)d, (void)has_bias, (void)st;
    *per_image = 7, *fixed = 3;
    return 0;
}

/* yp_exec_models: a card's model is asked of the instance lent to it when it is on that card; the
 * plain resolver, which keeps no instance, refuses it; another card's model is refused naming the
 * way out; the precisions a model's kind runs. */
static void test_models_instance(void) {
    static const yp_ops ops = {.conv2d_scratch = fake_scratch};
    yp_backend card = {.name = "cuda", .alignment = 256, .device_info = fake_device_info, .ops = &ops};
    yp_exec_models m;
    yp_exec_models_init(&m, &card);
    yp_scratch_rule rule = {0};
    yp_err err;
    REQUIRE(yp_scratch_resolve("cuda:nvidia-geforce-rtx-3070-la", &m.r, &rule, &err) == 0);
    CHECK(rule.ctx == &card);
    yp_conv_query q = {.in = {1, 3, 8, 8}, .out = {1, 8, 8, 8}, .kh = 3, .kw = 3, .sh = 1, .sw = 1, .ph = 1, .pw = 1,
                       .groups = 1, .dtype = YP_DTYPE_F32};
    int64_t pi = 0, fx = 0;
    CHECK(rule.fn(rule.ctx, &q, &pi, &fx, &err) == 0);
    CHECK_EQ_I64(pi, 7);
    CHECK_EQ_I64(fx, 3);
    CHECK(m.made == NULL);
    CHECK(yp_scratch_resolve("cuda:no-such-card", &m.r, &rule, &err) == -1); /* no card of that name anywhere */
    CHECK_STR_HAS(err.msg, "the conv workspaces cuDNN chose on that card");
    CHECK_STR_HAS(err.msg, "--scratch cuda");
    CHECK(yp_scratch_resolve("cuda:nvidia-geforce-rtx-3070-la", yp_exec_scratch_resolver(), &rule, &err) == -1);
    CHECK_STR_HAS(err.msg, "the conv workspaces cuDNN chose on that card");
    /* the other models resolve as the plain resolver's: the bound and a thread count */
    CHECK(yp_scratch_resolve("cuda", &m.r, &rule, &err) == 0 && rule.fn != NULL && rule.ctx != &card);
    CHECK(yp_scratch_resolve("onednn:2", &m.r, &rule, &err) == 0 && rule.fn != NULL);
    CHECK(yp_scratch_resolve("onednn:0", &m.r, &rule, &err) == -1);
    CHECK_STR_HAS(err.msg, "1..1024");
    yp_exec_models_free(&m);
    const unsigned all = (1u << YP_PREC_COUNT) - 1;
    CHECK_EQ_I64(yp_exec_model_precisions("onednn:4"), 1u << YP_PREC_FP32);
    CHECK_EQ_I64(yp_exec_model_precisions("cuda"), all);
    CHECK_EQ_I64(yp_exec_model_precisions("cuda:nvidia-h200"), all);
    CHECK_EQ_I64(yp_exec_model_precisions("im2col"), all);
}

int main(void) {
    YP_RUN(test_bound);
    YP_RUN(test_bound_lowp);
    YP_RUN(test_resolver);
    YP_RUN(test_models_instance);
    YP_RUN(test_plan_round_trip);
    YP_RUN(test_plan_lowp);
    return yp_test_summary();
}
