/* test_torch_train.c - train.py's sequence through the caching-allocator model
 * (planner/yp_torch_train.h): what it holds and where it peaks, the capacity, the options'
 * directions (batch, size, --freeze, --optimizer, --multi-scale, fp32), AutoBatch's choice by
 * hand-worked rows, the recommendation's edges, the card's context and capacity. The published
 * figures are tests/planner/test_torch_published.c's. */
#include <stdlib.h>

#include "yp_ir.h"
#include "yp_test.h"
#include "yp_test_models.h"
#include "yp_torch_saved.h"
#include "yp_torch_train.h"

static yp_graph *load(const char *name) { return yp_test_model(name); }

static yp_torch_train_result replay(const yp_graph *g, yp_torch_train_opts o) {
    yp_torch_train_result r;
    yp_err err;
    if (yp_torch_train_replay(g, &o, &r, &err)) {
        fprintf(stderr, "replay: %s\n", err.msg);
        memset(&r, 0, sizeof r);
        r.oom = -1;
    }
    return r;
}

static yp_torch_train_opts small(int64_t batch, int64_t img) {
    yp_torch_train_opts o = yp_torch_train_opts_default();
    o.batch = batch, o.img = img;
    return o;
}

/* What the replay holds: the persistent state, every saved byte at the peak, validation's
 * shapes, readings that only grow without a limit. */
static void test_sequence(void) {
    yp_graph *g = load("yolov5n");
    REQUIRE(g != NULL);
    yp_torch_train_opts o = small(8, 320);
    yp_torch_train_result r = replay(g, o);
    REQUIRE(r.oom == 0);
    CHECK_EQ_I64(r.val_batch, 16);
    CHECK_EQ_I64(r.val_img, 352); /* ceil(320 / 32 + 0.5) * 32 */
    CHECK_EQ_I64(r.accumulate, 8);
    CHECK(r.model_bytes >= 4 * yp_graph_params(g) && r.ema_bytes == r.model_bytes);
    CHECK(r.grad_bytes >= 4 * yp_graph_params(g) && r.optim_bytes >= 4 * yp_graph_params(g));
    CHECK(r.gpu_mem_epoch0 > 0 && r.gpu_mem_later >= r.gpu_mem_epoch0); /* nothing released without a limit */
    CHECK(r.peak_reserved >= r.peak_allocated && r.peak_reserved == r.gpu_mem_later);
    yp_sched_opts so = yp_sched_opts_default(8, 320, 320);
    so.policy = YP_SAVE_PYTORCH, so.act_dtype = YP_DTYPE_F16, so.ema = 0;
    yp_err err;
    yp_schedule *s = yp_schedule_build(g, &so, &err);
    yp_torch_saved sv;
    REQUIRE(s && !yp_torch_saved_bytes(s, &sv, &err));
    /* at the loss: every saved byte, the model, its EMA, .grad (kept while accumulating), momentum */
    CHECK(r.train_peak_allocated >= sv.total + r.model_bytes + r.ema_bytes + r.optim_bytes);
    printf("  yolov5n 320 b8: GPU_mem %.3gG / %.3gG, peak %.3gG at %s, saved %.3f GB\n", r.gpu_mem_epoch0 / 1e9,
           r.gpu_mem_later / 1e9, r.peak_reserved / 1e9, yp_torch_at_name(r.peak_at), sv.total / 1e9);
    yp_schedule_free(s);
    /* deterministic */
    yp_torch_train_result again = replay(g, o);
    CHECK_EQ_I64(again.peak_reserved, r.peak_reserved);
    CHECK_EQ_I64(again.gpu_mem_epoch0, r.gpu_mem_epoch0);
    /* without validation the peak is training's */
    o.val = 0;
    yp_torch_train_result nv = replay(g, o);
    CHECK(nv.peak_at == YP_TORCH_AT_TRAIN && nv.val_peak_reserved == 0);
    yp_graph_free(g);
}

/* A limit: below the peak of memory_allocated it runs out (and says where), at the peak of
 * memory_reserved it does not and reads the same. */
static void test_capacity(void) {
    yp_graph *g = load("yolov5n");
    REQUIRE(g != NULL);
    yp_torch_train_opts o = small(8, 320);
    yp_torch_train_result free_run = replay(g, o);
    o.capacity = free_run.peak_reserved;
    yp_torch_train_result at = replay(g, o);
    CHECK_EQ_I64(at.oom, 0);
    CHECK_EQ_I64(at.peak_reserved, free_run.peak_reserved);
    o.capacity = free_run.train_peak_allocated - (1 << 20);
    yp_torch_train_result out = replay(g, o);
    CHECK_EQ_I64(out.oom, 1);
    CHECK(out.oom_at == YP_TORCH_AT_TRAIN);
    o.capacity = 1 << 20; /* not even the model */
    out = replay(g, o);
    CHECK(out.oom == 1 && out.oom_at == YP_TORCH_AT_SETUP);
    /* near the limit PyTorch releases its cache and retries: reserved stays within the limit */
    o.capacity = (free_run.train_peak_allocated + free_run.peak_reserved) / 2;
    at = replay(g, o);
    if (!at.oom) CHECK(at.peak_reserved <= o.capacity);
    yp_graph_free(g);
}

