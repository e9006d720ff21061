/* test_image.c - the image decoders and encoders (executor/data/yp_image.h). The odd formats (grey,
 * CMYK and YCCK JPEG; palette, grey, grey+alpha, RGBA, 16-bit, 1-bit and interlaced PNG) are
 * written here with libjpeg and libpng directly; the EXIF segment is built by hand. Then the
 * hostile inputs: truncation at every length, flipped bytes, huge declared sizes, a FIFO, a
 * device, a directory, empty and mislabelled files; decoding a region equals the whole decode inside it. */
#include <errno.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jpeglib.h>
#include <png.h>
#include <zlib.h>

#include "image_internal.h"
#include "yp_image.h"
#include "yp_test.h"

static char dir[64] = "/tmp/yp_test_image.XXXXXX";

/* ---- helpers ---- */

typedef struct {
    uint8_t *p;
    size_t n;
} bytes;

static void fill_gradient(yp_image *im) {
    for (int y = 0; y < im->h; y++)
        for (int x = 0; x < im->w; x++) {
            uint8_t *px = im->rgb + ((size_t)y * im->w + x) * 3;
            px[0] = (uint8_t)(x * 255 / (im->w - 1));
            px[1] = (uint8_t)(y * 255 / (im->h - 1));
            px[2] = (uint8_t)((x + y) * 4);
        }
}

/* Largest absolute difference of two same-sized images' samples. */
static int max_diff(const yp_image *a, const yp_image *b) {
    int m = 0;
    for (size_t i = 0; i < (size_t)a->w * a->h * 3; i++) {
        int d = abs((int)a->rgb[i] - (int)b->rgb[i]);
        if (d > m) m = d;
    }
    return m;
}

static const uint8_t *px(const yp_image *im, int x, int y) { return im->rgb + ((size_t)y * im->w + x) * 3; }

static int px_near(const yp_image *im, int x, int y, int r, int g, int b, int tol) {
    const uint8_t *p = px(im, x, y);
    return abs(p[0] - r) <= tol && abs(p[1] - g) <= tol && abs(p[2] - b) <= tol;
}

static int decode(const bytes *b, yp_image *im, yp_err *err) {
    memset(err, 0, sizeof *err);
    return yp_image_decode(b->p, b->n, "mem", NULL, im, err);
}

/* ---- JPEG written with libjpeg directly ---- */

typedef struct {
    struct jpeg_error_mgr pub;
    jmp_buf jump;
} test_jerr;

static void test_jerr_exit(j_common_ptr c) { longjmp(((test_jerr *)c->err)->jump, 1); }

/* Encodes w x h samples of `comps` components in colour space `in` as a JPEG stored in colour
 * space `stored`, quality 95, no subsampling. Returns 0 with *out malloc'd. */
static int write_jpeg_raw(const uint8_t *samples, int w, int h, int comps, J_COLOR_SPACE in, J_COLOR_SPACE stored,
                          bytes *out) {
    struct jpeg_compress_struct c;
    test_jerr e;
    unsigned char *buf = NULL;
    unsigned long size = 0;
    c.err = jpeg_std_error(&e.pub);
    e.pub.error_exit = test_jerr_exit;
    if (setjmp(e.jump)) {
        jpeg_destroy_compress(&c);
        return -1;
    }
    jpeg_create_compress(&c);
    jpeg_mem_dest(&c, &buf, &size);
    c.image_width = (JDIMENSION)w, c.image_height = (JDIMENSION)h, c.input_components = comps, c.in_color_space = in;
    jpeg_set_defaults(&c);
    jpeg_set_colorspace(&c, stored);
    jpeg_set_quality(&c, 95, TRUE);
    for (int i = 0; i < c.num_components; i++) c.comp_info[i].h_samp_factor = c.comp_info[i].v_samp_factor = 1;
    jpeg_start_compress(&c, TRUE);
    for (int y = 0; y < h; y++) {
        JSAMPROW row = (JSAMPROW)(samples + (size_t)y * w * comps);
        jpeg_write_scanlines(&c, &row, 1);
    }
    jpeg_finish_compress(&c);
    jpeg_destroy_compress(&c);
    out->p = buf, out->n = size;
    return 0;
}

/* ---- PNG written with libpng directly ---- */

static void test_png_write(png_structp p, png_bytep d, size_t n) {
    bytes *b = png_get_io_ptr(p);
    uint8_t *q = realloc(b->p, b->n + n);
    if (!q) png_error(p, "oom");
    memcpy(q + b->n, d, n);
    b->p = q, b->n += n;
}

static void test_png_flush(png_structp p) { (void)p; }

typedef struct {
    int ctype, depth, interlace;
    const png_color *palette;
    int n_palette;
    const png_byte *trns;
    int n_trns;
} png_spec;

/* Writes a w x h PNG of the given colour type and depth whose rows are `rows` (packed as libpng
 * expects them: 16-bit samples big-endian, sub-byte samples packed). Returns 0 with *out set. */
static int write_png_raw(const png_spec *s, int w, int h, uint8_t *const *rows, bytes *out) {
    out->p = NULL, out->n = 0;
    png_structp p = png_create_write_struct(PNG_LIBPNG_VER_STRING, NULL, NULL, NULL);
    png_infop info = png_create_info_struct(p);
    if (setjmp(png_jmpbuf(p))) {
        png_destroy_write_struct(&p, &info);
        return -1;
    }
    png_set_write_fn(p, out, test_png_write, test_png_flush);
    png_set_IHDR(p, info, (png_uint_32)w, (png_uint_32)h, s->depth, s->ctype, s->interlace, PNG_COMPRESSION_TYPE_DEFAULT,
                 PNG_FILTER_TYPE_DEFAULT);
    if (s->palette) png_set_PLTE(p, info, s->palette, s->n_palette);
    if (s->trns) png_set_tRNS(p, info, s->trns, s->n_trns, NULL);
    png_write_info(p, info);
    png_write_image(p, (png_bytepp)rows);
    png_write_end(p, NULL);
    png_destroy_write_struct(&p, &info);
    return 0;
}

