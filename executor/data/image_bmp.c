/* image_bmp.c - Windows BMP decoded to 8-bit RGB as OpenCV's cv2.imread(IMREAD_COLOR) decodes it
 * (image_internal.h, yp_image.h). Own parser: Debian's stb_image (libstb-dev) decodes no RLE4/RLE8 and
 * no OS/2 header, and honours bit masks OpenCV ignores, so its pixels would not be OpenCV's.
 *
 * Read as OpenCV reads it: a BITMAPINFOHEADER or a later one (40 bytes or more) or an OS/2 core
 * header (12 bytes); 1-, 4- and 8-bit palette images (a palette of its colour count, 1 << bits when
 * 0, at most 256; an index past it is black), 4-bit RLE4 and 8-bit RLE8 (pixels a delta or an end
 * of line skips are palette entry 0), 16-bit as 5-5-5 (no masks, or BI_BITFIELDS masks 5-5-5 or
 * 5-6-5; each sample shifted up, its low bits 0, as OpenCV does), 24-bit, 32-bit with the fourth byte
 * dropped (not composited); bottom-up (positive height) and top-down rows. Refused with a one-line
 * reason: other compressions (JPEG, PNG, Huffman), other bit masks (OpenCV would decode 32-bit
 * masks other than 8-8-8 to wrong colours), pixel data that ends early, an RLE run or delta past a
 * row's end, an RLE stream without its end. The deltas of RLE4 move down as RLE8's do (OpenCV's
 * RLE4 ignores a delta's rows). Pixels go straight into the output buffer: nothing else is
 * allocated. */
#include <stdint.h>
#include <string.h>

#include "image_internal.h"

enum { BI_RGB = 0, BI_RLE8 = 1, BI_RLE4 = 2, BI_BITFIELDS = 3 };

typedef struct {
    const uint8_t *data;
    size_t size;
    const char *name;
    int64_t w, h;   /* h > 0 */
    int top_down;   /* rows stored top first */
    int bits;       /* 1, 4, 8, 15 (5-5-5), 16 (5-6-5), 24, 32 */
    uint32_t comp;  /* BI_* */
    size_t offset;  /* of the pixel data */
    uint8_t pal[256][3]; /* RGB */
} bmp;

static uint32_t u16(const uint8_t *p) { return p[0] | (uint32_t)p[1] << 8; }
static uint32_t u32(const uint8_t *p) { return u16(p) | u16(p + 2) << 16; }

static int truncated(const bmp *b, yp_err *err) {
    return yp_err_set(err, "%s: truncated BMP: the file ends before its pixels do; re-save it as PNG", b->name);
}

/* The palette of n entries of `step` bytes (B G R [X]) at `at`; the rest stays black. */
static int read_palette(bmp *b, size_t at, uint32_t n, size_t step, yp_err *err) {
    if (n > 256) return yp_err_set(err, "%s: bad BMP: a palette of %u colours (at most 256)", b->name, n);
    if (at > b->size || (b->size - at) / step < n) return truncated(b, err);
    for (uint32_t i = 0; i < n; i++) {
        const uint8_t *e = b->data + at + i * step;
        b->pal[i][0] = e[2], b->pal[i][1] = e[1], b->pal[i][2] = e[0];
    }
    return 0;
}

/* Whether bits/comp (and the masks of BI_BITFIELDS) is a layout this file decodes; sets b->bits. */
static int check_layout(bmp *b, uint32_t hsize, yp_err *err) {
    int bits = b->bits;
    uint32_t c = b->comp;
    int ok = ((bits == 1 || bits == 4 || bits == 8 || bits == 16 || bits == 24 || bits == 32) && c == BI_RGB) ||
             ((bits == 16 || bits == 32) && c == BI_BITFIELDS) || (bits == 4 && c == BI_RLE4) ||
             (bits == 8 && c == BI_RLE8);
    if (!ok)
        return yp_err_set(err, "%s: BMP of %d bits per pixel with compression %u is not supported; re-save it as PNG",
                          b->name, bits, c);
    if (bits == 16 && c == BI_RGB) b->bits = 15;
    if (c != BI_BITFIELDS) return 0;
    if (b->size < 14 + 40 + 12 || hsize < 40) return truncated(b, err);
    uint32_t r = u32(b->data + 54), g = u32(b->data + 58), bl = u32(b->data + 62);
    if (bits == 16 && bl == 0x1f && g == 0x3e0 && r == 0x7c00) b->bits = 15;
    else if (bits == 16 && bl == 0x1f && g == 0x7e0 && r == 0xf800) b->bits = 16;
    else if (!(bits == 32 && bl == 0xff && g == 0xff00 && r == 0xff0000))
        return yp_err_set(err,
                          "%s: BMP of %d bits with bit masks R %#x G %#x B %#x is not supported; re-save it as PNG",
                          b->name, bits, r, g, bl);
    return 0;
}