/* The options move the need the way train.py's own do. */
static void test_directions(void) {
    yp_graph *g = load("yolov5s");
    REQUIRE(g != NULL);
    yp_torch_train_result base = replay(g, small(8, 320));
    yp_torch_train_result b16 = replay(g, small(16, 320));
    yp_torch_train_result i416 = replay(g, small(8, 416));
    yp_torch_train_opts o = small(8, 320);
    o.freeze = 10;
    yp_torch_train_result fz = replay(g, o);
    o = small(8, 320), o.optimizer = YP_OPT_ADAM;
    yp_torch_train_result adam = replay(g, o);
    o = small(8, 320), o.multi_scale = 1;
    yp_torch_train_result ms = replay(g, o);
    o = small(8, 320), o.amp = 0;
    yp_torch_train_result fp32 = replay(g, o);
    o = small(8, 320), o.labels_per_image = 4 * 200;
    yp_torch_train_result crowded = replay(g, o);
    CHECK(b16.peak_allocated > base.peak_allocated && i416.peak_allocated > base.peak_allocated);
    CHECK(fz.peak_allocated < base.peak_allocated);
    printf("  optimizer state: SGD %.1f MB, Adam %.1f MB\n", base.optim_bytes / 1e6, adam.optim_bytes / 1e6);
    CHECK(adam.optim_bytes >= 2 * base.optim_bytes - (1 << 20) && adam.peak_allocated > base.peak_allocated);
    CHECK(ms.train_img_max == 480 && ms.peak_allocated > base.peak_allocated);
    CHECK(fp32.peak_allocated > base.peak_allocated);
    CHECK(crowded.peak_allocated > base.peak_allocated);
    printf("  yolov5s 320 b8 peak allocated: %.3f GB; b16 %.3f, img 416 %.3f, --freeze 10 %.3f, Adam %.3f, "
           "--multi-scale %.3f, fp32 %.3f, 200 labels/img %.3f\n", base.peak_allocated / 1e9, b16.peak_allocated / 1e9,
           i416.peak_allocated / 1e9, fz.peak_allocated / 1e9, adam.peak_allocated / 1e9, ms.peak_allocated / 1e9,
           fp32.peak_allocated / 1e9, crowded.peak_allocated / 1e9);
    yp_graph_free(g);
}

/* AutoBatch's arithmetic by hand: a line through (1, 1 GB), (2, 2 GB), ...: slope 1 GB per image,
 * intercept 0; with t = 10 GiB and nothing reserved b = int(10 * 0.8 / 1) = 8 (GB over GiB). */
static void test_autobatch_pick(void) {
    const int64_t gib = (int64_t)1 << 30;
    yp_torch_probe_row rows[5];
    int64_t b[5] = {1, 2, 4, 8, 16};
    for (int i = 0; i < 5; i++) rows[i] = (yp_torch_probe_row){b[i], b[i] * 1000000000, 0, 0, 0};
    int anomaly = 1;
    double pred = 0;
    CHECK_EQ_I64(yp_torch_autobatch_pick(10 * gib, 0, 0, rows, 5, 0.8, &anomaly, &pred), 8);
    CHECK_EQ_I64(anomaly, 0);
    CHECK(fabs(pred - 0.8) < 1e-9);
    /* f double-counts the allocated bytes: t - (r + a) = 10 - (1 + 1) = 8 GiB free -> int(6.4) */
    CHECK_EQ_I64(yp_torch_autobatch_pick(10 * gib, gib, gib, rows, 5, 0.8, NULL, NULL), 6);
    /* batch 16 failed: the line through the four others says 8, below the failure: kept */
    rows[4].failed = 1;
    CHECK_EQ_I64(yp_torch_autobatch_pick(10 * gib, 0, 0, rows, 5, 0.8, NULL, NULL), 8);
    /* a bigger card: the line says 80, at or above the failed 16: the size before it */
    CHECK_EQ_I64(yp_torch_autobatch_pick(100 * gib, 0, 0, rows, 5, 0.8, NULL, NULL), 8);
    /* batch 1 failed but 2 succeeded: the rows are paired with the first sizes (1, 2, ...) */
    rows[4].failed = 0, rows[0].failed = 1;
    int64_t paired = yp_torch_autobatch_pick(10 * gib, 0, 0, rows, 5, 0.8, NULL, NULL);
    CHECK_EQ_I64(paired, 1); /* the line of (1,2) (2,4) (3,8) (4,16) is steep; its b < 1 failure rule gives 1 */
    /* out of range: the default 16 and the anomaly */
    rows[0].failed = 0;
    CHECK_EQ_I64(yp_torch_autobatch_pick(100000 * gib, 0, 0, rows, 5, 0.8, &anomaly, NULL), 16);
    CHECK_EQ_I64(anomaly, 1);
    for (int i = 0; i < 5; i++) rows[i].failed = 1;
    CHECK_EQ_I64(yp_torch_autobatch_pick(10 * gib, 0, 0, rows, 5, 0.8, NULL, NULL), -1);
}

