/* test_metrics.c - YOLOv5's validation metrics (executor/metrics/yp_metrics.h): NMS, rescaling, matching,
 * AP, mAP and the COCO JSON, first on small cases worked out by hand in the comments, then
 * against an independent computation of val.py's functions in PyTorch and numpy
 * (tests/ref/make_metrics_fixture.py: tests/data/metrics/metrics.bin and predictions.json), and
 * the edge cases: no detections, no labels, a class with labels and no detections, everything
 * below the confidence threshold.
 *
 * Tolerances: NMS rows, rescaled boxes and the TP bits are float32 computations done in the same
 * order on both sides, so they must agree exactly (counts, order, classes, bits) and to 1e-6
 * relative in value (measured: bit for bit). AP, P, R, F1, the curves and the means are float64
 * on both sides, stored as float32 pairs (value + remainder, ~1e-14 relative): within 1e-6 as
 * asked (measured: under 1e-15, the resolution of that pair: the same operations). */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

#include "step_fixture.h"
#include "yp_boxes.h"
#include "yp_metrics.h"
#include "yp_test.h"

#define TOL 1e-6

/* ------------------------------------------------------------ helpers */

static int64_t run_nms(const yp_nms_cfg *c, const float *pred, int64_t n, int nc, float *out) {
    yp_err err;
    int64_t bytes = yp_nms_workspace_bytes(c, n, nc);
    void *ws = bytes > 0 ? malloc((size_t)bytes) : NULL;
    int64_t k = bytes >= 0 ? yp_nms(c, pred, n, nc, ws, bytes, out, &err) : -1;
    if (k < 0) fprintf(stderr, "nms: %s\n", bytes < 0 ? "no workspace size" : err.msg);
    free(ws);
    return k;
}

/* A row (cx, cy, w, h, obj, cls0, cls1) of a two-class prediction. */
static void row2(float *r, float cx, float cy, float w, float h, float obj, float c0, float c1) {
    r[0] = cx, r[1] = cy, r[2] = w, r[3] = h, r[4] = obj, r[5] = c0, r[6] = c1;
}

/* ------------------------------------------------------------ NMS by hand */

/* Five boxes, two classes, val.py's settings (conf 0.001, IoU 0.6):
 *   A (50,50,20,20) obj 0.9 cls (0.8, 0.1): candidates A0 0.72, A1 0.09
 *   B (52,50,20,20) obj 0.8 cls (0.7, 0)  : B0 0.56
 *   C (52,50,20,20) obj 0.5 cls (0, 0.9)  : C1 0.45
 *   D (50,50,20,20) obj 0.0005            : none (objectness below conf)
 *   E (100,50,20,20) obj 0.6 cls (0.5, 0.001): E0 0.3 (E1 = 0.0006 < conf)
 * A = [40,40,60,60], B = C = [42,40,62,60]: IoU(A, B) = 18*20 / (400 + 400 - 360) = 0.818 > 0.6.
 * Class-aware: A0 suppresses B0; C1 (class 1, offset by 7680) suppresses A1; E0 overlaps nothing.
 * Out: A0, C1, E0. */
static void test_nms_hand(void) {
    float pred[5 * 7], out[300 * 6];
    row2(pred + 0, 50, 50, 20, 20, 0.9f, 0.8f, 0.1f);
    row2(pred + 7, 52, 50, 20, 20, 0.8f, 0.7f, 0.0f);
    row2(pred + 14, 52, 50, 20, 20, 0.5f, 0.0f, 0.9f);
    row2(pred + 21, 50, 50, 20, 20, 0.0005f, 0.9f, 0.9f);
    row2(pred + 28, 100, 50, 20, 20, 0.6f, 0.5f, 0.001f);
    yp_nms_cfg c;
    yp_nms_cfg_val(&c);
    CHECK(c.conf_thres == 0.001f && c.iou_thres == 0.6 && c.max_det == 300 && c.max_nms == 30000 &&
          c.max_wh == 7680.0f && c.multi_label && !c.agnostic);
    REQUIRE(run_nms(&c, pred, 5, 2, out) == 3);
    const float want[3][6] = {
        {40, 40, 60, 60, 0.8f * 0.9f, 0}, {42, 40, 62, 60, 0.9f * 0.5f, 1}, {90, 40, 110, 60, 0.5f * 0.6f, 0}};
    for (int i = 0; i < 3; i++)
        for (int q = 0; q < 6; q++) CHECK(out[6 * i + q] == want[i][q]);

    /* agnostic: C1 is now suppressed by A0 (0.818), A1 too (the same box) and B0: A0, E0 */
    c.agnostic = 1;
    REQUIRE(run_nms(&c, pred, 5, 2, out) == 2);
    CHECK(out[4] == 0.8f * 0.9f && out[6 + 4] == 0.5f * 0.6f);
    /* best class only: A0 0.72, B0 0.56, C1 0.45, E0 0.3; B0 suppressed: A0, C1, E0 */
    c.agnostic = 0, c.multi_label = 0;
    REQUIRE(run_nms(&c, pred, 5, 2, out) == 3);
    CHECK(out[5] == 0 && out[6 + 5] == 1 && out[12 + 5] == 0);
    /* max_det 2: the first two; max_nms 2: only A0 and B0 enter, B0 is suppressed */
    c.multi_label = 1, c.max_det = 2;
    CHECK(run_nms(&c, pred, 5, 2, out) == 2);
    c.max_det = 300, c.max_nms = 2;
    CHECK(run_nms(&c, pred, 5, 2, out) == 1);
}

