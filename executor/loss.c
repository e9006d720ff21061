/* loss.c - YOLOv5's loss (ComputeLoss.__call__) and its gradient: CIoU box loss, BCE objectness with
 * CIoU targets, BCE classes, gains, times the batch size. Element math is fp32 like PyTorch's;
 * the sums behind each mean, and the results, are kept in double. */
#include "yp_loss.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#define CIOU_EPS 1e-7f
#define FOUR_OVER_PI2 0.40528473456935108578 /* 4 / pi^2, the CIoU aspect-ratio term's constant */

static int fail(char *err, size_t err_len, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

static int fail(char *err, size_t err_len, const char *fmt, ...) {
    if (err && err_len) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, err_len, fmt, ap);
        va_end(ap);
    }
    return -1;
}

static float sigmoidf(float x) { return 1.0f / (1.0f + expf(-x)); }

/* BCE-with-logits of logit x against target y (pos_weight 1), in PyTorch's stable form
 * (1 - y) x + max(-x, 0) + log1p(e^-|x|), and (sig not NULL) sigmoid(x) from the same e^-|x|:
 * one exp for both, the loss's costliest calls (~80 classes per positive). */
static float bce_logits_sig(float x, float y, float *sig) {
    float m = x < 0.0f ? -x : 0.0f, e = expf(-fabsf(x));
    if (sig) *sig = x >= 0.0f ? 1.0f / (1.0f + e) : e / (1.0f + e);
    return (1.0f - y) * x + m + log1pf(e);
}

/* PyTorch's minimum/maximum backward: the gradient goes to the smaller (larger) input, half to each on a tie. */
static float dmin_first(float a, float b) { return a < b ? 1.0f : a == b ? 0.5f : 0.0f; }
static float dmax_first(float a, float b) { return a > b ? 1.0f : a == b ? 0.5f : 0.0f; }

float yp_loss_ciou(const float p[4], const float t[4], float dp[4]) {
    const float x1 = p[0], y1 = p[1], w1 = p[2], h1 = p[3], x2 = t[0], y2 = t[1], w2 = t[2], h2 = t[3];
    /* xywh -> corners */
    const float b1x1 = x1 - w1 / 2, b1x2 = x1 + w1 / 2, b1y1 = y1 - h1 / 2, b1y2 = y1 + h1 / 2;
    const float b2x1 = x2 - w2 / 2, b2x2 = x2 + w2 / 2, b2y1 = y2 - h2 / 2, b2y2 = y2 + h2 / 2;
    /* intersection, union, IoU */
    const float iw_raw = fminf(b1x2, b2x2) - fmaxf(b1x1, b2x1), ih_raw = fminf(b1y2, b2y2) - fmaxf(b1y1, b2y1);
    const float iw = iw_raw > 0.0f ? iw_raw : 0.0f, ih = ih_raw > 0.0f ? ih_raw : 0.0f;
    const float inter = iw * ih;
    const float uni = w1 * h1 + w2 * h2 - inter + CIOU_EPS;
    const float iou = inter / uni;
    /* enclosing box diagonal, centre distance */
    const float cw = fmaxf(b1x2, b2x2) - fminf(b1x1, b2x1), ch = fmaxf(b1y2, b2y2) - fminf(b1y1, b2y1);
    const float c2 = cw * cw + ch * ch + CIOU_EPS;
    const float dx = b2x1 + b2x2 - b1x1 - b1x2, dy = b2y1 + b2y2 - b1y1 - b1y2;
    const float rho2 = (dx * dx + dy * dy) / 4;
    /* aspect ratio term; alpha is a constant for the gradient (no_grad in YOLOv5) */
    const float datan = atanf(w2 / h2) - atanf(w1 / h1);
    const float v = (float)FOUR_OVER_PI2 * datan * datan;
    const float alpha = v / (v - iou + (1.0f + CIOU_EPS));
    const float ciou = iou - (rho2 / c2 + v * alpha);
    if (!dp)
        return ciou;

    /* backward, d(ciou)/d(.) */
    float g_b1x1 = 0, g_b1x2 = 0, g_b1y1 = 0, g_b1y2 = 0, g_w1 = 0, g_h1 = 0;
    /* v * alpha: v = k * datan^2, datan = atan(w2/h2) - atan(w1/h1) */
    const float g_v = -alpha;
    const float r1 = w1 / h1;
    const float g_r1 = -(g_v * (float)FOUR_OVER_PI2 * 2.0f * datan) / (1.0f + r1 * r1);
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
    g_b1x2 += g_cw * dmax_first(b1x2, b2x2);
    g_b1x1 -= g_cw * dmin_first(b1x1, b2x1);
    g_b1y2 += g_ch * dmax_first(b1y2, b2y2);
    g_b1y1 -= g_ch * dmin_first(b1y1, b2y1);
    /* iou = inter / union, union = w1*h1 + w2*h2 - inter + eps */
    const float g_uni = -inter / (uni * uni);
    const float g_inter = 1.0f / uni - g_uni;
    g_w1 += g_uni * h1;
    g_h1 += g_uni * w1;
    /* inter = clamp(iw_raw, 0) * clamp(ih_raw, 0); clamp passes the gradient where input >= 0 */
    const float g_iw = iw_raw >= 0.0f ? g_inter * ih : 0.0f, g_ih = ih_raw >= 0.0f ? g_inter * iw : 0.0f;
    g_b1x2 += g_iw * dmin_first(b1x2, b2x2);
    g_b1x1 -= g_iw * dmax_first(b1x1, b2x1);
    g_b1y2 += g_ih * dmin_first(b1y2, b2y2);
    g_b1y1 -= g_ih * dmax_first(b1y1, b2y1);
    /* corners -> xywh */
    dp[0] = g_b1x1 + g_b1x2;
    dp[1] = g_b1y1 + g_b1y2;
    dp[2] = g_w1 + (g_b1x2 - g_b1x1) / 2;
    dp[3] = g_h1 + (g_b1y2 - g_b1y1) / 2;
    return ciou;
}

