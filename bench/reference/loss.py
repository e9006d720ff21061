#!/usr/bin/python3
"""YOLOv5's training loss in plain PyTorch, written for yoloplan.

yoloplan's own implementation of the loss Ultralytics YOLOv5 trains with
(``utils/loss.py`` ``ComputeLoss`` at HEAD, ``bbox_iou`` of v7.0), written from
YOLOv5's behaviour as docs/architecture.md section 5 records it.
It is the reference the C loss (executor/loss.c) is checked against: gradients
come from autograd, so whatever YOLOv5 detaches is detached here too.

What it reproduces:

* train.py's gain scaling: box *= 3/nl; cls *= nc/80 * 3/nl;
  obj *= (imgsz/640)^2 * 3/nl;
* target assignment: each target is tried against every anchor of every level
  (anchors in grid units = pixels / stride); a pair is kept when
  max(r, 1/r) < anchor_t for r = target wh / anchor wh, both w and h.  A kept
  pair is assigned to its own cell and to the neighbour cells on the sides of
  the nearer cell edges (offset 0.5; none at the grid border): up to 5 cells,
  clamped into the grid (a centre at exactly 1.0 lands in the last cell, at
  offset 1.0 from it, because YOLOv5 clamps the cell indices in place before
  computing the target box from them).
  Positives are listed offset-major (centre, left, up, right, down), then
  anchor-major, then in target order;
* per level: pxy = 2*sigmoid - 0.5, pwh = (2*sigmoid)^2 * anchor; box loss
  mean(1 - CIoU) with the aspect-ratio weight alpha computed without gradient;
  objectness BCE-with-logits (mean over every anchor of every cell, times the
  level balance) against the detached CIoU clamped at 0, where a later
  positive on the same (image, anchor, cell) overwrites an earlier one; class
  BCE-with-logits (mean over positives x nc) against one-hot targets with
  label smoothing, only when nc > 1;
* total = (lbox*box + lobj*obj + lcls*cls) * batch size, the tensor YOLOv5
  calls backward on.

Predictions are YOLOv5's training-mode Detect outputs: per level a raw
(bs, na, ny, nx, nc + 5) tensor.  Targets are (n, 6) rows
(image, class, cx, cy, w, h), coordinates normalised to [0, 1].

Run as a script for a small self-check on random data:
``/usr/bin/python3 bench/reference/loss.py``.
"""

import math

import torch
import torch.nn.functional as F

#: data/hyps/hyp.scratch-low.yaml (the loss part)
SCRATCH_LOW = {"box": 0.05, "obj": 1.0, "cls": 0.5, "anchor_t": 4.0}
#: data/hyps/hyp.scratch-high.yaml (the loss part)
SCRATCH_HIGH = {"box": 0.05, "obj": 0.7, "cls": 0.3, "anchor_t": 4.0}

CIOU_EPS = 1e-7


def scaled_gains(hyp, nc, nl, imgsz):
    """Loss gains after train.py's scaling; imgsz is --imgsz (the long side)."""
    levels = 3.0 / nl
    return {
        "box": hyp["box"] * levels,
        "cls": hyp["cls"] * nc / 80.0 * levels,
        "obj": hyp["obj"] * (imgsz / 640.0) ** 2 * levels,
    }


def level_balance(nl):
    """ComputeLoss's objectness weights per level."""
    return [4.0, 1.0, 0.4] if nl == 3 else [4.0, 1.0, 0.25, 0.06, 0.02][:nl]


