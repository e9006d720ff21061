#!/usr/bin/python3
"""Bytes PyTorch autograd saves for backward in one YOLOv5 training forward.

For each model (n, s, m, l, x) and image size (320, 640) this runs one
forward pass of the reference model (bench/reference/yolov5.py) at fp32,
batch 1, in training mode (BatchNorm uses batch statistics), inside
``torch.autograd.graph.saved_tensors_hooks`` and totals the bytes of the
saved tensors that are activations:

* every tensor autograd saves passes through the pack hook once per save;
  saves whose storage belongs to a parameter or a buffer (conv weights, BN
  weights, BN running_mean/running_var) are excluded and reported apart;
* the rest is deduplicated by storage: for each storage the byte ranges the
  saved views reference are merged, and each referenced byte counts once (a
  tensor saved by two ops, e.g. the input of C3's cv1 and cv2, counts once);
* the input image counts (conv 0 saves it), and so do BN's save_mean and
  save_invstd and max_pool2d's int64 indices.

Each save is attributed to an op in two independent ways that must agree: the
leaf module running when the pack hook fired (Conv2d, BatchNorm2d, SiLU,
MaxPool2d) and the autograd node and slot holding it (found by walking the
graph from the outputs, e.g. ``NativeBatchNormBackward0._saved_result1``).

The script also computes, from architecture arithmetic alone (no torch),
what yoloplan's ``pytorch`` saving policy predicts -- conv saves its input;
BN saves its input and 2*c fp32 statistics; SiLU saves its input; maxpool
saves its input and int64 indices of its output's shape; upsample, concat
and add save nothing; each distinct tensor counts once -- and prints the
difference to the measurement (it must be 0).

Under autocast (``torch.autocast("cpu", dtype=torch.bfloat16)``, default
models n and s; bf16 has fp16's sizes) the same forward is measured again and
the bytes are split by dtype: conv casts its fp32 input to bf16 (only the
image is fp32 at a conv; the saved copy is bf16), every conv and Detect
weight is cast to a bf16 copy that autocast caches and convolution's backward
saves (its ``weight`` slot: a new storage, so not excluded as a parameter;
reported apart as ``weight_copies``), BatchNorm runs on the bf16 conv output
with its fp32 parameters and saves that bf16 input and fp32 save_mean /
save_invstd, SiLU saves its bf16 input, max-pool its bf16 input and int64
indices.  The policy arithmetic predicts the same with 2-byte activations plus
the weight copies (c_out * c_in * k * k * 2 bytes per conv).

Output: a table on stdout, a per-op breakdown for yolov5s at 640 and the
fixture tests/data/pytorch_saved.json:

    {"format": "yoloplan-pytorch-saved", "torch": "<version>", "dtype": "fp32",
     "batch": 1, "models": {"yolov5n": {"320": bytes, "640": bytes}, ...},
     "autocast": {"device": "cpu", "dtype": "bf16", "batch": 1,
                  "models": {"yolov5n": {"320": {"bf16": bytes, "f32": bytes,
                      "i64": bytes, "weight_copies": bytes, "total": bytes},
                      ...}, ...}}}

(weight_copies is part of bf16; total is the sum of the dtypes.)

Usage: /usr/bin/python3 bench/reference/saved_bytes.py
           [--models nsmlx] [--sizes 320,640] [--autocast-models ns]
           [--json PATH | --no-json]
           [--detail MODEL:SIZE] [--list] [--threads N] [--batch B]
"""

import argparse
import collections
import contextlib
import json
import os
import sys

import torch
import torch.nn as nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import yolov5  # noqa: E402

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DEFAULT_JSON = os.path.join(REPO, "tests", "data", "pytorch_saved.json")
BATCH = 1  # the fixture is batch 1; --batch changes it for experiments
MIB = float(1 << 20)

# leaf module class -> op name used in the breakdown
LEAF_OPS = {nn.Conv2d: "conv", nn.BatchNorm2d: "bn", nn.SiLU: "silu",
            nn.MaxPool2d: "maxpool"}


# ---------------------------------------------------------------------------
# Measurement
# ---------------------------------------------------------------------------

