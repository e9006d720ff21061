#!/usr/bin/python3
"""Times the PyTorch/numpy reference of YOLOv5's validation metrics on the batch bench_metrics
saved (bench/bench_metrics.c --save FILE), side by side with bench_metrics' own figures.

    ./build/bench/bench_metrics --save /tmp/metrics_batch.bin
    /usr/bin/python3 bench/reference/metrics_bench.py /tmp/metrics_batch.bin [--reps 3]

The reference is tests/ref/make_metrics_fixture.py's: val.py's non_max_suppression,
process_batch and ap_per_class as YOLOv5 writes them. Debian has no torchvision, so the greedy
NMS there is torchvision's CPU kernel written as a Python loop over tensor ops: the "NMS" figure
is therefore split into val.py's candidate stage (PyTorch tensor code, as in YOLOv5) and that
loop (far slower than torchvision's C++ kernel; printed for completeness, not a fair comparison).
Matching + AP is val.py's own code path (PyTorch + numpy). Also checks that both sides agree
on the detection counts and on P, R, mAP50, mAP50-95 and fitness. Prints; exits 0 (1 when the
file cannot be read or the two sides disagree).
"""

import os
import struct
import sys
import time

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tests", "ref"))
import make_metrics_fixture as ref  # noqa: E402


def load(path):
    out, data = {}, open(path, "rb").read()
    o = 0
    while o < len(data):
        (n,) = struct.unpack_from("<I", data, o)
        name = data[o + 4 : o + 4 + n].decode()
        o += 4 + n
        (nd,) = struct.unpack_from("<I", data, o)
        shape = struct.unpack_from("<%dI" % nd, data, o + 4)
        o += 4 + 4 * nd
        count = int(np.prod(shape))
        out[name] = np.frombuffer(data, dtype=np.float32, count=count, offset=o).reshape(shape)
        o += 4 * count
    return out


def candidates(x, nc, conf_thres, max_nms):
    """val.py's NMS up to torchvision's call: the candidates, sorted, offset boxes."""
    x = x[x[..., 4] > conf_thres].clone()
    x[:, 5:] *= x[:, 4:5]
    box = ref.xywh2xyxy(x[:, :4])
    i, j = (x[:, 5:] > conf_thres).nonzero(as_tuple=False).T
    x = torch.cat((box[i], x[i, 5 + j, None], j[:, None].float()), 1)
    x = x[torch.sort(x[:, 4], descending=True, stable=True).indices[:max_nms]]
    return x, x[:, :4] + x[:, 5:6] * 7680


def main():
    if len(sys.argv) < 2:
        print(__doc__)
        return 2
    reps = int(sys.argv[sys.argv.index("--reps") + 1]) if "--reps" in sys.argv else 3
    torch.set_num_threads(1)
    d = load(sys.argv[1])
    images, rows, nc, img = (int(v) for v in d["cfg"][0])
    preds = [torch.from_numpy(d[f"pred/{i}"].copy()) for i in range(images)]
    labels = [torch.from_numpy(d[f"labels/{i}"].copy()) for i in range(images)]
    best_cand = best_loop = best_ap = float("inf")
    iouv = torch.linspace(0.5, 0.95, 10)
    for _ in range(reps):
        t0 = time.perf_counter()
        cands = [candidates(p, nc, 0.001, 30000) for p in preds]
        t1 = time.perf_counter()
        dets = []
        for x, boxes in cands:
            keep = ref.tv_nms(boxes, x[:, 4], 0.6)[:300]
            dets.append(x[keep])
        t2 = time.perf_counter()
        stats = [(ref.process_batch(det, lab, iouv), det[:, 4], det[:, 5], lab[:, 0]) for det, lab in zip(dets, labels)]
        stats = [torch.cat(x, 0).cpu().numpy() for x in zip(*stats)]
        a = ref.ap_per_class(*stats)
        t3 = time.perf_counter()
        best_cand, best_loop, best_ap = min(best_cand, t1 - t0), min(best_loop, t2 - t1), min(best_ap, t3 - t2)
    ap50, ap = a["ap"][:, 0], a["ap"].mean(1)
    theirs = [a["p"].mean(), a["r"].mean(), ap50.mean(), ap.mean(), 0.1 * ap50.mean() + 0.9 * ap.mean()]
    ours = d["ours/map"][0]
    ms = d["ours/ms"][0]
    counts_ok = all(len(det) == int(d[f"ndet/{i}"][0, 0]) for i, det in enumerate(dets))
    metrics_ok = bool(np.all(np.abs(np.array(theirs) - ours) < 1e-6))
    print(f"metrics_bench: {images} images of {img}x{img}, {rows} rows each, nc {nc} (best of {reps}, 1 thread)")
    print(f"  {'':28s} {'yoloplan':>12s} {'reference':>12s}  ratio")
    print(f"  {'NMS ms per image':28s} {ms[0]:12.2f} {best_cand / images * 1e3:12.2f}  "
          f"{best_cand / images * 1e3 / ms[0]:6.1f}x   (reference: val.py's candidate stage in PyTorch only; "
          f"its greedy loop, in Python here for want of torchvision, took {best_loop / images * 1e3:.0f} more)")
    print(f"  {'match + AP ms per batch':28s} {ms[1]:12.2f} {best_ap * 1e3:12.2f}  {best_ap * 1e3 / ms[1]:6.1f}x")
    print(f"  detections per image agree: {'yes' if counts_ok else 'NO'}; P R mAP50 mAP fitness agree to 1e-6: "
          f"{'yes' if metrics_ok else 'NO'} ({' '.join(f'{v:.4f}' for v in theirs)})")
    return 0 if counts_ok and metrics_ok else 1


if __name__ == "__main__":
    sys.exit(main())
