#!/usr/bin/env python3
"""Measures what planner/yp_torch_host.h estimates for Ultralytics train.py's host RAM, with
PyTorch's own DataLoader on this machine's CPU torch: the private memory of each forked loader
worker (its own pages: what the header calls YP_TORCH_HOST_WORKER_BYTES plus its working images),
and the resident size of a process that has imported torch, numpy and OpenCV (the CPU part of
YP_TORCH_HOST_MAIN_BYTES; the CUDA libraries' host side needs a GPU machine).

The dataset does what YOLOv5's training item does to memory: it reads four JPEGs with OpenCV,
resizes each to --img on its long side, pastes them into a 2s x 2s canvas filled with 114,
warps the canvas to s x s, and returns a CHW uint8 tensor; the loader is persistent (as
InfiniteDataLoader) with prefetch 2. Run: /usr/bin/python3 bench/torch_host_check.py
[--workers 4] [--batch 16] [--img 640] [--images 64]
"""
import argparse
import gc
import os
import re
import tempfile
import time

import cv2
import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset


def private_bytes(pid):
    """Private_Clean + Private_Dirty of a process (bytes): the pages only it holds."""
    total = 0
    with open(f"/proc/{pid}/smaps_rollup") as f:
        for line in f:
            m = re.match(r"(Private_Clean|Private_Dirty):\s+(\d+) kB", line)
            if m:
                total += int(m.group(2)) * 1024
    return total


def rss_bytes(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    return 0


class Mosaic(Dataset):
    def __init__(self, files, img, n_objects, rows):
        self.files, self.s = files, img
        # the dataset's per-image Python objects as YOLOv5's LoadImagesAndLabels holds them: a
        # label array, a path string, a shape and a segments list per image
        rng = np.random.default_rng(1)
        self.labels = [rng.random((rows, 5), dtype=np.float32) for _ in range(n_objects)]
        self.im_files = [f"/datasets/coco/images/train2017/{i:012d}.jpg" for i in range(n_objects)]
        self.shapes = np.full((n_objects, 2), 640, dtype=np.int64)
        self.segments = [[] for _ in range(n_objects)]
        self.touched = False

    def __len__(self):
        return 1 << 20

    def load(self, i):
        im = cv2.imread(self.files[i % len(self.files)])
        h0, w0 = im.shape[:2]
        r = self.s / max(h0, w0)
        return cv2.resize(im, (int(np.ceil(w0 * r)), int(np.ceil(h0 * r))), interpolation=cv2.INTER_LINEAR)

    def __getitem__(self, index):
        s = self.s
        if not self.touched:  # an epoch's worth of indexing: every image's objects read once
            self.touched = True
            n = sum(len(x) for x in self.labels) + sum(len(f) for f in self.im_files) + len(self.segments)
            gc.collect()  # the collector walks every container, as it does during a long run
            assert n > 0
        canvas = np.full((2 * s, 2 * s, 3), 114, dtype=np.uint8)
        for k in range(4):
            im = self.load(index * 4 + k)
            h, w = im.shape[:2]
            y, x = (k // 2) * s, (k % 2) * s
            canvas[y:y + h, x:x + w] = im[: min(h, s), : min(w, s)]
        m = np.array([[0.5, 0, 0], [0, 0.5, 0]], dtype=np.float64)
        out = cv2.warpAffine(canvas, m, (s, s), borderValue=(114, 114, 114))
        return torch.from_numpy(np.ascontiguousarray(out.transpose(2, 0, 1)))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--workers", type=int, default=4)
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--img", type=int, default=640)
    ap.add_argument("--images", type=int, default=64)
    ap.add_argument("--batches", type=int, default=20)
    ap.add_argument("--dataset-images", type=int, default=118287, help="per-image objects (COCO train2017)")
    ap.add_argument("--rows", type=int, default=7, help="label rows per image (COCO's mean 7.3)")
    a = ap.parse_args()
    main_rss = rss_bytes(os.getpid())
    with tempfile.TemporaryDirectory() as d:
        rng = np.random.default_rng(0)
        files = []
        for i in range(a.images):
            im = rng.integers(0, 255, (480, 640, 3), dtype=np.uint8)
            p = os.path.join(d, f"{i}.jpg")
            cv2.imwrite(p, im)
            files.append(p)
        ds = Mosaic(files, a.img, a.dataset_images, a.rows)
        objects_main = rss_bytes(os.getpid()) - main_rss
        loader = DataLoader(ds, batch_size=a.batch, num_workers=a.workers,
                            persistent_workers=True, prefetch_factor=2)
        it = iter(loader)
        for _ in range(a.batches):
            next(it)
        time.sleep(1.0)  # let the workers refill their queues
        pids = [w.pid for w in it._workers]
        priv = [private_bytes(p) for p in pids]
        s = a.img
        px = 3 * s * s
        work = 4 * px + 4 * (640 * 480 * 3) * (s / 640) ** 2 + px
        est = 300e6 + work
        print(f"loader workers: {a.workers}, batch {a.batch}, img {a.img} (torch {torch.__version__}, "
              f"OpenCV {cv2.__version__})")
        print(f"{'term':44s} {'measured':>12s} {'yoloplan':>12s}")
        print(f"{'a worker own pages (mean Private_*)':44s} {np.mean(priv) / 1e9:11.3f}G {est / 1e9:11.3f}G")
        print(f"{'  smallest / largest worker':44s} {min(priv) / 1e9:11.3f}G {max(priv) / 1e9:11.3f}G")
        print(f"{'main process RSS after import (no CUDA)':44s} {main_rss / 1e9:11.3f}G {'2.5G w/ CUDA':>12s}")
        print(f"{'the dataset objects in the main process':44s} {objects_main / 1e9:11.3f}G "
              f"({a.dataset_images} images, {objects_main / max(a.dataset_images, 1):.0f} B each)")
        del it, loader


if __name__ == "__main__":
    main()
