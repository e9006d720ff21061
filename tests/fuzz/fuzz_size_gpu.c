/* fuzz_size_gpu.c - libFuzzer target for the command line's value parsers: --gpu
 * (planner/gpu.c, yp_gpu_parse) and cli/common.c's cli_parse_size (--reserve, --mem),
 * cli_parse_img (--img) and cli_parse_int, all on the input as one NUL-terminated string (cut at
 * its first NUL, as an argv string is). cli/common.c is compiled into this target.
 * Properties checked on every input:
 *   - no parser crashes or overflows (ASan/UBSan);
 *   - a refusal comes with a non-empty message;
 *   - accepted values are in range: a GPU's memory > 0, a size >= 0, an image side >= 1, the int
 *     within the bounds asked for. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "fuzz_temp.h"
#include "yp_gpu.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void refused(int rc, const yp_err *err, const char *what) {
    if (rc && err->msg[0] == '\0') fz_fail("fuzz_size_gpu", "refused without a message", what);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char *s = malloc(size + 1);
    if (!s) return 0;
    memcpy(s, data, size);
    s[size] = '\0';
    yp_err err;

    yp_gpu gpu;
    err.msg[0] = '\0';
    int rc = yp_gpu_parse(s, &gpu, &err);
    refused(rc, &err, "yp_gpu_parse");
    if (rc == 0 && gpu.mem_bytes <= 0) fz_fail("fuzz_size_gpu", "yp_gpu_parse accepted a GPU without memory", s);

    int64_t bytes = -1;
    err.msg[0] = '\0';
    rc = cli_parse_size("--reserve", s, &bytes, &err);
    refused(rc, &err, "cli_parse_size");
    if (rc == 0 && bytes < 0) fz_fail("fuzz_size_gpu", "cli_parse_size accepted a negative size", s);

    int64_t w = 0, h = 0;
    err.msg[0] = '\0';
    rc = cli_parse_img(s, &w, &h, &err);
    refused(rc, &err, "cli_parse_img");
    if (rc == 0 && (w < 1 || h < 1)) fz_fail("fuzz_size_gpu", "cli_parse_img accepted a side < 1", s);

    long v = 0;
    err.msg[0] = '\0';
    rc = cli_parse_int("--batch", s, 1, 1L << 20, &v, &err);
    refused(rc, &err, "cli_parse_int");
    if (rc == 0 && (v < 1 || v > (1L << 20))) fz_fail("fuzz_size_gpu", "cli_parse_int out of its bounds", s);
    free(s);
    return 0;
}
