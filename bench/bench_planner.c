/* bench_planner.c - how fast the planner sweeps, and how close its arenas are to the lower bound.
 *
 *   bench_planner [--gpu 8GB] [--arena-sizes 320,640,1280] [--reps 5]
 *
 * 1. Sweep time: yolov5s over imgsz 320..1280 (step 32), three precisions, mosaic on and off, the
 *    whole checkpoint front, the largest batch of each; then all five models. Best of --reps runs.
 * 2. Arena quality: for every front point, precision and mosaic setting at the --arena-sizes, the
 *    real plan at the searched batch; prints the worst arena / lower-bound ratio per model.
 * Figures are printed, not asserted (a timed unit test would be flaky). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "yp_ir.h"
#include "yp_search.h"
#include "yp_clock.h"

static const char *const names[5] = {"yolov5n", "yolov5s", "yolov5m", "yolov5l", "yolov5x"};

static yp_graph *load(const char *name) {
    char path[512];
    yp_err err;
    snprintf(path, sizeof path, "%s/%s.json", YP_MODELS_DIR, name);
    yp_graph *g = yp_ir_load_file(path, &err);
    if (!g) fprintf(stderr, "%s\n", err.msg);
    return g;
}

static double sweep(yp_search_opts *o, const yp_gpu *gpu, int reps, yp_search_result *keep) {
    double best = 1e30;
    for (int r = 0; r < reps; r++) {
        yp_search_result res;
        yp_err err;
        double t0 = (yp_now_s() * 1e3);
        if (yp_search(o, gpu, 0, &res, &err)) {
            fprintf(stderr, "%s\n", err.msg);
            exit(1);
        }
        double t = (yp_now_s() * 1e3) - t0;
        if (t < best) best = t;
        if (r == reps - 1) *keep = res;
        else yp_search_free(&res);
    }
    return best;
}

/* Worst arena / lower bound over the rows of one model at the sampled sizes. */
static void arena_quality(yp_search_opts *o, const yp_search_result *res, const int64_t *sizes, int n_sizes,
                          const yp_gpu *gpu) {
    double worst = 0;
    int n = 0;
    char where[200] = "";
    for (int i = 0; i < res->n_rows; i++) {
        const yp_row *r = &res->rows[i];
        int sampled = 0;
        for (int k = 0; k < n_sizes; k++) sampled |= r->cand.img_w == sizes[k];
        if (!sampled || r->cand.mosaic == 0) continue;
        yp_plan p;
        yp_err err;
        if (yp_search_realize(o, r, gpu, 0, 0, &p, &err)) {
            fprintf(stderr, "%s\n", err.msg);
            exit(1);
        }
        if (yp_arena_check(p.sched, &p.arena, &err)) {
            fprintf(stderr, "arena check failed: %s\n", err.msg);
            exit(1);
        }
        double ratio = (double)p.arena.size / (double)p.live.peak;
        if (ratio > worst) {
            worst = ratio;
            snprintf(where, sizeof where, "img %lld batch %lld %s, %d tensors, order %s", (long long)p.cand.img_w,
                     (long long)p.cand.batch, yp_precision_name(p.cand.precision), p.sched->n_tensors, p.arena.order);
        }
        n++;
        yp_plan_free(&p);
    }
    printf("  %-8s arena/lower bound over %4d plans: worst %.4f (%s)\n", o->models[0]->name, n, worst, where);
}

int main(int argc, char **argv) {
    const char *gpu_spec = "8GB";
    int reps = 5, n_arena = 3;
    int64_t arena_sizes[16] = {320, 640, 1280};
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--gpu")) gpu_spec = argv[i + 1];
        else if (!strcmp(argv[i], "--reps")) reps = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--arena-sizes")) {
            n_arena = 0;
            for (char *s = strtok(argv[i + 1], ","); s && n_arena < 16; s = strtok(NULL, ",")) arena_sizes[n_arena++] = atoll(s);
        }
    }
    yp_gpu gpu;
    yp_err err;
    if (yp_gpu_parse(gpu_spec, &gpu, &err)) {
        fprintf(stderr, "%s\n", err.msg);
        return 2;
    }
    yp_graph *g[5];
    for (int m = 0; m < 5; m++)
        if (!(g[m] = load(names[m]))) return 1;
    yp_search_opts o = yp_search_opts_default();
    for (int64_t s = 320; s <= 1280; s += 32) o.size_w[o.n_sizes] = o.size_h[o.n_sizes] = s, o.n_sizes++;
    printf("planner sweep on %s: imgsz 320..1280 (%d sizes), 3 precisions, mosaic on/off, whole checkpoint front, "
           "largest batch each (best of %d)\n", gpu.desc, o.n_sizes, reps);
    yp_search_result res[5];
    double total = 0;
    for (int m = 0; m < 5; m++) {
        o.n_models = 1, o.models[0] = g[m];
        double t = sweep(&o, &gpu, reps, &res[m]);
        total += t;
        printf("  %-8s %7.1f ms  %6lld candidates  %6d fit\n", names[m], t, (long long)res[m].n_candidates,
               res[m].n_rows);
    }
    printf("  all five %7.1f ms\n", total);
    printf("arena quality at sizes");
    for (int k = 0; k < n_arena; k++) printf(" %lld", (long long)arena_sizes[k]);
    printf(" (mosaic on, every front point and precision):\n");
    for (int m = 0; m < 5; m++) {
        o.models[0] = g[m];
        arena_quality(&o, &res[m], arena_sizes, n_arena, &gpu);
        yp_search_free(&res[m]);
        yp_graph_free(g[m]);
    }
    return 0;
}
