/* cmd_train.c - `yoloplan train`: plans the run for the device (the fastest plan that fits, or the
 * given --batch), checks a GPU's free memory holds it (preflight.h), prints the plan with the run's
 * host memory (executor/train/yp_train_host.h) and saves it in the run folder, then trains inside it as
 * train.py (executor/train/yp_train.h): validation every epoch, results.csv and curves, last and best
 * checkpoints, --resume; SIGINT/SIGTERM stop it between batches (exit 130/143, the line says how to
 * resume), and a finished run's checkpoints are stripped as train.py's strip_optimizer does. */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "device.h"
#include "preflight.h"
#include "run_dir.h"
#include "train_opts.h"
#include "yp_autoanchor.h"
#include "yp_checkpoint.h"
#include "yp_device_plan.h"
#include "yp_image_cache.h"
#include "yp_plan_io.h"
#include "yp_results.h"
#include "yp_search.h"
#include "yp_train.h"
#include "yp_train_host.h"
#include "yp_clock.h"

#define EXIT_NOFIT_RC (-2) /* run(): a plan that does not fit (exit 1) */
#define TRAIN_PY_BATCH 16  /* train.py's default --batch-size */

typedef struct {
    train_opts o;
    long batch_asked;          /* --batch as given (train_opts.h), before the plan's replaces it */
    int64_t max_batch;         /* the largest batch the plan could choose (plan_max_batch) */
    char ckpt[RUN_DIR_PATH];   /* --resume: the checkpoint */
    char dir[RUN_DIR_PATH];    /* the run folder */
    char last[RUN_DIR_PATH + 32], best[RUN_DIR_PATH + 32], csv[RUN_DIR_PATH + 32], plot[RUN_DIR_PATH + 32];
    yp_labels train, val;
    int have_val;
    char **names; /* the data's class names */
    yp_hyp_file hyp;
    yp_graph *g;
    yp_device_spec spec;    /* --device (and --threads where it names no thread count) */
    yp_backend *be;
    yp_exec_models models;  /* --resume: what the loaded plan's conv scratch model is asked of (be) */
    yp_plan p;
    int have_plan;
    yp_search_opts so;      /* the search behind a preflight refusal's suggestion (batch not pinned) */
    yp_exec x;
    int have_exec;
    yp_train_state st;
    yp_train_host host;     /* the run's host memory, term by term (after yp_exec_init) */
    int cache_ram;          /* --cache ram, and the budget holds it */
    yp_image_cache train_cache, val_cache;
    int finish_only;        /* --resume of a run whose epochs are all trained: strip its checkpoints only */
    int signal;             /* the SIGINT or SIGTERM that ended the run (exit 128 + it) */
} train_run;

static void run_free(train_run *r) {
    if (r->have_exec) yp_exec_free(&r->x);
    yp_backend_free(r->be);
    yp_exec_models_free(&r->models);
    if (r->have_plan) yp_plan_free(&r->p);
    yp_graph_free(r->g);
    yp_dataset_names_free(r->names, r->train.stats.nc);
    yp_image_cache_free(&r->train_cache);
    yp_image_cache_free(&r->val_cache);
    yp_labels_free(&r->train);
    yp_labels_free(&r->val);
}

static int path_join(char *out, size_t n, const char *dir, const char *file, yp_err *err) {
    if (snprintf(out, n, "%s/%s", dir, file) >= (int)n) return yp_err_set(err, "%s: the path is too long", dir);
    return 0;
}

/* ---------------------------------------------------------------- host memory */

/* The loop's options that size its loaders and validator (run() adds the rest). */
static yp_train_opts loop_opts(const train_run *r) {
    return (yp_train_opts){.train = &r->train, .val = r->have_val ? &r->val : NULL, .hyp = r->hyp,
                           .epochs = r->o.epochs, .workers = (int)r->o.workers, .seed = (uint64_t)r->o.seed,
                           .augment = !r->o.no_augment, .noval = r->o.noval, .cache_ram = r->cache_ram,
                           .train_cache = r->cache_ram ? &r->train_cache : NULL,
                           .val_cache = r->cache_ram && r->have_val ? &r->val_cache : NULL};
}

