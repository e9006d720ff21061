/* augment_resize.c - cv2.resize on uint8 RGB images (INTER_LINEAR, INTER_AREA for downscaling),
 * load_image's size rule, and letterbox (yp_augment.h). The rounding is OpenCV 4.6's, stated here:
 *
 * INTER_LINEAR. For output column dx: fx = (float)((dx + 0.5) * scale - 0.5) with scale =
 * 1 / (dw / sw) in double, sx = floor(fx), fx -= sx; sx < 0 gives sx = 0, fx = 0; sx >= sw - 1
 * gives sx = sw - 1, fx = 0; weights a0 = lrintf((1 - fx) 2048), a1 = lrintf(fx 2048). Rows: the
 * same fy, sy (not clamped) and weights b0, b1, the two rows read at sy, sy + 1 clamped to the
 * image. The horizontal pass is exact: H = a0 S[sx] + a1 S[sx+1] (int32). The vertical pass is
 * OpenCV's uint8 rule (vector loop and scalar tail alike), t = ((H0 >> 4) b0 >> 16) +
 * ((H1 >> 4) b1 >> 16), out = (t + 2) >> 2. An exact 2x downscale in both
 * directions is OpenCV's switch to INTER_AREA: (a + b + c + d + 2) >> 2 of each 2x2 block.
 *
 * INTER_AREA (scale >= 1 both ways). Integer scales kx, ky: the block mean, rounded
 * lrintf(sum * (1.f / (kx ky))) ((sum + 2) >> 2 for 2 x 2). Otherwise OpenCV's resizeArea: each
 * output pixel is a weighted sum over the source cells it covers, weights in float (a cell cut by
 * the pixel's edge weighs its covered fraction, edges within 1e-3 ignored), rows first then
 * columns, accumulated in float in OpenCV's order and rounded with lrintf.
 *
 * Why our own kernels and not Debian's OpenCV (measured by bench/augment_vs_opencv, which loads
 * libopencv 4.6 and finds every path here bit for bit equal to it): OpenCV is 2-6x faster on one
 * core, but it is a C++ library whose C API is deprecated, and its output depends on the CPU it
 * dispatches to (its HSV->RGB differs between AVX2 and older machines), while a loader must give
 * the same bytes for the same seed everywhere. These are plain loops the compiler vectorises;
 * INTER_LINEAR also has an AVX2 path (the same integers) and the exact 2x its own loop. */
#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "augment_avx2.h"
#include "yp_augment.h"
#include "yp_host_mem.h"

#define COEF_SCALE 2048 /* INTER_RESIZE_COEF_SCALE: 11 bits */

int yp_image_bytes(int w, int h, size_t *bytes) {
    size_t n;
    if (w < 1 || h < 1 || __builtin_mul_overflow((size_t)w, (size_t)h, &n) || __builtin_mul_overflow(n, 3, &n))
        return -1;
    *bytes = n;
    return 0;
}

/* Adds n items of size sz to *total, each block rounded up to 16 bytes. Returns 0 or -1. */
static int ws_add(size_t *total, size_t n, size_t sz) {
    size_t b;
    if (__builtin_mul_overflow(n, sz, &b) || __builtin_add_overflow(b, (size_t)15, &b)) return -1;
    b &= ~(size_t)15;
    return __builtin_add_overflow(*total, b, total) ? -1 : 0;
}

/* Takes the next n*sz bytes of the workspace cursor. */
static void *ws_take(uint8_t **cur, size_t n, size_t sz) {
    void *p = *cur;
    *cur += (n * sz + 15) & ~(size_t)15;
    return p;
}

/* cv::resize's "fast area" test: scale within DBL_EPSILON of its rounded integer. */
static int integer_scale(double scale, int *k) {
    double r = nearbyint(scale);
    *k = 0;
    if (r > INT_MAX) return 0;
    *k = (int)r;
    return fabs(scale - r) < DBL_EPSILON;
}

