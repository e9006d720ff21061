/* augment_vs_opencv.c - compares executor/augment*'s resampling and colour kernels with OpenCV
 * 4.6 itself, bit for bit, and times both: cv::resize (INTER_LINEAR, INTER_AREA), cv::warpAffine,
 * cv::warpPerspective (linear, border 114) and the RGB<->HSV conversions. OpenCV is loaded at run
 * time through its C API (libopencv_imgproc.so.406, which Debian installs with python3-torch);
 * without it the program says so and exits 0. First it times the whole training item
 * (yp_aug_train_item at 640, hyp.scratch-low) on 1 and 2 threads. Not a test: a measurement.
 * Usage: augment_vs_opencv [reps] [--item-only]   (reps: timing repetitions, default 20; --item-only: the
 * training item's rate alone, 1 thread then 2, nothing compared: what to run under perf record for the
 * time per stage of the item) */
#include <dlfcn.h>
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "yp_augment.h"
#include "yp_clock.h"

typedef struct {
    double val[4];
} cv_scalar;
typedef void cv_mat; /* CvMat*, opaque here */

static struct {
    cv_mat *(*create_header)(int rows, int cols, int type);
    void (*set_data)(cv_mat *m, void *data, int step);
    void (*release)(cv_mat **m);
    void (*resize)(const cv_mat *src, cv_mat *dst, int interp);
    void (*warp_affine)(const cv_mat *src, cv_mat *dst, const cv_mat *map, int flags, cv_scalar fill);
    void (*warp_persp)(const cv_mat *src, cv_mat *dst, const cv_mat *map, int flags, cv_scalar fill);
    void (*cvt)(const cv_mat *src, cv_mat *dst, int code);
} cv;

#define CV_8UC3 16
#define CV_64FC1 6
#define INTER_LINEAR 1
#define INTER_AREA 3
#define WARP_FILL 8
#define RGB2HSV 41
#define HSV2RGB 55

static int load_opencv(void) {
    void *core = dlopen("libopencv_core.so.406", RTLD_NOW | RTLD_GLOBAL);
    void *imgproc = core ? dlopen("libopencv_imgproc.so.406", RTLD_NOW) : NULL;
    if (!imgproc) return -1;
    *(void **)&cv.create_header = dlsym(core, "cvCreateMatHeader");
    *(void **)&cv.set_data = dlsym(core, "cvSetData");
    *(void **)&cv.release = dlsym(core, "cvReleaseMat");
    *(void **)&cv.resize = dlsym(imgproc, "cvResize");
    *(void **)&cv.warp_affine = dlsym(imgproc, "cvWarpAffine");
    *(void **)&cv.warp_persp = dlsym(imgproc, "cvWarpPerspective");
    *(void **)&cv.cvt = dlsym(imgproc, "cvCvtColor");
    return cv.create_header && cv.set_data && cv.release && cv.resize && cv.warp_affine && cv.warp_persp && cv.cvt
               ? 0 : -1;
}

static cv_mat *wrap(yp_image *im) {
    cv_mat *m = cv.create_header(im->h, im->w, CV_8UC3);
    cv.set_data(m, im->rgb, im->w * 3);
    return m;
}

static yp_image make(int w, int h) {
    yp_image im = {malloc((size_t)w * (size_t)h * 3), w, h};
    return im;
}

/* A smooth-plus-noise test picture (edges and gradients both exercise the rounding). */
static void fill(yp_image *im, uint64_t seed) {
    yp_rng r;
    yp_rng_seed(&r, seed, 0);
    for (int y = 0; y < im->h; y++)
        for (int x = 0; x < im->w; x++)
            for (int c = 0; c < 3; c++) {
                int v = (x * (c + 1) + y * (3 - c)) % 256;
                if (yp_rng_below(&r, 4) == 0) v = (int)yp_rng_below(&r, 256);
                im->rgb[((size_t)y * im->w + x) * 3 + c] = (uint8_t)v;
            }
}

/* Counts differing bytes of a and b; prints the first. */
static long compare(const char *what, const yp_image *a, const yp_image *b) {
    size_t n = (size_t)a->w * a->h * 3;
    long bad = 0, maxd = 0;
    for (size_t i = 0; i < n; i++) {
        int d = abs((int)a->rgb[i] - (int)b->rgb[i]);
        if (d && !bad)
            printf("    %s: first difference at pixel (%zu, %zu) channel %zu: ours %d, OpenCV %d\n", what,
                   i / 3 % a->w, i / 3 / a->w, i % 3, a->rgb[i], b->rgb[i]);
        bad += d != 0;
        maxd = d > maxd ? d : maxd;
    }
    printf("  %-44s %dx%d: %ld of %zu bytes differ (max %ld)\n", what, a->w, a->h, bad, n, maxd);
    return bad;
}

