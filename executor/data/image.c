/* image.c - image files (yp_image.h): reading a file with its guards (regular file only, opened
 * non-blocking, a size cap), telling the format by its first bytes (JPEG, PNG, BMP, TIFF, WebP, PFM),
 * the pixel buffer, EXIF orientation, and writing encoded bytes to a file. The codecs are
 * image_jpeg.c, image_png.c, image_bmp.c, image_tiff.c, image_webp.c and image_pfm.c. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "image_internal.h"
#include "yp_file.h"

void yp_image_limits_default(yp_image_limits *lim) {
    lim->max_pixels = YP_IMAGE_MAX_PIXELS;
    lim->max_file_bytes = YP_IMAGE_MAX_FILE_BYTES;
}

int yp_img_pixels_ok(int64_t w, int64_t h, const yp_image_limits *lim, const char *name, yp_err *err) {
    if (w < 1 || h < 1) {
        yp_err_set(err, "%s: image is %lldx%lld pixels; not an image", name, (long long)w, (long long)h);
        return 0;
    }
    if (w > lim->max_pixels / h) {
        yp_err_set(err, "%s: image is %lldx%lld pixels, over the limit of %lld pixels", name, (long long)w,
                   (long long)h, (long long)lim->max_pixels);
        return 0;
    }
    return 1;
}

int yp_image_alloc(yp_image *im, int w, int h, yp_err *err) {
    memset(im, 0, sizeof *im);
    yp_image_limits lim;
    yp_image_limits_default(&lim);
    if (!yp_img_pixels_ok(w, h, &lim, "image", err)) return -1;
    im->rgb = malloc((size_t)w * (size_t)h * 3u); /* <= 3 * YP_IMAGE_MAX_PIXELS: fits size_t */
    if (!im->rgb) return yp_err_set(err, "image: out of memory for %dx%d pixels", w, h);
    im->w = w, im->h = h;
    return 0;
}

void yp_image_free(yp_image *im) {
    if (!im) return;
    free(im->rgb);
    memset(im, 0, sizeof *im);
}

/* ---- orientation ---- */

/* For output pixel (ox, oy) of orientation o, the source pixel (*sx, *sy) in a w x h image:
 * 2 mirror, 3 rotate 180, 4 flip, 5 transpose, 6 rotate 90 clockwise, 7 transverse,
 * 8 rotate 90 counter-clockwise. */
static void orient_source(int o, int w, int h, int ox, int oy, int *sx, int *sy) {
    switch (o) {
    case 2: *sx = w - 1 - ox, *sy = oy; break;
    case 3: *sx = w - 1 - ox, *sy = h - 1 - oy; break;
    case 4: *sx = ox, *sy = h - 1 - oy; break;
    case 5: *sx = oy, *sy = ox; break;
    case 6: *sx = oy, *sy = h - 1 - ox; break;
    case 7: *sx = w - 1 - oy, *sy = h - 1 - ox; break;
    case 8: *sx = w - 1 - oy, *sy = ox; break;
    default: *sx = ox, *sy = oy; break;
    }
}

/* im's pixels under orientation 2..8 into out (allocated, ow x oh). */
static void orient_copy(const yp_image *im, int orientation, const yp_image *out) {
    for (int oy = 0; oy < out->h; oy++)
        for (int ox = 0; ox < out->w; ox++) {
            int sx, sy;
            orient_source(orientation, im->w, im->h, ox, oy, &sx, &sy);
            const uint8_t *s = im->rgb + ((size_t)sy * (size_t)im->w + (size_t)sx) * 3u;
            uint8_t *d = out->rgb + ((size_t)oy * (size_t)out->w + (size_t)ox) * 3u;
            d[0] = s[0], d[1] = s[1], d[2] = s[2];
        }
}

int yp_image_orient(yp_image *im, int orientation, yp_err *err) {
    if (orientation < 2 || orientation > 8) return 0;
    int swap = orientation >= 5;
    yp_image out;
    if (yp_image_alloc(&out, swap ? im->h : im->w, swap ? im->w : im->h, err)) return -1;
    orient_copy(im, orientation, &out);
    yp_image_free(im);
    *im = out;
    return 0;
}