/* Thresholds are strict and follow the float32 arithmetic: objectness exactly 0.001f is not
 * > 0.001f; an IoU of exactly 0.5 does not suppress at iou_thres 0.5; an IoU computed as 0.6f
 * (60/100, = 0.60000002 as a double) does suppress at iou_thres 0.6, as torchvision compares the
 * float IoU with the double threshold. Equal scores keep row order. */
static void test_nms_thresholds(void) {
    yp_nms_cfg c;
    yp_nms_cfg_val(&c);
    float pred[3 * 7], out[3 * 6];
    row2(pred + 0, 5, 5, 10, 10, 0.001f, 1, 1);
    CHECK(run_nms(&c, pred, 1, 2, out) == 0);
    /* [0,0,10,10] and [0,0,10,5]: IoU 50/100 = 0.5 */
    row2(pred + 0, 5, 5, 10, 10, 0.9f, 0.9f, 0);
    row2(pred + 7, 5, 2.5f, 10, 5, 0.8f, 0.9f, 0);
    c.iou_thres = 0.5;
    CHECK(run_nms(&c, pred, 2, 2, out) == 2);
    /* [0,0,10,10] and [0,0,10,6]: IoU 60/100 = 0.6f > 0.6 */
    row2(pred + 7, 5, 3, 10, 6, 0.8f, 0.9f, 0);
    c.iou_thres = 0.6;
    CHECK(run_nms(&c, pred, 2, 2, out) == 1);
    /* ties: rows 1 and 2 have the same score (0.9*0.8 == 0.8*0.9 in float32) and overlap by
     * 95/100; row 1, the earlier, is kept (y2 = 10, row 2's is 9.75) and row 2 suppressed; row 0
     * is elsewhere with a lower score */
    row2(pred + 0, 100, 100, 10, 10, 0.5f, 0.5f, 0);
    row2(pred + 7, 5, 5, 10, 10, 0.8f, 0.9f, 0);
    row2(pred + 14, 5, 5, 10, 9.5f, 0.9f, 0.8f, 0);
    REQUIRE(0.9f * 0.8f == 0.8f * 0.9f);
    REQUIRE(run_nms(&c, pred, 3, 2, out) == 2);
    CHECK(out[3] == 10 && out[4] == 0.9f * 0.8f);
    CHECK(out[6 + 0] == 95); /* then row 0 */
}

static void test_nms_workspace(void) {
    yp_nms_cfg c;
    yp_nms_cfg_val(&c);
    yp_err err;
    /* 10 boxes x 4 classes: 40 candidates x 16 bytes + 40 x 21 bytes of NMS boxes */
    CHECK_EQ_I64(yp_nms_workspace_bytes(&c, 10, 4), 40 * 16 + 40 * 21);
    c.max_nms = 8;
    CHECK_EQ_I64(yp_nms_workspace_bytes(&c, 10, 4), 40 * 16 + 8 * 21);
    c.multi_label = 0;
    CHECK_EQ_I64(yp_nms_workspace_bytes(&c, 10, 4), 10 * 16 + 8 * 21);
    yp_nms_cfg_val(&c);
    CHECK_EQ_I64(yp_nms_workspace_bytes(&c, 0, 80), 0);
    CHECK(yp_nms(&c, NULL, 0, 80, NULL, 0, NULL, &err) == 0);
    CHECK(yp_nms_workspace_bytes(&c, -1, 80) == -1);
    CHECK(yp_nms_workspace_bytes(&c, 10, 0) == -1);
    CHECK(yp_nms_workspace_bytes(&c, (int64_t)1 << 31, 80) == -1); /* > 2^32 box-class pairs */
    c.conf_thres = 1.5f;
    CHECK(yp_nms_workspace_bytes(&c, 10, 4) == -1);
    CHECK(yp_nms(&c, NULL, 0, 4, NULL, 0, NULL, &err) == -1);
    CHECK_STR_HAS(err.msg, "bad arguments");
    yp_nms_cfg_val(&c);
    float pred[7] = {5, 5, 10, 10, 0.9f, 0.9f, 0}, out[6];
    uint64_t ws[64];
    CHECK(yp_nms(&c, pred, 1, 2, ws, 8, out, &err) == -1);
    CHECK_STR_HAS(err.msg, "yp_nms_workspace_bytes");
    CHECK(yp_nms(&c, pred, 1, 2, ws, sizeof ws, out, &err) == 1);
}