typedef enum { K_COPY, K_LINEAR, K_AREA_FAST, K_AREA } kind;

/* Which of OpenCV's paths resizes sw x sh to dw x dh with interp; kx, ky the integer scales. */
static kind choose(int sw, int sh, int dw, int dh, yp_interp interp, int *kx, int *ky) {
    if (sw == dw && sh == dh) return K_COPY;
    double scale_x = 1.0 / ((double)dw / sw), scale_y = 1.0 / ((double)dh / sh);
    int fast = integer_scale(scale_x, kx) & integer_scale(scale_y, ky);
    if (interp == YP_INTER_LINEAR && fast && *kx == 2 && *ky == 2) return K_AREA_FAST;
    if (interp == YP_INTER_LINEAR) return K_LINEAR;
    return fast ? K_AREA_FAST : K_AREA;
}

int yp_resize_ws(int sw, int sh, int dw, int dh, yp_interp interp, size_t *bytes) {
    size_t n = 0, row;
    int kx, ky;
    if (yp_image_bytes(sw, sh, &row) || yp_image_bytes(dw, dh, &row)) return -1;
    if (interp == YP_INTER_AREA && (dw > sw || dh > sh)) return -1;
    kind k = choose(sw, sh, dw, dh, interp, &kx, &ky);
    size_t dwc = (size_t)dw * 3;
    if (k == K_LINEAR) { /* the planner's figure (the augmentation workspace is sized by it); taken in its order */
        int64_t lin = yp_host_resize_linear_ws(dw, dh);
        if (lin < 0 || (uint64_t)lin > SIZE_MAX) return -1;
        n = (size_t)lin;
    }
    if (k == K_AREA && (ws_add(&n, 2 * (size_t)sw + 2, 3 * sizeof(int)) ||
                        ws_add(&n, 2 * (size_t)sh + 2, 3 * sizeof(int)) || ws_add(&n, dwc, 2 * sizeof(float))))
        return -1;
    *bytes = n;
    return 0;
}

/* ---- INTER_LINEAR ---- */

/* Source offsets and weights along one axis (clamp: the x rule; else the y rule, unclamped). */
static void linear_tab(int s, int d, int clamp, int *i0, int *i1, int *w) {
    double scale = 1.0 / ((double)d / s);
    for (int k = 0; k < d; k++) {
        float f = (float)((k + 0.5) * scale - 0.5);
        int i = (int)floorf(f);
        f -= (float)i;
        if (clamp && i < 0) i = 0, f = 0.f;
        if (clamp && i >= s - 1) i = s - 1, f = 0.f;
        i0[k] = i;
        i1[k] = i + 1;
        w[2 * k] = (int)lrintf((1.f - f) * COEF_SCALE);
        w[2 * k + 1] = (int)lrintf(f * COEF_SCALE);
    }
}

static int clamp_row(int y, int h) { return y < 0 ? 0 : y >= h ? h - 1 : y; }

/* Horizontal pass of source row S into H (dw*3 int32). */
static void linear_row(const uint8_t *S, int sw, int dw, const int *x0, const int *x1, const int *a, int32_t *H) {
    for (int dx = 0; dx < dw; dx++) {
        const uint8_t *p = S + 3 * x0[dx], *q = S + 3 * (x1[dx] < sw ? x1[dx] : x0[dx]);
        int a0 = a[2 * dx], a1 = a[2 * dx + 1];
        for (int c = 0; c < 3; c++) H[3 * dx + c] = p[c] * a0 + q[c] * a1;
    }
}

static uint8_t sat_u8(int v) { return (uint8_t)(v < 0 ? 0 : v > 255 ? 255 : v); }

/* Vertical pass: OpenCV's rule for uint8 (its vector loops and its scalar tail agree). */
static void linear_col(const int32_t *H0, const int32_t *H1, int b0, int b1, int width, uint8_t *D) {
    for (int x = 0; x < width; x++) {
        int t = (((H0[x] >> 4) * b0) >> 16) + (((H1[x] >> 4) * b1) >> 16);
        D[x] = sat_u8((t + 2) >> 2);
    }
}

