/* val_rect.c - val.py's rectangular validation batches (yp_val_rect.h). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "yp_image.h"
#include "yp_val_rect.h"

int64_t yp_val_rect_side(int64_t imgsz, int64_t stride, double pad) {
    if (imgsz < 1 || stride < 1) return -1;
    return (int64_t)ceil((double)imgsz / (double)stride + pad) * stride;
}

void yp_val_rect_free(yp_val_rect *r) {
    if (!r) return;
    free(r->order), free(r->h), free(r->w);
    memset(r, 0, sizeof *r);
}

typedef struct {
    double ar;
    int64_t index;
} keyed;

static int by_ar(const void *a, const void *b) { /* ties by index: a stable order */
    const keyed *x = a, *y = b;
    if (x->ar != y->ar) return x->ar < y->ar ? -1 : 1;
    return (x->index > y->index) - (x->index < y->index);
}

int yp_val_rect_shapes(const double *ar, int64_t n, int64_t batch, int64_t imgsz, int64_t stride, double pad,
                       yp_val_rect *out, yp_err *err) {
    memset(out, 0, sizeof *out);
    if (n < 1 || batch < 1 || imgsz < 1 || stride < 1 || (uint64_t)n > SIZE_MAX / sizeof(keyed))
        return yp_err_set(err, "validation: rectangular batches of %lld images at %lld px, batch %lld: bad sizes",
                          (long long)n, (long long)imgsz, (long long)batch);
    int64_t nb = (n + batch - 1) / batch;
    keyed *k = malloc((size_t)n * sizeof *k);
    out->order = malloc((size_t)n * sizeof *out->order);
    out->h = malloc((size_t)nb * sizeof *out->h), out->w = malloc((size_t)nb * sizeof *out->w);
    if (!k || !out->order || !out->h || !out->w) {
        free(k);
        return yp_err_set(err, "validation: out of memory sorting %lld images by aspect ratio", (long long)n);
    }
    for (int64_t i = 0; i < n; i++) k[i] = (keyed){ar[i] > 0 && isfinite(ar[i]) ? ar[i] : 1.0, i};
    qsort(k, (size_t)n, sizeof *k, by_ar);
    out->n_images = n, out->batch = batch, out->n_batches = nb;
    out->max_side = yp_val_rect_side(imgsz, stride, pad);
    for (int64_t i = 0; i < n; i++) out->order[i] = k[i].index;
    for (int64_t b = 0; b < nb; b++) {
        int64_t lo = b * batch, hi = lo + batch < n ? lo + batch : n;
        double mini = k[lo].ar, maxi = k[hi - 1].ar, rh = 1, rw = 1; /* sorted: the ends are min and max */
        if (maxi < 1) rh = maxi;
        else if (mini > 1) rw = 1 / mini;
        out->h[b] = (int64_t)ceil(rh * (double)imgsz / (double)stride + pad) * stride;
        out->w[b] = (int64_t)ceil(rw * (double)imgsz / (double)stride + pad) * stride;
    }
    free(k);
    return 0;
}

int yp_val_rect_build(const yp_labels *val, int64_t batch, int64_t imgsz, int64_t stride, yp_val_rect *out,
                      yp_err *err) {
    memset(out, 0, sizeof *out);
    if (val->n < 1 || (uint64_t)val->n > SIZE_MAX / sizeof(double))
        return yp_err_set(err, "validation: the split has no images");
    double *ar = malloc((size_t)val->n * sizeof *ar);
    if (!ar) return yp_err_set(err, "validation: out of memory reading %lld image sizes", (long long)val->n);
    int64_t unreadable = 0;
    for (int64_t i = 0; i < val->n; i++) {
        int w, h;
        yp_err why;
        if (yp_image_probe(yp_labels_image(val, i), NULL, &w, &h, &why)) ar[i] = 1, unreadable++;
        else ar[i] = (double)h / (double)w;
    }
    int rc = yp_val_rect_shapes(ar, val->n, batch, imgsz, stride, YP_VAL_RECT_PAD, out, err);
    out->unreadable = unreadable;
    free(ar);
    return rc;
}
