/* test_torch_speed.c - every published speed figure in tests/data/torch_speed_published.tsv (the
 * YOLOv5 README's training times and V100 b32 inference column, the tutorial notebook's it/s)
 * beside what planner/yp_torch_speed.h predicts, printed with the error per row
 * ((predicted - published) / published). Asserted over the training and inference rows:
 * GOAL_MEDIAN and GOAL_MAX below, what holds today (the README's training times come out 3-32 %
 * short, its b32 inference column -5 to +22 %, the notebook's training it/s +14 and +37 %).
 * Printed, not asserted: the notebook's validation it/s (+150 %), whose time is val.py's host
 * work at conf 0.001 (NMS of up to 30000 candidates an image, the metrics' matching) on Colab's
 * one core, which the README's ~1 ms an image (at conf 0.25) does not represent.
 * `ctest -R torch_speed -V` prints the table. */
#include <stdlib.h>
#include <string.h>

#include "yp_test.h"
#include "yp_test_published.h"
#include "yp_torch_host.h"
#include "yp_torch_speed.h"

#define MAX_ROWS 32
#define GOAL_MEDIAN 0.20 /* median |error| over the asserted rows */
#define GOAL_MAX 0.40    /* every asserted row */

typedef struct {
    char kind[24], card[24], model[16], link[160];
    int amp, cpus, cores, cache;
    int64_t img, batch, train, val;
    double value;
} row;

static int load(row *rows) {
    FILE *f = fopen(YP_TEST_DATA "/torch_speed_published.tsv", "r");
    if (!f) return -1;
    char line[512];
    int n = 0;
    while (n < MAX_ROWS && fgets(line, sizeof line, f)) {
        if (line[0] == '#' || line[0] == '\n') continue;
        row *r = &rows[n];
        long long img, batch, train, val;
        if (sscanf(line, "%23[^\t]\t%23[^\t]\t%15[^\t]\t%lld\t%lld\t%d\t%d\t%d\t%d\t%lld\t%lld\t%lf\t%159[^\t\n]", r->kind,
                   r->card, r->model, &img, &batch, &r->amp, &r->cpus, &r->cores, &r->cache, &train, &val, &r->value,
                   r->link) != 13) {
            fprintf(stderr, "torch_speed_published.tsv: bad row: %s", line);
            fclose(f);
            return -1;
        }
        r->img = img, r->batch = batch, r->train = train, r->val = val;
        n++;
    }
    fclose(f);
    return n;
}

static yp_graph *model(const char *name) { return yp_test_model_yaml(name, 80); }

/* The prediction in the row's units, or -1 on error; *what says what it is. */
static double predict(const row *r, const yp_gpu *gpu, const yp_graph *g, yp_torch_speed *sp) {
    yp_err err;
    if (!strcmp(r->kind, "infer_ms")) {
        double s;
        if (yp_torch_speed_infer(g, gpu, r->batch, r->img, r->amp, 1, &s, &err)) return -1;
        return s * 1e3 / (double)r->batch;
    }
    memset(sp, 0, sizeof *sp);
    sp->gpu = gpu, sp->batch = r->batch, sp->img = r->img, sp->amp = r->amp, sp->cpus = r->cpus, sp->cores = r->cores;
    sp->cache = r->cache, sp->workers_opt = YP_TORCH_DEFAULT_WORKERS, sp->train_images = r->train, sp->val_images = r->val, sp->epochs = 300;
    sp->labels_per_image = 4 * 7.3;
    if (yp_torch_speed_predict(g, sp, &err)) {
        fprintf(stderr, "%s\n", err.msg);
        return -1;
    }
    if (!strcmp(r->kind, "train_days")) return sp->hours / 24;
    if (!strcmp(r->kind, "train_it_s")) return sp->train_images_per_s / (double)r->batch;
    if (!strcmp(r->kind, "val_it_s")) return 1.0 / sp->val_batch_s;
    return -1;
}

