/* image_webp.c - WebP through libwebp (image_internal.h, yp_image.h), decoded to 8-bit RGB as
 * OpenCV's cv2.imread(IMREAD_COLOR) decodes it: lossy or lossless, alpha dropped (not composited),
 * libwebp's default (fancy) upsampling. An animated WebP is refused, as OpenCV refuses it.
 *
 * libwebp decodes straight into the output buffer (external memory); it allocates its own decoder
 * state per image (for a lossless image about 4 bytes a pixel, freed before it returns), and
 * prints nothing. */
#include <stdint.h>
#include <string.h>

#include <webp/decode.h>

#include "image_internal.h"

static const char *status_text(VP8StatusCode s) {
    switch (s) {
    case VP8_STATUS_OUT_OF_MEMORY: return "out of memory";
    case VP8_STATUS_INVALID_PARAM: return "invalid parameter";
    case VP8_STATUS_BITSTREAM_ERROR: return "corrupt bitstream";
    case VP8_STATUS_UNSUPPORTED_FEATURE: return "a feature libwebp does not decode";
    case VP8_STATUS_SUSPENDED: return "suspended";
    case VP8_STATUS_USER_ABORT: return "aborted";
    case VP8_STATUS_NOT_ENOUGH_DATA: return "the data ends early";
    default: return "failed";
    }
}

static int fail(const char *name, VP8StatusCode s, yp_err *err) {
    if (s == VP8_STATUS_NOT_ENOUGH_DATA)
        return yp_err_set(err, "%s: truncated WebP: the data ends early; re-save it as JPEG or PNG", name);
    return yp_err_set(err, "%s: bad WebP: %s; re-save it as JPEG or PNG", name, status_text(s));
}

int yp_img_webp_decode(const uint8_t *data, size_t size, const char *name, const yp_image_limits *lim,
                       const yp_img_mode *m, yp_image *out, yp_err *err) {
    memset(out, 0, sizeof *out);
    WebPDecoderConfig cfg;
    if (!WebPInitDecoderConfig(&cfg)) return yp_err_set(err, "%s: libwebp's version does not match its header", name);
    VP8StatusCode s = WebPGetFeatures(data, size, &cfg.input);
    if (s != VP8_STATUS_OK) return fail(name, s, err);
    if (cfg.input.has_animation)
        return yp_err_set(err, "%s: animated WebP is not supported (OpenCV reads none of it); save a frame as PNG",
                          name);
    if (!yp_img_pixels_ok(cfg.input.width, cfg.input.height, lim, name, err)) return -1;
    int w = cfg.input.width, h = cfg.input.height;
    if (m->header_only) {
        out->w = w, out->h = h;
        return 0;
    }
    size_t bytes = (size_t)w * (size_t)h * 3u; /* checked: w * h <= max_pixels */
    uint8_t *rgb = yp_img_pixels(m, bytes);
    if (!rgb) return yp_err_set(err, "%s: out of memory decoding", name);
    cfg.output.colorspace = MODE_RGB;
    cfg.output.is_external_memory = 1;
    cfg.output.u.RGBA.rgba = rgb;
    cfg.output.u.RGBA.stride = w * 3;
    cfg.output.u.RGBA.size = bytes;
    s = WebPDecode(data, size, &cfg);
    WebPFreeDecBuffer(&cfg.output); /* external memory: frees nothing of ours */
    if (s != VP8_STATUS_OK) {
        yp_img_pixels_release(m, rgb);
        return fail(name, s, err);
    }
    out->rgb = rgb, out->w = w, out->h = h;
    return 0;
}
