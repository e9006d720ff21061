/* torch.c - the PyTorch target's report (yp_torch_report.h): text and JSON. */
#include <stdio.h>

#include "yp_report.h"
#include "yp_torch_report.h"

const char *yp_fmt_gpu_mem(int64_t bytes, char *buf, size_t n) {
    snprintf(buf, n, "%.3gG", (double)bytes / 1e9);
    return buf;
}

static int64_t smi_mib(const yp_torch_report *r, const yp_torch_train_result *t) {
    return (t->peak_reserved + r->context + (1 << 19)) >> 20;
}

static const char *opt_name(yp_optimizer o) {
    static const char *const names[] = {"SGD", "Adam", "AdamW"};
    return o >= 0 && o < YP_OPT_COUNT ? names[o] : "?";
}

static void head(FILE *f, const yp_torch_report *r, int64_t batch) {
    char mem[32], bs[48] = "";
    if (batch > 0) snprintf(bs, sizeof bs, " --batch-size %lld", (long long)batch);
    fprintf(f, "for Ultralytics train.py (PyTorch eager): %s at %lld%s, %s, %s%s%s on %s (%s; PyTorch can use %.3gG)\n",
            r->model, (long long)r->opts.img, bs, r->opts.amp ? "AMP" : "fp32", opt_name(r->opts.optimizer),
            r->opts.freeze ? ", --freeze" : "", r->opts.multi_scale ? ", --multi-scale" : "", r->gpu->desc,
            yp_fmt_bytes(r->gpu->mem_bytes, mem, sizeof mem), (double)r->capacity / 1e9);
}

/* GPU_mem, nvidia-smi and the peak of one replay. */
static void figures(FILE *f, const yp_torch_report *r, const yp_torch_train_result *t, const char *indent) {
    char e0[16], later[16], pk[16], al[16];
    fprintf(f, "%sGPU_mem train.py prints: %s in epoch 0, %s from epoch 1 (validation at batch %lld, %lldx%lld)\n",
            indent, yp_fmt_gpu_mem(t->gpu_mem_epoch0, e0, sizeof e0),
            yp_fmt_gpu_mem(t->gpu_mem_later, later, sizeof later), (long long)t->val_batch, (long long)t->val_img,
            (long long)t->val_img);
    fprintf(f, "%snvidia-smi: about %lldMiB (the peak of memory_reserved + %lldMiB of CUDA context and libraries)\n",
            indent, (long long)smi_mib(r, t), (long long)((r->context + (1 << 19)) >> 20));
    fprintf(f, "%speak: %s (memory_reserved %s, memory_allocated %s)\n", indent, yp_torch_at_name(t->peak_at),
            yp_fmt_gpu_mem(t->peak_reserved, pk, sizeof pk), yp_fmt_gpu_mem(t->peak_allocated, al, sizeof al));
}

static void autobatch_line(FILE *f, const yp_torch_report *r) {
    if (!r->has_autobatch) return;
    if (r->ab_batch < 0) {
        fprintf(f, "  AutoBatch (--batch-size -1) would fail: every probed batch runs out of memory\n");
        return;
    }
    fprintf(f, "  AutoBatch (--batch-size -1) would pick %lld%s (its probe of batches 1-16, a line, %.0f%% of free): ",
            (long long)r->ab_batch, r->ab_anomaly ? " (its 'CUDA anomaly' fallback)" : "", 100 * r->ab_fraction);
    if (r->ab.oom) fprintf(f, "train.py then runs out of memory in %s\n", yp_torch_at_name(r->ab.oom_at));
    else fprintf(f, "it trains and validates (peak %.3gG)\n", (double)r->ab.peak_reserved / 1e9);
}

/* The speed at the report's batch: images/s and what bounds it, an epoch, the run. */
static void speed_line(FILE *f, const yp_torch_report *r) {
    if (!r->has_speed) return;
    const yp_torch_speed *s = &r->speed;
    fprintf(f, "  speed at --batch-size %lld: %.0f images/s (bound: %s", (long long)s->batch, s->train_images_per_s,
            yp_torch_bound_name(s->bound));
    if (s->workers > 0) fprintf(f, "; %d loader workers deliver %.0f", s->workers, s->loader_images_per_s);
    fprintf(f, "), %.0f s an epoch of %lld images + %.0f s validating %lld%s; %d epochs: %.1f hours\n", s->train_s,
            (long long)s->train_images, s->val_s, (long long)s->val_images,
            r->speed_coco ? " (COCO's train2017/val2017, assumed: no --data)" : "", s->epochs, s->hours);
}