/* Makes rows[0] hold the horizontal pass of source row want0 and rows[1] that of want1,
 * reusing what the previous output row computed (have[] says which source rows are held). */
static void linear_rows(const yp_image *src, int dw, const int *x0, const int *x1, const int *a, int want0,
                        int want1, int32_t *rows[2], int have[2]) {
    size_t stride = (size_t)src->w * 3;
    if (have[0] != want0 && have[1] == want0) {
        int32_t *t = rows[0];
        rows[0] = rows[1], rows[1] = t;
        have[1] = have[0], have[0] = want0;
    }
    if (have[0] != want0) linear_row(src->rgb + (size_t)want0 * stride, src->w, dw, x0, x1, a, rows[0]);
    have[0] = want0;
    if (have[1] != want1) linear_row(src->rgb + (size_t)want1 * stride, src->w, dw, x0, x1, a, rows[1]);
    have[1] = want1;
}

#ifdef YP_AUG_AVX2
/* The AVX2 path of resize_linear: the same integers, rows held as three planes (R, G, B: dw
 * int32 each) instead of interleaved. Horizontal: 8 columns a step, two 32-bit gathers at the
 * pixel pair (bytes sx*3 .. sx*3 + 5: r0 g0 b0 r1 and b0 r1 g1 b1), the pairs meeting the weights
 * (a0, a1) in madd; the columns clamped at the right edge (their second pixel would lie past the
 * row) by the plain rule. Vertical: 8 pixels a step by linear_col's rule. */
static YP_AUG_AVX2_FN void linear_row_avx2(const uint8_t *S, int sw, int dw, const int *x0, const int *x1,
                                           const int *a, int32_t *H) {
    int32_t *R = H, *G = H + dw, *B = H + 2 * (size_t)dw;
    int end = dw; /* columns before end have x1 < sw (x1 grows with the column) */
    while (end > 0 && x1[end - 1] >= sw) end--;
    const __m256i lo8 = _mm256_set1_epi32(0xff), hi8 = _mm256_set1_epi32(0xff0000);
    int dx = 0;
    for (; dx + 8 <= end; dx += 8) {
        __m256i off = _mm256_mullo_epi32(_mm256_loadu_si256((const __m256i *)(x0 + dx)), _mm256_set1_epi32(3));
        __m256i A = _mm256_i32gather_epi32((const int *)S, off, 1);
        __m256i Bv = _mm256_i32gather_epi32((const int *)(S + 2), off, 1);
        __m256i w0 = _mm256_loadu_si256((const __m256i *)(a + 2 * dx));
        __m256i w1 = _mm256_loadu_si256((const __m256i *)(a + 2 * dx + 8));
        /* a holds (a0, a1) per column as two ints: to one int16 pair per lane */
        __m256i w = _mm256_permute4x64_epi64(_mm256_packs_epi32(w0, w1), 0xd8);
        __m256i pr = _mm256_or_si256(_mm256_and_si256(A, lo8), _mm256_and_si256(_mm256_srli_epi32(A, 8), hi8));
        __m256i pg = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi32(A, 8), lo8), _mm256_and_si256(Bv, hi8));
        __m256i pb = _mm256_or_si256(_mm256_and_si256(Bv, lo8), _mm256_and_si256(_mm256_srli_epi32(Bv, 8), hi8));
        _mm256_storeu_si256((__m256i *)(R + dx), _mm256_madd_epi16(pr, w));
        _mm256_storeu_si256((__m256i *)(G + dx), _mm256_madd_epi16(pg, w));
        _mm256_storeu_si256((__m256i *)(B + dx), _mm256_madd_epi16(pb, w));
    }
    for (; dx < dw; dx++) {
        const uint8_t *p = S + 3 * x0[dx], *q = S + 3 * (x1[dx] < sw ? x1[dx] : x0[dx]);
        int a0 = a[2 * dx], a1 = a[2 * dx + 1];
        R[dx] = p[0] * a0 + q[0] * a1, G[dx] = p[1] * a0 + q[1] * a1, B[dx] = p[2] * a0 + q[2] * a1;
    }
}

