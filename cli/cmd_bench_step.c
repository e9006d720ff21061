/* cmd_bench_step.c - `yoloplan bench-step`: N training steps on the executor (the loop is
 * executor/yp_bench.h's) of a plan built here for the device or loaded from plan.json, on the CPU
 * backend or with --device cuda on the GPU (after the preflight of preflight.h); prints ms/step,
 * images/s and the process's peak RSS. */
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include <cjson/cJSON.h>

#include "cli.h"
#include "preflight.h"
#include "yp_bench.h"
#include "yp_plan_io.h"

typedef struct {
    const char *model, *load_plan;
    int cuda; /* --device cuda */
    int64_t w, h;
    long batch, steps, threads, warmup;
    int json, no_ema, profile;
    int64_t fixed_bytes; /* the backend's fixed device cost, for the report */
    int64_t taken_bytes; /* device memory the run took past the instance (arena and all): the free
                          * memory after the instance was made less after the last step; -1: unknown */
    int replayed;        /* the step ran as recorded runs (CUDA graphs) */
    int64_t mem;         /* --mem: the host memory the run may use (0: what the host has available) */
    yp_save_policy policy;
    yp_precision precision; /* --precision: fp32 (the default), amp-fp16 or amp-bf16 (CUDA) */
    /* given on the command line: options a loaded plan decides itself */
    int model_given, batch_given, img_given, policy_given, threads_given, precision_given;
    int batch_auto; /* --batch auto: the planner's choice for the device (the search's fastest plan) */
} bench_opts;

#define USAGE "usage: yoloplan bench-step [--model M] [--batch B|auto] [--img S] [--policy yoloplan|yoloplan+cat|pytorch] " \
              "[--precision fp32|amp-fp16|amp-bf16] [--no-ema] | --load-plan FILE, then [--device cpu|cuda] [--steps N] [--warmup N] [--threads T] [--mem SIZE] " \
              "[--profile] [--json]"

static int parse(int argc, char **argv, bench_opts *o, yp_err *err) {
    memset(o, 0, sizeof *o);
    o->model = "yolov5s", o->w = o->h = 320, o->batch = 8, o->steps = 20, o->threads = 2, o->warmup = 2;
    o->policy = YP_SAVE_YOLOPLAN;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        int rc = 0;
        if (!strcmp(a, "--json")) continue;
        if (!strcmp(a, "--no-ema") || !strcmp(a, "--profile")) {
            *(a[2] == 'n' ? &o->no_ema : &o->profile) = 1;
            continue;
        }
        if (!v) return yp_err_set(err, "bench-step: option %s needs a value", a);
        if (!strcmp(a, "--model")) o->model = v, o->model_given = 1;
        else if (!strcmp(a, "--load-plan")) o->load_plan = v;
        else if (!strcmp(a, "--device")) {
            if (strcmp(v, "cpu") && strcmp(v, "cuda")) return yp_err_set(err, "bench-step: --device %s: expected cpu or cuda", v);
            o->cuda = !strcmp(v, "cuda");
        }
        else if (!strcmp(a, "--img")) rc = cli_parse_img(v, &o->w, &o->h, err), o->img_given = 1;
        else if (!strcmp(a, "--batch") && !strcmp(v, "auto")) o->batch_auto = o->batch_given = 1;
        else if (!strcmp(a, "--batch")) rc = cli_parse_int(a, v, 1, 4096, &o->batch, err), o->batch_given = 1;
        else if (!strcmp(a, "--steps")) rc = cli_parse_int(a, v, 1, 100000, &o->steps, err);
        else if (!strcmp(a, "--warmup")) rc = cli_parse_int(a, v, 0, 1000, &o->warmup, err);
        else if (!strcmp(a, "--threads")) rc = cli_parse_int(a, v, 1, 1024, &o->threads, err), o->threads_given = 1;
        else if (!strcmp(a, "--mem")) rc = cli_parse_size(a, v, &o->mem, err);
        else if (!strcmp(a, "--policy") && yp_save_policy_parse(v) >= 0)
            o->policy = (yp_save_policy)yp_save_policy_parse(v), o->policy_given = 1;
        else if (!strcmp(a, "--precision")) {
            int p = yp_precision_parse(v);
            if (p < 0) return yp_err_set(err, "bench-step: --precision %s: expected fp32, amp-fp16 or amp-bf16", v);
            o->precision = (yp_precision)p, o->precision_given = 1;
        }
        else
            return yp_err_set(err, "bench-step: unknown option %s; " USAGE, a);
        if (rc) return -1;
        i++;
    }
    for (int i = 1; i < argc; i++) o->json |= !strcmp(argv[i], "--json");
    if (o->load_plan) {
        char list[96] = "";
        const int given[] = {o->model_given, o->batch_given, o->img_given, o->policy_given, o->no_ema, o->precision_given};
        static const char *const names[] = {"--model", "--batch", "--img", "--policy", "--no-ema", "--precision"};
        for (int k = 0; k < 6; k++)
            if (given[k]) snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s", list[0] ? ", " : "", names[k]);
        if (list[0])
            return yp_err_set(err, "bench-step --load-plan runs the saved plan as it is (model, batch, img, policy, "
                              "EMA and the rest come from the file): drop %s", list);
    }
    if (o->batch_auto && o->precision_given)
        return yp_err_set(err, "bench-step: --batch auto takes the planner's precision too; drop --precision");
    if (o->precision != YP_PREC_FP32 && !o->cuda)
        return yp_err_set(err, "bench-step: --precision %s runs on the GPU only (the CPU executor trains in fp32): add "
                          "--device cuda or drop --precision", yp_precision_name(o->precision));
    return 0;
}