/* The run's data pipeline, which its plan carries: --workers, torch's prefetch, --cache. */
static yp_pipeline run_pipeline(const train_run *r) {
    return (yp_pipeline){(int)r->o.workers, YP_PIPE_PREFETCH, r->cache_ram ? YP_CACHE_RAM : YP_CACHE_NONE};
}

/* yp_train_host.h's estimate at batch (arena: the plan's on the CPU backend, once planned). */
static int host_estimate(const train_run *r, int64_t batch, int64_t arena, int64_t baseline, yp_train_host *h,
                         yp_err *err) {
    yp_train_opts to = loop_opts(r);
    return yp_train_host_estimate(r->g, &to, batch, r->o.img, (int)r->o.multi_scale, r->st.next_epoch, arena,
                                  baseline < 0 ? 0 : baseline, h, err);
}

/* ---------------------------------------------------------------- planning */

/* train.py's check_img_size: a multiple of gs = max(the largest stride, 32) (yp_stride_gs), at
 * least 2 gs (the planner's rule too: cli_check_img_size). */
static void check_img(train_run *r) {
    int64_t gs = yp_stride_gs(yp_graph_max_stride(r->g));
    r->o.img = (long)cli_check_img_size(r->o.img, gs, 2 * gs, stderr);
}

/* The largest batch the plan may choose when --batch is not pinned, for n training images. With
 * --batch -1 (train.py's AutoBatch: what fits) the nominal 64, at most n. Otherwise at most
 * n / ceil(n / 16): an epoch of whole batches (the loader drops a partial one) then has at least
 * the ceil(n / 16) iterations train.py's default --batch-size 16 gives it. A new run's plan and a
 * resumed run's suggestion both use it. */
static int64_t plan_max_batch(int64_t n, int autobatch) {
    if (n < 1) return 1;
    int64_t cap = n < YP_NBS ? n : YP_NBS;
    if (autobatch) return cap;
    int64_t iters = (n + TRAIN_PY_BATCH - 1) / TRAIN_PY_BATCH, b = n / iters;
    return b < cap ? b : cap;
}

/* Why the plan has its batch, for the plan line: "" when --batch pinned it. */
static void batch_why(const train_run *r, int64_t batch, char *buf, size_t n) {
    int64_t imgs = r->train.n, iters = (imgs + TRAIN_PY_BATCH - 1) / TRAIN_PY_BATCH;
    buf[0] = 0;
    if (r->batch_asked > 0) return;
    if (r->batch_asked < 0)
        snprintf(buf, n, " (--batch -1: the fastest that fits, at most %lld: the nominal %d or the %lld images)",
                 (long long)r->max_batch, YP_NBS, (long long)imgs);
    else
        snprintf(buf, n, " (%s %lld so an epoch has train.py's %lld iteration%s on %lld images)",
                 batch == r->max_batch ? "kept <=" : "the fastest that fits; at most", (long long)r->max_batch,
                 (long long)iters, iters == 1 ? "" : "s", (long long)imgs);
}

/* The fastest plan for the device that fits (yp_device_plan.h), in a precision the backend runs
 * (the CPU: fp32; CUDA: fp32 or AMP, fp16 or, on a card with it, bf16), under the host-memory
 * budget for a backend whose memory is the host's, for --gpu or else the instance's own card (its
 * free memory the budget) for a GPU, the given --batch or the fastest that fits up to
 * plan_max_batch (train.py's iterations per epoch; the nominal 64 with --batch -1), over every
 * checkpoint set. Leaves in r->so the search with the batch unpinned, for the preflight's
 * suggestion. */