static const char *cache_name(yp_torch_cache c) {
    return c == YP_TORCH_CACHE_RAM ? "--cache ram" : c == YP_TORCH_CACHE_DISK ? "--cache disk" : "no --cache";
}

/* Host RAM at the report's batch: the total, its terms, against what the machine has. */
static void host_line(FILE *f, const yp_torch_report *r) {
    if (!r->has_host) return;
    const yp_torch_host *h = &r->host;
    char t[16], m[16], w[16], q[16], c[16], av[16];
    fprintf(f, "  host RAM: about %s (training process %s, %d + %d loader workers %s, batches in flight %s",
            yp_fmt_gpu_mem(h->total_bytes, t, sizeof t), yp_fmt_gpu_mem(h->main_bytes, m, sizeof m), h->workers,
            h->val_workers, yp_fmt_gpu_mem(h->worker_bytes, w, sizeof w),
            yp_fmt_gpu_mem(h->in_flight_bytes, q, sizeof q));
    if (h->cache_bytes > 0) fprintf(f, ", cached images %s", yp_fmt_gpu_mem(h->cache_bytes, c, sizeof c));
    const yp_torch_host_opts *ho = &r->host_opts;
    fprintf(f, "; %s%s)", cache_name(r->cache_asked),
            r->cache_asked != YP_TORCH_CACHE_RAM || (ho->cache_train && (ho->cache_val || !ho->val_images)) ? ""
            : ho->cache_train ? ", the training images only"
            : ho->cache_val   ? ", the validation images only"
                              : ", refused");
    if (r->host_mem > 0)
        fprintf(f, " of %s available %s: %s\n", yp_fmt_gpu_mem(r->host_mem, av, sizeof av),
                r->host_mem_here ? "on this machine (--mem for another)" : "(--mem)",
                h->total_bytes < r->host_mem ? "fits" : "DOES NOT FIT");
    else fprintf(f, "\n");
    if (r->cache_asked == YP_TORCH_CACHE_RAM && (r->cache_refused_train || r->cache_refused_val)) {
        const yp_torch_host_opts *o = &r->host_opts;
        int64_t refused = (int64_t)(r->cache_refused_train ? (double)o->train_images * o->train_image_bytes
                                                           : (double)o->val_images * o->val_image_bytes);
        fprintf(f, "    --cache ram: check_cache_ram refuses to cache the %s images (%s x 1.1 would not fit), so "
                "train.py %s\n", r->cache_refused_train ? "training" : "validation",
                yp_fmt_gpu_mem(refused, c, sizeof c),
                r->cache_refused_train ? "loads its training images from disk (the speed above is without the cache)"
                                       : "caches the training images only");
    }
    else if (r->cache_asked == YP_TORCH_CACHE_NONE)
        fprintf(f, "    --cache ram would hold %s more%s\n", yp_fmt_gpu_mem(h->cache_would_bytes, c, sizeof c),
                r->host_coco ? " (images assumed COCO's 640x480)" : "");
    fprintf(f, "    (host figures: bytes / 1e9 as GPU_mem; the CUDA libraries' host side in the training "
            "process's %.2gG is an estimate)\n", (double)YP_TORCH_HOST_MAIN_BYTES / 1e9);
}

static void host_remedies(FILE *f, const yp_torch_report *r) {
    if (!r->n_host_remedies) return;
    fprintf(f, "\n  %-36s %9s %11s %10s\n", "host remedy (each alone)", "host RAM", "saves", "images/s");
    for (int i = 0; i < r->n_host_remedies; i++) {
        const yp_torch_host_remedy *m = &r->host_remedies[i];
        char t[16], sv[24], ips[16] = "-";
        yp_fmt_gpu_mem(m->host.total_bytes, t, sizeof t);
        if (m->saves >= 0) yp_fmt_gpu_mem(m->saves, sv, sizeof sv);
        else snprintf(sv, sizeof sv, "costs %.3gG", (double)-m->saves / 1e9);
        if (m->images_per_s > 0) snprintf(ips, sizeof ips, "%.0f", m->images_per_s);
        fprintf(f, "  %-36s %9s %11s %10s\n", m->flag, t, sv, ips);
    }
    fprintf(f, "  (GPU memory is the same with each: the loaders live on the host)\n");
}

