/* metrics_match.c - box_iou and process_batch's matching of detections to labels at the ten IoU
 * thresholds (contracts in yp_metrics.h). */
#include "yp_metrics.h"

const float yp_iou_thresholds[YP_IOU_N] = {0.5f, 0.55f, 0.6f, 0.65f, 0.7f, 0.75f, 0.8f, 0.85f, 0.9f, 0.95f};

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
