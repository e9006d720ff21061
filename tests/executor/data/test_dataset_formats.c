/* test_dataset_formats.c - a dataset with one image of every extension in YOLOv5's IMG_FORMATS (bmp, dng,
 * jpeg, jpg, mpo, png, tif, tiff, webp, pfm) and one bad file of each of four formats: the scan keeps the ten
 * good ones with their sizes and drops the four with a reason each, and the loader then trains and validates on
 * exactly the ten (no position filled by another image, none left out). The images are written here: JPEG and
 * PNG with yp_image's encoders, TIFF with libtiff, WebP with libwebp's lossless encoder, BMP and PFM byte by
 * byte (DNG is a TIFF container, MPO a JPEG stream, so those two are the same bytes under their extension). */
#define _XOPEN_SOURCE 700 /* mkdtemp */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <tiffio.h>
#include <unistd.h>
#include <webp/encode.h>

#include "yp_label_cache.h"
#include "yp_loader.h"
#include "yp_test.h"
#include "yp_test_fs.h"

enum { W = 24, H = 16 };
static char root[512];
static uint8_t rgb[W * H * 3];

static void path_of(char *out, size_t size, const char *rel) { snprintf(out, size, "%s/%s", root, rel); }

static void put_bytes(const char *rel, const void *data, size_t size) {
    char p[1024];
    path_of(p, sizeof p, rel);
    FILE *f = fopen(p, "wb");
    if (!f) return;
    fwrite(data, 1, size, f);
    fclose(f);
}

static void put(const char *rel, const char *text) { put_bytes(rel, text, strlen(text)); }

static void le16(uint8_t *p, unsigned v) { p[0] = (uint8_t)v, p[1] = (uint8_t)(v >> 8); }
static void le32(uint8_t *p, uint32_t v) { le16(p, v & 0xFFFF), le16(p + 2, v >> 16); }

/* A bottom-up 24-bit BMP of rgb (rows padded to 4 bytes, BGR order). */
static void put_bmp(const char *rel) {
    enum { ROW = (W * 3 + 3) / 4 * 4, SIZE = 54 + ROW * H };
    static uint8_t b[SIZE];
    memset(b, 0, sizeof b);
    b[0] = 'B', b[1] = 'M', le32(b + 2, SIZE), le32(b + 10, 54), le32(b + 14, 40), le32(b + 18, W);
    le32(b + 22, H), le16(b + 26, 1), le16(b + 28, 24), le32(b + 34, ROW * H);
    for (int y = 0; y < H; y++)
        for (int x = 0; x < W; x++)
            for (int c = 0; c < 3; c++) b[54 + (H - 1 - y) * ROW + x * 3 + c] = rgb[(y * W + x) * 3 + 2 - c];
    put_bytes(rel, b, sizeof b);
}

/* A little-endian colour PFM of rgb / 255 (rows bottom-up, as the format stores them). */
static void put_pfm(const char *rel) {
    char head[64];
    int n = snprintf(head, sizeof head, "PF\n%d %d\n-1.0\n", W, H);
    static uint8_t b[64 + W * H * 3 * 4];
    memcpy(b, head, (size_t)n);
    for (int y = 0; y < H; y++)
        for (int i = 0; i < W * 3; i++) {
            float v = rgb[y * W * 3 + i] / 255.0f;
            memcpy(b + n + ((size_t)(H - 1 - y) * W * 3 + i) * 4, &v, 4);
        }
    put_bytes(rel, b, (size_t)n + W * H * 3 * 4);
}

static void put_tiff(const char *rel) {
    char p[1024];
    path_of(p, sizeof p, rel);
    TIFF *t = TIFFOpen(p, "w");
    if (!t) return;
    TIFFSetField(t, TIFFTAG_IMAGEWIDTH, W), TIFFSetField(t, TIFFTAG_IMAGELENGTH, H);
    TIFFSetField(t, TIFFTAG_SAMPLESPERPIXEL, 3), TIFFSetField(t, TIFFTAG_BITSPERSAMPLE, 8);
    TIFFSetField(t, TIFFTAG_PHOTOMETRIC, PHOTOMETRIC_RGB), TIFFSetField(t, TIFFTAG_PLANARCONFIG, PLANARCONFIG_CONTIG);
    TIFFSetField(t, TIFFTAG_COMPRESSION, COMPRESSION_LZW), TIFFSetField(t, TIFFTAG_ROWSPERSTRIP, H);
    for (int y = 0; y < H; y++) TIFFWriteScanline(t, rgb + y * W * 3, (uint32_t)y, 0);
    TIFFClose(t);
}

static void put_webp(const char *rel) {
    uint8_t *out = NULL;
    size_t n = WebPEncodeLosslessRGB(rgb, W, H, W * 3, &out);
    if (n) put_bytes(rel, out, n);
    WebPFree(out);
}

/* JPEG (q 95) or PNG of rgb under rel; keep < size: only the first keep bytes (a truncated file). */
static void put_encoded(const char *rel, int png, size_t keep) {
    yp_image im;
    yp_err err;
    uint8_t *data = NULL;
    size_t size = 0;
    if (yp_image_alloc(&im, W, H, &err)) return;
    memcpy(im.rgb, rgb, sizeof rgb);
    if ((png ? yp_image_encode_png(&im, &data, &size, &err) : yp_image_encode_jpeg(&im, 95, &data, &size, &err)) == 0)
        put_bytes(rel, data, keep < size ? keep : size);
    free(data);
    yp_image_free(&im);
}

