/* test_image_formats.c - the formats beyond JPEG and PNG (executor/data/image_bmp.c, image_tiff.c,
 * image_webp.c, image_pfm.c) and the JPEG/PNG variants OpenCV users meet (progressive, CMYK, MPO,
 * 16-bit, palette with transparency): every fixture of tests/data/images/ decodes to the pixels
 * cv2.imread(IMREAD_COLOR) gave for it (NAME.expect.png, written by make_fixtures.py there), through
 * yp_image_read, yp_image_read_into, yp_image_verify and yp_image_probe alike. Then the hostile
 * inputs per format: every prefix of every fixture, 60000x60000 headers, refused variants, empty
 * files, a folder and a FIFO named like images, and libtiff's silence on stderr. */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "yp_image.h"
#include "yp_test.h"

#define FIX YP_TEST_DATA "/images/"

/* Every fixture with an OpenCV reference (make_fixtures.py's files but the two it lists in
 * NO_REFERENCE.txt). */
static const char *const fixtures[] = {
    "pal1_2.bmp", "pal4_16.bmp", "pal8_256.bmp", "pal8_20.bmp", "grey8_topdown.bmp", "rgb24.bmp",
    "rgb24_topdown.bmp", "rgb24_core.bmp", "rgba32.bmp", "rgba32_bitfields.bmp", "rgb555.bmp", "rgb565.bmp",
    "rle8.bmp", "rle4.bmp", "rgb8.tif", "rgb8_lzw.tif", "rgb8_deflate.tif", "rgb8_jpeg.tif", "rgb8_packbits.tif",
    "tiled.tif", "bigtiff.tif", "grey8.tif",
    "bilevel.tif", "palette.tif", "rgba_unassoc.tif", "cmyk.tif", "rgb16.tif", "grey16.tif", "orient3.tif",
    "orient6.tif", "orient8.tif", "multipage.tif", "dng_preview.dng", "lossless.webp", "lossless_alpha.webp",
    "lossy.webp", "lossy_alpha.webp", "rgb_le.pfm", "grey_be_scale2.pfm", "rgb_le_scale_quarter.pfm",
    "progressive.jpg", "cmyk.jpg", "two_frames.mpo", "rgb16.png", "palette_trns.png", "exif3.png", "exif6.png",
    "exif7.png", "exif6.webp", "exif6.jpg",
};
#define NFIX (sizeof fixtures / sizeof fixtures[0])

static char dir[64] = "/tmp/yp_test_image_formats.XXXXXX";

typedef struct {
    uint8_t *p;
    size_t n;
} bytes;

static int slurp(const char *path, bytes *b) {
    FILE *f = fopen(path, "rb");
    if (!f) return -1;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    b->p = malloc(n > 0 ? (size_t)n : 1), b->n = (size_t)n;
    int ok = b->p && fread(b->p, 1, b->n, f) == b->n;
    fclose(f);
    return ok ? 0 : -1;
}

static int same(const yp_image *a, const yp_image *b) {
    return a->w == b->w && a->h == b->h && memcmp(a->rgb, b->rgb, (size_t)a->w * (size_t)a->h * 3u) == 0;
}

/* The first pixel where a and b differ, printed. */
static void show_diff(const char *name, const yp_image *a, const yp_image *b) {
    if (a->w != b->w || a->h != b->h) {
        fprintf(stderr, "  %s: %dx%d, OpenCV %dx%d\n", name, a->w, a->h, b->w, b->h);
        return;
    }
    for (size_t i = 0; i < (size_t)a->w * (size_t)a->h; i++)
        if (memcmp(a->rgb + 3 * i, b->rgb + 3 * i, 3)) {
            const uint8_t *p = a->rgb + 3 * i, *q = b->rgb + 3 * i;
            fprintf(stderr, "  %s: pixel (%zu, %zu) is %u %u %u, OpenCV's %u %u %u\n", name, i % (size_t)a->w,
                    i / (size_t)a->w, p[0], p[1], p[2], q[0], q[1], q[2]);
            return;
        }
}

