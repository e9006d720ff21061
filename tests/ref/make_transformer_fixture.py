#!/usr/bin/python3
"""make_transformer_fixture.py - writes the PyTorch references of tests/executor/test_transformer.c for the
network of tests/data/ir/transformer.json.

tests/data/transformer_saved.json: the bytes PyTorch's
autograd saves for backward in one training forward of the network of tests/data/ir/transformer.json
(YOLOv5's Conv(3, 8, 3, 2), TransformerBlock(8, 8, num_heads=2, num_layers=1) -- the code of
Ultralytics' models/common.py -- and a one-level Detect), measured with
torch.autograd.graph.saved_tensors_hooks and counted as bench/reference/saved_bytes.py counts:
saves whose storage is a parameter's or a buffer's are left out, the rest is deduplicated by
storage, each referenced byte once (the image included: conv 0 saves it).

nn.MultiheadAttention runs F.multi_head_attention_forward (training mode, dropout 0,
need_weights=True, the default): in_proj (three linears with bias on the chunks of
in_proj_weight), q scaled, bmm(q_scaled, k^T), softmax, bmm(P, v), out_proj. Its saves are
q_scaled, k, the softmax output, v and out_proj's input.

tests/data/step/transformer.bin: one training step of that network (batch 2, 12x12 images, a few
labels, BN in training mode; the loss of bench/reference/loss.py with train.py's gains for nc 1,
one level, 12 px) in tests/support/step_fixture.h's records (make_step_fixture.py's writer): the initial
weights ("init/<name>"), the images (NHWC), the targets, the loss ("loss/1": lbox, lobj, lcls,
total) and every parameter's gradient ("grad/<name>"). The names are the IR's: nn.MultiheadAttention's
in_proj_weight and in_proj_bias are written as their three chunks, <prefix>.ma.in_proj.{q,k,v}.

tests/data/step/transformer_state.safetensors: the step's initial weights as PyTorch's state dict
(its names and shapes: nn.Linear weights (out, in), nn.MultiheadAttention's packed in_proj_weight
and in_proj_bias), written as scripts/pt2safetensors.py writes a converted plain state dict.

    /usr/bin/python3 tests/ref/make_transformer_fixture.py
Deterministic (torch.manual_seed(0)): the bytes depend on the shapes only.
"""
import json
import os
import sys

import torch
import torch.nn as nn

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "bench", "reference"))
import loss as yloss  # noqa: E402
import saved_bytes  # noqa: E402  (its storage-range arithmetic)
import yolov5  # noqa: E402  (Conv, Detect)

sys.path.insert(0, HERE)
from make_step_fixture import record  # noqa: E402

sys.path.insert(0, os.path.join(HERE, "..", "..", "scripts"))
import pt2safetensors as p2s  # noqa: E402  (its safetensors writer)

OUT = os.path.join(HERE, "..", "data", "transformer_saved.json")
STEP = os.path.join(HERE, "..", "data", "step", "transformer.bin")
STATE = os.path.join(HERE, "..", "data", "step", "transformer_state.safetensors")
SIZES = [(1, 6), (2, 6), (1, 12), (2, 10)]  # (batch, image side); the IR's stride is 2


class TransformerLayer(nn.Module):  # models/common.py
    def __init__(self, c, num_heads):
        super().__init__()
        self.q = nn.Linear(c, c, bias=False)
        self.k = nn.Linear(c, c, bias=False)
        self.v = nn.Linear(c, c, bias=False)
        self.ma = nn.MultiheadAttention(embed_dim=c, num_heads=num_heads)
        self.fc1 = nn.Linear(c, c, bias=False)
        self.fc2 = nn.Linear(c, c, bias=False)

    def forward(self, x):
        x = self.ma(self.q(x), self.k(x), self.v(x))[0] + x
        x = self.fc2(self.fc1(x)) + x
        return x


