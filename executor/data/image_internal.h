/* image_internal.h - what the image files share: image.c (files, dispatch, orientation, the
 * pixel buffer) and one codec per file: image_jpeg.c, image_png.c, image_bmp.c, image_tiff.c (TIFF
 * and DNG), image_webp.c, image_pfm.c. Not installed; yp_image.h is the interface.
 * Defines: yp_img_jpeg_decode, yp_img_png_decode, yp_img_bmp_decode, yp_img_tiff_decode, yp_img_webp_decode,
 * yp_img_pfm_decode, yp_img_exif_orientation, yp_img_tiff_orientation, yp_img_pixels_ok, yp_img_orient_mode. */
#ifndef YP_IMAGE_INTERNAL_H
#define YP_IMAGE_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "yp_image.h"

/* Whether a w x h image may be decoded under lim (w, h >= 1 and w * h <= lim->max_pixels, computed
 * without overflow). Sets err to "NAME: reason" and returns 0 when not. */
int yp_img_pixels_ok(int64_t w, int64_t h, const yp_image_limits *lim, const char *name, yp_err *err);

/* How a decoder delivers: header_only: only the header is read and checked, *out gets the size
 * the decoded image would have (orientation included) and no pixels (rgb NULL); reuse: the pixels
 * go into reuse->rgb (grown when too small) instead of a new buffer; region: only the pixels in it
 * need be decoded (JPEG without an orientation crops; the other codecs ignore it). */
typedef struct {
    int header_only;
    yp_image_buffers *reuse;
    const int *region; /* NULL, or x1 y1 x2 y2 (end exclusive): the pixels needed, as
                          yp_image_read_region_into's (a codec that cannot crop decodes whole) */
} yp_img_mode;

/* yp_image_orient keeping im's buffer (the turned pixels copied back through a temporary one).
 * 0, or -1 on out of memory (im unchanged). */
int yp_img_orient_in_place(yp_image *im, int orientation, yp_err *err);

/* A pixel buffer of bytes for m: reuse->rgb grown to it, or a new one. NULL when out of memory. */
uint8_t *yp_img_pixels(const yp_img_mode *m, size_t bytes);

/* Frees p unless it is m's reused buffer. */
void yp_img_pixels_release(const yp_img_mode *m, uint8_t *p);

/* Decode size bytes that start with the JPEG (FF D8 FF) or PNG signature into *out (orientation
 * applied for JPEG) as m says. Return 0, or -1 with *out zeroed and err = "NAME: reason". */
int yp_img_jpeg_decode(const uint8_t *data, size_t size, const char *name, const yp_image_limits *lim,
                       const yp_img_mode *m, yp_image *out, yp_err *err);
int yp_img_png_decode(const uint8_t *data, size_t size, const char *name, const yp_image_limits *lim,
                      const yp_img_mode *m, yp_image *out, yp_err *err);

/* Decode size bytes that start with "BM", a TIFF header (II*\0 or MM\0*), RIFF....WEBP or "PF"/"Pf",
 * as yp_img_jpeg_decode does (TIFF orientation applied). Same returns. */
int yp_img_bmp_decode(const uint8_t *data, size_t size, const char *name, const yp_image_limits *lim,
                      const yp_img_mode *m, yp_image *out, yp_err *err);
int yp_img_tiff_decode(const uint8_t *data, size_t size, const char *name, const yp_image_limits *lim,
                       const yp_img_mode *m, yp_image *out, yp_err *err);
int yp_img_webp_decode(const uint8_t *data, size_t size, const char *name, const yp_image_limits *lim,
                       const yp_img_mode *m, yp_image *out, yp_err *err);
int yp_img_pfm_decode(const uint8_t *data, size_t size, const char *name, const yp_image_limits *lim,
                      const yp_img_mode *m, yp_image *out, yp_err *err);

/* Applies orientation 1..8 to a decoded *out whose pixels came from yp_img_pixels(m): in place in
 * m's reused buffer, else into a new one. 0, or -1 on out of memory with out's pixels released and
 * *out zeroed. */
int yp_img_orient_mode(const yp_img_mode *m, yp_image *out, int orientation, yp_err *err);

/* The orientation (1..65535) in the EXIF payload of an APP1 segment (len bytes from the "Exif\0\0"
 * identifier on), or 0 when the payload is not EXIF, is malformed or has no orientation tag in
 * IFD0 (type SHORT or LONG, count 1). Reads nothing outside app1[0, len). */
int yp_img_exif_orientation(const uint8_t *app1, size_t len);

/* The same for n bytes that start with the TIFF header itself (II*\0 or MM\0*), as a PNG's eXIf
 * chunk holds them. */
int yp_img_tiff_orientation(const uint8_t *tiff, size_t n);

#endif
