#!/usr/bin/python3
"""make_ir_fixture.py - writes the PyTorch references of tests/executor/test_ir_steps.c, small IR
networks, each built from its IR file node by node:
  - tests/data/ir/contract_expand.json (the import of
    tests/data/yaml/good/contract_expand.yaml: Focus, Contract(2), a Conv, an Expand(2) of the
    Contract's output, a stride-2 Conv, Contract(3), Expand(3), Concat, a stride-2 Conv, one
    Detect level);
  - tests/data/ir/cross.json (the import of
    tests/data/yaml/good/cross.yaml: a Conv, a C3x, a strided and grouped CrossConv, one Detect
    level: 1x3 and 3x1 convs, strided on one axis each).

space_to_depth is Focus's cat of the four strided slices, contract and expand are the forward
code of YOLOv5's Contract and Expand (models/common.py: view, permute, contiguous, view),
conv2d / batchnorm2d / silu / add / concat are nn.Conv2d (per-axis kernel, stride and padding
as the IR gives them), nn.BatchNorm2d (eps and momentum from the IR), nn.SiLU, + and torch.cat,
detect is bench/reference/yolov5.py's Detect. Every parameter is named as the IR names it
(<node>.weight, <node>.bias, Detect's <node>.m.<level>.weight / .bias).

For each network, tests/data/<name>_saved.json: the bytes autograd saves for backward in one
training forward, at three (batch, size) pairs, counted as bench/reference/saved_bytes.py counts
(every save through torch.autograd.graph.saved_tensors_hooks' pack hook; saves of parameters and
buffers left out; the rest deduplicated by storage, each referenced byte once; the image
counts). Contract and Expand save nothing (view, permute and contiguous keep no tensor for
backward), nor do Focus's slices and cat.

And tests/data/step/<name>.bin: one training step (batch 2, a few labels, BN in training mode;
bench/reference/loss.py's loss with train.py's gains for nc 1, one level, the step's size) in
tests/support/step_fixture.h's records (make_step_fixture.py's writer): the initial weights and BN
running statistics ("init/<name>"), the images (NHWC), the targets, the loss ("loss/1": lbox,
lobj, lcls, total) and every parameter's gradient ("grad/<name>").

    /usr/bin/python3 tests/ref/make_ir_fixture.py
Deterministic (torch.manual_seed(0) before each network).
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
import yolov5  # noqa: E402  (Detect)

sys.path.insert(0, HERE)
from make_step_fixture import record  # noqa: E402

DATA = os.path.join(HERE, "..", "data")
STEP_BATCH = 2
# name: the IR, the saved-bytes sizes (batch, image side), the step's image side
CASES = [
    ("contract", "contract_expand.json", [(1, 48), (1, 96), (2, 48)], 48),  # sizes: multiples of 24
    ("cross", "cross.json", [(1, 32), (1, 64), (2, 32)], 32),
]


class Contract(nn.Module):  # models/common.py
    def __init__(self, gain=2):
        super().__init__()
        self.gain = gain

    def forward(self, x):
        b, c, h, w = x.size()
        s = self.gain
        x = x.view(b, c, h // s, s, w // s, s)
        x = x.permute(0, 3, 5, 1, 2, 4).contiguous()
        return x.view(b, c * s * s, h // s, w // s)


class Expand(nn.Module):  # models/common.py
    def __init__(self, gain=2):
        super().__init__()
        self.gain = gain

    def forward(self, x):
        b, c, h, w = x.size()
        s = self.gain
        x = x.view(b, s, s, c // s**2, h, w)
        x = x.permute(0, 3, 4, 1, 5, 2).contiguous()
        return x.view(b, c // s**2, h * s, w * s)


class Focus(nn.Module):  # models/common.py's Focus without its conv (the IR's next node)
    def forward(self, x):
        return torch.cat((x[..., ::2, ::2], x[..., 1::2, ::2], x[..., ::2, 1::2], x[..., 1::2, 1::2]), 1)


class Add(nn.Module):
    def forward(self, a, b):
        return a + b


class Cat(nn.Module):
    def forward(self, *xs):
        return torch.cat(xs, 1)


def module_of(ir, node):
    a = node.get("attrs", {})
    op = node["op"]
    if op == "conv2d":
        return nn.Conv2d(a["c_in"], a["c_out"], a["k"], a["s"], a["p"], groups=a["groups"], bias=a["bias"])
    if op == "batchnorm2d":
        return nn.BatchNorm2d(a["c"], eps=a["eps"], momentum=a["momentum"])
    if op == "silu":
        return nn.SiLU()
    if op == "concat":
        return Cat()
    if op == "add":
        return Add()
    if op == "space_to_depth":
        return Focus()
    if op == "contract":
        return Contract(a["gain"])
    if op == "expand":
        return Expand(a["gain"])
    if op == "detect":
        return yolov5.Detect(nc=a["nc"], anchors=ir["anchors"], ch=a["c_in"], strides=ir["strides"])
    raise SystemExit("make_ir_fixture: op %s not handled" % op)


class Net(nn.Module):
    def __init__(self, ir):
        super().__init__()
        self.nodes = ir["nodes"]
        self.mods = nn.ModuleList(module_of(ir, n) for n in self.nodes)

    def forward(self, image):
        vals = []
        for n, m in zip(self.nodes, self.mods):
            xs = [image if i == -1 else vals[i] for i in n["inputs"]]
            if n["op"] == "detect":
                return m(xs)
            vals.append(m(*xs))
        raise SystemExit("make_ir_fixture: no detect node")

    def ir_named(self, which):
        """(IR name, tensor) of every parameter (which="param"), its gradient ("grad"), or BN's
        running statistics ("running")."""
        out = []
        for n, m in zip(self.nodes, self.mods):
            if which == "running":
                if n["op"] == "batchnorm2d":
                    out += [(n["name"] + ".running_mean", m.running_mean), (n["name"] + ".running_var", m.running_var)]
                continue
            for pname, p in m.named_parameters():
                t = p.detach() if which == "param" else p.grad
                out.append(("%s.%s" % (n["name"], pname), t))
        return out


def model(ir):
    torch.manual_seed(0)
    return Net(ir).train()


def step_fixture(ir, path, side):
    net = model(ir)
    images = torch.rand(STEP_BATCH, ir["input"]["channels"], side, side)
    targets = torch.tensor([[0, 0, 0.50, 0.45, 0.30, 0.35], [0, 0, 0.20, 0.75, 0.25, 0.20],
                            [1, 0, 0.70, 0.30, 0.40, 0.45], [1, 0, 0.35, 0.60, 0.20, 0.30]])
    nl = len(ir["strides"])
    anchors = [[row[i:i + 2] for i in range(0, len(row), 2)] for row in ir["anchors"]]
    gains = yloss.scaled_gains(yloss.SCRATCH_LOW, ir["nc"], nl, side)
    compute = yloss.YoloLoss(ir["nc"], anchors, ir["strides"], gains)
    with open(path, "wb") as f:
        for name, t in net.ir_named("param") + net.ir_named("running"):
            record(f, "init/" + name, t.numpy())
        record(f, "images", images.permute(0, 2, 3, 1).numpy())
        record(f, "targets", targets.numpy())
        total, parts = compute(net(images), targets)
        total.backward()
        record(f, "loss/1", torch.cat([parts, total.detach().reshape(1)]).numpy())
        for name, t in net.ir_named("grad"):
            record(f, "grad/" + name, t.numpy())
    print("step: loss %.6f (box %.6f obj %.6f cls %.6f)" % (total.item(), *parts.tolist()), file=sys.stderr)


def main():
    torch.set_num_threads(1)
    for name, ir_file, sizes, side in CASES:
        with open(os.path.join(DATA, "ir", ir_file)) as f:
            ir = json.load(f)
        step_fixture(ir, os.path.join(DATA, "step", name + ".bin"), side)
        net = model(ir)
        rows = {}
        for batch, s in sizes:
            x = torch.randn(batch, ir["input"]["channels"], s, s)
            rows["%dx%d" % (batch, s)] = saved_bytes.saved_activation_bytes(net, x)
        doc = {"format": "yoloplan-%s-saved" % name, "torch": torch.__version__, "dtype": "fp32",
               "ir": "ir/" + ir_file, "saved_bytes": rows}
        with open(os.path.join(DATA, name + "_saved.json"), "w") as f:
            json.dump(doc, f, indent=1, sort_keys=True)
            f.write("\n")
        print("make_ir_fixture: %s: %s" % (name, rows), file=sys.stderr)


if __name__ == "__main__":
    main()
