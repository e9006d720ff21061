#!/usr/bin/python3
"""Writes tests/data/pt/: PyTorch .pt files for the C .pt reader (executor/io/yp_pt.h; tests/executor/io/test_pt.c),
each written by torch.save (the zip format) and, where it holds weights, the safetensors of the state dict the
reader must find in it (scripts/pt2safetensors.py's writer), so the test needs no torch.

The models are bench/reference/yolov5.py's, their classes registered under Ultralytics' names
(models.yolo.DetectionModel, models.yolo.Detect, models.common.Conv, C3, Bottleneck, SPPF, Concat) so that the
pickles name the classes an Ultralytics checkpoint names, with one SiLU instance shared by every Conv
(Conv.default_act), the attributes Ultralytics keeps beside the modules (yaml, names, stride, grid, anchor_grid)
and Detect's non-persistent "stride" buffer:
  yolov5t.pt           a checkpoint as train.py leaves it after strip_optimizer: "model" the FP16 DetectionModel
                       of yolov5t (tests/data/yaml/good/yolov5t.yaml, nc 3), "ema", "optimizer", "updates" None,
                       epoch -1, "opt" a dict, "git" and "date";
  yolov5t.safetensors  its model.state_dict(): 349 tensors, FP16, num_batches_tracked I64, model.24.anchors;
  tiny_last.pt         a last.pt mid-training of the tiny test IR's model (tests/data/ir/tiny.json): "model" and
                       "ema" FP16 DetectionModels with different weights, an SGD state dict with momentum buffers,
                       best_fitness a numpy float64, "opt" an argparse.Namespace, updates 12;
  tiny_last.safetensors  the state dicts of its "model" (names as they are) and "ema" ("ema." + name);
  tiny_sd.pt           a plain FP32 state dict of the tiny model (torch.save(model.state_dict()));
  tiny_sd.safetensors  the same;
  tiny_module.pt       the tiny model itself, FP32 (torch.save(model));
  tiny_module_p4.pt    the same pickled with protocol 4 (FRAME, SHORT_BINUNICODE, STACK_GLOBAL, MEMOIZE);
  views.pt             a state dict of three views of one FP16 storage (storage offsets 8, 0 and 4: rows 2..5,
                       rows 0..1, row 1 of a 6x4 tensor) and a 0-d FP64 tensor;
  views.safetensors    the same tensors, each copied out on its own;
and files the reader must refuse in one line:
  bad_truncated.pt     tiny_last.pt cut after half its bytes (the zip's directory is gone);
  bad_opcode.pt        a data.pkl with an opcode pickle does not have (0xff);
  bad_huge_storage.pt  a storage record declaring 2^61 elements of a 16-byte archive record;
  bad_huge_memo.pt     LONG_BINPUT to memo slot 0xfffffff0;
  bad_huge_string.pt   BINUNICODE with a 0xffffffff-byte length;
  bad_os_system.pt     {"model": os.system("touch /tmp/yp_pt_os_system_ran")} as a REDUCE (never run: a stand-in);
  bad_noncontig.pt     a state dict whose tensor is a transpose (strides not row-major);
  bad_deep.pt          a module nested 100 deep (nn.Sequential in nn.Sequential ...);
  bad_legacy.pt        the tiny state dict in torch's legacy pre-1.6 format (_use_new_zipfile_serialization=False);
  bad_not_yolo.pt      a dict with neither "model" nor "ema" nor tensors;
  bad_dup_names.pt     a checkpoint whose "model" has a tensor "ema.w" and whose "ema" has "w": two "ema.w";
  bad_shared.pt        40 modules, each holding the next twice (2^40 paths to the last, one pickle entry each).
The hand-made ones are zips as torch.save lays them out (archive/data.pkl, archive/version, archive/data/<key>),
written with fixed timestamps. tests/fuzz/corpus/pt/ gets the .pt files under 6 KB and the tiny models' data.pkl
streams (the fuzz target reads an input that is not a zip as a bare pickle); ctest replays tests/data/pt/ as well.

Deterministic (torch.manual_seed(0)): every file but bad_legacy.pt (whose storage keys are addresses) comes out
byte for byte the same. Run: /usr/bin/python3 tests/ref/make_pt_fixtures.py (Debian's python3-torch).
"""

import argparse
import copy
import io
import os
import sys
import types
import zipfile

import numpy as np
import torch
import torch.nn as nn

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, "..", "..")
sys.path.insert(0, os.path.join(ROOT, "bench", "reference"))
sys.path.insert(0, os.path.join(ROOT, "scripts"))
import pt2safetensors  # noqa: E402
import yolov5  # noqa: E402

OUT = os.path.join(ROOT, "tests", "data", "pt")
CORPUS = os.path.join(ROOT, "tests", "fuzz", "corpus", "pt")
DATE = "2024-05-01T12:00:00.000000"


