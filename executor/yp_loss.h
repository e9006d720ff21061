/* yp_loss.h - YOLOv5's training loss (utils/loss.py ComputeLoss) and its exact gradient, fp32, CPU.
 *
 * Defines: the loss configuration (yp_loss_cfg) and its train.py defaults, the sizes of the two work
 * buffers the loss needs, the loss + gradient in one pass (yp_loss_compute), and its two building blocks, target
 * assignment (yp_loss_build_targets) and CIoU with its gradient (yp_loss_ciou), which are public so a
 * device backend can reuse them and the tests can check them on their own.
 *
 * Layout: each level's prediction is Detect's NHWC output (batch, h, w, na*(nc+5)); anchor a, field f
 * of cell (y, x) of image i is at [((i*h + y)*w + x)*na*(nc+5) + a*(nc+5) + f], fields x, y, w, h,
 * objectness, nc class logits (raw, no sigmoid). Targets are n rows of 6 floats
 * (image index, class, cx, cy, w, h) with cx..h normalised to [0, 1] as in YOLOv5 label files.
 *
 * Semantics are those of YOLOv5's ComputeLoss at HEAD: anchor match by wh ratio < anchor_t, the
 * centre cell plus neighbour cells at offset 0.5, CIoU box loss (alpha held constant, as YOLOv5
 * computes it under no_grad), objectness target = detached CIoU clamped at 0
 * (several positives on one (image, anchor, cell): the last in build_targets order wins, no
 * sort_obj_iou), BCE-with-logits for objectness (mean over all cells, times the level balance) and
 * classes (mean over positives x nc, only when nc > 1), gains, times the batch size.
 * cls_pw = obj_pw = 1 and fl_gamma = 0 (hyp.scratch-low/high) are the only ones implemented.
 *
 * Nothing here allocates; errors are a return of -1 with one line in the caller's err buffer. */
#ifndef YP_LOSS_H
#define YP_LOSS_H

#include <stddef.h>
#include <stdint.h>

#define YP_LOSS_MAX_LEVELS 4  /* = YP_MAX_LEVELS of yp_graph.h (asserted in loss_targets.c) */
#define YP_LOSS_MAX_ANCHORS 8 /* = YP_MAX_ANCHORS of yp_graph.h (asserted in loss_targets.c) */

typedef struct {
    int nc, na, nl;                                            /* classes, anchors per level, levels */
    float anchors[YP_LOSS_MAX_LEVELS][YP_LOSS_MAX_ANCHORS][2]; /* pixels (w, h), as yp_graph.anchors */
    int strides[YP_LOSS_MAX_LEVELS];                           /* pixels per grid cell, per level */
    float anchor_t;                                            /* hyp anchor_t (4.0) */
    float box, obj, cls;              /* gains as applied, i.e. after train.py's scaling */
    float balance[YP_LOSS_MAX_LEVELS]; /* objectness weight per level: 4.0, 1.0, 0.4 for 3 levels */
    float label_smoothing;            /* class targets 1 - eps/2 and eps/2 (0 -> 1 and 0) */
} yp_loss_cfg;

/* Fills c for a model with nc classes, nl levels of na anchors (anchors in pixels, one
 * [YP_LOSS_MAX_ANCHORS][2] row per level, strides per level) trained at img_w x img_h:
 * hyp.scratch-low (box 0.05, obj 1.0, cls 0.5, anchor_t 4.0, no label smoothing) scaled as
 * yp_loss_cfg_scale_gains does, balance {4.0, 1.0, 0.4} for 3 levels and {4.0, 1.0, 0.25, 0.06}[:nl]
 * otherwise (ComputeLoss's table). Arguments out of range are reported by yp_loss_compute. */
void yp_loss_cfg_default(yp_loss_cfg *c, int nc, int nl, int na, const float anchors[][YP_LOSS_MAX_ANCHORS][2],
                         const int *strides, int64_t img_w, int64_t img_h);

