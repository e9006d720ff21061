/* test_augment.c - YOLOv5's augmentation (executor/data/yp_augment.h) against hand-computed values:
 * the perspective's label transform (identity, translation and scale, a box pushed out),
 * box_candidates, the mosaic placement, letterbox geometry, resize weights, HSV (zero gains,
 * known pixels; the one-pass HSV + flip against the row conversions), the axis-aligned warp
 * against OpenCV's rule per pixel, flips, and the training item's determinism. (Bit-exactness with OpenCV itself is
 * measured by bench/augment_vs_opencv, which needs libopencv; these tests do not.) */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "yp_augment.h"
#include "yp_test.h"

static int near(double a, double b) { return fabs(a - b) < 1e-4; }

static yp_warp affine(double a, double tx, double e, double ty, double s, int w, int h) {
    yp_warp wp = {.m = {a, 0, tx, 0, e, ty, 0, 0, 1}, .s = s, .out_w = w, .out_h = h};
    return wp;
}

static void test_identity_perspective(void) {
    float rows[] = {0, 10, 20, 30, 50, 2, 100.5f, 200.25f, 300, 400};
    float want[10];
    memcpy(want, rows, sizeof rows);
    yp_warp wp = affine(1, 0, 1, 0, 1, 640, 640);
    CHECK(!yp_warp_changes_image(&wp, 0, 0));
    CHECK(yp_warp_changes_image(&wp, -320, -320));
    CHECK_EQ_I64(yp_warp_labels(rows, 2, &wp), 2);
    CHECK(memcmp(rows, want, sizeof rows) == 0);
    /* and the image: an identity warp samples every pixel at its own place */
    uint8_t src[4 * 3 * 3], dst[4 * 3 * 3];
    for (int i = 0; i < 36; i++) src[i] = (uint8_t)(i * 7);
    yp_image a = {src, 4, 3}, b = {dst, 4, 3};
    wp.out_w = 4, wp.out_h = 3;
    size_t ws_bytes;
    REQUIRE(yp_warp_ws(&wp, &ws_bytes) == 0);
    int ws[32];
    REQUIRE(ws_bytes <= sizeof ws);
    CHECK(yp_warp_image(&a, &b, &wp, ws, sizeof ws) == 0);
    CHECK(memcmp(src, dst, sizeof src) == 0);
}

static void test_translation_scale(void) {
    /* x' = 2x + 10, y' = 2y - 5: box (10, 20, 30, 50) -> (30, 35, 70, 95) */
    float rows[] = {3, 10, 20, 30, 50};
    yp_warp wp = affine(2, 10, 2, -5, 2, 640, 640);
    CHECK_EQ_I64(yp_warp_labels(rows, 1, &wp), 1);
    CHECK(rows[0] == 3 && near(rows[1], 30) && near(rows[2], 35) && near(rows[3], 70) && near(rows[4], 95));
    /* clipped at the output edge: (300, 300, 340, 320) -> (610, 595, 690 -> 640, 635) */
    float cut[] = {1, 300, 300, 340, 320};
    CHECK_EQ_I64(yp_warp_labels(cut, 1, &wp), 1);
    CHECK(near(cut[1], 610) && near(cut[2], 595) && near(cut[3], 640) && near(cut[4], 635));
    /* the image: a 2x1 source shifted right by one pixel into a 3x1 output, the rest border */
    uint8_t src[6] = {10, 20, 30, 40, 50, 60}, dst[9];
    yp_image a = {src, 2, 1}, b = {dst, 3, 1};
    yp_warp shift = affine(1, 1, 1, 0, 1, 3, 1);
    int ws[32];
    CHECK(yp_warp_image(&a, &b, &shift, ws, sizeof ws) == 0);
    uint8_t want[9] = {114, 114, 114, 10, 20, 30, 40, 50, 60};
    CHECK(memcmp(dst, want, 9) == 0);
}

static void test_box_pushed_out(void) {
    /* translated past the right edge: clipped to zero width, dropped; the second box stays */
    float rows[] = {0, 600, 10, 630, 40, 1, 10, 10, 50, 50};
    yp_warp wp = affine(1, 100, 1, 0, 1, 640, 640);
    CHECK_EQ_I64(yp_warp_labels(rows, 2, &wp), 1);
    CHECK(rows[0] == 1 && near(rows[1], 110) && near(rows[3], 150));
    /* 5% of the area left (20 of 400 px wide inside): dropped by the area ratio */
    float part[] = {0, 520, 10, 920, 40};
    CHECK_EQ_I64(yp_warp_labels(part, 1, &wp), 0);
    /* 15% left: kept */
    float kept[] = {0, 480, 10, 880, 40};
    CHECK_EQ_I64(yp_warp_labels(kept, 1, &wp), 1);
}