static inline YP_AUG_AVX2_FN __m256i linear_col8(const int32_t *h0, const int32_t *h1, __m256i b0, __m256i b1) {
    __m256i v0 = _mm256_srai_epi32(_mm256_loadu_si256((const __m256i *)h0), 4);
    __m256i v1 = _mm256_srai_epi32(_mm256_loadu_si256((const __m256i *)h1), 4);
    __m256i t0 = _mm256_srai_epi32(_mm256_mullo_epi32(v0, b0), 16);
    __m256i t1 = _mm256_srai_epi32(_mm256_mullo_epi32(v1, b1), 16);
    __m256i t = _mm256_srai_epi32(_mm256_add_epi32(_mm256_add_epi32(t0, t1), _mm256_set1_epi32(2)), 2);
    return _mm256_min_epi32(_mm256_max_epi32(t, _mm256_setzero_si256()), _mm256_set1_epi32(255));
}

static YP_AUG_AVX2_FN void linear_col_avx2(const int32_t *H0, const int32_t *H1, int bw0, int bw1, int dw,
                                           uint8_t *D) {
    __m256i b0 = _mm256_set1_epi32(bw0), b1 = _mm256_set1_epi32(bw1);
    int x = 0;
    for (; x + 8 <= dw; x += 8) {
        __m256i r = linear_col8(H0 + x, H1 + x, b0, b1), g = linear_col8(H0 + dw + x, H1 + dw + x, b0, b1);
        __m256i b = linear_col8(H0 + 2 * (size_t)dw + x, H1 + 2 * (size_t)dw + x, b0, b1);
        yp_aug_store8(D + 3 * (size_t)x, yp_aug_rgb8(r, g, b));
    }
    for (; x < dw; x++)
        for (int c = 0; c < 3; c++) {
            int32_t h0 = H0[(size_t)c * dw + x], h1 = H1[(size_t)c * dw + x];
            int t = (((h0 >> 4) * bw0) >> 16) + (((h1 >> 4) * bw1) >> 16);
            D[3 * (size_t)x + c] = sat_u8((t + 2) >> 2);
        }
}
#endif

static void resize_linear(const yp_image *src, yp_image *dst, uint8_t *ws) {
    int sh = src->h, dw = dst->w, dh = dst->h, width = 3 * dw;
    int *x0 = ws_take(&ws, (size_t)dw, 4 * sizeof(int)), *x1 = x0 + dw, *a = x1 + dw; /* a: 2 dw */
    int *y0 = ws_take(&ws, (size_t)dh, 4 * sizeof(int)), *y1 = y0 + dh, *b = y1 + dh;
    int32_t *block = ws_take(&ws, (size_t)width, 2 * sizeof(int32_t));
    int32_t *rows[2] = {block, block + width};
    int have[2] = {-1, -1};
    linear_tab(src->w, dw, 1, x0, x1, a);
    linear_tab(sh, dh, 0, y0, y1, b);
#ifdef YP_AUG_AVX2
    if (yp_aug_have_avx2()) {
        size_t stride = (size_t)src->w * 3;
        for (int dy = 0; dy < dh; dy++) {
            int r0 = clamp_row(y0[dy], sh), r1 = clamp_row(y1[dy], sh);
            if (have[0] != r0 && have[1] == r0) { /* linear_rows' reuse, with this path's rows */
                int32_t *t = rows[0];
                rows[0] = rows[1], rows[1] = t;
                have[1] = have[0], have[0] = r0;
            }
            if (have[0] != r0) linear_row_avx2(src->rgb + (size_t)r0 * stride, src->w, dw, x0, x1, a, rows[0]);
            have[0] = r0;
            if (have[1] != r1) linear_row_avx2(src->rgb + (size_t)r1 * stride, src->w, dw, x0, x1, a, rows[1]);
            have[1] = r1;
            linear_col_avx2(rows[0], rows[1], b[2 * dy], b[2 * dy + 1], dw, dst->rgb + (size_t)dy * (size_t)width);
        }
        return;
    }
#endif
    for (int dy = 0; dy < dh; dy++) {
        int r0 = clamp_row(y0[dy], sh), r1 = clamp_row(y1[dy], sh);
        linear_rows(src, dw, x0, x1, a, r0, r1, rows, have);
        linear_col(rows[0], rows[1], b[2 * dy], b[2 * dy + 1], width, dst->rgb + (size_t)dy * (size_t)width);
    }
}

