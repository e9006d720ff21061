/* metrics_ap.c - val.py's statistics and ap_per_class (contracts in yp_metrics.h): per image the
 * detections are matched and kept (yp_map_add); once per run they are sorted by score, grouped
 * by class, and each labelled class gets its precision/recall curves, AP at the ten IoU
 * thresholds and P/R at the maximum of the smoothed mean F1 (yp_map_compute).
 *
 * The float64 arithmetic follows numpy's operation by operation: np.interp's rule
 * (metrics_internal.h), pairwise sums for sums and means over one axis, sequential sums across
 * classes (a mean over axis 0) and in the box filter (np.convolve's dot product). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "metrics_internal.h"
#include "yp_metrics.h"

#define F1_FILTER 101 /* smooth(y, 0.1) on 1000 points: round(1000 * 0.1 * 2) // 2 + 1 */
#define AP_GRID 101   /* compute_ap's recall grid: linspace(0, 1, 101) */

/* np.linspace(0, 1, n)[i]: i * (1 / (n - 1)), the last exactly 1. */
static double linspace01(int64_t i, int64_t n) { return i == n - 1 ? 1.0 : (double)i * (1.0 / (double)(n - 1)); }

/* ------------------------------------------------------------ compute_ap */

/* AP of the sentinel-padded curve mrec/mpre (m points); mpre becomes its envelope. grid: room
 * for AP_GRID - 1 doubles. */
static double ap_padded(const double *mrec, double *mpre, int64_t m, double *grid) {
    for (int64_t i = m - 2; i >= 0; i--) /* np.maximum.accumulate from the right (NaN propagates) */
        if (!(mpre[i] >= mpre[i + 1])) mpre[i] = isnan(mpre[i]) ? mpre[i] : mpre[i + 1];
    double x0 = 0, y0 = yp_mx_interp(0.0, mrec, mpre, m, mpre[0], mpre[m - 1]);
    for (int q = 1; q < AP_GRID; q++) { /* trapezoid: (x1 - x0) * (y1 + y0) / 2, summed pairwise */
        double x1 = linspace01(q, AP_GRID), y1 = yp_mx_interp(x1, mrec, mpre, m, mpre[0], mpre[m - 1]);
        grid[q - 1] = (x1 - x0) * (y1 + y0) / 2.0;
        x0 = x1, y0 = y1;
    }
    return yp_mx_sum(grid, AP_GRID - 1);
}

double yp_compute_ap(const double *recall, const double *precision, int64_t n, double *work) {
    double *mrec = work, *mpre = work + n + 2, grid[AP_GRID - 1];
    mrec[0] = 0, mpre[0] = 1;
    for (int64_t i = 0; i < n; i++) mrec[i + 1] = recall[i], mpre[i + 1] = precision[i];
    mrec[n + 1] = 1, mpre[n + 1] = 0;
    return ap_padded(mrec, mpre, n + 2, grid);
}

/* ------------------------------------------------------------ stats */

void yp_map_free(yp_map *m) {
    if (!m) return;
    void *p[] = {m->correct, m->conf, m->cls, m->nt, m->p, m->r, m->f1, m->tp, m->fp, m->ap50, m->ap,
                 m->ap_iou, m->maps, m->p_curve, m->r_curve, m->keys, m->tmp, m->grouped, m->start,
                 m->xp, m->mrec, m->mpre, m->grid, m->taken};
    for (size_t i = 0; i < sizeof p / sizeof *p; i++) free(p[i]);
    memset(m, 0, sizeof *m);
}

