#!/usr/bin/python3
"""Writes tests/data/eval/eval.bin: YOLOv5 validation in PyTorch on yolov5n (nc 80) at 64x64, so
the C executor's validation pass can be checked against it (tests/executor/test_eval.c).

The model (bench/reference/yolov5.py build("n")) gets BN layers that validation can tell apart
from an identity: gamma ~ U(0.8, 1.2), beta ~ N(0, 0.05), and running statistics measured on a
calibration batch in training mode (cumulative average), so that eval-mode BN normalises real
activations. Every floating-point state-dict value is then rounded to float16 and used as such,
and stored as float16 (half the bytes; the C side reads exactly the values PyTorch ran with).

Records (format of tests/ref/make_step_fixture.py; float16 data where bit 31 of ndim is set):
  "init16/<name>"    every state-dict float tensor (float16)
  "eval/images"      3 images (NHWC), fewer than the validation batch of 4 (2x the training batch 2)
  "eval/targets"     their label rows (image, class, cx, cy, w, h)
  "eval/decoded"     model.eval() on them: Detect's decoded boxes (3, 252, 85)
  "eval/loss"        ComputeLoss (bench/reference/loss.py) on the eval-mode raw outputs, as
                     YOLOv5's val.py computes it during training: lbox, lobj, lcls, total
  "train/images", "train/targets"  a training batch of 2
  "train/loss/<k>"   the loss of SGD update k = 1, 2 (YOLOv5's recipe as in make_step_fixture.py)
  "ema/updates0"     the ModelEMA update count the run starts from (1000, a resumed run: the decay
                     is then ~0.39, so the EMA is neither the initial nor the trained weights)
  "ema/decoded"      the EMA model (eval mode, as val.py validates it) on the eval images after
                     the 2 updates

Deterministic (torch.manual_seed(0), 2 threads). Run: /usr/bin/python3 tests/ref/make_eval_fixture.py
(Debian's python3-torch).
"""

import os
import struct
import sys

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "bench", "reference"))
import loss as yloss  # noqa: E402
import yolov5  # noqa: E402
from make_step_fixture import ModelEMA, record, sgd, state  # noqa: E402

OUT = os.path.join(HERE, "..", "data", "eval", "eval.bin")
IMG = 64
UPDATES0 = 1000
MAX_NORM = 10.0


def record16(f, name, array):
    """A float16 record: bit 31 of ndim marks the data as float16 (tests/support/step_fixture.h)."""
    a = np.ascontiguousarray(np.asarray(array, dtype=np.float16))
    nb = name.encode()
    f.write(struct.pack("<I", len(nb)) + nb + struct.pack("<I", a.ndim | 0x80000000))
    f.write(struct.pack("<%dI" % a.ndim, *a.shape))
    f.write(a.tobytes())


def nhwc(images):
    return images.permute(0, 2, 3, 1).numpy()


def prepare(model):
    """BN layers that are not an identity in eval mode, then every value rounded to float16."""
    bns = [m for m in model.modules() if isinstance(m, torch.nn.BatchNorm2d)]
    with torch.no_grad():
        for m in bns:
            m.weight.uniform_(0.8, 1.2)
            m.bias.normal_(0.0, 0.05)
            m.reset_running_stats()
            m.momentum = None  # cumulative average over the calibration batch
        model.train()
        model(torch.rand(32, 3, IMG, IMG))
        for m in bns:
            m.momentum = yolov5.BN_MOMENTUM
        for _, v in state(model):
            v.copy_(v.half().float())


def main():
    torch.manual_seed(0)
    torch.set_num_threads(2)
    model = yolov5.build("n", nc=80)
    prepare(model)
    anchors = [[a[i:i + 2] for i in range(0, 6, 2)] for a in yolov5.ANCHORS]
    compute = yloss.YoloLoss(80, anchors, list(yolov5.STRIDES), yloss.scaled_gains(yloss.SCRATCH_LOW, 80, 3, IMG))
    eval_images = torch.rand(3, 3, IMG, IMG)
    eval_targets = torch.tensor([
        [0, 0, 0.50, 0.50, 0.30, 0.40], [0, 17, 0.22, 0.31, 0.10, 0.12], [1, 2, 0.80, 0.75, 0.25, 0.20],
        [1, 56, 0.62, 0.12, 0.50, 0.20], [2, 79, 0.30, 0.70, 0.45, 0.55], [2, 0, 0.74, 0.26, 0.08, 0.09],
    ])
    train_images = torch.rand(2, 3, IMG, IMG)
    train_targets = torch.tensor([
        [0, 1, 0.45, 0.55, 0.35, 0.30], [0, 9, 0.15, 0.20, 0.12, 0.18], [1, 3, 0.70, 0.40, 0.30, 0.50],
        [1, 40, 0.30, 0.80, 0.20, 0.15],
    ])
    os.makedirs(os.path.dirname(OUT), exist_ok=True)
    with open(OUT, "wb") as f:
        for k, v in state(model):
            record16(f, "init16/" + k, v.numpy())
        record(f, "eval/images", nhwc(eval_images))
        record(f, "eval/targets", eval_targets.numpy())
        model.eval()
        with torch.no_grad():
            boxes, raw = model(eval_images)
            total, parts = compute(raw, eval_targets)
        record(f, "eval/decoded", boxes.numpy())
        record(f, "eval/loss", np.concatenate([parts.numpy(), total.numpy().reshape(1)]))
        print("eval: boxes %s, loss %.6f (box %.6f obj %.6f cls %.6f)" % (tuple(boxes.shape), total.item(),
                                                                         *parts.tolist()))
        record(f, "train/images", nhwc(train_images))
        record(f, "train/targets", train_targets.numpy())
        model.train()
        opt = sgd(model)
        ema = ModelEMA(model, updates=UPDATES0)
        for step in range(1, 3):
            total, parts = compute(model(train_images), train_targets)
            total.backward()
            record(f, "train/loss/%d" % step, np.concatenate([parts.detach().numpy(), total.detach().numpy().reshape(1)]))
            torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=MAX_NORM)
            opt.step()
            opt.zero_grad()
            ema.update(model)
            print("train step %d: loss %.6f" % (step, total.item()))
        record(f, "ema/updates0", np.array([UPDATES0]))
        with torch.no_grad():
            boxes, _ = ema.ema(eval_images)
        record(f, "ema/decoded", boxes.numpy())
    print("wrote %s (%d bytes)" % (OUT, os.path.getsize(OUT)))


if __name__ == "__main__":
    main()