/* ---- round trips ---- */

static void test_jpeg_png_round_trip(void) {
    yp_image im, back;
    yp_err err;
    REQUIRE(yp_image_alloc(&im, 37, 23, &err) == 0);
    fill_gradient(&im);
    bytes j, p;
    REQUIRE(yp_image_encode_jpeg(&im, 95, &j.p, &j.n, &err) == 0);
    REQUIRE(decode(&j, &back, &err) == 0);
    CHECK(back.w == 37 && back.h == 23);
    CHECK(max_diff(&im, &back) <= 12);
    yp_image_free(&back);
    uint8_t *j2;
    size_t n2;
    REQUIRE(yp_image_encode_jpeg(&im, 95, &j2, &n2, &err) == 0); /* the same bytes again */
    CHECK(n2 == j.n && memcmp(j2, j.p, n2) == 0);
    free(j2);
    REQUIRE(yp_image_encode_jpeg(&im, 50, &j2, &n2, &err) == 0); /* 4:2:0 below 90 */
    REQUIRE(yp_image_decode(j2, n2, "q50", NULL, &back, &err) == 0);
    CHECK(back.w == 37 && back.h == 23 && max_diff(&im, &back) <= 60);
    yp_image_free(&back);
    free(j2);
    CHECK(yp_image_encode_jpeg(&im, 0, &j2, &n2, &err) == -1);
    CHECK_STR_HAS(err.msg, "quality 0 is not in 1..100");
    REQUIRE(yp_image_encode_png(&im, &p.p, &p.n, &err) == 0);
    REQUIRE(decode(&p, &back, &err) == 0);
    CHECK(back.w == 37 && back.h == 23 && max_diff(&im, &back) == 0);
    yp_image_free(&back);
    free(j.p);
    free(p.p);
    yp_image_free(&im);
}

static void test_files(void) {
    yp_image im, back;
    yp_err err;
    char jpg[128], png[128], swapped[128];
    REQUIRE(yp_image_alloc(&im, 20, 12, &err) == 0);
    fill_gradient(&im);
    snprintf(jpg, sizeof jpg, "%s/a.jpg", dir);
    snprintf(png, sizeof png, "%s/a.png", dir);
    snprintf(swapped, sizeof swapped, "%s/png_named.jpg", dir);
    REQUIRE(yp_image_write_jpeg(jpg, &im, 90, &err) == 0);
    REQUIRE(yp_image_write_png(png, &im, &err) == 0);
    REQUIRE(yp_image_read(jpg, NULL, &back, &err) == 0);
    CHECK(back.w == 20 && back.h == 12 && max_diff(&im, &back) <= 12);
    yp_image_free(&back);
    REQUIRE(rename(png, swapped) == 0); /* a PNG named .jpg: told by its bytes */
    REQUIRE(yp_image_read(swapped, NULL, &back, &err) == 0);
    CHECK(max_diff(&im, &back) == 0);
    yp_image_free(&back);
    char bad[160];
    snprintf(bad, sizeof bad, "%s/nodir/x.png", dir);
    CHECK(yp_image_write_png(bad, &im, &err) == -1);
    CHECK_STR_HAS(err.msg, "x.png: cannot create");
    yp_image_limits lim = {.max_pixels = YP_IMAGE_MAX_PIXELS, .max_file_bytes = 100};
    CHECK(yp_image_read(jpg, &lim, &back, &err) == -1);
    CHECK_STR_HAS(err.msg, "more than the 100 an image file may have");
    lim = (yp_image_limits){.max_pixels = 239, .max_file_bytes = YP_IMAGE_MAX_FILE_BYTES};
    CHECK(yp_image_read(jpg, &lim, &back, &err) == -1);
    CHECK_STR_HAS(err.msg, "a.jpg: image is 20x12 pixels, over the limit of 239 pixels");
    CHECK(back.rgb == NULL && back.w == 0);
    lim.max_pixels = 240;
    CHECK(yp_image_read(jpg, &lim, &back, &err) == 0);
    yp_image_free(&back);
    yp_image_free(&im);
}

/* ---- odd JPEGs ---- */

static void test_jpeg_grey(void) {
    enum { W = 24, H = 16 };
    uint8_t g[W * H];
    for (int i = 0; i < W * H; i++) g[i] = (uint8_t)(i % W * 10);
    bytes b;
    REQUIRE(write_jpeg_raw(g, W, H, 1, JCS_GRAYSCALE, JCS_GRAYSCALE, &b) == 0);
    yp_image im;
    yp_err err;
    REQUIRE(decode(&b, &im, &err) == 0);
    CHECK(im.w == W && im.h == H);
    int worst = 0, grey = 1;
    for (int i = 0; i < W * H; i++) {
        const uint8_t *p = im.rgb + 3 * i;
        grey &= p[0] == p[1] && p[1] == p[2];
        if (abs(p[0] - g[i]) > worst) worst = abs(p[0] - g[i]);
    }
    CHECK(grey);
    CHECK(worst <= 8);
    yp_image_free(&im);
    free(b.p);
}

/* CMYK as libjpeg stores it (Adobe-inverted samples), and as YCCK: both decode with OpenCV's rule
 * R = K - ((255 - C) * K >> 8). */
