/* yp_test_detect.h - the Detect cases the CUDA loss and decode tests share (test_cuda_conv for
 * fp32, test_cuda_lowp_norm for fp16 and bf16): YOLOv5s's anchors and strides, a loss
 * descriptor with its hyperparameters, and positives as build_targets makes them, some of them
 * sharing an (image, anchor, cell).
 * Defines: yp_test_anchors, yp_test_loss_desc, yp_test_positives. */
#ifndef YP_TEST_DETECT_H
#define YP_TEST_DETECT_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "yp_ops.h"
#include "yp_test_cuda.h" /* yp_test_uniform */

/* YOLOv5's default anchors in pixels (w, h), levels of stride 8, 16, 32. */
static const float yp_test_anchors[3][3][2] = {
    {{10, 13}, {16, 30}, {33, 23}}, {{30, 61}, {62, 45}, {59, 119}}, {{116, 90}, {156, 198}, {373, 326}}};

/* Three levels (grids 10x12, 5x6, 3x3), batch 2, nc classes, train.py's gains for nc (box 0.05,
 * obj 0.7, cls 0.5*nc/80), balance 4, 1, 0.4, label smoothing 0.1; fp32 (the caller sets dtype). */
static inline yp_loss_desc yp_test_loss_desc(int nc) {
    yp_loss_desc d;
    memset(&d, 0, sizeof d);
    d.cfg.nc = nc, d.cfg.na = 3, d.cfg.nl = 3;
    /* level by level: the descriptor's rows hold YP_LOSS_MAX_ANCHORS anchors, ours 3 */
    for (int l = 0; l < 3; l++) memcpy(d.cfg.anchors[l], yp_test_anchors[l], sizeof yp_test_anchors[l]);
    d.cfg.strides[0] = 8, d.cfg.strides[1] = 16, d.cfg.strides[2] = 32;
    d.cfg.anchor_t = 4.0f;
    d.cfg.box = 0.05f, d.cfg.obj = 1.0f * 0.7f, d.cfg.cls = 0.5f * nc / 80.0f;
    d.cfg.balance[0] = 4.0f, d.cfg.balance[1] = 1.0f, d.cfg.balance[2] = 0.4f;
    d.cfg.label_smoothing = 0.1f;
    d.batch = 2;
    d.grid_h[0] = 10, d.grid_w[0] = 12, d.grid_h[1] = 5, d.grid_w[1] = 6, d.grid_h[2] = 3, d.grid_w[2] = 3;
    d.dtype = YP_ELEM_F32;
    return d;
}

/* n positives of level `level` (calloc'd; NULL when out of memory): random cells, with every
 * third one on the cell and anchor of the one before (several positives of one (image, anchor,
 * cell): gradients add, the last one's CIoU is the objectness target), box targets as
 * build_targets makes them. */
static inline yp_loss_target *yp_test_positives(const yp_loss_desc *d, int level, int n, uint64_t seed) {
    yp_loss_target *p = calloc((size_t)(n > 0 ? n : 1), sizeof *p);
    uint64_t st = seed;
    for (int k = 0; p && k < n; k++) {
        yp_loss_target *t = &p[k];
        if (k % 3 == 2) {
            *t = p[k - 1];
        } else {
            t->b = (int32_t)(yp_test_uniform(&st, 0, 1) * (float)d->batch);
            t->a = (int32_t)(yp_test_uniform(&st, 0, 1) * (float)d->cfg.na);
            t->gj = (int32_t)(yp_test_uniform(&st, 0, 1) * (float)d->grid_h[level]);
            t->gi = (int32_t)(yp_test_uniform(&st, 0, 1) * (float)d->grid_w[level]);
        }
        t->cls = (int32_t)(yp_test_uniform(&st, 0, 1) * (float)d->cfg.nc);
        t->tbox[0] = yp_test_uniform(&st, -0.5f, 1.5f), t->tbox[1] = yp_test_uniform(&st, -0.5f, 1.5f);
        t->tbox[2] = yp_test_uniform(&st, 0.3f, 4.0f), t->tbox[3] = yp_test_uniform(&st, 0.3f, 4.0f);
    }
    return p;
}

#endif
