/* plan_args.c - option parsing for the planner command. Every bad value gets one line naming the
 * option, the value and the fix (exit 2 in the caller). */
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "plan_args.h"
#include "yp_backend.h"
#include "yp_dataset.h"
#include "yp_executor.h"
#include "yp_models.h"


static int add_model(plan_args *a, const char *spec, yp_err *err) {
    yp_search_opts *o = &a->search;
    if (o->n_models == YP_SEARCH_MAX_MODELS)
        return yp_err_set(err, "--model: at most %d models", YP_SEARCH_MAX_MODELS);
    yp_graph *g = cli_load_model(spec, a->data_nc, err);
    if (!g) return -1;
    a->owned[o->n_models] = g;
    o->models[o->n_models++] = g;
    return 0;
}

static int parse_models(plan_args *a, const char *v, yp_err *err) {
    if (!strcmp(v, "all")) {
        int n = 0;
        const yp_model_blob *m = yp_models_list(&n);
        for (int i = 0; i < n; i++)
            if (add_model(a, m[i].name, err)) return -1;
        return 0;
    }
    if (strlen(v) >= 512) return yp_err_set(err, "--model: %zu characters; name at most a few models", strlen(v));
    char buf[512];
    snprintf(buf, sizeof buf, "%s", v);
    /* every comma-separated name must be there: "" and "a,,b" name nothing */
    for (char *p = buf, *next;; p = next + 1) {
        next = strchr(p, ',');
        if (next) *next = 0;
        if (!*p)
            return yp_err_set(err, "--model \"%s\": an empty model name; give bundled names, IR .json or model .yaml "
                              "files, separated by single commas (e.g. yolov5n,yolov5s)", v);
        if (add_model(a, p, err)) return -1;
        if (!next) break;
    }
    return 0;
}

/* --img 640 | 640x480 | all (320..1280) | 320-960 (every multiple of 32 between). */
static int parse_sizes(yp_search_opts *o, const char *v, yp_err *err) {
    long lo = 0, hi = 0;
    o->n_sizes = 0;
    if (!strcmp(v, "all")) lo = 320, hi = 1280;
    else if (strchr(v, '-')) {
        char *end;
        lo = strtol(v, &end, 10);
        hi = *end == '-' ? strtol(end + 1, &end, 10) : 0;
        if (*end || lo < 32 || hi < lo || hi > 8192)
            return yp_err_set(err, "--img %s: expected a range like 320-1280 (multiples of 32)", v);
    }
    if (hi) {
        long n = hi / 32 - (lo + 31) / 32 + 1;
        if (n > YP_SEARCH_MAX_SIZES)
            return yp_err_set(err,
                              "--img %s: %ld sizes (multiples of 32); one search takes at most %d; narrow the range", v,
                              n, YP_SEARCH_MAX_SIZES);
        if (n < 1) return yp_err_set(err, "--img %s: no multiple of 32 in the range; widen it", v);
        for (long s = (lo + 31) / 32 * 32; s <= hi && o->n_sizes < YP_SEARCH_MAX_SIZES; s += 32)
            o->size_w[o->n_sizes] = o->size_h[o->n_sizes] = s, o->n_sizes++;
        return 0;
    }
    if (cli_parse_img(v, &o->size_w[0], &o->size_h[0], err)) return -1;
    o->n_sizes = 1;
    return 0;
}

/* The card this machine has, measured; pa->card_model its cuDNN scratch model ("cuda:CARD"), asked
 * of the instance kept in pa->card (and lent to pa->models). */
static int gpu_auto(plan_args *pa, yp_err *err) {
    char why[256], name[128];
    yp_backend *be = yp_backend_cuda_new(0, why, sizeof why);
    int64_t total = 0, free_b = 0;
    yp_gpu *gpu = &pa->gpu;
    if (!be || !be->device_info || be->device_info(be, name, sizeof name, &total, &free_b)) {
        yp_err_set(err, "--gpu auto: no GPU to ask (%s); give the card (e.g. --gpu rtx3070) or its memory "
                   "(e.g. --gpu 8GB)", be ? be->last_error(be) : why);
        yp_backend_free(be);
        return -1;
    }
    yp_exec_card_model(be, pa->card_model, sizeof pa->card_model);
    yp_backend_free(pa->card);
    pa->card = pa->models.be = be;
    yp_gpu_from_device(name, total, gpu);
    /* measured: what the context and handles already took is outside our budget */
    gpu->fixed_bytes = total - free_b > gpu->fixed_bytes ? total - free_b : gpu->fixed_bytes;
    return 0;
}

