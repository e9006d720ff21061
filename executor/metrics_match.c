/* metrics_match.c - boxes back to original pixels (val.py's scale_boxes and its label
 * conversion), box_iou, and process_batch's matching of detections to labels at the ten IoU
 * thresholds (contracts in yp_metrics.h). */
#include "yp_metrics.h"

const float yp_iou_thresholds[YP_IOU_N] = {0.5f, 0.55f, 0.6f, 0.65f, 0.7f, 0.75f, 0.8f, 0.85f, 0.9f, 0.95f};

yp_ratio_pad yp_ratio_pad_fit(int64_t h1, int64_t w1, int64_t h0, int64_t w0) {
    double gh = (double)h1 / (double)h0, gw = (double)w1 / (double)w0, gain = gh < gw ? gh : gw;
    yp_ratio_pad lb = {gain, ((double)w1 - (double)w0 * gain) / 2, ((double)h1 - (double)h0 * gain) / 2, h0, w0};
    return lb;
}

/* clamp_(0, hi): NaN stays NaN, as in torch. */
static float clip(float v, float hi) { return v < 0 ? 0.0f : v > hi ? hi : v; }

void yp_scale_boxes(const yp_ratio_pad *lb, float *rows, int64_t n, int64_t row_floats) {
    const float pw = (float)lb->pad_w, ph = (float)lb->pad_h, g = (float)lb->gain;
    const float w0 = (float)lb->w0, h0 = (float)lb->h0;
    for (int64_t i = 0; i < n; i++) {
        float *b = rows + i * row_floats;
        b[0] = clip((b[0] - pw) / g, w0);
        b[1] = clip((b[1] - ph) / g, h0);
        b[2] = clip((b[2] - pw) / g, w0);
        b[3] = clip((b[3] - ph) / g, h0);
    }
}

void yp_labels_native(const yp_ratio_pad *lb, int64_t in_w, int64_t in_h, const float *in, int64_t n, float *out) {
    const float w = (float)in_w, h = (float)in_h;
    for (int64_t i = 0; i < n; i++) {
        const float *s = in + 5 * i;
        float cx = s[1] * w, cy = s[2] * h, hw = s[3] * w / 2, hh = s[4] * h / 2, cls = s[0];
        float *d = out + 5 * i;
        d[0] = cls;
        d[1] = cx - hw;
        d[2] = cy - hh;
        d[3] = cx + hw;
        d[4] = cy + hh;
    }
    yp_scale_boxes(lb, out + 1, n, 5);
}

float yp_box_iou(const float *a, const float *b) {
    float wx = (a[2] < b[2] ? a[2] : b[2]) - (a[0] > b[0] ? a[0] : b[0]);
    float wy = (a[3] < b[3] ? a[3] : b[3]) - (a[1] > b[1] ? a[1] : b[1]);
    float inter = (wx < 0 ? 0.0f : wx) * (wy < 0 ? 0.0f : wy);
    float area_a = (a[2] - a[0]) * (a[3] - a[1]), area_b = (b[2] - b[0]) * (b[3] - b[1]);
    return inter / (area_a + area_b - inter + 1e-7f);
}

void yp_match(const float *dets, int64_t n_det, const float *labels, int64_t n_lab, uint16_t *taken,
              uint16_t *correct) {
    for (int64_t l = 0; l < n_lab; l++) taken[l] = 0;
    for (int64_t d = 0; d < n_det; d++) {
        const float *det = dets + 6 * d;
        int64_t best = -1;
        float best_iou = 0;
        for (int64_t l = 0; l < n_lab; l++) { /* the highest IoU of the class; ties: the last */
            if (labels[5 * l] != det[5]) continue;
            float iou = yp_box_iou(labels + 5 * l + 1, det);
            if (best < 0 || iou >= best_iou) best = l, best_iou = iou;
        }
        uint16_t bits = 0;
        for (int t = 0; best >= 0 && t < YP_IOU_N; t++) {
            uint16_t bit = (uint16_t)(1u << t);
            if (best_iou >= yp_iou_thresholds[t] && !(taken[best] & bit)) bits |= bit, taken[best] |= bit;
        }
        correct[d] = bits;
    }
}