int yp_img_orient_in_place(yp_image *im, int orientation, yp_err *err) {
    if (orientation < 2 || orientation > 8) return 0;
    int swap = orientation >= 5;
    yp_image out;
    if (yp_image_alloc(&out, swap ? im->h : im->w, swap ? im->w : im->h, err)) return -1;
    orient_copy(im, orientation, &out);
    memcpy(im->rgb, out.rgb, (size_t)out.w * (size_t)out.h * 3u); /* the same number of pixels */
    im->w = out.w, im->h = out.h;
    yp_image_free(&out);
    return 0;
}

uint8_t *yp_img_pixels(const yp_img_mode *m, size_t bytes) {
    yp_image_buffers *b = m->reuse;
    if (!b) return malloc(bytes);
    if (bytes > b->rgb_cap) {
        uint8_t *p = realloc(b->rgb, bytes);
        if (!p) return NULL;
        b->rgb = p, b->rgb_cap = bytes;
    }
    return b->rgb;
}

void yp_img_pixels_release(const yp_img_mode *m, uint8_t *p) {
    if (!m->reuse || p != m->reuse->rgb) free(p);
}

int yp_img_orient_mode(const yp_img_mode *m, yp_image *out, int orientation, yp_err *err) {
    if (!(m->reuse ? yp_img_orient_in_place(out, orientation, err) : yp_image_orient(out, orientation, err)))
        return 0;
    yp_img_pixels_release(m, out->rgb);
    memset(out, 0, sizeof *out);
    return -1;
}

void yp_image_buffers_free(yp_image_buffers *b) {
    if (!b) return;
    free(b->file), free(b->rgb);
    memset(b, 0, sizeof *b);
}

/* ---- reading ---- */

/* yp_image_decode, or with header_only its size without the pixels. */
static int decode(const uint8_t *data, size_t size, const char *name, const yp_image_limits *lim,
                  const yp_img_mode *m, yp_image *out, yp_err *err) {
    static const uint8_t png_sig[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
    yp_image_limits def;
    if (!lim) yp_image_limits_default(&def), lim = &def;
    memset(out, 0, sizeof *out);
    if (size == 0) return yp_err_set(err, "%s: empty file; not an image", name);
    if (size >= 3 && data[0] == 0xff && data[1] == 0xd8 && data[2] == 0xff)
        return yp_img_jpeg_decode(data, size, name, lim, m, out, err);
    if (size >= 8 && memcmp(data, png_sig, 8) == 0) return yp_img_png_decode(data, size, name, lim, m, out, err);
    if (size >= 2 && data[0] == 'B' && data[1] == 'M') return yp_img_bmp_decode(data, size, name, lim, m, out, err);
    if (size >= 4 && (!memcmp(data, "II*\0", 4) || !memcmp(data, "MM\0*", 4) || !memcmp(data, "II+\0", 4) ||
                      !memcmp(data, "MM\0+", 4))) /* TIFF, BigTIFF; DNG is TIFF */
        return yp_img_tiff_decode(data, size, name, lim, m, out, err);
    if (size >= 12 && !memcmp(data, "RIFF", 4) && !memcmp(data + 8, "WEBP", 4))
        return yp_img_webp_decode(data, size, name, lim, m, out, err);
    if (size >= 2 && data[0] == 'P' && (data[1] == 'F' || data[1] == 'f'))
        return yp_img_pfm_decode(data, size, name, lim, m, out, err);
    return yp_err_set(err,
                      "%s: not an image of a known format (JPEG, PNG, BMP, TIFF, WebP, PFM; told by its first bytes, "
                      "whatever its extension)",
                      name);
}

int yp_image_decode(const uint8_t *data, size_t size, const char *name, const yp_image_limits *lim,
                    yp_image *out, yp_err *err) {
    const yp_img_mode m = {0, NULL, NULL};
    return decode(data, size, name, lim, &m, out, err);
}

int yp_image_decode_into(const uint8_t *data, size_t size, const char *name, const yp_image_limits *lim,
                         yp_image_buffers *b, yp_image *out, yp_err *err) {
    const yp_img_mode m = {0, b, NULL};
    return decode(data, size, name, lim, &m, out, err);
}

/* Reads the regular file open as fd, st_size bytes long, into a new buffer, or into b->file (grown
 * when too small) when b is given. Returns the buffer (the caller frees a new one) with *got set,
 * or NULL with err set. */
static uint8_t *read_fd(int fd, const char *path, size_t size, yp_image_buffers *b, size_t *got, yp_err *err) {
    uint8_t *buf = b && size <= b->file_cap ? b->file : b ? realloc(b->file, size) : malloc(size);
    if (buf && b) b->file = buf, b->file_cap = size > b->file_cap ? size : b->file_cap;
    if (!buf) {
        yp_err_set(err, "%s: out of memory reading %zu bytes", path, size);
        return NULL;
    }
    size_t n = 0;
    while (n < size) { /* a file that grows while read is cut at its size when opened */
        ssize_t r = read(fd, buf + n, size - n);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) {
            yp_err_set(err, "%s: read failed: %s", path, strerror(errno));
            if (!b) free(buf);
            return NULL;
        }
        if (r == 0) break; /* shrank: decode what there is */
        n += (size_t)r;
    }
    *got = n;
    return buf;
}