static void test_box_candidates(void) {
    const float before[4] = {0, 0, 100, 100};
    const double fine[4] = {0, 0, 50, 50}, thin[4] = {0, 0, 2, 50}, small[4] = {0, 0, 31, 31},
                 long_[4] = {0, 0, 500, 4.9}, ok_ar[4] = {0, 0, 330, 34};
    CHECK(yp_box_candidate(before, fine));   /* area 25% */
    CHECK(!yp_box_candidate(before, thin));  /* width 2 is not > 2 */
    CHECK(!yp_box_candidate(before, small)); /* area 9.6% */
    CHECK(!yp_box_candidate(before, long_)); /* aspect ratio 102 */
    CHECK(yp_box_candidate(before, ok_ar));  /* aspect 9.7, area 112% */
}

/* A w x h image whose pixel (x, y) is (x, y, tag). */
static yp_image coord_image(uint8_t *buf, int w, int h, uint8_t tag) {
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++) buf[3 * (y * w + x)] = (uint8_t)x, buf[3 * (y * w + x) + 1] = (uint8_t)y, buf[3 * (y * w + x) + 2] = tag;
    return (yp_image){buf, w, h};
}

static const uint8_t *px(const yp_image *im, int x, int y) { return im->rgb + 3 * ((size_t)y * im->w + x); }

static void test_mosaic_place(void) {
    uint8_t cbuf[16 * 16 * 3], t0buf[8 * 6 * 3], t3buf[8 * 8 * 3];
    yp_image canvas = {cbuf, 16, 16};
    yp_mosaic_plan p = {.imgsz = 8, .xc = 10, .yc = 6};
    yp_mosaic_fill(&canvas);
    yp_image t0 = coord_image(t0buf, 8, 6, 1), t3 = coord_image(t3buf, 8, 8, 4);
    /* top-left, 8x6: canvas (2..10, 0..6) <- the whole tile, offset (2, 0) */
    float r0[5] = {1, 0.5f, 0.5f, 0.5f, 1.f / 3}, o0[5];
    CHECK(yp_mosaic_place(&canvas, &p, 0, &t0, r0, 1, o0) == 0);
    CHECK(o0[0] == 1 && near(o0[1], 4) && near(o0[2], 2) && near(o0[3], 8) && near(o0[4], 4));
    CHECK(px(&canvas, 2, 0)[0] == 0 && px(&canvas, 2, 0)[2] == 1 && px(&canvas, 9, 5)[0] == 7 && px(&canvas, 9, 5)[1] == 5);
    CHECK(px(&canvas, 1, 0)[0] == 114 && px(&canvas, 10, 0)[0] == 114);
    /* bottom-right, 8x8: canvas (10..16, 6..14) <- tile (0..6, 0..8), offset (10, 6); box clipped at 16 */
    float r3[5] = {2, 0.5f, 0.5f, 1, 1}, o3[5];
    CHECK(yp_mosaic_place(&canvas, &p, 3, &t3, r3, 1, o3) == 0);
    CHECK(o3[0] == 2 && near(o3[1], 10) && near(o3[2], 6) && near(o3[3], 16) && near(o3[4], 14));
    CHECK(px(&canvas, 10, 6)[0] == 0 && px(&canvas, 10, 6)[2] == 4 && px(&canvas, 15, 13)[0] == 5 &&
          px(&canvas, 15, 13)[1] == 7 && px(&canvas, 15, 14)[0] == 114);
    /* a tile that does not fit the canvas it is given */
    yp_image small = {cbuf, 8, 8};
    CHECK(yp_mosaic_place(&small, &p, 0, &t0, r0, 1, o0) == -1);
}

static void test_mosaic_draw(void) {
    yp_rng r, r2;
    int64_t seen_self = 0;
    for (uint64_t k = 0; k < 200; k++) {
        yp_mosaic_plan p, q;
        yp_rng_seed(&r, 7, k), yp_rng_seed(&r2, 7, k);
        yp_mosaic_draw(&r, 5, 10, 640, &p), yp_mosaic_draw(&r2, 5, 10, 640, &q);
        /* field by field: the struct's padding after yc is not part of the plan (memcmp read it) */
        CHECK(p.imgsz == q.imgsz && p.xc == q.xc && p.yc == q.yc && memcmp(p.index, q.index, sizeof p.index) == 0);
        CHECK(p.xc >= 320 && p.xc < 960 && p.yc >= 320 && p.yc < 960);
        int self = 0;
        for (int i = 0; i < 4; i++) {
            CHECK(p.index[i] >= 0 && p.index[i] < 10);
            self += p.index[i] == 5;
        }
        CHECK(self >= 1);
        seen_self += p.index[0] == 5;
    }
    CHECK(seen_self > 20 && seen_self < 100); /* shuffled: the image is first about a quarter of the time */
}

static void lb(int w, int h, int nw, int nh, int auto_pad, int fill, int up, yp_letterbox_geom *g) {
    yp_letterbox_opts o = {nw, nh, auto_pad, fill, up, 32};
    memset(g, 0, sizeof *g);
    CHECK(yp_letterbox_geometry(w, h, &o, g) == 0);
}

