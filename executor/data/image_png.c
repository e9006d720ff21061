/* image_png.c - PNG through libpng (image_internal.h, yp_image.h): decoding from memory to 8-bit
 * RGB with OpenCV's transformations (palette expanded, grey replicated, 16-bit cut to the high
 * byte, alpha dropped, no gamma, the orientation of an eXIf chunk before the image data applied as
 * EXIF's, as OpenCV's imread applies it), and RGB encoding to memory.
 *
 * libpng's errors longjmp back through png_jmpbuf with the message kept; what the cleanup frees
 * lives in one heap block made before setjmp. Warnings (bad ancillary chunks, which libpng skips)
 * are ignored, as OpenCV does. */
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <png.h>

#include "image_internal.h"

typedef struct {
    char msg[256];
} perr;

static void on_error(png_structp p, png_const_charp msg) {
    perr *e = png_get_error_ptr(p);
    snprintf(e->msg, sizeof e->msg, "%s", msg);
    png_longjmp(p, 1);
}

static void on_warning(png_structp p, png_const_charp msg) { (void)p, (void)msg; }

/* ---- decoding ---- */

typedef struct {
    perr err;
    const uint8_t *data;
    size_t size, pos;
    png_structp png;
    png_infop info;
    uint8_t *rgb;
    png_bytep *rows;
    int orientation;
} pdec;

static void on_read(png_structp p, png_bytep out, size_t n) {
    pdec *d = png_get_io_ptr(p);
    if (n > d->size - d->pos) png_error(p, "truncated: the file ends early");
    memcpy(out, d->data + d->pos, n);
    d->pos += n;
}

/* Asks libpng for 8-bit RGB whatever the file holds. */
static void set_transforms(png_structp png, png_infop info, int depth, int ctype) {
    if (depth == 16) png_set_strip_16(png);
    png_set_strip_alpha(png);
    if (ctype == PNG_COLOR_TYPE_PALETTE) png_set_palette_to_rgb(png);
    if (!(ctype & PNG_COLOR_MASK_COLOR) && depth < 8) png_set_expand_gray_1_2_4_to_8(png);
    if (!(ctype & PNG_COLOR_MASK_COLOR)) png_set_gray_to_rgb(png);
    png_set_interlace_handling(png);
    png_read_update_info(png, info);
}

/* The orientation in an eXIf chunk libpng has read (before the image data: what OpenCV reads), or 0. */
static int exif_orientation(png_structp png, png_infop info) {
    png_uint_32 n = 0;
    png_bytep exif = NULL;
    if (!png_get_valid(png, info, PNG_INFO_eXIf) || !png_get_eXIf_1(png, info, &n, &exif) || !exif) return 0;
    return yp_img_tiff_orientation(exif, n);
}

/* Reads the header and the pixels into d->rgb, the orientation into d->orientation. Returns 0, or
 * -1 with err set (libpng's own errors longjmp past this). */
static int read_png(pdec *d, const char *name, const yp_image_limits *lim, const yp_img_mode *m, yp_err *err) {
    png_uint_32 w, h;
    int depth, ctype;
    png_read_info(d->png, d->info);
    png_get_IHDR(d->png, d->info, &w, &h, &depth, &ctype, NULL, NULL, NULL);
    if (!yp_img_pixels_ok(w, h, lim, name, err)) return -1;
    d->orientation = exif_orientation(d->png, d->info);
    if (m->header_only) return 0;
    set_transforms(d->png, d->info, depth, ctype);
    size_t stride = (size_t)w * 3u; /* checked: w * h <= max_pixels */
    if (png_get_channels(d->png, d->info) != 3 || png_get_bit_depth(d->png, d->info) != 8 ||
        png_get_rowbytes(d->png, d->info) != stride)
        return yp_err_set(err, "%s: bad PNG: colour type %d at %d bits did not convert to RGB", name, ctype, depth);
    d->rgb = yp_img_pixels(m, stride * h);
    d->rows = malloc((size_t)h * sizeof *d->rows);
    if (!d->rgb || !d->rows) return yp_err_set(err, "%s: out of memory decoding", name);
    for (png_uint_32 y = 0; y < h; y++) d->rows[y] = d->rgb + (size_t)y * stride;
    png_read_image(d->png, d->rows); /* no png_read_end: what follows the pixels is not read */
    return 0;
}

