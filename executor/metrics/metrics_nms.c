/* metrics_nms.c - YOLOv5's non_max_suppression for validation (contract in yp_metrics.h): the
 * candidates above the confidence threshold, sorted by score, then torchvision's greedy NMS on
 * class-offset corner boxes. Everything lives in the caller's workspace:
 *   keys   n_cand x u64: (highest-first score key << 32) | (row * nc + class)
 *   tmp    n_cand x u64: the radix sort's other buffer
 *   boxes  k x 4 floats (offset corners), areas k floats, suppressed k bytes, k = min(n_cand, max_nms)
 * with n_cand = n_boxes * nc under multi-label, n_boxes otherwise. */
#include <math.h>
#include <stddef.h>

#include "metrics_internal.h"
#include "yp_metrics.h"

void yp_nms_cfg_val(yp_nms_cfg *c) {
    c->conf_thres = 0.001f;
    c->iou_thres = 0.6;
    c->max_det = 300;
    c->max_nms = 30000;
    c->max_wh = 7680.0f;
    c->multi_label = 1;
    c->agnostic = 0;
}

static int multi(const yp_nms_cfg *c, int nc) { return c->multi_label && nc > 1; }

static int cfg_ok(const yp_nms_cfg *c) {
    return c->conf_thres >= 0 && c->conf_thres <= 1 && c->iou_thres >= 0 && c->iou_thres <= 1 && c->max_det >= 1 &&
           c->max_nms >= 1 && isfinite(c->max_wh) && c->max_wh >= 0;
}

/* Candidates at most, or -1 when they do not fit the 32-bit index. */
static int64_t max_candidates(const yp_nms_cfg *c, int64_t n_boxes, int nc) {
    int64_t rows_nc;
    if (__builtin_mul_overflow(n_boxes, (int64_t)nc, &rows_nc) || rows_nc > (int64_t)UINT32_MAX) return -1;
    return multi(c, nc) ? rows_nc : n_boxes;
}

int64_t yp_nms_workspace_bytes(const yp_nms_cfg *c, int64_t n_boxes, int nc) {
    if (!c || !cfg_ok(c) || n_boxes < 0 || nc < 1) return -1;
    int64_t n = max_candidates(c, n_boxes, nc);
    if (n < 0) return -1;
    int64_t k = n < c->max_nms ? n : c->max_nms, keys, per_box, total;
    if (__builtin_mul_overflow(n, (int64_t)(2 * sizeof(uint64_t)), &keys) ||
        __builtin_mul_overflow(k, (int64_t)(5 * sizeof(float) + 1), &per_box) ||
        __builtin_add_overflow(keys, per_box, &total))
        return -1;
    return total;
}

static uint64_t cand_key(float score, int64_t index) { return (uint64_t)yp_mx_desc_key(score) << 32 | (uint64_t)index; }

/* Step 1-2: the candidates of pred into keys, in row then class order; returns their count. */
static int64_t collect(const yp_nms_cfg *c, const float *pred, int64_t n_boxes, int nc, uint64_t *keys) {
    const float conf = c->conf_thres;
    int64_t n = 0, fields = 5 + (int64_t)nc;
    for (int64_t b = 0; b < n_boxes; b++) {
        const float *row = pred + b * fields, obj = row[4];
        if (!(obj > conf)) continue;
        if (multi(c, nc)) {
            for (int j = 0; j < nc; j++) {
                float s = row[5 + j] * obj;
                if (s > conf) keys[n++] = cand_key(s, b * nc + j);
            }
            continue;
        }
        int best = 0;
        float s = row[5] * obj;
        for (int j = 1; j < nc; j++) {
            float v = row[5 + j] * obj;
            if (v > s) s = v, best = j;
        }
        if (s > conf) keys[n++] = cand_key(s, b * nc + best);
    }
    return n;
}

/* Step 3: the corners of pred's row b. */
static void corners(const float *row, float *xyxy) {
    float hw = row[2] / 2, hh = row[3] / 2;
    xyxy[0] = row[0] - hw;
    xyxy[1] = row[1] - hh;
    xyxy[2] = row[0] + hw;
    xyxy[3] = row[1] + hh;
}

static float fmax2(float a, float b) { return a < b ? b : a; }
static float fmin2(float a, float b) { return b < a ? b : a; }

/* torchvision's IoU of boxes i and j (offset corners, areas precomputed). */
static float nms_iou(const float *bi, float ai, const float *bj, float aj) {
    float w = fmax2(0.0f, fmin2(bi[2], bj[2]) - fmax2(bi[0], bj[0]));
    float h = fmax2(0.0f, fmin2(bi[3], bj[3]) - fmax2(bi[1], bj[1]));
    float inter = w * h;
    return inter / (ai + aj - inter);
}

int64_t yp_nms(const yp_nms_cfg *c, const float *pred, int64_t n_boxes, int nc, void *ws, int64_t ws_bytes,
               float *out, yp_err *err) {
    int64_t need = yp_nms_workspace_bytes(c, n_boxes, nc);
    if (need < 0)
        return yp_err_set(err, "nms: bad arguments (%lld boxes, %d classes, thresholds in [0, 1], max_det and "
                               "max_nms >= 1, at most 2^32 - 1 box-class pairs)",
                          (long long)n_boxes, nc);
    if (ws_bytes < need || (need && (!ws || (uintptr_t)ws % 8)))
        return yp_err_set(err, "nms: workspace of %lld bytes at %p; it needs %lld, 8-byte aligned "
                               "(yp_nms_workspace_bytes)",
                          (long long)ws_bytes, ws, (long long)need);
    if (n_boxes && (!pred || !out)) return yp_err_set(err, "nms: no prediction or output buffer");
    int64_t cap = max_candidates(c, n_boxes, nc);
    uint64_t *keys = ws, *tmp = keys + cap;
    int64_t n = collect(c, pred, n_boxes, nc, keys);
    yp_mx_sort_hi32(keys, tmp, n); /* step 4: highest score first, ties in candidate order */
    int64_t k = n < c->max_nms ? n : c->max_nms;
    int64_t kcap = cap < c->max_nms ? cap : c->max_nms;
    float *box = (float *)(tmp + cap), *area = box + 4 * kcap;
    unsigned char *suppressed = (unsigned char *)(area + kcap);
    for (int64_t i = 0; i < k; i++) {
        int64_t idx = (int64_t)(keys[i] & UINT32_MAX), b = idx / nc, j = idx % nc;
        float xyxy[4], off = c->agnostic ? 0.0f : (float)j * c->max_wh;
        corners(pred + b * (5 + (int64_t)nc), xyxy);
        for (int q = 0; q < 4; q++) box[4 * i + q] = xyxy[q] + off;
        area[i] = (box[4 * i + 2] - box[4 * i]) * (box[4 * i + 3] - box[4 * i + 1]);
        suppressed[i] = 0;
    }
    int64_t kept = 0; /* step 5 */
    for (int64_t i = 0; i < k && kept < c->max_det; i++) {
        if (suppressed[i]) continue;
        int64_t idx = (int64_t)(keys[i] & UINT32_MAX), b = idx / nc, j = idx % nc;
        const float *row = pred + b * (5 + (int64_t)nc);
        float *o = out + 6 * kept++;
        corners(row, o);
        o[4] = row[5 + j] * row[4];
        o[5] = (float)j;
        for (int64_t q = i + 1; q < k; q++)
            if (!suppressed[q] && (double)nms_iou(box + 4 * i, area[i], box + 4 * q, area[q]) > c->iou_thres)
                suppressed[q] = 1;
    }
    return kept;
}