def ciou(pred, target, eps=CIOU_EPS):
    """Complete IoU of matching rows of two (n, 4) xywh box tensors.

    CIoU = IoU - rho^2 / c^2 - v * alpha with rho the centre distance, c the
    diagonal of the enclosing box (c^2 + eps), v = 4/pi^2 (atan(w2/h2) -
    atan(w1/h1))^2 and alpha = v / (v - IoU + 1 + eps) taken as a constant.
    Widths and heights get no eps (the xywh path of bbox_iou).
    """
    x1, y1, w1, h1 = pred.unbind(1)
    x2, y2, w2, h2 = target.unbind(1)
    p_left, p_right, p_top, p_bottom = x1 - w1 / 2, x1 + w1 / 2, y1 - h1 / 2, y1 + h1 / 2
    t_left, t_right, t_top, t_bottom = x2 - w2 / 2, x2 + w2 / 2, y2 - h2 / 2, y2 + h2 / 2

    overlap_w = (torch.minimum(p_right, t_right) - torch.maximum(p_left, t_left)).clamp(0)
    overlap_h = (torch.minimum(p_bottom, t_bottom) - torch.maximum(p_top, t_top)).clamp(0)
    inter = overlap_w * overlap_h
    union = w1 * h1 + w2 * h2 - inter + eps
    iou = inter / union

    hull_w = torch.maximum(p_right, t_right) - torch.minimum(p_left, t_left)
    hull_h = torch.maximum(p_bottom, t_bottom) - torch.minimum(p_top, t_top)
    diag2 = hull_w**2 + hull_h**2 + eps
    centre2 = ((t_left + t_right - p_left - p_right) ** 2 + (t_top + t_bottom - p_top - p_bottom) ** 2) / 4
    v = (4 / math.pi**2) * (torch.atan(w2 / h2) - torch.atan(w1 / h1)) ** 2
    with torch.no_grad():
        alpha = v / (v - iou + (1 + eps))
    return iou - (centre2 / diag2 + v * alpha)


class Positives:
    """The positives of one level: where they read predictions and what they aim at."""

    def __init__(self, image, anchor, row, col, box, anchor_wh, cls):
        self.image, self.anchor, self.row, self.col = image, anchor, row, col
        self.box = box  # (n, 4): x, y relative to the cell, w, h; grid units
        self.anchor_wh = anchor_wh  # (n, 2) grid units
        self.cls = cls

    def __len__(self):
        return self.image.shape[0]


