#!/usr/bin/python3
"""PyTorch's side of bench/cpu_vs_pytorch.sh and bench/gpu_check.sh: timed YOLOv5 training steps
on the CPU, or with ``--device cuda`` on the GPU.

The same model as yoloplan's (``yolov5.build``), in training mode, trained the way
Ultralytics' train.py does it, on random data:

* images ``torch.rand(batch, 3, img, img)`` (values in [0, 1]), a fresh batch every step;
  about 8 boxes per image (a random count in 6..10), each row (image, class, cx, cy, w, h)
  with cx, cy in [0.1, 0.9) and w, h in [0.02, 0.4), normalised;
* loss: ``loss.YoloLoss`` with train.py's gains (hyp.scratch-low, scaled for nc = 80,
  three levels and the image size);
* optimizer: SGD, lr 0.01, momentum 0.937, nesterov, with YOLOv5's three parameter groups
  (biases: no weight decay; BatchNorm weights: no weight decay; all other weights, i.e. the
  conv weights: weight decay 5e-4);
* one step = forward, loss, backward, ``clip_grad_norm_(max_norm=10)``, ``optimizer.step()``,
  ``optimizer.zero_grad()``; ``--warmup`` untimed steps, then ``--steps`` timed ones;
* ``torch.set_num_threads(--threads)`` (intra-op; inter-op is left at its default);
* ``--memory-format channels_last`` converts the model and each input batch to channels-last
  (NHWC), which lets oneDNN skip layout reorders; ``default`` keeps NCHW.

Prints one JSON object: model, batch, img, threads, memory_format, steps, warmup,
ms_per_step, images_per_s, peak_rss_bytes (``getrusage(RUSAGE_SELF).ru_maxrss * 1024`` after
the last step: the process's peak, libraries and interpreter included), last_loss (the loss
tensor of the last step, (lbox + lobj + lcls) * batch, the one YOLOv5 calls backward on and
what yoloplan's ``last_loss`` is; the data differ, so the two are not comparable), the
parameter-group sizes, the torch version; also, over the timed steps, the median and the
fastest step (ms_per_step_median, ms_per_step_min: on a shared virtual machine single steps
can take several times longer) and the minor page faults per step (PyTorch allocates each
step's tensors anew; large ones are mmap'ed, so their pages fault in every step).

yoloplan's step also updates a ModelEMA (decay 0.9999, tau 2000) after the optimizer;
``--ema`` adds the same update here (off by default: the step above is what is compared).

    /usr/bin/python3 bench/reference/train_step_bench.py --model yolov5s --steps 10
    /usr/bin/python3 bench/reference/train_step_bench.py --model n --memory-format channels_last

On the GPU (``--device cuda``) the step is train.py's under ``--amp``: ``torch.autocast`` fp16
around the forward and the loss, ``torch.cuda.amp.GradScaler`` (scale, backward, unscale_, clip,
step, update); the batch is made on the host as above and copied over each step, as yoloplan's
bench-step does; the timings synchronise the device. It adds max_memory_reserved_bytes and
max_memory_allocated_bytes (``torch.cuda``'s counters over the whole run) to the JSON.

    /usr/bin/python3 bench/reference/train_step_bench.py --device cuda --amp --memory-format channels_last \
        --model yolov5s --batch 64 --img 640 --steps 30 --threads 16

Run one model per process, so that the peak RSS is that model's.
"""

import argparse
import json
import math
import os
import resource
import statistics
import sys
import time

import torch
import torch.nn as nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import loss as yolo_loss  # noqa: E402
import yolov5  # noqa: E402

LR0 = 0.01
MOMENTUM = 0.937
WEIGHT_DECAY = 5e-4
MAX_GRAD_NORM = 10.0


def smart_optimizer(model):
    """YOLOv5's three parameter groups: g0 weights with decay, g1 BN weights, g2 biases."""
    norms = tuple(v for k, v in nn.__dict__.items() if "Norm" in k)
    g0, g1, g2 = [], [], []
    for module in model.modules():
        for name, p in module.named_parameters(recurse=False):
            if name == "bias":
                g2.append(p)
            elif name == "weight" and isinstance(module, norms):
                g1.append(p)
            else:
                g0.append(p)
    opt = torch.optim.SGD(g2, lr=LR0, momentum=MOMENTUM, nesterov=True)
    opt.add_param_group({"params": g0, "weight_decay": WEIGHT_DECAY})
    opt.add_param_group({"params": g1, "weight_decay": 0.0})
    return opt, (len(g0), len(g1), len(g2))


class ModelEMA:
    """Ultralytics' ModelEMA update: every floating state-dict entry v <- d v + (1 - d) w,
    d = decay (1 - exp(-updates / tau))."""

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


def label_rows(image, n, nc, gen):
    """n random label rows (image, class, cx, cy, w, h) of one image: cx, cy in [0.1, 0.9), w, h in
    [0.02, 0.4), normalised."""
    r = torch.empty(n, 6)
    r[:, 0] = image
    r[:, 1] = torch.randint(0, nc, (n,), generator=gen).float()
    r[:, 2:4] = torch.rand(n, 2, generator=gen) * 0.8 + 0.1
    r[:, 4:6] = torch.rand(n, 2, generator=gen) * 0.38 + 0.02
    return r


