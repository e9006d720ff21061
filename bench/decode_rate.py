#!/usr/bin/python3
"""decode_rate.py - the OpenCV side of bench/decode_rate.sh (needs /usr/bin/python3 with cv2 and numpy,
scripts/deps-reference.sh).
  decode_rate.py write OUT FILE...  re-encodes each image (decoded with cv2.imread) as OUT/NAME.bmp (24-bit),
                                    .tif (LZW, OpenCV's default), .webp (lossy, quality 90), .pfm (float / 255)
                                    and .png
  decode_rate.py rate SECONDS FILE... cv2.imdecode(IMREAD_COLOR) of the files, read once, round after round for
                                    SECONDS on one thread; prints "Mpixel/s images/s" (all pixels over all the
                                    time, as bench/decode_rate.c counts)"""
import os
import sys
import time

import cv2
import numpy as np


def write(out, files):
    os.makedirs(out, exist_ok=True)
    for f in files:
        im = cv2.imread(f, cv2.IMREAD_COLOR)
        base = os.path.join(out, os.path.splitext(os.path.basename(f))[0])
        assert cv2.imwrite(base + ".bmp", im)
        assert cv2.imwrite(base + ".tif", im)
        assert cv2.imwrite(base + ".webp", im, [cv2.IMWRITE_WEBP_QUALITY, 90])
        assert cv2.imwrite(base + ".pfm", im.astype(np.float32) / 255)
        assert cv2.imwrite(base + ".png", im)


def rate(seconds, files):
    cv2.setNumThreads(1)
    data = [np.fromfile(f, np.uint8) for f in files]
    pixels, decodes, t0 = 0, 0, time.perf_counter()
    t = t0
    while t - t0 < seconds:
        for d in data:
            im = cv2.imdecode(d, cv2.IMREAD_COLOR)
            if im is None:
                sys.exit("decode_rate.py: cv2.imdecode refused a file")
            pixels += im.shape[0] * im.shape[1]
            decodes += 1
        t = time.perf_counter()
    print(f"{pixels / (t - t0) / 1e6:.1f} {decodes / (t - t0):.1f}")


if __name__ == "__main__":
    if len(sys.argv) > 3 and sys.argv[1] == "write":
        write(sys.argv[2], sys.argv[3:])
    elif len(sys.argv) > 3 and sys.argv[1] == "rate":
        rate(float(sys.argv[2]), sys.argv[3:])
    else:
        sys.exit(__doc__)
