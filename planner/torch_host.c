/* torch_host.c - train.py's host memory (yp_torch_host.h). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "yp_torch_host.h"

static int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }

int yp_torch_train_workers(int cpus, int64_t batch, int workers_opt) {
    return (int)min64(min64(cpus, batch > 1 ? batch : 0), workers_opt);
}

int yp_torch_val_workers(int cpus, int64_t batch, int workers_opt) {
    return (int)min64(min64(cpus, 2 * batch > 1 ? 2 * batch : 0), 2 * (int64_t)workers_opt);
}

double yp_torch_resized_bytes(int64_t w0, int64_t h0, int64_t img) {
    if (w0 <= 0 || h0 <= 0) w0 = 640, h0 = 480;
    double r = (double)img / (double)(w0 > h0 ? w0 : h0);
    return ceil((double)w0 * r) * ceil((double)h0 * r) * 3.0;
}

void yp_torch_check_cache_ram(yp_torch_host_opts *o, int64_t available) {
    o->cache_train = o->cache_val = 1;
    if (available <= 0) return;
    const double margin = 1 + YP_TORCH_CHECK_CACHE_MARGIN, free = (double)available - (double)YP_TORCH_HOST_MAIN_BYTES;
    const double t = (double)o->train_images * o->train_image_bytes, v = (double)o->val_images * o->val_image_bytes;
    o->cache_train = t * margin < free;
    o->cache_val = v * margin < free - (o->cache_train ? t : 0);
}

int yp_torch_host_predict(const yp_torch_host_opts *o, yp_torch_host *out, yp_err *err) {
    const int64_t lim = (int64_t)1 << 20;
    if (o->batch < 1 || o->batch > lim || o->img < 32 || o->img > 16384 || o->workers_opt < 0 ||
        o->workers_opt > 4096 || o->cpus < 1 || o->train_images < 0 || o->val_images < 0 ||
        o->train_images > ((int64_t)1 << 40) || o->val_images > ((int64_t)1 << 40) || !(o->train_image_bytes >= 0) ||
        !(o->val_image_bytes >= 0) || !(o->train_labels >= 0) || !(o->val_labels >= 0))
        return yp_err_set(err, "train.py host memory: inputs out of range");
    const double s = (double)o->img, b = (double)o->batch, px = 3.0 * s * s, vside = s + 32;
    const int w = yp_torch_train_workers(o->cpus, o->batch, o->workers_opt);
    const int vw = o->val_images > 0 ? yp_torch_val_workers(o->cpus, o->batch, o->workers_opt) : 0;
    /* working images: the mosaic canvas, four loaded images and the warped result; a letterbox */
    const double train_work = 4.0 * px + 4.0 * o->train_image_bytes + px;
    const double val_work = 3.0 * vside * vside;
    const double train_batch = b * px, val_batch = 2.0 * b * 3.0 * vside * vside;
    const double ti = (double)o->train_images, vi = (double)o->val_images;
    const double objects = YP_TORCH_HOST_IMAGE_BYTES * (ti + vi) + 20.0 * (ti * o->train_labels + vi * o->val_labels);
    double main = (double)YP_TORCH_HOST_MAIN_BYTES + objects;
    double workers = w * ((double)YP_TORCH_HOST_WORKER_BYTES + YP_TORCH_HOST_WORKER_IMAGE_BYTES * ti + train_work) +
                     vw * ((double)YP_TORCH_HOST_WORKER_BYTES + YP_TORCH_HOST_WORKER_IMAGE_BYTES * vi + val_work);
    /* queued batches, and the pinned copy a loader's pin-memory thread holds (the main process
     * loads in place with no workers: the batch it builds, pinned) */
    double flight = (w > 0 ? w * YP_TORCH_PREFETCH_FACTOR + 1 : 1) * train_batch;
    if (o->val_images > 0) flight += (vw > 0 ? vw * YP_TORCH_PREFETCH_FACTOR + 1 : 1) * val_batch;
    if (w == 0) main += train_work;
    double cache_t = (double)o->train_images * o->train_image_bytes,
           cache_v = (double)o->val_images * o->val_image_bytes;
    double cache = (o->cache_train ? cache_t : 0) + (o->cache_val ? cache_v : 0);
    double total = main + workers + flight + cache;
    if (!(total < 9e18)) return yp_err_set(err, "train.py host memory: the estimate overflows");
    out->workers = w, out->val_workers = vw;
    out->main_bytes = (int64_t)main, out->worker_bytes = (int64_t)workers, out->in_flight_bytes = (int64_t)flight;
    out->cache_would_bytes = (int64_t)(cache_t + cache_v), out->cache_bytes = (int64_t)cache;
    out->total_bytes = out->main_bytes + out->worker_bytes + out->in_flight_bytes + out->cache_bytes;
    return 0;
}

/* ---------------------------------------------------------------- the host's remedies */

/* The base with one flag changed: the workers (cache == base_cache: the cache stays as the base has
 * it, check_cache_ram's refusals included), or the --cache choice (then its images as it asks). */
static int add_host(const yp_graph *g, const yp_torch_host_opts *base, yp_torch_cache base_cache, int64_t base_total,
                    const yp_torch_speed *sp, yp_torch_cache cache, int workers_opt, const char *flag,
                    yp_torch_host_remedy *out, int *n, yp_err *err) {
    yp_torch_host_remedy *m = &out[*n];
    memset(m, 0, sizeof *m);
    snprintf(m->flag, sizeof m->flag, "%s", flag);
    m->cache = cache, m->workers_opt = workers_opt;
    const int same = cache == base_cache;
    yp_torch_host_opts o = *base;
    if (!same) o.cache_train = o.cache_val = cache == YP_TORCH_CACHE_RAM;
    o.workers_opt = workers_opt;
    if (yp_torch_host_predict(&o, &m->host, err)) return -1;
    m->saves = base_total - m->host.total_bytes;
    if (sp) {
        yp_torch_speed s = *sp;
        if (!same) s.cache = cache != YP_TORCH_CACHE_NONE;
        s.workers_opt = workers_opt;
        if (yp_torch_speed_predict(g, &s, err)) return -1;
        m->images_per_s = s.train_images_per_s;
    }
    (*n)++;
    return 0;
}

int yp_torch_host_remedies(const yp_graph *g, const yp_torch_host_opts *base, yp_torch_cache cache,
                           const yp_torch_speed *sp, yp_torch_host_remedy *out, int *n, yp_err *err) {
    *n = 0;
    yp_torch_host b;
    if (yp_torch_host_predict(base, &b, err)) return -1;
    char flag[32];
    int half = b.workers / 2;
    if (half > 0) {
        snprintf(flag, sizeof flag, "--workers %d", half);
        if (add_host(g, base, cache, b.total_bytes, sp, cache, half, flag, out, n, err)) return -1;
    }
    if (b.workers > 0 && add_host(g, base, cache, b.total_bytes, sp, cache, 0, "--workers 0", out, n, err)) return -1;
    static const char *const names[] = {"no --cache", "--cache ram", "--cache disk"};
    for (int c = YP_TORCH_CACHE_NONE; c <= YP_TORCH_CACHE_DISK; c++)
        if (c != (int)cache &&
            add_host(g, base, cache, b.total_bytes, sp, (yp_torch_cache)c, base->workers_opt, names[c], out, n, err))
            return -1;
    return 0;
}
