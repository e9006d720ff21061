/* plan_table.c - choosing and building the rows of the planner's table. */
#include <stdlib.h>
#include <string.h>

#include "plan_table.h"

/* "amp-bf16, mosaic off": what the merged rows were called. */
static void also_str(const yp_row *r, char *buf, size_t n) {
    buf[0] = 0;
    for (int p = 0; p < YP_PREC_COUNT; p++)
        if (r->also_prec >> p & 1)
            snprintf(buf + strlen(buf), n - strlen(buf), "%s%s", buf[0] ? ", " : "",
                     yp_precision_name((yp_precision)p));
    if (r->also_mosaic)
        snprintf(buf + strlen(buf), n - strlen(buf), "%smosaic %s", buf[0] ? ", " : "", r->cand.mosaic ? "off" : "on");
}

/* Which rows to show: with one model the best top_k (all with --all); with several, the best
 * per_model of each model, the models in their order. Fills idx (room for n_rows); returns the count. */
static int pick(const plan_args *a, const yp_search_result *r, int per_model, int *idx) {
    int n = 0;
    if (!per_model) {
        for (int i = 0; i < r->n_rows && (!a->top_k || n < a->top_k); i++) idx[n++] = i;
        return n;
    }
    for (int m = 0; m < a->search.n_models; m++)
        for (int i = 0, k = 0; i < r->n_rows && (per_model < 0 || k < per_model); i++)
            if (r->rows[i].model == m) idx[n++] = i, k++;
    return n;
}

int plan_table_build(const plan_args *a, plan_table *t, yp_err *err) {
    memset(t, 0, sizeof *t);
    if (yp_search(&a->search, &a->gpu, a->reserve, &t->search, err)) return -1;
    yp_search_result *r = &t->search;
    t->n_configs_fit = r->n_rows;
    yp_search_collapse(r);
    /* several models: grouped by model, one row each unless --top says how many (--all: every row) */
    t->per_model = a->search.n_models > 1 ? (!a->top_given ? 1 : a->top_k ? a->top_k : -1) : 0;
    int *idx = malloc((size_t)(r->n_rows ? r->n_rows : 1) * sizeof *idx);
    int cap = idx ? pick(a, r, t->per_model, idx) : 0;
    t->plans = calloc((size_t)(cap ? cap : 1), sizeof *t->plans);
    t->also = calloc((size_t)(cap ? cap : 1), sizeof *t->also);
    t->largest = calloc((size_t)(cap ? cap : 1), sizeof *t->largest);
    if (!idx || !t->plans || !t->also || !t->largest) {
        free(idx);
        return yp_err_set(err, "out of memory");
    }
    int last_model = -1;
    /* a pinned batch is not lowered: a row whose real (aligned) plan is a little over the card is
     * dropped, as the what-if would say it does not fit */
    for (int k = 0; k < cap; k++) {
        const yp_row *row = &r->rows[idx[k]];
        yp_plan *p = &t->plans[t->n];
        if (yp_search_realize(&a->search, row, &a->gpu, a->reserve, a->n_images, p, err)) {
            free(idx);
            return -1;
        }
        if (!p->fits) {
            yp_plan_free(p);
            continue;
        }
        also_str(row, t->also[t->n], sizeof t->also[t->n]);
        /* each model's best row: how far its configuration goes when the batch is not capped */
        if (row->model != last_model && !a->search.batch && p->cand.batch >= a->search.max_batch &&
            a->search.max_batch < YP_MAX_BATCH) {
            int64_t b = yp_search_largest_batch(&a->search, row, &a->gpu, a->reserve, err);
            if (b < 0) {
                yp_plan_free(p);
                free(idx);
                return -1;
            }
            t->largest[t->n] = b > p->cand.batch ? b : 0;
        }
        last_model = row->model;
        t->n++;
    }
    free(idx);
    return 0;
}

void plan_table_free(plan_table *t) {
    for (int i = 0; t->plans && i < t->n; i++) yp_plan_free(&t->plans[i]);
    free(t->plans);
    free(t->also);
    free(t->largest);
    yp_search_free(&t->search);
    memset(t, 0, sizeof *t);
}
