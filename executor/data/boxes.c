/* boxes.c - boxes of the letterboxed input back to original pixels (val.py's scale_boxes and
 * its label conversion; contracts in yp_boxes.h). */
#include "yp_boxes.h"

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