/* ---- INTER_AREA ---- */

/* The 2 x 2 means, (a + b + c + d + 2) >> 2: resize_area_fast's most common case (an exact 2x
 * downscale, INTER_LINEAR's too) without its general loops. */
static void resize_area_2x2(const yp_image *src, yp_image *dst) {
    size_t sstride = (size_t)src->w * 3, n = (size_t)dst->w * 3;
    for (int dy = 0; dy < dst->h; dy++) {
        const uint8_t *S0 = src->rgb + (size_t)(2 * dy) * sstride, *S1 = S0 + sstride;
        uint8_t *D = dst->rgb + (size_t)dy * n;
        for (size_t x = 0; x < n; x += 3) {
            const uint8_t *p = S0 + 2 * x, *q = S1 + 2 * x;
            D[x] = (uint8_t)((p[0] + p[3] + q[0] + q[3] + 2) >> 2);
            D[x + 1] = (uint8_t)((p[1] + p[4] + q[1] + q[4] + 2) >> 2);
            D[x + 2] = (uint8_t)((p[2] + p[5] + q[2] + q[5] + 2) >> 2);
        }
    }
}

/* Integer-scale area: the kx x ky block means. */
static void resize_area_fast(const yp_image *src, yp_image *dst, int kx, int ky) {
    if (kx == 2 && ky == 2) {
        resize_area_2x2(src, dst);
        return;
    }
    size_t sstride = (size_t)src->w * 3;
    float inv = 1.f / (float)(kx * ky);
    for (int dy = 0; dy < dst->h; dy++) {
        uint8_t *D = dst->rgb + (size_t)dy * (size_t)dst->w * 3;
        for (int dx = 0; dx < dst->w; dx++)
            for (int c = 0; c < 3; c++) {
                int sum = 0;
                for (int j = 0; j < ky; j++) {
                    const uint8_t *S = src->rgb + (size_t)(dy * ky + j) * sstride + (size_t)(dx * kx) * 3 + c;
                    for (int i = 0; i < kx; i++) sum += S[3 * i];
                }
                D[3 * dx + c] = kx == 2 && ky == 2 ? (uint8_t)((sum + 2) >> 2) : sat_u8((int)lrintf((float)sum * inv));
            }
    }
}

typedef struct {
    int di, si;
    float alpha;
} area_tab;

/* OpenCV's computeResizeAreaTab: the source cells of each output index and their weights. */
static int area_tab_make(int ssize, int dsize, int cn, double scale, area_tab *tab) {
    int k = 0;
    for (int dx = 0; dx < dsize; dx++) {
        double fsx1 = dx * scale, fsx2 = fsx1 + scale;
        double cell = fmin(scale, ssize - fsx1);
        int sx1 = (int)ceil(fsx1), sx2 = (int)floor(fsx2);
        sx2 = sx2 < ssize - 1 ? sx2 : ssize - 1;
        sx1 = sx1 < sx2 ? sx1 : sx2;
        if (sx1 - fsx1 > 1e-3) tab[k++] = (area_tab){dx * cn, (sx1 - 1) * cn, (float)((sx1 - fsx1) / cell)};
        for (int sx = sx1; sx < sx2; sx++) tab[k++] = (area_tab){dx * cn, sx * cn, (float)(1.0 / cell)};
        if (fsx2 - sx2 > 1e-3)
            tab[k++] = (area_tab){dx * cn, sx2 * cn, (float)(fmin(fmin(fsx2 - sx2, 1.), cell) / cell)};
    }
    return k;
}