/* Sets c->box/obj/cls from hyp gains as train.py does before training (c->nc and c->nl must be set):
 * box *= 3/nl; cls *= nc/80 * 3/nl; obj *= (imgsz/640)^2 * 3/nl, with imgsz = max(img_w, img_h)
 * (train.py's --imgsz, the long side of rectangular batches). */
void yp_loss_cfg_scale_gains(yp_loss_cfg *c, double box, double obj, double cls, int64_t img_w, int64_t img_h);

/* One positive of one level, as build_targets makes it. */
typedef struct {
    int32_t b, a, gj, gi; /* image, anchor, cell row and column (clamped into the grid) */
    int32_t cls;          /* class index */
    float tbox[4];        /* target x, y relative to the cell (-0.5..1.5), w, h; grid units */
} yp_loss_target;

/* The loss's two work buffers, owned by the caller (the plan's loss:assign and loss:objmap tensors);
 * each size is exactly linear in what it scales with (no padding):
 *   (the rule is the schedule's: yp_loss_assign_floats and yp_loss_objmap_floats in yp_schedule.h)
 *   assign: 5 * na * n_targets * sizeof(yp_loss_target) = 180 * na * n_targets bytes, the positives
 *           of one level (5 = the centre cell plus up to 4 neighbours: a centre exactly on a cell
 *           corner gets all four);
 *   objmap: 4 * batch * na * max_l(grid_h[l] * grid_w[l]) bytes, the objectness targets of one level.
 * Both return -1 when an argument is out of range or the size overflows int64. */
int64_t yp_loss_assign_bytes(const yp_loss_cfg *c, int64_t n_targets);
int64_t yp_loss_objmap_bytes(const yp_loss_cfg *c, int64_t batch, const int64_t *grid_h, const int64_t *grid_w);

/* Target assignment of level `level` on a grid_h x grid_w grid (build_targets): writes the positives
 * to out (room for 5*na*n_targets) in YOLOv5's order (offset-major: all centre cells, then left, up,
 * right, down neighbours; within each, anchor-major, then target order) and returns their count.
 * Targets must have passed yp_loss_compute's checks (integral image index and class, finite coords). */
int64_t yp_loss_build_targets(const yp_loss_cfg *c, int level, int64_t grid_h, int64_t grid_w, const float *targets,
                              int64_t n_targets, yp_loss_target *out);

/* CIoU of predicted box p and target box t (both x, y, w, h; bbox_iou(..., CIoU=True), eps 1e-7).
 * If dp is non-NULL, writes d(ciou)/d(p) with alpha = v / (v - iou + 1 + eps) held constant. */
float yp_loss_ciou(const float p[4], const float t[4], float dp[4]);

/* The loss and its gradient in one pass.
 *   preds[l]   level l's predictions, (batch, grid_h[l], grid_w[l], na*(nc+5)) NHWC, read only
 *   targets    n_targets rows of (image, class, cx, cy, w, h); image in [0, batch), class in [0, nc),
 *              coordinates in [0, 1] (YOLOv5's label checks), else an error
 *   dpreds[l]  overwritten with d(out[3])/d(preds[l]) as autograd computes it for YOLOv5 (objectness
 *              targets and alpha are constants), same layout; dpreds == NULL: loss only
 *   out        lbox, lobj, lcls (each times its gain) and the total (lbox + lobj + lcls) * batch,
 *              which is the loss YOLOv5 calls backward on (double: the sums are kept in double and
 *              not rounded to fp32, so finite differences and logs see them whole)
 *   assign     yp_loss_assign_bytes(c, n_targets) bytes or more (assign_bytes says how many), and
 *   objmap     yp_loss_objmap_bytes(c, batch, grid_h, grid_w) bytes or more: work buffers, 4-byte
 *              aligned, contents clobbered.
 * Returns 0, or -1 with the reason in err (err may be NULL). */
int yp_loss_compute(const yp_loss_cfg *c, int64_t batch, const float *const *preds, const int64_t *grid_h,
                    const int64_t *grid_w, const float *targets, int64_t n_targets, float *const *dpreds,
                    double out[4], void *assign, int64_t assign_bytes, float *objmap, int64_t objmap_bytes,
                    char *err, size_t err_len);

#endif
