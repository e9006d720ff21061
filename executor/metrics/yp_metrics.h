/* yp_metrics.h - YOLOv5's validation metrics on the host: the NMS, the matching of
 * detections to labels at ten IoU thresholds, precision/recall/AP per class, mAP and fitness, and
 * a COCO-format JSON of the detections. The semantics are YOLOv5's val.py at HEAD (its
 * non_max_suppression, scale_boxes, process_batch, ap_per_class, compute_ap, fitness and
 * save_one_json); each function below states the facts it follows.
 *
 * Data flow of one validation run: yp_exec_eval's decoded rows (x, y, w, h, objectness, nc class
 * scores; input pixels) -> yp_nms per image -> yp_scale_boxes (and yp_labels_native for the
 * labels; executor/data's yp_boxes.h) -> yp_map_add per image -> yp_map_compute once.
 *
 * Float32 where YOLOv5 computes in float32 (scores, boxes, IoU, thresholds compared as float32),
 * float64 where it computes in numpy (curves, AP, means). Where YOLOv5's result depends on the
 * order an unstable sort leaves equal keys in, ours is the stable order (stated per function).
 *
 * Defines: yp_nms_cfg (+ yp_nms_cfg_val, yp_nms_workspace_bytes, yp_nms), YP_IOU_N, yp_iou_thresholds,
 * yp_box_iou, yp_match, yp_compute_ap, yp_map (+ init, host_bytes, free, reset, add, compute), yp_coco_json
 * (+ new, add, write, free), yp_coco80_to_91. */
#ifndef YP_METRICS_H
#define YP_METRICS_H

#include <stdint.h>

#include "yp_error.h"

/* ---------------------------------------------------------------- NMS */

typedef struct {
    float conf_thres;  /* candidates: objectness > conf_thres, then class score > conf_thres */
    double iou_thres;  /* a box is suppressed by a kept one when their IoU > iou_thres */
    int64_t max_det;   /* at most this many rows out */
    int64_t max_nms;   /* at most this many candidates (the highest scores) enter the NMS */
    float max_wh;      /* class offset of the class-aware NMS (pixels) */
    int multi_label;   /* one candidate per class above conf_thres (only when nc > 1) */
    int agnostic;      /* class-agnostic NMS (val.py's --single-cls) */
} yp_nms_cfg;

/* val.py's settings: conf 0.001, IoU 0.6, max_det 300, max_nms 30000, max_wh 7680, multi-label,
 * class-aware. */
void yp_nms_cfg_val(yp_nms_cfg *c);

/* Bytes of workspace yp_nms needs for one image of n_boxes rows with nc classes (no other memory
 * is used), or -1 when an argument is out of range or the size overflows int64. */
int64_t yp_nms_workspace_bytes(const yp_nms_cfg *c, int64_t n_boxes, int nc);

/* YOLOv5's non_max_suppression on one image. pred: n_boxes rows of 5 + nc floats (cx, cy, w, h,
 * objectness, nc class probabilities), as yp_exec_eval decodes them. out: room for
 * c->max_det rows of 6 floats (x1, y1, x2, y2, score, class), written best first.
 *
 *  1. rows with objectness > conf_thres (float32 comparison) are candidates; score = cls * obj;
 *  2. multi-label (nc > 1): one candidate per (row, class) with score > conf_thres, in row then
 *     class order; otherwise the best class of each row (first maximum), kept if > conf_thres;
 *  3. boxes to corners (cx -+ w/2, cy -+ h/2);
 *  4. candidates sorted by score, highest first, the first max_nms kept;
 *  5. torchvision's greedy NMS on the corners offset by class * max_wh (0 when agnostic):
 *     IoU = inter / (area_i + area_j - inter) in float32; the first max_det kept rows out.
 * Equal scores keep candidate order (step 2's) in both sorts; YOLOv5's sorts are not stable, so
 * it may order ties otherwise. No time limit (val.py stops an image loop after 0.5 + 0.05*batch
 * seconds; this has no clock).
 * Returns the number of rows written (0 .. max_det), or -1 with err set (bad arguments, a
 * workspace smaller than yp_nms_workspace_bytes, more than 2^32 - 1 candidates). */