def register_ultralytics_names():
    """The reference classes pickled under Ultralytics' module and class names."""
    names = {"models.yolo": {"DetectionModel": yolov5.YOLOv5, "Detect": yolov5.Detect},
             "models.common": {"Conv": yolov5.Conv, "C3": yolov5.C3, "Bottleneck": yolov5.Bottleneck,
                               "SPPF": yolov5.SPPF, "Concat": yolov5.Concat}}
    sys.modules["models"] = types.ModuleType("models")
    for mod, classes in names.items():
        m = types.ModuleType(mod)
        for name, cls in classes.items():
            cls.__module__, cls.__qualname__, cls.__name__ = mod, name, name
            setattr(m, name, cls)
        sys.modules[mod] = m


def ultralytics_like(model, yaml):
    """model with one SiLU shared by every Conv and the plain attributes Ultralytics keeps."""
    act = nn.SiLU()
    for m in model.modules():
        if isinstance(m, yolov5.Conv):
            m.act = act
        if isinstance(m, yolov5.Detect):
            m.grid = [torch.empty(0) for _ in range(m.nl)]
            m.anchor_grid = [torch.empty(0) for _ in range(m.nl)]
    model.yaml = yaml
    model.names = {i: f"class{i}" for i in range(yaml["nc"])}
    model.stride = torch.tensor([8.0, 16.0, 32.0][: len(yaml["anchors"])])
    return model


def randomize(model, seed):
    """Every float state tensor drawn (so FP16 copies, BN statistics and the EMA differ from the defaults)."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for k, v in model.state_dict().items():
            if v.dtype.is_floating_point and not k.endswith("anchors"):
                v.copy_(torch.rand(v.shape, generator=g) * 0.5 + (0.5 if k.endswith("running_var") else -0.25))
    return model


def tiny_model():
    """tests/data/ir/tiny.json in PyTorch: Conv(3,4,3,2,1), Conv(4,4,1,1,0), Concat(0,1), Detect(nc 1, one anchor
    (4, 4) at stride 2, c_in 8)."""
    layers = [yolov5.Conv(3, 4, 3, 2, 1), yolov5.Conv(4, 4, 1, 1, 0), yolov5.Concat(1),
              yolov5.Detect(1, ((4, 4),), [8], (2,))]
    for i, (m, f) in enumerate(zip(layers, (-1, -1, (0, 1), (2,)))):
        m.f, m.i, m.type = f, i, type(m).__name__
    yaml = {"nc": 1, "depth_multiple": 1.0, "width_multiple": 1.0, "anchors": [[4, 4]]}
    return ultralytics_like(yolov5.YOLOv5(layers, {0, 1, 2}, "tiny", 1), yaml)


def frozen_half(model):
    m = copy.deepcopy(model).half()
    for p in m.parameters():
        p.requires_grad_(False)
    return m


def save_torch(obj, name, **kw):
    path = os.path.join(OUT, name)
    torch.save(obj, path, **kw)
    return path


def save_st(sd, name, prefix=""):
    pt2safetensors.write_safetensors(os.path.join(OUT, name), [(prefix + k, v) for k, v in sd.items()], {})


def zip_pt(name, pickle_bytes, records=()):
    """A zip laid out as torch.save's: archive/data.pkl, archive/version, archive/data/<key>."""
    path = os.path.join(OUT, name)
    with zipfile.ZipFile(path, "w", zipfile.ZIP_STORED) as z:
        for n, data in [("archive/data.pkl", pickle_bytes), ("archive/version", b"3\n")] + list(records):
            z.writestr(zipfile.ZipInfo(n, date_time=(1980, 1, 1, 0, 0, 0)), data)
    return path


def u32(n):
    return n.to_bytes(4, "little")


def ustr(s):
    b = s.encode()
    return b"X" + u32(len(b)) + b


def storage_tensor_pickle(numel_declared, shape, stride):
    """{"model.0.conv.weight": _rebuild_tensor_v2(storage '0' (FloatStorage, numel_declared), 0, shape, stride)}."""
    tup = lambda xs: b"(" + b"".join(b"J" + int(x).to_bytes(4, "little", signed=True) for x in xs) + b"t"
    pid = b"(" + ustr("storage") + b"ctorch\nFloatStorage\n" + ustr("0") + ustr("cpu")
    pid += b"\x8a\x08" + int(numel_declared).to_bytes(8, "little", signed=True) + b"tQ"
    tensor = b"ctorch._utils\n_rebuild_tensor_v2\n(" + pid + b"K\x00" + tup(shape) + tup(stride)
    tensor += b"\x89ccollections\nOrderedDict\n)RtR"
    return b"\x80\x02}" + ustr("model.0.conv.weight") + tensor + b"s."


