/* torch_advice.c - the card's terms outside PyTorch's cache, AutoBatch's choice, the --batch to
 * pass and train.py's remedies (yp_torch_train.h). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "yp_torch_train.h"

int64_t yp_torch_context_bytes(const yp_gpu *gpu) {
    int64_t driver = gpu->mem_bytes - gpu->cuda_total_bytes;
    int64_t ctx = gpu->fixed_bytes - (driver > 0 ? driver : 0);
    return ctx > 0 ? ctx : 0;
}

int64_t yp_torch_capacity(const yp_gpu *gpu) {
    int64_t c = gpu->mem_bytes - gpu->fixed_bytes;
    return c > 0 ? c : 0;
}

/* ---------------------------------------------------------------- AutoBatch */

int64_t yp_torch_autobatch_pick(int64_t t, int64_t r, int64_t a, const yp_torch_probe_row *rows, int n,
                                double fraction, int *anomaly, double *predicted) {
    const double gib = 1073741824.0;
    double tg = (double)t / gib, rg = (double)r / gib, ag = (double)a / gib, f = tg - (rg + ag);
    double sx = 0, sy = 0, sxx = 0, sxy = 0;
    int m = 0, first_fail = -1;
    for (int i = 0; i < n; i++) {
        if (rows[i].failed) {
            if (first_fail < 0) first_fail = i;
            continue;
        }
        double x = (double)rows[m].batch, y = (double)rows[i].reserved / 1e9; /* batch_sizes[:len(y)] */
        sx += x, sy += y, sxx += x * x, sxy += x * y, m++;
    }
    if (anomaly) *anomaly = 0;
    if (m < 2) return -1;
    double den = m * sxx - sx * sx;
    if (den == 0) return -1;
    double p0 = (m * sxy - sx * sy) / den, p1 = (sy - p0 * sx) / m;
    double q = (f * fraction - p1) / p0;
    int64_t b = isfinite(q) && fabs(q) < 1e15 ? (int64_t)q : -1; /* int() truncates toward zero */
    if (first_fail >= 0 && b >= rows[first_fail].batch) b = rows[first_fail > 0 ? first_fail - 1 : 0].batch;
    if (b < 1 || b > 1024) {
        b = 16;
        if (anomaly) *anomaly = 1;
    }
    if (predicted) *predicted = (p0 * (double)b + p1 + rg + ag) / tg;
    return b;
}

/* ---------------------------------------------------------------- the advice */

/* Does o train and validate within capacity * (1 - margin)? *r gets the replay. */
static int fits(const yp_graph *g, const yp_torch_train_opts *base, int64_t capacity, double margin,
                yp_torch_train_result *r, yp_err *err) {
    yp_torch_train_opts o = *base;
    o.capacity = (int64_t)((double)capacity * (1.0 - margin));
    if (o.capacity < 1) o.capacity = 1;
    if (yp_torch_train_replay(g, &o, r, err)) return -1;
    return !r->oom;
}

int yp_torch_recommend(const yp_graph *g, const yp_torch_train_opts *base, int64_t capacity, double margin,
                       int64_t max_batch, int64_t *batch, yp_torch_train_result *at, yp_err *err) {
    yp_torch_train_opts o = *base;
    yp_torch_train_result r, best;
    memset(&best, 0, sizeof best);
    *batch = 0;
    if (max_batch < 1) return yp_err_set(err, "PyTorch advice: the largest batch searched must be >= 1");
    int64_t lo = 0, hi = 0; /* lo fits (0: none yet), hi does not (0: none found) */
    for (int64_t b = 1; !hi; b = b * 2 > max_batch && b < max_batch ? max_batch : b * 2) {
        o.batch = b;
        int k = fits(g, &o, capacity, margin, &r, err);
        if (k < 0) return -1;
        if (k) lo = b, best = r;
        else hi = b;
        if (b >= max_batch) break;
    }
    while (hi && hi - lo > 1) {
        o.batch = lo + (hi - lo) / 2;
        int k = fits(g, &o, capacity, margin, &r, err);
        if (k < 0) return -1;
        if (k) lo = o.batch, best = r;
        else hi = o.batch;
    }
    *batch = lo;
    if (at) *at = best;
    return 0;
}

