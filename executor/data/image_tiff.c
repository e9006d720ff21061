/* image_tiff.c - TIFF, BigTIFF and DNG through libtiff (image_internal.h, yp_image.h), decoded to
 * 8-bit RGB as OpenCV's cv2.imread(IMREAD_COLOR) decodes them: the first image (IFD 0) only, through
 * libtiff's RGBA interface (TIFFRGBAImage), which is OpenCV's path to 8-bit colour: grey and palette
 * expanded, 16-bit RGB rounded to 8 bits (v / 257) and 16-bit grey cut to its high byte, CMYK,
 * YCbCr, LogLuv and the JPEG, LZW, Deflate and PackBits codecs as libtiff converts them, the alpha
 * channel dropped after libtiff's RGBA interface has applied it (an unassociated alpha premultiplies
 * the colours, what OpenCV gets too); then the Orientation tag (274) applied as EXIF's (yp_image.h).
 * A DNG is a TIFF whose IFD 0 OpenCV decodes the same way: a DNG whose IFD 0 is an RGB preview
 * gives that preview; one whose IFD 0 is raw sensor data (CFA or LinearRaw) is refused, as libtiff's
 * RGBA interface (and so OpenCV) cannot convert it.
 *
 * Differences from OpenCV: a strip or tile that fails to decode (a truncated or corrupt file) is an
 * error here, where OpenCV keeps whatever libtiff left in the buffer.
 *
 * libtiff reads from memory (its map procedure hands it the bytes: no copy of the file) and its
 * error and warning handlers are this file's (per handle, TIFFOpenOptions), so it prints nothing;
 * the first error is the one-line reason. It allocates its handle, directory and strip or tile
 * buffers per image, each at most MAX_ALLOC bytes (TIFFOpenOptionsSetMaxSingleMemAlloc). The RGBA
 * raster is the reused pixel buffer grown to 4 bytes a pixel, packed to RGB in place. */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <tiffio.h>

#include "image_internal.h"

#define MAX_ALLOC ((tmsize_t)1 << 30) /* one libtiff allocation at most (the file size cap) */

typedef struct {
    const uint8_t *data;
    size_t size, pos;
    char msg[256]; /* libtiff's first error */
} tsrc;

static int on_error(TIFF *t, void *user, const char *module, const char *fmt, va_list ap) {
    (void)t, (void)module;
    tsrc *s = user;
    if (!s->msg[0]) vsnprintf(s->msg, sizeof s->msg, fmt, ap);
    return 1; /* handled: libtiff's own handler does not print it */
}

static int on_warning(TIFF *t, void *user, const char *module, const char *fmt, va_list ap) {
    (void)t, (void)user, (void)module, (void)fmt, (void)ap;
    return 1;
}

static tmsize_t src_read(thandle_t h, void *buf, tmsize_t n) {
    tsrc *s = (tsrc *)h;
    size_t left = s->size - s->pos, k = n < 0 ? 0 : (size_t)n < left ? (size_t)n : left;
    memcpy(buf, s->data + s->pos, k);
    s->pos += k;
    return (tmsize_t)k;
}

static tmsize_t src_write(thandle_t h, void *buf, tmsize_t n) {
    (void)h, (void)buf, (void)n;
    return 0;
}

static toff_t src_seek(thandle_t h, toff_t off, int whence) {
    tsrc *s = (tsrc *)h;
    uint64_t base = whence == SEEK_CUR ? s->pos : whence == SEEK_END ? s->size : 0, to = base + off;
    if (to < base || to > s->size) return (toff_t)-1; /* past the end (or wrapped): no such offset */
    s->pos = (size_t)to;
    return to;
}

static int src_close(thandle_t h) { return (void)h, 0; }
static toff_t src_size(thandle_t h) { return ((tsrc *)h)->size; }

static int src_map(thandle_t h, void **base, toff_t *size) {
    tsrc *s = (tsrc *)h;
    *base = (void *)s->data, *size = s->size;
    return 1;
}

static void src_unmap(thandle_t h, void *base, toff_t size) { (void)h, (void)base, (void)size; }

/* "NAME: reason; fix" for libtiff's message (or what) */
static int tiff_fail(const tsrc *s, const char *name, const char *what, yp_err *err) {
    return yp_err_set(err, "%s: bad TIFF: %s; re-save it as JPEG or PNG", name, s->msg[0] ? s->msg : what);
}

