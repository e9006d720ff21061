/* cmd_bench_step.c - `yoloplan bench-step`: N training steps of a plan on random images and
 * targets on the CPU executor; prints ms/step, images/s and the process's peak RSS. */
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include <cjson/cJSON.h>

#include "cli.h"
#include "yp_executor.h"

typedef struct {
    const char *model;
    int64_t w, h;
    long batch, steps, threads, warmup;
    int json, no_ema, profile;
    yp_save_policy policy;
    uint64_t ckpt;
} bench_opts;

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static int parse(int argc, char **argv, bench_opts *o, yp_err *err) {
    *o = (bench_opts){"yolov5s", 320, 320, 8, 20, 2, 2, 0, 0, 0, YP_SAVE_YOLOPLAN, 0};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        int rc = 0;
        if (!strcmp(a, "--json")) continue;
        if (!strcmp(a, "--no-ema") || !strcmp(a, "--profile")) {
            *(a[2] == 'n' ? &o->no_ema : &o->profile) = 1;
            continue;
        }
        if (!v) return yp_err_set(err, "bench-step: option %s needs a value", a);
        if (!strcmp(a, "--model")) o->model = v;
        else if (!strcmp(a, "--img")) rc = cli_parse_img(v, &o->w, &o->h, err);
        else if (!strcmp(a, "--batch")) rc = cli_parse_int(a, v, 1, 4096, &o->batch, err);
        else if (!strcmp(a, "--steps")) rc = cli_parse_int(a, v, 1, 100000, &o->steps, err);
        else if (!strcmp(a, "--warmup")) rc = cli_parse_int(a, v, 0, 1000, &o->warmup, err);
        else if (!strcmp(a, "--threads")) rc = cli_parse_int(a, v, 1, 1024, &o->threads, err);
        else if (!strcmp(a, "--policy") && yp_save_policy_parse(v) >= 0)
            o->policy = (yp_save_policy)yp_save_policy_parse(v);
        else
            return yp_err_set(err, "bench-step: unknown option %s; usage: yoloplan bench-step [--model M] [--batch B] "
                              "[--img S] [--steps N] [--warmup N] [--threads T] [--policy yoloplan|yoloplan+cat|pytorch] [--no-ema] [--profile] [--json]", a);
        if (rc) return -1;
        i++;
    }
    for (int i = 1; i < argc; i++) o->json |= !strcmp(argv[i], "--json");
    return 0;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Random images in [0, 1] and 8 boxes per image, seeded. */
/* splitmix64's output function: a counter-based generator, so the image fill splits across the
 * OpenMP threads (as torch.rand does on the reference side) and stays the same for any count. */
static inline uint64_t mix64(uint64_t z) {
    z += 0x9e3779b97f4a7c15ull;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static void random_batch(float *img, int64_t n_img, float *tg, int64_t n_tg, int64_t batch, int nc, uint64_t *s) {
    const uint64_t base = *s;
    *s = mix64(*s ^ 0x5851f42d4c957f2dull);
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < n_img; i++) img[i] = (float)(mix64(base + (uint64_t)i) >> 40) / 16777216.0f;
    for (int64_t k = 0; k < n_tg; k++) {
        float *r = tg + 6 * k;
        *s = *s * 6364136223846793005ull + 1442695040888963407ull;
        double u = (double)(*s >> 11) / 9007199254740992.0;
        r[0] = (float)(k % batch), r[1] = (float)(k % nc);
        r[2] = (float)(0.2 + 0.6 * u), r[3] = (float)(0.8 - 0.6 * u), r[4] = (float)(0.05 + 0.3 * u), r[5] = (float)(0.35 - 0.3 * u);
    }
}

/* The timed steps' wall time by kind of step (--profile), largest first. */
static void print_profile(const yp_exec *x, long steps, double ms_step, FILE *f) {
    enum { N = YP_PHASE_COUNT * (YP_OP_COUNT + 1) };
    int order[N], n = 0;
    for (int i = 0; i < N; i++)
        if (x->prof_n[i]) order[n++] = i;
    for (int i = 1; i < n; i++) /* insertion sort by time, descending */
        for (int j = i; j > 0 && x->prof_s[order[j]] > x->prof_s[order[j - 1]]; j--) {
            int t = order[j];
            order[j] = order[j - 1], order[j - 1] = t;
        }
    fprintf(f, "%-10s %-18s %8s %10s %7s\n", "phase", "op", "calls", "ms/step", "share");
    double total = 0;
    for (int k = 0; k < n; k++) {
        int i = order[k], phase = i / (YP_OP_COUNT + 1), op = i % (YP_OP_COUNT + 1);
        double ms = x->prof_s[i] * 1e3 / (double)steps;
        total += ms;
        fprintf(f, "%-10s %-18s %8.1f %10.2f %6.1f%%\n", yp_phase_name((yp_phase)phase),
                op < YP_OP_COUNT ? yp_op_get((yp_op)op)->name : (phase == YP_PHASE_OPTIMIZER ? "update + EMA" : "-"),
                (double)x->prof_n[i] / (double)steps, ms, 100.0 * ms / ms_step);
    }
    fprintf(f, "%-10s %-18s %8s %10.2f %6.1f%% (the rest: the batch and the loop)\n", "total", "", "", total,
            100.0 * total / ms_step);
}