/* OpenCV's ResizeArea_Invoker over all rows. */
static void resize_area(const yp_image *src, yp_image *dst, uint8_t *ws) {
    int sw = src->w, sh = src->h, width = dst->w * 3;
    area_tab *xtab = ws_take(&ws, 2 * (size_t)sw + 2, sizeof(area_tab));
    area_tab *ytab = ws_take(&ws, 2 * (size_t)sh + 2, sizeof(area_tab));
    float *buf = ws_take(&ws, (size_t)width, 2 * sizeof(float)), *sum = buf + width;
    int nx = area_tab_make(sw, dst->w, 3, 1.0 / ((double)dst->w / sw), xtab);
    int ny = area_tab_make(sh, dst->h, 1, 1.0 / ((double)dst->h / sh), ytab);
    int prev = ytab[0].di;
    for (int x = 0; x < width; x++) sum[x] = 0.f;
    for (int j = 0; j < ny; j++) {
        float beta = ytab[j].alpha;
        const uint8_t *S = src->rgb + (size_t)ytab[j].si * (size_t)sw * 3;
        for (int x = 0; x < width; x++) buf[x] = 0.f;
        for (int k = 0; k < nx; k++)
            for (int c = 0; c < 3; c++)
                buf[xtab[k].di + c] = buf[xtab[k].di + c] + (float)S[xtab[k].si + c] * xtab[k].alpha;
        uint8_t *D = dst->rgb + (size_t)prev * (size_t)width;
        if (ytab[j].di != prev) {
            for (int x = 0; x < width; x++) D[x] = sat_u8((int)lrintf(sum[x])), sum[x] = beta * buf[x];
            prev = ytab[j].di;
        } else {
            for (int x = 0; x < width; x++) sum[x] += beta * buf[x];
        }
    }
    uint8_t *D = dst->rgb + (size_t)prev * (size_t)width;
    for (int x = 0; x < width; x++) D[x] = sat_u8((int)lrintf(sum[x]));
}

int yp_resize(const yp_image *src, yp_image *dst, yp_interp interp, void *ws, size_t ws_bytes) {
    size_t need;
    int kx, ky;
    if (yp_resize_ws(src->w, src->h, dst->w, dst->h, interp, &need) || ws_bytes < need || (need && !ws)) return -1;
    switch (choose(src->w, src->h, dst->w, dst->h, interp, &kx, &ky)) {
    case K_COPY: memcpy(dst->rgb, src->rgb, (size_t)src->w * (size_t)src->h * 3); break;
    case K_LINEAR: resize_linear(src, dst, ws); break;
    case K_AREA_FAST: resize_area_fast(src, dst, kx, ky); break;
    case K_AREA: resize_area(src, dst, ws); break;
    }
    return 0;
}

int yp_aug_load_size(int w0, int h0, int imgsz, int augment, int *w, int *h, yp_interp *interp) {
    if (w0 < 1 || h0 < 1 || imgsz < 1) return -1;
    double r = (double)imgsz / (double)(w0 > h0 ? w0 : h0);
    double fw = ceil(w0 * r), fh = ceil(h0 * r);
    if (fw > INT_MAX || fh > INT_MAX) return -1;
    *interp = augment || r > 1 ? YP_INTER_LINEAR : YP_INTER_AREA;
    *w = r != 1 ? (int)fw : w0;
    *h = r != 1 ? (int)fh : h0;
    return r != 1;
}

/* ---- letterbox ---- */

