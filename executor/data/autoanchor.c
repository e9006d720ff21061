/* autoanchor.c - YOLOv5's kmean_anchors and the anchor metric (yp_autoanchor.h). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "yp_autoanchor.h"
#include "yp_image.h"

/* The ratio metric of box (w, h) to anchor (kw, kh): min over the sides of min(r, 1/r). */
static inline float ratio(float w, float h, float kw, float kh) {
    float rw = w / kw, rh = h / kh;
    float a = rw < 1.0f / rw ? rw : 1.0f / rw, b = rh < 1.0f / rh ? rh : 1.0f / rh;
    return a < b ? a : b;
}

yp_anchor_metric yp_anchor_measure(const float *wh, int64_t n, const float *k, int n_k) {
    const float thr = (float)(1.0 / YP_ANCHOR_THR);
    double bpr = 0, aat = 0, fit = 0;
    for (int64_t i = 0; i < n; i++) {
        float best = 0.0f;
        for (int a = 0; a < n_k; a++) {
            float x = ratio(wh[2 * i], wh[2 * i + 1], k[2 * a], k[2 * a + 1]);
            aat += x > thr;
            if (x > best) best = x;
        }
        bpr += best > thr;
        fit += best > thr ? best : 0.0f;
    }
    yp_anchor_metric m = {0, 0, 0};
    if (n > 0) m.bpr = bpr / (double)n, m.aat = aat / (double)n, m.fitness = fit / (double)n;
    return m;
}

/* A standard normal draw (Box-Muller). */
static double normal(yp_rng *r) {
    double u = yp_rng_unit(r), v = yp_rng_unit(r);
    return sqrt(-2.0 * log(1.0 - u)) * cos(6.283185307179586 * v);
}

/* One k-means run (scipy.cluster.vq's: k distinct observations to start, Lloyd's steps until
 * the mean distance improves by no more than 1e-5; an empty cluster keeps its centre). Returns
 * the mean distance; c holds the centres. */
static double kmeans_run(const float *x, int64_t n, int n_k, yp_rng *rng, float *c, int *pick, int64_t *count,
                         double *sum) {
    for (int a = 0; a < n_k; a++) { /* n_k distinct observations */
        int64_t j;
        int dup;
        do {
            j = yp_rng_below(rng, n);
            dup = 0;
            for (int b = 0; b < a; b++) dup |= pick[b] == j;
        } while (dup);
        pick[a] = (int)j;
        c[2 * a] = x[2 * j], c[2 * a + 1] = x[2 * j + 1];
    }
    double prev = INFINITY, dist = INFINITY;
    for (int it = 0; it < 300; it++) {
        memset(count, 0, (size_t)n_k * sizeof *count);
        memset(sum, 0, (size_t)n_k * 2 * sizeof *sum);
        double total = 0;
        for (int64_t i = 0; i < n; i++) {
            int best = 0;
            double bd = INFINITY;
            for (int a = 0; a < n_k; a++) {
                double dx = x[2 * i] - c[2 * a], dy = x[2 * i + 1] - c[2 * a + 1], d = dx * dx + dy * dy;
                if (d < bd) bd = d, best = a;
            }
            total += sqrt(bd);
            count[best]++, sum[2 * best] += x[2 * i], sum[2 * best + 1] += x[2 * i + 1];
        }
        dist = total / (double)n;
        for (int a = 0; a < n_k; a++)
            if (count[a]) c[2 * a] = (float)(sum[2 * a] / count[a]), c[2 * a + 1] = (float)(sum[2 * a + 1] / count[a]);
        if (prev - dist <= 1e-5) break;
        prev = dist;
    }
    return dist;
}

static int by_area(const void *a, const void *b) {
    const float *p = a, *q = b;
    float x = p[0] * p[1], y = q[0] * q[1];
    return (x > y) - (x < y);
}