static void test_letterbox_geometry(void) {
    yp_letterbox_geom g;
    lb(1280, 720, 640, 640, 0, 0, 1, &g);
    CHECK(g.unpad_w == 640 && g.unpad_h == 360 && g.top == 140 && g.bottom == 140 && g.left == 0 && g.right == 0);
    CHECK(g.out_w == 640 && g.out_h == 640 && g.ratio_w == 0.5 && g.dw == 0 && g.dh == 140);
    lb(1280, 720, 640, 640, 1, 0, 1, &g); /* auto: 280 mod 32 = 24 */
    CHECK(g.out_w == 640 && g.out_h == 384 && g.top == 12 && g.bottom == 12 && g.dh == 12);
    lb(500, 375, 640, 640, 0, 0, 0, &g); /* no scaleup: r = 1; dh 132.5 -> 132 above, 133 below */
    CHECK(g.ratio_w == 1 && g.unpad_w == 500 && g.unpad_h == 375 && g.left == 70 && g.right == 70);
    CHECK(g.top == 132 && g.bottom == 133 && g.dh == 132.5 && g.out_h == 640);
    lb(500, 375, 640, 640, 0, 0, 1, &g);
    CHECK(near(g.ratio_w, 1.28) && g.unpad_w == 640 && g.unpad_h == 480 && g.top == 80 && g.bottom == 80);
    lb(1280, 720, 640, 640, 0, 1, 1, &g); /* scaleFill: stretched */
    CHECK(g.unpad_w == 640 && g.unpad_h == 640 && g.ratio_w == 0.5 && near(g.ratio_h, 640.0 / 720) && g.dw == 0 && g.dh == 0);
    lb(333, 517, 640, 640, 1, 0, 1, &g); /* r = 640/517: 412 x 640, 228 mod 32 = 4 */
    CHECK(g.unpad_w == 412 && g.unpad_h == 640 && g.left == 2 && g.right == 2 && g.out_w == 416 && g.out_h == 640);
    yp_letterbox_opts bad = {0, 640, 0, 0, 1, 32};
    CHECK(yp_letterbox_geometry(100, 100, &bad, &g) == -1);
}

static void test_letterbox_image_and_labels(void) {
    enum { W = 5, H = 3 };
    uint8_t sbuf[W * H * 3], dbuf[8 * 8 * 3];
    yp_image src = coord_image(sbuf, W, H, 9), dst = {dbuf, 8, 8};
    yp_letterbox_geom g;
    lb(W, H, 8, 8, 0, 0, 0, &g); /* r = 1: pad 3 wide (1 left, 2 right), 5 high (2 above, 3 below) */
    CHECK(g.left == 1 && g.right == 2 && g.top == 2 && g.bottom == 3);
    size_t ws_bytes;
    REQUIRE(yp_letterbox_ws(W, H, &g, &ws_bytes) == 0);
    CHECK(ws_bytes == 0);
    CHECK(yp_letterbox(&src, &g, &dst, NULL, 0) == 0);
    CHECK(px(&dst, 0, 0)[0] == 114 && px(&dst, 1, 2)[2] == 9 && px(&dst, 1, 2)[0] == 0 && px(&dst, 5, 4)[0] == 4 &&
          px(&dst, 5, 4)[1] == 2 && px(&dst, 6, 4)[0] == 114 && px(&dst, 1, 5)[0] == 114);
    float rows[5] = {0, 0.5f, 0.5f, 0.4f, 1};
    yp_letterbox_labels(rows, 1, W, H, &g);
    /* YOLOv5 shifts labels by the float padding (dw, dh) = (1.5, 2.5), not the pixels placed */
    CHECK(near(rows[1], 1.5 + 1.5) && near(rows[2], 0 + 2.5) && near(rows[3], 3.5 + 1.5) && near(rows[4], 3 + 2.5));
}

