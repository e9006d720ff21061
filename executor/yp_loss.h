/* yp_loss.h - YOLOv5's training loss (utils/loss.py ComputeLoss) and its exact gradient, the
 * executor's side: the configuration (yp_loss_cfg, yp_ops.h) with its train.py defaults, the
 * sizes of the two work buffers the loss needs, target assignment on the host
 * (yp_loss_build_targets), and yp_loss_compute, which runs the whole loss through a backend: it
 * assigns the targets level by level on the host, copies each level's positives into the device's
 * assignment buffer with mem_copy and calls the backend's loss_level (yp_ops.h), which does
 * everything that reads the predictions (CIoU, BCE, the objectness map, the gradients).
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

#include "yp_backend.h"

/* Fills c for a model with nc classes, nl levels of na anchors (anchors in pixels, one
 * [YP_LOSS_MAX_ANCHORS][2] row per level, strides per level) trained at img_w x img_h:
 * hyp.scratch-low (box 0.05, obj 1.0, cls 0.5, anchor_t 4.0, no label smoothing) scaled as
 * yp_loss_cfg_scale_gains does, balance {4.0, 1.0, 0.4} for 3 levels and {4.0, 1.0, 0.25, 0.06, 0.02}[:nl]
 * otherwise (ComputeLoss's table). Arguments out of range are reported by yp_loss_compute. */
void yp_loss_cfg_default(yp_loss_cfg *c, int nc, int nl, int na, const float anchors[][YP_LOSS_MAX_ANCHORS][2],
                         const int *strides, int64_t img_w, int64_t img_h);

/* Sets c->box/obj/cls from hyp gains as train.py does before training (c->nc and c->nl must be set):
 * box *= 3/nl; cls *= nc/80 * 3/nl; obj *= (imgsz/640)^2 * 3/nl, with imgsz = max(img_w, img_h)
 * (train.py's --imgsz, the long side of rectangular batches). */
void yp_loss_cfg_scale_gains(yp_loss_cfg *c, double box, double obj, double cls, int64_t img_w, int64_t img_h);

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

/* The buffers of one loss evaluation. The device ones are the plan's loss step operands (a
 * backend with host memory may be given malloc'd ones); only `stage` is host memory.
 *   preds[l]   level l's predictions, (batch, grid_h[l], grid_w[l], na*(nc+5)) NHWC, read only
 *   dpreds[l]  overwritten with d(out[3])/d(preds[l]) as autograd computes it for YOLOv5 (objectness
 *              targets and alpha are constants), same layout; dpreds == NULL: loss only
 *   assign     yp_loss_assign_bytes(c, n_targets) bytes or more (assign_bytes says how many), and
 *   objmap     yp_loss_objmap_bytes(c, batch, grid_h, grid_w) bytes or more: device work buffers,
 *              4-byte aligned, contents clobbered
 *   stage      host memory of assign_bytes bytes: each level's positives are built here, then
 *              copied into assign. */
typedef struct {
    const float *const *preds;
    float *const *dpreds;
    void *assign;
    int64_t assign_bytes;
    float *objmap;
    int64_t objmap_bytes;
    void *stage;
} yp_loss_buffers;

/* The loss and its gradient on backend be (its loss_level entry, yp_ops.h), level by level.
 *   d          the configuration, the batch and the level grids (d->dtype: the predictions')
 *   targets    host memory: n_targets rows of (image, class, cx, cy, w, h); image in [0, batch),
 *              class in [0, nc), coordinates in [0, 1] (YOLOv5's label checks), else an error
 *   out        lbox, lobj, lcls (each times its gain) and the total (lbox + lobj + lcls) * batch,
 *              which is the loss YOLOv5 calls backward on (double: the sums are kept in double and
 *              not rounded to fp32, so finite differences and logs see them whole)
 * The backend's work is queued on it and, on a device with a queue, finished by the time this
 * returns (each level's upload and terms wait for it). Returns 0, or -1 with the reason in err (err
 * may be NULL): bad configuration, targets or buffers, a backend without loss_level, or the
 * backend's error. */
int yp_loss_compute(yp_backend *be, const yp_loss_desc *d, const float *targets, int64_t n_targets,
                    const yp_loss_buffers *b, double out[4], char *err, size_t err_len);

#endif