static void test_jpeg_cmyk(void) {
    enum { W = 16, H = 16 };
    static const uint8_t ink[2][4] = {{200, 100, 50, 220}, {30, 240, 128, 255}};
    uint8_t s[W * H * 4];
    for (int i = 0; i < W * H; i++) memcpy(s + 4 * i, ink[i % W < 8], 4);
    J_COLOR_SPACE stored[2] = {JCS_CMYK, JCS_YCCK};
    for (int k = 0; k < 2; k++) {
        bytes b;
        REQUIRE(write_jpeg_raw(s, W, H, 4, JCS_CMYK, stored[k], &b) == 0);
        yp_image im;
        yp_err err;
        REQUIRE(decode(&b, &im, &err) == 0);
        CHECK(im.w == W && im.h == H);
        for (int half = 0; half < 2; half++) {
            const uint8_t *c = ink[half];
            int r = c[3] - (((255 - c[0]) * c[3]) >> 8), g = c[3] - (((255 - c[1]) * c[3]) >> 8),
                bl = c[3] - (((255 - c[2]) * c[3]) >> 8);
            /* the left half (x < 8) has ink[1], the right ink[0]; look away from the edge */
            CHECK(px_near(&im, half ? 2 : 13, 8, r, g, bl, 4));
        }
        yp_image_free(&im);
        free(b.p);
    }
}

/* ---- EXIF orientation ---- */

/* An APP1 segment with an EXIF TIFF header (byte order le or big) whose IFD0 holds an unrelated
 * tag and then Orientation = o (type SHORT). Returns its length (marker included). */
static size_t exif_app1(uint8_t *seg, int o, int le) {
    uint8_t t[64];
    size_t n = 0;
    memset(t, 0, sizeof t);
#define PUT16(v) (le ? (t[n] = (uint8_t)(v), t[n + 1] = (uint8_t)((v) >> 8)) : (t[n] = (uint8_t)((v) >> 8), t[n + 1] = (uint8_t)(v)), n += 2)
#define PUT32(v) (le ? (PUT16((v) & 0xffff), PUT16((v) >> 16)) : (PUT16((v) >> 16), PUT16((v) & 0xffff)))
    t[0] = t[1] = le ? 'I' : 'M';
    n = 2;
    PUT16(42);
    PUT32(8u);   /* IFD0 at 8 */
    PUT16(2);    /* two entries */
    PUT16(0x010f); PUT16(2); PUT32(4u); t[n] = 'y', t[n + 1] = 'p', n += 4; /* Make = "yp" */
    PUT16(0x0112); PUT16(3); PUT32(1u); PUT16(o); PUT16(0);
    PUT32(0u);   /* no next IFD */
#undef PUT16
#undef PUT32
    size_t len = 2 + 6 + n;
    seg[0] = 0xff, seg[1] = 0xe1, seg[2] = (uint8_t)(len >> 8), seg[3] = (uint8_t)len;
    memcpy(seg + 4, "Exif\0\0", 6);
    memcpy(seg + 10, t, n);
    return 2 + len;
}

/* jpeg with seg inserted after SOI. */
static bytes with_segment(const bytes *jpeg, const uint8_t *seg, size_t n) {
    bytes b = {malloc(jpeg->n + n), jpeg->n + n};
    memcpy(b.p, jpeg->p, 2);
    memcpy(b.p + 2, seg, n);
    memcpy(b.p + 2 + n, jpeg->p + 2, jpeg->n - 2);
    return b;
}

/* Where source pixel (x, y) of a w x h image is shown under orientation o: the EXIF meaning,
 * written forward (the decoder works backward from the output). */
static void shown_at(int o, int w, int h, int x, int y, int *dx, int *dy) {
    switch (o) {
    case 2: *dx = w - 1 - x, *dy = y; break;
    case 3: *dx = w - 1 - x, *dy = h - 1 - y; break;
    case 4: *dx = x, *dy = h - 1 - y; break;
    case 5: *dx = y, *dy = x; break;
    case 6: *dx = h - 1 - y, *dy = x; break; /* 90 degrees clockwise */
    case 7: *dx = h - 1 - y, *dy = w - 1 - x; break;
    case 8: *dx = y, *dy = w - 1 - x; break; /* 90 degrees counter-clockwise */
    default: *dx = x, *dy = y; break;
    }
}

static void test_exif_orientation(void) {
    enum { W = 64, H = 32 };
    yp_image im, plain;
    yp_err err;
    REQUIRE(yp_image_alloc(&im, W, H, &err) == 0);
    for (int y = 0; y < H; y++) /* grey, a red block top left, a green block top right */
        for (int x = 0; x < W; x++) {
            uint8_t *p = im.rgb + ((size_t)y * W + x) * 3;
            int red = x < 16 && y < 16, green = x >= 48 && y < 16;
            p[0] = red ? 230 : 120, p[1] = green ? 230 : 120, p[2] = 120;
        }
    bytes j;
    REQUIRE(yp_image_encode_jpeg(&im, 95, &j.p, &j.n, &err) == 0);
    REQUIRE(decode(&j, &plain, &err) == 0);
    for (int o = 1; o <= 8; o++)
        for (int le = 0; le < 2; le++) {
            uint8_t seg[128];
            size_t n = exif_app1(seg, o, le);
            CHECK_EQ_I64(yp_img_exif_orientation(seg + 4, n - 4), o);
            bytes b = with_segment(&j, seg, n);
            yp_image got;
            REQUIRE(decode(&b, &got, &err) == 0);
            int swap = o >= 5;
            CHECK_EQ_I64(got.w, swap ? H : W);
            CHECK_EQ_I64(got.h, swap ? W : H);
            int same = got.w * got.h == W * H;
            for (int y = 0; y < H && same; y++)
                for (int x = 0; x < W && same; x++) {
                    int dx, dy;
                    shown_at(o, W, H, x, y, &dx, &dy);
                    same = memcmp(px(&plain, x, y), px(&got, dx, dy), 3) == 0;
                }
            CHECK(same);
            if (o == 6) { /* rotated clockwise: red top right, green bottom right */
                CHECK(px_near(&got, H - 8, 8, 230, 120, 120, 10));
                CHECK(px_near(&got, H - 8, W - 8, 120, 230, 120, 10));
            }
            if (o == 8) { /* counter-clockwise: red bottom left, green top left */
                CHECK(px_near(&got, 8, W - 8, 230, 120, 120, 10));
                CHECK(px_near(&got, 8, 8, 120, 230, 120, 10));
            }
            yp_image_free(&got);
            free(b.p);
        }
    /* malformed EXIF: IFD0's offset points past the segment; an orientation of 9: both ignored */
    uint8_t seg[128];
    size_t n = exif_app1(seg, 6, 1);
    seg[4 + 6 + 4] = 0xf0; /* IFD0 offset, low byte */
    CHECK_EQ_I64(yp_img_exif_orientation(seg + 4, n - 4), 0);
    CHECK_EQ_I64(yp_img_exif_orientation(seg + 4, 9), 0);
    bytes b = with_segment(&j, seg, n);
    yp_image got;
    REQUIRE(decode(&b, &got, &err) == 0);
    CHECK(got.w == W && got.h == H && max_diff(&got, &plain) == 0);
    yp_image_free(&got);
    free(b.p);
    n = exif_app1(seg, 9, 0);
    b = with_segment(&j, seg, n);
    REQUIRE(decode(&b, &got, &err) == 0);
    CHECK(got.w == W && got.h == H && max_diff(&got, &plain) == 0);
    yp_image_free(&got);
    free(b.p);
    free(j.p);
    yp_image_free(&plain);
    yp_image_free(&im);
}

