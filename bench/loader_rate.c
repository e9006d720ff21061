/* loader_rate.c - images/s of the real training loader (executor/data/yp_loader.h) over a dataset:
 * worker threads decoding each JPEG/PNG afresh, then YOLOv5's training item (load_image, the
 * 4-image mosaic, random_perspective, HSV, flips: yp_aug_train_item) into the ring of uint8 batch
 * slots, the consumer taking batches and doing nothing with them. hyp.scratch-low (mosaic 1),
 * prefetch 2 per worker, as `yoloplan train` opens it. For each worker count the loader runs
 * --epochs epochs of the training split, whole batches only (drop_last, so that every batch costs
 * the same). The first W batches (W workers: one per worker, built side by side) are the warm-up
 * (thread start, page cache, first touch of the slots); the rate is the images of the later
 * batches over the time from the W-th delivery to the last one. Counting from the first delivery
 * instead would credit the run with the W-1 batches finished alongside it. Not a test: a
 * measurement (bench/loader_vs_opencv.sh sets it beside the Python + OpenCV reference).
 * --cache ram: the split decoded and resized once first (yp_image_cache_fill on 2 threads, its
 * time printed), the workers then reading the cached pixels (`yoloplan train --cache ram`): the
 * rate of the augmentation alone.
 * Usage: loader_rate --data D.yaml [--img 640] [--batch 16] [--epochs 3] [--workers 2,1] [--seed 0] [--cache ram]
 * Prints a human line per worker count and, for scripts, one "loader_rate workers W images N
 * seconds T rate R warmup_s F" line each. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "yp_image_cache.h"
#include "yp_label_cache.h"
#include "yp_loader.h"
#include "yp_clock.h"

static int usage(void) {
    fprintf(stderr, "usage: loader_rate --data D.yaml [--img 640] [--batch 16] [--epochs 3] [--workers 2,1] [--seed 0] "
                    "[--cache ram]\n");
    return 2;
}

/* One run at `workers`. Returns 0, or 1 with the loader's error printed. */
static int run(const yp_labels *lb, const yp_loader_opts *base, int workers) {
    yp_loader_opts o = *base;
    o.workers = workers;
    yp_err err = {0};
    double t_open = yp_now_s();
    yp_loader *l = yp_loader_open(lb, &o, &err);
    if (!l) return fprintf(stderr, "loader_rate: %s\n", err.msg), 1;
    yp_loader_batch b;
    int rc = 1;
    for (int i = 0; i < workers && rc == 1; i++) rc = yp_loader_next(l, &b, &err);
    double t0 = yp_now_s(), t1 = t0;
    int64_t images = 0, batches = 0;
    while (rc == 1 && (rc = yp_loader_next(l, &b, &err)) == 1) images += b.n, batches++, t1 = yp_now_s();
    yp_loader_stats st;
    yp_loader_get_stats(l, &st);
    yp_loader_close(l);
    if (rc < 0) return fprintf(stderr, "loader_rate: %s\n", err.msg), 1;
    if (images == 0) return fprintf(stderr, "loader_rate: no batch after the warm-up; give more --epochs or images\n"), 1;
    double dt = t1 - t0, rate = (double)images / dt;
    printf("  %d worker%s: %7.1f images/s  (%lld images in %lld batches, %.2f s after a warm-up of %d batch%s ready "
           "%.2f s after open; %lld bad images)\n",
           workers, workers > 1 ? "s" : " ", rate, (long long)images, (long long)batches, dt, workers,
           workers > 1 ? "es" : "", t0 - t_open,
           (long long)st.bad_images);
    printf("loader_rate workers %d images %lld seconds %.4f rate %.3f warmup_s %.4f\n", workers, (long long)images, dt,
           rate, t0 - t_open);
    return 0;
}

int main(int argc, char **argv) {
    const char *data = NULL, *workers = "2,1";
    int cache = 0;
    yp_loader_opts o;
    yp_loader_opts_default(&o);
    o.prefetch = 2, o.batch = 16, o.imgsz = 640, o.epochs = 3, o.seed = 0, o.drop_last = 1;
    for (int i = 1; i < argc; i++) {
        if (i + 1 >= argc) return usage();
        const char *k = argv[i], *v = argv[++i];
        if (!strcmp(k, "--data")) data = v;
        else if (!strcmp(k, "--img")) o.imgsz = atoi(v);
        else if (!strcmp(k, "--batch")) o.batch = atoi(v);
        else if (!strcmp(k, "--epochs")) o.epochs = atoll(v);
        else if (!strcmp(k, "--workers")) workers = v;
        else if (!strcmp(k, "--seed")) o.seed = strtoull(v, NULL, 10);
        else if (!strcmp(k, "--cache") && !strcmp(v, "ram")) cache = 1;
        else return usage();
    }
    if (!data || o.imgsz < 32 || o.batch < 1 || o.epochs < 1) return usage();
    yp_labels lb;
    yp_err err = {0};
    if (yp_labels_load(data, &lb, &err)) return fprintf(stderr, "loader_rate: %s\n", err.msg), 1;
    printf("yp_loader over %lld training images of %s: batch %d, img %d, hyp.scratch-low (mosaic 1, fliplr 0.5), "
           "prefetch %d, %lld epochs of whole batches\n",
           (long long)lb.n, data, o.batch, o.imgsz, o.prefetch, (long long)o.epochs);
    yp_image_cache ic = {0};
    if (cache) {
        double t = yp_now_s();
        int bad = yp_image_cache_fill(&ic, &lb, o.imgsz, 1, 2, &err);
        if (bad) fprintf(stderr, "loader_rate: %s\n", err.msg);
        else printf("  --cache ram: %lld images (%.1f MB) decoded and resized in %.2f s on 2 threads\n",
                    (long long)(ic.n - ic.failed), (double)ic.bytes / 1e6, yp_now_s() - t);
        if (bad) {
            yp_image_cache_free(&ic), yp_labels_free(&lb);
            return 1;
        }
        o.cache = &ic;
    }
    int rc = 0;
    for (const char *p = workers; *p && !rc;) {
        char *end;
        long w = strtol(p, &end, 10);
        if (end == p || w < 1 || w > YP_LOADER_MAX_WORKERS) {
            rc = usage();
            break;
        }
        rc = run(&lb, &o, (int)w);
        p = *end == ',' ? end + 1 : end;
    }
    yp_image_cache_free(&ic);
    yp_labels_free(&lb);
    return rc;
}