int yp_anchor_kmeans(const float *wh, int64_t n, int n_k, int img_size, int gen, yp_rng *rng, float *k,
                     yp_anchor_fit *fit, yp_err *err) {
    memset(fit, 0, sizeof *fit);
    fit->n_boxes = n;
    if (n < 1) return yp_err_set(err, "AutoAnchor: the training labels have no boxes to fit anchors to");
    float *x = malloc((size_t)n * 2 * sizeof *x), *c = malloc((size_t)n_k * 2 * sizeof *c),
          *kg = malloc((size_t)n_k * 2 * sizeof *kg);
    int *pick = malloc((size_t)n_k * sizeof *pick);
    int64_t *count = malloc((size_t)n_k * sizeof *count);
    double *sum = malloc((size_t)n_k * 2 * sizeof *sum);
    int rc = 0;
    if (!x || !c || !kg || !pick || !count || !sum) {
        rc = yp_err_set(err, "AutoAnchor: out of memory for %lld boxes", (long long)n);
        goto done;
    }
    int64_t m = 0;
    for (int64_t i = 0; i < n; i++) {
        fit->n_small += wh[2 * i] < 3.0f || wh[2 * i + 1] < 3.0f;
        if (wh[2 * i] >= 2.0f || wh[2 * i + 1] >= 2.0f) x[2 * m] = wh[2 * i], x[2 * m + 1] = wh[2 * i + 1], m++;
    }
    fit->n_used = m;
    double sd[2] = {0, 0};
    for (int d = 0; d < 2 && m > 0; d++) { /* numpy's std (ddof 0) */
        double mean = 0, var = 0;
        for (int64_t i = 0; i < m; i++) mean += x[2 * i + d];
        mean /= (double)m;
        for (int64_t i = 0; i < m; i++) var += (x[2 * i + d] - mean) * (x[2 * i + d] - mean);
        sd[d] = sqrt(var / (double)m);
    }
    if (m >= n_k && sd[0] > 0 && sd[1] > 0) { /* k-means on whitened sizes, the best of 30 runs */
        for (int64_t i = 0; i < m; i++)
            x[2 * i] = (float)(x[2 * i] / sd[0]), x[2 * i + 1] = (float)(x[2 * i + 1] / sd[1]);
        double best = INFINITY;
        for (int run = 0; run < 30; run++) {
            double d = kmeans_run(x, m, n_k, rng, c, pick, count, sum);
            if (d < best) best = d, memcpy(k, c, (size_t)n_k * 2 * sizeof *k);
        }
        for (int a = 0; a < n_k; a++)
            k[2 * a] = (float)(k[2 * a] * sd[0]), k[2 * a + 1] = (float)(k[2 * a + 1] * sd[1]);
        fit->kmeans = 1;
    } else { /* np.sort(npr.rand(n * 2)).reshape(n, 2) * img_size */
        for (int a = 0; a < 2 * n_k; a++) k[a] = (float)(yp_rng_unit(rng) * img_size);
        for (int a = 1; a < 2 * n_k; a++)
            for (int b = a; b > 0 && k[b - 1] > k[b]; b--) {
                float t = k[b];
                k[b] = k[b - 1], k[b - 1] = t;
            }
    }
    qsort(k, (size_t)n_k, 2 * sizeof *k, by_area);
    fit->before = yp_anchor_measure(wh, n, k, n_k);
    double f = yp_anchor_measure(wh, n, k, n_k).fitness;
    for (int g = 0; g < gen; g++) { /* mutate until something changes, keep improvements */
        int changed = 0;
        while (!changed) {
            double scale = yp_rng_unit(rng);
            for (int a = 0; a < 2 * n_k; a++) {
                double v = yp_rng_unit(rng) < 0.9 ? scale * normal(rng) * 0.1 + 1.0 : 1.0;
                v = v < 0.3 ? 0.3 : v > 3.0 ? 3.0 : v;
                changed |= v != 1.0;
                kg[a] = (float)(k[a] * v);
                if (kg[a] < 2.0f) kg[a] = 2.0f;
            }
        }
        double fg = yp_anchor_measure(wh, n, kg, n_k).fitness;
        if (fg > f) f = fg, memcpy(k, kg, (size_t)n_k * 2 * sizeof *k);
    }
    qsort(k, (size_t)n_k, 2 * sizeof *k, by_area);
    fit->after = yp_anchor_measure(wh, n, k, n_k);
done:
    free(x), free(c), free(kg), free(pick), free(count), free(sum);
    return rc;
}

int yp_autoanchor_graph(yp_graph *g, const yp_labels *labels, int img_size, uint64_t seed, yp_anchor_fit *fit,
                        yp_err *err) {
    int64_t n = 0;
    for (int64_t i = 0; i < labels->n; i++) {
        int64_t r;
        yp_labels_rows(labels, i, &r);
        n += r;
    }
    float *wh = malloc((size_t)(n > 0 ? n : 1) * 2 * sizeof *wh);
    if (!wh) return yp_err_set(err, "AutoAnchor: out of memory for %lld labels", (long long)n);
    yp_image_limits lim;
    yp_image_limits_default(&lim);
    int64_t m = 0;
    for (int64_t i = 0; i < labels->n; i++) {
        int64_t r;
        const float *rows = yp_labels_rows(labels, i, &r);
        int w = 0, h = 0;
        yp_err why;
        if (r == 0 || yp_image_probe(yp_labels_image(labels, i), &lim, &w, &h, &why)) continue;
        double side = w > h ? w : h, sw = img_size * w / side, sh = img_size * h / side;
        for (int64_t j = 0; j < r; j++)
            wh[2 * m] = (float)(rows[5 * j + 3] * sw), wh[2 * m + 1] = (float)(rows[5 * j + 4] * sh), m++;
    }
    int n_k = g->nl * g->na;
    float k[YP_MAX_LEVELS * YP_MAX_ANCHORS * 2];
    yp_rng rng;
    yp_rng_seed(&rng, seed, 0x616e63686f7273ull); /* "anchors" */
    int rc = yp_anchor_kmeans(wh, m, n_k, img_size, 1000, &rng, k, fit, err);
    free(wh);
    if (rc) return rc;
    int order[YP_MAX_LEVELS]; /* the levels by stride: smallest anchors to the finest (check_anchor_order) */
    for (int l = 0; l < g->nl; l++) order[l] = l;
    for (int l = 1; l < g->nl; l++)
        for (int j = l; j > 0 && g->strides[order[j - 1]] > g->strides[order[j]]; j--) {
            int t = order[j];
            order[j] = order[j - 1], order[j - 1] = t;
        }
    for (int r = 0; r < g->nl; r++)
        for (int a = 0; a < g->na; a++) {
            g->anchors[order[r]][a][0] = k[2 * (r * g->na + a)];
            g->anchors[order[r]][a][1] = k[2 * (r * g->na + a) + 1];
        }
    g->anchors_auto = 0;
    return 0;
}
