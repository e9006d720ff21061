/* bench_loop.c - the training-step benchmark loop (yp_bench.h). */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "yp_bench.h"
#include "yp_clock.h"
#include "yp_splitmix64.h"

yp_bench_cfg yp_bench_cfg_default(void) {
    yp_bench_cfg c = {20, 2, 0, 1, 8};
    return c;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Random images in [0, 1] and n_tg boxes spread over the batch's images, seeded. The pixels are
 * splitmix64 as a counter-based generator (yp_splitmix64_at), so the fill splits across the OpenMP
 * threads (as torch.rand does on the reference side) and stays the same for any count. */
static void random_batch(float *img, int64_t n_img, float *tg, int64_t n_tg, int64_t batch, int nc, uint64_t *s) {
    const uint64_t base = *s;
    *s = yp_splitmix64_at(*s ^ 0x5851f42d4c957f2dull);
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < n_img; i++) img[i] = (float)(yp_splitmix64_at(base + (uint64_t)i) >> 40) / 16777216.0f;
    for (int64_t k = 0; k < n_tg; k++) {
        float *r = tg + 6 * k;
        *s = *s * 6364136223846793005ull + 1442695040888963407ull;
        double u = (double)(*s >> 11) / 9007199254740992.0;
        r[0] = (float)(k % batch), r[1] = (float)(k % nc);
        r[2] = (float)(0.2 + 0.6 * u), r[3] = (float)(0.8 - 0.6 * u), r[4] = (float)(0.05 + 0.3 * u),
        r[5] = (float)(0.35 - 0.3 * u);
    }
}

int yp_bench_run(yp_exec *x, const yp_bench_cfg *cfg, yp_bench_result *r, yp_err *err) {
    memset(r, 0, sizeof *r);
    if (cfg->steps < 1 || cfg->warmup < 0 || cfg->boxes_per_image < 0)
        return yp_err_set(err, "benchmark loop: %ld steps after %ld of warm-up, %d boxes per image: need at least "
                          "one step and no negative count", cfg->steps, cfg->warmup, cfg->boxes_per_image);
    const yp_schedule *s = x->train.s;
    const yp_tensor *in = &s->tensors[x->train.images_t], *tt = &s->tensors[x->train.targets_t];
    r->batch = s->opts.batch, r->h = s->opts.h, r->w = s->opts.w;
    int64_t n_img = r->batch * r->h * r->w * s->g->in_channels, capacity = tt->bytes / (6 * (int64_t)sizeof(float));
    r->boxes = r->batch * cfg->boxes_per_image < capacity ? r->batch * cfg->boxes_per_image : capacity;
    size_t img_bytes =
        (size_t)n_img * sizeof(float) > (size_t)in->bytes ? (size_t)n_img * sizeof(float) : (size_t)in->bytes;
    float *img = malloc(img_bytes), *tg = malloc((size_t)(r->boxes > 0 ? r->boxes : 1) * 6 * sizeof *tg);
    double *step_ms = calloc((size_t)cfg->steps, sizeof *step_ms), t0 = 0;
    uint64_t seed = cfg->seed;
    int rc = 0;
    if (x->train.be->thread_init)
        x->train.be->thread_init(x->train.be); /* the batch's OpenMP loop runs with the instance's threads */
    for (long i = 0; img && tg && step_ms && !rc && i < cfg->warmup + cfg->steps; i++) {
        double ts = yp_now_s();
        if (i == cfg->warmup) {
            t0 = ts;
            if (cfg->profile && yp_exec_profile(x, 1)) {
                rc = yp_err_set(err, "benchmark loop: out of memory for the profile");
                break;
            }
        }
        random_batch(img, n_img, tg, r->boxes, r->batch, s->g->nc, &seed);
        rc = yp_exec_micro_step(x, img, tg, r->boxes, r->last_loss, err) || yp_exec_update(x, err);
        if (!rc && r->n_curve < YP_BENCH_CURVE) r->curve[r->n_curve++] = r->last_loss[3];
        if (i >= cfg->warmup) step_ms[i - cfg->warmup] = (yp_now_s() - ts) * 1e3;
    }
    if (!img || !tg || !step_ms) rc = yp_err_set(err, "benchmark loop: out of memory for the batch");
    if (!rc) {
        r->ms_per_step = (yp_now_s() - t0) * 1e3 / (double)cfg->steps;
        qsort(step_ms, (size_t)cfg->steps, sizeof *step_ms, cmp_double);
        long n = cfg->steps;
        r->ms_median = n % 2 ? step_ms[n / 2] : 0.5 * (step_ms[n / 2 - 1] + step_ms[n / 2]);
        r->ms_min = step_ms[0];
    }
    free(img), free(tg), free(step_ms);
    return rc ? -1 : 0;
}