class TransformerBlock(nn.Module):  # models/common.py
    def __init__(self, c1, c2, num_heads, num_layers):
        super().__init__()
        self.conv = None
        if c1 != c2:
            self.conv = yolov5.Conv(c1, c2)
        self.linear = nn.Linear(c2, c2)
        self.tr = nn.Sequential(*(TransformerLayer(c2, num_heads) for _ in range(num_layers)))
        self.c2 = c2

    def forward(self, x):
        if self.conv is not None:
            x = self.conv(x)
        b, _, w, h = x.shape
        p = x.flatten(2).permute(2, 0, 1)
        return self.tr(p + self.linear(p)).permute(1, 2, 0).reshape(b, self.c2, w, h)


class Net(nn.Module):
    """The IR's three layers as YOLOv5's parse_model builds them (Detect takes a list of levels)."""

    def __init__(self):
        super().__init__()
        self.model = nn.ModuleList([yolov5.Conv(3, 8, 3, 2, 1), TransformerBlock(8, 8, 2, 1),
                                    yolov5.Detect(nc=1, anchors=[[4, 4]], ch=(8,), strides=[2])])

    def forward(self, x):
        return self.model[2]([self.model[1](self.model[0](x))])


def model():
    torch.manual_seed(0)
    return Net().train()


def ir_named(m, which):
    """(IR name, tensor) of every parameter (which="param") or gradient ("grad"), in_proj split."""
    out = []
    for name, p in m.named_parameters():
        t = p.detach() if which == "param" else p.grad
        if name.endswith("in_proj_weight") or name.endswith("in_proj_bias"):
            pre, kind = name.rsplit(".", 1)
            for i, part in enumerate("qkv"):
                out.append(("%s.in_proj.%s.%s" % (pre, part, kind.split("_")[-1]), t.chunk(3)[i]))
        else:
            out.append((name, t))
    return out


def step_fixture():
    m = model()
    bs, img = 2, 12
    images = torch.rand(bs, 3, img, img)
    targets = torch.tensor([[0, 0, 0.50, 0.45, 0.30, 0.35], [0, 0, 0.20, 0.75, 0.25, 0.20],
                            [1, 0, 0.70, 0.30, 0.40, 0.45], [1, 0, 0.35, 0.60, 0.20, 0.30]])
    gains = yloss.scaled_gains(yloss.SCRATCH_LOW, 1, 1, img)
    compute = yloss.YoloLoss(1, [[[4, 4]]], [2], gains)
    with open(STEP, "wb") as f:
        for name, t in ir_named(m, "param"):
            record(f, "init/" + name, t.numpy())
        for name, t in m.state_dict().items():
            if "running" in name:
                record(f, "init/" + name, t.numpy())
    # the same weights as PyTorch's state dict names and shapes them (nn.Linear (out, in), the packed
    # in_proj_weight), as scripts/pt2safetensors.py converts a plain state dict: what --weights reads
    p2s.write_safetensors(STATE, list(m.state_dict().items()), {})
    with open(STEP, "ab") as f:
        record(f, "images", images.permute(0, 2, 3, 1).numpy())
        record(f, "targets", targets.numpy())
        total, parts = compute(m(images), targets)
        total.backward()
        record(f, "loss/1", torch.cat([parts, total.detach().reshape(1)]).numpy())
        for name, t in ir_named(m, "grad"):
            record(f, "grad/" + name, t.numpy())
    print("step: loss %.6f (box %.6f obj %.6f cls %.6f)" % (total.item(), *parts.tolist()))


def main():
    step_fixture()
    m = model()
    rows = {}
    for batch, side in SIZES:
        x = torch.randn(batch, 3, side, side)
        rows["%dx%d" % (batch, side)] = saved_bytes.saved_activation_bytes(m, x)
    fx = {"format": "yoloplan-transformer-saved", "torch": torch.__version__, "dtype": "fp32",
          "ir": "tests/data/ir/transformer.json", "saved_bytes": rows}
    with open(OUT, "w") as f:
        json.dump(fx, f, indent=1)
        f.write("\n")
    print(rows)


if __name__ == "__main__":
    main()