/* Checks the configuration, the level shapes and every target row; 0 or -1 with the reason. */
static int check_inputs(const yp_loss_cfg *c, int64_t batch, const float *const *preds, const int64_t *grid_h,
                        const int64_t *grid_w, const float *targets, int64_t n_targets, float *const *dpreds,
                        char *err, size_t err_len) {
    if (c->nc < 1 || c->na < 1 || c->na > YP_LOSS_MAX_ANCHORS || c->nl < 1 || c->nl > YP_LOSS_MAX_LEVELS)
        return fail(err, err_len, "loss: nc %d, na %d, nl %d out of range (nc >= 1, na 1..%d, nl 1..%d)", c->nc,
                    c->na, c->nl, YP_LOSS_MAX_ANCHORS, YP_LOSS_MAX_LEVELS);
    if (batch < 1 || n_targets < 0 || (n_targets > 0 && !targets))
        return fail(err, err_len, "loss: batch %lld, %lld targets", (long long)batch, (long long)n_targets);
    if (!(c->anchor_t > 1.0f) || !(c->label_smoothing >= 0.0f && c->label_smoothing <= 1.0f))
        return fail(err, err_len, "loss: anchor_t %g must be > 1, label_smoothing %g in [0, 1]", c->anchor_t,
                    c->label_smoothing);
    for (int l = 0; l < c->nl; l++) {
        if (!preds[l] || (dpreds && !dpreds[l]))
            return fail(err, err_len, "loss: level %d has no prediction or gradient buffer", l);
        if (c->strides[l] < 1 || grid_h[l] < 1 || grid_w[l] < 1 || grid_h[l] > INT32_MAX || grid_w[l] > INT32_MAX)
            return fail(err, err_len, "loss: level %d has stride %d and a %lld x %lld grid", l, c->strides[l],
                        (long long)grid_h[l], (long long)grid_w[l]);
        for (int a = 0; a < c->na; a++)
            if (!(c->anchors[l][a][0] > 0.0f && c->anchors[l][a][1] > 0.0f && isfinite(c->anchors[l][a][0]) &&
                  isfinite(c->anchors[l][a][1])))
                return fail(err, err_len, "loss: anchor %d of level %d is %g x %g; anchors must be positive", a, l,
                            c->anchors[l][a][0], c->anchors[l][a][1]);
    }
    for (int64_t t = 0; t < n_targets; t++) {
        const float *r = targets + 6 * t;
        if (!(r[0] >= 0.0f && r[0] < (float)batch && r[0] == floorf(r[0])))
            return fail(err, err_len, "loss: target %lld: image index %g is not an integer in [0, %lld)",
                        (long long)t, r[0], (long long)batch);
        if (!(r[1] >= 0.0f && r[1] < (float)c->nc && r[1] == floorf(r[1])))
            return fail(err, err_len, "loss: target %lld: class %g is not an integer in [0, %d)", (long long)t, r[1],
                        c->nc);
        for (int k = 2; k < 6; k++)
            if (!(r[k] >= 0.0f && r[k] <= 1.0f))
                return fail(err, err_len, "loss: target %lld: coordinate %d is %g, outside [0, 1]", (long long)t, k - 2,
                            r[k]);
    }
    return 0;
}

