#!/usr/bin/python3
"""train_ref.py - YOLOv5 train.py's training loop in PyTorch, replayed on the exact batches of a
yoloplan run (bench/train_trace.c), for bench/train_vs_pytorch.sh.

    train_ref.py init  --data D.yaml [--model yolov5n] [--seed 0] --out W.safetensors
    train_ref.py train --weights W.safetensors --batches batches.bin --out ref.tsv
                       [--data D.yaml] [--model yolov5n] [--epochs E] [--threads 2]

``init`` builds the reference model (yolov5.build with the data's nc) after
``torch.manual_seed(seed)`` and writes its state dict (Ultralytics' names, safetensors, through
scripts/pt2safetensors.py's writer): the initial weights both sides start from.

``train`` loads those weights into a fresh yolov5.build model and runs train.py's loop (HEAD) on
the batches of batches.bin (its layout is documented in bench/train_trace.c), in its order:

* hyp.scratch-low; nbs 64; ``accumulate = max(round(64 / batch), 1)``;
  ``weight_decay *= batch * accumulate / 64``;
* smart_optimizer's groups: group 0 the biases (no decay, the optimizer's own), group 1 the other
  weights (conv weights: decay), group 2 the BatchNorm weights (no decay);
  ``torch.optim.SGD(lr=lr0, momentum=0.937, nesterov=True)``;
* LambdaLR with the linear lf(x) = (1 - x/epochs)(1 - lrf) + lrf, stepped after each epoch;
* warm-up for ni <= nw = max(round(warmup_epochs * nb), 100): accumulate
  ``max(1, round(interp(ni, [0, nw], [1, 64 / batch])))`` (numpy's round: half to even), group 0's lr
  from warmup_bias_lr and the others' from 0 to ``initial_lr * lf(epoch)``, momentum from
  warmup_momentum to momentum;
* per batch: ``imgs.float() / 255`` (NCHW), forward, ComputeLoss (bench/reference/loss.py, gains
  scaled as train.py does: box * 3/nl, cls * nc/80 * 3/nl, obj * (imgsz/640)^2 * 3/nl), backward of
  (lbox + lobj + lcls) * batch; when ``ni - last_opt_step >= accumulate``: clip_grad_norm_(10),
  step, zero_grad, ModelEMA update (decay 0.9999 (1 - exp(-updates / 2000))).

``--channels-last`` runs the same loop with the model and batches in channels_last (NHWC):
mathematically the same, rounded differently by other oneDNN kernels, so it shows how far PyTorch
drifts from its own NCHW run over the same steps (the floor any second implementation meets).
``--steps N`` replays only the first N micro-batches; ``--save FILE`` writes the final state dict,
the EMA's ("ema." + name) and the momentum buffers ("optimizer.momentum_buffer." + name), the
names of train_trace --save's checkpoint, to compare the two runs tensor by tensor.

Writes ref.tsv with bench/train_trace.c's losses.tsv columns (step, epoch, ni, box, obj, cls,
total, lr0, lr1, lr2, momentum, accumulate, opt_step, opt_steps, grad_norm) and prints one line
per optimizer step. ``--epochs`` defaults to the one batches.bin records (the yoloplan run's).
Runs on the CPU with Debian's torch (/usr/bin/python3).
"""

import argparse
import math
import os
import re
import struct
import sys

import numpy as np
import torch
import torch.nn as nn

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "..", "scripts"))
import loss as yolo_loss  # noqa: E402
import yolov5  # noqa: E402
from pt2safetensors import read_safetensors, write_safetensors  # noqa: E402

#: data/hyps/hyp.scratch-low.yaml (the optimizer and schedule part)
HYP = {"lr0": 0.01, "lrf": 0.01, "momentum": 0.937, "weight_decay": 0.0005, "warmup_epochs": 3.0,
       "warmup_momentum": 0.8, "warmup_bias_lr": 0.1}
NBS = 64
MAX_GRAD_NORM = 10.0


def data_nc(path):
    """nc of a YOLOv5 data.yaml (the `nc:` line)."""
    with open(path) as f:
        for line in f:
            m = re.match(r"\s*nc\s*:\s*(\d+)", line)
            if m:
                return int(m.group(1))
    raise SystemExit(f"train_ref.py: {path}: no nc line")