static int one_of(const char *opt, const char *v, const char *const *names, int n, yp_err *err) {
    for (int i = 0; i < n; i++)
        if (!strcmp(v, names[i])) return i;
    char list[160] = "";
    for (int i = 0; i < n; i++) {
        strncat(list, names[i], sizeof list - strlen(list) - 3);
        if (i + 1 < n) strncat(list, ", ", sizeof list - strlen(list) - 1);
    }
    yp_err_set(err, "%s %s: expected one of %s", opt, v, list);
    return -1;
}

/* --data: the dataset's classes size the Detect head, its image count the RAM cache, and its
 * most-labelled image the target-assignment buffers (the worst batch, not the first one). */
static int scan_data(plan_args *pa, const char *path, yp_err *err) {
    yp_dataset_stats st;
    if (yp_dataset_scan(path, &st, err)) return -1;
    pa->data_nc = st.nc;
    pa->n_images = st.n_images;
    pa->search.base.labels_per_image = st.max_labels > 0 ? (double)st.max_labels : 1.0;
    pa->data_stats = st;
    pa->has_data = 1, pa->data_path = path;
    yp_dataset_stats val; /* the speed prediction's validation pass; a set without val trains with --noval */
    yp_err why;
    pa->n_val_images = yp_dataset_scan_split(path, "val", &val, &why) ? 0 : val.n_images;
    return 0;
}

typedef struct {
    const char *gpu, *model, *img, *precision, *ckpt, *mosaic, *data, *scratch, *target, *profile;
    const char *cache, *mem;
    long batch, freeze, max_batch, epochs, cpus, workers;
    int workers_given;
    int policy_given, ckpt_given, labels_given, images_given, top_given, no_ema;
} raw_opts;

/* train.py's spellings of the planner's options, so that a train.py command line can be pasted. */
static const char *canonical(const char *a) {
    static const char *const alias[][2] = {
        {"--batch-size", "--batch"}, {"--imgsz", "--img"}, {"--img-size", "--img"}, {"--cfg", "--model"}};
    for (size_t i = 0; i < sizeof alias / sizeof *alias; i++)
        if (!strcmp(a, alias[i][0])) return alias[i][1];
    return a;
}

