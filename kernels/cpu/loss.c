/* loss.c - the loss of one Detect level and its gradient on the CPU (loss_level, yp_ops.h):
 * YOLOv5's ComputeLoss on the positives the host assigned (CIoU box loss, BCE classes, the
 * objectness targets) and BCE objectness over every cell. Element math is fp32 like PyTorch's;
 * the sums behind each mean are kept in double. The positives run on the calling thread (their
 * gradients and objectness targets may land on one cell); zeroing and the objectness pass run on
 * the OpenMP threads. */
#include <math.h>
#include <string.h>

#include "yp_ciou.h"
#include "yp_cpu.h"

/* Objectness over at least this many (image, cell, anchor)s runs on the OpenMP threads: each
 * element costs an exp and a log1p, so the team pays off far below YP_PAR_MIN's elementwise
 * threshold. */
#define OBJ_PAR_MIN 4096

static float sigmoidf(float x) { return 1.0f / (1.0f + expf(-x)); }

/* BCE-with-logits of logit x against target y (pos_weight 1), in PyTorch's stable form
 * (1 - y) x + max(-x, 0) + log1p(e^-|x|), and (sig not NULL) sigmoid(x) from the same e^-|x|:
 * one exp for both, the loss's costliest calls (~80 classes per positive). */
static float bce_logits_sig(float x, float y, float *sig) {
    float m = x < 0.0f ? -x : 0.0f, e = expf(-fabsf(x));
    if (sig) *sig = x >= 0.0f ? 1.0f / (1.0f + e) : e / (1.0f + e);
    return (1.0f - y) * x + m + log1pf(e);
}

/* memset on the OpenMP threads (the prediction gradients are megabytes). */
static void zero_floats(float *p, int64_t n) {
    enum { SPAN = 1 << 16 };
    const int64_t spans = (n + SPAN - 1) / SPAN;
#pragma omp parallel for schedule(static) if (spans > 1)
    for (int64_t k = 0; k < spans; k++)
        memset(p + k * SPAN, 0, (size_t)(n - k * SPAN < SPAN ? n - k * SPAN : SPAN) * sizeof(float));
}

/* The descriptor and the level: counts in range, the level's grid and anchors usable. */
static int check_level(const char *op, const yp_loss_desc *d, int level) {
    const yp_loss_cfg *c = &d->cfg;
    if (c->nc < 1 || c->na < 1 || c->na > YP_LOSS_MAX_ANCHORS || c->nl < 1 || c->nl > YP_LOSS_MAX_LEVELS ||
        level < 0 || level >= c->nl)
        return yp_cpu_fail("%s: level %d of nc %d, na %d, nl %d out of range (nc >= 1, na 1..%d, nl 1..%d)", op, level,
                           c->nc, c->na, c->nl, YP_LOSS_MAX_ANCHORS, YP_LOSS_MAX_LEVELS);
    if (d->batch < 1 || d->grid_h[level] < 1 || d->grid_w[level] < 1 || c->strides[level] < 1)
        return yp_cpu_fail("%s: batch %lld, level %d grid %lld x %lld, stride %d: all must be >= 1", op,
                           (long long)d->batch, level, (long long)d->grid_h[level], (long long)d->grid_w[level],
                           c->strides[level]);
    return 0;
}

/* Every positive names an image, anchor, cell and class of the level (the reads and writes of
 * positives_loss stay inside its buffers). */
static int check_positives(const char *op, const yp_loss_desc *d, int level, const yp_loss_target *pos, int64_t n) {
    const int64_t h = d->grid_h[level], w = d->grid_w[level];
    for (int64_t k = 0; k < n; k++) {
        const yp_loss_target *t = &pos[k];
        if (t->b < 0 || t->b >= d->batch || t->a < 0 || t->a >= d->cfg.na || t->gj < 0 || t->gj >= h || t->gi < 0 ||
            t->gi >= w || t->cls < 0 || t->cls >= d->cfg.nc)
            return yp_cpu_fail("%s: positive %lld (image %d, anchor %d, cell %d,%d, class %d) lies outside level %d",
                               op, (long long)k, t->b, t->a, t->gj, t->gi, t->cls, level);
    }
    return 0;
}