int yp_img_png_decode(const uint8_t *data, size_t size, const char *name, const yp_image_limits *lim,
                      const yp_img_mode *m, yp_image *out, yp_err *err) {
    memset(out, 0, sizeof *out);
    pdec *d = calloc(1, sizeof *d);
    if (!d) return yp_err_set(err, "%s: out of memory decoding", name);
    int rc = -1, orientation = 0;
    d->data = data, d->size = size;
    d->png = png_create_read_struct(PNG_LIBPNG_VER_STRING, &d->err, on_error, on_warning);
    if (d->png) d->info = png_create_info_struct(d->png);
    if (!d->png || !d->info) {
        yp_err_set(err, "%s: out of memory decoding", name);
        goto done;
    }
    if (setjmp(png_jmpbuf(d->png))) {
        yp_err_set(err, "%s: bad PNG: %s", name, d->err.msg);
        goto done;
    }
    png_set_read_fn(d->png, d, on_read);
    if (read_png(d, name, lim, m, err)) goto done;
    out->w = (int)png_get_image_width(d->png, d->info), out->h = (int)png_get_image_height(d->png, d->info);
    out->rgb = d->rgb;
    d->rgb = NULL;
    orientation = d->orientation;
    rc = 0;
done:
    png_destroy_read_struct(d->png ? &d->png : NULL, d->info ? &d->info : NULL, NULL);
    yp_img_pixels_release(m, d->rgb);
    free(d->rows);
    free(d);
    if (rc) return rc;
    if (!m->header_only) return yp_img_orient_mode(m, out, orientation, err);
    if (orientation >= 5 && orientation <= 8) { /* header only: 5..8 swap the size */
        int t = out->w;
        out->w = out->h, out->h = t;
    }
    return 0;
}

/* ---- encoding ---- */

typedef struct {
    perr err;
    png_structp png;
    png_infop info;
    uint8_t *buf;
    size_t len, cap;
} penc;

static void on_write(png_structp p, png_bytep in, size_t n) {
    penc *e = png_get_io_ptr(p);
    if (n > e->cap - e->len) {
        size_t cap = e->cap ? e->cap : 65536;
        while (cap - e->len < n) {
            if (cap > SIZE_MAX / 2) png_error(p, "out of memory");
            cap *= 2;
        }
        uint8_t *buf = realloc(e->buf, cap);
        if (!buf) png_error(p, "out of memory");
        e->buf = buf, e->cap = cap;
    }
    memcpy(e->buf + e->len, in, n);
    e->len += n;
}

static void on_flush(png_structp p) { (void)p; }

int yp_image_encode_png(const yp_image *im, uint8_t **data, size_t *size, yp_err *err) {
    *data = NULL, *size = 0;
    if (!im->rgb || im->w < 1 || im->h < 1) return yp_err_set(err, "PNG encoder: a %dx%d image", im->w, im->h);
    penc *e = calloc(1, sizeof *e);
    if (!e) return yp_err_set(err, "PNG encoder: out of memory");
    int rc = -1;
    e->png = png_create_write_struct(PNG_LIBPNG_VER_STRING, &e->err, on_error, on_warning);
    if (e->png) e->info = png_create_info_struct(e->png);
    if (!e->png || !e->info) {
        yp_err_set(err, "PNG encoder: out of memory");
        goto done;
    }
    if (setjmp(png_jmpbuf(e->png))) {
        yp_err_set(err, "PNG encoder: %s", e->err.msg);
        goto done;
    }
    png_set_write_fn(e->png, e, on_write, on_flush);
    png_set_IHDR(e->png, e->info, (png_uint_32)im->w, (png_uint_32)im->h, 8, PNG_COLOR_TYPE_RGB, PNG_INTERLACE_NONE,
                 PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
    png_set_compression_level(e->png, 6);
    png_write_info(e->png, e->info);
    for (int y = 0; y < im->h; y++) png_write_row(e->png, im->rgb + (size_t)y * (size_t)im->w * 3u);
    png_write_end(e->png, NULL);
    *data = e->buf, *size = e->len;
    e->buf = NULL;
    rc = 0;
done:
    png_destroy_write_struct(e->png ? &e->png : NULL, e->info ? &e->info : NULL);
    free(e->buf);
    free(e);
    return rc;
}