def _storage_key(t):
    """(storage data pointer, storage size in bytes) of a tensor."""
    st = t.storage()
    return st.data_ptr(), st.nbytes()


def _byte_range(t):
    """[lo, hi) byte range inside its storage referenced by tensor t."""
    es = t.element_size()
    if t.numel() == 0:
        return 0, 0
    lo = hi = t.storage_offset()
    for size, stride in zip(t.shape, t.stride()):
        if stride >= 0:
            hi += (size - 1) * stride
        else:
            lo += (size - 1) * stride
    return lo * es, (hi + 1) * es


def _merged_bytes(ranges):
    total, end = 0, None
    for lo, hi in sorted(ranges):
        if end is None or lo > end:
            total += hi - lo
            end = hi
        elif hi > end:
            total += hi - end
            end = hi
    return total


def saved_activation_bytes(module, x):
    """Bytes autograd saves for backward in one forward of module on x (saved_tensors_hooks),
    saves whose storage is a parameter's or a buffer's left out, each referenced byte once."""
    owned = {_storage_key(t)[0] for t in list(module.parameters()) + list(module.buffers())}
    saves = []

    def pack(t):
        saves.append(t)
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        out = module(x)
    ranges = {}
    for t in saves:
        ptr = _storage_key(t)[0]
        if ptr not in owned:
            ranges.setdefault(ptr, []).append(_byte_range(t))
    del out
    return sum(_merged_bytes(r) for r in ranges.values())


class Save:
    """One save of one tensor by one op."""
    __slots__ = ("index", "tensor", "module", "op", "node", "slot", "excluded")

    def __init__(self, index, tensor, module, op):
        self.index, self.tensor, self.module, self.op = index, tensor, module, op
        self.node = self.slot = None
        self.excluded = None  # "parameter" / "buffer" / None (activation)


# torch dtype -> the fixture's name (yoloplan's yp_dtype_name)
DTYPE_NAMES = {torch.float32: "f32", torch.bfloat16: "bf16", torch.float16: "f16",
               torch.int64: "i64"}


