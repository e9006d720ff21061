/* yp_hyp_file.h - YOLOv5's hyperparameter file (train.py's --hyp, hyp.scratch-low.yaml by
 * default), read and written: a yaml mapping of each key to a number.
 *
 * Keys, with hyp.scratch-low's values (yp_hyp_file_default) and the values this reader accepts:
 *   lr0 0.01              > 0                 initial learning rate
 *   lrf 0.01              0 .. 1              final learning rate = lr0 * lrf
 *   momentum 0.937        0 <= m < 1          SGD momentum / Adam beta1
 *   weight_decay 0.0005   0 <= wd < 1
 *   warmup_epochs 3.0     >= 0                (fractions allowed)
 *   warmup_momentum 0.8   0 <= m < 1
 *   warmup_bias_lr 0.1    >= 0
 *   box 0.05, cls 0.5, obj 1.0   >= 0         loss gains (before train.py's scaling)
 *   cls_pw 1.0, obj_pw 1.0       1 only       BCE positive weights: anything else is refused
 *   iou_t 0.20            0 .. 1              (ComputeLoss does not use it)
 *   anchor_t 4.0          > 1                 anchor match: both w and h ratios below it
 *   fl_gamma 0.0          0 only              focal loss is refused
 *   hsv_h 0.015, hsv_s 0.7, hsv_v 0.4   0 .. 1
 *   degrees 0.0           0 .. 180            translate 0.1   0 .. 1
 *   scale 0.5             0 <= s < 1          shear 0.0       0 <= s < 90 (degrees)
 *   perspective 0.0       0 <= p < 1
 *   flipud 0.0, fliplr 0.5, mosaic 1.0  probabilities, 0 .. 1
 *   mixup 0.0, copy_paste 0.0           0 only: the loader has neither (refused when > 0)
 *   label_smoothing 0.0   0 .. 1              not a key of YOLOv5's hyp files (train.py sets it
 *                                             from --label-smoothing); read and written here so
 *                                             a run folder's hyp.yaml holds the whole recipe
 * `anchors` (anchors per level, which YOLOv5 uses to remake the model's anchors when present) is
 * accepted with any value and ignored: yoloplan takes the anchors from the model yaml.
 * A key that is absent keeps its default. Integers are numbers ("obj: 1").
 *
 * Errors are one line naming FILE:LINE, the key or value, and the fix:
 *   hyp.yaml:4: unknown key "lr"; the keys are lr0, lrf, ... (anchors is accepted and ignored)
 *   hyp.yaml:3: momentum: expected a number, got the string "fast"; fix the value
 *   hyp.yaml:3: momentum 1.2 is out of range; use 0 <= momentum < 1 (SGD momentum, Adam beta1)
 *   hyp.yaml:27: mixup 0.1: not supported by yoloplan's loader; set mixup: 0.0
 * and for a missing file, one that is not a regular file (a FIFO or a device is refused without
 * blocking) or longer than YP_YN_MAX_FILE, a syntax error, an empty file, a file that is not a
 * mapping, a key given twice.
 * Defines: yp_hyp_file, yp_hyp_file_default, yp_hyp_file_read, yp_hyp_file_write. */
#ifndef YP_HYP_FILE_H
#define YP_HYP_FILE_H

#include "yp_augment.h"
#include "yp_error.h"

typedef struct {
    double lr0, lrf, momentum, weight_decay, warmup_epochs, warmup_momentum, warmup_bias_lr, box, cls, cls_pw, obj,
        obj_pw, iou_t, anchor_t, fl_gamma, label_smoothing;
    yp_aug_hyp aug; /* hsv_h .. mosaic */
    double mixup, copy_paste;
} yp_hyp_file;

/* hyp.scratch-low.yaml's values, label_smoothing 0. */
void yp_hyp_file_default(yp_hyp_file *h);

/* Reads the hyp file at path over the defaults. Returns 0 with *h set, or -1 with err set (above;
 * *h is then unchanged). */
int yp_hyp_file_read(const char *path, yp_hyp_file *h, yp_err *err);

/* Writes every key of h to path (the run folder's hyp.yaml, as train.py saves it, plus
 * label_smoothing), atomically (yp_atomic_file.h). Numbers are written in the shortest form that
 * reads back to the same double, always with a '.' (3.0, 1.0e-05: YAML 1.1 readers such as
 * PyYAML take "1e-05" for a string), so yp_hyp_file_read gives h back exactly. A value the reader
 * would refuse is refused here first. Returns 0, or -1 with err set. */
int yp_hyp_file_write(const char *path, const yp_hyp_file *h, yp_err *err);

#endif
