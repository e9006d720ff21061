#!/usr/bin/python3
"""Reference YOLOv5 (v6.0+ architecture) in plain PyTorch, written for yoloplan.

This is yoloplan's own PyTorch implementation of the Ultralytics YOLOv5 v6.0+
detection model (P5 variants n/s/m/l/x), written from yoloplan's design notes
(docs/architecture.md section 5) and the behaviour of Ultralytics' models/common.py
and models/yolo.py.  It is the anchor yoloplan is
measured against: parameter counts, saved-for-backward bytes
(bench/reference/saved_bytes.py), and later training-step numerics.

What it reproduces exactly:

* the layer list of models/yolov5{n,s,m,l,x}.yaml (25 top-level layers, each
  with its ``from``), the depth/width scaling rules, and therefore the exact
  trainable parameter counts (n 1,872,157; s 7,235,389; m 21,190,557;
  l 46,563,709; x 86,749,405);
* the state-dict names of an Ultralytics checkpoint's model
  (``model.0.conv.weight``, ``model.0.bn.running_mean``,
  ``model.2.m.0.cv1.conv.weight``, ``model.9.cv2.bn.bias``,
  ``model.24.m.0.weight``, ``model.24.anchors``, ...), so a state dict can be
  exchanged with an Ultralytics model of the same size;
* BatchNorm2d eps 1e-3, momentum 0.03; Detect bias initialisation;
* the training-mode Detect output: a list of three (bs, na, ny, nx, nc + 5)
  raw tensors (no sigmoid) at strides 8, 16, 32;
* the eval-mode Detect output, as Ultralytics' models/yolo.py: the boxes
  decoded from those raw tensors (``decode``), (bs, sum na * ny * nx, nc + 5),
  and the raw list beside them.

Deliberate differences from Ultralytics (none changes the maths or the
parameters):

* each Conv owns its own ``nn.SiLU()`` and it is **not** in-place (Ultralytics
  shares one in-place SiLU instance).  Not in-place is what yoloplan's
  ``pytorch`` saving policy describes: SiLU saves its input;
* strides and the anchors' grid units are computed arithmetically instead of by
  a dummy forward pass (so building a model never touches the BN statistics);
* no fusing, no AutoAnchor; the eval-mode grids are built on each call, not
  cached.

Run it as a script to print and check the parameter counts of all five
models: ``/usr/bin/python3 bench/reference/yolov5.py``.
"""

import math

import torch
import torch.nn as nn

# ---------------------------------------------------------------------------
# Architecture description
# ---------------------------------------------------------------------------

#: depth multiple, width multiple per model size (models/yolov5?.yaml)
MULTIPLES = {
    "n": (0.33, 0.25),
    "s": (0.33, 0.50),
    "m": (0.67, 0.75),
    "l": (1.00, 1.00),
    "x": (1.33, 1.25),
    # not an Ultralytics model: yolov5 "tiny", the same 25 layers at 1/16 width, for step tests
    "t": (0.33, 0.0625),
}

#: anchors in pixels, (w, h) pairs, one row per level P3/8, P4/16, P5/32
ANCHORS = (
    (10, 13, 16, 30, 33, 23),
    (30, 61, 62, 45, 59, 119),
    (116, 90, 156, 198, 373, 326),
)

#: strides of the three detection levels
STRIDES = (8, 16, 32)

#: the 25 rows of the yaml: (from, number, module, args); args unscaled.
#: Layers 0-9 are the backbone, 10-24 the head.
LAYERS = (
    (-1, 1, "Conv", (64, 6, 2, 2)),       # 0  P1/2
    (-1, 1, "Conv", (128, 3, 2)),         # 1  P2/4
    (-1, 3, "C3", (128,)),                # 2
    (-1, 1, "Conv", (256, 3, 2)),         # 3  P3/8
    (-1, 6, "C3", (256,)),                # 4
    (-1, 1, "Conv", (512, 3, 2)),         # 5  P4/16
    (-1, 9, "C3", (512,)),                # 6
    (-1, 1, "Conv", (1024, 3, 2)),        # 7  P5/32
    (-1, 3, "C3", (1024,)),               # 8
    (-1, 1, "SPPF", (1024, 5)),           # 9
    (-1, 1, "Conv", (512, 1, 1)),         # 10
    (-1, 1, "Upsample", (None, 2, "nearest")),  # 11
    ((-1, 6), 1, "Concat", (1,)),         # 12 cat backbone P4
    (-1, 3, "C3", (512, False)),          # 13
    (-1, 1, "Conv", (256, 1, 1)),         # 14
    (-1, 1, "Upsample", (None, 2, "nearest")),  # 15
    ((-1, 4), 1, "Concat", (1,)),         # 16 cat backbone P3
    (-1, 3, "C3", (256, False)),          # 17 P3/8 small
    (-1, 1, "Conv", (256, 3, 2)),         # 18
    ((-1, 14), 1, "Concat", (1,)),        # 19 cat head P4
    (-1, 3, "C3", (512, False)),          # 20 P4/16 medium
    (-1, 1, "Conv", (512, 3, 2)),         # 21
    ((-1, 10), 1, "Concat", (1,)),        # 22 cat head P5
    (-1, 3, "C3", (1024, False)),         # 23 P5/32 large
    ((17, 20, 23), 1, "Detect", ("nc", "anchors")),  # 24
)