/* ---- odd PNGs ---- */

/* Decodes the PNG and compares it with the expected RGB w x h pixels exactly. */
static void check_png(const char *what, const png_spec *s, int w, int h, uint8_t *const *rows, const uint8_t *want) {
    bytes b;
    yp_image im;
    yp_err err;
    if (write_png_raw(s, w, h, rows, &b)) {
        printf("    %s: libpng could not write it\n", what);
        CHECK(0);
        return;
    }
    if (decode(&b, &im, &err)) {
        printf("    %s: %s\n", what, err.msg);
        CHECK(0);
    } else {
        int ok = im.w == w && im.h == h && memcmp(im.rgb, want, (size_t)w * h * 3) == 0;
        if (!ok) printf("    %s: decoded pixels differ\n", what);
        CHECK(ok);
    }
    yp_image_free(&im);
    free(b.p);
}

static void test_png_formats(void) {
    enum { W = 9, H = 5 };
    static uint8_t raw[H][W * 8]; /* up to 8 bytes a pixel (RGBA 16) */
    uint8_t *rows[H], want[W * H * 3];
    for (int y = 0; y < H; y++) rows[y] = raw[y];
#define WANT(x, y, r, g, b) (want[((y) * W + (x)) * 3] = (uint8_t)(r), want[((y) * W + (x)) * 3 + 1] = (uint8_t)(g), \
                             want[((y) * W + (x)) * 3 + 2] = (uint8_t)(b))
    /* grey 8 */
    for (int y = 0; y < H; y++)
        for (int x = 0; x < W; x++) raw[y][x] = (uint8_t)(y * 50 + x), WANT(x, y, y * 50 + x, y * 50 + x, y * 50 + x);
    check_png("grey 8", &(png_spec){PNG_COLOR_TYPE_GRAY, 8, 0, 0, 0, 0, 0}, W, H, rows, want);
    /* grey + alpha 8: alpha dropped, not composited */
    for (int y = 0; y < H; y++)
        for (int x = 0; x < W; x++) raw[y][2 * x] = (uint8_t)(x * 20), raw[y][2 * x + 1] = (uint8_t)(y * 60),
                                     WANT(x, y, x * 20, x * 20, x * 20);
    check_png("grey+alpha", &(png_spec){PNG_COLOR_TYPE_GRAY_ALPHA, 8, 0, 0, 0, 0, 0}, W, H, rows, want);
    /* grey 16: the high byte */
    for (int y = 0; y < H; y++)
        for (int x = 0; x < W; x++) raw[y][2 * x] = (uint8_t)(x * 25), raw[y][2 * x + 1] = 0xff,
                                     WANT(x, y, x * 25, x * 25, x * 25);
    check_png("grey 16", &(png_spec){PNG_COLOR_TYPE_GRAY, 16, 0, 0, 0, 0, 0}, W, H, rows, want);
    /* grey 1: bits widened to 0 / 255 */
    for (int y = 0; y < H; y++) {
        memset(raw[y], 0, 2);
        for (int x = 0; x < W; x++) {
            int on = (x + y) % 2;
            if (on) raw[y][x / 8] |= (uint8_t)(0x80 >> (x % 8));
            WANT(x, y, on * 255, on * 255, on * 255);
        }
    }
    check_png("grey 1", &(png_spec){PNG_COLOR_TYPE_GRAY, 1, 0, 0, 0, 0, 0}, W, H, rows, want);
    /* RGBA 8: alpha dropped */
    for (int y = 0; y < H; y++)
        for (int x = 0; x < W; x++) {
            uint8_t *p = raw[y] + 4 * x;
            p[0] = (uint8_t)(x * 9), p[1] = (uint8_t)(y * 31), p[2] = 77, p[3] = (uint8_t)(x * 28);
            WANT(x, y, x * 9, y * 31, 77);
        }
    check_png("rgba", &(png_spec){PNG_COLOR_TYPE_RGBA, 8, 0, 0, 0, 0, 0}, W, H, rows, want);
    /* RGBA 16 (big-endian samples): high bytes, alpha dropped */
    for (int y = 0; y < H; y++)
        for (int x = 0; x < W; x++) {
            uint8_t *p = raw[y] + 8 * x;
            p[0] = (uint8_t)(x * 7), p[1] = 0x80, p[2] = (uint8_t)(y * 3), p[3] = 0x01, p[4] = 200, p[5] = 0xfe,
            p[6] = 9, p[7] = 9;
            WANT(x, y, x * 7, y * 3, 200);
        }
    check_png("rgba 16", &(png_spec){PNG_COLOR_TYPE_RGBA, 16, 0, 0, 0, 0, 0}, W, H, rows, want);
    /* palette 4-bit with transparency: colours expanded, tRNS ignored */
    static const png_color pal[3] = {{255, 0, 0}, {0, 128, 0}, {10, 20, 250}};
    static const png_byte trns[3] = {0, 128, 255};
    for (int y = 0; y < H; y++) {
        memset(raw[y], 0, 5);
        for (int x = 0; x < W; x++) {
            int i = (x + 2 * y) % 3;
            raw[y][x / 2] |= (uint8_t)(x % 2 ? i : i << 4);
            WANT(x, y, pal[i].red, pal[i].green, pal[i].blue);
        }
    }
    check_png("palette 4 + tRNS", &(png_spec){PNG_COLOR_TYPE_PALETTE, 4, 0, pal, 3, trns, 3}, W, H, rows, want);
    /* RGB 8, Adam7 interlaced */
    for (int y = 0; y < H; y++)
        for (int x = 0; x < W; x++) {
            uint8_t *p = raw[y] + 3 * x;
            p[0] = (uint8_t)(x * y), p[1] = (uint8_t)(255 - x), p[2] = (uint8_t)(y * 40);
            WANT(x, y, x * y, 255 - x, y * 40);
        }
    check_png("interlaced", &(png_spec){PNG_COLOR_TYPE_RGB, 8, PNG_INTERLACE_ADAM7, 0, 0, 0, 0}, W, H, rows, want);