static int plan_new(train_run *r, yp_err *err) {
    const int64_t max_batch = plan_max_batch(r->train.n, r->o.batch < 0);
    r->max_batch = max_batch;
    if (r->o.batch > r->train.n)
        return yp_err_set(err, "--batch %ld: the training split has %lld images; lower --batch", r->o.batch,
                          (long long)r->train.n);
    yp_gpu dev;
    int64_t budget = 0;
    if (r->be->host_memory) {
        int64_t avail = cli_host_available_bytes();
        yp_train_host h; /* everything but the arena, at the largest batch the search may pick */
        if (host_estimate(r, r->o.batch > 0 ? r->o.batch : max_batch, 0, yp_process_rss_bytes(), &h, err)) return -1;
        if (r->o.mem[0]) {
            if (cli_parse_size("--mem", r->o.mem, &budget, err)) return -1;
        } else {
            budget = avail - h.total;
            if (avail <= 0 || budget <= 0)
                return yp_err_set(err,
                                  "train: cannot tell the host's available memory (/proc/meminfo); give --mem SIZE");
        }
        if (budget <= 0) return yp_err_set(err, "--mem %s: give a positive size like 4GiB", r->o.mem);
    }
    /* a GPU's plan is for the card --gpu names, if any; the preflight checks this one holds it */
    if (cli_device_budget(r->be, budget, r->o.gpu, &dev, err)) return -1;
    yp_device_plan_opts o = {.find_best = 1, .n_images = r->train.n};
    yp_search_opts *so = &o.so;
    *so = yp_search_opts_default();
    so->n_models = 1, so->models[0] = r->g;
    so->n_sizes = 1, so->size_w[0] = so->size_h[0] = r->o.img;
    so->prec_mask = yp_exec_precisions(r->be);
    int mosaic = !r->o.no_augment && r->hyp.aug.mosaic > 0;
    so->mosaic_mask = 1u << mosaic;
    so->batch = r->o.batch > 0 ? r->o.batch : 0, so->max_batch = max_batch;
    yp_candidate *c = &so->base;
    c->optimizer = (yp_optimizer)yp_optimizer_parse(r->o.optimizer);
    c->ema = 1, c->freeze = (int)r->o.freeze, c->mosaic = mosaic, c->multi_scale = r->o.multi_scale;
    c->pipe = run_pipeline(r);
    int64_t most = r->train.stats.max_labels;
    if (r->have_val && r->val.stats.max_labels > most) most = r->val.stats.max_labels;
    c->labels_per_image = most > 0 ? (double)most : 1.0; /* the worst image, so no batch overflows the plan */
    yp_exec_candidate_for(c, r->be);
    r->so = *so;
    r->so.batch = 0;
    yp_device_plan d;
    if (yp_device_plan_make(&o, &dev, &d, err)) return -1;
    char ck[128];
    if (!d.have_plan && d.best.batch) /* the given batch does not fit: name the best that does */
        return yp_err_set(err, "train: --batch %ld of %s at --img %ld does not fit %s; the best that fits is --batch "
                          "%lld (checkpoints %s): drop --batch or pass that", r->o.batch, r->g->name, r->o.img,
                          dev.desc, (long long)d.best.batch, yp_front_layers_str(d.best.ckpt_layers, ck, sizeof ck)),
               EXIT_NOFIT_RC;
    if (!d.have_plan)
        return yp_err_set(err, "train: no plan of %s at --img %ld%s fits %s: the smallest, batch %lld with checkpoints "
                          "%s, needs %.2f GiB; %s", r->g->name, r->o.img,
                          r->o.batch > 0 ? " and the given --batch" : "", dev.desc, (long long)d.smallest.batch,
                          yp_front_layers_str(d.smallest.ckpt_layers, ck, sizeof ck), d.smallest_bytes / 1073741824.0,
                          r->be->host_memory ? "raise --mem, or lower --img or --batch" : "lower --img or --batch"),
               EXIT_NOFIT_RC;
    r->p = d.plan;
    r->have_plan = 1;
    if (!r->p.fits) return yp_err_set(err, "train: the realised plan does not fit %s", dev.desc), EXIT_NOFIT_RC;
    return 0;
}