#: expected trainable parameters (BN not fused), nc = 80 (docs/architecture.md section 5)
EXPECTED_PARAMS = {
    "n": 1_872_157,
    "s": 7_235_389,
    "m": 21_190_557,
    "l": 46_563_709,
    "x": 86_749_405,
}

#: per-layer parameters of yolov5s (as printed by parse_model)
EXPECTED_S_LAYER_PARAMS = (
    3_520, 18_560, 18_816, 73_984, 115_712, 295_424, 625_152, 1_180_672,
    1_182_720, 656_896, 131_584, 0, 0, 361_984, 33_024, 0, 0, 90_880,
    147_712, 0, 296_448, 590_336, 0, 1_182_720, 229_245,
)

BN_EPS = 1e-3
BN_MOMENTUM = 0.03


def make_divisible(x, divisor=8):
    """Round x up to a multiple of divisor (channel scaling rule)."""
    return int(math.ceil(x / divisor) * divisor)


def decode(xs, anchors, strides):
    """YOLOv5 Detect's inference decode (models/yolo.py in eval mode).

    xs: per level the raw (bs, na, ny, nx, no) output; anchors: (nl, na, 2) in
    grid units of each level (pixels / stride, the Detect buffer); strides: per
    level.  With s = sigmoid(raw): xy = (2s + grid) * stride with
    grid = (x, y) - 0.5, wh = (2s)^2 * anchors * stride, scores s.  Returns
    (bs, sum na * ny * nx, no): levels in order, each viewed as
    (bs, na * ny * nx, no).
    """
    z = []
    for i, x in enumerate(xs):
        bs, na, ny, nx, no = x.shape
        yv, xv = torch.meshgrid(torch.arange(ny, dtype=x.dtype, device=x.device),
                                torch.arange(nx, dtype=x.dtype, device=x.device), indexing="ij")
        grid = torch.stack((xv, yv), 2).expand(1, na, ny, nx, 2) - 0.5
        anchor_grid = (anchors[i] * strides[i]).view(1, na, 1, 1, 2).expand(1, na, ny, nx, 2).to(x.dtype)
        xy, wh, conf = x.sigmoid().split((2, 2, no - 4), 4)
        xy = (xy * 2 + grid) * strides[i]
        wh = (wh * 2) ** 2 * anchor_grid
        z.append(torch.cat((xy, wh, conf), 4).view(bs, na * ny * nx, no))
    return torch.cat(z, 1)


# ---------------------------------------------------------------------------
# Modules
# ---------------------------------------------------------------------------

class Conv(nn.Module):
    """conv2d (no bias) -> BatchNorm2d (eps 1e-3, momentum 0.03) -> SiLU.

    Padding defaults to k // 2 ("same" for odd kernels at stride 1).
    """

    def __init__(self, c1, c2, k=1, s=1, p=None):
        super().__init__()
        if p is None:
            p = k // 2
        self.conv = nn.Conv2d(c1, c2, k, s, p, bias=False)
        self.bn = nn.BatchNorm2d(c2, eps=BN_EPS, momentum=BN_MOMENTUM)
        self.act = nn.SiLU()  # not in-place: autograd saves its input

    def forward(self, x):
        return self.act(self.bn(self.conv(x)))


class Bottleneck(nn.Module):
    """1x1 Conv c1->c_ then 3x3 Conv c_->c2, plus the input when shortcut."""

    def __init__(self, c1, c2, shortcut=True, e=0.5):
        super().__init__()
        c_ = int(c2 * e)
        self.cv1 = Conv(c1, c_, 1, 1)
        self.cv2 = Conv(c_, c2, 3, 1)
        self.add = shortcut and c1 == c2

    def forward(self, x):
        y = self.cv2(self.cv1(x))
        return x + y if self.add else y