static void test_resize_weights(void) {
    /* 2x1 -> 4x1 linear: weights (1, 0), (3/4, 1/4), (1/4, 3/4), (0, 1) -> 0, 25, 75, 100 */
    uint8_t s[6] = {0, 0, 0, 100, 100, 100}, d[12];
    yp_image a = {s, 2, 1}, b = {d, 4, 1};
    size_t n;
    REQUIRE(yp_resize_ws(2, 1, 4, 1, YP_INTER_LINEAR, &n) == 0);
    uint8_t *ws = malloc(n);
    CHECK(yp_resize(&a, &b, YP_INTER_LINEAR, ws, n) == 0);
    CHECK(d[0] == 0 && d[3] == 25 && d[6] == 75 && d[9] == 100 && d[10] == 100);
    CHECK(yp_resize(&a, &b, YP_INTER_LINEAR, ws, n - 1) == -1);
    free(ws);
    /* an exact halving is the 2x2 mean, rounded half up: (1 + 2 + 3 + 4 + 2) >> 2 = 3 */
    uint8_t q[2 * 2 * 3] = {1, 1, 1, 2, 2, 2, 3, 3, 3, 4, 4, 4}, o[3];
    yp_image qa = {q, 2, 2}, qb = {o, 1, 1};
    CHECK(yp_resize_ws(2, 2, 1, 1, YP_INTER_LINEAR, &n) == 0 && n == 0);
    CHECK(yp_resize(&qa, &qb, YP_INTER_LINEAR, NULL, 0) == 0 && o[0] == 3);
    /* and at 14x10 -> 7x5 (INTER_LINEAR and INTER_AREA alike), every byte the mean of its 2x2 */
    uint8_t big[14 * 10 * 3], half[7 * 5 * 3];
    for (int i = 0; i < 14 * 10 * 3; i++) big[i] = (uint8_t)((i * 97) ^ (i >> 3));
    for (int k = 0; k < 2; k++) {
        yp_image ba = {big, 14, 10}, hb = {half, 7, 5};
        yp_interp in = k ? YP_INTER_AREA : YP_INTER_LINEAR;
        CHECK(yp_resize_ws(14, 10, 7, 5, in, &n) == 0 && yp_resize(&ba, &hb, in, NULL, 0) == 0);
        int bad = 0;
        for (int y = 0; y < 5; y++)
            for (int x = 0; x < 7; x++)
                for (int c = 0; c < 3; c++) {
                    const uint8_t *p = big + ((2 * y) * 14 + 2 * x) * 3 + c, *p1 = p + 14 * 3;
                    bad += half[(y * 7 + x) * 3 + c] != (uint8_t)((p[0] + p[3] + p1[0] + p1[3] + 2) >> 2);
                }
        CHECK(bad == 0);
    }
    CHECK(yp_resize_ws(2, 2, 3, 3, YP_INTER_AREA, &n) == -1); /* area only downscales */
    CHECK(yp_resize_ws(0, 2, 3, 3, YP_INTER_LINEAR, &n) == -1);
    /* load_image: long side to imgsz, ceil; linear when augmenting or enlarging */
    int w, h;
    yp_interp in;
    CHECK(yp_aug_load_size(1000, 750, 640, 0, &w, &h, &in) == 1 && w == 640 && h == 480 && in == YP_INTER_AREA);
    CHECK(yp_aug_load_size(1000, 751, 640, 1, &w, &h, &in) == 1 && h == 481 && in == YP_INTER_LINEAR);
    CHECK(yp_aug_load_size(320, 200, 640, 0, &w, &h, &in) == 1 && w == 640 && h == 400 && in == YP_INTER_LINEAR);
    CHECK(yp_aug_load_size(640, 427, 640, 0, &w, &h, &in) == 0 && w == 640 && h == 427);
}

static void test_hsv(void) {
    yp_aug_hyp h;
    yp_aug_hyp_default(&h);
    h.hsv_h = h.hsv_s = h.hsv_v = 0;
    yp_rng r, before;
    yp_rng_seed(&r, 1, 2);
    before = r;
    double gain[3];
    CHECK(yp_hsv_draw(&r, &h, gain) == 0);
    CHECK(memcmp(&r, &before, sizeof r) == 0); /* zero gains: no draw, the image is left alone */
    yp_aug_hyp_default(&h);
    CHECK(yp_hsv_draw(&r, &h, gain) == 1);
    CHECK(gain[0] >= 0.985 && gain[0] <= 1.015 && gain[1] >= 0.3 && gain[1] <= 1.7 && gain[2] >= 0.6 && gain[2] <= 1.4);
    /* OpenCV's uint8 HSV: H in [0, 180) */
    const uint8_t rgb[6][3] = {{255, 0, 0}, {0, 255, 0}, {0, 0, 255}, {255, 255, 0}, {128, 128, 128}, {255, 0, 255}};
    const uint8_t hsv[6][3] = {{0, 255, 255}, {60, 255, 255}, {120, 255, 255}, {30, 255, 255}, {0, 0, 128}, {150, 255, 255}};
    for (int i = 0; i < 6; i++) {
        uint8_t o[3];
        yp_rgb_to_hsv_row(rgb[i], o, 1);
        CHECK(memcmp(o, hsv[i], 3) == 0);
    }
    /* a row of 32 (OpenCV's vector rule, truncating): green with hue x1.5 -> H 90, cyan, but
     * 90 * (6/180 in float) = 3.00000024, so G = 255 (1 - 2.4e-7) truncates to 254; blue with
     * S, V x0.5 -> HSV (120, 127, 127) -> R = G = floor(127 * 128 / 255) = 63, B = 127 */
    uint8_t row[32 * 3];
    yp_image im = {row, 32, 1};
    for (int i = 0; i < 32; i++) row[3 * i] = 0, row[3 * i + 1] = 255, row[3 * i + 2] = 0;
    yp_hsv_apply(&im, (double[3]){1.5, 1, 1});
    CHECK(row[0] == 0 && row[1] == 254 && row[2] == 255 && row[93] == 0 && row[95] == 255);
    for (int i = 0; i < 32; i++) row[3 * i] = 0, row[3 * i + 1] = 0, row[3 * i + 2] = 255;
    yp_hsv_apply(&im, (double[3]){1, 0.5, 0.5});
    CHECK(row[0] == 63 && row[1] == 63 && row[2] == 127);
    /* gray 102 with V x0.5 -> 51 */
    for (int i = 0; i < 96; i++) row[i] = 102;
    yp_hsv_apply(&im, (double[3]){1, 1, 0.5});
    CHECK(row[0] == 51 && row[1] == 51 && row[95] == 51);
}

