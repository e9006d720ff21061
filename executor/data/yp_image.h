/* yp_image.h - image files in and out: JPEG (libjpeg-turbo), PNG (libpng), BMP, TIFF and DNG (libtiff),
 * WebP (libwebp) and PFM decoded to 8-bit RGB, as the training loader reads them (YOLOv5's
 * IMG_FORMATS; MPO is a JPEG stream, its first image), and the two encoders that `yoloplan synth`
 * and the tests use. docs/image-formats.md tells each format's rules.
 *
 * What a decoded image is, as YOLOv5's training loader (OpenCV's imread in colour mode) makes it:
 *   - the format is told by the file's first bytes, never by its extension;
 *   - JPEG: grey, YCbCr and RGB through libjpeg's colour conversion; CMYK and YCCK as Adobe
 *     (inverted) CMYK, R = K - ((255 - C) * K >> 8) and likewise G from M, B from Y, OpenCV's rule;
 *     the EXIF orientation of an APP1 "Exif" segment (IFD0 tag 0x0112) is applied, all eight
 *     values (2..8: mirror, rotate 180, flip, transpose, rotate 90 clockwise, transverse, rotate
 *     90 counter-clockwise), so 5..8 swap width and height. (YOLOv5's label check sizes images
 *     with PIL and exif_size, which swaps only for 6 and 8; the pixels training sees are these.)
 *     A JPEG that lacks only its end marker decodes (YOLOv5 re-saves such files and keeps them);
 *     one whose entropy-coded data stops early is an error, not an image with a grey tail;
 *   - PNG: palette expanded (its transparency ignored), grey and grey+alpha replicated to RGB,
 *     1/2/4-bit grey widened, 16-bit samples cut to their high byte, alpha dropped (not
 *     composited), no gamma correction, interlaced images de-interlaced; the orientation of an eXIf
 *     chunk before the image data applied as JPEG's (OpenCV's imread does);
 *   - BMP (image_bmp.c), TIFF and DNG (image_tiff.c, orientation tag applied), WebP (image_webp.c)
 *     and PFM (image_pfm.c): the pixels OpenCV's imread gives, each file's header comment says how.
 *
 * Hostile files: the file must be a regular file (opened non-blocking, so a FIFO cannot block
 * the open), at most limits.max_file_bytes long; declared sizes are checked against
 * limits.max_pixels before any pixel buffer is allocated; every size is computed with checked
 * arithmetic; progressive JPEGs with more than 500 scans are refused (a small file could
 * otherwise take minutes). Every failure is one line in err: "FILE: reason".
 *
 * Defines: yp_image, yp_image_limits, yp_image_limits_default, yp_image_read, yp_image_read_into,
 * yp_image_read_region_into,
 * yp_image_buffers, yp_image_decode_into, yp_image_buffers_free, yp_image_probe, yp_image_verify,
 * yp_image_decode, yp_image_alloc, yp_image_free, yp_image_encode_jpeg, yp_image_encode_png,
 * yp_image_write_jpeg, yp_image_write_png, yp_image_orient. */
#ifndef YP_IMAGE_H
#define YP_IMAGE_H

#include <stddef.h>
#include <stdint.h>

#include "yp_error.h"

/* Pillow's decompression-bomb threshold (2 x Image.MAX_IMAGE_PIXELS): YOLOv5's PIL check drops
 * larger images as corrupt, so none reaches its loader. */
#define YP_IMAGE_MAX_PIXELS 178956970LL
#define YP_IMAGE_MAX_FILE_BYTES (1LL << 30)

/* An 8-bit RGB image, rows top to bottom, pixels left to right, R G B per pixel (HWC). */
typedef struct {
    uint8_t *rgb; /* w * h * 3 bytes; owned when made here (yp_image_free), a view where the
                     augmentation (yp_augment.h) points it at caller memory */
    int w, h;
} yp_image;

/* Buffers a reader keeps between images (yp_image_read_into): the file's bytes and the decoded
 * pixels, each grown to the largest image met and reused, so reading image after image allocates
 * none of its own once they are large enough (libjpeg and libpng still allocate their small
 * per-image state inside). Zero-initialise; free with yp_image_buffers_free. */
typedef struct {
    uint8_t *file, *rgb;
    size_t file_cap, rgb_cap;
} yp_image_buffers;

typedef struct {
    int64_t max_pixels;     /* largest w * h decoded (before orientation, which keeps the count) */
    int64_t max_file_bytes; /* largest file read */
} yp_image_limits;

/* The defaults above. */
void yp_image_limits_default(yp_image_limits *lim);

