#!/usr/bin/python3
"""Writes tests/data/loss/*.bin: YOLOv5 loss fixtures for tests/executor/test_loss.c.

Each case runs bench/reference/loss.py (yoloplan's PyTorch ComputeLoss) on
random predictions and hand-picked plus random targets, and stores the inputs,
the three loss parts, the total and d(total)/d(predictions) from autograd.
Predictions are stored in yoloplan's layout, Detect's NHWC output
(bs, ny, nx, na * (nc + 5)); the reference sees the same numbers as the
(bs, na, ny, nx, nc + 5) view YOLOv5 uses.

Run with Debian's torch: /usr/bin/python3 tests/ref/make_loss_fixtures.py

File format (little endian; i32 = int32, f32 = float32), "YPLOSS01" then
  i32 batch, nc, na, nl, img_w, img_h, n_targets
  i32 strides[nl], grid_h[nl], grid_w[nl], positives[nl]   (build_targets count per level)
  f32 anchors[nl][na][2] (pixels)
  f32 hyp_box, hyp_obj, hyp_cls                (before train.py's scaling)
  f32 box, obj, cls, anchor_t, label_smoothing, balance[nl]   (as applied)
  f32 targets[n_targets][6]
  f32 preds, level by level, NHWC
  f32 lbox, lobj, lcls, total
  f32 dpreds, level by level, NHWC
"""

import os
import struct
import sys

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "bench", "reference"))
import loss as ref  # noqa: E402

OUT_DIR = os.path.join(ROOT, "tests", "data", "loss")

P5_ANCHORS = [[[10, 13], [16, 30], [33, 23]], [[30, 61], [62, 45], [59, 119]], [[116, 90], [156, 198], [373, 326]]]


def random_targets(gen, image, n, nc):
    rows = []
    for _ in range(n):
        cx, cy = (torch.rand(2, generator=gen) * 0.9 + 0.05).tolist()
        w, h = (torch.rand(2, generator=gen) * 0.55 + 0.03).tolist()
        c = int(torch.randint(0, nc, (1,), generator=gen))
        rows.append([image, c, cx, cy, w, h])
    return rows


def edge_targets(nc):
    """Hand-picked targets for image 0 (grids of 8, 4, 2 cells across at 64 px)."""
    k = lambda c: c % nc  # noqa: E731
    return [
        [0, k(1), 0.30, 0.42, 0.20, 0.25],  # ordinary
        [0, k(2), 0.50, 0.50, 0.30, 0.30],  # centre on a cell corner: all 4 neighbours (P3, P4)
        [0, k(0), 0.5625, 0.3125, 0.10, 0.12],  # gx = 4.5 on P3: frac exactly 0.5, no x neighbour
        [0, k(0), 0.70, 0.70, 0.15, 0.18],  # these two share a cell and anchors: the second's
        [0, k(2), 0.71, 0.69, 0.16, 0.15],  # CIoU is the objectness target (last write wins)
        [0, k(1), 1.00, 0.05, 0.10, 0.08],  # cx = 1: cell clamped to the last column; no up neighbour
        [0, k(0), 0.20, 0.80, 0.01, 0.02],  # tiny: the anchor ratio fails on every level
        [0, k(1), 0.50, 0.60, 0.90, 0.80],  # large: fails on P3, matches on P5
        [0, k(2), 0.30, 0.30, 0.00, 0.10],  # zero width: never matches
        [0, k(1), 0.02, 0.97, 0.05, 0.04],  # near the grid corner: neighbours only inside
    ]