/* yp_hsv_apply_flip against its definition: per row yp_rgb_to_hsv_row, augment_hsv's tables (as
 * YOLOv5 writes them in numpy), yp_hsv_to_rgb_row (bench/augment_vs_opencv checks both row
 * conversions against OpenCV over every colour), then yp_flip_lr; widths that are and are not a
 * multiple of OpenCV's 32-pixel step, a quarter of all colours (every fourth) at the wide ones. */
static void test_hsv_apply_flip(void) {
    const double gains[3][3] = {{1.012, 1.55, 0.71}, {0.987, 0.42, 1.33}, {1, 1, 1}};
    const int widths[] = {4096, 4089, 33, 7};
    for (int wi = 0; wi < 4; wi++) {
        int w = widths[wi], h = (1 << 22) / w + 1;
        if (w < 64) h = 64;
        size_t n = (size_t)w * (size_t)h * 3;
        uint8_t *src = malloc(n), *a = malloc(n), *b = malloc(n);
        REQUIRE(src && a && b);
        for (size_t i = 0; i < (size_t)w * h; i++) {
            uint32_t c = (uint32_t)(i * (w < 64 ? 2654435761u : 4u));
            src[3 * i] = (uint8_t)(c >> 16), src[3 * i + 1] = (uint8_t)(c >> 8), src[3 * i + 2] = (uint8_t)c;
        }
        for (int gi = 0; gi < 3; gi++)
            for (int flip = 0; flip < 2; flip++) {
                uint8_t lut[3][256];
                for (int x = 0; x < 256; x++) {
                    double hue = fmod(x * gains[gi][0], 180), sat = x * gains[gi][1], val = x * gains[gi][2];
                    lut[0][x] = (uint8_t)(hue < 0 ? hue + 180 : hue);
                    lut[1][x] = (uint8_t)(sat > 255 ? 255 : sat), lut[2][x] = (uint8_t)(val > 255 ? 255 : val);
                }
                memcpy(b, src, n);
                for (int y = 0; y < h; y++) {
                    uint8_t *row = b + (size_t)y * w * 3;
                    yp_rgb_to_hsv_row(row, row, w);
                    for (int i = 0; i < 3 * w; i++) row[i] = lut[i % 3][row[i]];
                    yp_hsv_to_rgb_row(row, row, w);
                }
                yp_image ib = {b, w, h}, ia = {a, w, h};
                if (flip) yp_flip_lr(&ib);
                memcpy(a, src, n);
                yp_hsv_apply_flip(&ia, gains[gi], flip);
                CHECK(memcmp(a, b, n) == 0);
                if (!flip) {
                    memcpy(a, src, n);
                    yp_hsv_apply(&ia, gains[gi]);
                    CHECK(memcmp(a, b, n) == 0);
                }
            }
        free(src), free(a), free(b);
    }
}

/* The axis-aligned warp (no rotation or shear: scale and translation, yp_warp_image's separable
 * path) against OpenCV's rule written out per pixel (augment_warp.c's header), over scales from
 * 0.4 to 1.7 and translations that put the output partly or wholly outside the source, a mirror
 * (negative scale), at output widths 80 and 13 (13: not a multiple of the vector path's 8 pixels,
 * and its 6 int16 a column of workspace hold fewer source columns than a 0.4 scale reads, so the
 * vector path's rows go in pieces). */
static void test_warp_axis_aligned(void) {
    enum { SW = 97, SH = 61, OH = 50 };
    static uint8_t src[SW * SH * 3], got[80 * OH * 3], want[80 * OH * 3];
    for (int i = 0; i < SW * SH * 3; i++) src[i] = (uint8_t)((i * 37) ^ (i >> 5));
    yp_image a = {src, SW, SH};
    const double cases[][4] = {{1, 0, 1, 0},          {0.8, -10.5, 0.8, 7.25}, {1.37, -60.3, 1.41, -20.9},
                               {0.43, 30, 0.51, 12.7}, {1.7, -170, 0.9, -55},  {1, 200, 1, 0},
                               {0.6, -3.2, 1.2, 50.1}, {-1.1, 85.3, 1, 3},     {0.4, 1, 0.9, 1}};
    for (int ow = 80; ow > 0; ow = ow == 80 ? 13 : 0)
        for (size_t k = 0; k < sizeof cases / sizeof *cases; k++) {
            const double *c = cases[k];
            yp_warp wp = affine(c[0], c[1], c[2], c[3], 1, ow, OH);
            yp_image b = {got, ow, OH};
            size_t need;
            REQUIRE(yp_warp_ws(&wp, &need) == 0);
            void *ws = malloc(need); /* exactly the size: a sanitizer build sees any overrun */
            REQUIRE(ws);
            CHECK(yp_warp_image(&a, &b, &wp, ws, need) == 0);
            free(ws);
            /* cv2.warpAffine's inverse (its closed form, m1 = m3 = 0), in 1/1024 pixel, then 1/32 */
            double D = 1. / (c[0] * c[2] - 0. * 0.), im0 = c[2] * D, im1 = -0. * D, im3 = -0. * D, im4 = c[0] * D;
            double im2 = -im0 * c[1] - im1 * c[3], im5 = -im3 * c[1] - im4 * c[3];
            for (int y = 0; y < OH; y++)
                for (int x = 0; x < ow; x++) {
                    long X = (lrint((im1 * y + im2) * 1024) + 16 + lrint(im0 * x * 1024)) >> 5;
                    long Y = (lrint((im4 * y + im5) * 1024) + 16 + lrint(im3 * x * 1024)) >> 5;
                    long sx = X >> 5, sy = Y >> 5, fx = X & 31, fy = Y & 31;
                    for (int ch = 0; ch < 3; ch++) {
                        long acc = 512;
                        for (int t = 0; t < 4; t++) {
                            long xx = sx + (t & 1), yy = sy + (t >> 1);
                            long wgt = ((t & 1) ? fx : 32 - fx) * ((t >> 1) ? fy : 32 - fy);
                            int in = xx >= 0 && yy >= 0 && xx < SW && yy < SH;
                            acc += wgt * (in ? src[(yy * SW + xx) * 3 + ch] : 114);
                        }
                        want[(y * ow + x) * 3 + ch] = (uint8_t)(acc >> 10);
                    }
                }
            CHECK(memcmp(got, want, (size_t)ow * OH * 3) == 0);
        }
}

