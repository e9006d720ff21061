#!/usr/bin/python3
"""Writes tests/data/metrics/metrics.bin and predictions.json: YOLOv5's validation metrics
computed in PyTorch and numpy, an independent second computation for tests/executor/metrics/test_metrics.c.

What is reimplemented here, following YOLOv5's val.py at HEAD line by line (tensor for tensor,
float32 where it computes in float32, numpy float64 where it does):
  - non_max_suppression (utils/general.py): objectness > conf, scores obj * cls, multi-label
    candidates via nonzero() (nc > 1) or the best class, xywh -> xyxy, sort by score, the first
    max_nms, boxes offset by class * max_wh, torchvision.ops.nms, the first max_det;
  - torchvision.ops.nms itself (Debian has no torchvision): its CPU kernel, greedy over the
    score order, float32 IoU, suppression when IoU > threshold compared as a double;
  - scale_boxes / clip_boxes, the label conversion of val.py (targets * (w, h, w, h), xywh2xyxy);
  - box_iou, process_batch (pairs IoU >= iouv[i] of equal class, sorted by IoU, np.unique per
    detection then per label), ap_per_class (with compute_ap's 101-point interpolation and
    smooth()'s box filter), the means and fitness of val.py;
  - save_one_json (the COCO results list), written with json.dump.
YOLOv5 sorts with unstable sorts (torch.sort, np.argsort's default); here every sort is stable,
the order the C implementation documents for ties.

Scenarios (prefix "<s>/"):
  "a"   nc 5, 320x256 input, 6 images of different original sizes (letterbox gain and padding),
        val.py's NMS settings. Labels are jittered into several overlapping predictions each, plus
        random boxes. Class 3 has predictions but no labels, class 4 labels but never a score above
        conf. Image 3: labels, every objectness below conf (no detections); image 4: predictions,
        no labels; image 5: neither labels nor a prediction above conf.
  "one" nc 1 (best-class path), conf 0.01, IoU 0.45, max_det 10, max_nms 12 (both limits change
        the result: asserted).
  "agn" nc 3, class-agnostic NMS (single_cls), multi-label, conf 0.05, IoU 0.5.
Records: "<s>/cfg" (nc, in_w, in_h, n_images, conf, iou*1000, max_det, max_nms, multi_label,
agnostic); per image i "<s>/<i>/counts" (boxes, labels, detections), "<s>/<i>/shape" (h0, w0,
gain, pad_w, pad_h), and when not empty "<s>/<i>/pred" (boxes x 5+nc), "<s>/<i>/labels" (class,
cx, cy, w, h normalised), "<s>/<i>/nms" (NMS rows in input pixels), "<s>/<i>/predn" (rescaled),
"<s>/<i>/labelsn" (class, x1, y1, x2, y2 original pixels), "<s>/<i>/correct" (detections x 10,
0/1); then "<s>/nt" (labels per class), "<s>/classes" (labelled classes), "<s>/best" (px index),
and as float64 pairs (name: float32 value, name + "/lo": the float32 of the remainder)
"<s>/p", "<s>/r", "<s>/f1", "<s>/tp", "<s>/fp" (per labelled class), "<s>/ap" (labelled classes
x 10), "<s>/pcurve", "<s>/rcurve" (labelled classes x 1000), "<s>/map" (mp, mr, map50, map,
fitness), "<s>/maps" (nc).
predictions.json: scenario "a"'s COCO results, image i named val/000000000<i>.jpg for even i and
val/img.<i>.png for odd i, class map (18, 19, 3, 7, 90).
Format of metrics.bin: tests/ref/make_step_fixture.py's record().

Deterministic (numpy default_rng(7)). Run: /usr/bin/python3 tests/ref/make_metrics_fixture.py
(Debian's python3-torch and python3-numpy).
"""

import json
import os
import sys

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from make_step_fixture import record  # noqa: E402

OUT = os.path.join(HERE, "..", "data", "metrics")
CLASS_MAP = [18, 19, 3, 7, 90]


# ---------------------------------------------------------------- boxes