typedef struct {
    double box, obj, cls; /* this level's contributions before the gains: mean(1 - ciou), BCE mean, BCE mean */
} level_loss;

/* The positives of one level: box and class terms, and the objectness targets written to tobj
 * (cell-major like the predictions: [((b*h + gj)*w + gi)*na + a]). Gradients are added to dp. */
static level_loss positives_loss(const yp_loss_cfg *c, int level, int64_t batch, const float *pred, int64_t h,
                                 int64_t w, const yp_loss_target *pos, int64_t n, float *tobj, float *dp) {
    const int no = c->nc + 5;
    const float cp = 1.0f - 0.5f * c->label_smoothing, cn = 0.5f * c->label_smoothing;
    const float gbox = (float)((double)batch * c->box / (double)n);
    const float gcls = (float)((double)batch * c->cls / ((double)n * c->nc));
    level_loss r = {0, 0, 0};
    for (int64_t k = 0; k < n; k++) {
        const yp_loss_target *t = &pos[k];
        const int64_t cell = ((int64_t)t->b * h + t->gj) * w + t->gi;
        const int64_t at = cell * c->na * no + (int64_t)t->a * no;
        const float *p = pred + at;
        const float aw = c->anchors[level][t->a][0] / (float)c->strides[level];
        const float ah = c->anchors[level][t->a][1] / (float)c->strides[level];
        const float s[4] = {sigmoidf(p[0]), sigmoidf(p[1]), sigmoidf(p[2]), sigmoidf(p[3])};
        const float pbox[4] = {s[0] * 2 - 0.5f, s[1] * 2 - 0.5f, (s[2] * 2) * (s[2] * 2) * aw,
                               (s[3] * 2) * (s[3] * 2) * ah};
        float dbox[4];
        const float ciou = yp_loss_ciou(pbox, t->tbox, dp ? dbox : NULL);
        r.box += 1.0 - (double)ciou;
        tobj[cell * c->na + t->a] = ciou > 0.0f ? ciou : 0.0f; /* later positives overwrite earlier ones */
        if (dp) {
            float *d = dp + at;
            d[0] -= gbox * dbox[0] * 2 * s[0] * (1 - s[0]);
            d[1] -= gbox * dbox[1] * 2 * s[1] * (1 - s[1]);
            d[2] -= gbox * dbox[2] * 8 * s[2] * s[2] * (1 - s[2]) * aw;
            d[3] -= gbox * dbox[3] * 8 * s[3] * s[3] * (1 - s[3]) * ah;
        }
        if (c->nc > 1) {
            for (int k2 = 0; k2 < c->nc; k2++) {
                const float y = k2 == t->cls ? cp : cn;
                float sig;
                r.cls += bce_logits_sig(p[5 + k2], y, dp ? &sig : NULL);
                if (dp)
                    dp[at + 5 + k2] += gcls * (sig - y);
            }
        }
    }
    r.box /= (double)n;
    r.cls /= (double)n * c->nc;
    return r;
}