class C3(nn.Module):
    """CSP bottleneck with three convs.

    out = cv3(cat(m(cv1(x)), cv2(x))) with c_ = c2 / 2 and n bottlenecks
    (c_ -> c_, e = 1.0).  The bottleneck branch comes first in the concat.
    """

    def __init__(self, c1, c2, n=1, shortcut=True, e=0.5):
        super().__init__()
        c_ = int(c2 * e)
        self.cv1 = Conv(c1, c_, 1, 1)
        self.cv2 = Conv(c1, c_, 1, 1)
        self.cv3 = Conv(2 * c_, c2, 1)
        self.m = nn.Sequential(*(Bottleneck(c_, c_, shortcut, e=1.0)
                                 for _ in range(n)))

    def forward(self, x):
        return self.cv3(torch.cat((self.m(self.cv1(x)), self.cv2(x)), 1))


class SPPF(nn.Module):
    """Spatial pyramid pooling, fast: cv1 (c1 -> c1/2), three chained
    maxpools (k, stride 1, pad k // 2), concat of the four, cv2 (2*c1 -> c2).
    """

    def __init__(self, c1, c2, k=5):
        super().__init__()
        c_ = c1 // 2
        self.cv1 = Conv(c1, c_, 1, 1)
        self.cv2 = Conv(c_ * 4, c2, 1, 1)
        self.m = nn.MaxPool2d(kernel_size=k, stride=1, padding=k // 2)

    def forward(self, x):
        x = self.cv1(x)
        y1 = self.m(x)
        y2 = self.m(y1)
        y3 = self.m(y2)
        return self.cv2(torch.cat((x, y1, y2, y3), 1))


class Concat(nn.Module):
    """torch.cat of a list of tensors along dimension d (channels)."""

    def __init__(self, dimension=1):
        super().__init__()
        self.d = dimension

    def forward(self, xs):
        return torch.cat(xs, self.d)


class Detect(nn.Module):
    """Detection head: one 1x1 conv with bias per level to na * (nc + 5).

    Training-mode output: list of nl tensors of shape (bs, na, ny, nx, nc + 5),
    raw (no sigmoid), contiguous.  Eval mode returns (decode(that list), that
    list), as Ultralytics.  ``anchors`` is a buffer of shape
    (nl, na, 2) in grid units of its level (pixels / stride), as in an
    Ultralytics checkpoint.
    """

    def __init__(self, nc=80, anchors=ANCHORS, ch=(), strides=STRIDES):
        super().__init__()
        self.nc = nc
        self.no = nc + 5
        self.nl = len(anchors)
        self.na = len(anchors[0]) // 2
        a = torch.tensor(anchors, dtype=torch.float32).view(self.nl, -1, 2)
        s = torch.tensor(strides, dtype=torch.float32)
        self.register_buffer("anchors", a / s.view(-1, 1, 1))
        # not part of the state dict (as in Ultralytics), but moves with .to()
        self.register_buffer("stride", s, persistent=False)
        self.m = nn.ModuleList(nn.Conv2d(c, self.no * self.na, 1) for c in ch)

    def forward(self, xs):
        out = []
        for i in range(self.nl):
            x = self.m[i](xs[i])
            bs, _, ny, nx = x.shape
            x = x.view(bs, self.na, self.no, ny, nx)
            out.append(x.permute(0, 1, 3, 4, 2).contiguous())
        if self.training:
            return out
        return decode(out, self.anchors, self.stride), out

    @torch.no_grad()
    def initialize_biases(self, image_size=640):
        """Objectness bias += log(8 / (image_size / stride)^2) ("8 objects per
        640 image"); class biases += log(0.6 / (nc - 0.99999))."""
        for conv, s in zip(self.m, self.stride.tolist()):
            b = conv.bias.view(self.na, -1)
            b[:, 4] += math.log(8 / (image_size / s) ** 2)
            b[:, 5:5 + self.nc] += math.log(0.6 / (self.nc - 0.99999))


# ---------------------------------------------------------------------------
# Model
# ---------------------------------------------------------------------------

class YOLOv5(nn.Module):
    """The whole detection model.

    ``self.model`` is an nn.Sequential of the 25 top-level layers, indexed
    0..24 like the yaml, so state-dict keys read ``model.<i>.<...>``.  Each
    layer carries ``f`` (its ``from``: -1, an index, or a tuple) and ``i``
    (its index); ``forward`` routes tensors by ``f`` and keeps the outputs of
    the layers listed in ``self.save`` (those some later ``from`` names).
    """

    def __init__(self, layers, save, name="yolov5", nc=80):
        super().__init__()
        self.name = name
        self.nc = nc
        self.model = nn.Sequential(*layers)
        self.save = sorted(save)

    def forward(self, x):
        y = []
        for m in self.model:
            if m.f != -1:
                if isinstance(m.f, int):
                    x = y[m.f]
                else:
                    x = [x if j == -1 else y[j] for j in m.f]
            x = m(x)
            y.append(x if m.i in self.save else None)
        return x


def build(model_name="s", nc=80):
    """Build yolov5<model_name> (model_name in n, s, m, l, x; 'yolov5s' also
    accepted) with nc classes, in training mode, freshly initialised
    (PyTorch default init; Detect biases as in Ultralytics)."""
    key = model_name[-1] if model_name.startswith("yolov5") else model_name
    if key not in MULTIPLES:
        raise ValueError("unknown model %r (expected n, s, m, l or x)" % model_name)
    gd, gw = MULTIPLES[key]
    ch = [3]  # input channels; replaced by per-layer output channels (ch[i])
    layers, save = [], set()
    for i, (f, n, kind, args) in enumerate(LAYERS):
        n = max(round(n * gd), 1) if n > 1 else n
        c1 = ch[f] if isinstance(f, int) else None
        if kind == "Conv":
            c2 = make_divisible(args[0] * gw)
            m = Conv(c1, c2, *args[1:])
        elif kind == "C3":
            c2 = make_divisible(args[0] * gw)
            shortcut = args[1] if len(args) > 1 else True
            m = C3(c1, c2, n, shortcut)
        elif kind == "SPPF":
            c2 = make_divisible(args[0] * gw)
            m = SPPF(c1, c2, args[1])
        elif kind == "Upsample":
            c2 = c1
            m = nn.Upsample(size=args[0], scale_factor=args[1], mode=args[2])
        elif kind == "Concat":
            c2 = sum(ch[j] for j in f)
            m = Concat(args[0])
        elif kind == "Detect":
            m = Detect(nc, ANCHORS, [ch[j] for j in f], STRIDES)
            c2 = None
        else:  # pragma: no cover - the table above is fixed
            raise AssertionError(kind)
        m.f, m.i, m.type = f, i, kind
        save.update(j for j in ([f] if isinstance(f, int) else f) if j != -1)
        layers.append(m)
        if i == 0:
            ch = []
        ch.append(c2)
    model = YOLOv5(layers, save, "yolov5" + key, nc)
    model.model[-1].initialize_biases()
    return model.train()


def count_trainable(model):
    return sum(p.numel() for p in model.parameters() if p.requires_grad)


def main():
    print("%-8s %12s %12s %6s %8s" % ("model", "params", "expected", "BNs",
                                      "sd items"))
    for key in "nsmlx":
        model = build(key)
        n = count_trainable(model)
        bns = sum(isinstance(m, nn.BatchNorm2d) for m in model.modules())
        print("%-8s %12s %12s %6d %8d" % ("yolov5" + key, format(n, ","),
                                          format(EXPECTED_PARAMS[key], ","),
                                          bns, len(model.state_dict())))
        assert n == EXPECTED_PARAMS[key], (key, n, EXPECTED_PARAMS[key])

    # per-layer counts of yolov5s, state-dict names, training-mode output
    model = build("s")
    per_layer = tuple(sum(p.numel() for p in m.parameters())
                      for m in model.model)
    assert per_layer == EXPECTED_S_LAYER_PARAMS, per_layer
    sd = model.state_dict()
    assert len(sd) == 349, len(sd)  # "Transferred 349/349 items"
    for name in ("model.0.conv.weight", "model.0.bn.running_mean",
                 "model.2.m.0.cv1.conv.weight", "model.9.cv2.bn.bias",
                 "model.24.m.0.weight", "model.24.m.2.bias",
                 "model.24.anchors"):
        assert name in sd, name
    with torch.no_grad():
        out = model(torch.zeros(1, 3, 64, 64))
    shapes = [tuple(o.shape) for o in out]
    assert shapes == [(1, 3, 8, 8, 85), (1, 3, 4, 4, 85), (1, 3, 2, 2, 85)], shapes
    model.eval()
    with torch.no_grad():
        boxes, raw = model(torch.zeros(1, 3, 64, 64))
    assert tuple(boxes.shape) == (1, 3 * (64 + 16 + 4), 85), boxes.shape
    assert [tuple(o.shape) for o in raw] == shapes
    print("yolov5s per-layer parameters, state-dict names (349 items), "
          "training- and eval-mode output shapes: OK")


if __name__ == "__main__":
    main()