/* Options that take a value; returns 1 if `a` was one (consuming v), 0 if not, -1 on error. */
static int value_opt(plan_args *pa, raw_opts *r, const char *a, const char *v, yp_err *err) {
    yp_candidate *b = &pa->search.base;
    static const char *const mosaic_names[] = {"off", "on", "both"};
    static const char *const format_names[] = {"svg", "png"};
    if (!strcmp(a, "--gpu")) r->gpu = v;
    else if (!strcmp(a, "--model")) r->model = v;
    else if (!strcmp(a, "--img")) r->img = v;
    else if (!strcmp(a, "--precision")) r->precision = v;
    else if (!strcmp(a, "--ckpt")) r->ckpt = v, r->ckpt_given = 1;
    else if (!strcmp(a, "--data")) r->data = v;
    else if (!strcmp(a, "--scratch")) r->scratch = v;
    else if (!strcmp(a, "--target")) r->target = v;
    else if (!strcmp(a, "--profile")) r->profile = v;
    else if (!strcmp(a, "--mosaic")) {
        if (one_of(a, v, mosaic_names, 3, err) < 0) return -1;
        r->mosaic = v;
    } else if (!strcmp(a, "--batch")) {
        if (cli_parse_int(a, v, 1, YP_MAX_BATCH, &r->batch, err)) return -1;
    } else if (!strcmp(a, "--max-batch")) {
        long mb;
        if (cli_parse_int(a, v, 1, YP_MAX_BATCH, &mb, err)) return -1;
        pa->search.max_batch = mb, r->max_batch = mb;
    } else if (!strcmp(a, "--epochs")) {
        if (cli_parse_int(a, v, 1, 100000, &r->epochs, err)) return -1;
    } else if (!strcmp(a, "--workers")) {
        if (cli_parse_int(a, v, 0, 4096, &r->workers, err)) return -1;
        r->workers_given = 1;
    } else if (!strcmp(a, "--mem")) {
        r->mem = v;
    } else if (!strcmp(a, "--cpus")) {
        if (cli_parse_int(a, v, 1, 4096, &r->cpus, err)) return -1;
    } else if (!strcmp(a, "--freeze")) {
        if (cli_parse_int(a, v, 0, 63, &r->freeze, err)) return -1;
    } else if (!strcmp(a, "--optimizer")) {
        int o = yp_optimizer_parse(v);
        if (o < 0) return yp_err_set(err, "--optimizer %s: expected one of sgd, adam, adamw", v);
        b->optimizer = (yp_optimizer)o;
    } else if (!strcmp(a, "--policy")) {
        int p = yp_save_policy_parse(v);
        if (p < 0) return yp_err_set(err, "--policy %s: expected yoloplan, yoloplan+cat or pytorch", v);
        b->policy = (yp_save_policy)p, r->policy_given = 1;
    } else if (!strcmp(a, "--labels")) {
        char *end;
        double l = strtod(v, &end);
        if (*end || !(l >= 0 && l <= 10000))
            return yp_err_set(err, "--labels %s: expected the mean labels per image, a number in 0..10000", v);
        b->labels_per_image = l, r->labels_given = 1;
    } else if (!strcmp(a, "--reserve")) {
        if (cli_parse_size(a, v, &pa->reserve, err)) return -1;
        pa->reserve_given = 1;
    } else if (!strcmp(a, "--top")) {
        long k;
        if (cli_parse_int(a, v, 1, 1000, &k, err)) return -1;
        pa->top_k = (int)k, r->top_given = 1, pa->top_given = 1;
    } else if (!strcmp(a, "--row")) {
        long k;
        if (cli_parse_int(a, v, 1, 1000, &k, err)) return -1;
        pa->row = (int)k;
    } else if (!strcmp(a, "--images")) {
        long k;
        if (cli_parse_int(a, v, 1, 1L << 30, &k, err)) return -1;
        pa->n_images = k, r->images_given = 1;
    } else if (!strcmp(a, "--save-plan")) pa->save_plan = v;
    else if (!strcmp(a, "--load-plan")) pa->load_plan = v;
    else if (!strcmp(a, "--timeline")) pa->timeline = v;
    else if (!strcmp(a, "--format")) {
        if (one_of(a, v, format_names, 2, err) < 0) return -1;
        pa->format = v;
    } else
        return 0;
    return 1;
}

/* --scratch MODEL: the conv scratch rule every plan of the search is made with (planner/yp_scratch.h;
 * the backends' models resolved by the executor's resolver). A backend's model plans for its
 * executor: with the schedule fusions that executor runs (what it would plan itself with,
 * yp_exec_candidate_for), and in the precisions it trains in (the CPU's oneDNN model: fp32 only),
 * to which the search keeps. */
static int scratch_model(plan_args *pa, const raw_opts *r, yp_err *err) {
    yp_err why;
    if (yp_candidate_set_scratch(&pa->search.base, r->scratch, &pa->models.r, &why))
        return yp_err_set(err, "--scratch: %s", why.msg);
    pa->search.base.fusions = yp_exec_model_fusions(r->scratch);
    yp_scratch_model m;
    if (yp_scratch_model_parse(r->scratch, &m, NULL, 0)) return 0; /* im2col: plans for any backend */
    const unsigned all = (1u << YP_PREC_COUNT) - 1, runs = yp_exec_kind_precisions(m.kind);
    if (runs == all) return 0;
    int asked = r->precision ? yp_precision_parse(r->precision) : -1; /* -1: all, given or not */
    if (r->precision && (asked < 0 || !(runs & 1u << asked))) {
        char names[64] = "";
        for (int p = 0; p < YP_PREC_COUNT; p++)
            if (runs & 1u << p)
                snprintf(names + strlen(names), sizeof names - strlen(names), "%s%s", names[0] ? ", " : "",
                         yp_precision_name((yp_precision)p));
        return yp_err_set(err, "--scratch %s plans for the %s executor, which trains in %s only; drop --precision %s",
                          r->scratch, m.kind->label, names, r->precision);
    }
    pa->search.prec_mask &= runs, pa->remedy_prec_mask &= runs;
    return 0;
}

