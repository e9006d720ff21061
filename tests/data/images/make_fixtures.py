#!/usr/bin/python3
"""make_fixtures.py - writes the image-format fixtures of tests/executor/data/test_image_formats.c:
each NAME.EXT a small image of one format or variant, and beside it NAME.EXT.expect.png, the pixels
OpenCV's cv2.imread(path, cv2.IMREAD_COLOR) decodes from it (written as PNG), which the test compares
with yoloplan's decoder. The BMP, PFM and raw DNG files are written byte by byte here; the rest with
OpenCV or Pillow, the tiled and BigTIFF ones with tiffcp (libtiff-tools). Needs /usr/bin/python3 with
cv2, numpy and PIL (scripts/deps-reference.sh's python3-opencv brings them).
Run from anywhere: python3 tests/data/images/make_fixtures.py"""
import io
import os
import struct
import subprocess
import tempfile

import cv2
import numpy as np
from PIL import Image

HERE = os.path.dirname(os.path.abspath(__file__))
W, H = 7, 5  # odd width: BMP rows are padded
rng = np.random.default_rng(7)
RGB = rng.integers(0, 256, (H, W, 3), dtype=np.uint8)
RGBA = np.dstack([RGB, rng.integers(0, 256, (H, W, 1), dtype=np.uint8)])
NO_REFERENCE = []  # files cv2.imread refuses: the test expects an error for them


def path(name):
    return os.path.join(HERE, name)


def put(name, data):
    with open(path(name), "wb") as f:
        f.write(data)
    ref = cv2.imread(path(name), cv2.IMREAD_COLOR)
    if ref is None:
        NO_REFERENCE.append(name)
        return
    assert cv2.imwrite(path(name) + ".expect.png", ref)


def pil_bytes(im, fmt, **kw):
    b = io.BytesIO()
    im.save(b, fmt, **kw)
    return b.getvalue()


def cv_bytes(arr, ext, params=()):
    ok, b = cv2.imencode(ext, arr, list(params))
    assert ok
    return b.tobytes()


# ---- BMP, byte by byte ----
def bmp(bits, rows, comp=0, palette=None, top_down=False, masks=None, used=None, core=False, w=W, h=H):
    """rows: the pixel data bytes as stored (already padded / RLE-coded)."""
    pal = b""
    if palette is not None:
        pal = b"".join(bytes([b, g, r]) + (b"" if core else b"\0") for r, g, b in palette)
    extra = b"".join(struct.pack("<I", m) for m in masks) if masks else b""
    if core:
        info = struct.pack("<IHHHH", 12, w, h, 1, bits)
    else:
        ncol = len(palette) if palette is not None and used is None else (used or 0)
        info = struct.pack("<IiiHHIIiiII", 40, w, -h if top_down else h, 1, bits, comp, len(rows), 2835, 2835, ncol, 0)
    off = 14 + len(info) + len(extra) + len(pal)
    return b"BM" + struct.pack("<IHHI", off + len(rows), 0, 0, off) + info + extra + pal + rows


def pad(row):
    return row + b"\0" * (-len(row) % 4)


def pack_bits(idx, bits):
    out = bytearray()
    per = 8 // bits
    for i in range(0, len(idx), per):
        v = 0
        for j in range(per):
            v <<= bits
            if i + j < len(idx):
                v |= int(idx[i + j])
        out.append(v)
    return bytes(out)


def indexed(bits, ncol):
    idx = rng.integers(0, ncol, (H, W))
    pal = [tuple(int(c) for c in rng.integers(0, 256, 3)) for _ in range(ncol)]
    return idx, pal


