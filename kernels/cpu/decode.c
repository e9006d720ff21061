/* decode.c - the evaluation decode of YOLOv5's Detect on the CPU (fp32): each level's raw NHWC
 * output to boxes in pixels and scores, in PyTorch's row order (contract in yp_ops.h). The
 * arithmetic follows models/yolo.py term for term: xy = (2s + (cell - 0.5)) * stride and
 * wh = (2s)^2 * anchor, s = 1 / (1 + e^-raw). */
#include <math.h>

#include "yp_cpu.h"

static int decode_check(const char *op, const yp_decode_desc *d, const float *const *x, const float *y) {
    if (!d) return yp_cpu_fail("%s: NULL descriptor", op);
    if (yp_cpu_check_elem(op, d->dtype)) return -1;
    if (d->n < 1 || d->nl < 1 || d->nl > YP_DECODE_MAX_LEVELS || d->na < 1 || d->na > YP_DECODE_MAX_ANCHORS ||
        d->nc < 0)
        return yp_cpu_fail("%s: %lld images, %d levels (1..%d), %d anchors (1..%d), %d classes: out of range", op,
                           (long long)d->n, d->nl, YP_DECODE_MAX_LEVELS, d->na, YP_DECODE_MAX_ANCHORS, d->nc);
    if (!x || !y) return yp_cpu_fail("%s: NULL buffer", op);
    for (int l = 0; l < d->nl; l++) {
        if (d->h[l] < 1 || d->w[l] < 1 || !(d->stride[l] > 0.0f))
            return yp_cpu_fail("%s: level %d: grid %lldx%lld, stride %g: must be positive", op, l, (long long)d->h[l],
                               (long long)d->w[l], (double)d->stride[l]);
        if (!x[l]) return yp_cpu_fail("%s: NULL input of level %d", op, l);
    }
    return 0;
}

static inline float sigmoid(float v) { return 1.0f / (1.0f + expf(-v)); }

/* One grid row gy of anchor a of image i at level l: w cells from `in` (stride na*no floats
 * between cells) into `out` (no floats per row). */
static void decode_row(const yp_decode_desc *d, int l, int a, int64_t gy, const float *in, float *out) {
    const int no = d->nc + 5, step = d->na * no;
    const float stride = d->stride[l], aw = d->anchors[l][a][0], ah = d->anchors[l][a][1];
    const float cy = (float)gy - 0.5f;
    for (int64_t gx = 0; gx < d->w[l]; gx++, in += step, out += no) {
        float sx = sigmoid(in[0]) * 2.0f, sy = sigmoid(in[1]) * 2.0f;
        float sw = sigmoid(in[2]) * 2.0f, sh = sigmoid(in[3]) * 2.0f;
        out[0] = (sx + ((float)gx - 0.5f)) * stride;
        out[1] = (sy + cy) * stride;
        out[2] = sw * sw * aw;
        out[3] = sh * sh * ah;
        for (int f = 4; f < no; f++) out[f] = sigmoid(in[f]);
    }
}

int yp_cpu_detect_decode(yp_backend *be, const yp_decode_desc *d, const float *const *x, float *y) {
    static const char op[] = "detect_decode";
    (void)be;
    if (decode_check(op, d, x, y)) return -1;
    const int no = d->nc + 5;
    int64_t rows = 0, first[YP_DECODE_MAX_LEVELS];
    for (int l = 0; l < d->nl; l++) first[l] = rows, rows += (int64_t)d->na * d->h[l] * d->w[l];
    for (int l = 0; l < d->nl; l++) {
        const int64_t h = d->h[l], w = d->w[l], lines = d->n * d->na * h;
#pragma omp parallel for schedule(static) if (lines * w * no >= YP_PAR_MIN)
        for (int64_t k = 0; k < lines; k++) { /* k = (i*na + a)*h + gy */
            int64_t i = k / (d->na * h), gy = k % h;
            int a = (int)(k / h % d->na);
            const float *in = x[l] + ((i * h + gy) * w) * d->na * no + (int64_t)a * no;
            float *out = y + (i * rows + first[l] + ((int64_t)a * h + gy) * w) * no;
            decode_row(d, l, a, gy, in, out);
        }
    }
    return 0;
}