/* --gpu G (a card, its memory or auto) and the --reserve it leaves room for. */
static int parse_gpu(plan_args *pa, const char *v, yp_err *err) {
    if (!strcmp(v, "auto") ? gpu_auto(pa, err) : yp_gpu_parse(v, &pa->gpu, err))
        return -1;
    if (pa->gpu.mem_bytes <= pa->gpu.fixed_bytes)
        return yp_err_set(err, "--gpu %s: %s has %.2f GiB, no more than the %.2f GiB the CUDA context and libraries "
                          "take on any card; give a card with more memory", v, pa->gpu.desc,
                          (double)pa->gpu.mem_bytes / 1073741824.0, (double)pa->gpu.fixed_bytes / 1073741824.0);
    if (pa->reserve >= pa->gpu.mem_bytes - pa->gpu.fixed_bytes)
        return yp_err_set(err, "--reserve: %.2f GiB leaves nothing of %s's %.2f GiB (%.2f GiB go to the CUDA context "
                          "and libraries); reserve less", (double)pa->reserve / 1073741824.0, pa->gpu.desc,
                          (double)pa->gpu.mem_bytes / 1073741824.0, (double)pa->gpu.fixed_bytes / 1073741824.0);
    return 0;
}

static int apply(plan_args *pa, const raw_opts *r, yp_err *err) {
    yp_search_opts *o = &pa->search;
    if (pa->load_plan && r->data)
        return yp_err_set(err, "--data with --load-plan: a saved plan keeps the dataset figures it was made with; drop "
                          "--data, or plan again with it");
    if (pa->load_plan && (r->model || r->img || r->batch || r->precision || r->ckpt || r->scratch))
        return yp_err_set(err, "--load-plan replays a saved plan as it is; drop --model, --img, --batch, --precision, "
                          "--ckpt and --scratch (--gpu G asks whether it fits card G)");
    /* --load-plan F --gpu G: does the saved plan fit card G? (cli/plan_card.c) */
    if (pa->load_plan) return r->gpu ? (pa->load_on_gpu = 1, parse_gpu(pa, r->gpu, err)) : 0;
    if (r->data && scan_data(pa, r->data, err)) return -1;
    if (!r->gpu)
        return yp_err_set(
            err, "--gpu is required: the card (rtx3070, t4, a100-40gb, ...), its memory (8GB, 8192MiB) or auto");
    if (parse_gpu(pa, r->gpu, err)) return -1;
    if (parse_models(pa, r->model ? r->model : "yolov5s", err) || parse_sizes(o, r->img ? r->img : "640", err))
        return -1;
    if (r->img && strcmp(r->img, "all") && !strchr(r->img, '-')) { /* one size: train.py's check_img_size */
        int64_t gs = 32;
        for (int m = 0; m < o->n_models; m++) {
            int64_t g = yp_stride_gs(yp_graph_max_stride(o->models[m]));
            if (g > gs) gs = g;
        }
        o->size_w[0] = cli_check_img_size(o->size_w[0], gs, 2 * gs, stderr);
        o->size_h[0] = strchr(r->img, 'x') ? cli_check_img_size(o->size_h[0], gs, 2 * gs, stderr) : o->size_w[0];
    }
    for (int m = 0; m < o->n_models; m++) {
        int s = yp_graph_max_stride(o->models[m]);
        for (int k = 0; k < o->n_sizes; k++)
            if (o->size_w[k] % s || o->size_h[k] % s)
                return yp_err_set(err, "--img %lldx%lld: must be a multiple of %d (the largest stride of %s); try %lld",
                                  (long long)o->size_w[k], (long long)o->size_h[k], s, o->models[m]->name,
                                  (long long)((o->size_w[k] + s - 1) / s * s));
        if (r->freeze >= o->models[m]->n_layers)
            return yp_err_set(err, "--freeze %ld: %s has %d layers; freezing all of them leaves nothing to train",
                              r->freeze, o->models[m]->name, o->models[m]->n_layers);
    }
    o->base.freeze = (int)r->freeze;
    if (r->precision && strcmp(r->precision, "all")) {
        int p = yp_precision_parse(r->precision);
        if (p < 0) return yp_err_set(err, "--precision %s: expected fp32, amp-fp16, amp-bf16 or all", r->precision);
        if (p == YP_PREC_AMP_BF16 && pa->gpu.bf16_tflops <= 0)
            return yp_err_set(err, "--precision amp-bf16: %s has no bf16 support; use amp-fp16", pa->gpu.desc);
        o->prec_mask = 1u << p;
    }
    if (r->scratch && scratch_model(pa, r, err)) return -1;
    if (!r->scratch && pa->card_model[0]) { /* --gpu auto: each conv's workspace as this card's cuDNN picks it */
        raw_opts card = *r;
        card.scratch = pa->card_model;
        if (scratch_model(pa, &card, err)) return -1;
    }
    o->mosaic_mask = !r->mosaic || !strcmp(r->mosaic, "both") ? 3 : !strcmp(r->mosaic, "on") ? 2 : 1;
    if (r->ckpt_given && r->policy_given && o->base.policy == YP_SAVE_PYTORCH && strcmp(r->ckpt, "none"))
        return yp_err_set(err, "--ckpt %s with --policy pytorch: checkpoint sets need the yoloplan saving policy; drop "
                          "one of them", r->ckpt);
    if (r->ckpt && strcmp(r->ckpt, "front")) {
        if (o->n_models != 1)
            return yp_err_set(err, "--ckpt %s: a checkpoint set names layers of one model; pin --model too", r->ckpt);
        if (yp_front_parse_layers(o->models[0], r->ckpt, &o->base.ckpt_layers, err)) return -1;
        o->ckpt_pinned = 1;
    }
    o->batch = r->batch;
    /* --save-plan and --timeline write the what-if's plan: an output flag never changes the answer */
    pa->whatif = r->batch > 0 && o->n_models == 1 && o->n_sizes == 1;
    if (pa->whatif && pa->row)
        return yp_err_set(err, "--row %d picks a row of the table; a what-if (--batch with one model and one size) has "
                          "one plan: drop --row", pa->row);
    if (pa->top_k && pa->row > pa->top_k)
        return yp_err_set(err, "--row %d: the table has %d rows; raise --top or pick a smaller row", pa->row,
                          pa->top_k);
    return 0;
}