def bmp_fixtures():
    for bits, ncol in ((1, 2), (4, 16), (8, 256), (8, 20)):
        idx, pal = indexed(bits, ncol)
        rows = b"".join(pad(pack_bits(idx[y], bits) if bits < 8 else bytes(idx[y].astype(np.uint8)))
                        for y in range(H - 1, -1, -1))
        put(f"pal{bits}_{ncol}.bmp", bmp(bits, rows, palette=pal))
    grey = [(i, i, i) for i in range(256)]
    idx = rng.integers(0, 256, (H, W))
    put("grey8_topdown.bmp", bmp(8, b"".join(pad(bytes(idx[y].astype(np.uint8))) for y in range(H)), palette=grey,
                                 top_down=True))
    bgr = RGB[..., ::-1]
    put("rgb24.bmp", bmp(24, b"".join(pad(bgr[y].tobytes()) for y in range(H - 1, -1, -1))))
    put("rgb24_topdown.bmp", bmp(24, b"".join(pad(bgr[y].tobytes()) for y in range(H)), top_down=True))
    put("rgb24_core.bmp", bmp(24, b"".join(pad(bgr[y].tobytes()) for y in range(H - 1, -1, -1)), core=True))
    bgra = RGBA[..., [2, 1, 0, 3]]
    put("rgba32.bmp", bmp(32, b"".join(bgra[y].tobytes() for y in range(H - 1, -1, -1))))
    put("rgba32_bitfields.bmp", bmp(32, b"".join(bgra[y].tobytes() for y in range(H - 1, -1, -1)), comp=3,
                                    masks=(0xFF0000, 0xFF00, 0xFF)))
    v16 = rng.integers(0, 65536, (H, W)).astype("<u2")
    put("rgb555.bmp", bmp(16, b"".join(pad((v16[y] & 0x7FFF).tobytes()) for y in range(H - 1, -1, -1))))
    put("rgb565.bmp", bmp(16, b"".join(pad(v16[y].tobytes()) for y in range(H - 1, -1, -1)), comp=3,
                          masks=(0xF800, 0x7E0, 0x1F)))
    # RLE8: a run, an absolute run (odd length, padded), end of line, a delta, end of bitmap
    _, pal = indexed(8, 6)
    rle8 = bytes([3, 1, 0, 3, 2, 3, 4, 0, 1, 5, 0, 0,   # row 0: 1 1 1 2 3 4 5
                  7, 2, 0, 0,                           # row 1: seven 2s
                  2, 3, 0, 2, 1, 1, 4, 4,               # row 2: 3 3, delta (+1, +1) -> row 3 x 3, four 4s
                  0, 0, 1, 5, 0, 1])                    # row 4: one 5, end of bitmap (rest palette 0)
    put("rle8.bmp", bmp(8, rle8, comp=1, palette=pal))
    _, pal = indexed(4, 16)
    rle4 = bytes([5, 0x12, 0, 0,                         # row 0: 1 2 1 2 1, rest palette 0
                  0, 7, 0x34, 0x56, 0x78, 0x90, 0, 0,    # row 1: absolute 3 4 5 6 7 8 9 (4 bytes, padded)
                  7, 0xAB, 0, 0, 7, 0xCD, 0, 0, 7, 0xEF, 0, 1])
    put("rle4.bmp", bmp(4, rle4, comp=2, palette=pal))


# ---- TIFF, WebP, JPEG, PNG through the libraries ----
def tiff_fixtures():
    im = Image.fromarray(RGB)
    put("rgb8.tif", pil_bytes(im, "TIFF"))
    put("rgb8_lzw.tif", pil_bytes(im, "TIFF", compression="tiff_lzw"))
    put("rgb8_deflate.tif", pil_bytes(im, "TIFF", compression="tiff_adobe_deflate"))
    put("rgb8_jpeg.tif", pil_bytes(Image.fromarray(np.kron(RGB, np.ones((2, 3, 1), np.uint8))), "TIFF",
                                   compression="jpeg"))
    put("grey8.tif", pil_bytes(Image.fromarray(RGB[..., 0]), "TIFF"))
    put("bilevel.tif", pil_bytes(Image.fromarray(RGB[..., 0] > 128), "TIFF"))
    put("palette.tif", pil_bytes(im.convert("P", palette=Image.ADAPTIVE, colors=5), "TIFF"))
    put("rgba_unassoc.tif", pil_bytes(Image.fromarray(RGBA), "TIFF"))
    put("cmyk.tif", pil_bytes(Image.fromarray(RGBA).convert("CMYK"), "TIFF"))
    r16 = rng.integers(0, 65536, (H, W, 3), dtype=np.uint16)
    put("rgb16.tif", cv_bytes(r16, ".tiff"))
    put("grey16.tif", cv_bytes(r16[..., 0], ".tiff"))
    for o in (3, 6, 8):
        put(f"orient{o}.tif", pil_bytes(im, "TIFF", tiffinfo={274: o}))
    put("multipage.tif", pil_bytes(im, "TIFF", save_all=True, append_images=[Image.fromarray(RGB[::-1])]))
    put("rgb8_packbits.tif", pil_bytes(im, "TIFF", compression="packbits"))
    for flag, name in (("-t", "tiled.tif"), ("-8", "bigtiff.tif")):
        with tempfile.TemporaryDirectory() as t:
            src, dst = os.path.join(t, "a.tif"), os.path.join(t, "b.tif")
            Image.fromarray(np.kron(RGB, np.ones((4, 4, 1), np.uint8))).save(src)  # 28x20: tiles of 16 are cut
            subprocess.run(["tiffcp", "-c", "lzw", flag] + (["-w", "16", "-l", "16"] if flag == "-t" else [])
                           + [src, dst], check=True)
            put(name, open(dst, "rb").read())
    ex = Image.Exif()
    ex[0x0112] = 6
    put("exif6.jpg", pil_bytes(Image.fromarray(np.kron(RGB, np.ones((2, 2, 1), np.uint8))), "JPEG", quality=95,
                               exif=ex))
    put("dng_preview.dng", pil_bytes(im, "TIFF", tiffinfo={50706: b"\1\4\0\0", 50708: "test camera"}))
    put("dng_cfa.dng", raw_dng())


