#!/usr/bin/python3
"""The Python + OpenCV reference of yoloplan's training loader: YOLOv5's
LoadImagesAndLabels.__getitem__ with augmentation (utils/dataloaders.py, utils/augmentations.py),
written out here as Ultralytics writes it, on a torch DataLoader with worker processes, timed in
images/s. bench/loader_vs_opencv.sh sets it beside build/bench/loader_rate on the same images.

    /usr/bin/python3 bench/reference/loader_ref.py --data D.yaml [--img 640] [--batch 16]
        [--epochs 3] [--workers 2] [--seed 0]

Per item, as YOLOv5 with hyp.scratch-low and no albumentations installed: cv2.imread (BGR) and
load_image's resize (long side = img, ceil of each side, INTER_LINEAR when augmenting), for every
one of load_mosaic's four images (the index + 3 random.choices partners, shuffled) on the 2*img
canvas filled with 114; random_perspective (degrees 0, translate 0.1, scale 0.5, shear 0,
perspective 0; cv2.warpAffine, borderValue 114) with its label transform and box_candidates;
xyxy2xywhn; augment_hsv (cvtColor BGR2HSV, cv2.LUT per channel, HSV2BGR); flipud 0, fliplr 0.5;
HWC BGR -> CHW RGB, contiguous; collate_fn stacks the uint8 images and concatenates the labels.
No image is cached: each is read and decoded each time it is used, as yoloplan's loader does.

Loader: torch.utils.data.DataLoader(num_workers=--workers, batch_size=--batch, drop_last), the
index order one permutation per epoch and a single iterator over all epochs, so the workers start
once (YOLOv5's InfiniteDataLoader); prefetch_factor 2 (torch's default, yoloplan's prefetch).
pin_memory off: there is no GPU to pin for. Without torch, a multiprocessing Pool of --workers
processes each building whole batches, in order (imap); the output says which ran. Threads: OpenCV
set to 0 threads (cv2.setNumThreads(0), as YOLOv5's utils/general.py does) in the parent and
each worker, torch to 1 per worker (DataLoader does it), OMP_NUM_THREADS=1 expected from the caller.

Timing as loader_rate: the first --workers batches (one per worker) are the warm-up; the rate is
the images of the later batches over the time from the last warm-up batch's arrival to the last
batch's. Prints a human line and a "loader_ref workers W images N seconds T rate R warmup_s F
via V" line. Exit 0; 1 when the data cannot be read.
"""

import argparse
import glob
import math
import os
import random
import sys
import time

import cv2
import numpy as np

try:
    import torch
except ImportError:  # the Pool fallback
    torch = None

HYP = dict(hsv_h=0.015, hsv_s=0.7, hsv_v=0.4, degrees=0.0, translate=0.1, scale=0.5, shear=0.0,
           perspective=0.0, flipud=0.0, fliplr=0.5, mosaic=1.0, mixup=0.0, copy_paste=0.0)
IMG_FORMATS = ("bmp", "dng", "jpeg", "jpg", "mpo", "png", "tif", "tiff", "webp", "pfm")


# ---- the dataset's files (data.yaml: path + train folder, labels beside images/ -> labels/)

def read_data_yaml(path):
    keys = {}
    for line in open(path):
        line = line.split("#", 1)[0]
        if ":" in line:
            k, v = line.split(":", 1)
            keys[k.strip()] = v.strip().strip("\"'")
    root = keys.get("path", "") or os.path.dirname(os.path.abspath(path))
    if not os.path.isabs(root):
        root = os.path.join(os.path.dirname(os.path.abspath(path)), root)
    return os.path.join(root, keys["train"])


def img2label_path(p):
    sa, sb = os.sep + "images" + os.sep, os.sep + "labels" + os.sep
    return sb.join(p.rsplit(sa, 1)).rsplit(".", 1)[0] + ".txt"


def load_labels(lb_file):
    if not os.path.isfile(lb_file):
        return np.zeros((0, 5), dtype=np.float32)
    rows = [x.split() for x in open(lb_file).read().strip().splitlines() if len(x)]
    lb = np.array(rows, dtype=np.float32).reshape(-1, 5)
    _, i = np.unique(lb, axis=0, return_index=True)  # duplicate rows removed, as verify_image_label
    return lb[np.sort(i)]


# ---- utils/general.py

def xywhn2xyxy(x, w=640, h=640, padw=0, padh=0):
    y = np.copy(x)
    y[:, 0] = w * (x[:, 0] - x[:, 2] / 2) + padw
    y[:, 1] = h * (x[:, 1] - x[:, 3] / 2) + padh
    y[:, 2] = w * (x[:, 0] + x[:, 2] / 2) + padw
    y[:, 3] = h * (x[:, 1] + x[:, 3] / 2) + padh
    return y


