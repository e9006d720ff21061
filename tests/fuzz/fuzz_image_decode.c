/* fuzz_image_decode.c - libFuzzer target for the image decoders (executor/data/image_jpeg.c,
 * image_png.c, image_bmp.c, image_tiff.c, image_webp.c and image_pfm.c, all through yp_image_decode's
 * dispatch by first bytes, so one target covers every codec; the header-only yp_image_probe on the
 * same bytes written to a scratch file). Limits: 4 Mpx (so a hostile header costs at most 12 MB of pixels here).
 * Properties checked on every input:
 *   - neither call crashes, leaks or reads out of bounds (ASan/UBSan), and every pixel of an
 *     accepted image is readable (its last byte is read);
 *   - a refused input comes with a non-empty message;
 *   - when both accept the input, the probe's size is the decoded image's. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "fuzz_temp.h"
#include "yp_image.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    yp_image_limits lim;
    yp_image_limits_default(&lim);
    lim.max_pixels = (int64_t)1 << 22;
    yp_err err;
    memset(err.msg, 0, sizeof err.msg);
    yp_image im;
    int decoded = yp_image_decode(data, size, "fuzz.img", &lim, &im, &err) == 0;
    if (decoded) {
        if (im.w < 1 || im.h < 1 || (int64_t)im.w * im.h > lim.max_pixels || !im.rgb)
            fz_fail("fuzz_image_decode", "decoded image with a bad size", NULL);
        volatile uint8_t last = im.rgb[(size_t)im.w * (size_t)im.h * 3 - 1];
        (void)last;
    } else if (err.msg[0] == '\0') {
        fz_fail("fuzz_image_decode", "decode refused without a message", NULL);
    }
    const char *path = fz_temp_write("probe.img", data, size);
    int pw = 0, ph = 0;
    err.msg[0] = '\0';
    if (yp_image_probe(path, &lim, &pw, &ph, &err) == 0) {
        if (decoded && (pw != im.w || ph != im.h)) {
            char what[96];
            snprintf(what, sizeof what, "probe %dx%d, decode %dx%d", pw, ph, im.w, im.h);
            fz_fail("fuzz_image_decode", "probe and decode disagree on the size", what);
        }
    } else if (err.msg[0] == '\0') {
        fz_fail("fuzz_image_decode", "probe refused without a message", NULL);
    }
    if (decoded) yp_image_free(&im);
    return 0;
}
