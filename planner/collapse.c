/* collapse.c - one row per distinct plan: rows that differ only in a name that changes neither
 * memory nor time (fp16 vs bf16, mosaic on vs off) are merged into the first of them. */
#include <math.h>
#include <string.h>

#include "yp_search.h"

#define SAME_TO 0.001 /* "equal": within 0.1 % */

static int close_to(double a, double b) { return fabs(a - b) <= SAME_TO * fmax(fabs(a), fabs(b)); }

/* The same configuration but for precision and mosaic, and the same bytes and time. */
static int same_plan(const yp_row *a, const yp_row *b) {
    const yp_candidate *x = &a->cand, *y = &b->cand;
    return a->model == b->model && x->img_w == y->img_w && x->img_h == y->img_h && x->batch == y->batch &&
           x->ckpt_layers == y->ckpt_layers && x->freeze == y->freeze && x->optimizer == y->optimizer &&
           (x->precision == YP_PREC_FP32) == (y->precision == YP_PREC_FP32) && close_to(a->peak_bytes, b->peak_bytes) &&
           close_to(a->time.images_per_s, b->time.images_per_s);
}

void yp_search_collapse(yp_search_result *r) {
    int n = 0;
    for (int i = 0; i < r->n_rows; i++) {
        yp_row *row = &r->rows[i];
        /* rows are fastest first to 3 significant digits (a bucket spans under 1 %): kept rows more
         * than 3 % faster, and all before them, cannot be this plan */
        int k = n - 1;
        for (; k >= 0 && r->rows[k].time.images_per_s <= 1.03 * row->time.images_per_s; k--)
            if (same_plan(&r->rows[k], row)) break;
        if (k >= 0 && r->rows[k].time.images_per_s > 1.03 * row->time.images_per_s) k = -1;
        if (k >= 0) {
            yp_row *kept = &r->rows[k];
            if (row->cand.precision != kept->cand.precision) kept->also_prec |= 1u << row->cand.precision;
            if (row->cand.mosaic != kept->cand.mosaic) kept->also_mosaic = 1;
            continue;
        }
        r->rows[n] = *row;
        r->rows[n].also_prec = 0, r->rows[n].also_mosaic = 0;
        n++;
    }
    r->n_rows = n;
}