static void test_fixtures_match_opencv(void) {
    yp_image_buffers bufs = {0};
    int matched = 0;
    for (size_t i = 0; i < NFIX; i++) {
        char path[256], ref[300];
        snprintf(path, sizeof path, FIX "%s", fixtures[i]);
        snprintf(ref, sizeof ref, "%s.expect.png", path);
        yp_image got, want, into;
        yp_err err;
        if (yp_image_read(ref, NULL, &want, &err)) {
            fprintf(stderr, "  %s\n", err.msg);
            CHECK(0);
            continue;
        }
        if (yp_image_read(path, NULL, &got, &err)) {
            fprintf(stderr, "  %s\n", err.msg);
            CHECK(0);
            yp_image_free(&want);
            continue;
        }
        if (same(&got, &want)) matched++;
        else {
            show_diff(fixtures[i], &got, &want);
            CHECK(0);
        }
        CHECK(yp_image_read_into(path, NULL, &bufs, &into, &err) == 0 && same(&into, &want));
        int w = 0, h = 0;
        CHECK(yp_image_verify(path, NULL, &bufs, &w, &h, &err) == 0 && w == want.w && h == want.h);
        CHECK(yp_image_probe(path, NULL, &w, &h, &err) == 0 && w == want.w && h == want.h);
        yp_image_free(&got), yp_image_free(&want);
    }
    CHECK_EQ_I64(matched, NFIX);
    yp_image_buffers_free(&bufs);
}

/* What OpenCV refuses too: a DNG of raw sensor data, an animated WebP. */
static void test_refused_variants(void) {
    yp_image im;
    yp_err err;
    CHECK(yp_image_read(FIX "dng_cfa.dng", NULL, &im, &err) == -1 && im.rgb == NULL);
    CHECK_STR_HAS(err.msg, "dng_cfa.dng: DNG whose first image is raw sensor data");
    CHECK_STR_HAS(err.msg, "develop it to JPEG or PNG");
    int w = 1, h = 1;
    CHECK(yp_image_probe(FIX "dng_cfa.dng", NULL, &w, &h, &err) == -1 && w == 0 && h == 0);
    CHECK(yp_image_read(FIX "animated.webp", NULL, &im, &err) == -1);
    CHECK_STR_HAS(err.msg, "animated.webp: animated WebP is not supported");
    bytes b;
    REQUIRE(slurp(FIX "rgb24.bmp", &b) == 0);
    b.p[30] = 4; /* BI_JPEG */
    CHECK(yp_image_decode(b.p, b.n, "bmp", NULL, &im, &err) == -1);
    CHECK_STR_HAS(err.msg, "bmp: BMP of 24 bits per pixel with compression 4 is not supported; re-save it as PNG");
    free(b.p);
    REQUIRE(slurp(FIX "rgba32_bitfields.bmp", &b) == 0);
    b.p[54] = 0xf0; /* the red mask */
    CHECK(yp_image_decode(b.p, b.n, "bmp", NULL, &im, &err) == -1);
    CHECK_STR_HAS(err.msg, "bmp: BMP of 32 bits with bit masks R 0xff00f0");
    free(b.p);
    REQUIRE(slurp(FIX "rle8.bmp", &b) == 0);
    b.p[b.n - 6] = 9; /* the last row's run of 1 becomes 9, past the row's end */
    CHECK(yp_image_decode(b.p, b.n, "rle", NULL, &im, &err) == -1);
    CHECK_STR_HAS(err.msg, "rle: bad BMP: an RLE run past a row's end");
    free(b.p);
    static const char zero_scale[] = "PF\n1 1\n0\n\0\0\0\0\0\0\0\0\0\0\0\0";
    CHECK(yp_image_decode((const uint8_t *)zero_scale, sizeof zero_scale - 1, "pfm", NULL, &im, &err) == -1);
    CHECK_STR_HAS(err.msg, "pfm: bad PFM: header \"1 1 0\" is not a width, a height and a non-zero scale");
}

/* Every prefix of every fixture: no crash (the ASan build reads past nothing), a one-line
 * "cut: ..." error or an image, and an error for every prefix up to half the file, but where a
 * whole first image lies in that half: a multi-page TIFF's first page, an MPO's first frame, and a
 * progressive JPEG cut where a scan ends (libjpeg, as OpenCV, then decodes the scans it has). */
