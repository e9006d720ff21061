#!/usr/bin/python3
"""Predicted against measured: what Ultralytics train.py's loop reserves on this GPU, beside what
``yoloplan --target pytorch`` says it will (the PyTorch target's check on a real card).

Per configuration (model, img, batch), each in a fresh process (the caching allocator starts empty,
as train.py's does), the reference YOLOv5 (bench/reference/yolov5.py, the same modules and saved
tensors as Ultralytics') is trained the way train.py trains it:

* setup: the model on the card (fp32); check_amp's two batch-1 inferences of a 640x480 image (fp32,
  then under autocast); the EMA (a deep copy, eval mode, fp32); ``model.half().float()`` (after
  AutoAnchor); GradScaler;
* training: per iteration a uint8 batch made on the host, ``.to(device).float() / 255`` (train.py's
  line), about ``labels_per_image`` label rows per image (yoloplan's assumption, from its JSON),
  forward and ComputeLoss (bench/reference/loss.py) under autocast fp16,
  ``scaler.scale(loss).backward()``, and every ``accumulate = max(round(64 / batch), 1)``
  iterations unscale_, clip_grad_norm_(10), scaler.step, scaler.update, zero_grad and the EMA
  update (train.py's rule, with its warm-up: accumulate grows from 1 over the first 100
  iterations, so the first ones all step); ``torch.cuda.memory_reserved() / 1e9`` after each iteration is the
  ``GPU_mem`` train.py prints;
* validation as val.run from train.py: the EMA model ``.half()``, batch 2x, no_grad, four batches
  at the rectangular shapes yoloplan assumes (the longest side its ``val_img``, the other 3/4,
  4/5, 7/8 and 1 of it), uint8 to fp16 / 255, Detect's decode, the loss on the raw outputs
  ``[x.float() for x in train_out]``, and NMS (torchvision's, when installed) on every box above
  conf 0.001, at most 30000; then ``model.float()``;
* a second epoch's iterations: GPU_mem from epoch 1.

Prints one row per configuration: yoloplan's GPU_mem (epoch 0, from epoch 1) and peak
memory_reserved beside the measured ones, with the errors; ``--json`` prints the rows as JSON.
Without CUDA (or with ``--dry-run``) it runs the smallest configuration's loop on the CPU, to show
that the script and yoloplan's JSON still fit together, and prints "-" for the measurements.

    /usr/bin/python3 bench/pytorch_mem_check.py --yoloplan build/yoloplan --gpu h200
    /usr/bin/python3 bench/pytorch_mem_check.py --configs yolov5s:640:16,yolov5s:640:64 --gpu a100
    /usr/bin/python3 bench/pytorch_mem_check.py --dry-run --yoloplan build/yoloplan

The GPU machine's build (bench/gpu_check.sh) has yoloplan-bench but no yoloplan (no Graphviz
there), so the predictions are made here first and carried over:

    /usr/bin/python3 bench/pytorch_mem_check.py --yoloplan build/yoloplan --gpu h200 \
        --write-predictions .gpudeps/torch_predictions.json
    python3 bench/pytorch_mem_check.py --predictions .gpudeps/torch_predictions.json   # on the card
"""

import argparse
import contextlib
import copy
import json
import math
import os
import subprocess
import sys

import torch
import torch.nn as nn

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "reference"))
import loss as yolo_loss  # noqa: E402
import yolov5  # noqa: E402
import train_step_bench  # noqa: E402
from train_step_bench import MAX_GRAD_NORM, smart_optimizer  # noqa: E402

DEFAULT_CONFIGS = "yolov5n:640:16,yolov5s:320:32,yolov5s:640:16,yolov5s:640:64,yolov5m:640:32"
NC = 80
CONF_THRES, MAX_NMS = 0.001, 30000
WARMUP_ITERS = 100  # train.py's nw = max(round(warmup_epochs * nb), 100): its least