/* yp_image_read as m says (yp_image_probe's size only, or into m->reuse's buffers). */
static int read_file(const char *path, const yp_image_limits *lim, const yp_img_mode *m, yp_image *out, yp_err *err) {
    yp_image_limits def;
    if (!lim) yp_image_limits_default(&def), lim = &def;
    memset(out, 0, sizeof *out);
    int64_t size;
    int fd = yp_file_open(path, "an image file", lim->max_file_bytes, &size, err);
    if (fd < 0) return -1;
    int rc = -1;
    if (size == 0) yp_err_set(err, "%s: empty file; not an image", path);
    else {
        size_t got = 0;
        uint8_t *buf = read_fd(fd, path, (size_t)size, m->reuse, &got, err);
        if (buf) rc = decode(buf, got, path, lim, m, out, err);
        if (!m->reuse) free(buf);
    }
    close(fd);
    return rc;
}

int yp_image_read(const char *path, const yp_image_limits *lim, yp_image *out, yp_err *err) {
    const yp_img_mode m = {0, NULL, NULL};
    return read_file(path, lim, &m, out, err);
}

int yp_image_read_into(const char *path, const yp_image_limits *lim, yp_image_buffers *b, yp_image *out, yp_err *err) {
    const yp_img_mode m = {0, b, NULL};
    return read_file(path, lim, &m, out, err);
}

int yp_image_read_region_into(const char *path, const yp_image_limits *lim, yp_image_buffers *b, const int region[4],
                              yp_image *out, yp_err *err) {
    const yp_img_mode m = {0, b, region};
    return read_file(path, lim, &m, out, err);
}

int yp_image_probe(const char *path, const yp_image_limits *lim, int *w, int *h, yp_err *err) {
    yp_image im;
    *w = *h = 0;
    const yp_img_mode m = {1, NULL, NULL};
    if (read_file(path, lim, &m, &im, err)) return -1;
    *w = im.w, *h = im.h;
    return 0;
}

int yp_image_verify(const char *path, const yp_image_limits *lim, yp_image_buffers *b, int *w, int *h, yp_err *err) {
    yp_image im;
    *w = *h = 0;
    const yp_img_mode m = {0, b, NULL};
    if (read_file(path, lim, &m, &im, err)) return -1;
    *w = im.w, *h = im.h;
    return 0;
}

/* ---- writing ---- */

/* Writes size bytes to path (created or truncated). Returns 0, or -1 with err set. */
static int write_file(const char *path, const uint8_t *data, size_t size, yp_err *err) {
    FILE *f = fopen(path, "wb");
    if (!f) return yp_err_set(err, "%s: cannot create: %s", path, strerror(errno));
    size_t n = fwrite(data, 1, size, f);
    int bad = n != size || ferror(f);
    if (fclose(f) || bad) return yp_err_set(err, "%s: write failed: %s", path, strerror(errno));
    return 0;
}

int yp_image_write_jpeg(const char *path, const yp_image *im, int quality, yp_err *err) {
    uint8_t *data = NULL;
    size_t size = 0;
    if (yp_image_encode_jpeg(im, quality, &data, &size, err)) return -1;
    int rc = write_file(path, data, size, err);
    free(data);
    return rc;
}

int yp_image_write_png(const char *path, const yp_image *im, yp_err *err) {
    uint8_t *data = NULL;
    size_t size = 0;
    if (yp_image_encode_png(im, &data, &size, err)) return -1;
    int rc = write_file(path, data, size, err);
    free(data);
    return rc;
}