/* The timed steps' wall time by kind of step (--profile), largest first. */
static void print_profile(const yp_exec *x, long steps, double ms_step, FILE *f) {
    enum { N = YP_PHASE_COUNT * (YP_OP_COUNT + 1) };
    int order[N], n = 0;
    for (int i = 0; i < N; i++)
        if (x->prof.n[i]) order[n++] = i;
    for (int i = 1; i < n; i++) /* insertion sort by time, descending */
        for (int j = i; j > 0 && x->prof.s[order[j]] > x->prof.s[order[j - 1]]; j--) {
            int t = order[j];
            order[j] = order[j - 1], order[j - 1] = t;
        }
    fprintf(f, "%-10s %-18s %8s %10s %7s\n", "phase", "op", "calls", "ms/step", "share");
    double total = 0;
    for (int k = 0; k < n; k++) {
        int i = order[k], phase = i / (YP_OP_COUNT + 1), op = i % (YP_OP_COUNT + 1);
        double ms = x->prof.s[i] * 1e3 / (double)steps;
        total += ms;
        fprintf(f, "%-10s %-18s %8.1f %10.2f %6.1f%%\n", yp_phase_name((yp_phase)phase),
                op < YP_OP_COUNT ? yp_op_get((yp_op)op)->name : (phase == YP_PHASE_OPTIMIZER ? "update + EMA" : "-"),
                (double)x->prof.n[i] / (double)steps, ms, 100.0 * ms / ms_step);
    }
    fprintf(f, "%-10s %-18s %8s %10.2f %6.1f%% (the rest: the batch and the loop)\n", "total", "", "", total,
            100.0 * total / ms_step);
}

/* The plan of the options for the device: YOLOv5's defaults with mosaic off and room for 8 labels
 * per image, and the conv scratch of instance be (on the CPU its thread count decides it). The
 * graph is the caller's to free, with the plan. */
/* The benchmark's candidate at batch b for instance be. */
static yp_candidate bench_candidate(const bench_opts *o, yp_backend *be, int64_t b) {
    yp_candidate c = yp_candidate_default();
    c.batch = b, c.img_w = o->w, c.img_h = o->h, c.mosaic = 0, c.labels_per_image = 8, c.policy = o->policy;
    c.precision = o->precision;
    c.ema = !o->no_ema; /* YOLOv5 updates its EMA every optimizer step; --no-ema measures the step without */
    yp_exec_candidate_for(&c, be);
    return c;
}

/* The largest batch below o->batch whose plan fits host (0: not even 1), by bisection: the arena
 * grows with the batch. */
static int64_t largest_fitting(const bench_opts *o, yp_backend *be, const yp_graph *g, const yp_gpu *host) {
    int64_t lo = 0, hi = o->batch - 1; /* lo fits (0: none known), the answer is in [lo, hi] */
    while (lo < hi) {
        int64_t mid = lo + (hi - lo + 1) / 2;
        yp_candidate c = bench_candidate(o, be, mid);
        yp_plan q;
        yp_err why;
        int fits = yp_plan_build(g, &c, host, 0, 0, &q, &why) == 0 && q.fits;
        yp_plan_free(&q);
        if (fits) lo = mid;
        else hi = mid - 1;
    }
    return lo;
}

/* --batch auto: what the planner picks for the device, as `yoloplan --gpu` and `train` do: the
 * fastest plan that fits, over the batches up to the nominal 64, every checkpoint set and the
 * precisions the backend runs. */
static int auto_plan(const bench_opts *o, yp_backend *be, const yp_graph *g, const yp_gpu *dev, yp_plan *p,
                     yp_err *err) {
    yp_search_opts so = yp_search_opts_default();
    so.n_models = 1, so.models[0] = g;
    so.n_sizes = 1, so.size_w[0] = o->w, so.size_h[0] = o->h;
    so.prec_mask = yp_exec_precisions(be);
    so.mosaic_mask = 1u << 0;
    so.base = bench_candidate(o, be, 1);
    yp_search_result res;
    if (yp_search(&so, dev, 0, &res, err)) return -1;
    int rc = res.n_rows > 0 ? yp_search_realize(&so, &res.rows[0], dev, 0, 0, p, err)
                            : yp_err_set(err, "bench-step --batch auto: no plan of %s at %lldx%lld fits %s", g->name,
                                         (long long)o->w, (long long)o->h, dev->desc);
    yp_search_free(&res);
    return rc;
}