/* The positives of one level: box and class terms, and the objectness targets written to tobj
 * (cell-major like the predictions: [((b*h + gj)*w + gi)*na + a]). Gradients are added to dp. */
static yp_loss_terms positives_loss(const yp_loss_desc *d, int level, const float *pred, const yp_loss_target *pos,
                                    int64_t n, float *tobj, float *dp) {
    const yp_loss_cfg *c = &d->cfg;
    const int64_t batch = d->batch, h = d->grid_h[level], w = d->grid_w[level];
    const int no = c->nc + 5;
    const float cp = 1.0f - 0.5f * c->label_smoothing, cn = 0.5f * c->label_smoothing;
    const float gbox = (float)((double)batch * c->box / (double)n);
    const float gcls = (float)((double)batch * c->cls / ((double)n * c->nc));
    yp_loss_terms r = {0, 0, 0};
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
            float *g = dp + at;
            g[0] -= gbox * dbox[0] * 2 * s[0] * (1 - s[0]);
            g[1] -= gbox * dbox[1] * 2 * s[1] * (1 - s[1]);
            g[2] -= gbox * dbox[2] * 8 * s[2] * s[2] * (1 - s[2]) * aw;
            g[3] -= gbox * dbox[3] * 8 * s[3] * s[3] * (1 - s[3]) * ah;
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

/* Objectness BCE over every (image, cell, anchor) of one level against tobj: its mean; writes its
 * gradient. */
static double objectness_loss(const yp_loss_desc *d, int level, const float *pred, const float *tobj, float *dp) {
    const yp_loss_cfg *c = &d->cfg;
    const int no = c->nc + 5;
    const int64_t count = d->batch * d->grid_h[level] * d->grid_w[level] * c->na;
    const float gobj = (float)((double)d->batch * c->obj * c->balance[level] / (double)count);
    double sum = 0.0;
#pragma omp parallel for schedule(static) reduction(+ : sum) if (count >= OBJ_PAR_MIN)
    for (int64_t i = 0; i < count; i++) {
        const float x = pred[i * no + 4];
        float sig;
        sum += bce_logits_sig(x, tobj[i], dp ? &sig : NULL);
        if (dp)
            dp[i * no + 4] = gobj * (sig - tobj[i]);
    }
    return sum / (double)count;
}

int yp_cpu_loss_level(yp_backend *be, const yp_loss_desc *d, int level, const float *pred, const yp_loss_target *pos,
                      int64_t n_pos, float *objmap, float *dpred, yp_loss_terms *terms) {
    static const char op[] = "loss_level";
    (void)be;
    if (yp_cpu_check_ptrs(op, 1, (const void *[]){d}) || yp_cpu_check_elem(op, d->dtype)) return -1;
    if (check_level(op, d, level) || yp_cpu_check_count(op, n_pos) ||
        yp_cpu_check_ptrs(op, 3, (const void *[]){pred, objmap, terms}) ||
        (n_pos > 0 && (yp_cpu_check_ptrs(op, 1, (const void *[]){pos}) || check_positives(op, d, level, pos, n_pos))))
        return -1;
    const int64_t cells = d->batch * d->grid_h[level] * d->grid_w[level];
    if (dpred) zero_floats(dpred, cells * d->cfg.na * (d->cfg.nc + 5));
    zero_floats(objmap, cells * d->cfg.na);
    yp_loss_terms r = {0, 0, 0};
    if (n_pos > 0) r = positives_loss(d, level, pred, pos, n_pos, objmap, dpred);
    r.obj = objectness_loss(d, level, pred, objmap, dpred) * d->cfg.balance[level];
    *terms = r;
    return 0;
}