static long check_resize(int sw, int sh, int dw, int dh, yp_interp interp, int reps) {
    yp_image src = make(sw, sh), a = make(dw, dh), b = make(dw, dh);
    size_t ws_bytes = 0;
    fill(&src, (uint64_t)sw * 7 + (uint64_t)dh);
    yp_resize_ws(sw, sh, dw, dh, interp, &ws_bytes);
    void *ws = malloc(ws_bytes + 1);
    cv_mat *ms = wrap(&src), *mb = wrap(&b);
    double t0 = yp_now_s();
    for (int i = 0; i < reps; i++) yp_resize(&src, &a, interp, ws, ws_bytes);
    double t1 = yp_now_s();
    for (int i = 0; i < reps; i++) cv.resize(ms, mb, interp == YP_INTER_LINEAR ? INTER_LINEAR : INTER_AREA);
    double t2 = yp_now_s();
    char what[96];
    snprintf(what, sizeof what, "resize %s %dx%d ->", interp == YP_INTER_LINEAR ? "linear" : "area", sw, sh);
    long bad = compare(what, &a, &b);
    printf("    ms per call: ours %.3f, OpenCV %.3f\n", (t1 - t0) * 1e3 / reps, (t2 - t1) * 1e3 / reps);
    cv.release(&ms), cv.release(&mb);
    free(src.rgb), free(a.rgb), free(b.rgb), free(ws);
    return bad;
}

static long check_warp(int sw, int sh, int dw, int dh, const double m[9], int persp, int reps) {
    yp_image src = make(sw, sh), a = make(dw, dh), b = make(dw, dh);
    fill(&src, 99);
    yp_warp w = {.perspective = persp, .out_w = dw, .out_h = dh, .s = 1};
    memcpy(w.m, m, sizeof w.m);
    size_t ws_bytes = 0;
    yp_warp_ws(&w, &ws_bytes);
    void *ws = malloc(ws_bytes + 1);
    double mm[9];
    memcpy(mm, m, sizeof mm);
    cv_mat *ms = wrap(&src), *mb = wrap(&b), *mat = cv.create_header(persp ? 3 : 2, 3, CV_64FC1);
    cv.set_data(mat, mm, 3 * sizeof(double));
    cv_scalar fillv = {{114, 114, 114, 0}};
    double t0 = yp_now_s();
    for (int i = 0; i < reps; i++) yp_warp_image(&src, &a, &w, ws, ws_bytes);
    double t1 = yp_now_s();
    for (int i = 0; i < reps; i++)
        (persp ? cv.warp_persp : cv.warp_affine)(ms, mb, mat, INTER_LINEAR + WARP_FILL, fillv);
    double t2 = yp_now_s();
    long bad = compare(persp ? "warpPerspective" : "warpAffine", &a, &b);
    printf("    ms per call: ours %.3f, OpenCV %.3f\n", (t1 - t0) * 1e3 / reps, (t2 - t1) * 1e3 / reps);
    cv.release(&ms), cv.release(&mb), cv.release(&mat);
    free(src.rgb), free(a.rgb), free(b.rgb), free(ws);
    return bad;
}

/* Every RGB colour through RGB2HSV, every HSV (H < 181) through HSV2RGB, at width n (n not a
 * multiple of 32 exercises OpenCV's scalar tail). */
static long check_colour(int n) {
    int rows = (1 << 24) / n + 1;
    yp_image src = make(n, rows), a = make(n, rows), b = make(n, rows);
    for (uint32_t i = 0; i < (uint32_t)n * rows; i++)
        src.rgb[3 * i] = (uint8_t)(i >> 16), src.rgb[3 * i + 1] = (uint8_t)(i >> 8), src.rgb[3 * i + 2] = (uint8_t)i;
    cv_mat *ms = wrap(&src), *mb = wrap(&b);
    for (int y = 0; y < rows; y++) yp_rgb_to_hsv_row(src.rgb + (size_t)y * n * 3, a.rgb + (size_t)y * n * 3, n);
    cv.cvt(ms, mb, RGB2HSV);
    long bad = compare("RGB2HSV, all 2^24 colours", &a, &b);
    for (uint32_t i = 0; i < (uint32_t)n * rows; i++) src.rgb[3 * i] = (uint8_t)((i >> 16) % 181);
    for (int y = 0; y < rows; y++) yp_hsv_to_rgb_row(src.rgb + (size_t)y * n * 3, a.rgb + (size_t)y * n * 3, n);
    cv.cvt(ms, mb, HSV2RGB);
    bad += compare("HSV2RGB, H 0..180 x all S, V", &a, &b);
    cv.release(&ms), cv.release(&mb);
    free(src.rgb), free(a.rgb), free(b.rgb);
    return bad;
}