/* ------------------------------------------------------------ boxes by hand */

/* A 640x480 image letterboxed into 320x320: gain 0.5, pad (0, 40). Input (10, 50)-(110, 90)
 * -> ((10-0)/0.5, (50-40)/0.5) = (20, 20) and (220, 100); a box over the padding is clipped to
 * [0, 640] x [0, 480]. The label (class 3, cx 0.5, cy 0.5, w 0.25, h 0.125) of the 320x320 input:
 * centre (160, 160), size (80, 40): (120, 140)-(200, 180) -> (240, 200)-(400, 280). */
static void test_boxes_hand(void) {
    yp_ratio_pad lb = yp_ratio_pad_fit(320, 320, 480, 640);
    CHECK(lb.gain == 0.5 && lb.pad_w == 0 && lb.pad_h == 40 && lb.h0 == 480 && lb.w0 == 640);
    float rows[2 * 6] = {10, 50, 110, 90, 0.5f, 1, -20, 10, 400, 400, 0.4f, 2};
    yp_scale_boxes(&lb, rows, 2, 6);
    const float want[12] = {20, 20, 220, 100, 0.5f, 1, 0, 0, 640, 480, 0.4f, 2};
    for (int i = 0; i < 12; i++) CHECK(rows[i] == want[i]);
    float lab[5] = {3, 0.5f, 0.5f, 0.25f, 0.125f};
    yp_labels_native(&lb, 320, 320, lab, 1, lab);
    const float wl[5] = {3, 240, 200, 400, 280};
    for (int i = 0; i < 5; i++) CHECK(lab[i] == wl[i]);
    const float a[4] = {0, 0, 10, 10}, b[4] = {5, 0, 15, 10}, z[4] = {20, 20, 30, 30};
    CHECK(yp_box_iou(a, b) == 50.0f / (100.0f + 100.0f - 50.0f + 1e-7f)); /* 1/3 */
    CHECK(yp_box_iou(a, z) == 0);
    CHECK(yp_iou_thresholds[0] == 0.5f && yp_iou_thresholds[9] == 0.95f && yp_iou_thresholds[3] == 0.65f);
}

/* ------------------------------------------------------------ matching by hand */

/* Labels (class, box): L0 (0, [0,0,10,10]), L1 (0, [20,0,30,10]), L2 (2, [0,20,10,30]),
 * L3 (2, [5,20,15,30]).
 * Detections in score order:
 *   D0 (0, [0,0,10,9])   IoU(L0) = 90/100 = 0.9f: TP at 0.5 .. 0.9 (bits 0-8)
 *   D1 (0, [0,0,10,10])  IoU(L0) = 1, but L0 is D0's at 0.5 .. 0.9: TP at 0.95 only (bit 9):
 *                        the first detection wins a label, not the best-overlapping one
 *   D2 (1, [20,0,30,10]) no label of class 1: never
 *   D3 (0, [22,0,30,10]) IoU(L1) = 80/100 = 0.8: bits 0-6
 *   D4 (0, [20,0,30,10]) IoU(L1) = 1: what D3 left, bits 7-9
 *   D5 (2, [2.5,20,12.5,30]) IoU 75/125 = 0.6f with both L2 and L3: the tie goes to L3 (the
 *                        later label, as val.py's sort leaves it): bits 0-2 (0.6f >= 0.6f)
 *   D6 (2, [0,20,10,30]) IoU(L2) = 1, IoU(L3) = 1/3: L2, untouched: bits 0-9 (had the tie gone
 *                        to L2, D6 would only get bits 3-9) */
static void test_match_hand(void) {
    const float labels[4 * 5] = {0, 0, 0, 10, 10, 0, 20, 0, 30, 10, 2, 0, 20, 10, 30, 2, 5, 20, 15, 30};
    const float dets[7 * 6] = {0,  0, 10, 9,  0.9f, 0, 0,  0,  10, 10, 0.8f, 0, 20, 0,     30, 10, 0.7f, 1,
                               22, 0, 30, 10, 0.6f, 0, 20, 0,  30, 10, 0.5f, 0, 2.5f, 20, 12.5f, 30, 0.4f, 2,
                               0,  20, 10, 30, 0.3f, 2};
    uint16_t taken[4], correct[7];
    yp_match(dets, 7, labels, 4, taken, correct);
    const uint16_t want[7] = {0x1FF, 0x200, 0, 0x7F, 0x380, 0x7, 0x3FF};
    for (int d = 0; d < 7; d++) CHECK_EQ_I64(correct[d], want[d]);
    yp_match(dets, 7, labels, 0, taken, correct); /* no labels: no TPs */
    for (int d = 0; d < 7; d++) CHECK_EQ_I64(correct[d], 0);
}

/* ------------------------------------------------------------ AP by hand */