int yp_map_init(yp_map *m, int nc, int64_t cap_det, int64_t cap_labels, yp_err *err) {
    memset(m, 0, sizeof *m);
    /* detection indices travel in 32 bits; cap_det + 2 doubles per curve buffer */
    if (nc < 1 || nc > 1 << 20 || cap_det < 0 || cap_det > (int64_t)UINT32_MAX || cap_labels < 0 ||
        cap_labels > INT64_MAX / 2)
        return yp_err_set(err, "metrics: bad sizes (%d classes, %lld detections, %lld labels per image)", nc,
                          (long long)cap_det, (long long)cap_labels);
    size_t d = (size_t)cap_det, c = (size_t)nc;
    m->nc = nc, m->cap_det = cap_det, m->cap_labels = cap_labels;
    m->correct = calloc(d + 1, sizeof *m->correct);
    m->conf = calloc(d + 1, sizeof *m->conf);
    m->cls = calloc(d + 1, sizeof *m->cls);
    m->nt = calloc(c, sizeof *m->nt);
    double **per_class[] = {&m->p, &m->r, &m->f1, &m->tp, &m->fp, &m->ap50, &m->ap, &m->maps};
    int ok = m->correct && m->conf && m->cls && m->nt;
    for (size_t i = 0; i < sizeof per_class / sizeof *per_class; i++)
        ok &= (*per_class[i] = calloc(c, sizeof(double))) != 0;
    ok &= (m->ap_iou = calloc(c * YP_IOU_N, sizeof(double))) != 0;
    ok &= (m->p_curve = calloc(c * YP_MAP_CURVE, sizeof(double))) != 0;
    ok &= (m->r_curve = calloc(c * YP_MAP_CURVE, sizeof(double))) != 0;
    ok &= (m->keys = calloc(d + 1, sizeof(uint64_t))) != 0 && (m->tmp = calloc(d + 1, sizeof(uint64_t))) != 0;
    /* start: the class offsets (nc + 1), then a copy being filled (nc) */
    ok &= (m->grouped = calloc(d + 1, sizeof(uint32_t))) != 0 && (m->start = calloc(2 * c + 1, sizeof(int64_t))) != 0;
    /* xp: one class's scores, then the labelled classes' values being averaged */
    ok &= (m->xp = calloc((d > c ? d : c) + 1, sizeof(double))) != 0;
    ok &= (m->mrec = calloc(d + 2, sizeof(double))) != 0 && (m->mpre = calloc(d + 2, sizeof(double))) != 0;
    /* the grid buffer holds the mean F1 padded (1000 + 100) and smoothed (1000) */
    ok &= (m->grid = calloc(2 * YP_MAP_CURVE + F1_FILTER, sizeof(double))) != 0;
    ok &= (m->taken = calloc((size_t)cap_labels + 1, sizeof(uint16_t))) != 0;
    if (!ok) {
        yp_map_free(m);
        return yp_err_set(err, "metrics: out of memory for %lld detections of %d classes", (long long)cap_det, nc);
    }
    m->best = -1;
    return 0;
}

int64_t yp_map_host_bytes(int nc, int64_t cap_det, int64_t cap_labels) {
    if (nc < 1 || nc > 1 << 20 || cap_det < 0 || cap_det > (int64_t)UINT32_MAX || cap_labels < 0 ||
        cap_labels > INT64_MAX / 4)
        return -1;
    int64_t d = cap_det, c = nc;
    int64_t per_det =
        (d + 1) * (int64_t)(sizeof(uint16_t) + 2 * sizeof(float) + 2 * sizeof(uint64_t) + sizeof(uint32_t)) +
        ((d > c ? d : c) + 1) * (int64_t)sizeof(double) + 2 * (d + 2) * (int64_t)sizeof(double);
    int64_t per_class = c * (int64_t)sizeof(int64_t) + 8 * c * (int64_t)sizeof(double) +
                        c * (YP_IOU_N + 2 * YP_MAP_CURVE) * (int64_t)sizeof(double) +
                        (2 * c + 1) * (int64_t)sizeof(int64_t);
    return per_det + per_class + (2 * YP_MAP_CURVE + F1_FILTER) * (int64_t)sizeof(double) +
           (cap_labels + 1) * (int64_t)sizeof(uint16_t);
}

void yp_map_reset(yp_map *m) {
    m->n_det = m->seen = 0;
    memset(m->nt, 0, (size_t)m->nc * sizeof *m->nt);
}

/* A class value: integral and in [0, nc). */
static int class_ok(float v, int nc) { return v >= 0 && v < (float)nc && v == floorf(v); }