#undef WANT
}

/* ---- hostile input ---- */

/* Every prefix of a valid encoding: shorter than `complete` bytes is an error (one line naming
 * the input), from there on it decodes. */
static void check_prefixes(const bytes *b, size_t complete, const char *kind) {
    int bad_ok = 0, bad_err = 0;
    for (size_t n = 0; n <= b->n; n++) {
        uint8_t *copy = malloc(n ? n : 1); /* exactly n bytes: ASan sees any read past them */
        memcpy(copy, b->p, n);
        yp_image im;
        yp_err err;
        memset(&err, 0, sizeof err);
        int rc = yp_image_decode(copy, n, "cut", NULL, &im, &err);
        if (n < complete) {
            if (rc == 0) bad_ok++, printf("    %s cut to %zu of %zu bytes decoded\n", kind, n, b->n);
            else if (strncmp(err.msg, "cut: ", 5) != 0 || strchr(err.msg, '\n')) bad_err++;
        } else if (rc != 0) {
            bad_ok++, printf("    %s cut to %zu of %zu bytes: %s\n", kind, n, b->n, err.msg);
        }
        yp_image_free(&im);
        free(copy);
    }
    CHECK_EQ_I64(bad_ok, 0);
    CHECK_EQ_I64(bad_err, 0);
}

static void test_truncated(void) {
    yp_image im;
    yp_err err;
    REQUIRE(yp_image_alloc(&im, 40, 24, &err) == 0);
    fill_gradient(&im);
    bytes j, p;
    REQUIRE(yp_image_encode_jpeg(&im, 80, &j.p, &j.n, &err) == 0);
    REQUIRE(yp_image_encode_png(&im, &p.p, &p.n, &err) == 0);
    check_prefixes(&j, j.n - 2, "JPEG"); /* without only its end marker a JPEG decodes */
    check_prefixes(&p, p.n - 12, "PNG");  /* and a PNG without its IEND chunk */
    yp_image back;
    bytes cut = {j.p, j.n - 10}; /* inside the entropy-coded data */
    CHECK(decode(&cut, &back, &err) == -1);
    CHECK_STR_HAS(err.msg, "mem: truncated JPEG: the image data ends early");
    cut = (bytes){p.p, p.n / 2};
    CHECK(decode(&cut, &back, &err) == -1);
    CHECK_STR_HAS(err.msg, "mem: bad PNG: truncated: the file ends early");
    /* on disk too */
    char path[128];
    snprintf(path, sizeof path, "%s/cut.jpg", dir);
    FILE *f = fopen(path, "wb");
    REQUIRE(f);
    fwrite(j.p, 1, j.n - 10, f);
    fclose(f);
    CHECK(yp_image_read(path, NULL, &back, &err) == -1);
    CHECK_STR_HAS(err.msg, "cut.jpg: truncated JPEG");
    free(j.p);
    free(p.p);
    yp_image_free(&im);
}

/* Flipped bytes: any outcome but a crash, a hang or a leak (ASan); an image, if one comes out,
 * has the size the header declares or the error is one line. */
static void test_corrupt_bytes(void) {
    yp_image im;
    yp_err err;
    REQUIRE(yp_image_alloc(&im, 33, 17, &err) == 0);
    fill_gradient(&im);
    bytes enc[2];
    REQUIRE(yp_image_encode_jpeg(&im, 75, &enc[0].p, &enc[0].n, &err) == 0);
    REQUIRE(yp_image_encode_png(&im, &enc[1].p, &enc[1].n, &err) == 0);
    uint64_t s = 0x9e3779b97f4a7c15ull;
    int errors = 0, multi_line = 0;
    for (int k = 0; k < 2; k++)
        for (int t = 0; t < 400; t++) {
            uint8_t *copy = malloc(enc[k].n);
            memcpy(copy, enc[k].p, enc[k].n);
            for (int f = 0; f < 1 + t % 4; f++) {
                s ^= s << 13, s ^= s >> 7, s ^= s << 17;
                copy[(s >> 8) % enc[k].n] ^= (uint8_t)(1u << (s % 8));
            }
            yp_image back;
            memset(&err, 0, sizeof err);
            if (yp_image_decode(copy, enc[k].n, "flip", NULL, &back, &err)) {
                errors++;
                multi_line += strchr(err.msg, '\n') != NULL;
            } else {
                CHECK(back.w >= 1 && back.h >= 1 && back.rgb);
            }
            yp_image_free(&back);
            free(copy);
        }
    CHECK(errors > 0); /* the flips do reach the decoders */
    CHECK_EQ_I64(multi_line, 0);
    free(enc[0].p);
    free(enc[1].p);
    yp_image_free(&im);
}