class ModelEMA(train_step_bench.ModelEMA):
    """train.py's ModelEMA keeps a whole model, a deep copy in eval mode, which validation runs:
    train_step_bench's update applied to that copy's state-dict tensors (they share its storage;
    rebind() after a dtype round trip, which gives the module new tensors)."""

    def __init__(self, model, decay=0.9999, tau=2000.0):
        self.ema = copy.deepcopy(model).eval()
        for p in self.ema.parameters():
            p.requires_grad_(False)
        self.decay, self.tau, self.updates = decay, tau, 0
        self.rebind()

    def rebind(self):
        self.shadow = {k: v for k, v in self.ema.state_dict().items() if v.dtype.is_floating_point}


def labels(batch, per_image, gen):
    """About per_image label rows per image (train_step_bench's random rows)."""
    rows = []
    for i in range(batch):
        n = max(int(round(per_image + float(torch.rand(1, generator=gen)) - 0.5)), 0)
        rows.append(train_step_bench.label_rows(i, n, NC, gen))
    return torch.cat(rows)


def nms(pred):
    """val.py's candidates (obj and obj * cls above conf_thres, at most MAX_NMS) through
    torchvision's nms, boxes offset by class; skipped when torchvision is missing."""
    try:
        import torchvision
    except ImportError:
        return
    for x in pred:
        x = x[x[:, 4] > CONF_THRES]
        if not x.shape[0]:
            continue
        x = x.float()
        x[:, 5:] *= x[:, 4:5]
        box = torch.cat((x[:, :2] - x[:, 2:4] / 2, x[:, :2] + x[:, 2:4] / 2), 1)
        i, j = (x[:, 5:] > CONF_THRES).nonzero(as_tuple=False).T
        x = torch.cat((box[i], x[i, j + 5, None], j[:, None].float()), 1)
        x = x[x[:, 4].argsort(descending=True)[:MAX_NMS]]
        torchvision.ops.nms(x[:, :4] + x[:, 5:6] * 7680, x[:, 4], 0.6)


def run_one(model_name, img, batch, pred, dev, iters_per_epoch):
    """The loop above for one configuration; returns the measurements (bytes / GB)."""
    cuda = dev.type == "cuda"
    amp = cuda
    autocast = (lambda: torch.autocast("cuda", dtype=torch.float16)) if amp else contextlib.nullcontext
    gen = torch.Generator().manual_seed(0)
    model = yolov5.build(model_name, nc=NC).to(dev)
    anchors = [[list(level[j:j + 2]) for j in range(0, len(level), 2)] for level in yolov5.ANCHORS]
    gains = yolo_loss.scaled_gains(yolo_loss.SCRATCH_LOW, NC, len(anchors), img)
    compute_loss = yolo_loss.YoloLoss(NC, anchors, list(yolov5.STRIDES), gains,
                                      anchor_t=yolo_loss.SCRATCH_LOW["anchor_t"]).to(dev)
    # check_amp: AutoShape's batch-1 inference of a 640x480 image, fp32 then under autocast
    model.eval()
    with torch.no_grad():
        im = torch.zeros(1, 3, 480, 640, device=dev)
        model(im)
        with autocast():
            model(im)
    model.train()
    ema = ModelEMA(model)
    model.half().float()  # train.py after AutoAnchor: "pre-reduce anchor precision"
    scaler = torch.cuda.amp.GradScaler(enabled=amp) if cuda else None
    optimizer, _ = smart_optimizer(model)
    params = [p for p in model.parameters() if p.requires_grad]
    accumulate = max(round(64 / batch), 1)
    reserved = (lambda: torch.cuda.memory_reserved(dev)) if cuda else (lambda: 0)
    lpi, vlpi = pred["labels_per_image"], pred["val_labels_per_image"]
    state = {"ni": 0, "last_opt_step": -1}

    def epoch():
        gpu_mem = 0
        for _ in range(iters_per_epoch):
            imgs = torch.randint(0, 256, (batch, 3, img, img), dtype=torch.uint8, generator=gen)
            targets = labels(batch, lpi, gen)
            imgs = imgs.to(dev, non_blocking=True).float() / 255
            with autocast():
                out = model(imgs)
                loss, _ = compute_loss(out, targets.to(dev))
            if cuda:
                scaler.scale(loss).backward()
            else:
                loss.backward()
            ni = state["ni"]
            # train.py's warm-up: accumulate rises from 1 to 64 / batch over nw >= 100 iterations
            acc = max(1, round(1 + (accumulate - 1) * min(ni / WARMUP_ITERS, 1.0)))
            if ni - state["last_opt_step"] >= acc:
                if cuda:
                    scaler.unscale_(optimizer)
                nn.utils.clip_grad_norm_(params, max_norm=MAX_GRAD_NORM)
                if cuda:
                    scaler.step(optimizer)
                    scaler.update()
                else:
                    optimizer.step()
                optimizer.zero_grad()
                ema.update(model)
                state["last_opt_step"] = ni
            state["ni"] = ni + 1
            gpu_mem = max(gpu_mem, reserved())
        return gpu_mem

    def validate():
        m = ema.ema
        if amp:
            m.half()
        side = pred["val_img"]
        with torch.no_grad():
            for frac in (0.75, 0.8, 0.875, 1.0):
                other = max(int(math.ceil(side * frac / 32)) * 32, 32)
                ims = torch.randint(0, 256, (2 * batch, 3, other, side), dtype=torch.uint8, generator=gen).to(dev)
                ims = (ims.half() if amp else ims.float()) / 255
                targets = labels(2 * batch, vlpi, gen).to(dev)
                boxes, train_out = m(ims)
                compute_loss([x.float() for x in train_out], targets)
                nms(boxes)
        m.float()
        ema.rebind()

    e0 = epoch()
    validate()
    e1 = epoch()
    return {"gpu_mem_epoch0": e0, "gpu_mem_later": e1,
            "max_reserved": torch.cuda.max_memory_reserved(dev) if cuda else 0,
            "max_allocated": torch.cuda.max_memory_allocated(dev) if cuda else 0}