static int build_plan(const bench_opts *o, yp_backend *be, int64_t avail, yp_plan *p, yp_graph **g, yp_err *err) {
    *g = cli_load_model(o->model, 0, err);
    if (!*g) return -1;
    yp_gpu host; /* the CPU backend's arena lives in host memory: plan for what is available */
    if (!o->cuda) yp_gpu_host(avail, &host);
    else if (cli_gpu_of_backend(be, &host, err)) return -1; /* the card, its free memory the budget */
    if (o->batch_auto) return auto_plan(o, be, *g, &host, p, err);
    yp_candidate c = bench_candidate(o, be, o->batch);
    if (yp_plan_build(*g, &c, &host, 0, 0, p, err)) return -1;
    if (!p->fits && !o->cuda) { /* refused before anything is allocated */
        int64_t b = largest_fitting(o, be, *g, &host);
        char best[96] = "not even --batch 1 fits: lower --img";
        if (b > 0) snprintf(best, sizeof best, "the largest batch that fits is --batch %lld", (long long)b);
        return yp_err_set(err, "bench-step: --batch %ld at %lldx%lld needs %.2f GiB of arena, the host has %.2f GiB %s; %s",
                          o->batch, (long long)o->w, (long long)o->h, (double)p->device_bytes / 1073741824.0,
                          (double)avail / 1073741824.0, o->mem ? "(--mem)" : "available", best);
    }
    return 0; /* on a GPU the preflight refuses, naming the batch that fits */
}

/* --load-plan: the saved plan verbatim, if the executor can run it here: fp32, and on the CPU an
 * arena the host's available memory holds and the thread count its scratch model was planned for
 * (on a GPU the preflight checks the memory). */
static int load_plan(bench_opts *o, int64_t avail, yp_plan *p, yp_graph **g, yp_err *err) {
    if (yp_plan_load_with(o->load_plan, yp_exec_scratch_resolver(), p, g, err)) return -1;
    const yp_candidate *c = &p->cand;
    if (c->precision != YP_PREC_FP32 && !o->cuda)
        return yp_err_set(err, "bench-step: %s is an %s plan; the CPU executor runs fp32 plans: save one with "
                          "--precision fp32", o->load_plan, yp_precision_name(c->precision));
    if (o->cuda) return 0;
    const char *model = yp_candidate_scratch_name(c);
    long t = 0;
    if (sscanf(model, "onednn:%ld", &t) == 1) {
        if (o->threads_given && o->threads != t)
            return yp_err_set(err, "bench-step: --threads %ld, but %s was planned for %s (the conv scratch oneDNN asks "
                              "for on %ld threads); drop --threads or save the plan with --scratch onednn:%ld",
                              o->threads, o->load_plan, model, t, o->threads);
        o->threads = t;
    }
    if (p->arena_bytes > avail) /* refused before anything is allocated */
        return yp_err_set(err, "bench-step: %s needs %.2f GiB of arena, the host has %.2f GiB available; save a plan "
                          "with a smaller --batch or --img", o->load_plan, (double)p->arena_bytes / 1073741824.0,
                          (double)avail / 1073741824.0);
    return 0;
}