static void print_plan(const train_run *r, FILE *f) {
    const yp_candidate *c = &r->p.cand;
    char ck[128], why[160];
    yp_train_sched s;
    yp_train_sched_init(&s, &r->hyp, r->o.cos_lr, 1, r->o.epochs, c->batch, 1);
    const double gib = 1073741824.0;
    double arena = (double)r->p.arena_bytes / gib, pipe = (double)r->host.pipeline / gib;
    double process = (double)(r->host.baseline + r->host.runtime) / gib;
    batch_why(r, c->batch, why, sizeof why);
    fprintf(f, "plan: %s, batch %lld%s, accumulate %d, img %lld, %s, checkpoints %s, arena %.2f GiB, device %s",
            r->g->name, (long long)c->batch, why, s.accumulate, (long long)c->img_w, yp_precision_name(c->precision),
            yp_front_layers_str(c->ckpt_layers, ck, sizeof ck), arena, r->o.device);
    if (r->be->host_memory) fprintf(f, " (%d threads)", yp_backend_cpu_threads(r->be));
    else fprintf(f, " (fixed cost %.2f GiB)", (double)r->be->fixed_bytes / gib);
    fprintf(f, ", host memory %.2f GiB (%s%.2f GiB data pipeline + %.2f GiB process)\n", (double)r->host.total / gib,
            r->be->host_memory ? "arena + " : "", pipe, process);
}

/* The host-memory estimate with the plan's arena and the baseline yp_exec_init measured, then the
 * plan line (before step 1, as train.py prints its set-up). */
static int print_host_plan(train_run *r, yp_err *err) {
    int64_t arena = r->be->host_memory ? r->p.arena_bytes : 0;
    if (host_estimate(r, r->p.cand.batch, arena, r->x.rss_before_arena, &r->host, err)) return -1;
    print_plan(r, stdout);
    return 0;
}

/* ---------------------------------------------------------------- the run's files */

static int on_epoch(void *ctx, const yp_epoch_result *e, yp_err *err) {
    train_run *r = ctx;
    yp_results_row row = {e->epoch, {e->train_loss[0], e->train_loss[1], e->train_loss[2], e->val.mp, e->val.mr,
                                     e->val.map50, e->val.map, e->val.loss[0], e->val.loss[1], e->val.loss[2], e->lr[0],
                                     e->lr[1], e->lr[2]}};
    if (yp_results_append(r->csv, &row, err)) return -1;
    return r->o.noplots ? 0 : yp_results_plot(r->csv, r->plot, err); /* --noplots: results.csv only */
}

static int write_run_files(train_run *r, yp_err *err) {
    char path[RUN_DIR_PATH + 32];
    if (path_join(path, sizeof path, r->dir, "plan.json", err) || yp_plan_save(&r->p, path, err)) return -1;
    if (path_join(path, sizeof path, r->dir, "hyp.yaml", err) || yp_hyp_file_write(path, &r->hyp, err)) return -1;
    if (path_join(path, sizeof path, r->dir, "opt.yaml", err) || train_opts_write_yaml(&r->o, path, err)) return -1;
    return 0;
}

static int set_paths(train_run *r, yp_err *err) {
    if (path_join(r->last, sizeof r->last, r->dir, "weights/last.safetensors", err) ||
        path_join(r->best, sizeof r->best, r->dir, "weights/best.safetensors", err) ||
        path_join(r->csv, sizeof r->csv, r->dir, "results.csv", err) ||
        path_join(r->plot, sizeof r->plot, r->dir, "results", err))
        return -1;
    return 0;
}

/* ---------------------------------------------------------------- set-up */