def predict(yoloplan, gpu, model_name, img, batch):
    cmd = [yoloplan, "--gpu", gpu, "--target", "pytorch", "--model", model_name, "--img", str(img),
           "--batch", str(batch), "--json"]
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode:
        sys.exit(f"pytorch_mem_check.py: {' '.join(cmd)} failed: {p.stderr.strip()}")
    d = json.loads(p.stdout)
    need = d["whatif"]["need"]
    return {"gpu_mem_epoch0": need["gpu_mem_epoch0_gb"] * 1e9, "gpu_mem_later": need["gpu_mem_gb"] * 1e9,
            "max_reserved": need["peak_reserved_bytes"], "peak_at": need["peak_at"], "oom": need["oom"],
            "val_img": need["val_img"], "labels_per_image": d["config"]["labels_per_image"],
            "val_labels_per_image": d["config"]["val_labels_per_image"]}


def git_commit():
    here = os.path.dirname(os.path.abspath(__file__))
    p = subprocess.run(["git", "-C", here, "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    return p.stdout.strip() if p.returncode == 0 else "unknown"


def parse_configs(text, ap):
    out = []
    for item in text.split(","):
        try:
            m, img, b = item.split(":")
            out.append((m if m.startswith("yolov5") else "yolov5" + m, int(img), int(b)))
        except ValueError:
            ap.error(f"--configs: {item!r} is not MODEL:IMG:BATCH (e.g. yolov5s:640:16)")
        if out[-1][1] % 32 or out[-1][2] < 1:
            ap.error(f"--configs: {item!r}: IMG must be a multiple of 32 and BATCH at least 1")
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--yoloplan", default="build/yoloplan", help="the yoloplan binary (default build/yoloplan)")
    ap.add_argument("--gpu", default="h200", help="yoloplan's --gpu for this card (default h200)")
    ap.add_argument("--configs", default=DEFAULT_CONFIGS, help="MODEL:IMG:BATCH,... (default %(default)s)")
    ap.add_argument("--iters", type=int, default=0,
                    help="iterations per epoch (default: 2 x accumulate + 1, as many as yoloplan replays and more)")
    ap.add_argument("--write-predictions", metavar="FILE",
                    help="only ask yoloplan for the configurations' predictions and write them to FILE (JSON)")
    ap.add_argument("--predictions", metavar="FILE",
                    help="read the predictions from FILE (--write-predictions) instead of running yoloplan: "
                         "the GPU machine's build has no yoloplan, only yoloplan-bench")
    ap.add_argument("--dry-run", action="store_true", help="the loop on the CPU at 64 px, batch 2, no measurement")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--one", help=argparse.SUPPRESS)  # internal: MODEL:IMG:BATCH in this process
    args = ap.parse_args()
    if args.iters < 0:
        ap.error("--iters must be >= 0")
    cuda = torch.cuda.is_available() and not args.dry_run
    if args.one:
        (m, img, b), = parse_configs(args.one, ap)
        pred = json.loads(sys.stdin.read())
        iters = args.iters or (2 if args.dry_run else 2 * max(round(64 / b), 1) + 1)
        torch.manual_seed(0)
        got = run_one(m, img, b, pred, torch.device("cuda" if cuda else "cpu"), iters)
        print(json.dumps(got))
        return
    if args.write_predictions:
        configs = parse_configs(args.configs, ap)
        preds = {f"{m}:{img}:{b}": predict(args.yoloplan, args.gpu, m, img, b) for m, img, b in configs}
        with open(args.write_predictions, "w") as f:
            json.dump({"gpu": args.gpu, "commit": git_commit(), "predictions": preds}, f, indent=1)
        return
    stored = None
    if args.predictions:
        try:
            with open(args.predictions) as f:
                stored = json.load(f)
        except (OSError, ValueError) as e:
            sys.exit(f"pytorch_mem_check.py: {args.predictions}: {e} (write it with --write-predictions)")
        args.gpu = stored["gpu"]
    configs = [("yolov5n", 64, 2)] if not cuda else parse_configs(args.configs, ap)
    if not cuda:
        print("pytorch_mem_check.py: no CUDA (or --dry-run): the loop runs once on the CPU at yolov5n 64 px "
              "batch 2, without measurements", file=sys.stderr)
    rows = []
    for m, img, b in configs:
        key = f"{m}:{img}:{b}"
        if stored is None:
            pred = predict(args.yoloplan, args.gpu, m, img, b)
        elif key in stored["predictions"]:
            pred = stored["predictions"][key]
        else:
            sys.exit(f"pytorch_mem_check.py: {args.predictions} has no prediction for {key}")
        cmd = [sys.executable, os.path.abspath(__file__), "--one", f"{m}:{img}:{b}", "--iters", str(args.iters)]
        if not cuda:
            cmd.append("--dry-run")
        p = subprocess.run(cmd, input=json.dumps(pred), capture_output=True, text=True)
        got, note = None, ""
        if p.returncode == 0:
            got = json.loads(p.stdout.strip().splitlines()[-1])
        else:
            tail = p.stderr.strip().splitlines()
            note = "out of memory" if "out of memory" in p.stderr else (tail[-1] if tail else f"rc {p.returncode}")
        rows.append({"model": m, "img": img, "batch": b, "predicted": pred, "measured": got if cuda else None,
                     "note": note})
    if args.json:
        print(json.dumps(rows, indent=1))
    else:
        gpu_name = torch.cuda.get_device_name(0) if cuda else "none"
        src = f", predictions of commit {stored['commit']}" if stored else ""
        print(f"| {gpu_name} (yoloplan --gpu {args.gpu}{src}) | GPU_mem epoch 0: predicted / measured (GB) | error"
              " | from epoch 1 | error | max_memory_reserved | error | predicted peak in |")
        print("| --- |" + " --- |" * 7)
        for r in rows:
            pr, me = r["predicted"], r["measured"]
            cells = []
            for key in ("gpu_mem_epoch0", "gpu_mem_later", "max_reserved"):
                if me:
                    err = (pr[key] - me[key]) / me[key] if me[key] else float("nan")
                    cells += [f"{pr[key] / 1e9:.3f} / {me[key] / 1e9:.3f}", f"{100 * err:+.1f}%"]
                else:
                    cells += [f"{pr[key] / 1e9:.3f} / -", "-"]
            print(f"| {r['model']} {r['img']} b{r['batch']} | " + " | ".join(cells) +
                  f" | {pr['peak_at']}{' (predicted OOM)' if pr['oom'] else ''}{'; ' + r['note'] if r['note'] else ''} |")
    if any(r["note"] for r in rows) and not cuda:
        sys.exit(1)


if __name__ == "__main__":
    main()