def measure(key, size, seed=0, autocast=False):
    """One training-mode forward of yolov5<key> at size x size, batch 1, in
    fp32 or (autocast) under torch.autocast("cpu", dtype=torch.bfloat16).

    Returns a dict with the deduplicated activation bytes (also by dtype and
    the weight copies apart) and the saves."""
    torch.manual_seed(seed)
    model = yolov5.build(key).train()
    image = torch.randn(BATCH, 3, size, size)  # requires_grad False

    owners = {}
    for name, p in model.named_parameters():
        owners[_storage_key(p)[0]] = ("parameter", name)
    for name, b in model.named_buffers():
        owners[_storage_key(b)[0]] = ("buffer", name)

    # the running leaf module (conv/bn/silu/maxpool), by forward hooks
    current = []
    handles = []
    for name, mod in model.named_modules():
        op = LEAF_OPS.get(type(mod))
        if op is None:
            continue
        if op == "conv" and name.startswith("model.24."):
            op = "detect_conv"

        def pre(_m, _i, name=name, op=op):
            current.append((name, op))

        def post(_m, _i, _o):
            current.pop()
        handles.append(mod.register_forward_pre_hook(pre))
        handles.append(mod.register_forward_hook(post))

    saves = []

    def pack(t):
        name, op = current[-1] if current else ("<none>", "<none>")
        saves.append(Save(len(saves), t, name, op))
        return len(saves) - 1

    def unpack(i):
        return saves[i].tensor

    amp = (torch.autocast("cpu", dtype=torch.bfloat16) if autocast
           else contextlib.nullcontext())
    with amp, torch.autograd.graph.saved_tensors_hooks(pack, unpack):
        out = model(image)
    for h in handles:
        h.remove()

    # Walk the autograd graph and match each tensor slot to a save.  Unpacking
    # a slot may wrap the packed data in a new tensor object, so match on the
    # data (pointer, offset, shape, strides, dtype), not on object identity.
    def ident(t):
        return (t.data_ptr(), t.storage_offset(), tuple(t.shape),
                tuple(t.stride()), t.dtype)
    by_id = collections.defaultdict(list)
    for s in saves:
        by_id[ident(s.tensor)].append(s)
    seen, stack, slots = set(), [o.grad_fn for o in out], 0
    while stack:
        g = stack.pop()
        if g is None or g in seen:
            continue
        seen.add(g)
        for attr in dir(g):
            if not attr.startswith("_saved_"):
                continue
            v = getattr(g, attr)
            if isinstance(v, torch.Tensor):
                slots += 1
                cands = [s for s in by_id.get(ident(v), []) if s.node is None]
                assert cands, (type(g).__name__, attr)
                cands[0].node, cands[0].slot = type(g).__name__, attr[len("_saved_"):]
        stack.extend(n for n, _ in g.next_functions)
    assert slots == len(saves), (slots, len(saves))

    ranges = collections.defaultdict(list)   # storage ptr -> byte ranges
    first_saver = {}                          # storage ptr -> first save
    excluded = collections.Counter()
    excluded_bytes = collections.Counter()
    for s in saves:
        ptr, _ = _storage_key(s.tensor)
        own = owners.get(ptr)
        if own is not None:
            s.excluded = own[0]
            excluded[own[0]] += 1
            excluded_bytes[own[0]] += s.tensor.numel() * s.tensor.element_size()
            continue
        ranges[ptr].append(_byte_range(s.tensor))
        first_saver.setdefault(ptr, s)

    activation_bytes = sum(_merged_bytes(r) for r in ranges.values())
    # by dtype; a storage every save of which is a conv's weight slot is a
    # low-precision weight copy (autocast's cast of a parameter)
    slots = collections.defaultdict(set)
    for s in saves:
        if s.excluded is None:
            slots[_storage_key(s.tensor)[0]].add(s.slot)
    by_dtype = collections.Counter()
    weight_copies = 0
    for ptr, r in ranges.items():
        by_dtype[DTYPE_NAMES[first_saver[ptr].tensor.dtype]] += _merged_bytes(r)
        if slots[ptr] == {"weight"}:
            weight_copies += _merged_bytes(r)
    storage_bytes = sum(_storage_key(first_saver[p].tensor)[1] for p in ranges)
    distinct = {(_storage_key(s.tensor)[0], s.tensor.storage_offset(),
                 tuple(s.tensor.shape), tuple(s.tensor.stride()),
                 s.tensor.dtype) for s in saves if s.excluded is None}
    views = sum(1 for s in saves if s.excluded is None and
                (s.tensor.storage_offset() != 0 or
                 s.tensor.numel() * s.tensor.element_size()
                 != _storage_key(s.tensor)[1]))

    # per-op breakdown: every save, and each distinct storage by first saver
    per_slot_all = collections.Counter()
    per_slot_all_n = collections.Counter()
    per_slot_first = collections.Counter()
    for s in saves:
        if s.excluded is not None:
            continue
        k = (s.op, s.node, s.slot)
        per_slot_all[k] += s.tensor.numel() * s.tensor.element_size()
        per_slot_all_n[k] += 1
    for ptr, s in first_saver.items():
        per_slot_first[(s.op, s.node, s.slot)] += _merged_bytes(ranges[ptr])
    image_saved = any(s.tensor is image for s in saves)

    result = {
        "bytes": activation_bytes,
        "by_dtype": dict(by_dtype),
        "weight_copies": weight_copies,
        "storage_bytes": storage_bytes,
        "saves": len(saves),
        "activation_saves": sum(1 for s in saves if s.excluded is None),
        "distinct_tensors": len(distinct),
        "storages": len(ranges),
        "views": views,
        "excluded": dict(excluded),
        "excluded_bytes": dict(excluded_bytes),
        "per_slot_all": per_slot_all,
        "per_slot_all_n": per_slot_all_n,
        "per_slot_first": per_slot_first,
        "image_saved": image_saved,
        "saves_list": [(s.module, s.op, s.node, s.slot, s.excluded,
                        tuple(s.tensor.shape), str(s.tensor.dtype))
                       for s in saves],
    }
    del out, saves, by_id
    return result


# ---------------------------------------------------------------------------
# Policy prediction from architecture arithmetic (independent of torch)
# ---------------------------------------------------------------------------