void yp_report_torch(FILE *f, const yp_torch_report *r) {
    if (!r->whatif) {
        head(f, r, 0);
        if (r->rec_batch == 0)
            fprintf(f, "  nothing fits: batch 1 runs out of memory with %.0f%% kept free\n", 100 * r->margin);
        else {
            fprintf(f,
                    "  pass --batch-size %lld: the largest that trains and validates with %.0f%% of that kept free\n",
                    (long long)r->rec_batch, 100 * r->margin);
            figures(f, r, &r->rec, "    ");
        }
        speed_line(f, r);
        host_line(f, r);
        autobatch_line(f, r);
        return;
    }
    head(f, r, r->opts.batch);
    char need[16], cap[16];
    if (r->base.oom)
        fprintf(f,
                "  DOES NOT FIT: out of memory in %s (it needs at least %s, the peak of memory_allocated; PyTorch "
                "can use %s)\n",
                yp_torch_at_name(r->base.oom_at), yp_fmt_gpu_mem(r->need.peak_allocated, need, sizeof need),
                yp_fmt_gpu_mem(r->capacity, cap, sizeof cap));
    else {
        fprintf(f, "  FITS\n");
        figures(f, r, &r->base, "    ");
    }
    fprintf(f, "\n  %-36s %9s %11s %10s %5s\n", "remedy (train.py flags, each alone)", "needs", "saves", "GPU_mem",
            "fits");
    for (int i = 0; i < r->n_remedies; i++) {
        const yp_torch_remedy *m = &r->remedies[i];
        char n[16], s[24], gm[16];
        yp_fmt_gpu_mem(m->need, n, sizeof n);
        if (m->saves >= 0) yp_fmt_gpu_mem(m->saves, s, sizeof s);
        else snprintf(s, sizeof s, "costs %.3gG", (double)-m->saves / 1e9);
        if (m->r.oom) snprintf(gm, sizeof gm, "OOM");
        else yp_fmt_gpu_mem(m->r.gpu_mem_later, gm, sizeof gm);
        fprintf(f, "  %-36s %9s %11s %10s %5s\n", m->flag, n, s, gm, m->fits ? "yes" : "no");
    }
    fprintf(f, "  (needs = the peak of memory_allocated, the floor no cache does better than; GPU_mem = what train.py "
            "prints from epoch 1; fits = trains and validates with %.0f%% kept free)\n", 100 * r->margin);
    if (r->rec_batch > 0) fprintf(f, "  recommended: --batch-size %lld\n", (long long)r->rec_batch);
    else fprintf(f, "  recommended: nothing fits, not even --batch-size 1\n");
    speed_line(f, r);
    host_line(f, r);
    host_remedies(f, r);
    autobatch_line(f, r);
}

/* ---------------------------------------------------------------- JSON */

static void add_i64(cJSON *j, const char *k, int64_t v) { cJSON_AddNumberToObject(j, k, (double)v); }

static cJSON *prediction_json(const yp_torch_report *r, const yp_torch_train_result *t, int64_t batch) {
    cJSON *j = cJSON_CreateObject();
    char buf[16];
    add_i64(j, "batch", batch);
    cJSON_AddBoolToObject(j, "oom", t->oom);
    if (t->oom) cJSON_AddStringToObject(j, "oom_at", yp_torch_at_name(t->oom_at));
    else cJSON_AddNullToObject(j, "oom_at");
    cJSON_AddNumberToObject(j, "gpu_mem_epoch0_gb", (double)t->gpu_mem_epoch0 / 1e9);
    cJSON_AddNumberToObject(j, "gpu_mem_gb", (double)t->gpu_mem_later / 1e9);
    cJSON_AddStringToObject(j, "gpu_mem_text", yp_fmt_gpu_mem(t->gpu_mem_later, buf, sizeof buf));
    add_i64(j, "nvidia_smi_mib", smi_mib(r, t));
    add_i64(j, "peak_reserved_bytes", t->peak_reserved);
    add_i64(j, "peak_allocated_bytes", t->peak_allocated);
    cJSON_AddStringToObject(j, "peak_at", yp_torch_at_name(t->peak_at));
    add_i64(j, "train_peak_reserved_bytes", t->train_peak_reserved);
    add_i64(j, "train_peak_allocated_bytes", t->train_peak_allocated);
    add_i64(j, "val_peak_reserved_bytes", t->val_peak_reserved);
    add_i64(j, "val_peak_allocated_bytes", t->val_peak_allocated);
    add_i64(j, "val_batch", t->val_batch);
    add_i64(j, "val_img", t->val_img);
    add_i64(j, "train_img_max", t->train_img_max);
    add_i64(j, "accumulate", t->accumulate);
    cJSON *st = cJSON_AddObjectToObject(j, "state_bytes");
    add_i64(st, "model", t->model_bytes);
    add_i64(st, "ema", t->ema_bytes);
    add_i64(st, "grads", t->grad_bytes);
    add_i64(st, "optimizer", t->optim_bytes);
    return j;
}