def read_batches(path):
    """(header dict, list of (epoch, index, uint8 images (n, S, S, 3), float32 labels (m, 6)))."""
    with open(path, "rb") as f:
        raw = f.read()
    if raw[:8] != b"YPBATCH1":
        raise SystemExit(f"train_ref.py: {path}: not a batches file (magic {raw[:8]!r})")
    n_batches, batch, imgsz, nb, epochs = struct.unpack_from("<5q", raw, 8)
    pos, out = 48, []
    for _ in range(n_batches):
        epoch, index, n, n_labels = struct.unpack_from("<4q", raw, pos)
        pos += 32
        pix = n * imgsz * imgsz * 3
        images = np.frombuffer(raw, np.uint8, pix, pos).reshape(n, imgsz, imgsz, 3)
        pos += pix
        labels = np.frombuffer(raw, "<f4", n_labels * 6, pos).reshape(n_labels, 6)
        pos += n_labels * 24
        out.append((epoch, index, images, labels))
    if pos != len(raw):
        raise SystemExit(f"train_ref.py: {path}: {len(raw) - pos} bytes after the last batch")
    return {"n_batches": n_batches, "batch": batch, "imgsz": imgsz, "nb": nb, "epochs": epochs}, out


def smart_optimizer(model, lr, momentum, decay):
    """utils/torch_utils.py smart_optimizer for SGD: g[0] weights with decay, g[1] normalisation
    weights, g[2] biases; the optimizer is built on g[2], so group 0 = biases, 1 = g[0], 2 = g[1]."""
    bn = tuple(v for k, v in nn.__dict__.items() if "Norm" in k)
    g = [], [], []
    for v in model.modules():
        for p_name, p in v.named_parameters(recurse=False):
            if p_name == "bias":
                g[2].append(p)
            elif p_name == "weight" and isinstance(v, bn):
                g[1].append(p)
            else:
                g[0].append(p)
    opt = torch.optim.SGD(g[2], lr=lr, momentum=momentum, nesterov=True)
    opt.add_param_group({"params": g[0], "weight_decay": decay})
    opt.add_param_group({"params": g[1], "weight_decay": 0.0})
    return opt


class ModelEMA:
    """utils/torch_utils.py ModelEMA: a copy updated v = d v + (1 - d) model_v per optimizer step
    (every floating state-dict entry), d = decay (1 - exp(-updates / tau)). It does not change
    the training losses; kept so that the loop is train.py's whole."""

    def __init__(self, model, decay=0.9999, tau=2000.0):
        self.shadow = {k: v.detach().clone() for k, v in model.state_dict().items() if v.dtype.is_floating_point}
        self.decay, self.tau, self.updates = decay, tau, 0

    @torch.no_grad()
    def update(self, model):
        self.updates += 1
        d = self.decay * (1 - math.exp(-self.updates / self.tau))
        msd = model.state_dict()
        for k, v in self.shadow.items():
            v.mul_(d).add_(msd[k].detach(), alpha=1 - d)


def cmd_init(a):
    nc = data_nc(a.data)
    torch.manual_seed(a.seed)
    model = yolov5.build(a.model, nc=nc)
    write_safetensors(a.out, list(model.state_dict().items()), {"format": "yoloplan-reference-init",
                                                                 "model": a.model, "nc": str(nc), "seed": str(a.seed)})
    print(f"train_ref.py: {a.model}, nc {nc}, seed {a.seed}: {len(model.state_dict())} tensors -> {a.out}")