static void test_every_prefix(void) {
    for (size_t i = 0; i < NFIX; i++) {
        char path[256];
        snprintf(path, sizeof path, FIX "%s", fixtures[i]);
        bytes b;
        REQUIRE(slurp(path, &b) == 0);
        int bad = 0, whole_first = !strcmp(fixtures[i], "multipage.tif") || !strcmp(fixtures[i], "two_frames.mpo") ||
                                   !strcmp(fixtures[i], "progressive.jpg");
        for (size_t n = 0; n < b.n; n++) {
            uint8_t *cut = malloc(n ? n : 1);
            REQUIRE(cut);
            memcpy(cut, b.p, n);
            yp_image im;
            yp_err err;
            err.msg[0] = '\0';
            int rc = yp_image_decode(cut, n, "cut", NULL, &im, &err);
            if (rc == 0) yp_image_free(&im);
            int wrong = rc == 0 ? n <= b.n / 2 && !whole_first
                                : strncmp(err.msg, "cut: ", 5) != 0 || strchr(err.msg, '\n') != NULL;
            if (wrong) {
                if (!bad) fprintf(stderr, "  %s cut to %zu bytes: rc %d, \"%s\"\n", fixtures[i], n, rc, err.msg);
                bad = 1;
            }
            free(cut);
        }
        CHECK(!bad);
        free(b.p);
    }
    yp_image im;
    yp_err err;
    static const char tiff_only[] = "II*\0", webp_only[] = "RIFF\0\0\0\0WEBP";
    CHECK(yp_image_decode((const uint8_t *)tiff_only, 4, "t", NULL, &im, &err) == -1);
    CHECK_STR_HAS(err.msg, "t: ");
    CHECK(yp_image_decode((const uint8_t *)webp_only, 12, "w", NULL, &im, &err) == -1);
    CHECK_STR_HAS(err.msg, "w: bad WebP: ");
}

/* Finds the entry of tag in the little-endian TIFF's first IFD; returns its value's offset or 0. */
static size_t tiff_tag(const bytes *b, unsigned tag) {
    size_t ifd = b->p[4] | (size_t)b->p[5] << 8 | (size_t)b->p[6] << 16 | (size_t)b->p[7] << 24;
    unsigned n = b->p[ifd] | b->p[ifd + 1] << 8;
    for (unsigned i = 0; i < n; i++) {
        size_t e = ifd + 2 + 12 * (size_t)i;
        if ((unsigned)(b->p[e] | b->p[e + 1] << 8) == tag) return e + 8;
    }
    return 0;
}

static void put32(uint8_t *p, uint32_t v) {
    p[0] = (uint8_t)v, p[1] = (uint8_t)(v >> 8), p[2] = (uint8_t)(v >> 16), p[3] = (uint8_t)(v >> 24);
}

/* Headers that claim 60000 x 60000 (WebP: 16384 x 16384, its largest): refused from the header,
 * before any pixel buffer, by decode and probe. */
static void test_header_bombs(void) {
    yp_image im;
    yp_err err;
    bytes b;
    REQUIRE(slurp(FIX "rgb24.bmp", &b) == 0);
    put32(b.p + 18, 60000), put32(b.p + 22, 60000);
    CHECK(yp_image_decode(b.p, b.n, "bomb.bmp", NULL, &im, &err) == -1);
    CHECK_STR_HAS(err.msg, "bomb.bmp: image is 60000x60000 pixels, over the limit of 178956970 pixels");
    free(b.p);
    static const char pfm[] = "PF\n60000 60000\n-1\n\0\0\0\0";
    CHECK(yp_image_decode((const uint8_t *)pfm, sizeof pfm - 1, "bomb.pfm", NULL, &im, &err) == -1);
    CHECK_STR_HAS(err.msg, "bomb.pfm: image is 60000x60000 pixels, over the limit");
    REQUIRE(slurp(FIX "rgb8.tif", &b) == 0);
    size_t wat = tiff_tag(&b, 256), hat = tiff_tag(&b, 257);
    REQUIRE(wat && hat);
    b.p[wat] = 0x60, b.p[wat + 1] = 0xea, b.p[hat] = 0x60, b.p[hat + 1] = 0xea; /* SHORT 60000 */
    CHECK(yp_image_decode(b.p, b.n, "bomb.tif", NULL, &im, &err) == -1);
    CHECK_STR_HAS(err.msg, "bomb.tif: image is 60000x60000 pixels, over the limit");
    free(b.p);
    REQUIRE(slurp(FIX "lossless.webp", &b) == 0);
    REQUIRE(b.n > 25 && !memcmp(b.p + 12, "VP8L", 4) && b.p[20] == 0x2f);
    put32(b.p + 21, (b.p[24] & 0xf0u) << 24 | 0x0fffffffu); /* 14-bit width - 1 and height - 1 all ones */
    CHECK(yp_image_decode(b.p, b.n, "bomb.webp", NULL, &im, &err) == -1);
    CHECK_STR_HAS(err.msg, "bomb.webp: image is 16384x16384 pixels, over the limit");
    char path[128];
    snprintf(path, sizeof path, "%s/bomb.webp", dir);
    FILE *f = fopen(path, "wb");
    REQUIRE(f && fwrite(b.p, 1, b.n, f) == b.n && fclose(f) == 0);
    int w = 1, h = 1;
    CHECK(yp_image_probe(path, NULL, &w, &h, &err) == -1 && w == 0 && h == 0);
    CHECK_STR_HAS(err.msg, "over the limit");
    unlink(path);
    free(b.p);
}

