/* test_pytorch_saved.c - under the `pytorch` saving policy (fp32, batch 1) the bytes the schedule
 * saves for backward equal, exactly, what torch.autograd.graph.saved_tensors_hooks reports for the
 * same network in PyTorch (tests/data/pytorch_saved.json, written by
 * bench/reference/saved_bytes.py with Debian's torch 1.13; each distinct tensor counted once,
 * parameters and buffers excluded, the image included). */
#include <stdlib.h>

#include <cjson/cJSON.h>

#include "yp_ir.h"
#include "yp_schedule.h"
#include "yp_test.h"

static cJSON *fixture(void) {
    FILE *f = fopen(YP_TEST_DATA "/pytorch_saved.json", "rb");
    if (!f) return NULL;
    static char buf[1 << 14];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    return cJSON_Parse(buf);
}

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
    YP_RUN(test_yoloplan_saves_less);
    return yp_test_summary();
}
