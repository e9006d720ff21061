/* search.c - enumerate candidates, size their batch, rank them by images per second. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "yp_family.h"
#include "yp_search.h"

yp_search_opts yp_search_opts_default(void) {
    yp_search_opts o;
    memset(&o, 0, sizeof o);
    o.prec_mask = (1u << YP_PREC_COUNT) - 1;
    o.mosaic_mask = 3;
    o.max_batch = YP_NOMINAL_BATCH;
    o.base = yp_candidate_default();
    return o;
}

typedef struct {
    yp_row *rows;
    int n, cap;
} row_vec;

static int push(row_vec *v, const yp_row *r) {
    if (v->n == v->cap) {
        int cap = v->cap ? v->cap * 2 : 256;
        yp_row *nr = realloc(v->rows, (size_t)cap * sizeof *nr);
        if (!nr) return -1;
        v->rows = nr, v->cap = cap;
    }
    v->rows[v->n++] = *r;
    return 0;
}

/* Images per second to 3 significant digits: candidates closer than that are equally fast. */
static double speed_bucket(double ips) {
    if (ips <= 0) return 0;
    double scale = pow(10.0, 2 - floor(log10(ips)));
    return round(ips * scale) / scale;
}

/* Fastest first; among equally fast ones YOLOv5's defaults first (mosaic on, fp16 before bf16),
 * then fewer checkpointed layers, then less memory. */
static int faster_first(const void *a, const void *b) {
    const yp_row *x = a, *y = b;
    double sx = speed_bucket(x->time.images_per_s), sy = speed_bucket(y->time.images_per_s);
    if (sx != sy) return sx < sy ? 1 : -1;
    if (x->cand.mosaic != y->cand.mosaic) return y->cand.mosaic - x->cand.mosaic;
    if (x->cand.precision != y->cand.precision) return (int)x->cand.precision - (int)y->cand.precision;
    int cx = __builtin_popcountll(x->cand.ckpt_layers), cy = __builtin_popcountll(y->cand.ckpt_layers);
    if (cx != cy) return cx - cy;
    return (x->peak_bytes > y->peak_bytes) - (x->peak_bytes < y->peak_bytes);
}

/* A precision the card cannot run (bf16 before Ampere) is not a candidate. */
static int supported(const yp_gpu *gpu, int p) { return p != YP_PREC_AMP_BF16 || gpu->bf16_tflops > 0; }

/* Evaluates every (size, precision, mosaic) of one family; appends feasible rows. */
static int sweep_family(const yp_search_opts *o, int m, const yp_family *f, const yp_candidate *base,
                        const yp_gpu *gpu, double budget, row_vec *rows, yp_search_result *out) {
    const yp_graph *g = o->models[m];
    for (int s = 0; s < o->n_sizes; s++)
        for (int p = 0; p < YP_PREC_COUNT; p++) {
            if (!(o->prec_mask >> p & 1) || !supported(gpu, p)) continue;
            for (int mo = 0; mo < 2; mo++) {
                if (!(o->mosaic_mask >> mo & 1)) continue;
                yp_row r;
                memset(&r, 0, sizeof r);
                r.model = m, r.cand = *base;
                r.cand.img_w = o->size_w[s], r.cand.img_h = o->size_h[s];
                r.cand.precision = (yp_precision)p, r.cand.mosaic = mo;
                out->n_candidates++;
                r.cand.batch = 1;
                double least = yp_family_peak(f, g, &r.cand, 1);
                if (out->smallest_bytes <= 0 || least < out->smallest_bytes)
                    out->smallest = r, out->smallest.peak_bytes = least, out->smallest_bytes = least;
                if (o->batch > 0) {
                    r.cand.batch = o->batch;
                    if (yp_family_peak(f, g, &r.cand, o->batch) > budget) continue;
                } else {
                    r.cand.batch = yp_family_max_batch(f, g, &r.cand, budget, o->max_batch);
                    if (r.cand.batch < 1) continue;
                }
                r.peak_bytes = yp_family_peak(f, g, &r.cand, r.cand.batch);
                yp_family_timing(f, g, &r.cand, &r.time);
                if (push(rows, &r)) return -1;
            }
        }
    return 0;
}

/* The checkpoint sets to try for model g: the whole front (whose costs are the yoloplan policy's),
 * or the pinned set. */
static int ckpt_sets(const yp_search_opts *o, const yp_graph *g, yp_front *f, yp_err *err) {
    if (o->ckpt_pinned || o->base.policy != YP_SAVE_YOLOPLAN) {
        f->n = 1;
        f->p = calloc(1, sizeof *f->p);
        if (!f->p) return yp_err_set(err, "out of memory");
        f->p[0].layers = o->ckpt_pinned ? o->base.ckpt_layers : 0;
        return 0;
    }
    int s = 2 * yp_graph_max_stride(g); /* the front's sets do not depend on the size: use a small one */
    return yp_front_compute(g, s, s, f, err);
}

