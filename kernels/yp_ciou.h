/* yp_ciou.h - YOLOv5's CIoU of two boxes and its gradient (utils/metrics.py bbox_iou(...,
 * CIoU=True), eps 1e-7), fp32, exactly as the CPU backend's loss_level computes it (yp_ops.h).
 * Public so that the formula can be checked on its own (tests/executor/test_loss.c) and shared by the
 * backends: the body is a static inline function that the CPU backend (kernels/cpu/ciou.c,
 * yp_loss_ciou) and the CUDA backend (kernels/cuda/loss.cu, in device code) compile from this one
 * text, so the two evaluate the same expression (nvcc may contract a multiply-add into an FMA,
 * a last-bit difference). Pure: no state, no allocation.
 * fp32 element math as YOLOv5's bbox_iou writes it; the gradient is bbox_iou's graph
 * differentiated by hand, with PyTorch's conventions where it has a choice (min/max ties, clamp). */
#ifndef YP_CIOU_H
#define YP_CIOU_H

#include <math.h>
#include <stddef.h>

#ifdef __CUDACC__
#define YP_CIOU_FN static inline __host__ __device__
#else
#define YP_CIOU_FN static inline
#endif

#ifdef __cplusplus
extern "C" {
#endif
/* CIoU of predicted box p and target box t (both x, y, w, h). If dp is non-NULL, writes
 * d(ciou)/d(p) with alpha = v / (v - iou + 1 + eps) held constant (YOLOv5 computes it under
 * no_grad). Defined in kernels/cpu/ciou.c as yp_ciou_eval. */
float yp_loss_ciou(const float p[4], const float t[4], float dp[4]);
#ifdef __cplusplus
}
#endif

#define YP_CIOU_EPS 1e-7f
#define YP_CIOU_FOUR_OVER_PI2 0.40528473456935108578 /* 4 / pi^2, the CIoU aspect-ratio term's constant */

/* PyTorch's minimum/maximum backward: the gradient goes to the smaller (larger) input, half to each on a tie. */
YP_CIOU_FN float yp_ciou_dmin_first(float a, float b) { return a < b ? 1.0f : a == b ? 0.5f : 0.0f; }
YP_CIOU_FN float yp_ciou_dmax_first(float a, float b) { return a > b ? 1.0f : a == b ? 0.5f : 0.0f; }

/* yp_loss_ciou's body (same arguments and result). */
YP_CIOU_FN float yp_ciou_eval(const float p[4], const float t[4], float dp[4]) {
    const float x1 = p[0], y1 = p[1], w1 = p[2], h1 = p[3], x2 = t[0], y2 = t[1], w2 = t[2], h2 = t[3];
    /* xywh -> corners */
    const float b1x1 = x1 - w1 / 2, b1x2 = x1 + w1 / 2, b1y1 = y1 - h1 / 2, b1y2 = y1 + h1 / 2;
    const float b2x1 = x2 - w2 / 2, b2x2 = x2 + w2 / 2, b2y1 = y2 - h2 / 2, b2y2 = y2 + h2 / 2;
    /* intersection, union, IoU */
    const float iw_raw = fminf(b1x2, b2x2) - fmaxf(b1x1, b2x1), ih_raw = fminf(b1y2, b2y2) - fmaxf(b1y1, b2y1);
    const float iw = iw_raw > 0.0f ? iw_raw : 0.0f, ih = ih_raw > 0.0f ? ih_raw : 0.0f;
    const float inter = iw * ih;
    const float uni = w1 * h1 + w2 * h2 - inter + YP_CIOU_EPS;
    const float iou = inter / uni;
    /* enclosing box diagonal, centre distance */
    const float cw = fmaxf(b1x2, b2x2) - fminf(b1x1, b2x1), ch = fmaxf(b1y2, b2y2) - fminf(b1y1, b2y1);
    const float c2 = cw * cw + ch * ch + YP_CIOU_EPS;
    const float dx = b2x1 + b2x2 - b1x1 - b1x2, dy = b2y1 + b2y2 - b1y1 - b1y2;
    const float rho2 = (dx * dx + dy * dy) / 4;
    /* aspect ratio term; alpha is a constant for the gradient (no_grad in YOLOv5) */
    const float datan = atanf(w2 / h2) - atanf(w1 / h1);
    const float v = (float)YP_CIOU_FOUR_OVER_PI2 * datan * datan;
    const float alpha = v / (v - iou + (1.0f + YP_CIOU_EPS));
    const float ciou = iou - (rho2 / c2 + v * alpha);
    if (!dp)
        return ciou;

    /* backward, d(ciou)/d(.) */
    float g_b1x1 = 0, g_b1x2 = 0, g_b1y1 = 0, g_b1y2 = 0, g_w1 = 0, g_h1 = 0;
    /* v * alpha: v = k * datan^2, datan = atan(w2/h2) - atan(w1/h1) */
    const float g_v = -alpha;
    const float r1 = w1 / h1;
    const float g_r1 = -(g_v * (float)YP_CIOU_FOUR_OVER_PI2 * 2.0f * datan) / (1.0f + r1 * r1);
    g_w1 += g_r1 / h1;
    g_h1 += -g_r1 * w1 / (h1 * h1);
    /* rho2 / c2 */
    const float g_rho2 = -1.0f / c2;
    const float g_c2 = rho2 / (c2 * c2);
    const float g_dx = g_rho2 * dx / 2, g_dy = g_rho2 * dy / 2;
    g_b1x1 -= g_dx;
    g_b1x2 -= g_dx;
    g_b1y1 -= g_dy;
    g_b1y2 -= g_dy;
    const float g_cw = g_c2 * 2.0f * cw, g_ch = g_c2 * 2.0f * ch;
    g_b1x2 += g_cw * yp_ciou_dmax_first(b1x2, b2x2);
    g_b1x1 -= g_cw * yp_ciou_dmin_first(b1x1, b2x1);
    g_b1y2 += g_ch * yp_ciou_dmax_first(b1y2, b2y2);
    g_b1y1 -= g_ch * yp_ciou_dmin_first(b1y1, b2y1);
    /* iou = inter / union, union = w1*h1 + w2*h2 - inter + eps */
    const float g_uni = -inter / (uni * uni);
    const float g_inter = 1.0f / uni - g_uni;
    g_w1 += g_uni * h1;
    g_h1 += g_uni * w1;
    /* inter = clamp(iw_raw, 0) * clamp(ih_raw, 0); clamp passes the gradient where input >= 0 */
    const float g_iw = iw_raw >= 0.0f ? g_inter * ih : 0.0f, g_ih = ih_raw >= 0.0f ? g_inter * iw : 0.0f;
    g_b1x2 += g_iw * yp_ciou_dmin_first(b1x2, b2x2);
    g_b1x1 -= g_iw * yp_ciou_dmax_first(b1x1, b2x1);
    g_b1y2 += g_ih * yp_ciou_dmin_first(b1y2, b2y2);
    g_b1y1 -= g_ih * yp_ciou_dmax_first(b1y1, b2y1);
    /* corners -> xywh */
    dp[0] = g_b1x1 + g_b1x2;
    dp[1] = g_b1y1 + g_b1y2;
    dp[2] = g_w1 + (g_b1x2 - g_b1x1) / 2;
    dp[3] = g_h1 + (g_b1y2 - g_b1y1) / 2;
    return ciou;
}

#endif