static void print_result(const bench_opts *o, const yp_plan *p, const yp_bench_result *r, FILE *f) {
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    int64_t rss = (int64_t)ru.ru_maxrss * 1024;
    double ms = r->ms_per_step;
    if (o->json) {
        cJSON *j = cJSON_CreateObject();
        cJSON_AddStringToObject(j, "model", p->g->name);
        cJSON_AddNumberToObject(j, "batch", (double)r->batch);
        cJSON_AddNumberToObject(j, "img", (double)r->w);
        cJSON_AddStringToObject(j, "device", o->cuda ? "cuda" : "cpu");
        if (!o->cuda) cJSON_AddNumberToObject(j, "threads", (double)o->threads);
        cJSON_AddNumberToObject(j, "ms_per_step", ms);
        cJSON_AddNumberToObject(j, "images_per_s", (double)r->batch * 1e3 / ms);
        cJSON_AddNumberToObject(j, "ms_per_step_median", r->ms_median);
        cJSON_AddNumberToObject(j, "ms_per_step_min", r->ms_min);
        cJSON_AddNumberToObject(j, "peak_rss_bytes", (double)rss);
        cJSON_AddNumberToObject(j, "arena_bytes", (double)p->arena_bytes);
        cJSON_AddNumberToObject(j, "fixed_bytes", (double)o->fixed_bytes);
        cJSON_AddStringToObject(j, "precision", yp_precision_name(p->cand.precision));
        if (o->cuda) {
            cJSON_AddNumberToObject(j, "device_taken_bytes", (double)o->taken_bytes);
            cJSON_AddBoolToObject(j, "cuda_graphs", o->replayed);
        }
        cJSON_AddNumberToObject(j, "last_loss", r->last_loss[3]);
        cJSON *curve = cJSON_AddArrayToObject(j, "losses"); /* every step's, warm-up first */
        for (int i = 0; curve && i < r->n_curve; i++) cJSON_AddItemToArray(curve, cJSON_CreateNumber(r->curve[i]));
        char *s = cJSON_Print(j);
        fputs(s ? s : "{}", f), fputc('\n', f);
        free(s);
        cJSON_Delete(j);
        return;
    }
    char where[128];
    if (o->cuda)
        snprintf(where, sizeof where, "cuda %s (fixed cost %.1f MiB, took %.1f MiB%s)", yp_precision_name(p->cand.precision),
                 (double)o->fixed_bytes / 1048576.0, (double)o->taken_bytes / 1048576.0, o->replayed ? ", CUDA graphs" : "");
    else snprintf(where, sizeof where, "%ld threads", o->threads);
    fprintf(f, "%s batch %lld img %lldx%lld, %s, %ld steps (+%ld warm-up): %.1f ms/step (median %.1f, "
            "fastest %.1f), %.2f images/s, peak RSS %.1f MiB (arena %.1f MiB), last loss %.4f\n", p->g->name,
            (long long)r->batch, (long long)r->w, (long long)r->h, where, o->steps, o->warmup, ms, r->ms_median,
            r->ms_min, (double)r->batch * 1e3 / ms, (double)rss / 1048576.0, (double)p->arena_bytes / 1048576.0,
            r->last_loss[3]);
}

static int run(bench_opts *o, yp_err *err) {
    int64_t avail = o->mem ? o->mem : cli_host_available_bytes();
    if (avail <= 0) return yp_err_set(err, "bench-step: cannot read the host's available memory (/proc/meminfo); give --mem");
    yp_plan p;
    yp_graph *g = NULL;
    yp_backend *be = NULL;
    yp_exec x;
    memset(&p, 0, sizeof p);
    memset(&x, 0, sizeof x);
    /* a loaded plan names the thread count it was planned for, so the instance comes after it;
     * a new plan is planned with the instance that will run it */
    int rc = o->load_plan ? load_plan(o, avail, &p, &g, err) : 0;
    char why[256];
    const yp_cpu_config cpu = {(int)o->threads};
    if (!rc && !(be = o->cuda ? yp_backend_cuda_new(0, why, sizeof why) : yp_backend_cpu_new(&cpu, why, sizeof why)))
        rc = yp_err_set(err, "bench-step --device %s: %s", o->cuda ? "cuda" : "cpu", why);
    int64_t free0 = -1, free1 = -1;
    if (!rc) o->fixed_bytes = be->fixed_bytes, yp_backend_device_free(be, &free0);
    if (!rc && !o->load_plan) rc = build_plan(o, be, avail, &p, &g, err);
    yp_search_opts so; /* a refusal names the largest batch up to the plan's that fits */
    if (!rc) cli_search_of_plan(&p, p.cand.batch, &so);
    if (!rc) rc = cli_preflight(be, &p, &so, "bench-step", err); /* before the arena */
    if (!rc) rc = yp_exec_init(&x, &p, be, 0, 1, err);
    if (rc) {
        yp_plan_free(&p);
        yp_backend_free(be);
        yp_graph_free(g);
        return -1;
    }
    yp_bench_cfg cfg = yp_bench_cfg_default();
    cfg.steps = o->steps, cfg.warmup = o->warmup, cfg.profile = o->profile;
    yp_bench_result r;
    rc = yp_bench_run(&x, &cfg, &r, err);
    o->taken_bytes = free0 >= 0 && yp_backend_device_free(be, &free1) == 1 ? free0 - free1 : -1;
    o->replayed = x.graphs.n > 0 && !x.graphs.off;
    if (!rc) print_result(o, &p, &r, stdout);
    if (!rc && o->profile) print_profile(&x, o->steps, r.ms_per_step, o->json ? stderr : stdout);
    yp_exec_free(&x);
    yp_backend_free(be);
    yp_plan_free(&p);
    yp_graph_free(g);
    return rc;
}

int cmd_bench_step(int argc, char **argv) {
    bench_opts o;
    yp_err err = {0};
    if (parse(argc, argv, &o, &err) || run(&o, &err)) return cli_fail(&err);
    return YP_EXIT_OK;
}
