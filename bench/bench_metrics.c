/* bench_metrics.c - the time of YOLOv5's validation metrics (executor/metrics/yp_metrics.h) on a
 * validation-sized batch: NMS per image, then matching and AP over the batch.
 *
 *   ./build/bench/bench_metrics [--images 16] [--img 640] [--nc 80] [--reps 3] [--save FILE]
 *
 * The batch is synthetic and deterministic: per image 3 * ((img/8)^2 + (img/16)^2 + (img/32)^2)
 * rows (yolov5's three levels of 3 anchors; 25200 at 640) of random boxes with objectness u^16
 * and class scores v^4 (about a third of the rows pass conf 0.001, most with a few classes), plus
 * 7 labels per image (COCO's mean) each with 8 high-objectness jittered predictions around it.
 * val.py's settings. Prints the best of --reps for: NMS (ms per image, candidates and rows out),
 * then matching + ap_per_class over the batch (ms), and the metrics. --save writes the batch
 * and our results in tests/ref/make_step_fixture.py's record format for
 * bench/reference/metrics_bench.py, which times the PyTorch/numpy reference on the same data.
 * Not a test: exits 0 whatever the figures (2 on bad usage, 1 on failure). */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "yp_metrics.h"
#include "yp_clock.h"

static uint64_t rng_state = 0x9E3779B97F4A7C15ull;

/* xorshift64*: uniform in [0, 1) */
static double uniform(void) {
    rng_state ^= rng_state >> 12, rng_state ^= rng_state << 25, rng_state ^= rng_state >> 27;
    return (double)((rng_state * 2685821657736338717ull) >> 11) * (1.0 / 9007199254740992.0);
}

static void record(FILE *f, const char *name, const float *data, uint32_t n0, uint32_t n1) {
    uint32_t len = (uint32_t)strlen(name), nd = 2;
    fwrite(&len, 4, 1, f), fwrite(name, 1, len, f), fwrite(&nd, 4, 1, f), fwrite(&n0, 4, 1, f), fwrite(&n1, 4, 1, f);
    fwrite(data, sizeof(float), (size_t)n0 * n1, f);
}

#define LABELS 7
#define AROUND 8

/* One image: rows of 5 + nc floats, LABELS labels (class, x1, y1, x2, y2). */
static void make_image(float *pred, int64_t rows, int nc, int img, float *labels) {
    int64_t f = 5 + nc;
    for (int64_t r = 0; r < rows; r++) {
        float *p = pred + r * f;
        p[0] = (float)(uniform() * img), p[1] = (float)(uniform() * img);
        p[2] = (float)(8 + uniform() * img / 3), p[3] = (float)(8 + uniform() * img / 3);
        p[4] = (float)pow(uniform(), 16);
        for (int c = 0; c < nc; c++) p[5 + c] = (float)pow(uniform(), 4);
    }
    for (int l = 0; l < LABELS; l++) {
        float w = (float)(16 + uniform() * img / 4), h = (float)(16 + uniform() * img / 4);
        float cx = (float)(w / 2 + uniform() * (img - w)), cy = (float)(h / 2 + uniform() * (img - h));
        int cls = (int)(uniform() * nc);
        float *lb = labels + 5 * l;
        lb[0] = (float)cls, lb[1] = cx - w / 2, lb[2] = cy - h / 2, lb[3] = cx + w / 2, lb[4] = cy + h / 2;
        for (int k = 0; k < AROUND; k++) { /* overwrite random rows with hits around the label */
            float *p = pred + (int64_t)(uniform() * rows) * f;
            p[0] = cx + (float)((uniform() - 0.5) * 0.2 * w), p[1] = cy + (float)((uniform() - 0.5) * 0.2 * h);
            p[2] = w * (float)(0.8 + 0.4 * uniform()), p[3] = h * (float)(0.8 + 0.4 * uniform());
            p[4] = (float)(0.3 + 0.7 * uniform());
            p[5 + cls] = (float)(0.5 + 0.5 * uniform());
        }
    }
}

