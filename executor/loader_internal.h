/* loader_internal.h - what loader.c takes from loader_decode.c: reading an image file into a
 * per-worker holder. A separate file because yp_image.h's yp_image (the decoder's) and
 * yp_augment.h's yp_image (the augmentation's) are different types that cannot meet in one
 * translation unit. Not installed; yp_loader.h is the interface.
 * Defines: yp_ld_pixels, yp_ld_read, yp_ld_release. */
#ifndef YP_LOADER_INTERNAL_H
#define YP_LOADER_INTERNAL_H

#include <stdint.h>

#include "yp_error.h"

/* One decoded image a worker holds: w x h RGB, rows of w*3 bytes. */
typedef struct {
    uint8_t *rgb;
    int w, h;
} yp_ld_pixels;

/* Releases what *p holds, then decodes path into it (yp_image_read, default limits). Returns 0,
 * or -1 with *p empty and err = "PATH: reason". */
int yp_ld_read(yp_ld_pixels *p, const char *path, yp_err *err);
void yp_ld_release(yp_ld_pixels *p);

#endif