/* Sets a PNG's IHDR width and height and fixes its CRC. */
static void png_set_size(bytes *b, uint32_t w, uint32_t h) {
    uint8_t *ihdr = b->p + 8 + 4; /* after the signature and the chunk length */
    for (int i = 0; i < 4; i++) ihdr[4 + i] = (uint8_t)(w >> (24 - 8 * i)), ihdr[8 + i] = (uint8_t)(h >> (24 - 8 * i));
    uLong crc = crc32(0, ihdr, 4 + 13);
    for (int i = 0; i < 4; i++) ihdr[17 + i] = (uint8_t)(crc >> (24 - 8 * i));
}

static void test_huge_dimensions(void) {
    yp_image im, back;
    yp_err err;
    REQUIRE(yp_image_alloc(&im, 8, 8, &err) == 0);
    fill_gradient(&im);
    bytes j, p;
    REQUIRE(yp_image_encode_jpeg(&im, 90, &j.p, &j.n, &err) == 0);
    REQUIRE(yp_image_encode_png(&im, &p.p, &p.n, &err) == 0);
    /* JPEG: the SOF0 frame header says 60000 x 60000 */
    size_t sof = 2;
    while (sof + 4 < j.n && !(j.p[sof] == 0xff && j.p[sof + 1] == 0xc0)) sof += 2 + (j.p[sof + 2] << 8 | j.p[sof + 3]);
    REQUIRE(sof + 9 < j.n);
    j.p[sof + 5] = j.p[sof + 7] = 0xea, j.p[sof + 6] = j.p[sof + 8] = 0x60;
    CHECK(decode(&j, &back, &err) == -1);
    CHECK_STR_HAS(err.msg, "mem: image is 60000x60000 pixels, over the limit of 178956970 pixels");
    png_set_size(&p, 20000, 20000);
    CHECK(decode(&p, &back, &err) == -1);
    CHECK_STR_HAS(err.msg, "mem: image is 20000x20000 pixels, over the limit");
    png_set_size(&p, 0x7fffffff, 0x7fffffff); /* libpng refuses it first */
    CHECK(decode(&p, &back, &err) == -1);
    CHECK_STR_HAS(err.msg, "mem: bad PNG: ");
    png_set_size(&p, 9, 8); /* declared larger than the data: the rows run out */
    CHECK(decode(&p, &back, &err) == -1);
    CHECK_STR_HAS(err.msg, "mem: bad PNG: ");
    CHECK(yp_image_alloc(&back, 1 << 20, 1 << 20, &err) == -1);
    CHECK_STR_HAS(err.msg, "over the limit");
    free(j.p);
    free(p.p);
    yp_image_free(&im);
}

static void test_not_images(void) {
    yp_image im;
    yp_err err;
    char path[128];
    snprintf(path, sizeof path, "%s/fifo.jpg", dir);
    REQUIRE(mkfifo(path, 0600) == 0); /* no writer: a blocking open would wait forever */
    CHECK(yp_image_read(path, NULL, &im, &err) == -1);
    CHECK_STR_HAS(err.msg, "fifo.jpg: a FIFO, not an image file");
    CHECK(yp_image_read("/dev/zero", NULL, &im, &err) == -1); /* an endless file */
    CHECK_STR_HAS(err.msg, "/dev/zero: a device, not an image file");
    CHECK(yp_image_read(dir, NULL, &im, &err) == -1);
    CHECK_STR_HAS(err.msg, "a folder, not an image file");
    snprintf(path, sizeof path, "%s/none.png", dir);
    CHECK(yp_image_read(path, NULL, &im, &err) == -1);
    CHECK_STR_HAS(err.msg, "none.png: cannot open: No such file or directory");
    snprintf(path, sizeof path, "%s/empty.jpg", dir);
    FILE *f = fopen(path, "wb");
    REQUIRE(f);
    fclose(f);
    CHECK(yp_image_read(path, NULL, &im, &err) == -1);
    CHECK_STR_HAS(err.msg, "empty.jpg: empty file; not an image");
    snprintf(path, sizeof path, "%s/text.jpg", dir);
    f = fopen(path, "wb");
    REQUIRE(f);
    fputs("class cx cy w h\n", f);
    fclose(f);
    CHECK(yp_image_read(path, NULL, &im, &err) == -1);
    CHECK_STR_HAS(err.msg, "text.jpg: not an image of a known format");
    static const uint8_t soi_only[] = {0xff, 0xd8, 0xff};
    CHECK(yp_image_decode(soi_only, sizeof soi_only, "soi", NULL, &im, &err) == -1);
    CHECK_STR_HAS(err.msg, "soi: ");
    CHECK(im.rgb == NULL);
}

/* Removes what the tests wrote in dir, and dir. */
static void clean_dir(void) {
    static const char *const names[] = {"a.jpg", "png_named.jpg", "cut.jpg", "fifo.jpg", "empty.jpg", "text.jpg"};
    char path[128];
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        unlink(path);
    }
    rmdir(dir);
}

/* yp_image_probe: the decoded size from the header alone, orientation included, with the same
 * guards as yp_image_read. */