/* memset on the OpenMP threads (the prediction gradients are megabytes). */
static void zero_floats(float *p, int64_t n) {
    enum { SPAN = 1 << 16 };
    const int64_t spans = (n + SPAN - 1) / SPAN;
#pragma omp parallel for schedule(static) if (spans > 1)
    for (int64_t k = 0; k < spans; k++)
        memset(p + k * SPAN, 0, (size_t)(n - k * SPAN < SPAN ? n - k * SPAN : SPAN) * sizeof(float));
}

/* Objectness BCE over every (image, cell, anchor) of one level against tobj; writes its gradient. */
static double objectness_loss(const yp_loss_cfg *c, int level, int64_t batch, const float *pred, int64_t cells,
                              const float *tobj, float *dp) {
    const int no = c->nc + 5;
    const int64_t count = cells * c->na; /* cells = batch * h * w */
    const float gobj = (float)((double)batch * c->obj * c->balance[level] / (double)count);
    double sum = 0.0;
#pragma omp parallel for schedule(static) reduction(+ : sum) if (count >= 4096)
    for (int64_t i = 0; i < count; i++) {
        const float x = pred[i * no + 4];
        float sig;
        sum += bce_logits_sig(x, tobj[i], dp ? &sig : NULL);
        if (dp)
            dp[i * no + 4] = gobj * (sig - tobj[i]);
    }
    return sum / (double)count;
}

int yp_loss_compute(const yp_loss_cfg *c, int64_t batch, const float *const *preds, const int64_t *grid_h,
                    const int64_t *grid_w, const float *targets, int64_t n_targets, float *const *dpreds,
                    double out[4], void *assign, int64_t assign_bytes, float *objmap, int64_t objmap_bytes,
                    char *err, size_t err_len) {
    if (check_inputs(c, batch, preds, grid_h, grid_w, targets, n_targets, dpreds, err, err_len))
        return -1;
    const int64_t need_assign = yp_loss_assign_bytes(c, n_targets);
    const int64_t need_obj = yp_loss_objmap_bytes(c, batch, grid_h, grid_w);
    if (need_assign < 0 || need_obj < 0)
        return fail(err, err_len, "loss: work buffer sizes overflow (%lld targets, batch %lld)",
                    (long long)n_targets, (long long)batch);
    if (assign_bytes < need_assign || (need_assign > 0 && !assign) || (uintptr_t)assign % 4 != 0)
        return fail(err, err_len, "loss: assign buffer of %lld bytes at %p; needs %lld bytes aligned to 4",
                    (long long)assign_bytes, assign, (long long)need_assign);
    if (objmap_bytes < need_obj || !objmap || (uintptr_t)objmap % 4 != 0)
        return fail(err, err_len, "loss: objmap buffer of %lld bytes at %p; needs %lld bytes aligned to 4",
                    (long long)objmap_bytes, (void *)objmap, (long long)need_obj);
    yp_loss_target *pos = (yp_loss_target *)assign;
    float *tobj = objmap;

    double lbox = 0.0, lobj = 0.0, lcls = 0.0;
    for (int l = 0; l < c->nl; l++) {
        const int64_t h = grid_h[l], w = grid_w[l], cells = batch * h * w;
        float *dp = dpreds ? dpreds[l] : NULL;
        if (dp) zero_floats(dp, cells * c->na * (c->nc + 5));
        zero_floats(tobj, cells * c->na);
        int64_t n = yp_loss_build_targets(c, l, h, w, targets, n_targets, pos);
        if (n > 0) {
            level_loss r = positives_loss(c, l, batch, preds[l], h, w, pos, n, tobj, dp);
            lbox += r.box;
            lcls += r.cls;
        }
        lobj += objectness_loss(c, l, batch, preds[l], cells, tobj, dp) * c->balance[l];
    }
    out[0] = lbox * c->box;
    out[1] = lobj * c->obj;
    out[2] = c->nc > 1 ? lcls * c->cls : 0.0;
    out[3] = (out[0] + out[1] + out[2]) * (double)batch;
    return 0;
}