static int load_data(train_run *r, yp_err *err) {
    if (!r->o.data[0])
        return yp_err_set(err, "train: --data is required (a YOLOv5 data.yaml; yoloplan synth writes one)");
    if (yp_labels_load(r->o.data, &r->train, err)) return -1;
    if (yp_labels_load_split(r->o.data, "val", &r->val, err)) return -1;
    r->have_val = 1;
    if (yp_dataset_names(r->o.data, r->train.stats.nc, &r->names, err)) return -1;
    for (int k = 0; k < 2; k++) { /* YOLOv5's per-file warnings, then the counts */
        const yp_labels *l = k ? &r->val : &r->train;
        for (const char *w = l->warnings; w && *w;) {
            const char *nl = strchr(w, '\n');
            int len = nl ? (int)(nl - w) : (int)strlen(w);
            printf("%s: WARNING: %.*s\n", k ? "val" : "train", len, w);
            w += len + (nl != NULL);
        }
    }
    const yp_dataset_stats *t = &r->train.stats;
    printf("train: %lld images, %lld backgrounds, %lld corrupt%s\n", (long long)t->n_images, (long long)t->n_background,
           (long long)t->n_bad_files, r->train.reused ? " (label cache reused)" : "");
    printf("val: %lld images, %lld backgrounds, %lld corrupt%s\n", (long long)r->val.stats.n_images,
           (long long)r->val.stats.n_background, (long long)r->val.stats.n_bad_files,
           r->val.reused ? " (label cache reused)" : "");
    return 0;
}

/* The instance of r->spec (made from --device and --threads when spec has no kind yet). */
static int make_backend(train_run *r, yp_err *err) {
    char what[64];
    snprintf(what, sizeof what, "--device %s", r->o.device);
    if (!r->spec.kind && cli_device_spec("--device", r->o.device, r->o.threads, &r->spec, err)) return -1;
    yp_backend_free(r->be);
    r->be = cli_device_open(&r->spec, what, err);
    r->models.be = r->be;
    return r->be ? 0 : -1;
}


/* YOLOv5's check_cache_ram: cache only when the images (at most n x img^2 x 3) with a 10 % margin
 * fit what the machine has available; otherwise say so and train without. */
static void check_cache_ram(train_run *r) {
    r->cache_ram = !strcmp(r->o.cache, "ram");
    if (!r->cache_ram) return;
    int64_t need = yp_image_cache_bytes(r->train.n + (r->have_val ? r->val.n : 0), (int)r->o.img);
    int64_t avail = r->o.mem[0] ? 0 : cli_host_available_bytes();
    yp_err ignored;
    if (r->o.mem[0] && cli_parse_size("--mem", r->o.mem, &avail, &ignored)) avail = 0; /* plan_new says why */
    if (need >= 0 && (double)need * 1.1 < (double)avail) return;
    printf("WARNING: --cache ram: %.1fGB of images with a 10%% margin, %.1fGB available; not caching images\n",
           (double)need / 1e9, (double)avail / 1e9);
    r->cache_ram = 0;
}

/* --cache ram: both splits decoded once, as YOLOv5 caches them before training (the plan's budget
 * already holds them: the host estimate counts them). */
static int fill_caches(train_run *r, yp_err *err) {
    if (!r->cache_ram) return 0;
    for (int k = 0; k < 1 + r->have_val; k++) {
        yp_image_cache *c = k ? &r->val_cache : &r->train_cache;
        const yp_labels *l = k ? &r->val : &r->train;
        /* training resizes as augmenting does; validation and --no-augment as load_image without */
        if (yp_image_cache_fill(c, l, (int)r->o.img, k ? 0 : !r->o.no_augment, (int)r->o.workers, err)) return -1;
        printf("%s: Caching images (%.1fGB ram)%s\n", k ? "val" : "train", (double)c->bytes / 1e9,
               c->failed ? ", some did not decode" : "");
    }
    return 0;
}

/* A yaml's `anchors: N`: AutoAnchor fits them to the training labels before the plan is made, so
 * plan.json (and a resumed run) carries the fitted anchors. */