/* Reads and decodes the image file at path (lim NULL: the defaults). Returns 0 with *out owning
 * its pixels, or -1 with *out zeroed and err = "PATH: reason" (not a regular file, empty, too
 * large, not of a known format, truncated, corrupt, dimensions over the limit, out of memory). */
int yp_image_read(const char *path, const yp_image_limits *lim, yp_image *out, yp_err *err);

/* The same for size bytes at data; name starts error messages. data is not kept. */
int yp_image_decode(const uint8_t *data, size_t size, const char *name, const yp_image_limits *lim,
                    yp_image *out, yp_err *err);

/* yp_image_decode into b's buffers (what yp_image_read_into does after reading the file; the
 * decode-rate benchmark's steady state): *out's pixels are b->rgb, as below. */
int yp_image_decode_into(const uint8_t *data, size_t size, const char *name, const yp_image_limits *lim,
                         yp_image_buffers *b, yp_image *out, yp_err *err);

/* yp_image_read into b's buffers: *out's pixels are b->rgb (not owned: valid until the next read
 * into b; never yp_image_free them). The same checks and errors. */
int yp_image_read_into(const char *path, const yp_image_limits *lim, yp_image_buffers *b, yp_image *out, yp_err *err);
void yp_image_buffers_free(yp_image_buffers *b);

/* yp_image_read_into for a reader that needs only region (x1 y1 x2 y2 of the decoded image, end
 * exclusive; clamped to it): *out is the whole image's size and layout, its pixels inside region
 * are yp_image_read's, those outside are unspecified. A JPEG without an EXIF orientation other
 * than 1 decodes only the rows and iMCU columns around the region (libjpeg-turbo's
 * jpeg_skip_scanlines and jpeg_crop_scanline, with a margin so upsampling at the cut edges does
 * not change a pixel inside); other files and an empty region decode whole. The same checks and
 * errors, except that the coded data after the region's last row is not read, so damage there goes
 * unnoticed (the dataset scan, yp_image_verify, reads it all). */
int yp_image_read_region_into(const char *path, const yp_image_limits *lim, yp_image_buffers *b, const int region[4],
                              yp_image *out, yp_err *err);

/* The width and height yp_image_read would give path (EXIF orientation 5..8 swap them), from
 * the header alone: the same guards and checks up to the first pixel, no pixel decoded (the file is
 * still read whole). Returns 0, or -1 with *w = *h = 0 and err as yp_image_read's. */
int yp_image_probe(const char *path, const yp_image_limits *lim, int *w, int *h, yp_err *err);

/* Whether path decodes, as the dataset scan checks every image before a plan is made (YOLOv5's
 * verify_image_label): the same guards, checks and errors as yp_image_read_into, through b's
 * buffers, the entropy-coded data read to its end, with *w and *h the size yp_image_read would
 * give; no pixel is kept for the caller (a codec may decode at a reduced scale where that still
 * reads every byte of the coded data). Returns 0, or -1 with *w = *h = 0 and err set. */
int yp_image_verify(const char *path, const yp_image_limits *lim, yp_image_buffers *b, int *w, int *h, yp_err *err);

/* Allocates an uninitialised w x h image (w, h >= 1, w * h <= YP_IMAGE_MAX_PIXELS). Returns 0, or
 * -1 with err set. */
int yp_image_alloc(yp_image *im, int w, int h, yp_err *err);

/* Frees the pixels and zeroes *im; NULL or a zeroed image is fine. */
void yp_image_free(yp_image *im);

/* Applies EXIF orientation 1..8 (see above) to *im in place (a new buffer replaces the old one).
 * Other values leave it as it is, as OpenCV and PIL do. Returns 0, or -1 on out of memory. */
int yp_image_orient(yp_image *im, int orientation, yp_err *err);

/* Encodes im as a baseline JPEG of quality 1..100 (4:2:0 below 90, 4:4:4 from 90) or as a PNG (RGB,
 * 8-bit, zlib level 6, no time or text chunks). The bytes depend only on the pixels and the
 * arguments. Returns 0 with *data (malloc'd, the caller frees) and *size set, or -1 with err set. */
int yp_image_encode_jpeg(const yp_image *im, int quality, uint8_t **data, size_t *size, yp_err *err);
int yp_image_encode_png(const yp_image *im, uint8_t **data, size_t *size, yp_err *err);

/* Encodes and writes path (created or replaced). Returns 0, or -1 with err = "PATH: reason". */
int yp_image_write_jpeg(const char *path, const yp_image *im, int quality, yp_err *err);
int yp_image_write_png(const char *path, const yp_image *im, yp_err *err);

#endif