def clip_boxes(boxes, shape):
    boxes[:, [0, 2]] = boxes[:, [0, 2]].clip(0, shape[1])
    boxes[:, [1, 3]] = boxes[:, [1, 3]].clip(0, shape[0])


def xyxy2xywhn(x, w=640, h=640, clip=False, eps=0.0):
    if clip:
        clip_boxes(x, (h - eps, w - eps))
    y = np.copy(x)
    y[:, 0] = ((x[:, 0] + x[:, 2]) / 2) / w
    y[:, 1] = ((x[:, 1] + x[:, 3]) / 2) / h
    y[:, 2] = (x[:, 2] - x[:, 0]) / w
    y[:, 3] = (x[:, 3] - x[:, 1]) / h
    return y


# ---- utils/augmentations.py

def augment_hsv(im, hgain=0.5, sgain=0.5, vgain=0.5):
    if hgain or sgain or vgain:
        r = np.random.uniform(-1, 1, 3) * [hgain, sgain, vgain] + 1
        hue, sat, val = cv2.split(cv2.cvtColor(im, cv2.COLOR_BGR2HSV))
        dtype = im.dtype
        x = np.arange(0, 256, dtype=r.dtype)
        lut_hue = ((x * r[0]) % 180).astype(dtype)
        lut_sat = np.clip(x * r[1], 0, 255).astype(dtype)
        lut_val = np.clip(x * r[2], 0, 255).astype(dtype)
        im_hsv = cv2.merge((cv2.LUT(hue, lut_hue), cv2.LUT(sat, lut_sat), cv2.LUT(val, lut_val)))
        cv2.cvtColor(im_hsv, cv2.COLOR_HSV2BGR, dst=im)


def box_candidates(box1, box2, wh_thr=2, ar_thr=100, area_thr=0.1, eps=1e-16):
    w1, h1 = box1[2] - box1[0], box1[3] - box1[1]
    w2, h2 = box2[2] - box2[0], box2[3] - box2[1]
    ar = np.maximum(w2 / (h2 + eps), h2 / (w2 + eps))
    return (w2 > wh_thr) & (h2 > wh_thr) & (w2 * h2 / (w1 * h1 + eps) > area_thr) & (ar < ar_thr)


def random_perspective(im, targets=(), degrees=10, translate=0.1, scale=0.1, shear=10, perspective=0.0,
                       border=(0, 0)):
    height = im.shape[0] + border[0] * 2
    width = im.shape[1] + border[1] * 2
    C = np.eye(3)
    C[0, 2] = -im.shape[1] / 2
    C[1, 2] = -im.shape[0] / 2
    P = np.eye(3)
    P[2, 0] = random.uniform(-perspective, perspective)
    P[2, 1] = random.uniform(-perspective, perspective)
    R = np.eye(3)
    a = random.uniform(-degrees, degrees)
    s = random.uniform(1 - scale, 1 + scale)
    R[:2] = cv2.getRotationMatrix2D(angle=a, center=(0, 0), scale=s)
    S = np.eye(3)
    S[0, 1] = math.tan(random.uniform(-shear, shear) * math.pi / 180)
    S[1, 0] = math.tan(random.uniform(-shear, shear) * math.pi / 180)
    T = np.eye(3)
    T[0, 2] = random.uniform(0.5 - translate, 0.5 + translate) * width
    T[1, 2] = random.uniform(0.5 - translate, 0.5 + translate) * height
    M = T @ S @ R @ P @ C
    if (border[0] != 0) or (border[1] != 0) or (M != np.eye(3)).any():
        if perspective:
            im = cv2.warpPerspective(im, M, dsize=(width, height), borderValue=(114, 114, 114))
        else:
            im = cv2.warpAffine(im, M[:2], dsize=(width, height), borderValue=(114, 114, 114))
    n = len(targets)
    if n:
        xy = np.ones((n * 4, 3))
        xy[:, :2] = targets[:, [1, 2, 3, 4, 1, 4, 3, 2]].reshape(n * 4, 2)
        xy = xy @ M.T
        xy = (xy[:, :2] / xy[:, 2:3] if perspective else xy[:, :2]).reshape(n, 8)
        x = xy[:, [0, 2, 4, 6]]
        y = xy[:, [1, 3, 5, 7]]
        new = np.concatenate((x.min(1), y.min(1), x.max(1), y.max(1))).reshape(4, n).T
        new[:, [0, 2]] = new[:, [0, 2]].clip(0, width)
        new[:, [1, 3]] = new[:, [1, 3]].clip(0, height)
        i = box_candidates(box1=targets[:, 1:5].T * s, box2=new.T, area_thr=0.10)
        targets = targets[i]
        targets[:, 1:5] = new[i]
    return im, targets


