/* plan.c - building a plan (schedule, liveness, arena, validation, timing, host memory) and the
 * plan checker. */
#include <math.h>
#include <string.h>

#include "yp_plan.h"

int yp_host_memory_estimate(const yp_candidate *c, int stride, int64_t n_images, yp_host_memory *h, yp_err *err) {
    memset(h, 0, sizeof *h);
    if (yp_pipeline_check(&c->pipe, err)) return -1;
    int64_t s = c->img_w > c->img_h ? c->img_w : c->img_h, n = n_images > 0 ? n_images : 0;
    double rows = ceil(c->labels_per_image);
    yp_host_loader_in in = {.pipe = c->pipe, .batch = c->batch, .imgsz = s, .drop_last = 1, .n_images = n,
                            .max_rows = rows > 0 && rows < 1e15 ? (int64_t)rows : 0};
    yp_host_loader lb;
    if (yp_host_loader_bytes(&in, &lb, err)) return -1;
    h->loader_workers = c->pipe.workers;
    h->prefetch = lb.ring_images, h->ring_labels = lb.ring_labels + lb.ring_meta;
    h->mosaic_canvases = lb.canvases, h->workspaces = lb.workspaces - lb.canvases;
    h->orders = lb.orders, h->decoded_images = lb.decoders;
    h->pinned_batch = yp_host_input_bytes(c->batch, s, c->multi_scale, stride);
    h->image_cache = c->pipe.cache == YP_CACHE_RAM && n > 0 ? yp_host_cache_bytes(n, s) : 0;
    h->total = lb.total;
    if (h->pinned_batch < 0 || h->image_cache < 0 || __builtin_add_overflow(h->total, lb.decoders, &h->total) ||
        __builtin_add_overflow(h->total, h->pinned_batch, &h->total) ||
        __builtin_add_overflow(h->total, h->image_cache, &h->total))
        return yp_err_set(err, "host memory: the data pipeline's size overflows");
    return 0;
}

int yp_plan_build(const yp_graph *g, const yp_candidate *c, const yp_gpu *gpu, int64_t reserve, int64_t n_images,
                  yp_plan *out, yp_err *err) {
    memset(out, 0, sizeof *out);
    if (yp_candidate_check_scratch(c, err) || yp_candidate_check_alignment(c, err) || yp_pipeline_check(&c->pipe, err))
        return -1;
    out->g = g, out->cand = *c, out->gpu = *gpu, out->reserve_bytes = reserve;
    yp_sched_opts o = yp_candidate_train_opts(c, yp_graph_max_stride(g));
    out->sched = yp_schedule_build(g, &o, err);
    if (!out->sched || yp_liveness_compute(out->sched, c->alignment, &out->live, err) ||
        yp_arena_plan(out->sched, c->alignment, out->live.peak, &out->arena, err) ||
        yp_val_plan_build(g, c, out->sched, &out->arena, &out->val, err)) {
        yp_plan_free(out);
        return -1;
    }
    out->val_bytes = out->val.bytes;
    out->arena_bytes = out->arena.size > out->val_bytes ? out->arena.size : out->val_bytes;
    out->device_bytes = out->arena_bytes + gpu->fixed_bytes + reserve;
    out->budget_bytes = gpu->mem_bytes - gpu->fixed_bytes - reserve;
    out->fits = out->device_bytes <= gpu->mem_bytes;
    out->saved_bytes = yp_schedule_saved_bytes(out->sched);
    yp_cost_schedule(out->sched, gpu, c->precision, &out->time);
    if (yp_host_memory_estimate(c, yp_graph_max_stride(g), n_images, &out->host, err)) {
        yp_plan_free(out);
        return -1;
    }
    return 0;
}

void yp_plan_free(yp_plan *p) {
    yp_schedule_free(p->sched);
    yp_liveness_free(&p->live);
    yp_arena_free(&p->arena);
    yp_val_plan_free(&p->val);
    p->sched = NULL;
}

int yp_plan_check(const yp_plan *p, yp_err *err) {
    if (yp_arena_check(p->sched, &p->arena, err)) return -1;
    if (p->arena.size > p->arena_bytes)
        return yp_err_set(err, "arena: training needs %lld bytes, the plan allocates %lld", (long long)p->arena.size,
                          (long long)p->arena_bytes);
    yp_val_target t = {p->sched, &p->arena, p->arena_bytes};
    return yp_val_plan_check(&p->val, &t, err);
}

yp_plan_groups yp_plan_groups_at_peak(const yp_plan *p) {
    const int64_t *k = p->live.at_peak;
    yp_plan_groups gr;
    gr.weights = k[YP_KIND_WEIGHT], gr.ema = k[YP_KIND_EMA], gr.lowp = k[YP_KIND_LOWP];
    gr.grads = k[YP_KIND_GRAD], gr.optimizer = k[YP_KIND_OPTSTATE];
    gr.activations = k[YP_KIND_INPUT] + k[YP_KIND_ACT] + k[YP_KIND_SAVED] + k[YP_KIND_ACTGRAD] +
                     k[YP_KIND_RECOMPUTE] + k[YP_KIND_LOSS];
    gr.workspace = k[YP_KIND_WORKSPACE];
    return gr;
}