static cJSON *config_json(const yp_torch_report *r) {
    cJSON *c = cJSON_CreateObject();
    cJSON_AddStringToObject(c, "model", r->model);
    add_i64(c, "img", r->opts.img);
    if (r->whatif) add_i64(c, "batch", r->opts.batch);
    else cJSON_AddNullToObject(c, "batch");
    cJSON_AddBoolToObject(c, "amp", r->opts.amp);
    cJSON_AddStringToObject(c, "optimizer", opt_name(r->opts.optimizer));
    add_i64(c, "freeze", r->opts.freeze);
    cJSON_AddBoolToObject(c, "multi_scale", r->opts.multi_scale);
    cJSON_AddNumberToObject(c, "labels_per_image", r->opts.labels_per_image);
    cJSON_AddNumberToObject(c, "val_labels_per_image", r->opts.val_labels_per_image);
    return c;
}

static cJSON *gpu_json(const yp_torch_report *r) {
    cJSON *g = yp_report_gpu_json(r->gpu, r->reserve);
    add_i64(g, "cuda_total_bytes", r->gpu->cuda_total_bytes);
    add_i64(g, "context_bytes", r->context);
    add_i64(g, "capacity_bytes", r->capacity);
    return g;
}

static cJSON *rows_json(const yp_torch_report *r) {
    cJSON *a = cJSON_CreateArray();
    for (int i = 0; i < r->n_rows; i++) {
        const yp_torch_probe_row *w = &r->rows[i];
        cJSON *o = cJSON_CreateObject();
        add_i64(o, "batch", w->batch);
        cJSON_AddBoolToObject(o, "failed", w->failed);
        if (w->failed) cJSON_AddNullToObject(o, "reserved_gb");
        else cJSON_AddNumberToObject(o, "reserved_gb", (double)w->reserved / 1e9);
        add_i64(o, "reserved_bytes", w->reserved);
        add_i64(o, "allocated_bytes", w->allocated);
        add_i64(o, "peak_allocated_bytes", w->peak_allocated);
        cJSON_AddItemToArray(a, o);
    }
    return a;
}

static cJSON *autobatch_json(const yp_torch_report *r) {
    cJSON *a = cJSON_CreateObject();
    if (r->ab_batch < 0) cJSON_AddNullToObject(a, "batch");
    else add_i64(a, "batch", r->ab_batch);
    cJSON_AddBoolToObject(a, "anomaly", r->ab_anomaly);
    cJSON_AddNumberToObject(a, "fraction", r->ab_fraction);
    cJSON_AddNumberToObject(a, "predicted_fraction", r->ab_predicted);
    cJSON *s = cJSON_AddObjectToObject(a, "start");
    add_i64(s, "reserved_bytes", r->start.reserved);
    add_i64(s, "allocated_bytes", r->start.allocated);
    cJSON_AddItemToObject(a, "probe", rows_json(r));
    if (r->ab_batch > 0) {
        cJSON_AddBoolToObject(a, "runs_out_of_memory", r->ab.oom);
        cJSON_AddItemToObject(a, "prediction", prediction_json(r, &r->ab, r->ab_batch));
    }
    return a;
}