/* Packs the RGBA raster (libtiff's uint32 ABGR, R in the low byte) of n pixels at p to RGB, in place. */
static void rgba_to_rgb(uint8_t *p, size_t n) {
    const uint32_t *q = (const uint32_t *)p;
    for (size_t i = 0; i < n; i++) {
        uint32_t v = q[i]; /* read before the bytes it covers are overwritten: 3i + 2 < 4i + 4 */
        p[3 * i] = (uint8_t)TIFFGetR(v), p[3 * i + 1] = (uint8_t)TIFFGetG(v), p[3 * i + 2] = (uint8_t)TIFFGetB(v);
    }
}

/* Checks IFD 0 of tif, then (unless header_only) decodes it into out. The orientation goes to *orient. */
static int decode_ifd0(TIFF *tif, tsrc *s, const char *name, const yp_image_limits *lim, const yp_img_mode *m,
                       yp_image *out, int *orient, yp_err *err) {
    uint32_t w = 0, h = 0;
    uint16_t o = ORIENTATION_TOPLEFT;
    if (!TIFFGetField(tif, TIFFTAG_IMAGEWIDTH, &w) || !TIFFGetField(tif, TIFFTAG_IMAGELENGTH, &h))
        return tiff_fail(s, name, "no image width or length", err);
    if (!yp_img_pixels_ok(w, h, lim, name, err)) return -1;
    TIFFGetField(tif, TIFFTAG_ORIENTATION, &o);
    *orient = o;
    char why[1024];
    if (!TIFFRGBAImageOK(tif, why)) {
        void *dng;
        if (TIFFGetField(tif, TIFFTAG_DNGVERSION, &dng))
            return yp_err_set(err, "%s: DNG whose first image is raw sensor data (%s), which OpenCV does not decode "
                                   "either; develop it to JPEG or PNG", name, why);
        return yp_err_set(err, "%s: TIFF that libtiff cannot convert to RGB (%s); re-save it as JPEG or PNG", name,
                          why);
    }
    int swap = o >= 5 && o <= 8;
    out->w = (int)(swap ? h : w), out->h = (int)(swap ? w : h);
    if (m->header_only) return 0;
    size_t n = (size_t)w * (size_t)h; /* checked: <= max_pixels */
    uint8_t *px = yp_img_pixels(m, n * 4u);
    if (!px) return yp_err_set(err, "%s: out of memory decoding", name);
    TIFFRGBAImage img;
    int ok = TIFFRGBAImageBegin(&img, tif, 1, why);
    if (ok) {
        img.req_orientation = ORIENTATION_TOPLEFT;
        img.orientation = ORIENTATION_TOPLEFT; /* rows as stored: the orientation is applied after, as EXIF's */
        ok = TIFFRGBAImageGet(&img, (uint32_t *)(void *)px, w, h) && !s->msg[0];
        TIFFRGBAImageEnd(&img);
    }
    if (!ok) {
        yp_img_pixels_release(m, px);
        return tiff_fail(s, name, why[0] ? why : "its image data does not decode", err);
    }
    rgba_to_rgb(px, n);
    out->rgb = px, out->w = (int)w, out->h = (int)h;
    return 0;
}

int yp_img_tiff_decode(const uint8_t *data, size_t size, const char *name, const yp_image_limits *lim,
                       const yp_img_mode *m, yp_image *out, yp_err *err) {
    memset(out, 0, sizeof *out);
    tsrc s = {.data = data, .size = size};
    TIFFOpenOptions *opts = TIFFOpenOptionsAlloc();
    if (!opts) return yp_err_set(err, "%s: out of memory decoding", name);
    TIFFOpenOptionsSetMaxSingleMemAlloc(opts, MAX_ALLOC);
    TIFFOpenOptionsSetErrorHandlerExtR(opts, on_error, &s);
    TIFFOpenOptionsSetWarningHandlerExtR(opts, on_warning, &s);
    TIFF *tif = TIFFClientOpenExt(name, "r", (thandle_t)&s, src_read, src_write, src_seek, src_close, src_size, src_map,
                                  src_unmap, opts);
    TIFFOpenOptionsFree(opts);
    if (!tif) {
        if (!s.msg[0]) snprintf(s.msg, sizeof s.msg, "its header or first directory does not read");
        return s.pos >= size || strstr(s.msg, "end of file") || strstr(s.msg, "past end")
                   ? yp_err_set(err, "%s: truncated TIFF: %s; re-save it as JPEG or PNG", name, s.msg)
                   : tiff_fail(&s, name, "", err);
    }
    int orient = 1, rc = decode_ifd0(tif, &s, name, lim, m, out, &orient, err);
    TIFFClose(tif);
    if (rc) {
        memset(out, 0, sizeof *out);
        return -1;
    }
    if (m->header_only) return 0;
    return yp_img_orient_mode(m, out, orient, err);
}
