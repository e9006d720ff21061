#!/usr/bin/python3
"""zoo_params.py - the official parameter count of every model yaml under tests/data/zoo/ (and
models/*.yaml), computed by Ultralytics YOLOv5's own parse_model, written to
tests/data/zoo/params.tsv (`path<TAB>params`, paths relative to the repository root) for
tests/graph/test_zoo.c.

Needs a checkout of ultralytics/yolov5 (its models/ and utils/), which the repository does not
carry; its optional imports (cv2, pandas, requests, ultralytics, ...) are stubbed, because without
them models/common.py would try to pip-install ultralytics. Run with Debian's interpreter:
    /usr/bin/python3 tests/ref/zoo_params.py PATH_TO_YOLOV5_CHECKOUT
The yamls of old releases (tests/data/zoo/v*) are built by the checkout's current modules, as
`python train.py --cfg old.yaml` would build them today.
"""
import glob
import importlib.abc
import importlib.machinery
import os
import sys
import types

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))


class _Stub(types.ModuleType):
    """A module whose every attribute is a harmless callable stub."""

    __version__ = "0.0.0-stub"  # models/common.py pip-installs ultralytics when this is missing

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        return _Anything()


class _Anything:
    def __init__(self, *a, **k):
        pass

    def __call__(self, *a, **k):
        return _Anything()

    def __getattr__(self, name):
        return _Anything()

    def __iter__(self):
        return iter(())

    # version checks (packaging is stubbed too) pass: Debian's torch is new enough for what they guard
    def __ge__(self, other):
        return True

    __le__ = __gt__ = __lt__ = __ge__

    def __mro_entries__(self, bases):
        return (object,)


class _StubFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    STUBBED = ("cv2", "pandas", "requests", "ultralytics", "matplotlib", "seaborn", "thop", "pkg_resources",
               "tqdm", "psutil", "torchvision", "packaging", "PIL", "scipy", "IPython", "clearml", "comet_ml", "wandb", "git", "tensorboard")

    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in self.STUBBED:
            return importlib.machinery.ModuleSpec(name, self, is_package=True)
        return None

    def create_module(self, spec):
        m = _Stub(spec.name)
        m.__path__ = []
        return m

    def exec_module(self, module):
        pass


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: /usr/bin/python3 tests/ref/zoo_params.py PATH_TO_YOLOV5_CHECKOUT")
    sys.meta_path.insert(0, _StubFinder())
    os.environ["PIP_NO_INDEX"] = "1"  # whatever else tries to install something fails instead
    sys.path.insert(0, os.path.abspath(sys.argv[1]))
    os.environ.setdefault("YOLOv5_VERBOSE", "False")
    import logging

    logging.disable(logging.CRITICAL)
    import torch  # noqa: F401
    import math

    import models.yolo
    from models.yolo import DetectionModel

    # the one helper parse_model takes from the stubbed ultralytics package (ultralytics.utils.ops)
    models.yolo.make_divisible = lambda x, divisor: math.ceil(x / divisor) * divisor

    rows = []
    yamls = sorted(glob.glob(os.path.join(ROOT, "models", "*.yaml")))
    yamls += sorted(glob.glob(os.path.join(ROOT, "tests", "data", "zoo", "*", "*.yaml")))
    for y in yamls:
        rel = os.path.relpath(y, ROOT)
        if "/segment/" in rel:
            continue
        model = DetectionModel(y, ch=3, nc=None)
        n = sum(p.numel() for p in model.parameters())
        rows.append((rel, n))
        print(f"{rel}\t{n}", flush=True)
    with open(os.path.join(ROOT, "tests", "data", "zoo", "params.tsv"), "w") as f:
        f.write("# path\tparams (Ultralytics YOLOv5's parse_model; written by tests/ref/zoo_params.py)\n")
        for rel, n in rows:
            f.write(f"{rel}\t{n}\n")


if __name__ == "__main__":
    main()
