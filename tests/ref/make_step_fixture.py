#!/usr/bin/python3
"""Writes tests/data/step/step.bin: YOLOv5 training runs of 3 SGD updates each in PyTorch, on the
narrow yolov5t (width 0.0625) (tests/data/yaml/good/yolov5t.yaml; bench/reference/yolov5.py build("t", nc=3)),
batch 2, 128x128 images, so the C executor can be checked against it (tests/executor/test_step.c).

Recipe (YOLOv5 train.py, hyp.scratch-low): SGD lr 0.01, momentum 0.937, Nesterov, weight decay
5e-4 on conv weights only (BN weights and all biases exempt: the three parameter groups),
gradient-norm clipping (clip_grad_norm_), loss = ComputeLoss * batch (bench/reference/loss.py), BN
in training mode (batch statistics, running stats with momentum 0.03), no AMP, accumulate 1, and
YOLOv5's ModelEMA (utils/torch_utils.py: a deepcopy of the initial model in eval mode; after each
optimizer step updates += 1, d = 0.9999 * (1 - exp(-updates / 2000)), and every floating-point
state-dict entry v of the EMA becomes d * v + (1 - d) * model's).

Two runs from the same initial weights, images and targets:
  - the main run, max_norm 10 (train.py's): its gradient norm (~3) stays under the limit;
  - the "clip/" run, max_norm 1 (CLIP_NORM): every update's gradient norm exceeds it, so the
    clipping scales every step (tests/executor/test_step.c asserts the recorded norms exceed the limit).

Records, in order: every initial state-dict float tensor ("init/<name>"), the images (NHWC),
the targets; per update k = 1..3 of the main run: "loss/<k>" (lbox, lobj, lcls, total),
"gradnorm/<k>" (the total norm clip_grad_norm_ returned, before clipping) and, for k = 1, the
gradient of every parameter ("grad/<name>"); after the 3 updates every state-dict tensor of the
model ("final/<name>") and of the EMA ("ema/<name>"). Then the clip run: "clip/max_norm", per
update "clip/loss/<k>" and "clip/gradnorm/<k>", and "clip/final/<name>".
Format: per record u32 name length, name, u32 ndim, u32 dims..., float32 data.

Deterministic (torch.manual_seed(0), 2 threads). Run: /usr/bin/python3 tests/ref/make_step_fixture.py
(Debian's python3-torch).
"""

import copy
import math
import os
import struct
import sys

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "bench", "reference"))
import loss as yloss  # noqa: E402
import yolov5  # noqa: E402

OUT = os.path.join(HERE, "..", "data", "step", "step.bin")
MAX_NORM = 10.0  # train.py
CLIP_NORM = 1.0  # the clip run: below every update's gradient norm


def record(f, name, array):
    a = np.ascontiguousarray(np.asarray(array, dtype=np.float32))
    nb = name.encode()
    f.write(struct.pack("<I", len(nb)) + nb + struct.pack("<I", a.ndim))
    f.write(struct.pack("<%dI" % a.ndim, *a.shape) if a.ndim else b"")
    f.write(a.tobytes())


def state(model):
    return [(k, v) for k, v in model.state_dict().items() if v.dtype.is_floating_point and k != "model.24.anchors"]


class ModelEMA:
    """YOLOv5's utils/torch_utils.py ModelEMA (updates starts at 0, tau 2000)."""

    def __init__(self, model, decay=0.9999, tau=2000, updates=0):
        self.ema = copy.deepcopy(model).eval()
        self.updates = updates
        self.decay = lambda x: decay * (1 - math.exp(-x / tau))
        for p in self.ema.parameters():
            p.requires_grad_(False)

    def update(self, model):
        self.updates += 1
        d = self.decay(self.updates)
        msd = model.state_dict()
        for k, v in self.ema.state_dict().items():
            if v.dtype.is_floating_point:
                v *= d
                v += (1 - d) * msd[k].detach()


def sgd(model):
    """train.py's SGD over YOLOv5's three parameter groups: biases, decayed weights, BN weights."""
    g_bn, g_w, g_b = [], [], []
    for name, p in model.named_parameters():
        (g_b if name.endswith(".bias") else g_bn if ".bn." in name else g_w).append(p)
    opt = torch.optim.SGD(g_b, lr=0.01, momentum=0.937, nesterov=True)
    opt.add_param_group({"params": g_w, "weight_decay": 5e-4})
    opt.add_param_group({"params": g_bn, "weight_decay": 0.0})
    return opt


def train(model, images, targets, compute, max_norm, f, prefix, grads):
    """3 SGD updates of model (YOLOv5's three groups) with its EMA; records losses, norms, grads."""
    opt = sgd(model)
    ema = ModelEMA(model)
    for step in range(1, 4):
        preds = model(images)
        total, parts = compute(preds, targets)
        total.backward()
        record(f, prefix + "loss/%d" % step, np.concatenate([parts.numpy(), total.detach().numpy().reshape(1)]))
        if grads and step == 1:
            for name, p in model.named_parameters():
                record(f, "grad/" + name, p.grad.numpy())
        norm = torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=max_norm)
        record(f, prefix + "gradnorm/%d" % step, norm.reshape(1).numpy())
        opt.step()
        opt.zero_grad()
        ema.update(model)
        print("%sstep %d: loss %.6f (box %.6f obj %.6f cls %.6f), grad norm %.4f (max_norm %g)"
              % (prefix, step, total.item(), *parts.tolist(), norm.item(), max_norm))
    return ema


def main():
    torch.manual_seed(0)
    torch.set_num_threads(2)
    model = yolov5.build("t", nc=3)
    bs, img = 2, 128
    images = torch.rand(bs, 3, img, img)
    targets = torch.tensor([  # image, class, cx, cy, w, h (normalised)
        [0, 0, 0.50, 0.50, 0.30, 0.40], [0, 1, 0.22, 0.31, 0.10, 0.12], [0, 2, 0.80, 0.75, 0.25, 0.20],
        [0, 1, 0.62, 0.12, 0.50, 0.20], [1, 2, 0.30, 0.70, 0.45, 0.55], [1, 0, 0.74, 0.26, 0.08, 0.09],
        [1, 1, 0.49, 0.51, 0.90, 0.85], [1, 0, 0.13, 0.88, 0.20, 0.15],
    ])
    det = model.model[-1]
    anchors = [[a[i:i + 2] for i in range(0, 6, 2)] for a in yolov5.ANCHORS]  # (nl, na, 2) pixels
    gains = yloss.scaled_gains(yloss.SCRATCH_LOW, 3, 3, img)
    compute = yloss.YoloLoss(3, anchors, list(yolov5.STRIDES), gains)
    clip_model = copy.deepcopy(model)  # the clip run starts from the same weights
    with open(OUT, "wb") as f:
        for k, v in state(model):
            record(f, "init/" + k, v.numpy())
        record(f, "images", images.permute(0, 2, 3, 1).numpy())
        record(f, "targets", targets.numpy())
        ema = train(model, images, targets, compute, MAX_NORM, f, "", True)
        for k, v in state(model):
            record(f, "final/" + k, v.numpy())
        for k, v in state(ema.ema):
            record(f, "ema/" + k, v.numpy())
        record(f, "clip/max_norm", np.array([CLIP_NORM]))
        train(clip_model, images, targets, compute, CLIP_NORM, f, "clip/", False)
        for k, v in state(clip_model):
            record(f, "clip/final/" + k, v.numpy())
    print("wrote %s (%d bytes); %s" % (OUT, os.path.getsize(OUT), det.__class__.__name__))


if __name__ == "__main__":
    main()