int64_t yp_nms(const yp_nms_cfg *c, const float *pred, int64_t n_boxes, int nc, void *ws, int64_t ws_bytes,
               float *out, yp_err *err);

/* ---------------------------------------------------------------- boxes */

/* ---------------------------------------------------------------- matching */

#define YP_IOU_N 10
/* val.py's iouv = torch.linspace(0.5, 0.95, 10) in float32: 0.5, 0.55, ..., 0.95. */
extern const float yp_iou_thresholds[YP_IOU_N];

/* box_iou of two corner boxes, float32: inter / (area_a + area_b - inter + 1e-7), inter the
 * product of the overlaps clamped at 0; a is the label, b the detection. */
float yp_box_iou(const float *a, const float *b);

/* process_batch: which detections are true positives at each IoU threshold. dets: n_det rows
 * (x1, y1, x2, y2, score, class), in score order (yp_nms's); labels: n_lab rows (class, x1, y1,
 * x2, y2), same pixels. correct[d] gets bit t set when detection d is a TP at
 * yp_iou_thresholds[t]. taken: room for n_lab values (workspace).
 *
 * YOLOv5's rule per threshold: the (label, detection) pairs of equal class with IoU >= threshold,
 * sorted by IoU, highest first; each detection keeps its first pair, then each label the pair of
 * the smallest detection index among those left; those detections are TPs. So a detection's
 * label is its highest-IoU one of its class (ties: the higher label index, what the stable sort
 * reversed gives; numpy's argsort is not stable), and of the detections that pick a label, the
 * first (highest score) wins it. No labels: no TPs. */
void yp_match(const float *dets, int64_t n_det, const float *labels, int64_t n_lab, uint16_t *taken,
              uint16_t *correct);

/* ---------------------------------------------------------------- AP */

/* compute_ap: the area under one class's precision/recall curve, n points in detection order
 * (recall non-decreasing). Sentinels (recall 0, precision 1) before and (1, 0) after, the
 * precision envelope (running maximum from the right), then 101-point interpolation
 * (np.interp at recall 0, 0.01, ..., 1) integrated with the trapezoid rule. work: room for
 * 2*(n + 2) doubles. */
double yp_compute_ap(const double *recall, const double *precision, int64_t n, double *work);

#define YP_MAP_CURVE 1000 /* ap_per_class's confidence grid: px = linspace(0, 1, 1000) */

/* The statistics of one validation run (val.py's `stats`) and, after yp_map_compute, its results.
 * yp_map_init allocates everything once; add and compute allocate nothing. Per-class arrays have
 * nc entries indexed by class; only classes with labels (nt[c] > 0) are in the means. */
typedef struct {
    int nc;
    int64_t cap_det, cap_labels; /* detections in all, labels per image */
    int64_t n_det, seen;         /* detections added, images added */
    uint16_t *correct;           /* n_det: yp_match's bits */
    float *conf, *cls;           /* n_det: score, class */
    int64_t *nt;                 /* nc: labels per class */

    /* results (yp_map_compute) */
    double mp, mr, map50, map, fitness; /* mean P, R, AP@0.5, AP@0.5:0.95; 0.1*map50 + 0.9*map */
    int n_classes;                      /* classes with labels */
    int best;                           /* px index of P and R (max smoothed mean F1); -1: none */
    double *p, *r, *f1, *tp, *fp;       /* nc: at px[best]; tp, fp rounded counts */
    double *ap50, *ap, *ap_iou;         /* nc, nc, nc x YP_IOU_N */
    double *maps;                       /* nc: ap of a labelled class, map for the others */
    double *p_curve, *r_curve;          /* nc x YP_MAP_CURVE: P and R at px */

    /* workspace (private): sort keys, detections grouped by class, per-class curves, match flags */
    uint64_t *keys, *tmp;
    uint32_t *grouped;
    int64_t *start;
    double *xp, *mrec, *mpre, *grid;
    uint16_t *taken;
} yp_map;

