#!/usr/bin/python3
"""make_group_saved_fixture.py - writes tests/data/pytorch_saved_dw.json: the bytes PyTorch autograd
saves for backward in one training-mode forward of tests/data/ir/tiny_dw.json (a Conv, two
depthwise DWConvs -- 5x5 stride 1 as GhostConv's cv2, 3x3 stride 2 -- a groups=2 Conv and Detect),
fp32, measured with torch.autograd.graph.saved_tensors_hooks as bench/reference/saved_bytes.py
measures the YOLOv5 models: every save whose storage is a parameter or a buffer excluded, the rest
deduplicated by storage (each referenced byte once), the image included. test_pytorch_saved.c
checks that the schedule's `pytorch` policy saves exactly that.

The script also computes the policy's prediction from the shapes alone (conv saves its input, BN
its input and 2*c fp32 statistics, SiLU its input; each tensor once) and refuses to write a
fixture that disagrees with the measurement.

Run with Debian's interpreter (deterministic: fixed seed):
    /usr/bin/python3 tests/ref/make_group_saved_fixture.py
"""
import json
import os
import sys

import torch
import torch.nn as nn

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "bench", "reference"))
from saved_bytes import _byte_range, _merged_bytes, _storage_key  # noqa: E402

OUT = os.path.join(HERE, "..", "data", "pytorch_saved_dw.json")
BATCH, SIZES = 2, (32, 48)


class Conv(nn.Module):
    """YOLOv5's Conv: conv (no bias) + BN + SiLU; DWConv is Conv with groups = gcd(c1, c2)."""

    def __init__(self, c1, c2, k, s, g=1):
        super().__init__()
        self.conv = nn.Conv2d(c1, c2, k, s, k // 2, groups=g, bias=False)
        self.bn = nn.BatchNorm2d(c2, eps=1e-3, momentum=0.03)
        self.act = nn.SiLU()

    def forward(self, x):
        return self.act(self.bn(self.conv(x)))


class TinyDW(nn.Module):
    """tests/data/ir/tiny_dw.json: nc 1, one anchor, stride 4."""

    def __init__(self):
        super().__init__()
        self.m = nn.Sequential(Conv(3, 8, 3, 2), Conv(8, 8, 5, 1, g=8), Conv(8, 8, 3, 2, g=8), Conv(8, 4, 3, 1, g=2))
        self.detect = nn.Conv2d(4, 1 * (1 + 5), 1)

    def forward(self, x):
        y = self.detect(self.m(x))
        bs, _, ny, nx = y.shape
        return y.view(bs, 1, 6, ny, nx).permute(0, 1, 3, 4, 2).contiguous()


def measure(model, size):
    image = torch.randn(BATCH, 3, size, size)
    owned = {_storage_key(t)[0] for t in list(model.parameters()) + list(model.buffers())}
    saves = []
    with torch.autograd.graph.saved_tensors_hooks(lambda t: saves.append(t) or len(saves) - 1, lambda i: saves[i]):
        model(image)
    ranges = {}
    for t in saves:
        ptr = _storage_key(t)[0]
        if ptr not in owned:
            ranges.setdefault(ptr, []).append(_byte_range(t))
    return sum(_merged_bytes(r) for r in ranges.values())


def predict(size):
    """The `pytorch` policy from the shapes: per Conv its input, the BN input plus 2*c statistics,
    the SiLU input (the BN output); Detect's conv its input (the last SiLU output)."""
    total, h = BATCH * 3 * size * size * 4, size  # the image, saved by conv 0
    for c2, s in ((8, 2), (8, 1), (8, 2), (4, 1)):
        h //= s
        total += 2 * BATCH * c2 * h * h * 4 + 2 * c2 * 4  # conv output (BN input), BN output (SiLU input), stats
        total += BATCH * c2 * h * h * 4  # the SiLU output: the next conv's input
    return total


def main():
    torch.manual_seed(0)
    torch.set_num_threads(1)
    model = TinyDW().train()
    sizes = {}
    for size in SIZES:
        got, want = measure(model, size), predict(size)
        print("tiny_dw batch %d at %d: torch saves %d bytes, the policy predicts %d" % (BATCH, size, got, want))
        if got != want:
            sys.exit("make_group_saved_fixture: the measurement and the prediction differ; no fixture written")
        sizes[str(size)] = got
    fx = {"format": "yoloplan-pytorch-saved", "torch": torch.__version__, "dtype": "fp32", "batch": BATCH,
          "graph": "ir/tiny_dw.json", "sizes": sizes}
    with open(OUT, "w") as f:
        json.dump(fx, f, indent=2)
        f.write("\n")


if __name__ == "__main__":
    main()
