/* test_pytorch_saved.c - under the `pytorch` saving policy (fp32, batch 1) the bytes the schedule
 * saves for backward equal, exactly, what torch.autograd.graph.saved_tensors_hooks reports for the
 * same network in PyTorch (tests/data/pytorch_saved.json, written by
 * bench/reference/saved_bytes.py with Debian's torch 1.13; each distinct tensor counted once,
 * parameters and buffers excluded, the image included). Under autocast (the fixture's
 * "autocast" rows: CPU autocast, bf16, which has fp16's sizes) yp_torch_saved_bytes of the
 * schedule built with bf16 activations equals the measurement dtype by dtype, the weight copies
 * apart, for yolov5n and yolov5s at 320 and 640. */
#include <stdlib.h>

#include <cjson/cJSON.h>

#include "yp_ir.h"
#include "yp_schedule.h"
#include "yp_test.h"
#include "yp_test_json.h"
#include "yp_torch_saved.h"

static cJSON *fixture(void) { return yp_test_json_file(YP_TEST_DATA "/pytorch_saved.json"); }

static void test_saved_bytes_equal_pytorch(void) {
    cJSON *fx = fixture();
    CHECK(fx != NULL);
    if (!fx) return;
    const cJSON *models = cJSON_GetObjectItem(fx, "models");
    int compared = 0;
    for (const cJSON *m = models ? models->child : NULL; m; m = m->next) {
        char path[256];
        yp_err err;
        snprintf(path, sizeof path, "%s/%s.json", YP_MODELS_DIR, m->string);
        yp_graph *g = yp_ir_load_file(path, &err);
        CHECK(g != NULL);
        for (const cJSON *sz = m->child; g && sz; sz = sz->next) {
            int64_t img = atoll(sz->string);
            yp_sched_opts o = yp_sched_opts_default(1, img, img);
            o.policy = YP_SAVE_PYTORCH;
            yp_schedule *s = yp_schedule_build(g, &o, &err);
            CHECK(s != NULL);
            if (!s) continue;
            int64_t ours = yp_schedule_saved_bytes(s), theirs = (int64_t)sz->valuedouble;
            if (ours != theirs) fprintf(stderr, "%s at %lld: %lld vs torch %lld\n", m->string, (long long)img,
                                        (long long)ours, (long long)theirs);
            CHECK_EQ_I64(ours, theirs);
            compared++;
            yp_schedule_free(s);
        }
        yp_graph_free(g);
    }
    CHECK_EQ_I64(compared, 10);
    cJSON_Delete(fx);
}

static yp_schedule *pytorch_schedule(const yp_graph *g, int64_t img, yp_dtype act) {
    yp_err err;
    yp_sched_opts o = yp_sched_opts_default(1, img, img);
    o.policy = YP_SAVE_PYTORCH;
    o.act_dtype = act;
    yp_schedule *s = yp_schedule_build(g, &o, &err);
    if (!s) fprintf(stderr, "schedule: %s\n", err.msg);
    return s;
}

/* One autocast row: bytes by dtype, weight copies and total, each exactly. */
static void check_autocast_row(const char *model, int64_t img, const yp_torch_saved *ours, const cJSON *row) {
    static const struct { const char *key; yp_dtype d; } cols[] = {
        {"bf16", YP_DTYPE_BF16}, {"f32", YP_DTYPE_F32}, {"i64", YP_DTYPE_I64}};
    int64_t sum = 0;
    for (size_t k = 0; k < sizeof cols / sizeof *cols; k++) {
        const cJSON *v = cJSON_GetObjectItem(row, cols[k].key);
        REQUIRE(cJSON_IsNumber(v));
        if (ours->by_dtype[cols[k].d] != (int64_t)v->valuedouble)
            fprintf(stderr, "%s at %lld, %s: %lld vs torch %lld\n", model, (long long)img, cols[k].key,
                    (long long)ours->by_dtype[cols[k].d], (long long)v->valuedouble);
        CHECK_EQ_I64(ours->by_dtype[cols[k].d], (int64_t)v->valuedouble);
        sum += ours->by_dtype[cols[k].d];
    }
    const cJSON *wc = cJSON_GetObjectItem(row, "weight_copies"), *tot = cJSON_GetObjectItem(row, "total");
    REQUIRE(cJSON_IsNumber(wc) && cJSON_IsNumber(tot));
    CHECK_EQ_I64(ours->weight_copies, (int64_t)wc->valuedouble);
    CHECK_EQ_I64(ours->total, (int64_t)tot->valuedouble);
    CHECK_EQ_I64(sum, ours->total); /* no byte in a dtype the fixture lacks (f16, f64) */
}

/* Autocast: bf16 activations and weight copies, fp32 BN statistics, int64 maxpool indices, equal
 * to saved_tensors_hooks' count; fp16 gives the same bytes in the f16 column. */
static void test_autocast_bytes_equal_pytorch(void) {
    cJSON *fx = fixture();
    REQUIRE(fx != NULL);
    const cJSON *ac = cJSON_GetObjectItem(fx, "autocast");
    const cJSON *dt = cJSON_GetObjectItem(ac, "dtype"), *models = cJSON_GetObjectItem(ac, "models");
    CHECK(cJSON_IsString(dt) && !strcmp(dt->valuestring, "bf16"));
    int compared = 0;
    for (const cJSON *m = models ? models->child : NULL; m; m = m->next) {
        char path[256];
        yp_err err;
        snprintf(path, sizeof path, "%s/%s.json", YP_MODELS_DIR, m->string);
        yp_graph *g = yp_ir_load_file(path, &err);
        CHECK(g != NULL);
        for (const cJSON *sz = m->child; g && sz; sz = sz->next) {
            int64_t img = atoll(sz->string);
            yp_schedule *bf = pytorch_schedule(g, img, YP_DTYPE_BF16), *hf = pytorch_schedule(g, img, YP_DTYPE_F16);
            yp_torch_saved b, h;
            CHECK(bf && hf);
            if (bf && hf && !yp_torch_saved_bytes(bf, &b, &err) && !yp_torch_saved_bytes(hf, &h, &err)) {
                check_autocast_row(m->string, img, &b, sz);
                CHECK_EQ_I64(h.by_dtype[YP_DTYPE_F16], b.by_dtype[YP_DTYPE_BF16]);
                CHECK_EQ_I64(h.total, b.total);
                CHECK_EQ_I64(h.weight_copies, b.weight_copies);
                compared++;
            }
            yp_schedule_free(bf), yp_schedule_free(hf);
        }
        yp_graph_free(g);
    }
    CHECK_EQ_I64(compared, 4);
    cJSON_Delete(fx);
}