/* Reads and checks the headers and the palette into *b. */
static int read_header(bmp *b, const yp_image_limits *lim, yp_err *err) {
    const uint8_t *d = b->data;
    if (b->size < 14 + 12) return truncated(b, err);
    b->offset = u32(d + 10);
    uint32_t hsize = u32(d + 14);
    int64_t h;
    if (hsize == 12) { /* OS/2 BITMAPCOREHEADER: 16-bit sizes, a palette of 3-byte entries */
        b->w = u16(d + 18), h = u16(d + 20), b->bits = (int)u16(d + 24), b->comp = BI_RGB;
        if (!(b->bits == 1 || b->bits == 4 || b->bits == 8 || b->bits == 24 || b->bits == 32))
            return yp_err_set(err, "%s: BMP of %d bits per pixel is not supported; re-save it as PNG", b->name,
                              b->bits);
        if (b->bits <= 8 && read_palette(b, 14 + 12, 1u << b->bits, 3, err)) return -1;
    } else if (hsize >= 40) {
        if (b->size < 14 + 40) return truncated(b, err);
        b->w = (int32_t)u32(d + 18), h = (int32_t)u32(d + 22), b->bits = (int)u16(d + 28), b->comp = u32(d + 30);
        if (check_layout(b, hsize, err)) return -1;
        uint32_t used = u32(d + 46);
        if (b->bits <= 8 && read_palette(b, 14 + (size_t)hsize, used ? used : 1u << b->bits, 4, err)) return -1;
    } else {
        return yp_err_set(err, "%s: bad BMP: an info header of %u bytes (12, or 40 and more)", b->name, hsize);
    }
    b->top_down = h < 0;
    b->h = h < 0 ? -h : h;
    if (!yp_img_pixels_ok(b->w, b->h, lim, b->name, err)) return -1;
    if (b->offset > b->size) return truncated(b, err);
    return 0;
}

/* One stored row of uncompressed pixels to RGB (one loop per layout: the switch is per row). */
static void row_to_rgb(const bmp *b, const uint8_t *s, uint8_t *o) {
    size_t w = (size_t)b->w, x;
    uint32_t t;
    switch (b->bits) {
    case 1:
        for (x = 0; x < w; x++, o += 3) memcpy(o, b->pal[s[x >> 3] >> (7 - (x & 7)) & 1], 3);
        break;
    case 4:
        for (x = 0; x < w; x++, o += 3) memcpy(o, b->pal[s[x >> 1] >> (x & 1 ? 0 : 4) & 15], 3);
        break;
    case 8:
        for (x = 0; x < w; x++, o += 3) memcpy(o, b->pal[s[x]], 3);
        break;
    case 15:
        for (x = 0; x < w; x++, o += 3) {
            t = u16(s + 2 * x);
            o[0] = (uint8_t)(t >> 7 & 0xf8), o[1] = (uint8_t)(t >> 2 & 0xf8), o[2] = (uint8_t)(t << 3 & 0xf8);
        }
        break;
    case 16:
        for (x = 0; x < w; x++, o += 3) {
            t = u16(s + 2 * x);
            o[0] = (uint8_t)(t >> 8 & 0xf8), o[1] = (uint8_t)(t >> 3 & 0xfc), o[2] = (uint8_t)(t << 3 & 0xf8);
        }
        break;
    case 24:
        for (x = 0; x < w; x++, o += 3, s += 3) o[0] = s[2], o[1] = s[1], o[2] = s[0];
        break;
    default:
        for (x = 0; x < w; x++, o += 3, s += 4) o[0] = s[2], o[1] = s[1], o[2] = s[0];
        break;
    }
}