int yp_map_add(yp_map *m, const float *dets, int64_t n_det, const float *labels, int64_t n_lab, yp_err *err) {
    if (n_det < 0 || n_lab < 0 || (n_det && !dets) || (n_lab && !labels))
        return yp_err_set(err, "metrics: bad image (%lld detections, %lld labels)", (long long)n_det, (long long)n_lab);
    if (n_det > m->cap_det - m->n_det || n_lab > m->cap_labels)
        return yp_err_set(err, "metrics: image %lld brings %lld detections (%lld of %lld used) and %lld labels "
                               "(at most %lld); size yp_map_init for the run",
                          (long long)m->seen, (long long)n_det, (long long)m->n_det, (long long)m->cap_det,
                          (long long)n_lab, (long long)m->cap_labels);
    for (int64_t i = 0; i < n_lab; i++)
        if (!class_ok(labels[5 * i], m->nc))
            return yp_err_set(err, "metrics: image %lld label %lld: class %g is not one of 0..%d", (long long)m->seen,
                              (long long)i, labels[5 * i], m->nc - 1);
    for (int64_t i = 0; i < n_det; i++)
        if (!class_ok(dets[6 * i + 5], m->nc) || !isfinite(dets[6 * i + 4]))
            return yp_err_set(err, "metrics: image %lld detection %lld: class %g (0..%d), score %g (finite)",
                              (long long)m->seen, (long long)i, dets[6 * i + 5], m->nc - 1, dets[6 * i + 4]);
    uint16_t *correct = m->correct + m->n_det;
    if (n_lab) yp_match(dets, n_det, labels, n_lab, m->taken, correct);
    else memset(correct, 0, (size_t)n_det * sizeof *correct);
    for (int64_t i = 0; i < n_det; i++) m->conf[m->n_det + i] = dets[6 * i + 4], m->cls[m->n_det + i] = dets[6 * i + 5];
    for (int64_t i = 0; i < n_lab; i++) m->nt[(int)labels[5 * i]]++;
    m->n_det += n_det, m->seen++;
    return 0;
}

/* ------------------------------------------------------------ ap_per_class */

static void clear_results(yp_map *m) {
    size_t c = (size_t)m->nc;
    double *per_class[] = {m->p, m->r, m->f1, m->tp, m->fp, m->ap50, m->ap, m->maps};
    for (size_t i = 0; i < sizeof per_class / sizeof *per_class; i++) memset(per_class[i], 0, c * sizeof(double));
    memset(m->ap_iou, 0, c * YP_IOU_N * sizeof(double));
    memset(m->p_curve, 0, c * YP_MAP_CURVE * sizeof(double));
    memset(m->r_curve, 0, c * YP_MAP_CURVE * sizeof(double));
    m->mp = m->mr = m->map50 = m->map = m->fitness = 0;
    m->best = -1;
    m->n_classes = 0;
    for (int k = 0; k < m->nc; k++) m->n_classes += m->nt[k] > 0;
}

/* Detections sorted by score (highest first, stable), then grouped by class keeping that order:
 * class k's are grouped[start[k] .. start[k + 1]). */
static void sort_and_group(yp_map *m) {
    int64_t n = m->n_det;
    for (int64_t i = 0; i < n; i++) m->keys[i] = (uint64_t)yp_mx_desc_key(m->conf[i]) << 32 | (uint64_t)i;
    yp_mx_sort_hi32(m->keys, m->tmp, n);
    memset(m->start, 0, ((size_t)m->nc + 1) * sizeof *m->start);
    for (int64_t i = 0; i < n; i++) m->start[(int)m->cls[i] + 1]++;
    for (int k = 0; k < m->nc; k++) m->start[k + 1] += m->start[k];
    int64_t *fill = m->start + m->nc + 1;
    memcpy(fill, m->start, (size_t)m->nc * sizeof *fill);
    for (int64_t i = 0; i < n; i++) {
        uint32_t d = (uint32_t)(m->keys[i] & UINT32_MAX);
        m->grouped[fill[(int)m->cls[d]]++] = d;
    }
}

/* One labelled class k: its curves at px and its AP per threshold. */
static void class_curves(yp_map *m, int k) {
    const uint32_t *det = m->grouped + m->start[k];
    int64_t n = m->start[k + 1] - m->start[k];
    if (!n) return; /* no detections: zeros */
    double n_l = (double)m->nt[k] + 1e-16, grid[AP_GRID - 1];
    for (int64_t i = 0; i < n; i++) m->xp[i] = -(double)m->conf[det[i]];
    for (int t = 0; t < YP_IOU_N; t++) {
        int64_t tpc = 0, fpc = 0;
        m->mrec[0] = 0, m->mpre[0] = 1;
        for (int64_t i = 0; i < n; i++) {
            if (m->correct[det[i]] >> t & 1) tpc++;
            else fpc++;
            m->mrec[i + 1] = (double)tpc / n_l;
            m->mpre[i + 1] = (double)tpc / (double)(tpc + fpc);
        }
        m->mrec[n + 1] = 1, m->mpre[n + 1] = 0;
        if (t == 0) {
            const double *rec = m->mrec + 1, *pre = m->mpre + 1;
            for (int g = 0; g < YP_MAP_CURVE; g++) {
                double x = -linspace01(g, YP_MAP_CURVE);
                m->r_curve[(int64_t)k * YP_MAP_CURVE + g] = yp_mx_interp(x, m->xp, rec, n, 0.0, rec[n - 1]);
                m->p_curve[(int64_t)k * YP_MAP_CURVE + g] = yp_mx_interp(x, m->xp, pre, n, 1.0, pre[n - 1]);
            }
        }
        m->ap_iou[(int64_t)k * YP_IOU_N + t] = ap_padded(m->mrec, m->mpre, n + 2, grid);
    }
}

