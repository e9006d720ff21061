#!/usr/bin/env python3
"""Writes tests/data/elem/conversions.bin for test_elem_math: fp32 values (random bit patterns,
values scaled into fp16's range with its subnormals, exact ties between consecutive halves and
bfloat16s, the overflow edges, zeros, infinities) with PyTorch's .half() and .bfloat16() of each:
u32 count, then per value u32 f32 bits, u16 f16 bits, u16 bf16 bits (little endian).
Run with Debian's torch: /usr/bin/python3 tests/ref/make_elem_fixture.py"""
import os
import struct

import torch

g = torch.Generator().manual_seed(7)
vals = [torch.randint(-2**31, 2**31 - 1, (4000,), generator=g, dtype=torch.int64).to(torch.int32).view(torch.float32)]
mant = torch.rand(4000, generator=g) + 0.5
expo = torch.randint(-26, 17, (4000,), generator=g)
sign = torch.where(torch.rand(4000, generator=g) < 0.5, -1.0, 1.0)
vals.append(sign * torch.ldexp(mant, expo))
h = torch.arange(1, 0x7BFF, 37, dtype=torch.int32).to(torch.int16).view(torch.float16).float()
vals.append((h[:-1] + h[1:]) / 2)  # ties (exact in fp32)
b = torch.arange(0x0080, 0x7F7F, 301, dtype=torch.int32).to(torch.int16).view(torch.bfloat16).float()
vals.append((b[:-1] + b[1:]) / 2)
vals.append(torch.tensor([0.0, -0.0, 65504.0, 65519.99, 65520.0, -65520.0, 2**-25, 2**-25 * 1.0001, 2**-14,
                          3.4e38, float("inf"), float("-inf"), 1.00390625, 1.01171875]))
v = torch.cat([x.float() for x in vals])
v = v[~torch.isnan(v)]
f32 = v.view(torch.int32).tolist()
f16 = v.half().view(torch.int16).tolist()
bf16 = v.bfloat16().view(torch.int16).tolist()
out = os.path.join(os.path.dirname(__file__), "..", "data", "elem", "conversions.bin")
with open(out, "wb") as f:
    f.write(struct.pack("<I", len(f32)))
    for a, c, d in zip(f32, f16, bf16):
        f.write(struct.pack("<IHH", a & 0xFFFFFFFF, c & 0xFFFF, d & 0xFFFF))
print(f"{out}: {len(f32)} values")
