#!/usr/bin/python3
"""pt2safetensors.py - converts PyTorch checkpoints to yoloplan's safetensors layout and back.

    pt2safetensors.py IN.pt OUT.safetensors         # .pt -> safetensors
    pt2safetensors.py IN.safetensors OUT.pt         # safetensors -> .pt (the direction follows IN's suffix)
    pt2safetensors.py yolov5s.pt yolov5s.safetensors  # a YOLOv5 checkpoint: no YOLOv5 code needed

Runs with Debian's python3 and python3-torch; the safetensors format is written and read here
directly (8-byte little-endian header length, JSON header padded with spaces to 8 bytes,
little-endian data), so the `safetensors` package is not needed.

The layout (executor/io/yp_checkpoint.h): a model's state dict under its own names
("model.0.conv.weight", ...), the EMA's with "ema." in front, yoloplan's optimizer state under
"optimizer.momentum_buffer.", "optimizer.exp_avg.", "optimizer.exp_avg_sq." and pending gradients
under "grad.", and "__metadata__" (string -> string). A stripped checkpoint (the end of a
finished run: F16 weights only, epoch -1, as train.py's strip_optimizer leaves last.pt) converts
both ways with its dtypes and metadata unchanged.

What a .pt may hold, read by an unpickler that builds tensors, containers and plain values and
stands in for everything else (so it runs no code from the file and needs no YOLOv5 checkout):
  - a plain state dict (name -> tensor): its tensors keep their names;
  - a pickled module (torch.save(model)): its state dict;
  - a dict of state dicts or modules: "model" (names as they are), "ema" ("ema." + name), and the
    sections above ("optimizer.momentum_buffer", ... , "grad"), plus "__metadata__" (a dict of
    strings) and numbers or strings (epoch, best_fitness, updates, ...) that go into the metadata
    as text. That is what YOLOv5's train.py saves (last.pt, best.pt, the released yolov5s.pt, ...)
    and what the reverse direction writes, so safetensors -> .pt -> safetensors gives the same
    tensors and metadata back.
  Other entries (e.g. a torch optimizer's state_dict, which identifies parameters by index, not
  name, or YOLOv5's opt) are left out, with a note on stderr.

A class the pickle names (models.yolo.DetectionModel, models.common.Conv, torch.nn.modules.*,
argparse.Namespace, numpy scalars, or anything else, os.system included) is never imported:
a stand-in object takes its place and keeps the arguments and the state the pickle gives it, so
a pickled nn.Module becomes a tree of stand-ins whose "_parameters", "_buffers" and "_modules"
give the state dict as PyTorch's state_dict() would (parameters, persistent buffers, children).
Only these are real: collections.OrderedDict, set, frozenset, torch.Size, torch.device and
torch's tensor and storage rebuilders. The C reader (executor/io/yp_pt.h) reads .pt files the
same way, so `yoloplan train --weights yolov5s.pt` needs no conversion at all.

--yolov5-code DIR is still accepted (a YOLOv5 checkout put on the path and the file unpickled in
full, which runs code from it: only for files you trust) but is no longer needed.
"""
import argparse
import json
import pickle
import struct
import sys
import types
import zipfile

import torch

SECTIONS = ("ema", "optimizer.momentum_buffer", "optimizer.exp_avg", "optimizer.exp_avg_sq", "grad")

DTYPES = {
    torch.float32: "F32", torch.float16: "F16", torch.bfloat16: "BF16", torch.float64: "F64",
    torch.int64: "I64", torch.int32: "I32", torch.int16: "I16", torch.int8: "I8",
    torch.uint8: "U8", torch.bool: "BOOL",
}
TORCH_DTYPES = {v: k for k, v in DTYPES.items()}
MAX_HEADER = 100_000_000


class ConvertError(Exception):
    pass


def tensor_bytes(t):
    """The tensor's data, row major, little endian (the host's order on x86 and arm64)."""
    t = t.detach().cpu().contiguous().reshape(-1)
    return t.view(torch.uint8).numpy().tobytes() if t.numel() else b""