static double f1_of(double p, double r) { return 2 * p * r / (p + r + 1e-16); }

/* The index of the first maximum of the mean F1 over labelled classes, box-filtered. */
static int best_f1(yp_map *m) {
    double *padded = m->grid, *smooth = m->grid + YP_MAP_CURVE + F1_FILTER - 1;
    const int half = F1_FILTER / 2;
    for (int g = 0; g < YP_MAP_CURVE; g++) {
        double s = 0;
        int first = 1;
        for (int k = 0; k < m->nc; k++) {
            if (!m->nt[k]) continue;
            double f = f1_of(m->p_curve[(int64_t)k * YP_MAP_CURVE + g], m->r_curve[(int64_t)k * YP_MAP_CURVE + g]);
            s = first ? f : s + f, first = 0;
        }
        padded[half + g] = s / m->n_classes;
    }
    for (int i = 0; i < half; i++) /* the ends, repeated */
        padded[i] = padded[half], padded[half + YP_MAP_CURVE + i] = padded[half + YP_MAP_CURVE - 1];
    const double v = 1.0 / F1_FILTER;
    int best = 0;
    for (int g = 0; g < YP_MAP_CURVE; g++) {
        double s = 0;
        for (int i = 0; i < F1_FILTER; i++) s += padded[g + i] * v;
        smooth[g] = s;
        if (s > smooth[best]) best = g;
    }
    return best;
}

/* The mean of values[k] over the labelled classes k, as np.mean (pairwise). */
static double labelled_mean(const yp_map *m, const double *values, double *scratch) {
    int64_t n = 0;
    for (int k = 0; k < m->nc; k++)
        if (m->nt[k]) scratch[n++] = values[k];
    return yp_mx_sum(scratch, n) / (double)n;
}

void yp_map_compute(yp_map *m) {
    clear_results(m);
    int any = 0;
    for (int64_t i = 0; i < m->n_det && !any; i++) any = m->correct[i] != 0;
    if (!any) return; /* val.py: stats[0].any() false, every metric stays 0 */
    sort_and_group(m);
    for (int k = 0; k < m->nc; k++)
        if (m->nt[k]) class_curves(m, k);
    int best = m->best = best_f1(m);
    for (int k = 0; k < m->nc; k++) {
        if (!m->nt[k]) continue;
        double p = m->p_curve[(int64_t)k * YP_MAP_CURVE + best], r = m->r_curve[(int64_t)k * YP_MAP_CURVE + best];
        m->p[k] = p, m->r[k] = r, m->f1[k] = f1_of(p, r);
        m->tp[k] = nearbyint(r * (double)m->nt[k]);
        m->fp[k] = nearbyint(m->tp[k] / (p + 1e-16) - m->tp[k]);
        m->ap50[k] = m->ap_iou[(int64_t)k * YP_IOU_N];
        m->ap[k] = yp_mx_sum(m->ap_iou + (int64_t)k * YP_IOU_N, YP_IOU_N) / YP_IOU_N;
    }
    double *scratch = m->xp;
    m->mp = labelled_mean(m, m->p, scratch);
    m->mr = labelled_mean(m, m->r, scratch);
    m->map50 = labelled_mean(m, m->ap50, scratch);
    m->map = labelled_mean(m, m->ap, scratch);
    m->fitness = 0.1 * m->map50 + 0.9 * m->map;
    for (int k = 0; k < m->nc; k++) m->maps[k] = m->nt[k] ? m->ap[k] : m->map;
}