def raw_dng():
    """A little-endian TIFF whose IFD 0 is 16-bit CFA (Bayer) data with a DNGVersion tag, as a camera's DNG is."""
    w, h = 4, 2
    data = rng.integers(0, 4096, (h, w), dtype="<u2").tobytes()
    tags = [(254, 4, 1, 0), (256, 3, 1, w), (257, 3, 1, h), (258, 3, 1, 16), (259, 3, 1, 1), (262, 3, 1, 32803),
            (273, 4, 1, 0), (277, 3, 1, 1), (278, 3, 1, h), (279, 4, 1, len(data)), (33421, 3, 2, 2 | 2 << 16),
            (33422, 1, 4, 0x02010100), (50706, 1, 4, 0x00000401)]
    ifd_at = 8
    data_at = ifd_at + 2 + 12 * len(tags) + 4
    tags = [(t, ty, n, data_at if t == 273 else v) for t, ty, n, v in tags]
    ifd = struct.pack("<H", len(tags)) + b"".join(struct.pack("<HHII", *t) for t in tags) + struct.pack("<I", 0)
    return b"II*\0" + struct.pack("<I", ifd_at) + ifd + data


def webp_fixtures():
    put("lossless.webp", cv_bytes(RGB[..., ::-1], ".webp", (cv2.IMWRITE_WEBP_QUALITY, 101)))
    put("lossless_alpha.webp", cv_bytes(RGBA[..., [2, 1, 0, 3]], ".webp", (cv2.IMWRITE_WEBP_QUALITY, 101)))
    big = np.kron(RGB, np.ones((3, 3, 1), np.uint8))  # 21x15, chroma subsampled
    put("lossy.webp", cv_bytes(big[..., ::-1], ".webp", (cv2.IMWRITE_WEBP_QUALITY, 80)))
    put("lossy_alpha.webp", pil_bytes(Image.fromarray(np.kron(RGBA, np.ones((3, 3, 1), np.uint8))), "WEBP",
                                      quality=80))
    frames = [Image.fromarray(RGB), Image.fromarray(RGB[::-1])]
    put("animated.webp", pil_bytes(frames[0], "WEBP", save_all=True, append_images=frames[1:], lossless=True))


def pfm(arr, scale):
    h, w = arr.shape[:2]
    kind = b"PF" if arr.ndim == 3 else b"Pf"
    order = "<f4" if scale < 0 else ">f4"
    return kind + b"\n%d %d\n%s\n" % (w, h, repr(scale).encode()) + np.flipud(arr).astype(order).tobytes()


def pfm_fixtures():
    f = rng.uniform(-20, 280, (H, W, 3)).astype(np.float32)
    f[0, :, 0] = [0.5, 1.5, 2.5, 254.5, 255.5, -0.5, 3.49999]  # ties go to even
    f[1, :3, 1] = [np.nan, np.inf, -np.inf]
    f[1, 3:, 1] = [1e10, -1e10, 2147483520.0, 255.49]
    put("rgb_le.pfm", pfm(f, -1.0))
    put("grey_be_scale2.pfm", pfm(f[..., 2], 2.0))
    put("rgb_le_scale_quarter.pfm", pfm(f / 100, -0.25))


def jpeg_png_fixtures():
    im = Image.fromarray(np.kron(RGB, np.ones((2, 2, 1), np.uint8)))
    put("progressive.jpg", pil_bytes(im, "JPEG", quality=90, progressive=True))
    put("cmyk.jpg", pil_bytes(Image.fromarray(np.kron(RGBA, np.ones((2, 2, 1), np.uint8))).convert("CMYK"), "JPEG",
                              quality=90))
    # MPO: a JPEG followed by a second one (the MP extension's APP2 omitted); the first image counts
    a = pil_bytes(im, "JPEG", quality=90)
    b = pil_bytes(Image.fromarray(255 - np.asarray(im)), "JPEG", quality=90)
    put("two_frames.mpo", a + b)
    put("rgb16.png", cv_bytes(rng.integers(0, 65536, (H, W, 3), dtype=np.uint16), ".png"))
    pal = Image.fromarray(RGB).convert("P", palette=Image.ADAPTIVE, colors=4)
    put("palette_trns.png", pil_bytes(pal, "PNG", transparency=0))
    for o in (3, 6, 7):  # OpenCV applies a PNG's eXIf orientation, not a WebP's EXIF one
        ex = Image.Exif()
        ex[0x0112] = o
        put(f"exif{o}.png", pil_bytes(Image.fromarray(RGB), "PNG", exif=ex))
    put("exif6.webp", pil_bytes(Image.fromarray(RGB), "WEBP", lossless=True, exif=ex))


if __name__ == "__main__":
    for old in os.listdir(HERE):
        if old.endswith(".expect.png") or os.path.splitext(old)[1] in (".bmp", ".tif", ".dng", ".webp", ".pfm",
                                                                       ".jpg", ".mpo", ".png"):
            os.unlink(path(old))
    bmp_fixtures()
    tiff_fixtures()
    webp_fixtures()
    pfm_fixtures()
    jpeg_png_fixtures()
    with open(path("NO_REFERENCE.txt"), "w") as f:
        f.write("".join(n + "\n" for n in NO_REFERENCE))
    print("refused by cv2.imread:", " ".join(NO_REFERENCE))