def xywh2xyxy(x):
    y = x.clone()
    y[..., 0] = x[..., 0] - x[..., 2] / 2
    y[..., 1] = x[..., 1] - x[..., 3] / 2
    y[..., 2] = x[..., 0] + x[..., 2] / 2
    y[..., 3] = x[..., 1] + x[..., 3] / 2
    return y


def xyxy2xywh(x):
    y = x.clone()
    y[..., 0] = (x[..., 0] + x[..., 2]) / 2
    y[..., 1] = (x[..., 1] + x[..., 3]) / 2
    y[..., 2] = x[..., 2] - x[..., 0]
    y[..., 3] = x[..., 3] - x[..., 1]
    return y


def clip_boxes(boxes, shape):
    boxes[..., 0].clamp_(0, shape[1])
    boxes[..., 1].clamp_(0, shape[0])
    boxes[..., 2].clamp_(0, shape[1])
    boxes[..., 3].clamp_(0, shape[0])


def scale_boxes(img1_shape, boxes, img0_shape, ratio_pad):
    gain = ratio_pad[0][0]
    pad = ratio_pad[1]
    boxes[..., [0, 2]] -= pad[0]
    boxes[..., [1, 3]] -= pad[1]
    boxes[..., :4] /= gain
    clip_boxes(boxes, img0_shape)
    return boxes


def box_iou(box1, box2, eps=1e-7):
    (a1, a2), (b1, b2) = box1.unsqueeze(1).chunk(2, 2), box2.unsqueeze(0).chunk(2, 2)
    inter = (torch.min(a2, b2) - torch.max(a1, b1)).clamp(0).prod(2)
    return inter / ((a2 - a1).prod(2) + (b2 - b1).prod(2) - inter + eps)


# ---------------------------------------------------------------- NMS


def tv_nms(dets, scores, iou_threshold):
    """torchvision's CPU nms kernel (a stable score sort here)."""
    x1, y1, x2, y2 = (dets[:, k].contiguous() for k in range(4))
    areas = (x2 - x1) * (y2 - y1)
    order = torch.sort(scores, descending=True, stable=True).indices
    suppressed = torch.zeros(len(scores), dtype=torch.bool)
    keep = []
    for _i in range(len(order)):
        i = order[_i]
        if suppressed[i]:
            continue
        keep.append(int(i))
        rest = order[_i + 1 :]
        xx1 = torch.maximum(x1[i], x1[rest])
        yy1 = torch.maximum(y1[i], y1[rest])
        xx2 = torch.minimum(x2[i], x2[rest])
        yy2 = torch.minimum(y2[i], y2[rest])
        w = torch.clamp(xx2 - xx1, min=0)
        h = torch.clamp(yy2 - yy1, min=0)
        inter = w * h
        ovr = inter / (areas[i] + areas[rest] - inter)
        suppressed[rest[ovr.double() > iou_threshold]] = True  # float IoU > double threshold
    return torch.tensor(keep, dtype=torch.long)


def non_max_suppression(x, nc, conf_thres, iou_thres, multi_label, agnostic, max_det, max_nms, max_wh=7680):
    """One image of utils/general.py's non_max_suppression (no masks, no labels, no time limit)."""
    multi_label &= nc > 1
    x = x[x[..., 4] > conf_thres]
    if not x.shape[0]:
        return torch.zeros((0, 6))
    x = x.clone()
    x[:, 5:] *= x[:, 4:5]
    box = xywh2xyxy(x[:, :4])
    if multi_label:
        i, j = (x[:, 5:] > conf_thres).nonzero(as_tuple=False).T
        x = torch.cat((box[i], x[i, 5 + j, None], j[:, None].float()), 1)
    else:
        conf, j = x[:, 5:].max(1, keepdim=True)
        x = torch.cat((box, conf, j.float()), 1)[conf.view(-1) > conf_thres]
    if not x.shape[0]:
        return torch.zeros((0, 6))
    x = x[torch.sort(x[:, 4], descending=True, stable=True).indices[:max_nms]]
    c = x[:, 5:6] * (0 if agnostic else max_wh)
    boxes, scores = x[:, :4] + c, x[:, 4]
    i = tv_nms(boxes, scores, iou_thres)[:max_det]
    return x[i]