/* compute_ap's 101-point rule, with y(x) the envelope interpolated at x = 0, 0.01, .., 1:
 *  - one TP, one label: recall [1], precision [1]: y = 1 for x < 1 and y(1) = 0 (np.interp takes
 *    the last of the equal recalls 1, 1 -> the sentinel precision 0): 99 * 0.01 + 0.005 = 0.995;
 *  - TP, FP, TP of two labels: recall [.5, .5, 1], precision [1, .5, 2/3]: envelope
 *    [1, 1, 2/3, 2/3, 0]; y = 1 for x < .5, 2/3 from .5 to .99, y(1) = 0:
 *    49 * .01 + (1 + 2/3)/2 * .01 + 49 * (2/3) * .01 + (2/3)/2 * .01 = 0.828333...;
 *  - no points: the sentinels alone, y = 1 - x: 0.5. */
static void test_ap_hand(void) {
    double work[2 * (3 + 2)];
    const double r1[1] = {1}, p1[1] = {1};
    CHECK(fabs(yp_compute_ap(r1, p1, 1, work) - 0.995) < 1e-12);
    const double r3[3] = {0.5, 0.5, 1}, p3[3] = {1, 0.5, 2.0 / 3};
    CHECK(fabs(yp_compute_ap(r3, p3, 3, work) - (0.49 + 5.0 / 600 + 0.98 / 3 + 1.0 / 300)) < 1e-12);
    CHECK(fabs(yp_compute_ap(r1, p1, 0, work) - 0.5) < 1e-12);
}

/* Three classes, two images (boxes in original pixels):
 *   image 0: labels (0, [0,0,10,10]), (1, [20,20,30,30]); detections (0, [0,0,10,10], 0.9) TP,
 *            (1, [50,50,60,60], 0.8) FP
 *   image 1: labels (0, [0,0,10,10]), (2, [40,40,50,50]); detections (0, [0,0,10,10], 0.7) TP,
 *            (0, [0,0,10,10], 0.6) FP (the label is taken)
 * class 0 (2 labels): TP, TP, FP: recall [.5, 1, 1], precision [1, 1, 2/3]: envelope 1 up to
 * recall 1, AP 0.995 at every threshold (IoU 1); class 1: one FP, AP 0; class 2: labels, no
 * detections, AP 0. mAP50 = mAP = 0.995/3, fitness the same. */
static void test_map_hand(void) {
    yp_map m;
    yp_err err;
    REQUIRE(yp_map_init(&m, 3, 4, 2, &err) == 0);
    const float l0[10] = {0, 0, 0, 10, 10, 1, 20, 20, 30, 30}, l1[10] = {0, 0, 0, 10, 10, 2, 40, 40, 50, 50};
    const float d0[12] = {0, 0, 10, 10, 0.9f, 0, 50, 50, 60, 60, 0.8f, 1};
    const float d1[12] = {0, 0, 10, 10, 0.7f, 0, 0, 0, 10, 10, 0.6f, 0};
    CHECK(yp_map_add(&m, d0, 2, l0, 2, &err) == 0);
    CHECK(yp_map_add(&m, d1, 2, l1, 2, &err) == 0);
    CHECK_EQ_I64(m.seen, 2);
    CHECK_EQ_I64(m.correct[0], 0x3FF);
    CHECK_EQ_I64(m.correct[1], 0);
    CHECK_EQ_I64(m.correct[2], 0x3FF);
    CHECK_EQ_I64(m.correct[3], 0);
    yp_map_compute(&m);
    CHECK_EQ_I64(m.n_classes, 3);
    CHECK(m.nt[0] == 2 && m.nt[1] == 1 && m.nt[2] == 1);
    for (int t = 0; t < YP_IOU_N; t++) CHECK(fabs(m.ap_iou[t] - 0.995) < 1e-12 && m.ap_iou[YP_IOU_N + t] == 0);
    CHECK(m.ap50[2] == 0 && m.ap[2] == 0 && m.p[2] == 0 && m.r[2] == 0);
    CHECK(fabs(m.map50 - 0.995 / 3) < 1e-12 && fabs(m.map - 0.995 / 3) < 1e-12);
    CHECK(fabs(m.fitness - 0.995 / 3) < 1e-12);
    CHECK(m.best >= 0 && m.best < YP_MAP_CURVE);
    CHECK(m.p[0] == m.p_curve[m.best] && m.r[0] == m.r_curve[m.best]);
    CHECK(m.maps[0] == m.ap[0] && m.maps[2] == 0);

    /* one class, one label, one TP at score 0.5: F1 is 1 for px <= 0.5 and 0 above, so the
     * smoothed mean is flat and highest from px 0: best 0, P = R = 1, tp 1, fp 0, AP 0.995 */
    yp_map_free(&m);
    REQUIRE(yp_map_init(&m, 1, 1, 1, &err) == 0);
    const float l2[5] = {0, 0, 0, 10, 10}, d2[6] = {0, 0, 10, 10, 0.5f, 0};
    CHECK(yp_map_add(&m, d2, 1, l2, 1, &err) == 0);
    yp_map_compute(&m);
    CHECK_EQ_I64(m.best, 0);
    CHECK(m.p[0] == 1 && m.r[0] == 1 && fabs(m.f1[0] - 1) < 1e-15 && m.tp[0] == 1 && m.fp[0] == 0);
    CHECK(fabs(m.ap50[0] - 0.995) < 1e-12 && fabs(m.mp - 1) < 1e-15);
    yp_map_free(&m);
}

