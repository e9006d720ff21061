#!/usr/bin/python3
"""make_attention_fixtures.py - writes tests/data/attention/attention.txt: PyTorch references for
the attention core (tests/kernels/test_cpu_attention.c), the op between nn.MultiheadAttention's in_proj
and out_proj in YOLOv5's TransformerLayer.

The reference is torch's own F.multi_head_attention_forward (training, dropout 0, need_weights)
with identity in_proj and out_proj (zero biases), so what it computes is exactly the core:
per image and head softmax(q_h k_h^T / sqrt(c/heads)) v_h. Tokens are the pixels, row-major,
as YOLOv5's TransformerBlock makes them (x.flatten(2).permute(2, 0, 1)). Computed in float64 from
float32 inputs, stored as float32 ("%.9g" round-trips). Activations are stored NHWC (the
kernels' layout), the attention weights as (n, heads, L, L).

Format: '#' comment lines, then one line per tensor: `name count v1 v2 ...`.

    /usr/bin/python3 tests/ref/make_attention_fixtures.py
Deterministic (fixed seed); the shapes are tiny (n=2, c=8, heads=2, h=w=3).
"""
import os

import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "..", "data", "attention", "attention.txt")


def f32(shape, gen):
    return torch.randn(*shape, generator=gen).float().double()


def tokens(x):
    """NCHW -> (L, N, C), YOLOv5's TransformerBlock."""
    return x.flatten(2).permute(2, 0, 1)


def main():
    n, c, heads, h, w = 2, 8, 2, 3, 3
    gen = torch.Generator().manual_seed(20240601)
    q, k, v = (f32((n, c, h, w), gen).requires_grad_() for _ in range(3))
    eye = torch.eye(c, dtype=torch.float64)
    y, probs = F.multi_head_attention_forward(
        tokens(q), tokens(k), tokens(v), c, heads, torch.cat([eye, eye, eye]), torch.zeros(3 * c, dtype=torch.float64),
        None, None, False, 0.0, eye, torch.zeros(c, dtype=torch.float64), training=True, need_weights=True,
        average_attn_weights=False)
    y = y.permute(1, 2, 0).reshape(n, c, h, w)  # back to NCHW
    dy = f32((n, c, h, w), gen)
    (y * dy).sum().backward()

    def nhwc(t):
        return t.detach().permute(0, 2, 3, 1).contiguous()

    rows = [("q", nhwc(q)), ("k", nhwc(k)), ("v", nhwc(v)), ("y", nhwc(y)), ("probs", probs.detach()),
            ("dy", nhwc(dy)), ("dq", nhwc(q.grad)), ("dk", nhwc(k.grad)), ("dv", nhwc(v.grad))]
    os.makedirs(os.path.dirname(OUT), exist_ok=True)
    with open(OUT, "w") as f:
        f.write("# written by tests/ref/make_attention_fixtures.py (torch %s); do not edit\n" % torch.__version__)
        f.write("# n %d c %d heads %d h %d w %d; activations NHWC, probs (n, heads, L, L)\n" % (n, c, heads, h, w))
        for name, t in rows:
            vals = t.float().flatten().tolist()
            f.write("%s %d %s\n" % (name, len(vals), " ".join("%.9g" % x for x in vals)))


if __name__ == "__main__":
    main()
