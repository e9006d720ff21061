#!/usr/bin/python3
"""make_group_conv_fixtures.py - writes tests/data/ops/groups.{bin,txt}: PyTorch references for the
CPU backend's grouped and depthwise convolutions (tests/kernels/test_cpu_conv_groups.c), the convs of
YOLOv5's ghost models: GhostConv's cv2 (5x5 depthwise, stride 1), GhostBottleneck's and DWConv's
3x3 depthwise (stride 2 here) and a DWConv whose groups = gcd(c1, c2) is neither 1 nor the channels.

Same format and conventions as make_op_fixtures.py (float64 references from float32 inputs, NHWC
activations, PyTorch's (c_out, c_in/groups, k, k) weights), in a file of its own so that the op
fixtures' draws stay as they are. Run with Debian's interpreter:
    /usr/bin/python3 tests/ref/make_group_conv_fixtures.py
The output is deterministic (a fixed seed).
"""
import torch

import make_op_fixtures as fx


def main():
    torch.set_num_threads(1)
    gen = torch.Generator().manual_seed(20240611)
    # name, n, c_in, h, w, c_out, k, s, p, bias, groups
    fx.conv_case("dw_k5s1p2", gen, 2, 8, 7, 6, 8, 5, 1, 2, False, groups=8)   # GhostConv cv2
    fx.conv_case("dw_k3s2p1", gen, 2, 8, 9, 8, 8, 3, 2, 1, True, groups=8)    # DWConv s2, with bias
    fx.conv_case("g2_k3s1p1", gen, 2, 8, 6, 5, 4, 3, 1, 1, False, groups=2)   # 8 -> 4 in two groups
    fx.write("groups", "make_group_conv_fixtures.py")


if __name__ == "__main__":
    main()