/* --target pytorch (and --profile autobatch): train.py's own options only, one model at one
 * square size; the planner's options that train.py has no counterpart for are refused. */
static int torch_target(plan_args *pa, const raw_opts *r, yp_err *err) {
    if (r->target && strcmp(r->target, "pytorch") && strcmp(r->target, "yoloplan"))
        return yp_err_set(err, "--target %s: expected yoloplan (the planner's own executor, the default) or pytorch "
                          "(Ultralytics train.py)", r->target);
    if (r->profile && strcmp(r->profile, "autobatch"))
        return yp_err_set(err, "--profile %s: expected autobatch (AutoBatch's probe of batches 1-16)", r->profile);
    if (r->profile && r->target && !strcmp(r->target, "yoloplan"))
        return yp_err_set(err, "--profile autobatch reproduces Ultralytics' AutoBatch; use it with --target pytorch, "
                          "not --target yoloplan");
    pa->torch = (r->target && !strcmp(r->target, "pytorch")) || r->profile;
    pa->torch_profile = r->profile != NULL;
    if (!pa->torch && (r->epochs || r->cpus || r->workers_given || r->cache || r->mem))
        return yp_err_set(err, "--epochs, --cpus, --workers, --cache and --mem describe a run of train.py (its speed "
                          "and host memory); use them with --target pytorch");
    if (!pa->torch) return 0;
    const yp_search_opts *o = &pa->search;
    static const struct {
        const char *opt;
        size_t at;
    } none[] = {{"--ckpt", offsetof(raw_opts, ckpt)}, {"--mosaic", offsetof(raw_opts, mosaic)},
                {"--scratch", offsetof(raw_opts, scratch)}};
    for (size_t i = 0; i < sizeof none / sizeof *none; i++)
        if (*(const char *const *)((const char *)r + none[i].at))
            return yp_err_set(err, "%s: train.py has no such option; drop it with --target pytorch", none[i].opt);
    if (r->policy_given) return yp_err_set(err, "--policy: train.py saves what PyTorch's autograd saves; drop --policy "
                                           "with --target pytorch");
    if (r->no_ema) return yp_err_set(err, "--no-ema: train.py always keeps an EMA; drop it with --target pytorch");
    if (pa->load_plan || pa->save_plan || pa->timeline)
        return yp_err_set(err, "--target pytorch predicts train.py and makes no plan: drop --load-plan, --save-plan "
                          "and --timeline");
    if (r->top_given || pa->row) return yp_err_set(err, "--top/--row choose rows of the planner's table; drop them "
                                                   "with --target pytorch");
    if (r->images_given && pa->has_data)
        return yp_err_set(err, "--images %lld: --data already says how many images the dataset has; drop --images",
                          (long long)pa->n_images);
    if (o->n_models != 1)
        return yp_err_set(err, "--model: --target pytorch predicts one model at a time; give one (e.g. --model "
                          "yolov5s)");
    if (o->n_sizes != 1 || o->size_w[0] != o->size_h[0])
        return yp_err_set(err, "--img: train.py trains one square size (--img 640); give one number, not a list, a "
                          "range or WxH");
    /* one size is two strides or more: apply() rounded it up as check_img_size does */
    pa->torch_max_batch = r->max_batch ? r->max_batch : 1024; /* AutoBatch's own bound */
    pa->torch_epochs = r->epochs ? (int)r->epochs : 300;
    pa->torch_cpus = r->cpus ? (int)r->cpus : 8; /* the README's machine: an AWS p3.2xlarge, 8 vCPUs */
    pa->torch_workers = r->workers_given ? (int)r->workers : YP_TORCH_DEFAULT_WORKERS;
    pa->torch_cache = !r->cache ? YP_TORCH_CACHE_NONE : !strcmp(r->cache, "ram") ? YP_TORCH_CACHE_RAM
                                                                                   : YP_TORCH_CACHE_DISK;
    if (r->mem && cli_parse_size("--mem", r->mem, &pa->host_mem, err)) return -1;
    pa->host_mem_given = r->mem != NULL;
    if (!r->mem) pa->host_mem = cli_host_available_bytes();
    pa->torch_amp = 1;
    if (r->precision && !strcmp(r->precision, "fp32")) pa->torch_amp = 0;
    else if (r->precision && strcmp(r->precision, "amp-fp16") && strcmp(r->precision, "all"))
        return yp_err_set(err, "--precision %s: train.py trains with AMP in fp16 (amp-fp16, the default) or without "
                          "it (fp32)", r->precision);
    if (pa->torch_profile && r->batch)
        return yp_err_set(err, "--profile autobatch probes batches 1, 2, 4, 8 and 16 itself; drop --batch %ld",
                          r->batch);
    return 0;
}

