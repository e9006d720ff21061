/* preflight.c - the device a CUDA instance is, and the refusal before the arena (preflight.h). */
#include <stdio.h>
#include <string.h>

#include "preflight.h"
#include "yp_gpu.h"
#include "yp_preflight.h"

#define GIB 1073741824.0

int cli_gpu_of_backend(yp_backend *be, yp_gpu *gpu, yp_err *err) {
    char name[128] = "";
    int64_t total = 0, free_b = 0;
    if (!be->device_info) return yp_err_set(err, "the %s backend cannot describe its device", be->name);
    if (be->device_info(be, name, sizeof name, &total, &free_b))
        return yp_err_set(err, "asking the %s device for its memory: %s", be->name, be->last_error(be));
    yp_gpu_from_device(name, total, gpu);
    if (total - free_b > gpu->fixed_bytes) gpu->fixed_bytes = total - free_b;
    return 0;
}

void cli_search_of_plan(const yp_plan *p, int64_t max_batch, yp_search_opts *so) {
    *so = yp_search_opts_default();
    so->n_models = 1, so->models[0] = p->g;
    so->n_sizes = 1, so->size_w[0] = p->cand.img_w, so->size_h[0] = p->cand.img_h;
    so->prec_mask = 1u << p->cand.precision;
    so->mosaic_mask = 1u << (p->cand.mosaic != 0);
    so->batch = 0, so->max_batch = max_batch;
    so->base = p->cand;
}

/* The best plan so finds on gpu, as the suggestion of a refusal, into buf. 0, or -1 with err. */
static int suggest(const yp_search_opts *so, const yp_gpu *gpu, char *buf, size_t n, yp_err *err) {
    yp_search_result res;
    if (yp_search(so, gpu, 0, &res, err)) return -1;
    if (res.n_rows == 0) {
        snprintf(buf, n, "no plan of %s at --img %lld fits that memory even at batch 1; free memory on the device or "
                 "lower --img", so->models[0]->name, (long long)so->size_w[0]);
        yp_search_free(&res);
        return 0;
    }
    yp_plan best;
    int rc = yp_search_realize(so, &res.rows[0], gpu, 0, 0, &best, err);
    yp_search_free(&res);
    if (rc) return -1;
    char ck[128];
    if (best.fits)
        snprintf(buf, n, "the best plan that fits it is --batch %lld (checkpoints %s, arena %.2f GiB)",
                 (long long)best.cand.batch, yp_front_layers_str(best.cand.ckpt_layers, ck, sizeof ck),
                 (double)best.arena_bytes / GIB);
    else
        snprintf(buf, n, "no plan of %s at --img %lld fits that memory; free memory on the device or lower --img",
                 so->models[0]->name, (long long)so->size_w[0]);
    yp_plan_free(&best);
    return 0;
}

int cli_preflight(yp_backend *be, const yp_plan *p, const yp_search_opts *so, const char *cmd, yp_err *err) {
    yp_preflight pf;
    if (yp_preflight_of(be, p->arena_bytes, &pf, err)) return -1;
    if (yp_preflight_decide(&pf) != YP_PREFLIGHT_SHORT) return 0;
    yp_gpu gpu; /* the card's rates; its memory what the run has now, so the search's budget is the free memory */
    if (cli_gpu_of_backend(be, &gpu, err)) return -1;
    gpu.mem_bytes = yp_preflight_budget(&pf), gpu.fixed_bytes = pf.fixed_bytes;
    char figures[256], best[256];
    yp_preflight_describe(&pf, figures, sizeof figures);
    if (suggest(so, &gpu, best, sizeof best, err)) return -1;
    return yp_err_set(err, "%s: the plan does not fit the %s device now: %s; %s", cmd, be->name, figures, best);
}