/* No detections at all (only labels), no labels at all (only detections), nothing: every metric
 * 0 (val.py leaves them 0 when no detection is a TP), best -1; the labels still count. */
static void test_map_edges(void) {
    yp_map m;
    yp_err err;
    REQUIRE(yp_map_init(&m, 2, 8, 4, &err) == 0);
    const float lab[5] = {1, 0, 0, 10, 10}, det[6] = {0, 0, 10, 10, 0.9f, 1};
    CHECK(yp_map_add(&m, NULL, 0, lab, 1, &err) == 0);
    CHECK(yp_map_add(&m, NULL, 0, NULL, 0, &err) == 0);
    yp_map_compute(&m);
    CHECK(m.mp == 0 && m.mr == 0 && m.map50 == 0 && m.map == 0 && m.fitness == 0 && m.best == -1);
    CHECK(m.n_classes == 1 && m.nt[1] == 1 && m.seen == 2);
    yp_map_reset(&m);
    CHECK(m.seen == 0 && m.nt[1] == 0 && m.n_det == 0);
    CHECK(yp_map_add(&m, det, 1, NULL, 0, &err) == 0);
    yp_map_compute(&m);
    CHECK(m.map == 0 && m.best == -1 && m.n_classes == 0 && m.correct[0] == 0);
    /* the same detection with its label is a TP: the metrics come alive */
    CHECK(yp_map_add(&m, det, 1, lab, 1, &err) == 0);
    yp_map_compute(&m);
    CHECK(m.best >= 0 && m.map50 > 0.4);
    /* refusals: over capacity, classes outside [0, nc) or not whole, a non-finite score */
    float many[6 * 7] = {0};
    CHECK(yp_map_add(&m, many, 7, NULL, 0, &err) == -1);
    CHECK_STR_HAS(err.msg, "size yp_map_init");
    float five[25] = {0};
    CHECK(yp_map_add(&m, NULL, 0, five, 5, &err) == -1);
    const float bad_lab[5] = {2, 0, 0, 1, 1}, half_lab[5] = {0.5f, 0, 0, 1, 1}, bad_det[6] = {0, 0, 1, 1, NAN, 0};
    CHECK(yp_map_add(&m, NULL, 0, bad_lab, 1, &err) == -1);
    CHECK_STR_HAS(err.msg, "class 2 is not one of 0..1");
    CHECK(yp_map_add(&m, NULL, 0, half_lab, 1, &err) == -1);
    CHECK(yp_map_add(&m, bad_det, 1, NULL, 0, &err) == -1);
    CHECK_EQ_I64(m.n_det, 2);
    yp_map_free(&m);
    CHECK(yp_map_init(&m, 0, 1, 1, &err) == -1);
    CHECK(yp_map_init(&m, 2, -1, 1, &err) == -1);
}

/* Everything below conf: NMS yields nothing, the labels count, the metrics are 0. */
static void test_all_below_conf(void) {
    yp_nms_cfg c;
    yp_nms_cfg_val(&c);
    float pred[2 * 7], out[2 * 6];
    row2(pred + 0, 5, 5, 10, 10, 0.0009f, 1, 1);   /* objectness below */
    row2(pred + 7, 5, 5, 10, 10, 0.01f, 0.05f, 0); /* scores 0.0005 and 0 below */
    REQUIRE(run_nms(&c, pred, 2, 2, out) == 0);
    yp_map m;
    yp_err err;
    REQUIRE(yp_map_init(&m, 2, 300, 1, &err) == 0);
    const float lab[5] = {0, 0, 0, 10, 10};
    CHECK(yp_map_add(&m, out, 0, lab, 1, &err) == 0);
    yp_map_compute(&m);
    CHECK(m.map50 == 0 && m.mp == 0 && m.best == -1 && m.nt[0] == 1);
    yp_map_free(&m);
}

/* ------------------------------------------------------------ against the reference */

static fx_file fx;

static const fx_record *rec(const char *fmt, const char *s, int i) {
    char name[128];
    if (i >= 0) snprintf(name, sizeof name, fmt, s, i);
    else snprintf(name, sizeof name, fmt, s);
    return fx_get(&fx, name);
}

/* max |a - b| over n floats, relative to max(1, max |b|) */
static double diff_f(const float *a, const float *b, int64_t n) {
    double d = 0, top = 1;
    for (int64_t i = 0; i < n; i++) {
        double e = fabs((double)a[i] - b[i]), m = fabs((double)b[i]);
        d = e > d ? e : d, top = m > top ? m : top;
    }
    return d / top;
}