/* The recommendation fits with the margin kept free, one more does not; nothing fits on a
 * card too small for the model. */
static void test_recommend(void) {
    yp_graph *g = load("yolov5n");
    REQUIRE(g != NULL);
    yp_torch_train_opts o = small(1, 320);
    int64_t cap = (int64_t)3 << 30, b = 0;
    yp_torch_train_result at;
    yp_err err;
    CHECK_EQ_I64(yp_torch_recommend(g, &o, cap, YP_TORCH_MARGIN, 1024, &b, &at, &err), 0);
    CHECK(b > 1 && !at.oom);
    o.batch = b + 1, o.capacity = (int64_t)((double)cap * (1 - YP_TORCH_MARGIN));
    yp_torch_train_result next = replay(g, o);
    CHECK_EQ_I64(next.oom, 1);
    printf("  yolov5n 320 on 3 GiB: --batch-size %lld (GPU_mem %.3gG)\n", (long long)b, at.gpu_mem_later / 1e9);
    int64_t capped = 0;
    CHECK_EQ_I64(yp_torch_recommend(g, &o, cap, YP_TORCH_MARGIN, 5, &capped, NULL, &err), 0);
    CHECK_EQ_I64(capped, b < 5 ? b : 5);
    CHECK_EQ_I64(yp_torch_recommend(g, &o, 1 << 20, YP_TORCH_MARGIN, 1024, &b, NULL, &err), 0);
    CHECK_EQ_I64(b, 0);
    /* remedies of a configuration that does not fit: the recommended batch, a smaller size that
     * fits, --freeze 10; the optimizers' moments cost memory */
    yp_torch_remedy rem[YP_TORCH_MAX_REMEDIES];
    int n = 0;
    o = small(160, 320);
    int64_t rec = 0;
    CHECK_EQ_I64(yp_torch_recommend(g, &o, cap, YP_TORCH_MARGIN, 1024, &rec, NULL, &err), 0);
    CHECK_EQ_I64(yp_torch_remedies(g, &o, cap, YP_TORCH_MARGIN, rec, rem, &n, &err), 0);
    int saw_batch = 0, saw_img = 0, saw_freeze = 0, saw_opt = 0;
    for (int i = 0; i < n; i++) {
        printf("  remedy %-20s needs %.3f GB, saves %+.3f GB, fits %d\n", rem[i].flag, rem[i].need / 1e9,
               rem[i].saves / 1e9, rem[i].fits);
        if (!strncmp(rem[i].flag, "--batch-size", 12)) {
            saw_batch = 1;
            CHECK(rem[i].fits && rem[i].saves > 0);
        }
        if (!strncmp(rem[i].flag, "--img", 5)) {
            saw_img = 1;
            CHECK(rem[i].fits && rem[i].saves > 0);
        }
        if (!strcmp(rem[i].flag, "--freeze 10")) {
            saw_freeze = 1;
            CHECK(rem[i].saves > 0);
        }
        if (!strncmp(rem[i].flag, "--optimizer", 11)) {
            saw_opt = 1;
            CHECK(rem[i].saves < 0);
        }
    }
    CHECK(saw_batch && saw_img && saw_freeze && saw_opt);
    yp_graph_free(g);
}

/* The card: PyTorch may use its CUDA total less the context; nvidia-smi adds the context. */
static void test_card(void) {
    yp_gpu gpu;
    yp_err err;
    REQUIRE(!yp_gpu_parse("rtx3070", &gpu, &err));
    CHECK_EQ_I64(gpu.cuda_total_bytes, (int64_t)7946 << 20);
    CHECK_EQ_I64(yp_torch_context_bytes(&gpu), gpu.fixed_bytes - (gpu.mem_bytes - gpu.cuda_total_bytes));
    CHECK_EQ_I64(yp_torch_capacity(&gpu), gpu.cuda_total_bytes - yp_torch_context_bytes(&gpu));
    CHECK(yp_torch_context_bytes(&gpu) > (256 << 20) && yp_torch_context_bytes(&gpu) < (1 << 30));
    REQUIRE(!yp_gpu_parse("8GB", &gpu, &err));
    CHECK(gpu.cuda_total_bytes < gpu.mem_bytes && yp_torch_capacity(&gpu) > 0);
    yp_gpu_from_device("NVIDIA H200", (int64_t)143771 << 20, &gpu);
    CHECK_EQ_I64(gpu.cuda_total_bytes, gpu.mem_bytes); /* what the device reports: no driver reserve on top */
    CHECK_EQ_I64(yp_torch_context_bytes(&gpu), gpu.fixed_bytes);
}

int main(void) {
    YP_RUN(test_sequence);
    YP_RUN(test_capacity);
    YP_RUN(test_directions);
    YP_RUN(test_autobatch_pick);
    YP_RUN(test_recommend);
    YP_RUN(test_card);
    return yp_test_summary();
}