int main(int argc, char **argv) {
    int images = 16, img = 640, nc = 80, reps = 3;
    const char *save = NULL;
    for (int i = 1; i < argc; i++) {
        if (i + 1 < argc && !strcmp(argv[i], "--images")) images = atoi(argv[++i]);
        else if (i + 1 < argc && !strcmp(argv[i], "--img")) img = atoi(argv[++i]);
        else if (i + 1 < argc && !strcmp(argv[i], "--nc")) nc = atoi(argv[++i]);
        else if (i + 1 < argc && !strcmp(argv[i], "--reps")) reps = atoi(argv[++i]);
        else if (i + 1 < argc && !strcmp(argv[i], "--save")) save = argv[++i];
        else {
            fprintf(stderr, "usage: bench_metrics [--images N] [--img PX] [--nc N] [--reps N] [--save FILE]\n");
            return 2;
        }
    }
    if (images < 1 || img < 32 || img % 32 || nc < 1 || reps < 1) {
        fprintf(stderr, "bench_metrics: --images >= 1, --img a multiple of 32, --nc >= 1, --reps >= 1\n");
        return 2;
    }
    int64_t rows = 3 * ((int64_t)(img / 8) * (img / 8) + (int64_t)(img / 16) * (img / 16) + (int64_t)(img / 32) * (img / 32));
    yp_nms_cfg cfg;
    yp_nms_cfg_val(&cfg);
    int64_t ws_bytes = yp_nms_workspace_bytes(&cfg, rows, nc);
    float *pred = malloc((size_t)images * rows * (5 + nc) * sizeof *pred);
    float *labels = malloc((size_t)images * LABELS * 5 * sizeof *labels);
    float *dets = malloc((size_t)images * cfg.max_det * 6 * sizeof *dets);
    int64_t *n_det = calloc((size_t)images, sizeof *n_det);
    void *ws = ws_bytes > 0 ? malloc((size_t)ws_bytes) : NULL;
    yp_map m;
    yp_err err;
    if (!pred || !labels || !dets || !n_det || ws_bytes < 0 || (ws_bytes && !ws) ||
        yp_map_init(&m, nc, images * cfg.max_det, LABELS, &err)) {
        fprintf(stderr, "bench_metrics: out of memory\n");
        return 1;
    }
    for (int i = 0; i < images; i++) make_image(pred + (int64_t)i * rows * (5 + nc), rows, nc, img, labels + i * LABELS * 5);
    int64_t cand = 0;
    for (int i = 0; i < images; i++) { /* candidates (rows x classes above conf), for the record */
        const float *p = pred + (int64_t)i * rows * (5 + nc);
        for (int64_t r = 0; r < rows; r++)
            for (int c = 0; p[r * (5 + nc) + 4] > cfg.conf_thres && c < nc; c++)
                cand += p[r * (5 + nc) + 5 + c] * p[r * (5 + nc) + 4] > cfg.conf_thres;
    }
    double best_nms = INFINITY, best_ap = INFINITY;
    int64_t total = 0;
    for (int rep = 0; rep < reps; rep++) {
        double t0 = (yp_now_s() * 1e3);
        total = 0;
        for (int i = 0; i < images; i++) {
            n_det[i] = yp_nms(&cfg, pred + (int64_t)i * rows * (5 + nc), rows, nc, ws, ws_bytes, dets + i * cfg.max_det * 6, &err);
            if (n_det[i] < 0) {
                fprintf(stderr, "bench_metrics: %s\n", err.msg);
                return 1;
            }
            total += n_det[i];
        }
        double t1 = (yp_now_s() * 1e3);
        yp_map_reset(&m);
        for (int i = 0; i < images; i++)
            if (yp_map_add(&m, dets + i * cfg.max_det * 6, n_det[i], labels + i * LABELS * 5, LABELS, &err)) {
                fprintf(stderr, "bench_metrics: %s\n", err.msg);
                return 1;
            }
        yp_map_compute(&m);
        double t2 = (yp_now_s() * 1e3);
        best_nms = fmin(best_nms, t1 - t0), best_ap = fmin(best_ap, t2 - t1);
    }
    printf("bench_metrics: %d images of %dx%d, %lld rows each, nc %d (val.py's NMS: conf 0.001, IoU 0.6, max_det 300)\n",
           images, img, img, (long long)rows, nc);
    printf("  NMS              %8.2f ms per image  (%lld candidates per image, %lld rows out per image; "
           "workspace %.1f MiB)\n",
           best_nms / images, (long long)(cand / images), (long long)(total / images), ws_bytes / 1048576.0);
    printf("  match + AP       %8.2f ms per batch  (%lld detections, %d labels)\n", best_ap, (long long)m.n_det,
           images * LABELS);
    printf("  P %.4f  R %.4f  mAP50 %.4f  mAP50-95 %.4f  fitness %.4f  (best of %d)\n", m.mp, m.mr, m.map50, m.map,
           m.fitness, reps);
    if (save) {
        FILE *f = fopen(save, "wb");
        if (!f) {
            perror(save);
            return 1;
        }
        char name[64];
        float cfgrow[4] = {(float)images, (float)rows, (float)nc, (float)img};
        record(f, "cfg", cfgrow, 1, 4);
        for (int i = 0; i < images; i++) {
            snprintf(name, sizeof name, "pred/%d", i);
            record(f, name, pred + (int64_t)i * rows * (5 + nc), (uint32_t)rows, (uint32_t)(5 + nc));
            snprintf(name, sizeof name, "labels/%d", i);
            record(f, name, labels + i * LABELS * 5, LABELS, 5);
            snprintf(name, sizeof name, "ndet/%d", i);
            float nd = (float)n_det[i];
            record(f, name, &nd, 1, 1);
        }
        float res[5] = {(float)m.mp, (float)m.mr, (float)m.map50, (float)m.map, (float)m.fitness};
        record(f, "ours/map", res, 1, 5);
        record(f, "ours/ms", (float[]){(float)(best_nms / images), (float)best_ap}, 1, 2);
        fclose(f);
        printf("  saved to %s\n", save);
    }
    yp_map_free(&m);
    free(pred), free(labels), free(dets), free(n_det), free(ws);
    return 0;
}