/* The reference's float64 record `name` (value + remainder) at index i. */
static double f64_at(const char *s, const char *name, int64_t i) {
    char a[96], b[100];
    snprintf(a, sizeof a, "%s/%s", s, name);
    snprintf(b, sizeof b, "%s/lo", a);
    const fx_record *hi = fx_get(&fx, a), *lo = fx_get(&fx, b);
    if (!hi || !lo || i >= hi->numel) return NAN;
    return (double)hi->data[i] + (double)lo->data[i];
}

static double worst_f64; /* the largest |ours - reference| over the float64 results */

static void check_f64(const char *s, const char *name, int64_t i, double ours) {
    double ref = f64_at(s, name, i), d = fabs(ours - ref);
    if (!(d <= TOL)) fprintf(stderr, "%s/%s[%lld]: ours %.17g, reference %.17g\n", s, name, (long long)i, ours, ref);
    CHECK(d <= TOL);
    if (d > worst_f64) worst_f64 = d;
}

/* One scenario: NMS, rescaling, matching per image, then the run's metrics. */
static void check_scenario(const char *s) {
    const fx_record *cfg = rec("%s/cfg", s, -1);
    REQUIRE(cfg && cfg->numel == 10);
    const float *v = cfg->data;
    int nc = (int)v[0], n_img = (int)v[3];
    int64_t in_w = (int64_t)v[1], in_h = (int64_t)v[2];
    yp_nms_cfg c = {v[4], v[5] / 1000.0, (int64_t)v[6], (int64_t)v[7], 7680.0f, (int)v[8], (int)v[9]};
    yp_map m;
    yp_err err;
    REQUIRE(yp_map_init(&m, nc, 400 * n_img, 64, &err) == 0);
    float *out = malloc((size_t)c.max_det * 6 * sizeof *out), *lab = malloc(64 * 5 * sizeof *lab);
    REQUIRE(out && lab);
    double worst_box = 0;
    for (int i = 0; i < n_img; i++) {
        const fx_record *cnt = rec("%s/%d/counts", s, i), *shape = rec("%s/%d/shape", s, i);
        REQUIRE(cnt && shape);
        int64_t n_box = (int64_t)cnt->data[0], n_lab = (int64_t)cnt->data[1], n_det = (int64_t)cnt->data[2];
        const fx_record *pred = n_box ? rec("%s/%d/pred", s, i) : NULL;
        REQUIRE(!n_box || (pred && pred->numel == n_box * (5 + nc)));
        int64_t k = run_nms(&c, pred ? pred->data : NULL, n_box, nc, out);
        CHECK_EQ_I64(k, n_det);
        if (k != n_det) continue;
        yp_ratio_pad lb = {shape->data[2], shape->data[3], shape->data[4], (int64_t)shape->data[0],
                           (int64_t)shape->data[1]};
        if (n_det) {
            const fx_record *nms = rec("%s/%d/nms", s, i), *predn = rec("%s/%d/predn", s, i);
            REQUIRE(nms && predn && nms->numel == 6 * n_det);
            for (int64_t d = 0; d < n_det; d++) CHECK(out[6 * d + 5] == nms->data[6 * d + 5]);
            double e = diff_f(out, nms->data, 6 * n_det);
            CHECK(e <= TOL);
            yp_scale_boxes(&lb, out, n_det, 6);
            double e2 = diff_f(out, predn->data, 6 * n_det);
            CHECK(e2 <= TOL);
            worst_box = fmax(worst_box, fmax(e, e2));
        }
        if (n_lab) {
            const fx_record *labels = rec("%s/%d/labels", s, i), *labelsn = rec("%s/%d/labelsn", s, i);
            REQUIRE(labels && labelsn && n_lab <= 64);
            yp_labels_native(&lb, in_w, in_h, labels->data, n_lab, lab);
            double e = diff_f(lab, labelsn->data, 5 * n_lab);
            CHECK(e <= TOL);
            worst_box = fmax(worst_box, e);
        }
        int64_t before = m.n_det;
        REQUIRE(yp_map_add(&m, out, n_det, lab, n_lab, &err) == 0);
        if (n_det) {
            const fx_record *corr = rec("%s/%d/correct", s, i);
            REQUIRE(corr && corr->numel == 10 * n_det);
            int64_t wrong = 0;
            for (int64_t d = 0; d < n_det; d++)
                for (int t = 0; t < YP_IOU_N; t++)
                    wrong += (m.correct[before + d] >> t & 1) != (corr->data[10 * d + t] != 0);
            CHECK_EQ_I64(wrong, 0);
        }
    }
    yp_map_compute(&m);
    const fx_record *nt = rec("%s/nt", s, -1), *cls = rec("%s/classes", s, -1), *best = rec("%s/best", s, -1);
    REQUIRE(nt && cls && best && nt->numel == nc);
    for (int k = 0; k < nc; k++) CHECK_EQ_I64(m.nt[k], (int64_t)nt->data[k]);
    CHECK_EQ_I64(m.n_classes, cls->numel);
    CHECK_EQ_I64(m.best, (int64_t)best->data[0]);
    for (int64_t u = 0; u < cls->numel; u++) {
        int k = (int)cls->data[u];
        check_f64(s, "p", u, m.p[k]);
        check_f64(s, "r", u, m.r[k]);
        check_f64(s, "f1", u, m.f1[k]);
        check_f64(s, "tp", u, m.tp[k]);
        check_f64(s, "fp", u, m.fp[k]);
        for (int t = 0; t < YP_IOU_N; t++) check_f64(s, "ap", u * YP_IOU_N + t, m.ap_iou[k * YP_IOU_N + t]);
        for (int g = 0; g < YP_MAP_CURVE; g++) {
            check_f64(s, "pcurve", u * YP_MAP_CURVE + g, m.p_curve[(int64_t)k * YP_MAP_CURVE + g]);
            check_f64(s, "rcurve", u * YP_MAP_CURVE + g, m.r_curve[(int64_t)k * YP_MAP_CURVE + g]);
        }
    }
    const double means[5] = {m.mp, m.mr, m.map50, m.map, m.fitness};
    for (int q = 0; q < 5; q++) check_f64(s, "map", q, means[q]);
    for (int k = 0; k < nc; k++) check_f64(s, "maps", k, m.maps[k]);
    printf("  %s: %lld detections of %d images; boxes within %.1e, metrics within %.1e; mAP50 %.4f mAP %.4f\n", s,
           (long long)m.n_det, n_img, worst_box, worst_f64, m.map50, m.map);
    free(out), free(lab);
    yp_map_free(&m);
}

