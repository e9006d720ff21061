/* device_plan.c - the plan a command runs on one device, or the best that fits it (yp_device_plan.h). */
#include <string.h>

#include "yp_device_plan.h"

/* The largest batch below o->so.batch whose plan of the same candidate fits dev (0: not even 1),
 * by bisection: the arena grows with the batch. */
static int64_t largest_fitting(const yp_device_plan_opts *o, const yp_gpu *dev) {
    int64_t lo = 0, hi = o->so.batch - 1; /* lo fits (0: none known), the answer is in [lo, hi] */
    while (lo < hi) {
        int64_t mid = lo + (hi - lo + 1) / 2;
        yp_candidate c = o->so.base;
        c.batch = mid;
        yp_plan q;
        yp_err why;
        int fits = yp_plan_build(o->so.models[0], &c, dev, 0, o->n_images, &q, &why) == 0 && q.fits;
        yp_plan_free(&q);
        if (fits) lo = mid;
        else hi = mid - 1;
    }
    return lo;
}

static int as_given(const yp_device_plan_opts *o, const yp_gpu *dev, yp_device_plan *out, yp_err *err) {
    yp_candidate c = o->so.base;
    c.batch = o->so.batch;
    if (yp_plan_build(o->so.models[0], &c, dev, 0, o->n_images, &out->plan, err)) return -1;
    out->have_plan = 1;
    if (!out->plan.fits && o->find_best) out->best = c, out->best.batch = largest_fitting(o, dev);
    return 0;
}

/* The search's fastest row with the batch free: into out->best (batch 0 when none fits). */
static int best_unpinned(const yp_device_plan_opts *o, const yp_gpu *dev, yp_device_plan *out, yp_err *err) {
    yp_search_opts any = o->so;
    any.batch = 0;
    yp_search_result best;
    if (yp_search(&any, dev, 0, &best, err)) return -1;
    out->best = best.n_rows > 0 ? best.rows[0].cand : o->so.base;
    if (best.n_rows == 0) out->best.batch = 0;
    yp_search_free(&best);
    return 0;
}

int yp_device_plan_make(const yp_device_plan_opts *o, const yp_gpu *dev, yp_device_plan *out, yp_err *err) {
    memset(out, 0, sizeof *out);
    if (o->as_given) return as_given(o, dev, out, err);
    yp_search_result res;
    if (yp_search(&o->so, dev, 0, &res, err)) return -1;
    int rc = 0;
    if (res.n_rows > 0) {
        rc = yp_search_realize(&o->so, &res.rows[0], dev, 0, o->n_images, &out->plan, err);
        out->have_plan = rc == 0;
    } else {
        out->smallest = res.smallest.cand, out->smallest_bytes = res.smallest_bytes;
        if (o->find_best && o->so.batch > 0) rc = best_unpinned(o, dev, out, err);
    }
    yp_search_free(&res);
    return rc;
}

void yp_device_plan_free(yp_device_plan *d) {
    if (d->have_plan) yp_plan_free(&d->plan);
    d->have_plan = 0;
}
