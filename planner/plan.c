/* plan.c - building a plan (schedule, liveness, arena, validation, timing, host memory) and the
 * plan checker. */
#include <string.h>

#include "yp_plan.h"

#define YP_LOADER_WORKERS 8  /* YOLOv5 train.py --workers default */
#define YP_PREFETCH_FACTOR 2 /* torch DataLoader default */

yp_host_memory yp_host_memory_estimate(const yp_candidate *c, int64_t n_images) {
    yp_host_memory h = {0};
    int64_t img = c->img_w * c->img_h * 3; /* uint8 RGB at imgsz */
    h.loader_workers = YP_LOADER_WORKERS;
    h.mosaic_canvases = c->mosaic ? YP_LOADER_WORKERS * 4 * img : 0;
    h.decoded_images = YP_LOADER_WORKERS * (c->mosaic ? 4 : 1) * img;
    h.prefetch = YP_LOADER_WORKERS * YP_PREFETCH_FACTOR * c->batch * img;
    h.pinned_batch = c->batch * img * 4;
    h.image_cache = n_images > 0 ? n_images * img : 0;
    h.total = h.mosaic_canvases + h.decoded_images + h.prefetch + h.pinned_batch + h.image_cache;
    return h;
}

int yp_plan_build(const yp_graph *g, const yp_candidate *c, const yp_gpu *gpu, int64_t reserve, int64_t n_images,
                  yp_plan *out, yp_err *err) {
    memset(out, 0, sizeof *out);
    if (yp_candidate_check_scratch(c, err) || yp_candidate_check_alignment(c, err)) return -1;
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
    out->host = yp_host_memory_estimate(c, n_images);
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
