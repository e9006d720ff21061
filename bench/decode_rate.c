/* decode_rate.c - how fast yp_image_decode_into (executor/data/yp_image.h) decodes the given image
 * files (any format it reads) from memory into one reused pair of buffers, as the loader's workers
 * decode, to set beside libjpeg-turbo's tjbench and OpenCV's imdecode (bench/decode_rate.sh). Each
 * file is read once, then the set is decoded round after round for at least --seconds (default 2).
 * Prints one line: Mpixel/s (all pixels over all the time), images/s, files, decodes and seconds.
 * `decode_rate --size FILE` prints the image's width and height. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "yp_image.h"
#include "yp_clock.h"

/* The whole file (malloc'd) or NULL. */
static unsigned char *slurp(const char *path, size_t *n) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    unsigned char *buf = NULL;
    size_t cap = 0;
    *n = 0;
    for (;;) {
        if (*n == cap) {
            unsigned char *b = realloc(buf, cap = cap ? 2 * cap : 1 << 16);
            if (!b) break;
            buf = b;
        }
        size_t got = fread(buf + *n, 1, cap - *n, f);
        if (!got) break;
        *n += got;
    }
    fclose(f);
    return buf;
}

int main(int argc, char **argv) {
    if (argc == 3 && !strcmp(argv[1], "--size")) { /* the image's "W H", for decode_rate.sh --dir */
        size_t n;
        unsigned char *buf = slurp(argv[2], &n);
        yp_image im;
        yp_err err;
        if (!buf || yp_image_decode(buf, n, argv[2], NULL, &im, &err)) return fprintf(stderr, "decode_rate: %s: cannot decode\n", argv[2]), 1;
        printf("%d %d\n", im.w, im.h);
        yp_image_free(&im), free(buf);
        return 0;
    }
    double seconds = 2;
    int first = 1;
    if (argc > 2 && !strcmp(argv[1], "--seconds")) seconds = atof(argv[2]), first = 3;
    int n = argc - first;
    if (n < 1 || seconds <= 0) {
        fprintf(stderr, "usage: decode_rate [--seconds S] FILE...\n");
        return 2;
    }
    unsigned char **data = calloc((size_t)n, sizeof *data);
    size_t *size = calloc((size_t)n, sizeof *size);
    if (!data || !size) return 1;
    for (int i = 0; i < n; i++)
        if (!(data[i] = slurp(argv[first + i], &size[i]))) {
            fprintf(stderr, "decode_rate: %s: cannot read\n", argv[first + i]);
            return 1;
        }
    yp_image_buffers bufs = {0};
    double pixels = 0, t0 = yp_now_s(), t = t0;
    long decodes = 0;
    while (t - t0 < seconds) {
        for (int i = 0; i < n; i++) {
            yp_image im;
            yp_err err;
            if (yp_image_decode_into(data[i], size[i], argv[first + i], NULL, &bufs, &im, &err)) {
                fprintf(stderr, "decode_rate: %s\n", err.msg);
                return 1;
            }
            pixels += (double)im.w * im.h;
            decodes++;
        }
        t = yp_now_s();
    }
    yp_image_buffers_free(&bufs);
    printf("%-40s %9.1f %9.1f   (%d files, %ld decodes, %.2f s)\n", "yoloplan (yp_image_decode_into, in memory)",
           pixels / (t - t0) / 1e6, (double)decodes / (t - t0), n, decodes, t - t0);
    for (int i = 0; i < n; i++) free(data[i]);
    free(data);
    free(size);
    return 0;
}