static void test_flips(void) {
    uint8_t buf[3 * 2 * 3];
    yp_image im = coord_image(buf, 3, 2, 0);
    yp_flip_lr(&im);
    CHECK(px(&im, 0, 0)[0] == 2 && px(&im, 2, 1)[0] == 0 && px(&im, 1, 1)[0] == 1 && px(&im, 0, 1)[1] == 1);
    yp_flip_ud(&im);
    CHECK(px(&im, 0, 0)[1] == 1 && px(&im, 0, 0)[0] == 2 && px(&im, 2, 1)[1] == 0);
    float rows[5] = {0, 160, 240, 480, 400};
    yp_labels_xyxy_to_xywhn(rows, 1, 640, 640);
    CHECK(near(rows[1], 0.5) && near(rows[2], 0.5) && near(rows[3], 0.5) && near(rows[4], 0.25));
}

/* ---- the training item ---- */

typedef struct {
    uint8_t pixels[4][160 * 320 * 3];
    float rows[4][10];
} source;

static int get(void *ctx, int64_t index, yp_aug_source_item *out, yp_err *err) {
    source *s = ctx;
    (void)err;
    *out = (yp_aug_source_item){s->pixels[index], 320, 160, s->rows[index], 2, 0};
    return 0;
}

static source *make_source(void) {
    source *s = malloc(sizeof *s);
    for (int k = 0; k < 4; k++) {
        for (int i = 0; i < 160 * 320 * 3; i++) s->pixels[k][i] = (uint8_t)((i * (k + 3)) % 251);
        float r[10] = {(float)k, 0.5f, 0.5f, 0.5f, 0.5f, 1, 0.25f, 0.3f, 0.2f, 0.4f};
        memcpy(s->rows[k], r, sizeof r);
    }
    return s;
}

typedef struct {
    const yp_aug_config *cfg;
    source *src;
    uint64_t seed;
    int64_t index;
    uint8_t *image;
    float rows[40];
    int64_t n;
    int rc;
} item_job;

static void *run_item(void *arg) {
    item_job *j = arg;
    size_t n;
    yp_err err;
    yp_rng r;
    yp_aug_train_ws(j->cfg, &n);
    void *ws = malloc(n);
    yp_image out = {j->image, j->cfg->imgsz, j->cfg->imgsz};
    yp_rng_seed(&r, j->seed, (uint64_t)j->index);
    j->rc = yp_aug_train_item(j->cfg, get, j->src, j->index, &r, &out, j->rows, &j->n, ws, n, &err);
    if (j->rc) printf("    (%s)\n", err.msg);
    free(ws);
    return NULL;
}

static void test_single_image_identity(void) {
    /* mosaic off, no translation or scale, no colour, no flips: the letterbox alone */
    source *s = make_source();
    yp_aug_config cfg = {.imgsz = 640, .n_images = 4, .max_rows = 2};
    yp_aug_hyp_default(&cfg.hyp);
    cfg.hyp.mosaic = cfg.hyp.translate = cfg.hyp.scale = cfg.hyp.fliplr = 0;
    cfg.hyp.hsv_h = cfg.hyp.hsv_s = cfg.hyp.hsv_v = 0;
    item_job j = {&cfg, s, 3, 1, malloc(640 * 640 * 3), {0}, 0, 0};
    run_item(&j);
    REQUIRE(j.rc == 0);
    CHECK_EQ_I64(j.n, 2);
    /* 320x160 -> 640x320 (load_image), padded by 160 above and below */
    CHECK(near(j.rows[0], 1) && near(j.rows[1], 0.5) && near(j.rows[2], 0.5) && near(j.rows[3], 0.5) && near(j.rows[4], 0.25));
    CHECK(near(j.rows[6], 0.25) && near(j.rows[7], 0.25 + 0.3 * 0.5) && near(j.rows[8], 0.2) && near(j.rows[9], 0.2));
    CHECK(px(&(yp_image){j.image, 640, 640}, 100, 159)[0] == 114 && px(&(yp_image){j.image, 640, 640}, 100, 480)[1] == 114);
    /* an exact 2x upscale keeps source pixel (0, 0) at output (0, 160) */
    CHECK(memcmp(px(&(yp_image){j.image, 640, 640}, 0, 160), s->pixels[1], 3) == 0);
    free(j.image), free(s);
}

