/* image_internal.h - what the image files share: image.c (files, dispatch, orientation, the
 * pixel buffer), image_jpeg.c and image_png.c (one codec each). Not installed; yp_image.h is
 * the interface.
 * Defines: yp_img_jpeg_decode, yp_img_png_decode, yp_img_exif_orientation, yp_img_pixels_ok. */
#ifndef YP_IMAGE_INTERNAL_H
#define YP_IMAGE_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "yp_image.h"

/* Whether a w x h image may be decoded under lim (w, h >= 1 and w * h <= lim->max_pixels, computed
 * without overflow). Sets err to "NAME: reason" and returns 0 when not. */
int yp_img_pixels_ok(int64_t w, int64_t h, const yp_image_limits *lim, const char *name, yp_err *err);

/* Decode size bytes that start with the JPEG (FF D8 FF) or PNG signature into *out (orientation
 * applied for JPEG). header_only: only the header is read and checked, *out gets the size the
 * decoded image would have (orientation included) and no pixels (rgb NULL). Return 0, or -1 with
 * *out zeroed and err = "NAME: reason". */
int yp_img_jpeg_decode(const uint8_t *data, size_t size, const char *name, const yp_image_limits *lim,
                       int header_only, yp_image *out, yp_err *err);
int yp_img_png_decode(const uint8_t *data, size_t size, const char *name, const yp_image_limits *lim,
                      int header_only, yp_image *out, yp_err *err);

/* The orientation (1..65535) in the EXIF payload of an APP1 segment (len bytes from the "Exif\0\0"
 * identifier on), or 0 when the payload is not EXIF, is malformed or has no orientation tag in
 * IFD0 (type SHORT or LONG, count 1). Reads nothing outside app1[0, len). */
int yp_img_exif_orientation(const uint8_t *app1, size_t len);

#endif