static void test_reference(void) {
    if (fx.n == 0) {
        CHECK(!"tests/data/metrics/metrics.bin loads");
        return;
    }
    check_scenario("a");
    check_scenario("one");
    check_scenario("agn");
}

/* ------------------------------------------------------------ COCO JSON */

static char *slurp(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *t = n >= 0 ? malloc((size_t)n + 1) : NULL;
    if (t && fread(t, 1, (size_t)n, f) != (size_t)n) free(t), t = NULL;
    if (t) t[n] = 0;
    fclose(f);
    return t;
}

/* Writes j to a scratch file and parses it back. */
static cJSON *written(const yp_coco_json *j) {
    char path[] = "/tmp/yp_test_metrics_XXXXXX";
    int fd = mkstemp(path);
    if (fd < 0) return NULL;
    close(fd);
    yp_err err;
    cJSON *parsed = NULL;
    if (yp_coco_json_write(j, path, &err) == 0) {
        char *text = slurp(path);
        parsed = text ? cJSON_Parse(text) : NULL;
        free(text);
    }
    unlink(path);
    return parsed;
}

/* By hand: the box (12.0625, 4)-(20.0625, 10) goes through its centre 16.0625 and size 8:
 * x = 16.0625 - 4 = 12.0625, which Python rounds to 12.062 (an exact tie, to even); score
 * 0.123456 -> 0.12346; "val/000000000139.jpg" -> image_id 139, "a/b.c.png" -> "b.c", class 1
 * through the COCO map -> 2. */
static void test_json_hand(void) {
    yp_coco_json *j = yp_coco_json_new();
    REQUIRE(j);
    yp_err err;
    const float d[6] = {12.0625f, 4, 20.0625f, 10, 0.123456f, 1};
    CHECK(yp_coco_json_add(j, "val/000000000139.jpg", d, 1, yp_coco80_to_91, 80, &err) == 0);
    CHECK(yp_coco_json_add(j, "a/b.c.png", d, 1, NULL, 0, &err) == 0);
    const float bad[6] = {0, 0, 1, 1, 0.5f, 80};
    CHECK(yp_coco_json_add(j, "x.jpg", bad, 1, yp_coco80_to_91, 80, &err) == -1);
    CHECK_STR_HAS(err.msg, "class 80 has no category");
    cJSON *a = written(j);
    REQUIRE(a && cJSON_GetArraySize(a) == 2);
    cJSON *o0 = cJSON_GetArrayItem(a, 0), *o1 = cJSON_GetArrayItem(a, 1);
    cJSON *id0 = cJSON_GetObjectItem(o0, "image_id"), *id1 = cJSON_GetObjectItem(o1, "image_id");
    CHECK(cJSON_IsNumber(id0) && id0->valuedouble == 139);
    CHECK(cJSON_IsString(id1) && !strcmp(id1->valuestring, "b.c"));
    CHECK(cJSON_GetObjectItem(o0, "category_id")->valuedouble == 2);
    CHECK(cJSON_GetObjectItem(o1, "category_id")->valuedouble == 1);
    cJSON *bbox = cJSON_GetObjectItem(o0, "bbox");
    const double wb[4] = {12.062, 4, 8, 6};
    REQUIRE(cJSON_GetArraySize(bbox) == 4);
    for (int q = 0; q < 4; q++) CHECK(cJSON_GetArrayItem(bbox, q)->valuedouble == wb[q]);
    CHECK(cJSON_GetObjectItem(o0, "score")->valuedouble == 0.12346);
    cJSON_Delete(a);
    CHECK(yp_coco_json_write(j, "/nonexistent-dir/p.json", &err) == -1);
    CHECK_STR_HAS(err.msg, "cannot write");
    yp_coco_json_free(j);
}