static int add_remedy(const yp_graph *g, const yp_torch_train_opts *o, int64_t capacity, double margin,
                      int64_t base_need, const char *flag, yp_torch_remedy *out, int *n, yp_err *err) {
    if (*n >= YP_TORCH_MAX_REMEDIES) return 0;
    yp_torch_remedy *m = &out[*n];
    memset(m, 0, sizeof *m);
    snprintf(m->flag, sizeof m->flag, "%s", flag);
    m->opts = *o;
    m->opts.capacity = 0;
    yp_torch_train_result free_run;
    if (yp_torch_train_replay(g, &m->opts, &free_run, err)) return -1;
    int k = fits(g, o, capacity, margin, &m->r, err);
    if (k < 0) return -1;
    m->fits = k, m->need = free_run.peak_allocated, m->saves = base_need - m->need;
    (*n)++;
    return 0;
}

int yp_torch_remedies(const yp_graph *g, const yp_torch_train_opts *base, int64_t capacity, double margin,
                      int64_t rec_batch, yp_torch_remedy *out, int *n, yp_err *err) {
    *n = 0;
    yp_torch_train_opts o = *base;
    o.capacity = 0;
    yp_torch_train_result need;
    if (yp_torch_train_replay(g, &o, &need, err)) return -1;
    char flag[48];
    /* a smaller --batch-size: the recommended one */
    int64_t rb = rec_batch;
    if (rb > 0 && rb < base->batch) {
        o = *base, o.batch = rb;
        snprintf(flag, sizeof flag, "--batch-size %lld", (long long)rb);
        if (add_remedy(g, &o, capacity, margin, need.peak_allocated, flag, out, n, err)) return -1;
    }
    /* a smaller --img: the largest multiple of the stride (>= 2 strides, check_img_size's floor)
     * that fits at this batch */
    int gs = yp_graph_max_stride(g);
    int64_t lo = 2, hi = base->img / gs - 1, best = 0; /* in strides */
    if (hi >= lo) {
        yp_torch_train_result r;
        o = *base, o.img = lo * gs;
        int ok = fits(g, &o, capacity, margin, &r, err);
        if (ok < 0) return -1;
        while (ok && lo < hi) { /* lo fits; the largest that fits is in [lo, hi] */
            int64_t mid = lo + (hi - lo + 1) / 2;
            o.img = mid * gs;
            int k = fits(g, &o, capacity, margin, &r, err);
            if (k < 0) return -1;
            if (k) lo = mid;
            else hi = mid - 1;
        }
        if (ok) best = lo;
    }
    if (best > 0) {
        o = *base, o.img = best * gs;
        snprintf(flag, sizeof flag, "--img %lld", (long long)(best * gs));
        if (add_remedy(g, &o, capacity, margin, need.peak_allocated, flag, out, n, err)) return -1;
    }
    /* --freeze 10: the backbone (layers 0-9 of every bundled model) */
    if (base->freeze < 10 && g->n_layers > 10) {
        o = *base, o.freeze = 10;
        if (add_remedy(g, &o, capacity, margin, need.peak_allocated, "--freeze 10", out, n, err)) return -1;
    }
    /* the other optimizers */
    static const char *const names[] = {"SGD", "Adam", "AdamW"};
    for (int k = 0; k < YP_OPT_COUNT; k++) {
        if (k == (int)base->optimizer) continue;
        o = *base, o.optimizer = (yp_optimizer)k;
        snprintf(flag, sizeof flag, "--optimizer %s", names[k]);
        if (add_remedy(g, &o, capacity, margin, need.peak_allocated, flag, out, n, err)) return -1;
    }
    if (base->multi_scale) {
        o = *base, o.multi_scale = 0;
        if (add_remedy(g, &o, capacity, margin, need.peak_allocated, "no --multi-scale", out, n, err)) return -1;
    }
    return 0;
}
