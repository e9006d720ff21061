/* loss.c - YOLOv5's loss (ComputeLoss.__call__) through a backend: the input checks, target
 * assignment per level on the host (loss_targets.c), each level's positives copied to the device
 * and its loss computed there (the backend's loss_level: CIoU box loss, BCE objectness with CIoU
 * targets, BCE classes), then the levels added up with the gains, times the batch size, in
 * double. */
#include "yp_loss.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

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

/* Checks the configuration, the level shapes and every target row; 0 or -1 with the reason. */
static int check_inputs(const yp_loss_desc *d, const float *targets, int64_t n_targets, const yp_loss_buffers *b,
                        char *err, size_t err_len) {
    const yp_loss_cfg *c = &d->cfg;
    const int64_t batch = d->batch, *grid_h = d->grid_h, *grid_w = d->grid_w;
    if (c->nc < 1 || c->na < 1 || c->na > YP_LOSS_MAX_ANCHORS || c->nl < 1 || c->nl > YP_LOSS_MAX_LEVELS)
        return fail(err, err_len, "loss: nc %d, na %d, nl %d out of range (nc >= 1, na 1..%d, nl 1..%d)", c->nc,
                    c->na, c->nl, YP_LOSS_MAX_ANCHORS, YP_LOSS_MAX_LEVELS);
    if (batch < 1 || n_targets < 0 || (n_targets > 0 && !targets))
        return fail(err, err_len, "loss: batch %lld, %lld targets", (long long)batch, (long long)n_targets);
    if (!(c->anchor_t > 1.0f) || !(c->label_smoothing >= 0.0f && c->label_smoothing <= 1.0f))
        return fail(err, err_len, "loss: anchor_t %g must be > 1, label_smoothing %g in [0, 1]", c->anchor_t,
                    c->label_smoothing);
    for (int l = 0; l < c->nl; l++) {
        if (!b->preds[l] || (b->dpreds && !b->dpreds[l]))
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

/* The buffers are large enough and aligned for the positives and objectness targets. */
static int check_buffers(const yp_loss_desc *d, int64_t n_targets, const yp_loss_buffers *b, char *err,
                         size_t err_len) {
    const int64_t need_assign = yp_loss_assign_bytes(&d->cfg, n_targets);
    const int64_t need_obj = yp_loss_objmap_bytes(&d->cfg, d->batch, d->grid_h, d->grid_w);
    if (need_assign < 0 || need_obj < 0)
        return fail(err, err_len, "loss: work buffer sizes overflow (%lld targets, batch %lld)",
                    (long long)n_targets, (long long)d->batch);
    if (b->assign_bytes < need_assign || (need_assign > 0 && (!b->assign || !b->stage)) ||
        (uintptr_t)b->assign % 4 != 0 || (uintptr_t)b->stage % 4 != 0)
        return fail(err, err_len,
                    "loss: assign buffer of %lld bytes at %p (staged at %p); needs %lld bytes aligned to 4",
                    (long long)b->assign_bytes, b->assign, b->stage, (long long)need_assign);
    if (b->objmap_bytes < need_obj || !b->objmap || (uintptr_t)b->objmap % 4 != 0)
        return fail(err, err_len, "loss: objmap buffer of %lld bytes at %p; needs %lld bytes aligned to 4",
                    (long long)b->objmap_bytes, (void *)b->objmap, (long long)need_obj);
    return 0;
}

/* Level l: its positives assigned on the host and uploaded, then its terms from the backend. */
static int level_terms(yp_backend *be, const yp_loss_desc *d, int l, const float *targets, int64_t n_targets,
                       const yp_loss_buffers *b, yp_loss_terms *t, char *err, size_t err_len) {
    yp_loss_target *pos = b->stage;
    int64_t n = yp_loss_build_targets(&d->cfg, l, d->grid_h[l], d->grid_w[l], targets, n_targets, pos);
    if (n > 0 && be->mem_copy(be, b->assign, pos, (size_t)n * sizeof *pos, YP_COPY_HOST_TO_DEVICE))
        return fail(err, err_len, "loss: level %d: uploading %lld positives: %s", l, (long long)n, be->last_error(be));
    if (be->ops->loss_level(be, d, l, b->preds[l], b->assign, n, b->objmap, b->dpreds ? b->dpreds[l] : NULL, t))
        return fail(err, err_len, "loss: level %d: %s", l, be->last_error(be));
    return 0;
}

int yp_loss_compute(yp_backend *be, const yp_loss_desc *d, const float *targets, int64_t n_targets,
                    const yp_loss_buffers *b, double out[4], char *err, size_t err_len) {
    if (!be->ops || !be->ops->loss_level)
        return fail(err, err_len, "loss: backend %s has no loss_level op", be->name);
    if (!d || !b || !b->preds) return fail(err, err_len, "loss: no descriptor or no prediction buffers");
    if (check_inputs(d, targets, n_targets, b, err, err_len) || check_buffers(d, n_targets, b, err, err_len))
        return -1;
    const yp_loss_cfg *c = &d->cfg;
    yp_loss_desc scaled = *d; /* the loss scale rides on the gains: d(S g x)/dx = S d(g x)/dx */
    if (d->grad_scale != 0.0f && d->grad_scale != 1.0f) {
        if (!(d->grad_scale > 0.0f) || !isfinite(d->grad_scale))
            return fail(err, err_len, "loss: grad_scale %g must be a positive finite number", (double)d->grad_scale);
        scaled.cfg.box *= d->grad_scale, scaled.cfg.obj *= d->grad_scale, scaled.cfg.cls *= d->grad_scale;
    }
    double lbox = 0.0, lobj = 0.0, lcls = 0.0;
    for (int l = 0; l < c->nl; l++) {
        yp_loss_terms t;
        if (level_terms(be, &scaled, l, targets, n_targets, b, &t, err, err_len)) return -1;
        lbox += t.box;
        lobj += t.obj;
        lcls += t.cls;
    }
    out[0] = lbox * c->box;
    out[1] = lobj * c->obj;
    out[2] = c->nc > 1 ? lcls * c->cls : 0.0;
    out[3] = (out[0] + out[1] + out[2]) * (double)d->batch;
    return 0;
}