static void test_probe(void) {
    yp_image im;
    yp_err err;
    char jpg[128], png[128], rot[128], fifo[128];
    REQUIRE(yp_image_alloc(&im, 40, 24, &err) == 0);
    fill_gradient(&im);
    snprintf(jpg, sizeof jpg, "%s/p.jpg", dir);
    snprintf(png, sizeof png, "%s/p.png", dir);
    snprintf(rot, sizeof rot, "%s/p6.jpg", dir);
    snprintf(fifo, sizeof fifo, "%s/p.fifo", dir);
    REQUIRE(yp_image_write_jpeg(jpg, &im, 90, &err) == 0);
    REQUIRE(yp_image_write_png(png, &im, &err) == 0);
    int w = -1, h = -1;
    CHECK(yp_image_probe(jpg, NULL, &w, &h, &err) == 0 && w == 40 && h == 24);
    CHECK(yp_image_probe(png, NULL, &w, &h, &err) == 0 && w == 40 && h == 24);
    bytes j;
    REQUIRE(yp_image_encode_jpeg(&im, 90, &j.p, &j.n, &err) == 0);
    for (int o = 5; o <= 6; o++) { /* 5 (transpose) and 6 (rotate 90): width and height swap */
        uint8_t seg[128];
        size_t n = exif_app1(seg, o, 0);
        bytes b = with_segment(&j, seg, n);
        FILE *f = fopen(rot, "wb");
        REQUIRE(f && fwrite(b.p, 1, b.n, f) == b.n && fclose(f) == 0);
        yp_image back;
        CHECK(yp_image_probe(rot, NULL, &w, &h, &err) == 0 && w == 24 && h == 40);
        REQUIRE(yp_image_read(rot, NULL, &back, &err) == 0);
        CHECK(back.w == w && back.h == h); /* what the loader will decode */
        yp_image_free(&back);
        free(b.p);
    }
    free(j.p);
    yp_image_limits lim = {.max_pixels = 959, .max_file_bytes = YP_IMAGE_MAX_FILE_BYTES};
    CHECK(yp_image_probe(png, &lim, &w, &h, &err) == -1 && w == 0 && h == 0);
    CHECK_STR_HAS(err.msg, "p.png: image is 40x24 pixels, over the limit of 959 pixels");
    REQUIRE(mkfifo(fifo, 0600) == 0);
    CHECK(yp_image_probe(fifo, NULL, &w, &h, &err) == -1);
    CHECK_STR_HAS(err.msg, "p.fifo: a FIFO, not an image file");
    yp_image_free(&im);
}

/* yp_image_read_into: the same pixels as yp_image_read, image after image (PNG, JPEG, an EXIF
 * rotated JPEG) in one pair of buffers, which a smaller image does not move. */
static void test_read_into(void) {
    yp_image big, small, got, want;
    yp_err err;
    char a[128], b[128], c[128];
    REQUIRE(yp_image_alloc(&big, 48, 40, &err) == 0 && yp_image_alloc(&small, 20, 12, &err) == 0);
    fill_gradient(&big), fill_gradient(&small);
    snprintf(a, sizeof a, "%s/into_a.png", dir);
    snprintf(b, sizeof b, "%s/into_b.jpg", dir);
    snprintf(c, sizeof c, "%s/into_c.jpg", dir);
    REQUIRE(yp_image_write_png(a, &big, &err) == 0 && yp_image_write_jpeg(b, &small, 90, &err) == 0);
    bytes j;
    REQUIRE(yp_image_encode_jpeg(&small, 90, &j.p, &j.n, &err) == 0);
    uint8_t seg[128];
    size_t n = exif_app1(seg, 6, 1);
    bytes r = with_segment(&j, seg, n);
    FILE *f = fopen(c, "wb");
    REQUIRE(f && fwrite(r.p, 1, r.n, f) == r.n && fclose(f) == 0);
    free(j.p), free(r.p);
    yp_image_buffers bufs = {0};
    const char *paths[3] = {a, b, c};
    uint8_t *first = NULL;
    for (int i = 0; i < 3; i++) {
        REQUIRE(yp_image_read_into(paths[i], NULL, &bufs, &got, &err) == 0);
        REQUIRE(yp_image_read(paths[i], NULL, &want, &err) == 0);
        CHECK(got.w == want.w && got.h == want.h && got.rgb == bufs.rgb);
        CHECK(memcmp(got.rgb, want.rgb, (size_t)want.w * (size_t)want.h * 3) == 0);
        if (i == 0) first = bufs.rgb;
        CHECK(bufs.rgb == first); /* the first, largest image sized the buffer */
        yp_image_free(&want);
    }
    CHECK(got.w == 12 && got.h == 20); /* orientation 6: turned */
    CHECK(yp_image_read_into(dir, NULL, &bufs, &got, &err) == -1);
    CHECK_STR_HAS(err.msg, "a folder, not an image file");
    yp_image_buffers_free(&bufs);
    yp_image_free(&big), yp_image_free(&small);
}

/* ---- decoding a region ---- */

/* w x h RGB (comps 3) or grey (comps 1) noise over a gradient as a JPEG of quality 90, luma sampled
 * hs x vs (chroma 1 x 1), progressive or baseline. Returns 0 with *out malloc'd. */
static int write_jpeg_sampled(int w, int h, int comps, int hs, int vs, int progressive, uint32_t seed, bytes *out) {
    uint8_t *px = malloc((size_t)w * h * comps);
    if (!px) return -1;
    for (size_t i = 0; i < (size_t)w * h * comps; i++) {
        seed = seed * 1664525u + 1013904223u;
        px[i] = (uint8_t)((i / comps % (size_t)w) * 200 / (size_t)w + (seed >> 27));
    }
    struct jpeg_compress_struct c;
    test_jerr e;
    unsigned char *buf = NULL;
    unsigned long size = 0;
    c.err = jpeg_std_error(&e.pub);
    e.pub.error_exit = test_jerr_exit;
    if (setjmp(e.jump)) {
        jpeg_destroy_compress(&c);
        free(px);
        return -1;
    }
    jpeg_create_compress(&c);
    jpeg_mem_dest(&c, &buf, &size);
    c.image_width = (JDIMENSION)w, c.image_height = (JDIMENSION)h, c.input_components = comps;
    c.in_color_space = comps == 1 ? JCS_GRAYSCALE : JCS_RGB;
    jpeg_set_defaults(&c);
    jpeg_set_quality(&c, 90, TRUE);
    for (int i = 0; i < c.num_components; i++) c.comp_info[i].h_samp_factor = c.comp_info[i].v_samp_factor = 1;
    c.comp_info[0].h_samp_factor = hs, c.comp_info[0].v_samp_factor = vs;
    if (progressive) jpeg_simple_progression(&c);
    jpeg_start_compress(&c, TRUE);
    for (int y = 0; y < h; y++) {
        JSAMPROW row = px + (size_t)y * w * comps;
        jpeg_write_scanlines(&c, &row, 1);
    }
    jpeg_finish_compress(&c);
    jpeg_destroy_compress(&c);
    free(px);
    out->p = buf, out->n = size;
    return 0;
}