static double num(const cJSON *o, const char *key) {
    const cJSON *v = cJSON_GetObjectItem(o, key);
    return cJSON_IsNumber(v) ? v->valuedouble : NAN;
}

/* Scenario "a"'s detections written as val.py's save_one_json, against json.dump's file: the
 * same objects in the same order, every number equal as a double. */
static void test_json_reference(void) {
    if (fx.n == 0) {
        CHECK(!"tests/data/metrics/metrics.bin loads");
        return;
    }
    char *text = slurp(YP_TEST_DATA "/metrics/predictions.json");
    cJSON *ref = text ? cJSON_Parse(text) : NULL;
    free(text);
    REQUIRE(ref);
    static const int class_map[5] = {18, 19, 3, 7, 90};
    yp_coco_json *j = yp_coco_json_new();
    yp_nms_cfg c;
    yp_nms_cfg_val(&c);
    float *out = malloc(300 * 6 * sizeof *out);
    REQUIRE(j && out);
    yp_err err;
    for (int i = 0; i < 6; i++) {
        const fx_record *cnt = rec("%s/%d/counts", "a", i), *shape = rec("%s/%d/shape", "a", i);
        REQUIRE(cnt && shape);
        const fx_record *pred = cnt->data[0] ? rec("%s/%d/pred", "a", i) : NULL;
        int64_t k = run_nms(&c, pred ? pred->data : NULL, (int64_t)cnt->data[0], 5, out);
        REQUIRE(k >= 0);
        yp_ratio_pad lb = {shape->data[2], shape->data[3], shape->data[4], (int64_t)shape->data[0],
                           (int64_t)shape->data[1]};
        yp_scale_boxes(&lb, out, k, 6);
        char path[64];
        if (i % 2 == 0) snprintf(path, sizeof path, "val/%012d.jpg", i);
        else snprintf(path, sizeof path, "val/img.%d.png", i);
        CHECK(yp_coco_json_add(j, path, out, k, class_map, 5, &err) == 0);
    }
    cJSON *ours = written(j);
    REQUIRE(ours);
    int n = cJSON_GetArraySize(ref), bad = 0;
    CHECK_EQ_I64(cJSON_GetArraySize(ours), n);
    for (int q = 0; q < n && q < cJSON_GetArraySize(ours); q++) {
        cJSON *a = cJSON_GetArrayItem(ours, q), *b = cJSON_GetArrayItem(ref, q);
        cJSON *ia = cJSON_GetObjectItem(a, "image_id"), *ib = cJSON_GetObjectItem(b, "image_id");
        int same = cJSON_IsNumber(ib) ? cJSON_IsNumber(ia) && ia->valuedouble == ib->valuedouble
                                      : cJSON_IsString(ia) && !strcmp(ia->valuestring, ib->valuestring);
        same &= num(a, "category_id") == num(b, "category_id") && num(a, "score") == num(b, "score");
        cJSON *ba = cJSON_GetObjectItem(a, "bbox"), *bb = cJSON_GetObjectItem(b, "bbox");
        for (int e = 0; e < 4; e++)
            same &= cJSON_GetArrayItem(ba, e)->valuedouble == cJSON_GetArrayItem(bb, e)->valuedouble;
        if (!same && bad++ < 3) fprintf(stderr, "json object %d differs\n", q);
    }
    CHECK_EQ_I64(bad, 0);
    printf("  predictions.json: %d objects\n", n);
    cJSON_Delete(ours);
    cJSON_Delete(ref);
    yp_coco_json_free(j);
    free(out);
}

int main(void) {
    if (fx_load(YP_TEST_DATA "/metrics/metrics.bin", &fx))
        fprintf(stderr, "test_metrics: cannot load tests/data/metrics/metrics.bin\n");
    YP_RUN(test_nms_hand);
    YP_RUN(test_nms_thresholds);
    YP_RUN(test_nms_workspace);
    YP_RUN(test_boxes_hand);
    YP_RUN(test_match_hand);
    YP_RUN(test_ap_hand);
    YP_RUN(test_map_hand);
    YP_RUN(test_map_edges);
    YP_RUN(test_all_below_conf);
    YP_RUN(test_reference);
    YP_RUN(test_json_hand);
    YP_RUN(test_json_reference);
    fx_free(&fx);
    return yp_test_summary();
}