def random_batch(batch, img, nc, gen, memory_format):
    images = torch.rand(batch, 3, img, img, generator=gen)
    if memory_format is not None:
        images = images.contiguous(memory_format=memory_format)
    rows = [label_rows(i, int(torch.randint(6, 11, (1,), generator=gen)), nc, gen) for i in range(batch)]
    return images, torch.cat(rows)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", default="yolov5s", help="yolov5n, yolov5s, ... (or n, s, ...)")
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--img", type=int, default=320)
    ap.add_argument("--steps", type=int, default=10, help="timed steps")
    ap.add_argument("--warmup", type=int, default=2, help="untimed steps first")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--memory-format", choices=("default", "channels_last"), default="default")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--ema", action="store_true", help="also update a ModelEMA every step, as yoloplan does")
    ap.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    ap.add_argument("--amp", action="store_true", help="CUDA: autocast fp16 and GradScaler, as train.py")
    args = ap.parse_args()
    if args.amp and args.device != "cuda":
        ap.error("--amp needs --device cuda")
    dev = torch.device(args.device)
    cuda = dev.type == "cuda"
    if args.steps < 1 or args.warmup < 0 or args.batch < 1 or args.img % 32:
        ap.error("need --steps >= 1, --warmup >= 0, --batch >= 1 and --img a multiple of 32")

    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    gen = torch.Generator().manual_seed(args.seed + 1)

    nc = 80
    model = yolov5.build(args.model, nc=nc)
    model.train()
    model = model.to(dev)
    fmt = torch.channels_last if args.memory_format == "channels_last" else None
    if fmt is not None:
        model = model.to(memory_format=fmt)
    anchors = [[list(level[j:j + 2]) for j in range(0, len(level), 2)] for level in yolov5.ANCHORS]
    gains = yolo_loss.scaled_gains(yolo_loss.SCRATCH_LOW, nc, len(anchors), args.img)
    compute_loss = yolo_loss.YoloLoss(nc, anchors, list(yolov5.STRIDES), gains,
                                      anchor_t=yolo_loss.SCRATCH_LOW["anchor_t"]).to(dev)
    scaler = torch.cuda.amp.GradScaler(enabled=args.amp) if cuda else None
    optimizer, groups = smart_optimizer(model)
    params = [p for p in model.parameters() if p.requires_grad]
    ema = ModelEMA(model) if args.ema else None

    last = float("nan")
    t0 = None
    step_s = []
    for i in range(args.warmup + args.steps):
        if i == args.warmup:
            t0 = time.perf_counter()
            faults0 = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
        if cuda:
            torch.cuda.synchronize()
        ts = time.perf_counter()
        images, targets = random_batch(args.batch, args.img, nc, gen, fmt)
        if cuda:
            images, targets = images.to(dev), targets.to(dev)
            with torch.autocast("cuda", dtype=torch.float16, enabled=args.amp):
                preds = model(images)
                total, _parts = compute_loss(preds, targets)
            scaler.scale(total).backward()
            scaler.unscale_(optimizer)
            nn.utils.clip_grad_norm_(params, max_norm=MAX_GRAD_NORM)
            scaler.step(optimizer)
            scaler.update()
        else:
            preds = model(images)
            total, _parts = compute_loss(preds, targets)
            total.backward()
            nn.utils.clip_grad_norm_(params, max_norm=MAX_GRAD_NORM)
            optimizer.step()
        optimizer.zero_grad()
        if ema is not None:
            ema.update(model)
        last = total.item()  # waits for the step on the GPU
        if i >= args.warmup:
            step_s.append(time.perf_counter() - ts)
    elapsed = time.perf_counter() - t0
    ms = elapsed * 1e3 / args.steps
    usage = resource.getrusage(resource.RUSAGE_SELF)
    rss = usage.ru_maxrss * 1024
    extra = {}
    if cuda:
        extra = {"device": "cuda", "amp": args.amp, "gpu": torch.cuda.get_device_name(dev),
                 "max_memory_reserved_bytes": torch.cuda.max_memory_reserved(dev),
                 "max_memory_allocated_bytes": torch.cuda.max_memory_allocated(dev)}
    print(json.dumps({**extra,
        "model": model.name if hasattr(model, "name") else args.model,
        "batch": args.batch, "img": args.img, "threads": args.threads,
        "memory_format": args.memory_format, "ema": args.ema, "steps": args.steps, "warmup": args.warmup,
        "ms_per_step": ms, "images_per_s": args.batch * 1e3 / ms, "peak_rss_bytes": rss,
        "ms_per_step_median": statistics.median(step_s) * 1e3, "ms_per_step_min": min(step_s) * 1e3,
        "minor_faults_per_step": (usage.ru_minflt - faults0) / args.steps,
        "last_loss": last, "param_groups": {"decay": groups[0], "bn_weight": groups[1], "bias": groups[2]},
        "torch": torch.__version__,
    }))


if __name__ == "__main__":
    main()