static cJSON *speed_json(const yp_torch_report *r) {
    const yp_torch_speed *s = &r->speed;
    cJSON *j = cJSON_CreateObject();
    add_i64(j, "batch", s->batch);
    add_i64(j, "accumulate", s->accumulate);
    cJSON_AddNumberToObject(j, "images_per_s", s->train_images_per_s);
    cJSON_AddNumberToObject(j, "gpu_images_per_s", s->gpu_images_per_s);
    if (s->workers > 0) cJSON_AddNumberToObject(j, "loader_images_per_s", s->loader_images_per_s);
    else cJSON_AddNullToObject(j, "loader_images_per_s");
    cJSON_AddStringToObject(j, "bound", yp_torch_bound_name(s->bound));
    add_i64(j, "cpus", s->cpus);
    add_i64(j, "workers", s->workers);
    add_i64(j, "val_workers", s->val_workers);
    cJSON_AddNumberToObject(j, "iteration_s", s->iter_s);
    cJSON_AddNumberToObject(j, "forward_gpu_s", s->fwd_s);
    cJSON_AddNumberToObject(j, "loss_gpu_s", s->loss_s);
    cJSON_AddNumberToObject(j, "backward_gpu_s", s->bwd_s);
    cJSON_AddNumberToObject(j, "optimizer_step_gpu_s", s->step_s);
    cJSON_AddNumberToObject(j, "host_s", s->host_s);
    add_i64(j, "train_images", s->train_images);
    add_i64(j, "val_images", s->val_images);
    cJSON_AddStringToObject(j, "dataset", r->speed_coco ? "coco (assumed)" : "--data");
    cJSON_AddNumberToObject(j, "train_epoch_s", s->train_s);
    cJSON_AddNumberToObject(j, "val_epoch_s", s->val_s);
    cJSON_AddNumberToObject(j, "epoch_s", s->epoch_s);
    add_i64(j, "epochs", s->epochs);
    cJSON_AddNumberToObject(j, "hours", s->hours);
    return j;
}

static cJSON *host_json_of(const yp_torch_host *h) {
    cJSON *j = cJSON_CreateObject();
    add_i64(j, "total_bytes", h->total_bytes);
    add_i64(j, "process_bytes", h->main_bytes);
    add_i64(j, "workers_bytes", h->worker_bytes);
    add_i64(j, "in_flight_bytes", h->in_flight_bytes);
    add_i64(j, "cache_bytes", h->cache_bytes);
    add_i64(j, "cache_ram_would_bytes", h->cache_would_bytes);
    add_i64(j, "workers", h->workers);
    add_i64(j, "val_workers", h->val_workers);
    return j;
}

static cJSON *host_json(const yp_torch_report *r) {
    cJSON *j = host_json_of(&r->host);
    add_i64(j, "batch", r->host_opts.batch);
    cJSON_AddStringToObject(j, "cache_asked", cache_name(r->cache_asked));
    cJSON_AddStringToObject(j, "cache", cache_name(r->cache));
    cJSON_AddBoolToObject(j, "cache_refused_train", r->cache_refused_train);
    cJSON_AddBoolToObject(j, "cache_refused_val", r->cache_refused_val);
    cJSON_AddBoolToObject(j, "image_sizes_assumed", r->host_coco);
    cJSON_AddNumberToObject(j, "train_image_bytes", r->host_opts.train_image_bytes);
    cJSON_AddNumberToObject(j, "val_image_bytes", r->host_opts.val_image_bytes);
    if (r->host_mem > 0) {
        add_i64(j, "available_bytes", r->host_mem);
        cJSON_AddStringToObject(j, "available_from", r->host_mem_here ? "this machine" : "--mem");
        cJSON_AddBoolToObject(j, "fits", r->host.total_bytes < r->host_mem);
    } else {
        cJSON_AddNullToObject(j, "available_bytes");
        cJSON_AddNullToObject(j, "fits");
    }
    add_i64(j, "process_base_bytes", YP_TORCH_HOST_MAIN_BYTES);
    add_i64(j, "worker_base_bytes", YP_TORCH_HOST_WORKER_BYTES);
    return j;
}