/* Copies root/from to root/to byte for byte, the first keep bytes only when keep > 0. */
static void copy_file(const char *from, const char *to, long keep) {
    char p[1024];
    path_of(p, sizeof p, from);
    FILE *f = fopen(p, "rb");
    if (!f) return;
    static uint8_t b[1 << 16];
    size_t n = fread(b, 1, sizeof b, f);
    fclose(f);
    put_bytes(to, b, keep > 0 && (size_t)keep < n ? (size_t)keep : n);
}

static const char *const good[] = {"a.bmp", "b.dng", "c.jpeg", "d.jpg", "e.mpo",
                                   "f.png", "g.tif", "h.tiff", "i.webp", "j.pfm"};
enum { N_GOOD = 10, N_BAD = 4 };

static void make_dataset(void) {
    const char *tmp = getenv("TMPDIR");
    snprintf(root, sizeof root, "%s/yp_dataset_formats_XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(root)) return;
    const char *dirs[] = {"images", "labels"};
    for (int i = 0; i < 2; i++) {
        char p[1024];
        path_of(p, sizeof p, dirs[i]);
        mkdir(p, 0755);
    }
    for (int i = 0; i < W * H * 3; i++) rgb[i] = (uint8_t)((i / 3 % W) * 10 + (i / 3 / W) * 5 + i % 3 * 60);
    put_bmp("images/a.bmp");
    put_tiff("images/g.tif");
    copy_file("images/g.tif", "images/b.dng", 0);
    copy_file("images/g.tif", "images/h.tiff", 0);
    put_encoded("images/d.jpg", 0, (size_t)-1);
    copy_file("images/d.jpg", "images/c.jpeg", 0);
    copy_file("images/d.jpg", "images/e.mpo", 0);
    put_encoded("images/f.png", 1, (size_t)-1);
    put_webp("images/i.webp");
    put_pfm("images/j.pfm");
    /* the bad ones: cut in their data, or (the BMP) a header with nothing after it */
    copy_file("images/a.bmp", "images/x_cut.bmp", 60);
    copy_file("images/g.tif", "images/x_cut.tif", 40);
    copy_file("images/i.webp", "images/x_cut.webp", 30);
    copy_file("images/j.pfm", "images/x_cut.pfm", 200);
    const char *labelled[] = {"a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "x_cut"};
    for (int i = 0; i < 11; i++) {
        char rel[64];
        snprintf(rel, sizeof rel, "labels/%s.txt", labelled[i]);
        put(rel, "0 0.5 0.5 0.5 0.5\n");
    }
    put("data.yaml", "train: images\nval: images\nnames: [thing]\n");
}

static int ends_with(const char *s, const char *tail) {
    size_t n = strlen(s), k = strlen(tail);
    return n >= k && strcmp(s + n - k, tail) == 0;
}

static yp_labels L;

static void test_scan_keeps_every_format(void) {
    char yaml[1024];
    yp_err err;
    path_of(yaml, sizeof yaml, "data.yaml");
    REQUIRE(yp_labels_load_split(yaml, "train", &L, &err) == 0);
    CHECK_EQ_I64(L.n, N_GOOD);
    CHECK_EQ_I64(L.stats.n_bad_files, N_BAD);
    CHECK_STR_HAS(L.warnings, "x_cut.bmp: ignoring corrupt image/label: ");
    CHECK_STR_HAS(L.warnings, "x_cut.webp: ignoring corrupt image/label: ");
    for (int64_t i = 0; i < L.n && i < N_GOOD; i++) {
        int w, h;
        yp_labels_size(&L, i, &w, &h);
        CHECK(ends_with(yp_labels_image(&L, i), good[i]));
        if (w != W || h != H) printf("    %s: %dx%d\n", yp_labels_image(&L, i), w, h);
        CHECK(w == W && h == H);
    }
}

/* One epoch of training (mosaic) and one of validation: every position is the image the scan kept. */
static void test_loader_uses_what_the_scan_kept(int validation) {
    yp_loader_opts o;
    yp_loader_opts_default(&o);
    o.workers = 2, o.batch = 5, o.imgsz = 32, o.epochs = 1, o.validation = validation, o.seed = 7;
    yp_err err;
    yp_loader *l = yp_loader_open(&L, &o, &err);
    if (!l) printf("    (%s)\n", err.msg);
    REQUIRE(l != NULL);
    yp_loader_batch b;
    int rc, seen = 0;
    while ((rc = yp_loader_next(l, &b, &err)) == 1) seen += b.n;
    if (rc < 0) printf("    (%s)\n", err.msg);
    yp_loader_stats st;
    yp_loader_get_stats(l, &st);
    yp_loader_close(l);
    CHECK(rc == 0 && seen == N_GOOD);
    CHECK(st.bad_images == 0 && st.replaced == 0 && st.skipped == 0);
}

static void test_training_loader(void) { test_loader_uses_what_the_scan_kept(0); }
static void test_validation_loader(void) { test_loader_uses_what_the_scan_kept(1); }

int main(void) {
    make_dataset();
    YP_RUN(test_scan_keeps_every_format);
    YP_RUN(test_training_loader);
    YP_RUN(test_validation_loader);
    yp_labels_free(&L);
    yp_test_remove_tree(root);
    return yp_test_summary();
}