class YoloLoss:
    """YOLOv5's ComputeLoss for nc classes and anchors (nl, na, 2) in pixels."""

    # the five candidate cells of a target: its own, left, up, right, down (as offsets subtracted
    # from the target centre, times 0.5)
    OFFSETS = torch.tensor([[0.0, 0.0], [1.0, 0.0], [0.0, 1.0], [-1.0, 0.0], [0.0, -1.0]])

    def __init__(self, nc, anchors, strides, gains, balance=None, anchor_t=4.0, label_smoothing=0.0):
        self.nc = nc
        strides_t = torch.tensor(strides, dtype=torch.float32)
        self.anchors = torch.tensor(anchors, dtype=torch.float32) / strides_t.view(-1, 1, 1)
        self.nl, self.na = self.anchors.shape[:2]
        self.gains = gains
        self.balance = balance if balance is not None else level_balance(self.nl)
        self.anchor_t = anchor_t
        self.cls_pos = 1.0 - 0.5 * label_smoothing
        self.cls_neg = 0.5 * label_smoothing
        self.bce_pos_weight = torch.ones(1)
        self.offsets = self.OFFSETS

    def to(self, device):
        """Moves the loss's constants to device (the predictions' and targets'); returns self."""
        self.anchors = self.anchors.to(device)
        self.bce_pos_weight = self.bce_pos_weight.to(device)
        self.offsets = self.OFFSETS.to(device)
        return self

    def assign(self, level, ny, nx, targets):
        """build_targets for one level of an ny x nx grid; returns Positives."""
        na, nt = self.na, targets.shape[0]
        anchors = self.anchors[level]
        dev = targets.device
        grid_gain = torch.tensor([1.0, 1.0, nx, ny, nx, ny], device=dev)
        scaled = targets * grid_gain  # (nt, 6): image, class, gx, gy, gw, gh
        # every (anchor, target) pair, anchor-major
        pairs = scaled.unsqueeze(0).expand(na, nt, 6)
        anchor_id = torch.arange(na, device=dev).view(na, 1).expand(na, nt)
        ratio = pairs[..., 4:6] / anchors.view(na, 1, 2)
        keep = torch.maximum(ratio, 1 / ratio).max(2).values < self.anchor_t
        pairs, anchor_id = pairs[keep], anchor_id[keep]  # (m, 6), (m,)

        gxy = pairs[:, 2:4]
        gxy_far = grid_gain[[2, 3]] - gxy  # distance to the right / bottom border
        near_low = (gxy % 1 < 0.5) & (gxy > 1)  # left (x), up (y) neighbour
        near_high = (gxy_far % 1 < 0.5) & (gxy_far > 1)  # right (x), down (y) neighbour
        use = torch.stack((torch.ones_like(near_low[:, 0]), near_low[:, 0], near_low[:, 1], near_high[:, 0],
                           near_high[:, 1]))  # (5, m)
        m = pairs.shape[0]
        sel_pairs = pairs.unsqueeze(0).expand(5, m, 6)[use]
        sel_anchor = anchor_id.unsqueeze(0).expand(5, m)[use]
        sel_offset = (self.offsets * 0.5).view(5, 1, 2).expand(5, m, 2)[use]

        gxy = sel_pairs[:, 2:4]
        cell = (gxy - sel_offset).long()  # truncation, like .long()
        col = cell[:, 0].clamp(0, nx - 1)
        row = cell[:, 1].clamp(0, ny - 1)
        # the box centre is relative to the clamped cell (YOLOv5 clamps gij in place before using it)
        box = torch.cat((gxy - torch.stack((col, row), 1), sel_pairs[:, 4:6]), 1)
        return Positives(sel_pairs[:, 0].long(), sel_anchor, row, col, box, anchors[sel_anchor],
                         sel_pairs[:, 1].long())

    def __call__(self, preds, targets):
        """preds: list of (bs, na, ny, nx, nc + 5); returns (total, (lbox, lobj, lcls) detached)."""
        dev = preds[0].device
        lbox = torch.zeros(1, device=dev)
        lobj = torch.zeros(1, device=dev)
        lcls = torch.zeros(1, device=dev)
        bs = preds[0].shape[0]
        self.positives = []
        for level, p in enumerate(preds):
            ny, nx = p.shape[2], p.shape[3]
            pos = self.assign(level, ny, nx, targets)
            self.positives.append(pos)
            tobj = torch.zeros(p.shape[:4], device=dev)
            if len(pos):
                sel = p[pos.image, pos.anchor, pos.row, pos.col]  # (n, nc + 5)
                pxy = sel[:, 0:2].sigmoid() * 2 - 0.5
                pwh = (sel[:, 2:4].sigmoid() * 2) ** 2 * pos.anchor_wh
                iou = ciou(torch.cat((pxy, pwh), 1), pos.box)
                lbox = lbox + (1.0 - iou).mean()
                # index assignment: with repeated indices the last one stays (CPU, serial)
                tobj[pos.image, pos.anchor, pos.row, pos.col] = iou.detach().clamp(0).to(tobj.dtype)
                if self.nc > 1:
                    cls_target = torch.full_like(sel[:, 5:], self.cls_neg)
                    cls_target[torch.arange(len(pos), device=dev), pos.cls] = self.cls_pos
                    lcls = lcls + F.binary_cross_entropy_with_logits(sel[:, 5:], cls_target,
                                                                     pos_weight=self.bce_pos_weight)
            obj = F.binary_cross_entropy_with_logits(p[..., 4], tobj, pos_weight=self.bce_pos_weight)
            lobj = lobj + obj * self.balance[level]
        lbox = lbox * self.gains["box"]
        lobj = lobj * self.gains["obj"]
        lcls = lcls * self.gains["cls"]
        return (lbox + lobj + lcls) * bs, torch.cat((lbox, lobj, lcls)).detach()


def _self_check():
    torch.manual_seed(0)
    anchors = [[[10, 13], [16, 30], [33, 23]], [[30, 61], [62, 45], [59, 119]], [[116, 90], [156, 198], [373, 326]]]
    strides = [8, 16, 32]
    nc, bs, img = 3, 2, 128
    loss_fn = YoloLoss(nc, anchors, strides, scaled_gains(SCRATCH_LOW, nc, 3, img))
    preds = [torch.randn(bs, 3, img // s, img // s, nc + 5, requires_grad=True) for s in strides]
    targets = torch.cat((torch.randint(0, bs, (12, 1)).float(), torch.randint(0, nc, (12, 1)).float(),
                         torch.rand(12, 2), torch.rand(12, 2) * 0.5 + 0.02), 1)
    total, parts = loss_fn(preds, targets)
    total.backward()
    npos = [len(p) for p in loss_fn.positives]
    print(f"total {total.item():.6f}  lbox {parts[0]:.6f}  lobj {parts[1]:.6f}  lcls {parts[2]:.6f}  "
          f"positives per level {npos}")
    assert torch.isfinite(total) and all(torch.isfinite(p.grad).all() for p in preds)
    assert abs(total.item() - parts.sum().item() * bs) < 1e-5 * total.item()


if __name__ == "__main__":
    _self_check()