cJSON *yp_report_torch_json(const yp_torch_report *r) {
    cJSON *j = cJSON_CreateObject();
    cJSON_AddStringToObject(j, "format", "yoloplan-pytorch");
    cJSON_AddNumberToObject(j, "version", 1);
    cJSON_AddItemToObject(j, "gpu", gpu_json(r));
    cJSON_AddItemToObject(j, "config", config_json(r));
    cJSON_AddNumberToObject(j, "margin", r->margin);
    cJSON *rec = cJSON_AddObjectToObject(j, "recommended");
    if (r->rec_batch > 0) {
        add_i64(rec, "batch", r->rec_batch);
        cJSON_AddItemToObject(rec, "prediction", prediction_json(r, &r->rec, r->rec_batch));
    } else {
        cJSON_AddNullToObject(rec, "batch");
    }
    if (r->has_autobatch) cJSON_AddItemToObject(j, "autobatch", autobatch_json(r));
    if (r->has_speed) cJSON_AddItemToObject(j, "speed", speed_json(r));
    else cJSON_AddNullToObject(j, "speed");
    if (r->has_host) cJSON_AddItemToObject(j, "host", host_json(r));
    else cJSON_AddNullToObject(j, "host");
    if (r->whatif) {
        cJSON *w = cJSON_AddObjectToObject(j, "whatif");
        add_i64(w, "batch", r->opts.batch);
        cJSON_AddBoolToObject(w, "fits", !r->base.oom);
        cJSON_AddItemToObject(w, "need", prediction_json(r, &r->need, r->opts.batch));
        cJSON_AddItemToObject(w, "on_card", prediction_json(r, &r->base, r->opts.batch));
        cJSON *rs = cJSON_AddArrayToObject(w, "remedies");
        for (int i = 0; i < r->n_remedies; i++) {
            const yp_torch_remedy *m = &r->remedies[i];
            cJSON *o = cJSON_CreateObject();
            cJSON_AddStringToObject(o, "flag", m->flag);
            add_i64(o, "need_bytes", m->need);
            add_i64(o, "saves_bytes", m->saves);
            cJSON_AddBoolToObject(o, "fits", m->fits);
            cJSON_AddItemToObject(o, "prediction", prediction_json(r, &m->r, m->opts.batch));
            cJSON_AddItemToArray(rs, o);
        }
        cJSON *hs = cJSON_AddArrayToObject(w, "host_remedies");
        for (int i = 0; i < r->n_host_remedies; i++) {
            const yp_torch_host_remedy *m = &r->host_remedies[i];
            cJSON *o = cJSON_CreateObject();
            cJSON_AddStringToObject(o, "flag", m->flag);
            add_i64(o, "saves_bytes", m->saves);
            if (m->images_per_s > 0) cJSON_AddNumberToObject(o, "images_per_s", m->images_per_s);
            else cJSON_AddNullToObject(o, "images_per_s");
            cJSON_AddItemToObject(o, "host", host_json_of(&m->host));
            cJSON_AddItemToArray(hs, o);
        }
    }
    return j;
}

/* ---------------------------------------------------------------- --profile autobatch */

void yp_report_autobatch(FILE *f, const yp_torch_report *r) {
    const double gib = 1073741824.0;
    double t = (double)r->gpu->cuda_total_bytes / gib, rr = (double)r->start.reserved / gib,
           a = (double)r->start.allocated / gib;
    fprintf(f, "AutoBatch: Computing optimal batch size for --imgsz %lld (%s, %s)\n", (long long)r->opts.img, r->model,
            r->opts.amp ? "AMP" : "fp32");
    fprintf(f, "AutoBatch: CUDA:0 (%s) %.2fG total, %.2fG reserved, %.2fG allocated, %.2fG free\n", r->gpu->desc, t, rr,
            a, t - (rr + a));
    fprintf(f, "%12s%14s%16s\n", "batch", "GPU_mem (GB)", "allocated (GB)");
    for (int i = 0; i < r->n_rows; i++) {
        if (r->rows[i].failed) fprintf(f, "%12lld%14s%16s\n", (long long)r->rows[i].batch, "CUDA OOM", "-");
        else
            fprintf(f, "%12lld%14.3f%16.3f\n", (long long)r->rows[i].batch, (double)r->rows[i].reserved / 1e9,
                    (double)r->rows[i].allocated / 1e9);
    }
    if (r->ab_batch < 0) fprintf(f, "AutoBatch: every size failed; AutoBatch itself raises in its line fit\n");
    else
        fprintf(f, "AutoBatch: Using batch-size %lld for CUDA:0 %.2fG/%.2fG (%.0f%%)%s\n", (long long)r->ab_batch,
                t * r->ab_predicted, t, 100 * r->ab_predicted, r->ab_anomaly ? " (the 'CUDA anomaly' fallback)" : "");
    if (r->ab_batch > 0)
        fprintf(f, "train.py at batch %lld: %s\n", (long long)r->ab_batch,
                r->ab.oom ? (r->ab.oom_at == YP_TORCH_AT_VAL ? "runs out of memory in validation"
                                                               : "runs out of memory in training")
                          : "trains and validates");
}

cJSON *yp_report_autobatch_json(const yp_torch_report *r) {
    cJSON *j = cJSON_CreateObject();
    cJSON_AddStringToObject(j, "format", "yoloplan-autobatch");
    cJSON_AddNumberToObject(j, "version", 1);
    cJSON_AddItemToObject(j, "gpu", gpu_json(r));
    cJSON_AddItemToObject(j, "config", config_json(r));
    cJSON_AddItemToObject(j, "rows", rows_json(r));
    cJSON *a = autobatch_json(r);
    cJSON_DeleteItemFromObject(a, "probe");
    cJSON_AddItemToObject(j, "autobatch", a);
    return j;
}