static int fit_anchors(train_run *r, yp_err *err) {
    if (!r->g->anchors_auto) return 0;
    yp_anchor_fit f;
    if (yp_autoanchor_graph(r->g, &r->train, (int)r->o.img, (uint64_t)r->o.seed, &f, err)) return -1;
    if (f.n_small)
        printf("AutoAnchor: WARNING: extremely small objects found: %lld of %lld labels are < 3 pixels in size\n",
               (long long)f.n_small, (long long)f.n_boxes);
    printf("AutoAnchor: %s gives `anchors: %d`; %s %d anchors to %lld labels, then 1000 generations: "
           "%.2f anchors/target, %.3f Best Possible Recall (BPR), fitness %.4f (from %.4f)\n",
           r->o.model, r->g->na, f.kmeans ? "k-means fitted" : "too few labels for k-means: random start for",
           r->g->nl * r->g->na, (long long)f.n_used, f.after.aat, f.after.bpr, f.after.fitness, f.before.fitness);
    for (int l = 0; l < r->g->nl; l++) {
        int p = 0;
        while ((1 << p) < r->g->strides[l]) p++;
        printf("AutoAnchor: P%d/%d:", p, r->g->strides[l]);
        for (int a = 0; a < r->g->na; a++) printf(" %.0f,%.0f", r->g->anchors[l][a][0], r->g->anchors[l][a][1]);
        printf("\n");
    }
    return 0;
}

/* A new run: data, hyp, model, plan, run folder and its files, executor, --weights. */
static int start_new(train_run *r, yp_err *err) {
    if (load_data(r, err)) return -1;
    yp_hyp_file_default(&r->hyp);
    if (r->o.hyp[0] && yp_hyp_file_read(r->o.hyp, &r->hyp, err)) return -1;
    if (!r->o.mosaic) r->hyp.aug.mosaic = 0.0;
    if (r->o.label_smoothing[0]) r->hyp.label_smoothing = strtod(r->o.label_smoothing, NULL); /* as train.py */
    if (!(r->g = cli_load_model(r->o.model, r->train.stats.nc, err)) || cli_check_rgb(r->g, r->o.model, err))
        return -1;
    if (r->o.noautoanchor && r->g->anchors_auto) /* given anchors are kept anyway: AutoAnchor only fills N */
        return yp_err_set(err, "--noautoanchor: %s gives `anchors: %d`, which only AutoAnchor fills; drop "
                          "--noautoanchor or write the anchors into the yaml", r->o.model, r->g->na);
    r->batch_asked = r->o.batch;
    check_img(r);
    if (fit_anchors(r, err) || make_backend(r, err)) return -1;
    check_cache_ram(r);
    int rc = plan_new(r, err);
    if (rc) return rc;
    if (cli_preflight(r->be, &r->p, &r->so, "train", err)) return -1; /* before the run folder and the arena */
    if (fill_caches(r, err)) return -1;
    if (run_dir_make(r->o.project, r->o.name, r->o.exist_ok, 1, r->dir, sizeof r->dir, err)) return -1;
    if (snprintf(r->o.save_dir, sizeof r->o.save_dir, "%s", r->dir) >= (int)sizeof r->o.save_dir)
        return yp_err_set(err, "--project/--name: the run folder's path is too long");
    r->o.batch = r->p.cand.batch; /* the plan's choice, so that a resumed run has it */
    if (set_paths(r, err)) return -1;
    if (r->o.exist_ok) run_dir_remove_partials(r->dir, stdout); /* an earlier run's, in the folder reused */
    if (write_run_files(r, err)) return -1;
    if (yp_exec_init(&r->x, &r->p, r->be, 0, (uint64_t)r->o.seed + 1, err)) return -1;
    r->have_exec = 1;
    if (print_host_plan(r, err)) return -1;
    if (r->o.weights[0]) {
        yp_ckpt_transfer t;
        if (yp_ckpt_load_weights(&r->x, r->o.weights, stdout, &t, err)) return -1;
    }
    r->st = yp_train_state_initial();
    return 0;
}