# ---------------------------------------------------------------- matching and AP


def process_batch(detections, labels, iouv):
    iou = box_iou(labels[:, 1:], detections[:, :4])
    correct = np.zeros((detections.shape[0], iouv.shape[0])).astype(bool)
    correct_class = labels[:, 0:1] == detections[:, 5]
    for i in range(len(iouv)):
        x = torch.where((iou >= iouv[i]) & correct_class)
        if x[0].shape[0]:
            matches = torch.cat((torch.stack(x, 1), iou[x[0], x[1]][:, None]), 1).cpu().numpy()
            if x[0].shape[0] > 1:
                matches = matches[matches[:, 2].argsort(kind="stable")[::-1]]
                matches = matches[np.unique(matches[:, 1], return_index=True)[1]]
                matches = matches[np.unique(matches[:, 0], return_index=True)[1]]
            correct[matches[:, 1].astype(int), i] = True
    return torch.tensor(correct, dtype=torch.bool)


def smooth(y, f=0.05):
    nf = round(len(y) * f * 2) // 2 + 1
    p = np.ones(nf // 2)
    yp = np.concatenate((p * y[0], y, p * y[-1]), 0)
    return np.convolve(yp, np.ones(nf) / nf, mode="valid")


def compute_ap(recall, precision):
    mrec = np.concatenate(([0.0], recall, [1.0]))
    mpre = np.concatenate(([1.0], precision, [0.0]))
    mpre = np.flip(np.maximum.accumulate(np.flip(mpre)))
    x = np.linspace(0, 1, 101)
    return np.trapz(np.interp(x, mrec, mpre), x)


def ap_per_class(tp, conf, pred_cls, target_cls, eps=1e-16):
    i = np.argsort(-conf, kind="stable")
    tp, conf, pred_cls = tp[i], conf[i], pred_cls[i]
    unique_classes, nt = np.unique(target_cls, return_counts=True)
    nc = unique_classes.shape[0]
    px = np.linspace(0, 1, 1000)
    ap, p, r = np.zeros((nc, tp.shape[1])), np.zeros((nc, 1000)), np.zeros((nc, 1000))
    for ci, c in enumerate(unique_classes):
        i = pred_cls == c
        n_l = nt[ci]
        n_p = i.sum()
        if n_p == 0 or n_l == 0:
            continue
        fpc = (1 - tp[i]).cumsum(0)
        tpc = tp[i].cumsum(0)
        recall = tpc / (n_l + eps)
        r[ci] = np.interp(-px, -conf[i], recall[:, 0], left=0)
        precision = tpc / (tpc + fpc)
        p[ci] = np.interp(-px, -conf[i], precision[:, 0], left=1)
        for j in range(tp.shape[1]):
            ap[ci, j] = compute_ap(recall[:, j], precision[:, j])
    f1 = 2 * p * r / (p + r + eps)
    best = smooth(f1.mean(0), 0.1).argmax()
    pb, rb, f1b = p[:, best], r[:, best], f1[:, best]
    tpb = (rb * nt).round()
    fpb = (tpb / (pb + eps) - tpb).round()
    return dict(p=pb, r=rb, f1=f1b, tp=tpb, fp=fpb, ap=ap, classes=unique_classes.astype(int), best=best,
                pcurve=p, rcurve=r)


# ---------------------------------------------------------------- data


def letterbox_of(h0, w0, in_h, in_w):
    r = min(in_h / h0, in_w / w0)
    new_w, new_h = round(w0 * r), round(h0 * r)
    gain = float(np.float32(r))  # stored as float32; both sides use exactly this value
    pad = (float(np.float32((in_w - new_w) / 2)), float(np.float32((in_h - new_h) / 2)))
    return gain, pad


def make_image(rng, nc, in_w, in_h, n_labels, n_random, label_classes, dead_classes, obj_scale=1.0):
    labels = []
    for _ in range(n_labels):
        w, h = rng.uniform(0.05, 0.4), rng.uniform(0.05, 0.4)
        labels.append([rng.choice(label_classes), rng.uniform(w / 2, 1 - w / 2), rng.uniform(h / 2, 1 - h / 2), w, h])
    labels = np.array(labels, dtype=np.float32).reshape(-1, 5)
    rows = []
    for lb in labels:  # predictions around each label: overlaps above and below the thresholds
        for _ in range(rng.integers(2, 6)):
            j = rng.normal(0, 0.08, 4)
            cls = rng.uniform(0, 0.3, nc)
            cls[int(lb[0])] = rng.uniform(0.3, 1.0)
            rows.append([(lb[1] + j[0] * lb[3]) * in_w, (lb[2] + j[1] * lb[4]) * in_h,
                         lb[3] * np.exp(j[2]) * in_w, lb[4] * np.exp(j[3]) * in_h,
                         rng.uniform(0.0005, 1.0)] + list(cls))
    for _ in range(n_random):
        w, h = rng.uniform(8, in_w / 3), rng.uniform(8, in_h / 3)
        rows.append([rng.uniform(0, in_w), rng.uniform(0, in_h), w, h, rng.uniform(0, 1) ** 2]
                    + list(rng.uniform(0, 1, nc) ** 3))
    pred = np.array(rows, dtype=np.float32).reshape(-1, 5 + nc)
    pred[:, 4] *= obj_scale
    for c in dead_classes:
        pred[:, 5 + c] = 0
    return pred[rng.permutation(len(pred))], labels


def scenario(f, jdict, name, rng, nc, in_w, in_h, images, conf, iou, multi_label, agnostic, max_det, max_nms):
    record(f, f"{name}/cfg", [nc, in_w, in_h, len(images), conf, round(iou * 1000), max_det, max_nms,
                              int(multi_label), int(agnostic)])
    iouv = torch.linspace(0.5, 0.95, 10)
    stats = []
    for si, (pred, labels, (h0, w0)) in enumerate(images):
        gain, pad = letterbox_of(h0, w0, in_h, in_w)
        ratio_pad = ((gain, gain), pad)
        det = non_max_suppression(torch.from_numpy(pred), nc, conf, iou, multi_label, agnostic, max_det, max_nms)
        record(f, f"{name}/{si}/counts", [len(pred), len(labels), len(det)])
        record(f, f"{name}/{si}/shape", [h0, w0, gain, pad[0], pad[1]])
        if len(pred):
            record(f, f"{name}/{si}/pred", pred)
        t = torch.from_numpy(labels.copy())
        t[:, 1:] *= torch.tensor((in_w, in_h, in_w, in_h))
        nl, npr = t.shape[0], det.shape[0]
        correct = torch.zeros(npr, 10, dtype=torch.bool)
        if nl:
            record(f, f"{name}/{si}/labels", labels)
            tbox = xywh2xyxy(t[:, 1:5])
            scale_boxes((in_h, in_w), tbox, (h0, w0), ratio_pad)
            labelsn = torch.cat((t[:, 0:1], tbox), 1)
            record(f, f"{name}/{si}/labelsn", labelsn.numpy())
        if npr == 0:
            if nl:
                stats.append((correct, torch.zeros(0), torch.zeros(0), t[:, 0]))
            continue
        predn = det.clone()
        scale_boxes((in_h, in_w), predn[:, :4], (h0, w0), ratio_pad)
        if nl:
            correct = process_batch(predn, labelsn, iouv)
        stats.append((correct, det[:, 4], det[:, 5], t[:, 0]))
        record(f, f"{name}/{si}/nms", det.numpy())
        record(f, f"{name}/{si}/predn", predn.numpy())
        record(f, f"{name}/{si}/correct", correct.numpy().astype(np.float32))
        if jdict is not None:
            path = f"val/{si:012d}.jpg" if si % 2 == 0 else f"val/img.{si}.png"
            stem = os.path.splitext(os.path.basename(path))[0]
            image_id = int(stem) if stem.isnumeric() else stem
            box = xyxy2xywh(predn[:, :4])
            box[:, :2] -= box[:, 2:] / 2
            for p, b in zip(predn.tolist(), box.tolist()):
                jdict.append({"image_id": image_id, "category_id": CLASS_MAP[int(p[5])],
                              "bbox": [round(x, 3) for x in b], "score": round(p[4], 5)})
    stats = [torch.cat(x, 0).cpu().numpy() for x in zip(*stats)]
    nt = np.bincount(stats[3].astype(int), minlength=nc)
    record(f, f"{name}/nt", nt)
    assert stats[0].any(), "the scenario must have true positives"
    a = ap_per_class(*stats)
    ap50, ap = a["ap"][:, 0], a["ap"].mean(1)
    mp, mr, map50, map_ = a["p"].mean(), a["r"].mean(), ap50.mean(), ap.mean()
    fit = (np.array([[mp, mr, map50, map_]]) * [0.0, 0.0, 0.1, 0.9]).sum(1)[0]
    maps = np.zeros(nc) + map_
    for i, c in enumerate(a["classes"]):
        maps[c] = ap[i]
    record(f, f"{name}/classes", a["classes"])
    record(f, f"{name}/best", [a["best"]])
    for key in ("p", "r", "f1", "tp", "fp", "ap", "pcurve", "rcurve"):
        record_f64(f, f"{name}/{key}", a[key])
    record_f64(f, f"{name}/map", [mp, mr, map50, map_, fit])
    record_f64(f, f"{name}/maps", maps)
    n_det = sum(len(x) for x in stats[1:2])
    print(f"{name}: {len(images)} images, {sum(len(p) for p, _, _ in images)} boxes, {n_det} detections, "
          f"{int(nt.sum())} labels; P {mp:.4f} R {mr:.4f} mAP50 {map50:.4f} mAP {map_:.4f} (best px {a['best']})")
    return stats


def record_f64(f, name, values):
    v = np.asarray(values, dtype=np.float64)
    hi = v.astype(np.float32)
    record(f, name, hi)
    record(f, name + "/lo", (v - hi.astype(np.float64)).astype(np.float32))


def main():
    torch.set_num_threads(1)
    rng = np.random.default_rng(7)
    os.makedirs(OUT, exist_ok=True)
    jdict = []
    with open(os.path.join(OUT, "metrics.bin"), "wb") as f:
        nc, w, h = 5, 320, 256
        shapes = [(480, 640), (256, 320), (600, 300), (375, 500), (200, 200), (720, 1280)]
        imgs = []
        for si, (h0, w0) in enumerate(shapes):
            n_labels = 0 if si in (4, 5) else int(rng.integers(3, 9))
            n_random = 0 if si == 5 else 25
            pred, labels = make_image(rng, nc, w, h, n_labels, n_random, [0, 1, 2, 4], [4],
                                      obj_scale=0.0009 if si in (3, 5) else 1.0)
            if si == 5:
                pred = pred[:0]
                pred = np.concatenate([pred, np.array([[100, 100, 20, 20, 0.0005, 0.9, 0.9, 0.9, 0.9, 0.9]],
                                                      dtype=np.float32)])
            imgs.append((pred, labels, (h0, w0)))
        scenario(f, jdict, "a", rng, nc, w, h, imgs, 0.001, 0.6, True, False, 300, 30000)

        imgs = [make_image(rng, 1, 256, 256, 6, 30, [0], []) + ((256, 256),) for _ in range(2)]
        for pred, _, _ in imgs:  # both limits must bite: fewer rows than without them
            p = torch.from_numpy(pred)
            full = non_max_suppression(p, 1, 0.01, 0.45, True, False, 300, 30000)
            assert len(full) > 10 and not torch.equal(non_max_suppression(p, 1, 0.01, 0.45, True, False, 300, 12), full[:10])
        scenario(f, None, "one", rng, 1, 256, 256, imgs, 0.01, 0.45, True, False, 10, 12)

        imgs = [make_image(rng, 3, 192, 224, 5, 20, [0, 1, 2], []) + ((448, 384),) for _ in range(2)]
        scenario(f, None, "agn", rng, 3, 192, 224, imgs, 0.05, 0.5, True, True, 300, 30000)
    with open(os.path.join(OUT, "predictions.json"), "w") as f:
        json.dump(jdict, f)
    print(f"wrote {os.path.relpath(OUT)}/metrics.bin and predictions.json ({len(jdict)} objects)")


if __name__ == "__main__":
    main()