static int decode_plain(const bmp *b, uint8_t *rgb, yp_err *err) {
    size_t bits = b->bits == 15 ? 16 : (size_t)b->bits;
    size_t used = ((size_t)b->w * bits + 7) / 8, pitch = ((size_t)b->w * bits + 31) / 32 * 4;
    /* every row but the last padded to 4 bytes, the last perhaps not (sizes checked: w * h <= max_pixels) */
    if (b->size - b->offset < (size_t)(b->h - 1) * pitch + used) return truncated(b, err);
    for (int64_t y = 0; y < b->h; y++) {
        int64_t oy = b->top_down ? y : b->h - 1 - y;
        row_to_rgb(b, b->data + b->offset + (size_t)y * pitch, rgb + (size_t)oy * (size_t)b->w * 3u);
    }
    return 0;
}

/* RLE4/RLE8: (count, value) runs, 0 0 end of line, 0 1 end of bitmap, 0 2 dx dy delta, 0 n
 * absolute run of n pixels padded to 2 bytes. */
static int decode_rle(const bmp *b, uint8_t *rgb, yp_err *err) {
    int four = b->comp == BI_RLE4;
    size_t npx = (size_t)b->w * (size_t)b->h;
    for (size_t i = 0; i < npx; i++) memcpy(rgb + 3 * i, b->pal[0], 3);
    const uint8_t *p = b->data + b->offset, *end = b->data + b->size;
    int64_t x = 0, y = 0;
    while (y < b->h) {
        if (end - p < 2)
            return yp_err_set(err, "%s: truncated BMP: the RLE data ends before its end-of-bitmap code", b->name);
        unsigned n = p[0], c = p[1];
        p += 2;
        if (n == 0 && c == 0) x = 0, y++;
        else if (n == 0 && c == 1) break;
        else if (n == 0 && c == 2) {
            if (end - p < 2) return truncated(b, err);
            int64_t pos = y * b->w + x + p[0] + (int64_t)p[1] * b->w; /* forward, row after row */
            if (x + p[0] > b->w) return yp_err_set(err, "%s: bad BMP: an RLE delta past a row's end", b->name);
            p += 2, y = pos / b->w, x = pos % b->w;
        } else {
            unsigned count = n ? n : c;
            size_t bytes = n ? 0 : four ? ((count + 1) / 2 + 1) & ~1u : (count + 1) & ~1u;
            if (x + count > b->w) return yp_err_set(err, "%s: bad BMP: an RLE run past a row's end", b->name);
            if ((size_t)(end - p) < bytes) return truncated(b, err);
            int64_t oy = b->top_down ? y : b->h - 1 - y;
            uint8_t *o = rgb + ((size_t)oy * (size_t)b->w + (size_t)x) * 3u;
            for (unsigned i = 0; i < count; i++, o += 3) {
                unsigned v = n ? c : four ? p[i / 2] : p[i];
                if (four) v = i & 1 ? v & 15 : v >> 4;
                memcpy(o, b->pal[v], 3);
            }
            p += bytes, x += count;
        }
    }
    return 0;
}

int yp_img_bmp_decode(const uint8_t *data, size_t size, const char *name, const yp_image_limits *lim,
                      const yp_img_mode *m, yp_image *out, yp_err *err) {
    memset(out, 0, sizeof *out);
    bmp b;
    memset(&b, 0, sizeof b);
    b.data = data, b.size = size, b.name = name;
    if (read_header(&b, lim, err)) return -1;
    if (!m->header_only) {
        out->rgb = yp_img_pixels(m, (size_t)b.w * (size_t)b.h * 3u); /* checked: w * h <= max_pixels */
        if (!out->rgb) return yp_err_set(err, "%s: out of memory decoding", name);
        if (b.comp == BI_RLE4 || b.comp == BI_RLE8 ? decode_rle(&b, out->rgb, err) : decode_plain(&b, out->rgb, err)) {
            yp_img_pixels_release(m, out->rgb);
            out->rgb = NULL;
            return -1;
        }
    }
    out->w = (int)b.w, out->h = (int)b.h;
    return 0;
}
