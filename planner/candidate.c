/* candidate.c - candidate defaults, names, and their schedule options. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "yp_candidate.h"

/* COCO train2017: 860,001 boxes over 117,266 images = 7.3 labels per image. */
#define YP_COCO_LABELS_PER_IMAGE 7.3

yp_candidate yp_candidate_default(void) {
    yp_candidate c = {0};
    c.batch = 16, c.img_w = c.img_h = 640;
    c.precision = YP_PREC_FP32;
    c.mosaic = 1, c.optimizer = YP_OPT_SGD, c.ema = 1;
    c.policy = YP_SAVE_YOLOPLAN;
    c.labels_per_image = YP_COCO_LABELS_PER_IMAGE;
    c.val_rect = 1;
    snprintf(c.scratch, sizeof c.scratch, "%s", YP_SCRATCH_IM2COL);
    c.alignment = YP_ALIGN_DEFAULT;
    c.pipe = yp_pipeline_default();
    return c;
}

int yp_candidate_check_alignment(const yp_candidate *c, yp_err *err) {
    int64_t a = c->alignment;
    if (a < YP_ALIGN_MIN || a > YP_ALIGN_MAX || (a & (a - 1)))
        return yp_err_set(err, "candidate.alignment: %lld bytes; the arena alignment must be a power of two from %d "
                          "to %d", (long long)a, YP_ALIGN_MIN, YP_ALIGN_MAX);
    return 0;
}

static const char *const prec_names[YP_PREC_COUNT] = {"fp32", "amp-fp16", "amp-bf16"};
static const char *const opt_names[YP_OPT_COUNT] = {"sgd", "adam", "adamw"};

const char *yp_precision_name(yp_precision p) { return prec_names[p]; }
const char *yp_optimizer_name(yp_optimizer o) { return opt_names[o]; }

int yp_precision_parse(const char *s) {
    for (int i = 0; i < YP_PREC_COUNT; i++)
        if (!strcmp(s, prec_names[i])) return i;
    if (!strcmp(s, "fp16") || !strcmp(s, "amp")) return YP_PREC_AMP_FP16;
    if (!strcmp(s, "bf16")) return YP_PREC_AMP_BF16;
    return -1;
}

int yp_optimizer_parse(const char *s) {
    for (int i = 0; i < YP_OPT_COUNT; i++)
        if (!strcmp(s, opt_names[i])) return i;
    return -1;
}

yp_dtype yp_precision_dtype(yp_precision p) {
    return p == YP_PREC_FP32 ? YP_DTYPE_F32 : p == YP_PREC_AMP_FP16 ? YP_DTYPE_F16 : YP_DTYPE_BF16;
}

void yp_candidate_train_size(const yp_candidate *c, int stride, int64_t *w, int64_t *h) {
    *w = c->img_w, *h = c->img_h;
    if (!c->multi_scale) return;
    /* YOLOv5 train.py: sz = randrange(imgsz * 0.5, imgsz * 1.5 + gs) // gs * gs; its largest value */
    *w = (c->img_w * 3 / 2 + stride - 1) / stride * stride;
    *h = (c->img_h * 3 / 2 + stride - 1) / stride * stride;
}

int yp_candidate_multiscale_sides(const yp_candidate *c, int stride, int64_t *out, int cap) {
    int n = 0;
    /* train.py: randrange(int(imgsz * 0.5), int(imgsz * 1.5) + gs) // gs * gs */
    int64_t lo = (int64_t)((double)c->img_w * 0.5), hi = (int64_t)((double)c->img_w * 1.5) + stride;
    for (int64_t r = lo; r < hi; r++) {
        int64_t s = r / stride * stride;
        if (s < stride || (n && out[n - 1] == s)) continue;
        if (n == cap) return -1;
        out[n++] = s;
    }
    return n;
}

int64_t yp_candidate_labels(const yp_candidate *c, int64_t batch) {
    return (int64_t)ceil((double)batch * c->labels_per_image * (c->mosaic ? 4.0 : 1.0));
}

yp_sched_opts yp_candidate_train_opts(const yp_candidate *c, int stride) {
    int64_t w, h;
    yp_candidate_train_size(c, stride, &w, &h);
    yp_sched_opts o = yp_sched_opts_default(c->batch, h, w);
    o.act_dtype = yp_precision_dtype(c->precision);
    o.policy = c->policy;
    o.ckpt_layers = c->ckpt_layers;
    o.freeze = c->freeze;
    o.labels = yp_candidate_labels(c, c->batch);
    o.optimizer = c->optimizer;
    o.ema = c->ema;
    o.conv_scratch = c->scratch_rule.fn, o.conv_scratch_ctx = c->scratch_rule.ctx;
    o.fusions = c->fusions;
    if (c->multi_scale && c->img_w == c->img_h) { /* the smaller sizes run in this layout too */
        int n = yp_candidate_multiscale_sides(c, stride, o.scratch_sides, YP_SCHED_MAX_SIDES);
        o.n_scratch_sides = n > 0 ? n : 0;
    }
    return o;
}

void yp_candidate_val_size(const yp_candidate *c, int stride, int64_t *w, int64_t *h) {
    *w = c->img_w, *h = c->img_h;
    if (!c->val_rect) return;
    int64_t s = yp_stride_gs(stride); /* val.py: max(int(model.stride.max()), 32) */
    *w = (int64_t)ceil((double)c->img_w / (double)s + 0.5) * s;
    *h = (int64_t)ceil((double)c->img_h / (double)s + 0.5) * s;
}

yp_sched_opts yp_candidate_val_opts(const yp_candidate *c, int stride, int n_layers) {
    int64_t w, h;
    yp_candidate_val_size(c, stride, &w, &h);
    yp_sched_opts o = yp_sched_opts_default(2 * c->batch, h, w);
    if (c->val_rect && w == h) o.scratch_rect_side = h, o.scratch_rect_stride = yp_stride_gs(stride);
    o.act_dtype = yp_precision_dtype(c->precision);
    o.freeze = n_layers;
    o.eval = 1;
    o.labels = (int64_t)ceil(2.0 * (double)c->batch * c->labels_per_image);
    o.optimizer = c->optimizer;
    o.ema = 0;
    o.conv_scratch = c->scratch_rule.fn, o.conv_scratch_ctx = c->scratch_rule.ctx;
    return o;
}