def hostile():
    rec = [("archive/data/0", bytes(16))]
    zip_pt("bad_opcode.pt", b"\x80\x02}q\x00\xff.")
    zip_pt("bad_huge_storage.pt", storage_tensor_pickle(1 << 61, (4,), (1,)), rec)
    zip_pt("bad_huge_memo.pt", b"\x80\x02}r\xf0\xff\xff\xff.")
    zip_pt("bad_huge_string.pt", b"\x80\x02X\xff\xff\xff\xffabc.")
    cmd = "touch /tmp/yp_pt_os_system_ran"
    zip_pt("bad_os_system.pt", b"\x80\x02}" + ustr("model") + b"cposix\nsystem\n" + ustr(cmd) + b"\x85Rs.")
    w = torch.arange(12, dtype=torch.float32).reshape(3, 4)
    save_torch({"model.0.conv.weight": w.t()}, "bad_noncontig.pt")
    deep = nn.Sequential(nn.Conv2d(1, 1, 1))
    for _ in range(99):
        deep = nn.Sequential(deep)
    save_torch(deep, "bad_deep.pt")
    save_torch({"foo": 1, "bar": [1, 2]}, "bad_not_yolo.pt")
    save_torch({"model": {"ema.w": torch.zeros(2)}, "ema": {"w": torch.ones(2)}}, "bad_dup_names.pt")
    shared = nn.SiLU()  # no tensors: the walk, not the tensor cap, is what stops
    for _ in range(40):
        parent = nn.Module()
        parent.a, parent.b = shared, shared
        shared = parent
    save_torch(shared, "bad_shared.pt")
    with open(os.path.join(OUT, "tiny_last.pt"), "rb") as f:
        whole = f.read()
    with open(os.path.join(OUT, "bad_truncated.pt"), "wb") as f:
        f.write(whole[: len(whole) // 2])


def seed_corpus():
    os.makedirs(CORPUS, exist_ok=True)
    for name in sorted(os.listdir(OUT)):
        if name.endswith(".pt") and os.path.getsize(os.path.join(OUT, name)) < 6 * 1024:
            with open(os.path.join(OUT, name), "rb") as f, open(os.path.join(CORPUS, name), "wb") as g:
                g.write(f.read())
    for name in ("tiny_last.pt", "tiny_sd.pt", "tiny_module.pt", "tiny_module_p4.pt"):
        with zipfile.ZipFile(os.path.join(OUT, name)) as z:
            pkl = next(n for n in z.namelist() if n.endswith("/data.pkl"))
            with open(os.path.join(CORPUS, name[:-3] + ".pkl"), "wb") as g:
                g.write(z.read(pkl))


def main():
    torch.manual_seed(0)
    os.makedirs(OUT, exist_ok=True)
    register_ultralytics_names()

    yaml = {"nc": 3, "depth_multiple": 0.33, "width_multiple": 0.0625, "anchors": [list(a) for a in yolov5.ANCHORS]}
    t = randomize(ultralytics_like(yolov5.build("t", nc=3), yaml), 1)
    stripped = frozen_half(t)
    save_torch({"epoch": -1, "best_fitness": None, "model": stripped, "ema": None, "updates": None,
                "optimizer": None, "opt": {"weights": "yolov5t.pt", "imgsz": 64, "epochs": 3},
                "git": {"remote": None, "branch": None, "commit": None}, "date": DATE}, "yolov5t.pt")
    save_st(stripped.state_dict(), "yolov5t.safetensors")

    model = randomize(tiny_model(), 2)
    ema = randomize(copy.deepcopy(model), 3)
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.937, nesterov=True)
    for p in model.parameters():
        p.grad = torch.rand(p.shape)
    opt.step()
    ns = argparse.Namespace(weights="", cfg="tiny.yaml", epochs=10, batch_size=1, imgsz=64)
    save_torch({"epoch": 3, "best_fitness": np.float64(0.125), "model": frozen_half(model), "ema": frozen_half(ema),
                "updates": 12, "optimizer": opt.state_dict(), "opt": ns,
                "git": {"remote": "x", "branch": "main", "commit": "0" * 40}, "date": DATE}, "tiny_last.pt")
    last = dict(frozen_half(model).state_dict())
    last.update({"ema." + k: v for k, v in frozen_half(ema).state_dict().items()})
    save_st(last, "tiny_last.safetensors")
    save_torch(model.state_dict(), "tiny_sd.pt")
    save_st(model.state_dict(), "tiny_sd.safetensors")
    save_torch(model, "tiny_module.pt")
    save_torch(model, "tiny_module_p4.pt", pickle_protocol=4)
    save_torch(model.state_dict(), "bad_legacy.pt", _use_new_zipfile_serialization=False)
    base = torch.arange(24, dtype=torch.float16).reshape(6, 4) / 8
    views = {"x": base[2:], "y": base[:2], "z": base[1], "s": torch.tensor(0.25, dtype=torch.float64)}
    save_torch(views, "views.pt")
    save_st({k: v.clone() for k, v in views.items()}, "views.safetensors")
    hostile()
    seed_corpus()
    for name in sorted(os.listdir(OUT)):
        print(f"{name}: {os.path.getsize(os.path.join(OUT, name))} bytes")


if __name__ == "__main__":
    main()