int yp_letterbox_geometry(int w, int h, const yp_letterbox_opts *o, yp_letterbox_geom *g) {
    if (w < 1 || h < 1 || o->new_w < 1 || o->new_h < 1 || (o->auto_pad && o->stride < 1)) return -1;
    double r = fmin((double)o->new_h / h, (double)o->new_w / w);
    if (!o->scaleup) r = fmin(r, 1.0);
    g->ratio_w = g->ratio_h = r;
    double uw = nearbyint(w * r), uh = nearbyint(h * r); /* Python's round: half to even */
    if (uw < 1 || uh < 1 || uw > INT_MAX || uh > INT_MAX) return -1;
    g->unpad_w = (int)uw, g->unpad_h = (int)uh;
    int pw = o->new_w - g->unpad_w, ph = o->new_h - g->unpad_h;
    if (o->auto_pad) {
        pw = ((pw % o->stride) + o->stride) % o->stride; /* np.mod: the divisor's sign */
        ph = ((ph % o->stride) + o->stride) % o->stride;
    } else if (o->scale_fill) {
        pw = ph = 0;
        g->unpad_w = o->new_w, g->unpad_h = o->new_h;
        g->ratio_w = (double)o->new_w / w, g->ratio_h = (double)o->new_h / h;
    }
    if (pw < 0 || ph < 0) return -1; /* unreachable: r fits the image inside new */
    g->dw = pw / 2.0, g->dh = ph / 2.0;
    g->top = (int)nearbyint(g->dh - 0.1), g->bottom = (int)nearbyint(g->dh + 0.1);
    g->left = (int)nearbyint(g->dw - 0.1), g->right = (int)nearbyint(g->dw + 0.1);
    g->out_w = g->unpad_w + g->left + g->right;
    g->out_h = g->unpad_h + g->top + g->bottom;
    return 0;
}

int yp_letterbox_ws(int w, int h, const yp_letterbox_geom *g, size_t *bytes) {
    size_t n = 0, img;
    if (yp_resize_ws(w, h, g->unpad_w, g->unpad_h, YP_INTER_LINEAR, &n) || yp_image_bytes(g->unpad_w, g->unpad_h, &img))
        return -1;
    if (w == g->unpad_w && h == g->unpad_h) img = 0;
    return __builtin_add_overflow(n, img, bytes) ? -1 : 0;
}

int yp_letterbox(const yp_image *src, const yp_letterbox_geom *g, yp_image *dst, void *ws, size_t ws_bytes) {
    size_t need, img = 0, row = (size_t)g->unpad_w * 3;
    if (yp_letterbox_ws(src->w, src->h, g, &need) || ws_bytes < need || dst->w != g->out_w || dst->h != g->out_h)
        return -1;
    yp_image mid = *src;
    if (src->w != g->unpad_w || src->h != g->unpad_h) {
        yp_image_bytes(g->unpad_w, g->unpad_h, &img);
        mid = (yp_image){(uint8_t *)ws, g->unpad_w, g->unpad_h};
        if (yp_resize(src, &mid, YP_INTER_LINEAR, (uint8_t *)ws + img, ws_bytes - img)) return -1;
    }
    yp_mosaic_fill(dst);
    for (int y = 0; y < g->unpad_h; y++)
        memcpy(dst->rgb + ((size_t)(y + g->top) * (size_t)dst->w + (size_t)g->left) * 3, mid.rgb + (size_t)y * row,
               row);
    return 0;
}

void yp_letterbox_labels(float *rows, int64_t n, int w, int h, const yp_letterbox_geom *g) {
    float fw = (float)(g->ratio_w * w), fh = (float)(g->ratio_h * h), pw = (float)g->dw, ph = (float)g->dh;
    for (int64_t i = 0; i < n; i++) {
        float *r = rows + 5 * i, cx = r[1], cy = r[2], bw = r[3], bh = r[4];
        r[1] = fw * (cx - bw / 2) + pw;
        r[2] = fh * (cy - bh / 2) + ph;
        r[3] = fw * (cx + bw / 2) + pw;
        r[4] = fh * (cy + bh / 2) + ph;
    }
}
