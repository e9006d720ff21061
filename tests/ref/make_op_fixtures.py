#!/usr/bin/python3
"""make_op_fixtures.py - writes tests/data/ops/{ops.bin,ops.txt}: PyTorch references for the CPU
kernels' test (tests/kernels/test_cpu_ops.c).

Every reference is computed in float64 from float32 inputs, then stored as float32, so what the test
measures is the kernels' own error. Activations are stored NHWC (the kernels' layout), weights in
PyTorch's OIHW, vectors as they are.

ops.bin: little-endian float32 tensors back to back. ops.txt: one line per tensor,
`name offset count dim...` (offset and count in floats), after '#' comment lines.

Run with Debian's interpreter (python3-torch, from scripts/deps-reference.sh, is installed for
/usr/bin/python3 only):
    /usr/bin/python3 tests/ref/make_op_fixtures.py
The output is deterministic (fixed seeds); keep the shapes tiny (the files are committed).
"""
import os
import sys

import numpy as np
import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "bench", "reference"))
import yolov5  # noqa: E402  (Detect's eval decode)

OUT = os.path.join(HERE, "..", "data", "ops")

tensors = []  # (name, float32 array)


def put(name, t):
    """Records tensor t (torch or numpy) under name; 4-D activations must already be NHWC."""
    if isinstance(t, torch.Tensor):
        t = t.detach().to(torch.float64).cpu().numpy()
    tensors.append((name, np.ascontiguousarray(t, dtype="<f4")))


def nhwc(t):
    return t.detach().permute(0, 2, 3, 1).contiguous()


def f32(shape, gen, scale=1.0, offset=0.0):
    """float32-representable random values, returned as float64 (the references' precision)."""
    return (torch.randn(*shape, generator=gen) * scale + offset).float().double()