def write_safetensors(path, tensors, metadata):
    """tensors: list of (name, tensor) in file order; metadata: dict str -> str."""
    header, offset, blobs = {}, 0, []
    if metadata:
        header["__metadata__"] = {str(k): str(v) for k, v in metadata.items()}
    for name, t in tensors:
        if t.dtype not in DTYPES:
            raise ConvertError(f"{path}: tensor {name}: dtype {t.dtype} has no safetensors name")
        data = tensor_bytes(t)
        header[name] = {"dtype": DTYPES[t.dtype], "shape": list(t.shape), "data_offsets": [offset, offset + len(data)]}
        offset += len(data)
        blobs.append(data)
    text = json.dumps(header, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
    text += b" " * ((8 - len(text) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for b in blobs:
            f.write(b)


def read_safetensors(path):
    """(list of (name, tensor) in header order, metadata dict)."""
    with open(path, "rb") as f:
        raw = f.read()
    if len(raw) < 8:
        raise ConvertError(f"{path}: truncated: {len(raw)} bytes")
    (n,) = struct.unpack("<Q", raw[:8])
    if n > MAX_HEADER or 8 + n > len(raw):
        raise ConvertError(f"{path}: header length {n} is past the end of the file or above the limit")
    header = json.loads(raw[8:8 + n].decode("utf-8"))
    data = raw[8 + n:]
    metadata = header.pop("__metadata__", {}) or {}
    out = []
    for name, e in header.items():
        begin, end = e["data_offsets"]
        if e["dtype"] not in TORCH_DTYPES:
            raise ConvertError(f"{path}: tensor {name}: dtype {e['dtype']} has no torch type here")
        if not 0 <= begin <= end <= len(data):
            raise ConvertError(f"{path}: tensor {name}: data_offsets {e['data_offsets']} are out of range")
        dt = TORCH_DTYPES[e["dtype"]]
        if end == begin:
            t = torch.empty(e["shape"], dtype=dt)
        else:
            t = torch.frombuffer(bytearray(data[begin:end]), dtype=torch.uint8).view(dt).reshape(e["shape"])
        out.append((name, t))
    return out, metadata


class StandIn:
    """What the unpickler makes of a class or function it does not import: an object that keeps
    the arguments it was called with and the state BUILD gives it (and items set on it)."""

    name = "?"

    def __new__(cls, *args, **kwargs):
        obj = object.__new__(cls)
        obj.args, obj.state, obj.items = args, None, {}
        return obj

    def __init__(self, *args, **kwargs):
        pass

    def __setstate__(self, state):
        self.state = state

    def __setitem__(self, key, value):
        self.items[key] = value

    def append(self, value):
        pass

    def extend(self, values):
        pass


def module_state(v):
    """The BUILD state of stand-in v when it is a pickled nn.Module (a dict with the dicts
    _parameters, _buffers and _modules), else None."""
    if not isinstance(v, StandIn):
        return None
    st = v.state[0] if isinstance(v.state, tuple) and len(v.state) == 2 else v.state
    if isinstance(st, dict) and all(isinstance(st.get(k), dict) for k in ("_parameters", "_buffers", "_modules")):
        return st
    return None


def module_state_dict(v, prefix="", out=None, depth=0, visits=None):
    """PyTorch's state_dict() of the stand-in module v: its parameters, its buffers but the
    non-persistent ones (None skipped), then each child under "<name>."."""
    out = {} if out is None else out
    visits = [0] if visits is None else visits
    visits[0] += 1
    if depth > 64:
        raise ConvertError(f"modules nested deeper than 64 ({prefix}...)")
    if visits[0] > 1 << 20:  # a module shared many times over is walked once per path to it
        raise ConvertError("more than 2^20 modules to walk (modules shared many times over?)")
    st = module_state(v)
    skip = st.get("_non_persistent_buffers_set") or set()
    for group, d in (("parameter", st["_parameters"]), ("buffer", st["_buffers"])):
        for k, t in d.items():
            if t is None or (group == "buffer" and k in skip):
                continue
            if not torch.is_tensor(t):
                raise ConvertError(f"{group} {prefix}{k} is a {type(t).__name__}, not a tensor")
            out[prefix + k] = t
    for k, m in st["_modules"].items():
        if m is None:
            continue
        if module_state(m) is None:
            raise ConvertError(f"module {prefix}{k} is a {getattr(m, 'name', type(m).__name__)}, not a module")
        module_state_dict(m, f"{prefix}{k}.", out, depth + 1, visits)
    return out


def as_state_dict(v, path):
    """v as a state dict (name -> tensor), or None."""
    if module_state(v) is not None:
        try:
            return module_state_dict(v)
        except ConvertError as e:
            raise ConvertError(f"{path}: {e}") from None
    if hasattr(v, "state_dict") and callable(v.state_dict) and not isinstance(v, (dict, StandIn)):
        v = v.state_dict()
    if isinstance(v, dict) and v and all(isinstance(k, str) and torch.is_tensor(t) for k, t in v.items()):
        return v
    return None


def pt_to_tensors(obj, path):
    """The (name, tensor) list and metadata of a loaded .pt object."""
    sd = as_state_dict(obj, path)
    if sd is not None:
        return list(sd.items()), {}
    if not isinstance(obj, dict):
        what = obj.name if isinstance(obj, StandIn) else type(obj).__name__
        raise ConvertError(f"{path}: holds a {what}, not a state dict, a module or a dict of them")
    tensors, metadata = [], {}
    for key, v in obj.items():
        if key == "__metadata__" and isinstance(v, dict):
            metadata.update({str(k): str(x) for k, x in v.items()})
            continue
        section = as_state_dict(v, path) if v is not None else None
        if key == "model" and section is not None:
            tensors += list(section.items())
        elif key in SECTIONS and section is not None:
            tensors += [(f"{key}.{n}", t) for n, t in section.items()]
        elif isinstance(v, (int, float, str)) and not isinstance(v, bool):
            metadata.setdefault(str(key), str(v))
        elif key in ("model", "ema") + SECTIONS and v is not None:
            what = v.name if isinstance(v, StandIn) else type(v).__name__
            raise ConvertError(f"{path}: {key!r} is a {what}, neither a module nor a state dict")
        elif v is not None:
            what = v.name if isinstance(v, StandIn) else type(v).__name__
            print(f"{path}: entry {key!r} ({what}) is not converted", file=sys.stderr)
    if not tensors:
        raise ConvertError(f"{path}: no state dict found (keys: {', '.join(map(str, obj))})")
    return tensors, metadata


class _StandInUnpickler(pickle.Unpickler):
    """An unpickler that builds tensors, containers and plain values, and a StandIn subclass for
    every other class or function the pickle names (never imported, never called). torch's own
    weights_only=True refuses those instead (and, in Debian's torch 1.13, plain floats too)."""

    REAL = {("collections", "OrderedDict"), ("torch._utils", "_rebuild_tensor_v2"),
            ("torch._utils", "_rebuild_parameter"), ("torch", "Size"), ("torch", "device"),
            ("builtins", "set"), ("builtins", "frozenset"), ("__builtin__", "set"), ("__builtin__", "frozenset")}

    def find_class(self, module, name):
        if (module, name) in self.REAL:
            return super().find_class(module, name)
        return type(name, (StandIn,), {"name": f"{module}.{name}"})


def _load_stand_ins(path):
    """path unpickled by _StandInUnpickler. torch.load(pickle_module=...) cannot do it: torch 1.13
    replaces the module with pickle unless weights_only is set. So the zip archive (the format
    of torch.save since 1.6) is opened with torch's own reader and loader, where they exist;
    elsewhere (a torch whose internals differ) torch.load(weights_only=True) does what it can."""
    if not zipfile.is_zipfile(path):
        raise ConvertError(f"{path}: not a zip-format .pt (torch.save since 1.6); re-save it with a newer torch")
    module = types.SimpleNamespace(Unpickler=_StandInUnpickler, __name__="pickle")
    try:
        reader = torch._C.PyTorchFileReader(path)
        loader = torch.serialization._load
    except AttributeError:
        return torch.load(path, map_location="cpu", weights_only=True)
    return loader(reader, "cpu", module)


def load_pt(path, yolov5_code):
    if yolov5_code:
        sys.path.insert(0, yolov5_code)
        return torch.load(path, map_location="cpu")  # full unpickling: trusted files only
    try:
        return _load_stand_ins(path)
    except (pickle.UnpicklingError, EOFError, TypeError, AttributeError, RuntimeError) as e:
        raise ConvertError(f"{path}: cannot be unpickled ({str(e)[-160:]}); is it a file torch.save wrote?") from None


def tensors_to_pt(tensors, metadata):
    """The dict the reverse direction writes: "model" and the sections, plus "__metadata__"."""
    out = {"model": {}}
    for name, t in tensors:
        for s in SECTIONS:
            if name.startswith(s + "."):
                out.setdefault(s, {})[name[len(s) + 1:]] = t
                break
        else:
            out["model"][name] = t
    if metadata:
        out["__metadata__"] = dict(metadata)
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    ap.add_argument("input")
    ap.add_argument("output")
    ap.add_argument("--yolov5-code", metavar="DIR",
                    help="a YOLOv5 checkout, to unpickle with its real classes (runs code from the file; not needed)")
    a = ap.parse_args(argv)
    try:
        if a.input.endswith(".safetensors"):
            tensors, metadata = read_safetensors(a.input)
            torch.save(tensors_to_pt(tensors, metadata), a.output)
        else:
            tensors, metadata = pt_to_tensors(load_pt(a.input, a.yolov5_code), a.input)
            write_safetensors(a.output, tensors, metadata)
    except (ConvertError, OSError, ValueError, KeyError) as e:
        print(f"pt2safetensors: {e}", file=sys.stderr)
        return 2
    print(f"{a.input} -> {a.output}: {len(tensors)} tensors, {len(metadata)} metadata entries")
    return 0


if __name__ == "__main__":
    sys.exit(main())