def cmd_train(a):
    torch.set_num_threads(a.threads)
    head, batches = read_batches(a.batches)
    tensors, meta = read_safetensors(a.weights)
    nc = int(meta["nc"]) if "nc" in meta else data_nc(a.data)
    model_name = meta.get("model", a.model)
    model = yolov5.build(model_name, nc=nc)
    model.load_state_dict(dict(tensors), strict=True)
    model.train()
    fmt = torch.channels_last if a.channels_last else torch.contiguous_format
    model = model.to(memory_format=fmt)

    batch, imgsz, nb = head["batch"], head["imgsz"], head["nb"]
    epochs = a.epochs or head["epochs"]
    nw = max(round(HYP["warmup_epochs"] * nb), 100)
    accumulate = max(round(NBS / batch), 1)
    weight_decay = HYP["weight_decay"] * batch * accumulate / NBS
    optimizer = smart_optimizer(model, HYP["lr0"], HYP["momentum"], weight_decay)

    def lf(x):
        return (1 - x / epochs) * (1.0 - HYP["lrf"]) + HYP["lrf"]

    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lr_lambda=lf)
    ema = ModelEMA(model)
    anchors = [[list(level[j:j + 2]) for j in range(0, len(level), 2)] for level in yolov5.ANCHORS]
    gains = yolo_loss.scaled_gains(yolo_loss.SCRATCH_LOW, nc, len(anchors), imgsz)
    compute_loss = yolo_loss.YoloLoss(nc, anchors, list(yolov5.STRIDES), gains,
                                      anchor_t=yolo_loss.SCRATCH_LOW["anchor_t"])

    if a.steps:
        batches = batches[:a.steps]
    last_opt_step, steps, epoch_now = -1, 0, 0
    optimizer.zero_grad()
    rows = []
    for i, (epoch, index, images, labels) in enumerate(batches):
        while epoch_now < epoch:  # train.py's scheduler.step() after each epoch
            scheduler.step()
            epoch_now += 1
        ni = index + nb * epoch
        if ni != i:
            raise SystemExit(f"train_ref.py: batch {i} is epoch {epoch} index {index}: not a run from its start")
        if ni <= nw:
            xi = [0, nw]
            accumulate = max(1, np.interp(ni, xi, [1, NBS / batch]).round())
            for j, x in enumerate(optimizer.param_groups):
                x["lr"] = np.interp(ni, xi, [HYP["warmup_bias_lr"] if j == 0 else 0.0, x["initial_lr"] * lf(epoch)])
                if "momentum" in x:
                    x["momentum"] = np.interp(ni, xi, [HYP["warmup_momentum"], HYP["momentum"]])
        imgs = torch.from_numpy(images.copy()).permute(0, 3, 1, 2).contiguous(memory_format=fmt).float() / 255
        targets = torch.from_numpy(labels.copy())
        pred = model(imgs)
        loss, items = compute_loss(pred, targets)
        loss.backward()
        knobs = ([float(x["lr"]) for x in optimizer.param_groups], float(optimizer.param_groups[0]["momentum"]),
                 int(accumulate))
        stepped, norm = 0, 0.0
        if ni - last_opt_step >= accumulate:
            norm = float(nn.utils.clip_grad_norm_(model.parameters(), max_norm=MAX_GRAD_NORM))
            optimizer.step()
            optimizer.zero_grad()
            ema.update(model)
            last_opt_step, stepped = ni, 1
            steps += 1
        box, obj, cls = (float(v) for v in items)
        rows.append((i + 1, epoch, ni, box, obj, cls, box + obj + cls, *knobs[0], knobs[1], knobs[2], stepped, steps,
                     norm))
        if stepped and not a.quiet:
            print(f"  step {steps:4d} (batch {i + 1:4d}): loss {box + obj + cls:.6f} (box {box:.6f} obj {obj:.6f} "
                  f"cls {cls:.6f}) grad norm {norm:.4f}", flush=True)
    with open(a.out, "w") as f:
        f.write("step\tepoch\tni\tbox\tobj\tcls\ttotal\tlr0\tlr1\tlr2\tmomentum\taccumulate\topt_step\topt_steps\t"
                "grad_norm\n")
        for r in rows:
            f.write("%d\t%d\t%d\t%.9g\t%.9g\t%.9g\t%.9g\t%.12g\t%.12g\t%.12g\t%.12g\t%d\t%d\t%d\t%.9g\n" % r)
    if a.save:
        state = list(model.state_dict().items())
        state += [("ema." + k, v) for k, v in ema.shadow.items()]
        names = {id(p): n for n, p in model.named_parameters()}
        for group in optimizer.param_groups:
            for p in group["params"]:
                buf = optimizer.state.get(p, {}).get("momentum_buffer")
                if buf is not None:
                    state.append(("optimizer.momentum_buffer." + names[id(p)], buf))
        write_safetensors(a.save, state, {"format": "yoloplan-reference-state", "updates": str(steps)})
    print(f"train_ref.py: {len(rows)} micro-batches, {steps} optimizer steps -> {a.out}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("init", help="write the reference model's initial weights")
    p.add_argument("--data", required=True)
    p.add_argument("--model", default="yolov5n")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", required=True)
    p = sub.add_parser("train", help="replay train.py's loop on batches.bin")
    p.add_argument("--weights", required=True)
    p.add_argument("--batches", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--data", help="for nc when the weights do not record it")
    p.add_argument("--model", default="yolov5n", help="when the weights do not record it")
    p.add_argument("--epochs", type=int, default=0, help="train.py's --epochs (default: the batches file's)")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--steps", type=int, default=0, help="only the first N micro-batches of the file")
    p.add_argument("--save", help="also write the model, its EMA and SGD's momentum buffers (safetensors, "
                   "train_trace --save's names)")
    p.add_argument("--channels-last", action="store_true",
                   help="run the model in channels_last: the same arithmetic through other kernels, whose rounding "
                   "differs (a control: how far PyTorch drifts from itself)")
    p.add_argument("--quiet", action="store_true")
    a = ap.parse_args()
    cmd_init(a) if a.cmd == "init" else cmd_train(a)


if __name__ == "__main__":
    main()