static int run(const bench_opts *o, yp_err *err) {
    yp_graph *g = cli_load_model(o->model, 0, err);
    if (!g) return -1;
    int64_t avail = cli_host_available_bytes();
    if (avail <= 0) {
        yp_graph_free(g);
        return yp_err_set(err, "bench-step: cannot read the host's available memory (/proc/meminfo)");
    }
    yp_gpu host; /* the CPU backend's arena lives in host memory: plan for what is available */
    yp_gpu_host(avail, &host);
    yp_candidate c = yp_candidate_default();
    c.batch = o->batch, c.img_w = o->w, c.img_h = o->h, c.mosaic = 0, c.labels_per_image = 8, c.policy = o->policy;
    c.ema = !o->no_ema; /* YOLOv5 updates its EMA every optimizer step; --no-ema measures the step without */
    /* the instance first: the CPU's conv scratch, and so the plan, depends on its thread count */
    char why[256];
    const yp_cpu_config cfg = {(int)o->threads};
    yp_backend *be = yp_backend_cpu_new(&cfg, why, sizeof why);
    if (!be) {
        yp_graph_free(g);
        return yp_err_set(err, "bench-step: %s", why);
    }
    be->thread_init(be); /* the batch generator's OpenMP loops run with the same threads */
    yp_exec_candidate_for(&c, be);
    yp_plan p;
    yp_exec x;
    if (yp_plan_build(g, &c, &host, 0, 0, &p, err)) {
        yp_backend_free(be);
        yp_graph_free(g);
        return -1;
    }
    if (!p.fits) { /* refused before anything is allocated */
        yp_err_set(err, "bench-step: the plan needs %.2f GiB of arena, the host has %.2f GiB available; lower --batch or --img",
                   (double)p.device_bytes / 1073741824.0, (double)avail / 1073741824.0);
        yp_plan_free(&p);
        yp_backend_free(be);
        yp_graph_free(g);
        return -1;
    }
    if (yp_exec_init(&x, &p, be, 0, 1, err)) {
        yp_plan_free(&p);
        yp_backend_free(be);
        yp_graph_free(g);
        return -1;
    }
    int rc = 0;
    int64_t n_img = o->batch * o->h * o->w * 3, n_tg = o->batch * 8;
    float *img = malloc((size_t)n_img * sizeof *img), *tg = malloc((size_t)n_tg * 6 * sizeof *tg);
    uint64_t seed = 1;
    double loss[4], t0 = 0, *step_ms = calloc((size_t)o->steps, sizeof *step_ms);
    for (long i = 0; img && tg && step_ms && !rc && i < o->warmup + o->steps; i++) {
        double ts = now_s();
        if (i == o->warmup) {
            t0 = ts;
            if (o->profile && yp_exec_profile(&x, 1)) {
                rc = yp_err_set(err, "bench-step: out of memory for the profile");
                break;
            }
        }
        random_batch(img, n_img, tg, n_tg, o->batch, g->nc, &seed);
        rc = yp_exec_micro_step(&x, img, tg, n_tg, loss, err) || yp_exec_update(&x, err);
        if (i >= o->warmup) step_ms[i - o->warmup] = (now_s() - ts) * 1e3;
    }
    if (!img || !tg || !step_ms) rc = yp_err_set(err, "bench-step: out of memory for the batch");
    double ms = (now_s() - t0) * 1e3 / (double)o->steps, med = 0, fastest = 0;
    if (!rc) {
        qsort(step_ms, (size_t)o->steps, sizeof *step_ms, cmp_double);
        med = o->steps % 2 ? step_ms[o->steps / 2] : 0.5 * (step_ms[o->steps / 2 - 1] + step_ms[o->steps / 2]);
        fastest = step_ms[0];
    }
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    int64_t rss = (int64_t)ru.ru_maxrss * 1024;
    if (!rc && o->json) {
        cJSON *j = cJSON_CreateObject();
        cJSON_AddStringToObject(j, "model", g->name);
        cJSON_AddNumberToObject(j, "batch", (double)o->batch);
        cJSON_AddNumberToObject(j, "img", (double)o->w);
        cJSON_AddNumberToObject(j, "threads", (double)o->threads);
        cJSON_AddNumberToObject(j, "ms_per_step", ms);
        cJSON_AddNumberToObject(j, "images_per_s", (double)o->batch * 1e3 / ms);
        cJSON_AddNumberToObject(j, "ms_per_step_median", med);
        cJSON_AddNumberToObject(j, "ms_per_step_min", fastest);
        cJSON_AddNumberToObject(j, "peak_rss_bytes", (double)rss);
        cJSON_AddNumberToObject(j, "arena_bytes", (double)p.arena_bytes);
        cJSON_AddNumberToObject(j, "last_loss", loss[3]);
        char *s = cJSON_Print(j);
        puts(s ? s : "{}");
        free(s);
        cJSON_Delete(j);
    } else if (!rc) {
        printf("%s batch %ld img %lldx%lld, %ld threads, %ld steps (+%ld warm-up): %.1f ms/step (median %.1f, fastest "
               "%.1f), %.2f images/s, peak RSS %.1f MiB (arena %.1f MiB), last loss %.4f\n", g->name, o->batch,
               (long long)o->w, (long long)o->h, o->threads, o->steps, o->warmup, ms, med, fastest,
               (double)o->batch * 1e3 / ms, (double)rss / 1048576.0, (double)p.arena_bytes / 1048576.0, loss[3]);
    }
    if (!rc && o->profile) print_profile(&x, o->steps, ms, o->json ? stderr : stdout);
    free(img), free(tg), free(step_ms);
    yp_exec_free(&x);
    yp_backend_free(be);
    yp_plan_free(&p);
    yp_graph_free(g);
    return rc ? -1 : 0;
}

int cmd_bench_step(int argc, char **argv) {
    bench_opts o;
    yp_err err = {0};
    if (parse(argc, argv, &o, &err) || run(&o, &err)) return cli_fail(&err);
    return YP_EXIT_OK;
}