/* Files that are not images whatever their names say: empty, a folder, a FIFO (no writer: a
 * blocking open would hang). */
static void test_not_files(void) {
    static const char *const names[] = {"x.webp", "x.bmp", "x.tif", "x.pfm", "x.dng"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        char path[128];
        yp_image im;
        yp_err err;
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        FILE *f = fopen(path, "wb");
        REQUIRE(f && fclose(f) == 0);
        CHECK(yp_image_read(path, NULL, &im, &err) == -1);
        CHECK_STR_HAS(err.msg, "empty file; not an image");
        unlink(path);
        REQUIRE(mkdir(path, 0700) == 0);
        CHECK(yp_image_read(path, NULL, &im, &err) == -1);
        CHECK_STR_HAS(err.msg, "a folder, not an image file");
        rmdir(path);
        REQUIRE(mkfifo(path, 0600) == 0);
        CHECK(yp_image_read(path, NULL, &im, &err) == -1);
        CHECK_STR_HAS(err.msg, "a FIFO, not an image file");
        unlink(path);
    }
    yp_image im;
    yp_err err;
    static const char text[] = "BAD image\n";
    CHECK(yp_image_decode((const uint8_t *)text, sizeof text - 1, "t.bmp", NULL, &im, &err) == -1);
    CHECK_STR_HAS(err.msg, "t.bmp: not an image of a known format (JPEG, PNG, BMP, TIFF, WebP, PFM;");
}

/* libtiff and libwebp print nothing of their own on bad input: stderr, sent to a file while a
 * corrupt TIFF and WebP are decoded, stays empty. */
static void test_libraries_silent(void) {
    bytes t, w;
    REQUIRE(slurp(FIX "rgb8_lzw.tif", &t) == 0 && slurp(FIX "lossy.webp", &w) == 0);
    for (size_t i = 8; i < t.n; i += 3) t.p[i] ^= 0x5a;
    for (size_t i = 30; i < w.n; i += 3) w.p[i] ^= 0x5a;
    char path[128];
    snprintf(path, sizeof path, "%s/stderr.txt", dir);
    fflush(stderr);
    int saved = dup(2), fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    REQUIRE(saved >= 0 && fd >= 0);
    dup2(fd, 2);
    yp_image im;
    yp_err err;
    int rt = yp_image_decode(t.p, t.n, "t", NULL, &im, &err);
    if (rt == 0) yp_image_free(&im);
    int rw = yp_image_decode(w.p, w.n, "w", NULL, &im, &err);
    if (rw == 0) yp_image_free(&im);
    fflush(stderr);
    dup2(saved, 2);
    close(saved), close(fd);
    struct stat st;
    CHECK(stat(path, &st) == 0 && st.st_size == 0);
    CHECK(rt == -1);
    unlink(path);
    free(t.p), free(w.p);
}

int main(void) {
    if (!mkdtemp(dir)) return perror("mkdtemp"), 1;
    YP_RUN(test_fixtures_match_opencv);
    YP_RUN(test_refused_variants);
    YP_RUN(test_every_prefix);
    YP_RUN(test_header_bombs);
    YP_RUN(test_not_files);
    YP_RUN(test_libraries_silent);
    rmdir(dir);
    return yp_test_summary();
}