/* Under fp32 the by-dtype count is yp_schedule_saved_bytes, all of it fp32 or int64 (the maxpool
 * indices), with no weight copies; a schedule of another policy is refused. */
static void test_torch_saved_fp32_and_refusal(void) {
    yp_err err;
    yp_graph *g = yp_ir_load_file(YP_MODELS_DIR "/yolov5n.json", &err);
    REQUIRE(g != NULL);
    yp_schedule *s = pytorch_schedule(g, 320, YP_DTYPE_F32);
    yp_torch_saved t;
    CHECK(s != NULL);
    if (s) {
        CHECK(yp_torch_saved_bytes(s, &t, &err) == 0);
        CHECK_EQ_I64(t.total, yp_schedule_saved_bytes(s));
        CHECK_EQ_I64(t.by_dtype[YP_DTYPE_F32] + t.by_dtype[YP_DTYPE_I64], t.total);
        CHECK_EQ_I64(t.weight_copies, 0);
    }
    yp_schedule_free(s);
    yp_sched_opts o = yp_sched_opts_default(1, 320, 320);
    o.act_dtype = YP_DTYPE_F16;
    s = yp_schedule_build(g, &o, &err);
    CHECK(s != NULL);
    if (s) {
        CHECK(yp_torch_saved_bytes(s, &t, &err) == -1);
        CHECK_STR_HAS(err.msg, "yoloplan policy");
    }
    yp_schedule_free(s);
    yp_graph_free(g);
}

/* Grouped and depthwise convs save their input as any conv does: tests/data/ir/tiny_dw.json (two
 * depthwise DWConvs and a groups=2 Conv) under the `pytorch` policy at batch 2 saves what
 * saved_tensors_hooks measured (tests/data/pytorch_saved_dw.json, from
 * tests/ref/make_group_saved_fixture.py), exactly, at each size. */
static void test_grouped_saved_bytes_equal_pytorch(void) {
    cJSON *fx = yp_test_json_file(YP_TEST_DATA "/pytorch_saved_dw.json");
    REQUIRE(fx != NULL);
    yp_err err;
    yp_graph *g = yp_ir_load_file(YP_TEST_DATA "/ir/tiny_dw.json", &err);
    CHECK(g != NULL);
    const cJSON *batch = cJSON_GetObjectItem(fx, "batch"), *sizes = cJSON_GetObjectItem(fx, "sizes");
    CHECK(cJSON_IsNumber(batch));
    int compared = 0;
    for (const cJSON *sz = sizes ? sizes->child : NULL; g && cJSON_IsNumber(batch) && sz; sz = sz->next) {
        int64_t img = atoll(sz->string);
        yp_sched_opts o = yp_sched_opts_default((int64_t)batch->valuedouble, img, img);
        o.policy = YP_SAVE_PYTORCH;
        yp_schedule *s = yp_schedule_build(g, &o, &err);
        CHECK(s != NULL);
        if (!s) continue;
        int64_t ours = yp_schedule_saved_bytes(s), theirs = (int64_t)sz->valuedouble;
        if (ours != theirs) fprintf(stderr, "tiny_dw at %lld: %lld vs torch %lld\n", (long long)img, (long long)ours,
                                    (long long)theirs);
        CHECK_EQ_I64(ours, theirs);
        compared++;
        yp_schedule_free(s);
    }
    CHECK_EQ_I64(compared, 2);
    yp_graph_free(g);
    cJSON_Delete(fx);
}

/* The yoloplan policy saves less than PyTorch for every model (the point of docs/architecture.md §6). */
static void test_yoloplan_saves_less(void) {
    yp_err err;
    yp_graph *g = yp_ir_load_file(YP_MODELS_DIR "/yolov5s.json", &err);
    REQUIRE(g != NULL);
    yp_sched_opts o = yp_sched_opts_default(1, 640, 640);
    yp_schedule *ours = yp_schedule_build(g, &o, &err);
    o.policy = YP_SAVE_PYTORCH;
    yp_schedule *pt = yp_schedule_build(g, &o, &err);
    CHECK(ours && pt);
    if (ours && pt) {
        double ratio = (double)yp_schedule_saved_bytes(ours) / (double)yp_schedule_saved_bytes(pt);
        printf("  yolov5s 640: yoloplan saves %.1f%% of PyTorch's bytes\n", 100 * ratio);
        CHECK(ratio < 0.5);
    }
    yp_schedule_free(ours);
    yp_schedule_free(pt);
    yp_graph_free(g);
}

int main(void) {
    YP_RUN(test_saved_bytes_equal_pytorch);
    YP_RUN(test_autocast_bytes_equal_pytorch);
    YP_RUN(test_torch_saved_fp32_and_refusal);
    YP_RUN(test_grouped_saved_bytes_equal_pytorch);
    YP_RUN(test_yoloplan_saves_less);
    return yp_test_summary();
}
