/* yp_ciou.h - YOLOv5's CIoU of two boxes and its gradient (utils/metrics.py bbox_iou(...,
 * CIoU=True), eps 1e-7), fp32, exactly as the CPU backend's loss_level computes it (yp_ops.h).
 * Public so that the formula can be checked on its own (tests/test_loss.c) and read by whoever
 * ports the loss to another backend. Pure: no state, no allocation. */
#ifndef YP_CIOU_H
#define YP_CIOU_H

#ifdef __cplusplus
extern "C" {
#endif
/* CIoU of predicted box p and target box t (both x, y, w, h). If dp is non-NULL, writes
 * d(ciou)/d(p) with alpha = v / (v - iou + 1 + eps) held constant (YOLOv5 computes it under
 * no_grad). */
float yp_loss_ciou(const float p[4], const float t[4], float dp[4]);
#ifdef __cplusplus
}
#endif

#endif