static void test_train_item_deterministic(void) {
    source *s = make_source();
    yp_aug_config cfg = {.imgsz = 320, .n_images = 4, .max_rows = 2};
    yp_aug_hyp_default(&cfg.hyp);
    REQUIRE(yp_aug_train_rows_cap(&cfg) == 8);
    item_job a = {&cfg, s, 11, 2, malloc(320 * 320 * 3), {0}, 0, 0}, b = a, c = a;
    b.image = malloc(320 * 320 * 3), c.image = malloc(320 * 320 * 3);
    c.seed = 12;
    pthread_t t;
    run_item(&a);
    REQUIRE(pthread_create(&t, NULL, run_item, &b) == 0); /* the same seed on another thread */
    pthread_join(t, NULL);
    run_item(&c);
    REQUIRE(a.rc == 0 && b.rc == 0 && c.rc == 0);
    CHECK(memcmp(a.image, b.image, 320 * 320 * 3) == 0);
    CHECK(a.n == b.n && memcmp(a.rows, b.rows, (size_t)a.n * 5 * sizeof(float)) == 0);
    CHECK(memcmp(a.image, c.image, 320 * 320 * 3) != 0);
    for (int64_t i = 0; i < a.n; i++)
        for (int k = 1; k < 5; k++) CHECK(a.rows[5 * i + k] >= 0 && a.rows[5 * i + k] <= 1);
    /* fliplr 1 instead of 0, same seed: the mirror image, x -> 1 - x */
    cfg.hyp.fliplr = 0;
    run_item(&a);
    cfg.hyp.fliplr = 1;
    run_item(&b);
    REQUIRE(a.rc == 0 && b.rc == 0 && a.n == b.n && a.n > 0);
    yp_image flipped = {b.image, 320, 320};
    yp_flip_lr(&flipped);
    CHECK(memcmp(a.image, b.image, 320 * 320 * 3) == 0);
    for (int64_t i = 0; i < a.n; i++) CHECK(near(b.rows[5 * i + 1], 1 - a.rows[5 * i + 1]) && b.rows[5 * i + 2] == a.rows[5 * i + 2]);
    free(a.image), free(b.image), free(c.image), free(s);
}

/* YOLOv5's __getitem__ from the public pieces, the plain way: the whole canvas filled with 114,
 * the four tiles placed whole, the warp, the labels, augment_hsv, the flips one after another. */
static void item_by_pieces(const yp_aug_config *cfg, source *src, int64_t index, uint64_t seed, yp_image *out,
                           float *rows, int64_t *n) {
    int s = cfg->imgsz, border = -((s + 1) / 2);
    yp_rng r;
    yp_rng_seed(&r, seed, (uint64_t)index);
    REQUIRE(yp_rng_unit(&r) < cfg->hyp.mosaic);
    yp_mosaic_plan p;
    yp_mosaic_draw(&r, index, cfg->n_images, s, &p);
    yp_image canvas = {malloc((size_t)4 * s * s * 3), 2 * s, 2 * s};
    REQUIRE(canvas.rgb);
    yp_mosaic_fill(&canvas);
    *n = 0;
    for (int i = 0; i < 4; i++) {
        yp_aug_source_item it;
        yp_err err;
        REQUIRE(get(src, p.index[i], &it, &err) == 0);
        yp_image tile = {(uint8_t *)it.pixels, it.w0, it.h0};
        REQUIRE(yp_mosaic_place(&canvas, &p, i, &tile, it.rows, it.n_rows, rows + 5 * *n) == 0);
        *n += it.n_rows;
    }
    yp_rng_unit(&r); /* mixup */
    yp_warp w;
    size_t need;
    REQUIRE(yp_warp_draw(&r, &cfg->hyp, 2 * s, 2 * s, border, border, &w) == 0 && yp_warp_ws(&w, &need) == 0);
    void *ws = malloc(need + 1);
    REQUIRE(ws && yp_warp_image(&canvas, out, &w, ws, need) == 0);
    *n = yp_warp_labels(rows, *n, &w);
    yp_labels_xyxy_to_xywhn(rows, *n, s, s);
    double gain[3];
    int hsv = yp_hsv_draw(&r, &cfg->hyp, gain), ud = yp_rng_unit(&r) < cfg->hyp.flipud;
    int lr = yp_rng_unit(&r) < cfg->hyp.fliplr;
    if (hsv) yp_hsv_apply(out, gain);
    if (lr) yp_flip_lr(out);
    if (ud) yp_flip_ud(out);
    for (int64_t i = 0; i < *n; i++) {
        if (ud) rows[5 * i + 2] = 1 - rows[5 * i + 2];
        if (lr) rows[5 * i + 1] = 1 - rows[5 * i + 1];
    }
    free(canvas.rgb), free(ws);
}

