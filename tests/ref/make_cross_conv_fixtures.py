#!/usr/bin/python3
"""make_cross_conv_fixtures.py - writes tests/data/ops/cross.{bin,txt}: PyTorch references for the
CPU backend's non-square convolutions (tests/kernels/test_cpu_conv_cross.c), the convs of YOLOv5's
CrossConv: cv1 Conv(c1, c_, (1, k), (1, s)) and cv2 Conv(c_, c2, (k, 1), (s, 1), g), padded by
YOLOv5's autopad of a list, [kh // 2, kw // 2].

Same format and conventions as make_op_fixtures.py (float64 references from float32 inputs, NHWC
activations, PyTorch's (c_out, c_in/groups, kh, kw) weights), in a file of its own so that the op
fixtures' draws stay as they are. Run with Debian's interpreter:
    /usr/bin/python3 tests/ref/make_cross_conv_fixtures.py
The output is deterministic (a fixed seed).
"""
import torch

import make_op_fixtures as fx


def main():
    torch.set_num_threads(1)
    gen = torch.Generator().manual_seed(20261202)
    # name, n, c_in, h, w, c_out, (kh, kw), (sh, sw), (ph, pw), bias, groups
    fx.conv_case("cross_k1x3s1", gen, 2, 4, 6, 7, 6, (1, 3), (1, 1), (0, 1), False)  # C3x's cv1
    fx.conv_case("cross_k3x1s1", gen, 2, 6, 6, 7, 4, (3, 1), (1, 1), (1, 0), False)  # C3x's cv2
    fx.conv_case("cross_k1x3s2", gen, 2, 4, 6, 9, 6, (1, 3), (1, 2), (0, 1), False)  # CrossConv s=2: cv1
    fx.conv_case("cross_k3x1s2_g2", gen, 2, 6, 7, 5, 4, (3, 1), (2, 1), (1, 0), True, groups=2)  # cv2, g=2
    fx.write("cross", "make_cross_conv_fixtures.py")


if __name__ == "__main__":
    main()
