#!/usr/bin/python3
"""make_act_saved_fixture.py - writes tests/data/act_saved.json: the bytes PyTorch autograd saves
for backward in one training forward of the network of tests/data/ir/acts.json (conv-BN-LeakyReLU,
conv-BN-Hardswish, conv-BN-ReLU, ZeroPad2d, MaxPool2d k2 s1 and k2 s2, Detect), for
tests/graph/test_act_saved.c, which checks the `pytorch` saving policy's schedule against them.

The network is built from the IR file node by node (conv2d -> nn.Conv2d, batchnorm2d ->
nn.BatchNorm2d, relu / leaky_relu / hardswish -> nn.ReLU / nn.LeakyReLU / nn.Hardswish, zero_pad
-> nn.ZeroPad2d, maxpool2d -> nn.MaxPool2d, detect -> its per-level 1x1 convs with bias), so the
fixture follows the file. The count is bench/reference/saved_bytes.py's: every save passes through
torch.autograd.graph.saved_tensors_hooks' pack hook; saves of parameters and buffers are left out;
the rest is deduplicated by storage, each referenced byte counted once; the image counts.

Run with Debian's interpreter (python3-torch is installed for /usr/bin/python3 only):
    /usr/bin/python3 tests/ref/make_act_saved_fixture.py
Deterministic (a fixed seed; the bytes do not depend on the values anyway).
"""
import collections
import json
import os
import sys

import torch
import torch.nn as nn

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "bench", "reference"))
import saved_bytes  # noqa: E402  (its storage arithmetic)

IR = os.path.join(HERE, "..", "data", "ir", "acts.json")
OUT = os.path.join(HERE, "..", "data", "act_saved.json")
CASES = [(1, 32), (1, 64), (2, 32)]  # (batch, image side)


def module_of(node):
    a = node.get("attrs", {})
    op = node["op"]
    if op == "conv2d":
        return nn.Conv2d(a["c_in"], a["c_out"], a["k"], a["s"], a["p"], groups=a["groups"], bias=a["bias"])
    if op == "batchnorm2d":
        return nn.BatchNorm2d(a["c"], eps=a["eps"], momentum=a["momentum"])
    if op == "relu":
        return nn.ReLU()
    if op == "leaky_relu":
        return nn.LeakyReLU(a["slope"])
    if op == "hardswish":
        return nn.Hardswish()
    if op == "zero_pad":
        return nn.ZeroPad2d((a["left"], a["right"], a["top"], a["bottom"]))
    if op == "maxpool2d":
        return nn.MaxPool2d(a["k"], a["s"], a["p"])
    if op == "detect":
        no = a["na"] * (a["nc"] + 5)
        return nn.ModuleList(nn.Conv2d(c, no, 1) for c in a["c_in"])
    raise SystemExit("make_act_saved_fixture: op %s not handled" % op)


class Net(nn.Module):
    def __init__(self, ir):
        super().__init__()
        self.nodes = ir["nodes"]
        self.mods = nn.ModuleList(module_of(n) for n in self.nodes)

    def forward(self, image):
        vals = []
        for n, m in zip(self.nodes, self.mods):
            xs = [image if i == -1 else vals[i] for i in n["inputs"]]
            if n["op"] == "detect":
                return [conv(x) for conv, x in zip(m, xs)]
            vals.append(m(xs[0]))
        raise SystemExit("make_act_saved_fixture: no detect node")


def measure(ir, batch, side):
    torch.manual_seed(0)
    net = Net(ir).train()
    image = torch.randn(batch, ir["input"]["channels"], side, side)
    owned = {saved_bytes._storage_key(t)[0] for t in list(net.parameters()) + list(net.buffers())}
    saves = []
    with torch.autograd.graph.saved_tensors_hooks(lambda t: saves.append(t) or len(saves) - 1, lambda i: saves[i]):
        out = net(image)
    ranges = collections.defaultdict(list)
    for t in saves:
        ptr = saved_bytes._storage_key(t)[0]
        if ptr not in owned:
            ranges[ptr].append(saved_bytes._byte_range(t))
    assert out
    return sum(saved_bytes._merged_bytes(r) for r in ranges.values())


def main():
    torch.set_num_threads(1)
    with open(IR) as f:
        ir = json.load(f)
    rows = {"%dx%d" % (b, s): measure(ir, b, s) for b, s in CASES}
    doc = {"format": "yoloplan-act-saved", "torch": torch.__version__, "ir": "ir/acts.json", "dtype": "fp32",
           "saved_bytes": rows}
    with open(OUT, "w") as f:
        json.dump(doc, f, indent=1, sort_keys=True)
        f.write("\n")
    print("make_act_saved_fixture: %s" % rows, file=sys.stderr)


if __name__ == "__main__":
    main()
