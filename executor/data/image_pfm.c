/* image_pfm.c - PFM (portable float map) decoded to 8-bit RGB as OpenCV's cv2.imread(IMREAD_COLOR)
 * decodes it (image_internal.h, yp_image.h). Own parser: a PFM is three text fields and raw floats,
 * and no Debian library decodes it (stb_image and libnetpbm do not).
 *
 * The file: "PF" (RGB) or "Pf" (grey), whitespace, the width and the height in decimal, the scale
 * (a decimal number, not 0; negative: the floats are little-endian, positive: big-endian), one
 * whitespace byte, then width * height * channels 32-bit floats, the bottom row first. Each sample
 * becomes OpenCV's: v * (1 / |scale|) in float, rounded to the nearest integer (ties to even) and
 * saturated to 0..255, with what OpenCV's rounding makes of NaN and of values past +-2^31 (its
 * integer-overflow result, so 0). Grey is replicated to the three channels. Extra bytes after the
 * floats are ignored; fewer is an error. Nothing is allocated but the output. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "image_internal.h"

/* The next whitespace-separated token at *at (at most cap - 1 bytes) into tok; *at is left on the
 * byte after it (the whitespace that ended it). 0, or -1 at the end of the data or when too long. */
static int token(const uint8_t *d, size_t size, size_t *at, char *tok, size_t cap) {
    size_t i = *at, n = 0;
    while (i < size && (d[i] == ' ' || d[i] == '\t' || d[i] == '\r' || d[i] == '\n')) i++;
    while (i < size && !(d[i] == ' ' || d[i] == '\t' || d[i] == '\r' || d[i] == '\n')) {
        if (n + 1 >= cap) return -1;
        tok[n++] = (char)d[i++];
    }
    tok[n] = '\0';
    *at = i;
    return n && i < size ? 0 : -1; /* a field is followed by whitespace */
}

static int64_t dimension(const char *tok) {
    if (!tok[0] || strspn(tok, "0123456789") != strlen(tok) || strlen(tok) > 9) return -1;
    return strtoll(tok, NULL, 10);
}

/* OpenCV's float to 8-bit: cvRound (nearest, ties to even; NaN and out-of-int range give INT_MIN)
 * then saturation. */
static uint8_t to_u8(float v) {
    if (!(v > -2147483648.0f && v < 2147483648.0f)) return 0;
    long r = lrintf(v);
    return (uint8_t)(r < 0 ? 0 : r > 255 ? 255 : r);
}

static float sample(const uint8_t *p, int little) {
    uint32_t u = little ? p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24
                        : (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

int yp_img_pfm_decode(const uint8_t *data, size_t size, const char *name, const yp_image_limits *lim,
                      const yp_img_mode *m, yp_image *out, yp_err *err) {
    memset(out, 0, sizeof *out);
    int ch = data[1] == 'F' ? 3 : 1;
    size_t at = 2;
    char tw[32], th[32], ts[64];
    if (size < 3 || !(data[2] == ' ' || data[2] == '\t' || data[2] == '\r' || data[2] == '\n') ||
        token(data, size, &at, tw, sizeof tw) || token(data, size, &at, th, sizeof th) ||
        token(data, size, &at, ts, sizeof ts))
        return yp_err_set(err, "%s: bad PFM: its header (PF or Pf, width, height, scale) is cut or malformed", name);
    int64_t w = dimension(tw), h = dimension(th);
    char *e;
    double scale = strtod(ts, &e);
    if (w < 0 || h < 0 || *e || !(fabs(scale) > 0))
        return yp_err_set(err, "%s: bad PFM: header \"%s %s %s\" is not a width, a height and a non-zero scale", name,
                          tw, th, ts);
    if (!yp_img_pixels_ok(w, h, lim, name, err)) return -1;
    at++; /* the one whitespace byte before the floats */
    size_t row = (size_t)w * (size_t)ch * 4u; /* checked: w * h <= max_pixels */
    if (size - at < row * (size_t)h)
        return yp_err_set(err, "%s: truncated PFM: %zu bytes of floats where %zu are needed", name, size - at,
                          row * (size_t)h);
    out->w = (int)w, out->h = (int)h;
    if (m->header_only) return 0;
    out->rgb = yp_img_pixels(m, (size_t)w * (size_t)h * 3u);
    if (!out->rgb) {
        memset(out, 0, sizeof *out);
        return yp_err_set(err, "%s: out of memory decoding", name);
    }
    int little = scale < 0;
    float k = (float)(1.0 / fabs(scale));
    for (int64_t y = 0; y < h; y++) {
        const uint8_t *s = data + at + (size_t)(h - 1 - y) * row; /* the bottom row first */
        uint8_t *o = out->rgb + (size_t)y * (size_t)w * 3u;
        for (int64_t x = 0; x < w; x++, o += 3)
            for (int c = 0; c < 3; c++) o[c] = to_u8(sample(s + ((size_t)x * ch + (ch == 3 ? c : 0)) * 4u, little) * k);
    }
    return 0;
}
