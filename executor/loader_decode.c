/* loader_decode.c - the loader's image reads (loader_internal.h): yp_image_read into the pixels
 * a worker holds until its next read. */
#include <stddef.h>

#include "loader_internal.h"
#include "yp_image.h"

void yp_ld_release(yp_ld_pixels *p) {
    yp_image im = {.w = p->w, .h = p->h, .rgb = p->rgb};
    yp_image_free(&im);
    *p = (yp_ld_pixels){NULL, 0, 0};
}

int yp_ld_read(yp_ld_pixels *p, const char *path, yp_err *err) {
    yp_image im;
    yp_ld_release(p);
    if (yp_image_read(path, NULL, &im, err)) return -1;
    *p = (yp_ld_pixels){im.rgb, im.w, im.h};
    return 0;
}