/* Sizes m for nc classes, at most cap_det detections over the run and cap_labels labels per
 * image. 0, or -1 with err set (bad sizes, out of memory); m is zeroed either way. */
int yp_map_init(yp_map *m, int nc, int64_t cap_det, int64_t cap_labels, yp_err *err);
/* The bytes yp_map_init allocates for these sizes (-1 when it would refuse them). */
int64_t yp_map_host_bytes(int nc, int64_t cap_det, int64_t cap_labels);
void yp_map_free(yp_map *m);
/* Forgets the images added (a new validation run). */
void yp_map_reset(yp_map *m);

/* One image, as val.py's loop: dets (n_det rows, yp_nms's order, rescaled to original pixels),
 * labels (n_lab rows (class, x1, y1, x2, y2), same pixels). Detections are matched (yp_match)
 * and kept with their scores and classes; labels count per class (val.py's --single-cls: NMS with
 * agnostic set, and every detection's class set to 0 before this, the labels being class 0).
 * 0, or -1 with err set (over capacity, a class outside [0, nc), a non-finite score). */
int yp_map_add(yp_map *m, const float *dets, int64_t n_det, const float *labels, int64_t n_lab, yp_err *err);

/* ap_per_class over everything added, then val.py's means. When no detection is a TP at any
 * threshold (val.py's `stats[0].any()` is false) every result is 0 and best is -1.
 *  - detections sorted by score, highest first (stable: ties stay in the order added);
 *  - per class with labels: cumulative TPs and FPs; recall = TP/(n_labels + 1e-16), precision =
 *    TP/(TP + FP); p_curve/r_curve = np.interp of precision (left 1) and recall (left 0) at
 *    -px over -score (IoU 0.5); AP per threshold by yp_compute_ap; a class without detections
 *    has zeros;
 *  - F1 = 2PR/(P + R + 1e-16) per class and grid point, its mean over the labelled classes
 *    smoothed by a box filter of 101 points (fraction 0.1, ends padded with the end values);
 *    best = its first maximum; p, r, f1 at best; tp = round(r*nt), fp = round(tp/(p+1e-16) - tp);
 *  - mp, mr, map50, map: means over the labelled classes of p, r, ap50, ap (ap = mean over the 10
 *    thresholds), fitness = 0.1*map50 + 0.9*map. Sums are numpy's pairwise sums. */
void yp_map_compute(yp_map *m);

/* ---------------------------------------------------------------- COCO JSON */

/* COCO's 80-class index to its 91 category ids (val.py's class map on COCO; elsewhere the
 * identity). */
extern const int yp_coco80_to_91[80];

typedef struct yp_coco_json yp_coco_json;

yp_coco_json *yp_coco_json_new(void);
void yp_coco_json_free(yp_coco_json *j);

/* save_one_json for one image: per detection row (x1, y1, x2, y2, score, class; original pixels)
 * an object {"image_id", "category_id", "bbox", "score"}: image_id is the stem of image_path
 * (its file name less the last extension) as an integer when it is all ASCII digits (leading
 * zeros dropped), else as a string; category_id = class_map[class] (NULL: the class itself);
 * bbox = [x1', y1', w, h] with w = x2 - x1, h = y2 - y1, x1' = (x1 + x2)/2 - w/2 (float32, as
 * YOLOv5 goes through centres), each rounded to 3 decimals as Python's round(v, 3); score
 * rounded to 5. 0, or -1 with err set (a class outside the map, out of memory). */
int yp_coco_json_add(yp_coco_json *j, const char *image_path, const float *dets, int64_t n, const int *class_map,
                     int n_map, yp_err *err);

/* Writes the array of every object added (val.py's *_predictions.json). 0, or -1 with err set. */
int yp_coco_json_write(const yp_coco_json *j, const char *path, yp_err *err);

#endif