/* yp_aug_train_item (which writes only the part of the canvas its warp reads, and fuses the
 * colour and the flip) against item_by_pieces, byte for byte, over 24 seeds and three hyps:
 * scratch-low's (the axis-aligned warp), with rotation and shear, with perspective (the whole
 * canvas), flipud 0.5 in the last two. One workspace for all items, filled with 0x5a first: a
 * canvas byte the warp reads but the item did not write would show as a difference. */
static void test_train_item_pieces(void) {
    source *s = make_source();
    yp_aug_config cfg = {.imgsz = 320, .n_images = 4, .max_rows = 2};
    size_t n;
    uint8_t *a = malloc(320 * 320 * 3), *b = malloc(320 * 320 * 3);
    for (int hyp = 0; hyp < 3; hyp++) {
        yp_aug_hyp_default(&cfg.hyp);
        if (hyp > 0) cfg.hyp.degrees = 10, cfg.hyp.shear = 5, cfg.hyp.flipud = 0.5;
        if (hyp > 1) cfg.hyp.perspective = 0.0005;
        REQUIRE(yp_aug_train_ws(&cfg, &n) == 0);
        void *ws = malloc(n);
        REQUIRE(ws && a && b);
        memset(ws, 0x5a, n);
        for (uint64_t seed = 0; seed < 24; seed++) {
            int64_t index = (int64_t)(seed % 4), na = -1, nb = -2;
            float ra[8 * 5], rb[8 * 5];
            yp_image oa = {a, 320, 320}, ob = {b, 320, 320};
            yp_rng r;
            yp_err err;
            yp_rng_seed(&r, seed, (uint64_t)index);
            REQUIRE(yp_aug_train_item(&cfg, get, s, index, &r, &oa, ra, &na, ws, n, &err) == 0);
            item_by_pieces(&cfg, s, index, seed, &ob, rb, &nb);
            CHECK(memcmp(a, b, 320 * 320 * 3) == 0);
            CHECK(na == nb && memcmp(ra, rb, (size_t)na * 5 * sizeof(float)) == 0);
        }
        free(ws);
    }
    free(a), free(b), free(s);
}

static void test_train_item_errors(void) {
    source *s = make_source();
    yp_aug_config cfg = {.imgsz = 320, .n_images = 4, .max_rows = 1}; /* the images have 2 rows */
    yp_aug_hyp_default(&cfg.hyp);
    size_t n;
    REQUIRE(yp_aug_train_ws(&cfg, &n) == 0);
    void *ws = malloc(n);
    uint8_t *img = malloc(320 * 320 * 3);
    yp_image out = {img, 320, 320};
    float rows[8];
    int64_t nr;
    yp_rng r;
    yp_err err;
    yp_rng_seed(&r, 1, 0);
    CHECK(yp_aug_train_item(&cfg, get, s, 0, &r, &out, rows, &nr, ws, n, &err) == -1);
    CHECK_STR_HAS(err.msg, "max_rows");
    cfg.max_rows = 2;
    CHECK(yp_aug_train_item(&cfg, get, s, 0, &r, &out, rows, &nr, ws, n - 1, &err) == -1);
    CHECK_STR_HAS(err.msg, "workspace");
    CHECK(yp_aug_train_item(&cfg, get, s, 4, &r, &out, rows, &nr, ws, n, &err) == -1);
    cfg.imgsz = 1 << 20;
    CHECK(yp_aug_train_ws(&cfg, &n) == -1);
    free(ws), free(img), free(s);
}

static void test_rng(void) {
    yp_rng a, b;
    yp_rng_seed(&a, 5, 9), yp_rng_seed(&b, 5, 9);
    for (int i = 0; i < 100; i++) CHECK(yp_rng_next(&a) == yp_rng_next(&b));
    yp_rng_seed(&b, 5, 10);
    CHECK(yp_rng_next(&a) != yp_rng_next(&b));
    int counts[3] = {0};
    double lo = 1, hi = 0;
    for (int i = 0; i < 3000; i++) {
        counts[yp_rng_below(&a, 3)]++;
        double u = yp_rng_unit(&a);
        lo = fmin(lo, u), hi = fmax(hi, u);
    }
    CHECK(counts[0] > 900 && counts[1] > 900 && counts[2] > 900);
    CHECK(lo >= 0 && lo < 0.01 && hi < 1 && hi > 0.99);
}

int main(void) {
    YP_RUN(test_identity_perspective);
    YP_RUN(test_translation_scale);
    YP_RUN(test_box_pushed_out);
    YP_RUN(test_box_candidates);
    YP_RUN(test_mosaic_place);
    YP_RUN(test_mosaic_draw);
    YP_RUN(test_letterbox_geometry);
    YP_RUN(test_letterbox_image_and_labels);
    YP_RUN(test_resize_weights);
    YP_RUN(test_hsv);
    YP_RUN(test_hsv_apply_flip);
    YP_RUN(test_warp_axis_aligned);
    YP_RUN(test_flips);
    YP_RUN(test_single_image_identity);
    YP_RUN(test_train_item_deterministic);
    YP_RUN(test_train_item_pieces);
    YP_RUN(test_train_item_errors);
    YP_RUN(test_rng);
    return yp_test_summary();
}