# ---- utils/dataloaders.py LoadImagesAndLabels (training, augment on, rect off)

class LoadImagesAndLabels:
    def __init__(self, folder, img_size, hyp):
        files = sorted(glob.glob(os.path.join(folder, "**", "*.*"), recursive=True))
        self.im_files = [f for f in files if f.split(".")[-1].lower() in IMG_FORMATS]
        if not self.im_files:
            raise FileNotFoundError(f"{folder}: no images")
        self.labels = [load_labels(img2label_path(f)) for f in self.im_files]
        self.img_size, self.hyp, self.augment, self.mosaic = img_size, hyp, True, True
        self.mosaic_border = [-img_size // 2, -img_size // 2]
        self.indices = range(len(self.im_files))

    def __len__(self):
        return len(self.im_files)

    def __getitem__(self, index):
        hyp = self.hyp
        mosaic = self.mosaic and random.random() < hyp["mosaic"]
        assert mosaic, "the benchmark runs hyp.scratch-low's mosaic 1.0"
        img, labels = self.load_mosaic(index)
        nl = len(labels)
        if nl:
            labels[:, 1:5] = xyxy2xywhn(labels[:, 1:5], w=img.shape[1], h=img.shape[0], clip=True, eps=1e-3)
        augment_hsv(img, hgain=hyp["hsv_h"], sgain=hyp["hsv_s"], vgain=hyp["hsv_v"])
        if random.random() < hyp["flipud"]:
            img = np.flipud(img)
            if nl:
                labels[:, 2] = 1 - labels[:, 2]
        if random.random() < hyp["fliplr"]:
            img = np.fliplr(img)
            if nl:
                labels[:, 1] = 1 - labels[:, 1]
        labels_out = np.zeros((nl, 6), dtype=np.float32)
        if nl:
            labels_out[:, 1:] = labels
        img = img.transpose((2, 0, 1))[::-1]  # HWC to CHW, BGR to RGB
        img = np.ascontiguousarray(img)
        if torch is not None:
            return torch.from_numpy(img), torch.from_numpy(labels_out)
        return img, labels_out

    def load_image(self, i):
        f = self.im_files[i]
        im = cv2.imread(f)  # BGR
        assert im is not None, f"Image Not Found {f}"
        h0, w0 = im.shape[:2]
        r = self.img_size / max(h0, w0)
        if r != 1:
            interp = cv2.INTER_LINEAR if (self.augment or r > 1) else cv2.INTER_AREA
            im = cv2.resize(im, (math.ceil(w0 * r), math.ceil(h0 * r)), interpolation=interp)
        return im, (h0, w0), im.shape[:2]

    def load_mosaic(self, index):
        labels4 = []
        s = self.img_size
        yc, xc = (int(random.uniform(-x, 2 * s + x)) for x in self.mosaic_border)
        indices = [index] + random.choices(self.indices, k=3)
        random.shuffle(indices)
        for i, index in enumerate(indices):
            img, _, (h, w) = self.load_image(index)
            if i == 0:  # top left
                img4 = np.full((s * 2, s * 2, img.shape[2]), 114, dtype=np.uint8)
                x1a, y1a, x2a, y2a = max(xc - w, 0), max(yc - h, 0), xc, yc
                x1b, y1b, x2b, y2b = w - (x2a - x1a), h - (y2a - y1a), w, h
            elif i == 1:  # top right
                x1a, y1a, x2a, y2a = xc, max(yc - h, 0), min(xc + w, s * 2), yc
                x1b, y1b, x2b, y2b = 0, h - (y2a - y1a), min(w, x2a - x1a), h
            elif i == 2:  # bottom left
                x1a, y1a, x2a, y2a = max(xc - w, 0), yc, xc, min(s * 2, yc + h)
                x1b, y1b, x2b, y2b = w - (x2a - x1a), 0, w, min(y2a - y1a, h)
            else:  # bottom right
                x1a, y1a, x2a, y2a = xc, yc, min(xc + w, s * 2), min(s * 2, yc + h)
                x1b, y1b, x2b, y2b = 0, 0, min(w, x2a - x1a), min(y2a - y1a, h)
            img4[y1a:y2a, x1a:x2a] = img[y1b:y2b, x1b:x2b]
            padw, padh = x1a - x1b, y1a - y1b
            labels = self.labels[index].copy()
            if labels.size:
                labels[:, 1:] = xywhn2xyxy(labels[:, 1:], w, h, padw, padh)
            labels4.append(labels)
        labels4 = np.concatenate(labels4, 0)
        np.clip(labels4[:, 1:], 0, 2 * s, out=labels4[:, 1:])
        hyp = self.hyp
        img4, labels4 = random_perspective(img4, labels4, degrees=hyp["degrees"], translate=hyp["translate"],
                                           scale=hyp["scale"], shear=hyp["shear"],
                                           perspective=hyp["perspective"], border=self.mosaic_border)
        return img4, labels4

    @staticmethod
    def collate_fn(batch):
        im, label = zip(*batch)
        if torch is None:
            label = [np.array(lb) for lb in label]
            for i, lb in enumerate(label):
                lb[:, 0] = i
            return np.stack(im, 0), np.concatenate(label, 0)
        for i, lb in enumerate(label):
            lb[:, 0] = i
        return torch.stack(im, 0), torch.cat(label, 0)


# ---- the loader

def epoch_batches(n, batch, epochs, seed):
    """A permutation per epoch (seed + epoch), whole batches only, all epochs in one sequence."""
    for e in range(epochs):
        perm = np.random.RandomState(seed + e).permutation(n)
        for b in range(n // batch):
            yield perm[b * batch:(b + 1) * batch].tolist()


def worker_init(worker_id=0):
    cv2.setNumThreads(0)


_POOL_DS = None


def _pool_init(ds):
    global _POOL_DS
    _POOL_DS = ds
    worker_init()


def _pool_batch(task):
    seed, idx = task
    random.seed(seed)
    np.random.seed(seed % 2**32)
    return LoadImagesAndLabels.collate_fn([_POOL_DS[i] for i in idx])


def batches(ds, a):
    """Yields (images, labels) batches; sets a.via."""
    order = list(epoch_batches(len(ds), a.batch, a.epochs, a.seed))
    if torch is not None:
        a.via = f"torch.utils.data.DataLoader(num_workers={a.workers}), torch {torch.__version__}"
        loader = torch.utils.data.DataLoader(ds, batch_sampler=order, num_workers=a.workers, pin_memory=False,
                                             collate_fn=LoadImagesAndLabels.collate_fn, worker_init_fn=worker_init,
                                             prefetch_factor=2, generator=torch.Generator().manual_seed(a.seed))
        yield from loader
    else:
        import multiprocessing as mp
        a.via = f"multiprocessing.Pool({a.workers}).imap (no torch)"
        with mp.get_context("fork").Pool(a.workers, initializer=_pool_init, initargs=(ds,)) as pool:
            yield from pool.imap(_pool_batch, [(a.seed * 1000003 + k, idx) for k, idx in enumerate(order)])


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--data", required=True)
    p.add_argument("--img", type=int, default=640)
    p.add_argument("--batch", type=int, default=16)
    p.add_argument("--epochs", type=int, default=3)
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--seed", type=int, default=0)
    a = p.parse_args()
    cv2.setNumThreads(0)
    if torch is not None:
        torch.set_num_threads(1)
    try:
        ds = LoadImagesAndLabels(read_data_yaml(a.data), a.img, HYP)
    except (OSError, KeyError) as e:
        print(f"loader_ref: {a.data}: {e}", file=sys.stderr)
        return 1
    random.seed(a.seed)
    np.random.seed(a.seed)
    t_open = time.monotonic()
    it = batches(ds, a)
    for _ in range(a.workers):
        next(it)
    t0 = t1 = time.monotonic()
    images = nb = 0
    for im, _ in it:
        images += im.shape[0]
        nb += 1
        t1 = time.monotonic()
    if images == 0:
        print("loader_ref: no batch after the warm-up; give more --epochs or images", file=sys.stderr)
        return 1
    dt = t1 - t0
    print(f"  {a.workers} worker{'s' if a.workers > 1 else ' '}: {images / dt:7.1f} images/s  ({images} images in {nb} "
          f"batches, {dt:.2f} s after a warm-up of {a.workers} batch{'es' if a.workers > 1 else ''} ready "
          f"{t0 - t_open:.2f} s after start; {a.via}; OpenCV {cv2.__version__})")
    print(f"loader_ref workers {a.workers} images {images} seconds {dt:.4f} rate {images / dt:.3f} "
          f"warmup_s {t0 - t_open:.4f} via {a.via.split('(')[0]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