int plan_args_parse(int argc, char **argv, plan_args *pa, yp_err *err) {
    memset(pa, 0, sizeof *pa);
    yp_exec_models_init(&pa->models, NULL);
    pa->search = yp_search_opts_default();
    pa->top_k = 10;
    pa->remedy_prec_mask = (1u << YP_PREC_COUNT) - 1;
    pa->format = "svg";
    raw_opts r = {0};
    err->msg[0] = 0;
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "plan")) continue;
        if (!strcmp(a, "--json")) pa->json = 1;
        else if (!strcmp(a, "--all")) pa->top_k = 0, r.top_given = 1, pa->top_given = 1;
        else if (!strcmp(a, "--no-ema")) pa->search.base.ema = 0, r.no_ema = 1;
        else if (!strcmp(a, "--multi-scale")) pa->search.base.multi_scale = 1;
        else if (!strcmp(a, "--cache")) { /* train.py's --cache [ram|disk]: bare means ram */
            int given = v && (!strcmp(v, "ram") || !strcmp(v, "disk"));
            r.cache = given ? v : "ram";
            i += given;
        } else {
            int k = v ? value_opt(pa, &r, canonical(a), v, err) : 0;
            if (k < 0) return -1;
            if (k == 0)
                return yp_err_set(err, "unknown or incomplete option \"%s\"; see `yoloplan help`", a);
            i++;
        }
    }
    if (apply(pa, &r, err) || torch_target(pa, &r, err)) return -1;
    /* an image count (--images, --data) prices the RAM cache: the table's host line, the what-if's note */
    if (pa->n_images > 0) pa->search.base.pipe.cache = YP_CACHE_RAM;
    if (!pa->torch && (!pa->load_plan || pa->load_on_gpu) && !pa->reserve_given)
        pa->reserve = pa->gpu.mem_bytes * YP_DEFAULT_MARGIN_PCT / 100;
    return 0;
}

void plan_args_free(plan_args *a) {
    for (int i = 0; i < a->search.n_models; i++) yp_graph_free(a->owned[i]);
    memset(a->owned, 0, sizeof a->owned);
    yp_exec_models_free(&a->models);
    yp_backend_free(a->card);
    a->card = a->models.be = NULL;
}