int yp_search(const yp_search_opts *o, const yp_gpu *gpu, int64_t reserve, yp_search_result *out, yp_err *err) {
    memset(out, 0, sizeof *out);
    double budget = (double)(gpu->mem_bytes - gpu->fixed_bytes - reserve);
    row_vec rows = {0};
    for (int m = 0; m < o->n_models; m++) {
        yp_front front;
        if (ckpt_sets(o, o->models[m], &front, err)) goto fail;
        for (int k = 0; k < front.n; k++) {
            yp_candidate base = o->base;
            base.ckpt_layers = front.p[k].layers;
            yp_family f;
            if (yp_family_build(o->models[m], &base, gpu, &f, err)) {
                yp_front_free(&front);
                goto fail;
            }
            int rc = sweep_family(o, m, &f, &base, gpu, budget, &rows, out);
            yp_family_free(&f);
            if (rc) {
                yp_front_free(&front);
                yp_err_set(err, "out of memory");
                goto fail;
            }
        }
        yp_front_free(&front);
    }
    if (rows.n) qsort(rows.rows, (size_t)rows.n, sizeof *rows.rows, faster_first);
    out->rows = rows.rows, out->n_rows = rows.n;
    out->smallest_bytes += (double)(gpu->fixed_bytes + reserve);
    return 0;
fail:
    free(rows.rows);
    return -1;
}

void yp_search_free(yp_search_result *r) {
    free(r->rows);
    r->rows = NULL;
    r->n_rows = 0;
}

int yp_search_realize(const yp_search_opts *o, const yp_row *r, const yp_gpu *gpu, int64_t reserve,
                      int64_t n_images, yp_plan *out, yp_err *err) {
    yp_candidate c = r->cand;
    const yp_graph *g = o->models[r->model];
    for (;;) {
        if (yp_plan_build(g, &c, gpu, reserve, n_images, out, err)) return -1;
        if (out->fits || o->batch > 0 || c.batch == 1) return 0;
        /* the aligned arena is a little larger than the model: shrink in proportion, then by one */
        int64_t next = (int64_t)floor((double)c.batch * (double)out->budget_bytes / (double)out->arena_bytes);
        c.batch = next < c.batch ? (next > 0 ? next : 1) : c.batch - 1;
        yp_plan_free(out);
    }
}

/* Sizes every row, so its first row is the search's order on a card where everything fits. */
static int first_unbounded(const yp_search_opts *o, const yp_gpu *gpu, int64_t reserve, yp_candidate *out,
                           yp_err *err) {
    yp_gpu big = *gpu;
    big.mem_bytes = (int64_t)1 << 52;
    yp_search_result r;
    if (yp_search(o, &big, reserve, &r, err)) return -1;
    int ok = r.n_rows > 0;
    if (ok) *out = r.rows[0].cand;
    yp_search_free(&r);
    return ok ? 0 : yp_err_set(err, "%s at %lldx%lld: no candidate to plan", o->models[0]->name,
                               (long long)o->size_w[0], (long long)o->size_h[0]);
}

int yp_search_choose(const yp_search_opts *o, const yp_gpu *gpu, int64_t reserve, yp_candidate *out, yp_err *err) {
    yp_search_opts one = *o;
    one.n_models = 1, one.n_sizes = 1;
    yp_search_result r;
    if (yp_search(&one, gpu, reserve, &r, err)) return -1;
    int found = 0;
    for (int i = 0; i < r.n_rows && !found; i++) {
        yp_plan p;
        if (yp_search_realize(&one, &r.rows[i], gpu, reserve, 0, &p, err)) {
            yp_search_free(&r);
            return -1;
        }
        if ((found = p.fits)) *out = p.cand;
        yp_plan_free(&p);
    }
    yp_search_free(&r);
    if (found) return 1;
    return first_unbounded(&one, gpu, reserve, out, err) ? -1 : 0;
}

int64_t yp_search_largest_batch(const yp_search_opts *o, const yp_row *r, const yp_gpu *gpu, int64_t reserve,
                                yp_err *err) {
    yp_search_opts one = *o;
    one.models[0] = o->models[r->model], one.n_models = 1;
    one.size_w[0] = r->cand.img_w, one.size_h[0] = r->cand.img_h, one.n_sizes = 1;
    one.prec_mask = 1u << r->cand.precision, one.mosaic_mask = 1u << r->cand.mosaic;
    one.ckpt_pinned = 1, one.base.ckpt_layers = r->cand.ckpt_layers;
    one.batch = 0, one.max_batch = YP_MAX_BATCH;
    yp_search_result s;
    if (yp_search(&one, gpu, reserve, &s, err)) return -1;
    int64_t b = 0;
    if (s.n_rows) {
        yp_plan p;
        if (yp_search_realize(&one, &s.rows[0], gpu, reserve, 0, &p, err)) b = -1;
        else b = p.fits ? p.cand.batch : 0, yp_plan_free(&p);
    }
    yp_search_free(&s);
    return b;
}