def run_case(name, *, batch, nc, img_w, img_h, anchors, strides, hyp, label_smoothing, targets, seed):
    nl, na = len(anchors), len(anchors[0])
    imgsz = max(img_w, img_h)
    gains = ref.scaled_gains(hyp, nc, nl, imgsz)
    balance = ref.level_balance(nl)
    loss_fn = ref.YoloLoss(nc, anchors, strides, gains, balance, hyp["anchor_t"], label_smoothing)

    gen = torch.Generator().manual_seed(seed)
    grids = [(img_h // s, img_w // s) for s in strides]
    no = nc + 5
    nhwc = [(torch.randn(batch, ny, nx, na * no, generator=gen) * 1.5).requires_grad_() for ny, nx in grids]
    views = [x.view(batch, ny, nx, na, no).permute(0, 3, 1, 2, 4) for x, (ny, nx) in zip(nhwc, grids)]
    t = torch.tensor(targets, dtype=torch.float32)
    total, parts = loss_fn(views, t)
    total.backward()
    check_last_write_wins(loss_fn, views)
    npos = [len(p) for p in loss_fn.positives]

    path = os.path.join(OUT_DIR, name + ".bin")
    with open(path, "wb") as f:
        i32 = lambda *v: f.write(struct.pack("<%di" % len(v), *v))  # noqa: E731
        f32 = lambda a: f.write(np.ascontiguousarray(np.asarray(a, dtype="<f4")).tobytes())  # noqa: E731
        f.write(b"YPLOSS01")
        i32(batch, nc, na, nl, img_w, img_h, len(targets))
        i32(*strides)
        i32(*[g[0] for g in grids])
        i32(*[g[1] for g in grids])
        i32(*npos)
        f32(np.array(anchors, dtype=np.float32).reshape(-1))
        f32([hyp["box"], hyp["obj"], hyp["cls"]])
        f32([gains["box"], gains["obj"], gains["cls"], hyp["anchor_t"], label_smoothing] + list(balance))
        f32(t.numpy().reshape(-1))
        for x in nhwc:
            f32(x.detach().numpy().reshape(-1))
        f32(parts.numpy().tolist() + [total.item()])
        for x in nhwc:
            f32(x.grad.numpy().reshape(-1))
    print(f"{name}: batch {batch}, nc {nc}, {img_w}x{img_h}, {len(targets)} targets, positives {npos}, "
          f"lbox {parts[0]:.6f} lobj {parts[1]:.6f} lcls {parts[2]:.6f} total {total.item():.6f}, "
          f"{os.path.getsize(path)} bytes")


def check_last_write_wins(loss_fn, views):
    """Asserts torch's index assignment kept the last of repeated (image, anchor, cell) writes: the C
    loss does that by construction, so a fixture where torch did otherwise would be meaningless."""
    from collections import Counter

    for level, pos in enumerate(loss_fn.positives):
        keys = list(zip(pos.image.tolist(), pos.anchor.tolist(), pos.row.tolist(), pos.col.tolist()))
        dups = [k for k, n in Counter(keys).items() if n > 1]
        if not dups or not len(pos):
            continue
        p = views[level].detach()
        sel = p[pos.image, pos.anchor, pos.row, pos.col]
        pbox = torch.cat((sel[:, 0:2].sigmoid() * 2 - 0.5, (sel[:, 2:4].sigmoid() * 2) ** 2 * pos.anchor_wh), 1)
        iou = ref.ciou(pbox, pos.box).clamp(0)
        tobj = torch.zeros(p.shape[:4])
        tobj[pos.image, pos.anchor, pos.row, pos.col] = iou
        last = {k: float(iou[i]) for i, k in enumerate(keys)}
        for k in dups:
            assert float(tobj[k]) == last[k], (level, k)


def main():
    os.makedirs(OUT_DIR, exist_ok=True)
    torch.set_num_threads(1)
    gen = torch.Generator().manual_seed(1234)

    # A: the YOLOv5 head at 64x64, nc 3, hand-picked edge cases on image 0, random targets on image 1
    targets = edge_targets(3) + random_targets(gen, 1, 8, 3)
    run_case("p5_nc3_64", batch=2, nc=3, img_w=64, img_h=64, anchors=P5_ANCHORS, strides=[8, 16, 32],
             hyp=ref.SCRATCH_LOW, label_smoothing=0.0, targets=targets, seed=1)

    # B: one class (no class loss), rectangular 96 wide x 64 high
    targets = random_targets(gen, 0, 5, 1) + random_targets(gen, 1, 6, 1)
    targets += [[1, 0, 0.5, 0.5, 0.2, 0.3], [1, 0, 0.25, 0.75, 0.12, 0.1]]  # on cell corners
    run_case("p5_nc1_96x64", batch=2, nc=1, img_w=96, img_h=64, anchors=P5_ANCHORS, strides=[8, 16, 32],
             hyp=ref.SCRATCH_LOW, label_smoothing=0.0, targets=targets, seed=2)

    # C: two levels of two anchors, nc 4, label smoothing 0.1, hyp.scratch-high, image 1 without targets
    anchors = [[[10, 13], [16, 30]], [[30, 61], [62, 45]]]
    targets = random_targets(gen, 0, 9, 4) + [[0, 3, 0.70, 0.70, 0.15, 0.18], [0, 1, 0.72, 0.71, 0.14, 0.2]]
    run_case("l2_nc4_64_smooth", batch=2, nc=4, img_w=64, img_h=64, anchors=anchors, strides=[8, 16],
             hyp=ref.SCRATCH_HIGH, label_smoothing=0.1, targets=targets, seed=3)


if __name__ == "__main__":
    main()