/* augment_hsv as YOLOv5 runs it (cvtColor to HSV, cv2.LUT of numpy's tables, cvtColor back; here
 * the LUT in C, the conversions OpenCV's), then np.fliplr, against yp_hsv_apply_flip, over every
 * colour at width n; prints both sides' ms (OpenCV's two conversions against our whole pass). */
static long check_hsv_apply(int n, const double g[3], int flip) {
    int rows = (1 << 24) / n + 1;
    yp_image src = make(n, rows), a = make(n, rows), b = make(n, rows), hsv = make(n, rows);
    for (uint32_t i = 0; i < (uint32_t)n * rows; i++)
        src.rgb[3 * i] = (uint8_t)(i >> 16), src.rgb[3 * i + 1] = (uint8_t)(i >> 8), src.rgb[3 * i + 2] = (uint8_t)i;
    uint8_t lut[3][256];
    for (int x = 0; x < 256; x++) {
        double h = fmod(x * g[0], 180), sv[2] = {x * g[1], x * g[2]};
        lut[0][x] = (uint8_t)(h < 0 ? h + 180 : h);
        for (int k = 0; k < 2; k++) lut[1 + k][x] = (uint8_t)(sv[k] < 0 ? 0 : sv[k] > 255 ? 255 : sv[k]);
    }
    cv_mat *ms = wrap(&src), *mh = wrap(&hsv), *mb = wrap(&b);
    double t0 = yp_now_s();
    cv.cvt(ms, mh, RGB2HSV);
    for (size_t i = 0; i < (size_t)n * rows * 3; i++) hsv.rgb[i] = lut[i % 3][hsv.rgb[i]];
    cv.cvt(mh, mb, HSV2RGB);
    double t1 = yp_now_s();
    if (flip)
        for (int y = 0; y < rows; y++)
            for (int x = 0; x < n / 2; x++)
                for (int c = 0; c < 3; c++) {
                    uint8_t *p = b.rgb + ((size_t)y * n + x) * 3 + c, *q = b.rgb + ((size_t)y * n + (n - 1 - x)) * 3 + c;
                    uint8_t t = *p;
                    *p = *q, *q = t;
                }
    memcpy(a.rgb, src.rgb, (size_t)n * rows * 3);
    double t2 = yp_now_s();
    yp_hsv_apply_flip(&a, g, flip);
    double t3 = yp_now_s();
    char what[96];
    snprintf(what, sizeof what, "augment_hsv (%.3g, %.3g, %.3g)%s, all colours", g[0], g[1], g[2], flip ? " + fliplr" : "");
    long bad = compare(what, &a, &b);
    double mpx = (double)n * rows / 1e6;
    printf("    ms per Mpixel: ours (one pass) %.3f, OpenCV (two cvtColor + LUT) %.3f\n", (t3 - t2) * 1e3 / mpx,
           (t1 - t0) * 1e3 / mpx);
    cv.release(&ms), cv.release(&mh), cv.release(&mb);
    free(src.rgb), free(a.rgb), free(b.rgb), free(hsv.rgb);
    return bad;
}

/* ---- the training item's throughput ---- */

typedef struct {
    uint8_t *pixels; /* 8 images of 640x480 */
    float rows[8][25];
} bench_source;

static int bench_get(void *ctx, int64_t index, yp_aug_source_item *out, yp_err *err) {
    bench_source *s = ctx;
    (void)err;
    *out = (yp_aug_source_item){s->pixels + (size_t)index * 640 * 480 * 3, 640, 480, s->rows[index], 5, 0};
    return 0;
}

typedef struct {
    const yp_aug_config *cfg;
    bench_source *src;
    int first, step, count;
} bench_job;

static void *bench_run(void *arg) {
    bench_job *j = arg;
    size_t n;
    yp_err err;
    yp_aug_train_ws(j->cfg, &n);
    void *ws = malloc(n);
    uint8_t *img = malloc(640 * 640 * 3);
    float rows[20 * 5];
    for (int k = 0, i = j->first; k < j->count; k++, i += j->step) {
        yp_rng r;
        yp_image out = {img, 640, 640};
        int64_t nr;
        yp_rng_seed(&r, 1, (uint64_t)i);
        if (yp_aug_train_item(j->cfg, bench_get, j->src, i % 8, &r, &out, rows, &nr, ws, n, &err))
            printf("    %s\n", err.msg);
    }
    free(ws), free(img);
    return NULL;
}