/* --resume: the checkpoint's options, its run folder's plan.json and hyp.yaml, its state. */
static int start_resume(train_run *r, yp_err *err) {
    if (r->o.resume[0]) snprintf(r->ckpt, sizeof r->ckpt, "%s", r->o.resume);
    else if (run_dir_latest("runs", r->ckpt, sizeof r->ckpt, err)) return -1;
    yp_ckpt_info info;
    if (yp_ckpt_read_info(r->ckpt, &info, err)) return -1;
    int rc = train_opts_from_json(info.options, &r->o, err) || yp_train_state_parse(info.options, &r->st, err);
    const int stripped = info.stripped;
    yp_ckpt_info_free(&info);
    if (rc) return yp_err_set(err, "--resume %s: %s", r->ckpt, err->msg);
    if (stripped) /* train.py's smart_resume on a checkpoint strip_optimizer wrote (epoch -1) */
        return yp_err_set(err, "%s training to %ld epochs is finished, nothing to resume. Start a new training "
                          "without --resume, i.e. 'yoloplan train --weights %s'", r->ckpt, r->o.epochs, r->ckpt);
    char path[RUN_DIR_PATH + 32];
    if (run_dir_of_checkpoint(r->ckpt, r->dir, sizeof r->dir, err) || set_paths(r, err)) return -1;
    if (r->st.next_epoch >= r->o.epochs) { /* trained to the end, stopped before its checkpoints were stripped */
        run_dir_remove_partials(r->dir, stdout);
        printf("Resuming training from %s: all %ld epochs are trained; stripping its checkpoints\n", r->ckpt,
               r->o.epochs);
        r->finish_only = 1;
        return 0;
    }
    if (load_data(r, err)) return -1;
    run_dir_remove_partials(r->dir, stdout); /* a kill inside a write left them; the files they replace are whole */
    if (path_join(path, sizeof path, r->dir, "hyp.yaml", err) || yp_hyp_file_read(path, &r->hyp, err)) return -1;
    /* the instance first: the plan's conv scratch model may be its card's, asked of it */
    if (make_backend(r, err)) return -1;
    yp_exec_models_init(&r->models, r->be);
    if (path_join(path, sizeof path, r->dir, "plan.json", err) ||
        yp_plan_load_with(path, &r->models.r, &r->p, &r->g, err))
        return -1;
    r->have_plan = 1;
    if (cli_device_spec_of_plan(&r->spec, &r->p)) { /* planned for another thread count: run as planned */
        r->o.threads = r->spec.threads;
        if (make_backend(r, err)) return -1;
    }
    check_cache_ram(r);
    r->batch_asked = r->o.batch, r->max_batch = plan_max_batch(r->train.n, 0);
    cli_search_of_plan(&r->p, r->max_batch, &r->so);
    if (cli_preflight(r->be, &r->p, &r->so, "train --resume", err) || fill_caches(r, err)) return -1;
    if (yp_exec_init(&r->x, &r->p, r->be, 0, (uint64_t)r->o.seed + 1, err)) return -1;
    r->have_exec = 1;
    if (print_host_plan(r, err)) return -1;
    if (yp_ckpt_resume(&r->x, r->ckpt, NULL, err)) return -1;
    if (yp_results_truncate(r->csv, r->st.next_epoch - 1, err)) return -1;
    printf("Resuming training from %s from epoch %lld to %ld total epochs\n", r->ckpt, (long long)r->st.next_epoch,
           r->o.epochs);
    return 0;
}

/* ---------------------------------------------------------------- the end of the run */

/* A signal stopped training (to): the line saying where and how the run goes on (the last
 * checkpoint is the last epoch that finished: the epoch in progress is trained again). */
static void report_interrupt(train_run *r, const yp_train_opts *to) {
    const long long e = to->interrupted_epoch, last = r->o.epochs - 1, saved = r->st.next_epoch - 1;
    fflush(stdout);
    if (saved < 0)
        fprintf(stderr, "yoloplan: interrupted at epoch %lld/%lld (batch %lld of %lld), before any epoch finished: "
                "no checkpoint was written; start the run again\n", e, last, (long long)to->interrupted_batch,
                (long long)to->batches);
    else
        fprintf(stderr, "yoloplan: interrupted at epoch %lld/%lld (batch %lld of %lld); resume with: yoloplan train "
                "--resume %s (it continues from the end of epoch %lld, the last saved)\n", e, last,
                (long long)to->interrupted_batch, (long long)to->batches, r->last, saved);
    r->signal = to->interrupted;
}

