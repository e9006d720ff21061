/* liveness.c - live bytes per step by a sweep over tensor lives. */
#include <stdlib.h>
#include <string.h>

#include "yp_liveness.h"

int yp_liveness_compute(const yp_schedule *s, int64_t align, yp_liveness *out, yp_err *err) {
    memset(out, 0, sizeof *out);
    if (align < 1 || (align & (align - 1)))
        return yp_err_set(err, "liveness: arena alignment %lld is not a power of two", (long long)align);
    int n = s->n_steps;
    /* delta[step][kind]: bytes that start living at step, minus bytes that die after step-1 */
    int64_t *delta = calloc((size_t)(n + 1) * YP_KIND_COUNT, sizeof *delta);
    out->live = calloc((size_t)n, sizeof *out->live);
    out->by_kind = calloc((size_t)n * YP_KIND_COUNT, sizeof *out->by_kind);
    if (!delta || !out->live || !out->by_kind) {
        free(delta);
        yp_liveness_free(out);
        return yp_err_set(err, "out of memory simulating liveness");
    }
    out->n_steps = n, out->align = align;
    for (int t = 0; t < s->n_tensors; t++) {
        const yp_tensor *tt = &s->tensors[t];
        int64_t b = yp_align_up(tt->bytes, align);
        delta[(size_t)tt->first * YP_KIND_COUNT + tt->kind] += b;
        delta[(size_t)(tt->last + 1) * YP_KIND_COUNT + tt->kind] -= b;
    }
    int64_t run[YP_KIND_COUNT] = {0};
    out->peak = -1;
    for (int st = 0; st < n; st++) {
        int64_t total = 0;
        for (int k = 0; k < YP_KIND_COUNT; k++) {
            run[k] += delta[(size_t)st * YP_KIND_COUNT + k];
            out->by_kind[(size_t)st * YP_KIND_COUNT + k] = run[k];
            total += run[k];
        }
        out->live[st] = total;
        if (total > out->peak) {
            out->peak = total, out->peak_step = st;
            memcpy(out->at_peak, run, sizeof run);
        }
    }
    free(delta);
    return 0;
}

void yp_liveness_free(yp_liveness *l) {
    free(l->live);
    free(l->by_kind);
    l->live = l->by_kind = NULL;
}