/* Images per second of mosaic + perspective + HSV + flip at 640 (hyp.scratch-low) on threads. */
static void pipeline_rate(int threads, int items) {
    bench_source s;
    s.pixels = malloc((size_t)8 * 640 * 480 * 3);
    yp_image all = {s.pixels, 640, 480 * 8};
    fill(&all, 5);
    for (int i = 0; i < 8; i++)
        for (int k = 0; k < 5; k++) {
            float r[5] = {(float)k, 0.2f + 0.15f * k, 0.3f + 0.1f * k, 0.1f + 0.02f * i, 0.15f};
            memcpy(s.rows[i] + 5 * k, r, sizeof r);
        }
    yp_aug_config cfg = {.imgsz = 640, .n_images = 8, .max_rows = 5};
    yp_aug_hyp_default(&cfg.hyp);
    pthread_t t[16];
    bench_job jobs[16];
    double t0 = yp_now_s();
    for (int i = 0; i < threads; i++) {
        jobs[i] = (bench_job){&cfg, &s, i, threads, items / threads};
        pthread_create(&t[i], NULL, bench_run, &jobs[i]);
    }
    for (int i = 0; i < threads; i++) pthread_join(t[i], NULL);
    double dt = yp_now_s() - t0;
    printf("  training item at 640 (mosaic + perspective + HSV + flip), %d thread%s: %.1f images/s\n", threads,
           threads > 1 ? "s" : "", (items / threads * threads) / dt);
    free(s.pixels);
}

int main(int argc, char **argv) {
    int reps = argc > 1 ? atoi(argv[1]) : 20, item_only = argc > 2 && !strcmp(argv[2], "--item-only");
    if (reps < 1 || (argc > 2 && !item_only) || argc > 3) {
        fprintf(stderr, "usage: augment_vs_opencv [reps] [--item-only]\n");
        return 2;
    }
    printf("throughput:\n");
    pipeline_rate(1, 4 * reps);
    pipeline_rate(2, 4 * reps);
    if (item_only) return 0;
    if (load_opencv()) {
        printf("augment_vs_opencv: libopencv_imgproc.so.406 not found; nothing compared\n");
        return 0;
    }
    long bad = 0;
    printf("resize (sizes as YOLOv5's load_image and letterbox make them):\n");
    bad += check_resize(1280, 960, 640, 480, YP_INTER_LINEAR, reps); /* exact 2x: the area path */
    bad += check_resize(1000, 750, 640, 480, YP_INTER_LINEAR, reps);
    bad += check_resize(500, 375, 640, 480, YP_INTER_LINEAR, reps);
    bad += check_resize(333, 517, 413, 640, YP_INTER_LINEAR, reps);
    bad += check_resize(641, 427, 640, 427, YP_INTER_LINEAR, reps);
    bad += check_resize(7, 5, 11, 13, YP_INTER_LINEAR, reps);
    bad += check_resize(1000, 750, 640, 480, YP_INTER_AREA, reps);
    bad += check_resize(1920, 1080, 640, 360, YP_INTER_AREA, reps); /* integer 3x */
    bad += check_resize(1280, 960, 640, 480, YP_INTER_AREA, reps);
    bad += check_resize(997, 641, 640, 412, YP_INTER_AREA, reps);
    printf("warps (1280 mosaic canvas -> 640, scale 0.5..1.5, translate, a rotation, a shear):\n");
    double t[4][9] = {{0.8, 0, -100.5, 0, 0.8, 37.25, 0, 0, 1},
                      {1.37, 0, -560.3, 0, 1.37, -611.9, 0, 0, 1},
                      {0.9, 0.3, -200, -0.3, 0.9, 150, 0, 0, 1},
                      {1.1, 0.05, -300, 0.02, 1.05, -250, 0.0002, -0.0001, 1}};
    for (int i = 0; i < 3; i++) bad += check_warp(1280, 1280, 640, 640, t[i], 0, reps);
    bad += check_warp(1280, 1280, 640, 640, t[3], 1, reps);
    printf("colour:\n");
    bad += check_colour(4096);
    bad += check_colour(4089);
    bad += check_hsv_apply(4096, (double[3]){1.012, 1.55, 0.71}, 1);
    bad += check_hsv_apply(4089, (double[3]){0.987, 0.42, 1.33}, 0);
    bad += check_hsv_apply(4089, (double[3]){1.003, 1.2, 0.9}, 1);
    printf("augment_vs_opencv: %ld differing bytes in all\n", bad);
    return 0;
}