/* A signal came after the last epoch, before its checkpoints were all stripped. */
static void report_interrupt_at_end(train_run *r, int sig) {
    fflush(stdout);
    fprintf(stderr, "yoloplan: interrupted after the final epoch %ld/%ld, before its checkpoints were stripped; "
            "finish with: yoloplan train --resume %s (it trains nothing more: it strips them)\n", r->o.epochs - 1,
            r->o.epochs - 1, r->last);
    r->signal = sig;
}

/* train.py's strip_optimizer on last and best: each rewritten with its weights alone (the EMA's),
 * fp16, epoch -1. best first, so that a stripped last says the run is complete (a run stopped
 * between the two resumes to strip again); the lines in train.py's order, last then best. */
static int strip_checkpoints(train_run *r, yp_err *err) {
    const char *files[2] = {r->best, r->last};
    yp_ckpt_strip_result s[2];
    int have[2];
    for (int k = 0; k < 2; k++) {
        have[k] = access(files[k], F_OK) == 0;
        if (*yp_train_signal_flag()) return report_interrupt_at_end(r, *yp_train_signal_flag()), 0;
        if (have[k] && yp_ckpt_strip(files[k], &s[k], err)) return -1;
    }
    for (int k = 1; k >= 0; k--)
        if (have[k]) printf("Optimizer stripped from %s, %.1fMB\n", files[k], (double)s[k].bytes_after / 1e6);
    return 0;
}

/* The epochs left, then the end of the run: the strip and the closing lines. */
static int train_and_finish(train_run *r, yp_err *err) {
    int64_t first = r->st.next_epoch;
    double t0 = yp_now_s();
    if (!r->finish_only) {
        char *opts = train_opts_json(&r->o);
        if (!opts) return yp_err_set(err, "train: out of memory");
        yp_train_opts to = loop_opts(r);
        to.cos_lr = r->o.cos_lr, to.patience = r->o.patience, to.per_class = 1, to.names = r->names;
        to.last_path = r->last, to.best_path = r->best;
        to.options_json = opts, to.console = stdout, to.tty = isatty(STDOUT_FILENO), to.on_epoch = on_epoch;
        to.ctx = r, to.interrupt = yp_train_signal_flag();
        int rc = yp_train_run(&r->x, &to, &r->st, err);
        free(opts);
        if (rc) return -1;
        if (to.interrupted) return report_interrupt(r, &to), 0;
        printf("\n%lld epochs completed in %.3f hours.\n", (long long)(r->st.next_epoch - first),
               (yp_now_s() - t0) / 3600.0);
    }
    if (strip_checkpoints(r, err)) return -1;
    if (!r->signal) printf("Results saved to %s\n", r->dir);
    return 0;
}

static int run(train_run *r, yp_err *err) {
    int rc = r->o.resume_given ? start_resume(r, err) : start_new(r, err);
    if (rc) return rc;
    /* from the first step on, SIGINT and SIGTERM stop the run between batches (yp_train.h) */
    if (yp_train_signals_catch()) return yp_err_set(err, "train: cannot install the SIGINT/SIGTERM handler");
    rc = train_and_finish(r, err);
    yp_train_signals_release();
    return rc;
}

int cmd_train(int argc, char **argv) {
    train_run *r = calloc(1, sizeof *r);
    yp_err err = {0};
    if (!r) return fprintf(stderr, "yoloplan: out of memory\n"), YP_EXIT_USAGE;
    train_opts_default(&r->o);
    int rc = train_opts_parse(argc, argv, &r->o, &err);
    if (!rc) rc = run(r, &err);
    const int sig = r->signal;
    run_free(r);
    free(r);
    if (!rc && sig) return 128 + sig; /* the shell's status of a command a signal ended: 130, 143 */
    if (rc == EXIT_NOFIT_RC) {
        fprintf(stderr, "yoloplan: %s\n", err.msg);
        return YP_EXIT_NOFIT;
    }
    return rc ? cli_fail(&err) : YP_EXIT_OK;
}