/* yp_image_read_region_into on random regions of baseline 4:2:0, 4:4:4, 4:2:2, progressive 4:2:0
 * and grey JPEGs (sizes that are no multiple of the iMCU): inside the region every pixel is the
 * whole decode's; the size is the whole image's; an EXIF-rotated JPEG and a PNG decode whole. */
static void test_read_region(void) {
    static const struct {
        const char *what;
        int comps, hs, vs, progressive;
    } kinds[] = {{"4:2:0", 3, 2, 2, 0}, {"4:4:4", 3, 1, 1, 0}, {"4:2:2", 3, 2, 1, 0},
                 {"progressive 4:2:0", 3, 2, 2, 1}, {"grey", 1, 1, 1, 0}};
    const int W = 203, H = 157;
    yp_image_buffers bufs = {0};
    yp_err err;
    uint32_t rnd = 12345;
    for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++) {
        bytes j;
        char path[128];
        snprintf(path, sizeof path, "%s/region_%zu.jpg", dir, k);
        REQUIRE(write_jpeg_sampled(W, H, kinds[k].comps, kinds[k].hs, kinds[k].vs, kinds[k].progressive,
                                   (uint32_t)k + 1, &j) == 0);
        FILE *f = fopen(path, "wb");
        REQUIRE(f && fwrite(j.p, 1, j.n, f) == j.n && fclose(f) == 0);
        free(j.p);
        yp_image want, got;
        REQUIRE(yp_image_read(path, NULL, &want, &err) == 0);
        int bad = 0;
        for (int t = 0; t < 200; t++) {
            int r[4];
            for (int i = 0; i < 4; i++) rnd = rnd * 1664525u + 1013904223u, r[i] = (int)(rnd >> 8);
            r[0] %= W, r[1] %= H;
            r[2] = r[0] + 1 + r[2] % (W - r[0]), r[3] = r[1] + 1 + r[3] % (H - r[1]);
            if (t < 4) /* a column or row at the image's edge */
                r[0] = t & 1 ? 0 : r[0], r[1] = t & 2 ? 0 : r[1], r[2] = t & 1 ? 1 : W, r[3] = t & 2 ? 1 : H;
            REQUIRE(yp_image_read_region_into(path, NULL, &bufs, r, &got, &err) == 0);
            CHECK(got.w == W && got.h == H);
            for (int y = r[1]; y < r[3] && !bad; y++)
                if (memcmp(px(&got, r[0], y), px(&want, r[0], y), (size_t)(r[2] - r[0]) * 3)) {
                    printf("    %s: region %d %d %d %d differs at row %d\n", kinds[k].what, r[0], r[1], r[2], r[3],
                           y);
                    bad = 1;
                }
        }
        CHECK(!bad);
        yp_image_free(&want);
    }
    /* EXIF orientation 6 and a PNG: decoded whole, turned */
    yp_image small, got, want;
    REQUIRE(yp_image_alloc(&small, 40, 24, &err) == 0);
    fill_gradient(&small);
    bytes j;
    REQUIRE(yp_image_encode_jpeg(&small, 90, &j.p, &j.n, &err) == 0);
    uint8_t seg[128];
    size_t n = exif_app1(seg, 6, 1);
    bytes rot = with_segment(&j, seg, n);
    char c[128], p[128];
    snprintf(c, sizeof c, "%s/region_rot.jpg", dir);
    snprintf(p, sizeof p, "%s/region.png", dir);
    FILE *f = fopen(c, "wb");
    REQUIRE(f && fwrite(rot.p, 1, rot.n, f) == rot.n && fclose(f) == 0);
    REQUIRE(yp_image_write_png(p, &small, &err) == 0);
    free(j.p), free(rot.p);
    const char *paths[2] = {c, p};
    const int r[4] = {3, 2, 9, 7};
    for (int i = 0; i < 2; i++) {
        REQUIRE(yp_image_read(paths[i], NULL, &want, &err) == 0);
        REQUIRE(yp_image_read_region_into(paths[i], NULL, &bufs, r, &got, &err) == 0);
        CHECK(got.w == want.w && got.h == want.h);
        CHECK(memcmp(got.rgb, want.rgb, (size_t)want.w * (size_t)want.h * 3) == 0);
        yp_image_free(&want);
    }
    CHECK(got.w == 40 && got.h == 24); /* the PNG */
    yp_image_buffers_free(&bufs);
    yp_image_free(&small);
}

int main(void) {
    if (!mkdtemp(dir)) {
        perror("test_image: mkdtemp");
        return 1;
    }
    YP_RUN(test_jpeg_png_round_trip);
    YP_RUN(test_files);
    YP_RUN(test_jpeg_grey);
    YP_RUN(test_jpeg_cmyk);
    YP_RUN(test_exif_orientation);
    YP_RUN(test_png_formats);
    YP_RUN(test_truncated);
    YP_RUN(test_corrupt_bytes);
    YP_RUN(test_huge_dimensions);
    YP_RUN(test_not_images);
    YP_RUN(test_probe);
    YP_RUN(test_read_into);
    YP_RUN(test_read_region);
    clean_dir();
    return yp_test_summary();
}