static void test_published(void) {
    row rows[MAX_ROWS];
    int n = load(rows);
    CHECK(n > 0);
    double err_abs[MAX_ROWS];
    int k = 0;
    printf("%-11s %-10s %-8s %4s %5s %10s %10s %8s  %-13s %s\n", "kind", "card", "model", "img", "batch", "published",
           "predicted", "error", "bound", "(GPU fwd/loss/bwd ms, step ms, host ms)");
    for (int i = 0; i < n; i++) {
        const row *r = &rows[i];
        yp_gpu gpu;
        yp_err err;
        CHECK(yp_gpu_parse(r->card, &gpu, &err) == 0);
        yp_graph *g = model(r->model);
        CHECK(g != NULL);
        if (!g) continue;
        yp_torch_speed sp;
        double p = predict(r, &gpu, g, &sp);
        CHECK(p > 0);
        double e = (p - r->value) / r->value;
        int asserted = strcmp(r->kind, "val_it_s") != 0;
        if (asserted) err_abs[k++] = fabs(e);
        printf("%-11s %-10s %-8s %4lld %5lld %10.3g %10.3g %+7.1f%%", r->kind, r->card, r->model, (long long)r->img,
               (long long)r->batch, r->value, p, 100 * e);
        if (strcmp(r->kind, "infer_ms"))
            printf("  %-13s (%.1f/%.1f/%.1f, %.1f, %.1f; val %.0f s)", yp_torch_bound_name(sp.bound), 1e3 * sp.fwd_s, 1e3 * sp.loss_s,
                   1e3 * sp.bwd_s, 1e3 * sp.step_s, 1e3 * sp.host_s, sp.val_s);
        printf("%s\n", asserted ? "" : "  (not asserted)");
        CHECK(!asserted || fabs(e) <= GOAL_MAX);
        yp_graph_free(g);
    }
    double median = yp_test_median_abs(err_abs, k);
    printf("%d asserted rows: median |error| %.1f%%, max %.1f%% (goal: median <= %.0f%%, every row <= %.0f%%)\n", k,
           100 * median, 100 * (k ? err_abs[k - 1] : 0), 100 * GOAL_MEDIAN, 100 * GOAL_MAX);
    CHECK(median <= GOAL_MEDIAN);
}

/* The model's shape: faster on a faster card, the loader a bound with few CPUs, small models
 * bound by the host's dispatch at a small batch. */
static void test_shape(void) {
    yp_gpu t4, a100;
    yp_err err;
    CHECK(yp_gpu_parse("t4", &t4, &err) == 0 && yp_gpu_parse("a100", &a100, &err) == 0);
    yp_graph *g = model("yolov5n");
    CHECK(g != NULL);
    if (!g) return;
    yp_torch_speed a = {0}, b;
    a.gpu = &t4, a.batch = 64, a.img = 640, a.amp = 1, a.train_images = 118287, a.val_images = 5000, a.epochs = 300;
    a.workers_opt = YP_TORCH_DEFAULT_WORKERS;
    CHECK(yp_torch_speed_predict(g, &a, &err) == 0);
    b = a, b.gpu = &a100;
    CHECK(yp_torch_speed_predict(g, &b, &err) == 0);
    CHECK(b.gpu_images_per_s > a.gpu_images_per_s);
    CHECK(a.accumulate == 1 && a.epoch_s > a.train_s && a.hours > 0);
    b.cpus = 1;
    CHECK(yp_torch_speed_predict(g, &b, &err) == 0);
    CHECK(b.bound == YP_TORCH_BOUND_LOADER && b.workers == 1);
    /* one worker on the one core the training process needs too */
    CHECK(fabs(b.train_images_per_s - 1 / (YP_TORCH_MOSAIC_ITEM_S + b.host_s / 64)) < 1e-9);
    /* --workers 0: the training process loads each batch between iterations */
    b.cpus = 8, b.workers_opt = 0;
    CHECK(yp_torch_speed_predict(g, &b, &err) == 0);
    CHECK(b.workers == 0 && b.val_workers == 0 && b.bound == YP_TORCH_BOUND_LOADER);
    CHECK(fabs(b.train_images_per_s - 1 / (YP_TORCH_MOSAIC_ITEM_S + b.host_s / 64)) < 1e-9);
    /* --workers 2 with --cache ram: two workers, the cached item's cost */
    b.workers_opt = 2, b.cache = 1;
    CHECK(yp_torch_speed_predict(g, &b, &err) == 0);
    CHECK(b.workers == 2 && b.val_workers == 4);
    CHECK(fabs(b.loader_images_per_s - 2 / YP_TORCH_CACHED_ITEM_S) < 1e-9);
    b.workers_opt = YP_TORCH_DEFAULT_WORKERS, b.cache = 0;
    b.cpus = 0, b.batch = 1;
    CHECK(yp_torch_speed_predict(g, &b, &err) == 0);
    CHECK(b.bound == YP_TORCH_BOUND_HOST && b.accumulate == 64);
    b.batch = 0;
    CHECK(yp_torch_speed_predict(g, &b, &err) == -1);
    yp_graph_free(g);
}

int main(void) {
    YP_RUN(test_published);
    YP_RUN(test_shape);
    return yp_test_summary();
}
