/* cmd_bench_step.c - `yoloplan bench-step`: N training steps on the executor (the loop is
 * executor/yp_bench.h's) of a plan built here for the device (yp_device_plan.h) or loaded from
 * plan.json, on the CPU backend or with --device cuda on the GPU (after the preflight of
 * preflight.h); prints ms/step, images/s and the process's peak RSS. */
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include <cjson/cJSON.h>

#include "cli.h"
#include "device.h"
#include "preflight.h"
#include "yp_bench.h"
#include "yp_device_plan.h"
#include "yp_plan_io.h"

typedef struct {
    const char *model, *load_plan;
    const char *device;  /* --device as given ("cpu" by default) */
    yp_device_spec dev;  /* its spec, with --threads where it names no thread count */
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

#define USAGE "see yoloplan bench-step --help" /* the usage itself: usage.c */

static int parse(int argc, char **argv, bench_opts *o, yp_err *err) {
    memset(o, 0, sizeof *o);
    o->model = "yolov5s", o->w = o->h = 320, o->batch = 8, o->steps = 20, o->threads = 2, o->warmup = 2;
    o->policy = YP_SAVE_YOLOPLAN, o->device = "cpu";
    yp_err why;
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
            if (cli_device_check(a, v, &why)) return yp_err_set(err, "bench-step: %s", why.msg);
            o->device = v;
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
    if (cli_device_spec("--device", o->device, 0, &o->dev, err)) return -1;
    if (o->dev.threads) o->threads = o->dev.threads, o->threads_given = 1; /* cpu:T names it */
    else o->dev.threads = (int)o->threads;
    if (o->load_plan) {
        char list[96] = "";
        const int given[] = {o->model_given,  o->batch_given, o->img_given,
                             o->policy_given, o->no_ema,      o->precision_given};
        static const char *const names[] = {"--model", "--batch", "--img", "--policy", "--no-ema", "--precision"};
        for (int k = 0; k < 6; k++)
            if (given[k])
                snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s", list[0] ? ", " : "", names[k]);
        if (list[0])
            return yp_err_set(err, "bench-step --load-plan runs the saved plan as it is (model, batch, img, policy, "
                              "EMA and the rest come from the file): drop %s", list);
    }
    if (o->batch_auto && o->precision_given)
        return yp_err_set(err, "bench-step: --batch auto takes the planner's precision too; drop --precision");
    if (!(yp_exec_kind_precisions(o->dev.kind) & 1u << o->precision))
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

/* The benchmark's candidate at batch b for instance be: YOLOv5's defaults with mosaic off and room
 * for 8 labels per image, and the conv scratch of instance be (on the CPU its thread count decides
 * it). */
static yp_candidate bench_candidate(const bench_opts *o, yp_backend *be, int64_t b) {
    yp_candidate c = yp_candidate_default();
    c.batch = b, c.img_w = o->w, c.img_h = o->h, c.mosaic = 0, c.labels_per_image = 8, c.policy = o->policy;
    c.precision = o->precision;
    c.ema = !o->no_ema; /* YOLOv5 updates its EMA every optimizer step; --no-ema measures the step without */
    yp_exec_candidate_for(&c, be);
    return c;
}

/* The plan of the options for instance be, in the memory it has (the host's available memory for a
 * backend whose memory is the host's, else the card's free memory): the given batch as it is, or
 * with --batch auto what the planner picks for the device, as `yoloplan --gpu` and `train` do (the
 * fastest plan that fits, over the batches up to the nominal 64, every checkpoint set and the
 * precisions the backend runs). The graph is the caller's to free, with the plan. */
static int build_plan(const bench_opts *o, yp_backend *be, int64_t avail, yp_plan *p, yp_graph **g, yp_err *err) {
    *g = cli_load_model(o->model, 0, err);
    if (!*g) return -1;
    yp_gpu dev;
    if (cli_device_budget(be, avail, NULL, &dev, err)) return -1;
    /* refused before anything is allocated where the memory is the host's; on a GPU the preflight
     * refuses, naming the batch that fits */
    yp_device_plan_opts po = {.as_given = !o->batch_auto, .find_best = be->host_memory};
    po.so = yp_search_opts_default();
    po.so.n_models = 1, po.so.models[0] = *g;
    po.so.n_sizes = 1, po.so.size_w[0] = o->w, po.so.size_h[0] = o->h;
    po.so.prec_mask = yp_exec_precisions(be);
    po.so.mosaic_mask = 1u << 0;
    po.so.batch = o->batch_auto ? 0 : o->batch;
    po.so.base = bench_candidate(o, be, o->batch_auto ? 1 : o->batch);
    yp_device_plan d;
    if (yp_device_plan_make(&po, &dev, &d, err)) return -1;
    if (!d.have_plan)
        return yp_err_set(err, "bench-step --batch auto: no plan of %s at %lldx%lld fits %s", (*g)->name,
                          (long long)o->w, (long long)o->h, dev.desc);
    *p = d.plan;
    if (p->fits || !po.find_best) return 0;
    char best[96] = "not even --batch 1 fits: lower --img";
    if (d.best.batch > 0)
        snprintf(best, sizeof best, "the largest batch that fits is --batch %lld", (long long)d.best.batch);
    return yp_err_set(err, "bench-step: --batch %ld at %lldx%lld needs %.2f GiB of arena, the host has %.2f GiB %s; %s",
                      o->batch, (long long)o->w, (long long)o->h, (double)p->device_bytes / 1073741824.0,
                      (double)avail / 1073741824.0, o->mem ? "(--mem)" : "available", best);
}

/* --load-plan: the saved plan verbatim, if the executor can run it on *be: a precision its kind
 * runs (the CPU: fp32), and where its memory is the host's an arena the host's available memory
 * holds; a plan made for another thread count (the CPU's onednn:T) runs on an instance of it,
 * which replaces *be, unless --threads asked for another (on a GPU the preflight checks the
 * memory). */
static int load_plan(bench_opts *o, yp_exec_models *models, int64_t avail, yp_backend **be, yp_plan *p,
                     yp_graph **g, yp_err *err) {
    if (yp_plan_load_with(o->load_plan, &models->r, p, g, err)) return -1;
    const yp_candidate *c = &p->cand;
    if (!(yp_exec_kind_precisions(o->dev.kind) & 1u << c->precision))
        return yp_err_set(err, "bench-step: %s is an %s plan; the CPU executor runs fp32 plans: save one with "
                          "--precision fp32", o->load_plan, yp_precision_name(c->precision));
    yp_device_spec want = o->dev;
    if (cli_device_spec_of_plan(&want, p)) {
        const char *model = yp_candidate_scratch_name(c);
        char mine[YP_SCRATCH_NAME_MAX];
        yp_exec_scratch_model(*be, mine, sizeof mine);
        if (o->threads_given)
            return yp_err_set(err, "bench-step: --threads %ld, but %s was planned for %s (the conv scratch oneDNN asks "
                              "for on %d threads); drop --threads or save the plan with --scratch %s",
                              o->threads, o->load_plan, model, want.threads, mine);
        o->dev = want, o->threads = want.threads;
        yp_backend_free(*be);
        char what[64];
        snprintf(what, sizeof what, "bench-step --device %s", o->device);
        if (!(*be = models->be = cli_device_open(&o->dev, what, err))) return -1;
    }
    if ((*be)->host_memory && p->arena_bytes > avail) /* refused before anything is allocated */
        return yp_err_set(err, "bench-step: %s needs %.2f GiB of arena, the host has %.2f GiB available; save a plan "
                          "with a smaller --batch or --img", o->load_plan, (double)p->arena_bytes / 1073741824.0,
                          (double)avail / 1073741824.0);
    return 0;
}

static void print_result(const bench_opts *o, const yp_backend *be, const yp_plan *p, const yp_bench_result *r,
                         FILE *f) {
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    int64_t rss = (int64_t)ru.ru_maxrss * 1024;
    double ms = r->ms_per_step;
    if (o->json) {
        cJSON *j = cJSON_CreateObject();
        cJSON_AddStringToObject(j, "model", p->g->name);
        cJSON_AddNumberToObject(j, "batch", (double)r->batch);
        cJSON_AddNumberToObject(j, "img", (double)r->w);
        cJSON_AddStringToObject(j, "device", be->name);
        if (be->host_memory) cJSON_AddNumberToObject(j, "threads", (double)o->threads);
        cJSON_AddNumberToObject(j, "ms_per_step", ms);
        cJSON_AddNumberToObject(j, "images_per_s", (double)r->batch * 1e3 / ms);
        cJSON_AddNumberToObject(j, "ms_per_step_median", r->ms_median);
        cJSON_AddNumberToObject(j, "ms_per_step_min", r->ms_min);
        cJSON_AddNumberToObject(j, "peak_rss_bytes", (double)rss);
        cJSON_AddNumberToObject(j, "arena_bytes", (double)p->arena_bytes);
        cJSON_AddNumberToObject(j, "fixed_bytes", (double)o->fixed_bytes);
        cJSON_AddStringToObject(j, "precision", yp_precision_name(p->cand.precision));
        if (!be->host_memory) {
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
    if (!be->host_memory)
        snprintf(where, sizeof where, "%s %s (fixed cost %.1f MiB, took %.1f MiB%s)", be->name,
                 yp_precision_name(p->cand.precision), (double)o->fixed_bytes / 1048576.0,
                 (double)o->taken_bytes / 1048576.0, o->replayed ? ", CUDA graphs" : "");
    else snprintf(where, sizeof where, "%ld threads", o->threads);
    fprintf(f, "%s batch %lld img %lldx%lld, %s, %ld steps (+%ld warm-up): %.1f ms/step (median %.1f, "
            "fastest %.1f), %.2f images/s, peak RSS %.1f MiB (arena %.1f MiB), last loss %.4f\n", p->g->name,
            (long long)r->batch, (long long)r->w, (long long)r->h, where, o->steps, o->warmup, ms, r->ms_median,
            r->ms_min, (double)r->batch * 1e3 / ms, (double)rss / 1048576.0, (double)p->arena_bytes / 1048576.0,
            r->last_loss[3]);
}

static int run(bench_opts *o, yp_err *err) {
    int64_t avail = o->mem ? o->mem : cli_host_available_bytes();
    if (avail <= 0)
        return yp_err_set(err, "bench-step: cannot read the host's available memory (/proc/meminfo); give --mem");
    yp_plan p;
    yp_graph *g = NULL;
    yp_exec x;
    yp_exec_models models;
    memset(&p, 0, sizeof p);
    memset(&x, 0, sizeof x);
    /* the instance first: a new plan is planned with it, and a loaded plan's conv scratch model may
     * be its card's, asked of it (a plan for another thread count replaces it, load_plan) */
    char what[64];
    snprintf(what, sizeof what, "bench-step --device %s", o->device);
    yp_backend *be = cli_device_open(&o->dev, what, err);
    yp_exec_models_init(&models, be);
    int rc = be ? 0 : -1;
    if (!rc && o->load_plan) rc = load_plan(o, &models, avail, &be, &p, &g, err);
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
        yp_exec_models_free(&models);
        yp_graph_free(g);
        return -1;
    }
    yp_bench_cfg cfg = yp_bench_cfg_default();
    cfg.steps = o->steps, cfg.warmup = o->warmup, cfg.profile = o->profile;
    yp_bench_result r;
    rc = yp_bench_run(&x, &cfg, &r, err);
    o->taken_bytes = free0 >= 0 && yp_backend_device_free(be, &free1) == 1 ? free0 - free1 : -1;
    o->replayed = x.graphs.n > 0 && !x.graphs.off;
    if (!rc) print_result(o, be, &p, &r, stdout);
    if (!rc && o->profile) print_profile(&x, o->steps, r.ms_per_step, o->json ? stderr : stdout);
    yp_exec_free(&x);
    yp_backend_free(be);
    yp_exec_models_free(&models);
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