class PolicyGraph:
    """Symbolic tensors (c, h, w) of batch-1 activations, fp32 or (autocast)
    bf16.  Records what yoloplan's `pytorch` saving policy saves, each
    distinct tensor once; under autocast also each conv's bf16 weight copy."""

    def __init__(self, autocast=False):
        self.autocast = autocast
        self.act = "bf16" if autocast else "f32"   # activations' dtype
        self.elem = 2 if autocast else 4
        self.shape = []            # tensor id -> (c, h, w)
        self.saved = {}            # tensor id -> first reason
        self.extra = collections.Counter()   # reason -> bytes (stats, indices, copies)
        self.extra_dtype = collections.Counter()  # dtype -> bytes of the extras
        self.layer = None
        self.per_layer = collections.Counter()

    def new(self, c, h, w):
        self.shape.append((c, h, w))
        return len(self.shape) - 1

    def nbytes(self, t, elem=None):
        c, h, w = self.shape[t]
        return BATCH * c * h * w * (self.elem if elem is None else elem)

    def save(self, t, reason):
        if t not in self.saved:
            self.saved[t] = reason
            self.per_layer[self.layer] += self.nbytes(t)

    def add_extra(self, reason, nbytes, dtype):
        self.extra[reason] += nbytes
        self.extra_dtype[dtype] += nbytes
        self.per_layer[self.layer] += nbytes

    # primitive ops --------------------------------------------------------
    def conv(self, x, c2, k, s, p, reason="conv.input"):
        self.save(x, reason)
        c1, h, w = self.shape[x]
        if self.autocast:  # the weight's bf16 copy, batch-independent
            self.add_extra("conv.weight_copy", c2 * c1 * k * k * 2, "bf16")
        return self.new(c2, (h + 2 * p - k) // s + 1, (w + 2 * p - k) // s + 1)

    def bn(self, x):
        self.save(x, "bn.input")
        c = self.shape[x][0]
        self.add_extra("bn.stats", 2 * c * 4, "f32")  # per channel, whatever the batch
        return self.new(*self.shape[x])

    def silu(self, x):
        self.save(x, "silu.input")
        return self.new(*self.shape[x])

    def maxpool(self, x, k=5):
        self.save(x, "maxpool.input")
        self.add_extra("maxpool.indices", self.nbytes(x, 8), "i64")  # stride 1, pad k//2
        return self.new(*self.shape[x])

    def add(self, a, b):
        return self.new(*self.shape[a])

    def cat(self, xs):
        _, h, w = self.shape[xs[0]]
        return self.new(sum(self.shape[x][0] for x in xs), h, w)

    def upsample(self, x):
        c, h, w = self.shape[x]
        return self.new(c, 2 * h, 2 * w)

    # YOLOv5 blocks ----------------------------------------------------------
    def conv_block(self, x, c2, k=1, s=1, p=None):
        return self.silu(self.bn(self.conv(x, c2, k, s, k // 2 if p is None else p)))

    def c3(self, x, c2, n, shortcut):
        c_ = c2 // 2
        a = self.conv_block(x, c_)
        for _ in range(n):
            y = self.conv_block(self.conv_block(a, c_, 1), c_, 3)
            a = self.add(a, y) if shortcut else y
        b = self.conv_block(x, c_)
        return self.conv_block(self.cat([a, b]), c2)

    def sppf(self, x, c2):
        c_ = self.shape[x][0] // 2
        a = self.conv_block(x, c_)
        y1 = self.maxpool(a)
        y2 = self.maxpool(y1)
        y3 = self.maxpool(y2)
        return self.conv_block(self.cat([a, y1, y2, y3]), c2)


def policy_predict(key, size, autocast=False):
    """What the `pytorch` policy predicts for yolov5<key>, batch 1, fp32 or
    (autocast) bf16 with the weight copies."""
    gd, gw = yolov5.MULTIPLES[key]
    g = PolicyGraph(autocast)
    x = g.new(3, size, size)
    y = []
    for i, (f, n, kind, args) in enumerate(yolov5.LAYERS):
        g.layer = i
        n = max(round(n * gd), 1) if n > 1 else n
        inp = (x if f == -1 else y[f]) if isinstance(f, int) else \
            [x if j == -1 else y[j] for j in f]
        if kind == "Conv":
            c2 = yolov5.make_divisible(args[0] * gw)
            x = g.conv_block(inp, c2, *args[1:])
        elif kind == "C3":
            c2 = yolov5.make_divisible(args[0] * gw)
            x = g.c3(inp, c2, n, args[1] if len(args) > 1 else True)
        elif kind == "SPPF":
            x = g.sppf(inp, yolov5.make_divisible(args[0] * gw))
        elif kind == "Upsample":
            x = g.upsample(inp)
        elif kind == "Concat":
            x = g.cat(inp)
        elif kind == "Detect":
            for t in inp:
                g.conv(t, 3 * 85, 1, 1, 0, reason="detect_conv.input")
            x = None
        y.append(x)
    by_reason = collections.Counter()
    for t, reason in g.saved.items():
        if t == 0:
            reason = "image (conv 0 input)"
        by_reason[reason] += g.nbytes(t)
    by_dtype = collections.Counter({g.act: sum(by_reason.values())})
    by_reason.update(g.extra)
    by_dtype.update(g.extra_dtype)
    return {"bytes": sum(by_reason.values()), "by_reason": by_reason,
            "by_dtype": dict(by_dtype),
            "weight_copies": g.extra["conv.weight_copy"],
            "tensors": len(g.saved), "per_layer": g.per_layer}


# ---------------------------------------------------------------------------
# Main
# ---------------------------------------------------------------------------

def print_detail(name, size, r, p):
    print()
    print("%s at %d, batch %d, fp32 -- measured per op/slot "
          "(every save; distinct storages by first saver):" % (name, size, BATCH))
    print("  %-12s %-38s %6s %14s %14s" % ("op", "autograd node.slot", "saves",
                                            "all saves B", "distinct B"))
    keys = sorted(set(r["per_slot_all"]) | set(r["per_slot_first"]),
                  key=lambda k: (k[0], k[1] or "", k[2] or ""))
    for k in keys:
        print("  %-12s %-38s %6d %14s %14s" % (
            k[0], "%s.%s" % (k[1], k[2]), r["per_slot_all_n"][k],
            format(r["per_slot_all"][k], ","), format(r["per_slot_first"][k], ",")))
    print("  %-12s %-38s %6d %14s %14s" % (
        "total", "", r["activation_saves"], format(sum(r["per_slot_all"].values()), ","),
        format(r["bytes"], ",")))
    print("  excluded (parameters/buffers): %s saves, %s bytes" % (
        r["excluded"], {k: format(v, ",") for k, v in r["excluded_bytes"].items()}))
    print("  input image saved: %s; saved views (offset or partial storage): %d;"
          " storages: %d, their full size %s bytes"
          % (r["image_saved"], r["views"], r["storages"],
             format(r["storage_bytes"], ",")))
    print()
    print("%s at %d -- pytorch policy predicted from arithmetic, by first reason:"
          % (name, size))
    for reason, b in sorted(p["by_reason"].items()):
        print("  %-24s %14s  %9.3f MiB" % (reason, format(b, ","), b / MIB))
    print("  %-24s %14s  %9.3f MiB" % ("total", format(p["bytes"], ","),
                                       p["bytes"] / MIB))
    print("  per top-level layer (bytes first saved while running the layer):")
    for i in range(len(yolov5.LAYERS)):
        print("    %2d %-8s %14s" % (i, yolov5.LAYERS[i][2],
                                     format(p["per_layer"][i], ",")))


def measure_autocast(models, sizes, fixture):
    """The autocast rows: measured bytes by dtype against the policy's; adds
    them to the fixture; True when every dtype agrees."""
    dtypes = ("bf16", "f32", "i64")
    ac = {"device": "cpu", "dtype": "bf16", "batch": BATCH, "models": {}}
    print()
    print("torch.autocast(\"cpu\", dtype=torch.bfloat16), batch %d, training mode"
          " (bf16 includes the weight copies)" % BATCH)
    print("%-8s %5s %14s %10s %12s %12s %14s %14s %6s" % (
        "model", "size", "bf16", "f32", "i64", "weight cp", "total",
        "policy total", "diff"))
    ok = True
    for key in models:
        name = "yolov5" + key
        ac["models"][name] = {}
        for size in sizes:
            r = measure(key, size, autocast=True)
            p = policy_predict(key, size, autocast=True)
            row = {d: r["by_dtype"].get(d, 0) for d in dtypes}
            row["weight_copies"] = r["weight_copies"]
            row["total"] = r["bytes"]
            assert sum(row[d] for d in dtypes) == r["bytes"], r["by_dtype"]
            same = all(row[d] == p["by_dtype"].get(d, 0) for d in dtypes) and \
                row["weight_copies"] == p["weight_copies"]
            ok &= same
            ac["models"][name][str(size)] = row
            print("%-8s %5d %14s %10s %12s %12s %14s %14s %6d%s" % (
                name, size, format(row["bf16"], ","), format(row["f32"], ","),
                format(row["i64"], ","), format(row["weight_copies"], ","),
                format(row["total"], ","), format(p["bytes"], ","),
                r["bytes"] - p["bytes"], "" if same else "  (dtype split differs)"))
            sys.stdout.flush()
    fixture["autocast"] = ac
    return ok


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--models", default="nsmlx")
    ap.add_argument("--sizes", default="320,640")
    ap.add_argument("--json", default=DEFAULT_JSON)
    ap.add_argument("--no-json", action="store_true")
    ap.add_argument("--detail", default="s:640",
                    help="model:size to break down per op (empty for none)")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--batch", type=int, default=1,
                    help="batch size (the fixture is batch 1; with another "
                         "batch pass --json elsewhere or --no-json)")
    ap.add_argument("--autocast-models", default="ns",
                    help="models measured again under CPU autocast (bf16); "
                         "empty for none")
    ap.add_argument("--list", action="store_true",
                    help="also list every save of the --detail run")
    args = ap.parse_args(argv)
    global BATCH
    BATCH = args.batch
    if BATCH != 1 and not args.no_json and args.json == DEFAULT_JSON:
        ap.error("--batch other than 1 would overwrite the batch-1 fixture; "
                 "add --no-json or --json PATH")
    torch.set_num_threads(args.threads)
    sizes = [int(s) for s in args.sizes.split(",")]

    fixture = {"format": "yoloplan-pytorch-saved", "torch": torch.__version__,
               "dtype": "fp32", "batch": BATCH, "models": {}}
    print("torch %s, fp32, batch %d, training mode" % (torch.__version__, BATCH))
    print("%-8s %5s %14s %10s %6s %6s %8s %14s %6s" % (
        "model", "size", "saved bytes", "MiB", "saves", "act", "distinct",
        "policy bytes", "diff"))
    details = []
    ok = True
    for key in args.models:
        name = "yolov5" + key
        fixture["models"][name] = {}
        for size in sizes:
            r = measure(key, size)
            p = policy_predict(key, size)
            diff = r["bytes"] - p["bytes"]
            ok &= diff == 0
            fixture["models"][name][str(size)] = r["bytes"]
            print("%-8s %5d %14s %10.3f %6d %6d %8d %14s %6d" % (
                name, size, format(r["bytes"], ","), r["bytes"] / MIB,
                r["saves"], r["activation_saves"], r["distinct_tensors"],
                format(p["bytes"], ","), diff))
            sys.stdout.flush()
            if args.detail == "%s:%d" % (key, size):
                details.append((name, size, r, p))
    print("(saves: all pack-hook calls; act: those not of a parameter/buffer; "
          "distinct: distinct activation tensors; diff: measured - policy)")
    if args.autocast_models:
        ok &= measure_autocast(args.autocast_models, sizes, fixture)
    for name, size, r, p in details:
        print_detail(name, size, r, p)
        if args.list:
            print()
            for row in r["saves_list"]:
                print("  ", row)
    if not args.no_json:
        with open(args.json, "w") as fh:
            json.dump(fixture, fh, indent=2)
            fh.write("\n")
        print("\nwrote %s" % os.path.relpath(args.json))
    if not ok:
        print("MISMATCH between measurement and the pytorch policy", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