def conv_case(name, gen, n, cin, h, w, cout, k, s, p, bias, groups=1):
    """k, s and p: a number, or (height, width) as PyTorch's kernel_size, stride and padding."""
    kh, kw = (k, k) if isinstance(k, int) else k
    x = f32((n, cin, h, w), gen).requires_grad_()
    wt = f32((cout, cin // groups, kh, kw), gen, scale=1.0 / (cin // groups * kh * kw) ** 0.5).requires_grad_()
    b = f32((cout,), gen).requires_grad_() if bias else None
    y = F.conv2d(x, wt, b, stride=s, padding=p, groups=groups)
    dy = f32(tuple(y.shape), gen)
    (y * dy).sum().backward()
    put(name + ".x", nhwc(x))
    put(name + ".w", wt)
    put(name + ".y", nhwc(y))
    put(name + ".dy", nhwc(dy))
    put(name + ".dx", nhwc(x.grad))
    put(name + ".dw", wt.grad)
    if bias:
        put(name + ".b", b)
        put(name + ".db", b.grad)


def bn_train_case(name, gen, n, c, h, w):
    eps, momentum = 1e-3, 0.03
    # Per-channel offsets and spreads, as after a conv: the mean is not small next to the spread.
    x = (f32((n, c, h, w), gen) * f32((1, c, 1, 1), gen, 0.5, 1.5) + f32((1, c, 1, 1), gen, 2.0)).float().double()
    x.requires_grad_()
    gamma = f32((c,), gen, 0.2, 1.0).requires_grad_()
    beta = f32((c,), gen, 0.1).requires_grad_()
    rm = f32((c,), gen, 0.1)
    rv = (torch.rand(c, generator=gen) * 0.4 + 0.8).float().double()
    put(name + ".rm0", rm)
    put(name + ".rv0", rv)
    y = F.batch_norm(x, rm, rv, gamma, beta, training=True, momentum=momentum, eps=eps)  # updates rm, rv
    dy = f32(tuple(y.shape), gen)
    (y * dy).sum().backward()
    mean = x.detach().mean(dim=(0, 2, 3))
    var = x.detach().var(dim=(0, 2, 3), unbiased=False)
    put(name + ".x", nhwc(x))
    put(name + ".gamma", gamma)
    put(name + ".beta", beta)
    put(name + ".y", nhwc(y))
    put(name + ".mean", mean)
    put(name + ".invstd", 1.0 / torch.sqrt(var + eps))
    put(name + ".rm1", rm)
    put(name + ".rv1", rv)
    put(name + ".dy", nhwc(dy))
    put(name + ".dx", nhwc(x.grad))
    put(name + ".dgamma", gamma.grad)
    put(name + ".dbeta", beta.grad)


def bn_eval_case(name, gen, n, c, h, w):
    x = f32((n, c, h, w), gen, 1.5, 0.5)
    gamma, beta = f32((c,), gen, 0.2, 1.0), f32((c,), gen, 0.1)
    rm = f32((c,), gen, 0.3)
    rv = (torch.rand(c, generator=gen) * 0.8 + 0.4).float().double()
    y = F.batch_norm(x, rm, rv, gamma, beta, training=False, eps=1e-3)
    for key, t in (("x", nhwc(x)), ("gamma", gamma), ("beta", beta), ("rm", rm), ("rv", rv), ("y", nhwc(y))):
        put(name + "." + key, t)


def maxpool_case(name, gen, n, c, h, w, k, s, p, levels):
    # Integers in [0, levels): many windows hold several equal maxima, so the gradient's routing
    # checks the tie order (first maximum in kh-outer, kw-inner order).
    x = torch.randint(0, levels, (n, c, h, w), generator=gen).double().requires_grad_()
    y = F.max_pool2d(x, k, s, p)
    dy = f32(tuple(y.shape), gen)
    (y * dy).sum().backward()
    for key, t in (("x", x), ("y", y), ("dy", dy), ("dx", x.grad)):
        put(name + "." + key, nhwc(t))


def upsample_case(name, gen, n, c, h, w, scale):
    x = f32((n, c, h, w), gen).requires_grad_()
    y = F.interpolate(x, scale_factor=scale, mode="nearest")
    dy = f32(tuple(y.shape), gen)
    (y * dy).sum().backward()
    for key, t in (("x", x), ("y", y), ("dy", dy), ("dx", x.grad)):
        put(name + "." + key, nhwc(t))


def concat_case(name, gen, n, h, w, cs):
    xs = [f32((n, c, h, w), gen).requires_grad_() for c in cs]
    y = torch.cat(xs, 1)
    dy = f32(tuple(y.shape), gen)
    (y * dy).sum().backward()
    for i, x in enumerate(xs):
        put("%s.x%d" % (name, i), nhwc(x))
        put("%s.dx%d" % (name, i), nhwc(x.grad))
    put(name + ".y", nhwc(y))
    put(name + ".dy", nhwc(dy))


def s2d_case(name, gen, n, c, h, w):
    x = f32((n, c, h, w), gen).requires_grad_()
    y = torch.cat([x[..., ::2, ::2], x[..., 1::2, ::2], x[..., ::2, 1::2], x[..., 1::2, 1::2]], 1)
    dy = f32(tuple(y.shape), gen)
    (y * dy).sum().backward()
    for key, t in (("x", x), ("y", y), ("dy", dy), ("dx", x.grad)):
        put(name + "." + key, nhwc(t))


def contract(x, s):
    """YOLOv5's Contract(gain=s).forward (models/common.py)."""
    b, c, h, w = x.size()
    x = x.view(b, c, h // s, s, w // s, s)
    x = x.permute(0, 3, 5, 1, 2, 4).contiguous()
    return x.view(b, c * s * s, h // s, w // s)


def expand(x, s):
    """YOLOv5's Expand(gain=s).forward (models/common.py)."""
    b, c, h, w = x.size()
    x = x.view(b, s, s, c // s**2, h, w)
    x = x.permute(0, 3, 4, 1, 5, 2).contiguous()
    return x.view(b, c // s**2, h * s, w * s)


def block_case(name, gen, fn, n, c, h, w, gain):
    """Contract or Expand at `gain`: x, y = fn(x), a random dy and autograd's dx."""
    x = f32((n, c, h, w), gen).requires_grad_()
    y = fn(x, gain)
    dy = f32(tuple(y.shape), gen)
    (y * dy).sum().backward()
    for key, t in (("x", x), ("y", y), ("dy", dy), ("dx", x.grad)):
        put(name + "." + key, nhwc(t))


def act_case(name, gen, fn, n, c, h, w, scale, specials):
    """An activation fn (forward and backward) over random x with the values in `specials` (the
    ends of its pieces, where a backward picks a side) planted at the first elements."""
    x = f32((n, c, h, w), gen, scale)
    flat = x.view(-1)
    flat[: len(specials)] = torch.tensor(specials, dtype=torch.float64)
    x.requires_grad_()
    y = fn(x)
    dy = f32(tuple(y.shape), gen)
    (y * dy).sum().backward()
    for key, t in (("x", x), ("y", y), ("dy", dy), ("dx", x.grad)):
        put(name + "." + key, nhwc(t))


def pad_case(name, gen, n, c, h, w, pad):
    """nn.ZeroPad2d(pad), pad = (left, right, top, bottom)."""
    x = f32((n, c, h, w), gen).requires_grad_()
    y = torch.nn.ZeroPad2d(pad)(x)
    dy = f32(tuple(y.shape), gen)
    (y * dy).sum().backward()
    for key, t in (("x", x), ("y", y), ("dy", dy), ("dx", x.grad)):
        put(name + "." + key, nhwc(t))


def optim_case(name, gen, make_opt, n=1000, steps=3):
    w = torch.nn.Parameter(f32((n,), gen))
    put(name + ".w0", w)
    opt = make_opt([w])
    for t in range(1, steps + 1):
        g = f32((n,), gen)
        g[:8] *= 1e-3  # a few tiny gradients: Adam's denominator near eps
        g = g.float().double()  # what the test feeds the kernel is exactly what torch saw
        put("%s.g%d" % (name, t), g)
        w.grad = g.clone()
        opt.step()
    put(name + ".w", w)
    st = opt.state[w]
    if "momentum_buffer" in st:
        put(name + ".m", st["momentum_buffer"])
    if "exp_avg" in st:
        put(name + ".m", st["exp_avg"])
        put(name + ".v", st["exp_avg_sq"])


def decode_case(name, gen, n, nc, grids, strides, anchors):
    """Detect's eval decode (yolov5.decode) of random raw outputs: per level the NHWC
    (n, h, w, na*(nc+5)) input as the kernels read it, then the (n, rows, nc+5) boxes; also the
    strides and the pixel anchors (nl, na, 2)."""
    na, no = len(anchors[0]), nc + 5
    xs = [f32((n, na, h, w, no), gen, scale=2.0) for h, w in grids]
    a = torch.tensor(anchors, dtype=torch.float64)
    s = torch.tensor(strides, dtype=torch.float64)
    y = yolov5.decode(xs, a / s.view(-1, 1, 1), s)
    for l, x in enumerate(xs):
        put("%s.x%d" % (name, l), x.permute(0, 2, 3, 1, 4).reshape(n, x.shape[2], x.shape[3], na * no))
    put(name + ".y", y)
    put(name + ".strides", s)
    put(name + ".anchors", a)


def main():
    torch.set_num_threads(1)
    gen = torch.Generator().manual_seed(20240605)
    conv_case("conv_k3s1p1", gen, 2, 4, 8, 8, 6, 3, 1, 1, False)
    conv_case("conv_k3s2p1", gen, 2, 4, 9, 7, 6, 3, 2, 1, False)
    conv_case("conv_k6s2p2", gen, 2, 3, 16, 16, 8, 6, 2, 2, False)  # YOLOv5 layer 0
    conv_case("conv_k1_bias", gen, 2, 8, 5, 6, 5, 1, 1, 0, True)  # Detect's 1x1 conv
    bn_train_case("bn_train", gen, 2, 6, 5, 4)
    bn_train_case("bn_train_wide", gen, 2, 300, 2, 3)  # more channels than one 256-channel block
    bn_eval_case("bn_eval", gen, 2, 6, 5, 4)
    maxpool_case("maxpool_k5s1p2", gen, 2, 3, 7, 7, 5, 1, 2, 4)  # SPPF's pool
    maxpool_case("maxpool_wide", gen, 1, 260, 5, 6, 5, 1, 2, 3)
    maxpool_case("maxpool_k3s2p1", gen, 2, 3, 7, 8, 3, 2, 1, 3)
    upsample_case("upsample_x2", gen, 2, 5, 3, 4, 2)
    concat_case("concat2", gen, 2, 3, 4, [3, 5])
    concat_case("concat4", gen, 2, 3, 4, [2, 3, 1, 4])
    s2d_case("s2d", gen, 2, 3, 6, 8)
    optim_case("sgd", gen, lambda p: torch.optim.SGD(p, lr=0.05, momentum=0.937, nesterov=True, weight_decay=5e-4))
    optim_case("adam", gen, lambda p: torch.optim.Adam(p, lr=0.1, betas=(0.9, 0.999), eps=1e-8, weight_decay=5e-4))
    optim_case("adamw", gen, lambda p: torch.optim.AdamW(p, lr=0.1, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.05))
    # two levels of non-square grids (rows != columns), 3 anchors, 2 classes; last, so the cases
    # above keep their random draws
    decode_case("decode", gen, 2, 2, [(4, 3), (2, 5)], [8, 16], [[[10, 13], [16, 30], [33, 23]],
                                                                 [[30, 61], [62, 45], [59, 119]]])
    # The activations of YOLOv5's `activation:` key and yolov3-tiny's pad and pools; their own
    # generator, so the cases above keep their draws.
    gen2 = torch.Generator().manual_seed(20261201)
    act_case("relu", gen2, F.relu, 2, 5, 3, 4, 1.0, [0.0, -0.0, 1e-30, -1e-30])
    act_case("leaky_relu", gen2, lambda x: F.leaky_relu(x, 0.1), 2, 5, 3, 4, 1.0, [0.0, -0.0, 1e-30, -1e-30])
    act_case("hardswish", gen2, F.hardswish, 2, 5, 3, 4, 3.0, [-3.0, 3.0, 0.0, -3.5, 3.5, -2.999, 2.999])
    pad_case("zero_pad_0101", gen2, 2, 3, 4, 5, (0, 1, 0, 1))  # yolov3-tiny's ZeroPad2d
    pad_case("zero_pad_1230", gen2, 2, 3, 4, 5, (1, 2, 3, 0))
    maxpool_case("maxpool_k2s2p0", gen2, 2, 3, 7, 8, 2, 2, 0, 3)  # odd height: the last row is dropped
    maxpool_case("maxpool_k2s1p0", gen2, 2, 3, 6, 5, 2, 1, 0, 3)  # after the pad, yolov3-tiny's layer 11

    # YOLOv5's Contract and Expand at gains 2 and 3 (Expand needs c % gain**2 == 0); their own
    # generator, so the cases above keep their draws.
    gen3 = torch.Generator().manual_seed(20261215)
    block_case("contract_g2", gen3, contract, 2, 3, 4, 6, 2)
    block_case("contract_g3", gen3, contract, 2, 2, 6, 9, 3)
    block_case("expand_g2", gen3, expand, 2, 8, 3, 4, 2)
    block_case("expand_g3", gen3, expand, 2, 18, 2, 3, 3)

    write("ops", "make_op_fixtures.py")


def write(stem, script):
    """Writes the recorded tensors to tests/data/ops/<stem>.{bin,txt}."""
    os.makedirs(OUT, exist_ok=True)
    offset = 0
    with open(os.path.join(OUT, stem + ".bin"), "wb") as fb, open(os.path.join(OUT, stem + ".txt"), "w") as ft:
        ft.write("# written by tests/ref/%s (torch %s); do not edit\n" % (script, torch.__version__))
        ft.write("# name offset count dims...   (offset, count in float32 elements of %s.bin)\n" % stem)
        for name, a in tensors:
            fb.write(a.tobytes())
            ft.write("%s %d %d %s\n" % (name, offset, a.size, " ".join(str(d) for d in a.shape)))
            offset += a.size
    print("%s: %d tensors, %d bytes" % (script, len(tensors), offset * 4), file=sys.stderr)


if __name__ == "__main__":
    main()
