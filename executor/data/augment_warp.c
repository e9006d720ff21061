/* augment_warp.c - YOLOv5's random_perspective (yp_augment.h): the matrix M = T S R P C drawn in
 * its order, cv2.warpAffine / cv2.warpPerspective with linear interpolation and border 114, the
 * boxes through the 4 warped corners, box_candidates. The resampling is OpenCV 4.6's:
 *
 * The forward M is inverted (affine: OpenCV's closed form; perspective: its 3x3 cofactor inverse,
 * which cv::invert uses for 3x3 matrices). Affine: for output (x, y),
 * X = lrint((M1 y + M2) 1024) + 16 + lrint(M0 x 1024), then X >> 5 (likewise Y with M3, M4, M5):
 * source position in 1/32 pixel. Perspective: W = 32 / (M6 x + M7 y + M8) (0 when that is 0),
 * X = lrint((M0 x + M1 y + M2) W), evaluated like OpenCV in blocks of columns (the sum starts at
 * the block's first column, so its rounding matches). Then sx = X >> 5, fx = X & 31 and the
 * bilinear weights (32 - fx)(32 - fy), fx (32 - fy), (32 - fx) fy, fx fy: out =
 * (sum w v + 512) >> 10, a neighbour outside the image counting as 114. (OpenCV's 15-bit table
 * holds 32 times these weights, which rounds to the same value, its (0, 0) entry included.) */
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "augment_avx2.h"
#include "yp_augment.h"
#include "yp_host_mem.h"

#define BORDER 114
#define PI 3.14159265358979323846

/* 3x3 row-major product a b. */
static void matmul3(const double *a, const double *b, double *out) {
    double t[9];
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++) t[3 * i + j] = a[3 * i] * b[j] + a[3 * i + 1] * b[3 + j] + a[3 * i + 2] * b[6 + j];
    memcpy(out, t, sizeof t);
}

static void eye3(double *m) {
    memset(m, 0, 9 * sizeof *m);
    m[0] = m[4] = m[8] = 1;
}

int yp_warp_draw(yp_rng *r, const yp_aug_hyp *h, int in_w, int in_h, int border_x, int border_y, yp_warp *w) {
    double C[9], P[9], R[9], S[9], T[9];
    long ow = (long)in_w + 2L * border_x, oh = (long)in_h + 2L * border_y;
    if (in_w < 1 || in_h < 1 || ow < 1 || oh < 1 || ow > INT_MAX || oh > INT_MAX) return -1;
    w->out_w = (int)ow, w->out_h = (int)oh;
    eye3(C), eye3(P), eye3(R), eye3(S), eye3(T);
    C[2] = -in_w / 2.0, C[5] = -in_h / 2.0;
    P[6] = yp_rng_uniform(r, -h->perspective, h->perspective);
    P[7] = yp_rng_uniform(r, -h->perspective, h->perspective);
    double a = yp_rng_uniform(r, -h->degrees, h->degrees) * PI / 180;
    double s = yp_rng_uniform(r, 1 - h->scale, 1 + h->scale);
    double alpha = cos(a) * s, beta = sin(a) * s; /* cv2.getRotationMatrix2D(centre 0, a, s) */
    R[0] = alpha, R[1] = beta, R[3] = -beta, R[4] = alpha;
    S[1] = tan(yp_rng_uniform(r, -h->shear, h->shear) * PI / 180);
    S[3] = tan(yp_rng_uniform(r, -h->shear, h->shear) * PI / 180);
    T[2] = yp_rng_uniform(r, 0.5 - h->translate, 0.5 + h->translate) * (double)ow;
    T[5] = yp_rng_uniform(r, 0.5 - h->translate, 0.5 + h->translate) * (double)oh;
    matmul3(T, S, w->m), matmul3(w->m, R, w->m), matmul3(w->m, P, w->m), matmul3(w->m, C, w->m);
    w->s = s;
    w->perspective = h->perspective != 0;
    return 0;
}

int yp_warp_changes_image(const yp_warp *w, int border_x, int border_y) {
    static const double id[9] = {1, 0, 0, 0, 1, 0, 0, 0, 1};
    if (border_x || border_y) return 1;
    for (int i = 0; i < 9; i++)
        if (w->m[i] != id[i]) return 1;
    return 0;
}

int yp_warp_ws(const yp_warp *w, size_t *bytes) {
    /* affine: two ints per column (the general loop's deltas, or a column's sx and fx) and two rows
     * of 3 int16 per column (the axis-aligned path's horizontal sums): the planner's figure */
    int64_t n = yp_host_warp_affine_ws(w->out_w);
    if (n < 0 || w->out_h < 1 || (uint64_t)n > SIZE_MAX) return -1;
    *bytes = w->perspective ? 0 : (size_t)n;
    return 0;
}

/* saturate_cast<int>(double): round half to even, clamped (NaN: INT_MIN, as x86's cvRound). */
static int sat_int(double v) {
    if (!(v > INT_MIN)) return INT_MIN;
    if (v >= INT_MAX) return INT_MAX;
    return (int)lrint(v);
}

static int sat_short(int64_t v) { return v < SHRT_MIN ? SHRT_MIN : v > SHRT_MAX ? SHRT_MAX : (int)v; }

/* One output pixel from source position (X, Y) in 1/32 pixel. */
static void sample(const yp_image *src, int64_t X, int64_t Y, uint8_t *out) {
    int fx = (int)((uint64_t)X & 31), fy = (int)((uint64_t)Y & 31);
    int sx = sat_short((X - fx) / 32), sy = sat_short((Y - fy) / 32);
    int w[4] = {(32 - fx) * (32 - fy), fx * (32 - fy), (32 - fx) * fy, fx * fy};
    size_t stride = (size_t)src->w * 3;
    if (sx >= 0 && sy >= 0 && sx < src->w - 1 && sy < src->h - 1) {
        const uint8_t *p = src->rgb + (size_t)sy * stride + (size_t)sx * 3, *q = p + stride;
        for (int c = 0; c < 3; c++)
            out[c] = (uint8_t)((w[0] * p[c] + w[1] * p[3 + c] + w[2] * q[c] + w[3] * q[3 + c] + 512) >> 10);
        return;
    }
    int acc[3] = {512, 512, 512};
    for (int k = 0; k < 4; k++) {
        int x = sx + (k & 1), y = sy + (k >> 1);
        int inside = x >= 0 && y >= 0 && x < src->w && y < src->h;
        const uint8_t *p = inside ? src->rgb + (size_t)y * stride + (size_t)x * 3 : NULL;
        for (int c = 0; c < 3; c++) acc[c] += w[k] * (p ? p[c] : BORDER);
    }
    for (int c = 0; c < 3; c++) out[c] = (uint8_t)(acc[c] >> 10);
}

/* cv2.warpAffine's inverse of the 2x3 forward map m into iM. */
static void affine_inverse(const double *m, double *iM) {
    double D = m[0] * m[4] - m[1] * m[3];
    D = D != 0 ? 1. / D : 0;
    iM[0] = m[4] * D, iM[1] = -m[1] * D, iM[3] = -m[3] * D, iM[4] = m[0] * D;
    iM[2] = -iM[0] * m[2] - iM[1] * m[5];
    iM[5] = -iM[3] * m[2] - iM[4] * m[5];
}

/* The pixels [x0, x1) of output row D on source row sy (fraction fy) by sample(), or 114 where
 * all four neighbours lie outside (the weights sum to 1024). */
static void edge_pixels(const yp_image *src, uint8_t *D, const int *col, const int *frac, int sy, int fy, int x0,
                        int x1) {
    int row_out = sy < -1 || sy > src->h - 1; /* both y neighbours outside */
    for (int x = x0; x < x1; x++) {
        if (row_out || col[x] < -1 || col[x] > src->w - 1) memset(D + 3 * (size_t)x, BORDER, 3);
        else sample(src, (int64_t)col[x] * 32 + frac[x], (int64_t)sy * 32 + fy, D + 3 * (size_t)x);
    }
}

#ifdef YP_AUG_AVX2
#define AVX2 YP_AUG_AVX2_FN

/* Output pixels [x0, x1) of row D, whose four neighbours all lie inside, from V: the vertical
 * sums (32 - fy) v(sy, c) + fy v(sy + 1, c) of the source bytes from column base on. Per pixel
 * (32 - fx) V(sx) + fx V(sx + 1) per channel: the same integer as the two-pass sum the other way
 * round. 8 pixels a step: three 32-bit gathers fetch V's 6 values, pairs (V(sx), V(sx + 1)) meet
 * the weights (32 - fx, fx) in madd. */
static AVX2 void hpass_avx2(const int16_t *V, int base, const int *col, const int *frac, int x0, int x1,
                            uint8_t *D) {
    const char *vb = (const char *)V;
    int x = x0;
    for (; x + 8 <= x1; x += 8) {
        __m256i c = _mm256_loadu_si256((const __m256i *)(col + x)), f = _mm256_loadu_si256((const __m256i *)(frac + x));
        __m256i off = _mm256_mullo_epi32(_mm256_sub_epi32(c, _mm256_set1_epi32(base)), _mm256_set1_epi32(6));
        __m256i A = _mm256_i32gather_epi32((const int *)vb, off, 1);       /* r0 g0 */
        __m256i B = _mm256_i32gather_epi32((const int *)(vb + 4), off, 1); /* b0 r1 */
        __m256i C = _mm256_i32gather_epi32((const int *)(vb + 8), off, 1); /* g1 b1 */
        __m256i w = _mm256_or_si256(_mm256_sub_epi32(_mm256_set1_epi32(32), f), _mm256_slli_epi32(f, 16));
        __m256i pr = _mm256_blend_epi16(A, B, 0xAA), pb = _mm256_blend_epi16(B, C, 0xAA);
        __m256i pg = _mm256_or_si256(_mm256_srli_epi32(A, 16), _mm256_slli_epi32(C, 16));
        const __m256i half = _mm256_set1_epi32(512);
        __m256i r = _mm256_srli_epi32(_mm256_add_epi32(_mm256_madd_epi16(pr, w), half), 10);
        __m256i g = _mm256_srli_epi32(_mm256_add_epi32(_mm256_madd_epi16(pg, w), half), 10);
        __m256i b = _mm256_srli_epi32(_mm256_add_epi32(_mm256_madd_epi16(pb, w), half), 10);
        yp_aug_store8(D + 3 * (size_t)x, yp_aug_rgb8(r, g, b));
    }
    for (; x < x1; x++) {
        const int16_t *v = V + 3 * (size_t)(col[x] - base);
        int fx = frac[x], gx = 32 - fx;
        for (int k = 0; k < 3; k++) D[3 * (size_t)x + k] = (uint8_t)((gx * v[k] + fx * v[3 + k] + 512) >> 10);
    }
}

/* The inside run [a, b) of output row D (source row sy, fraction fy; col non-decreasing): in
 * pieces whose source columns' vertical sums fit V's v_cap entries. */
static AVX2 void inside_run_avx2(const yp_image *src, uint8_t *D, const int *col, const int *frac, int sy, int fy,
                                 int a, int b, int16_t *V, size_t v_cap) {
    size_t stride = (size_t)src->w * 3;
    int gy = 32 - fy;
    for (int x0 = a; x0 < b;) {
        int base = col[x0], x1 = x0 + 1;
        while (x1 < b && 3 * (size_t)(col[x1] + 2 - base) <= v_cap) x1++;
        size_t n = 3 * (size_t)(col[x1 - 1] + 2 - base);
        const uint8_t *p0 = src->rgb + (size_t)sy * stride + 3 * (size_t)base, *p1 = p0 + stride;
        for (size_t i = 0; i < n; i++) V[i] = (int16_t)(gy * p0[i] + fy * p1[i]);
        hpass_avx2(V, base, col, frac, x0, x1, D);
        x0 = x1;
    }
}
#endif

/* warp_affine when the inverse map has no rotation or shear (M1 = M3 = 0, random_perspective
 * with degrees and shear 0): X0 is then the same for every row and Y the same along a row, so each
 * column's source x and weight is computed once (sx in col[], fx in frac[]) and each row's once.
 * The columns whose two x neighbours lie inside form one run [lo, hi) (sx grows monotonically with
 * x); inside it, on rows whose two y neighbours lie inside, the four-tap sum is taken in two
 * passes, exact in integers: sum w v = (32 - fy) H(sy) + fy H(sy + 1) with
 * H(r) = (32 - fx) v(r, sx) + fx v(r, sx + 1), each source row's H computed once and kept for the
 * next output row (rows sy and sy + 1 go to buffers sy & 1 and its other); with AVX2 (and sx
 * non-decreasing) the other way round instead, vertical sums first (inside_run_avx2). The other
 * pixels take sample(), a row with both y neighbours outside a memset. The same integers as the
 * general loop, so the same bytes. */
static void warp_axis_aligned(const yp_image *src, yp_image *dst, const double *M, int *col, int *frac, int16_t *hbuf) {
    int64_t X0 = (int64_t)sat_int(M[2] * 1024) + 16;
    size_t stride = (size_t)src->w * 3, n3 = (size_t)dst->w * 3;
    int lo = dst->w, hi = 0;
    for (int x = 0; x < dst->w; x++) {
        int64_t X = X0 + sat_int(M[0] * x * 1024);
        X = (X - (int64_t)((uint64_t)X & 31)) / 32;
        frac[x] = (int)((uint64_t)X & 31), col[x] = sat_short((X - frac[x]) / 32);
        if (col[x] >= 0 && col[x] < src->w - 1) lo = x < lo ? x : lo, hi = x + 1;
    }
#ifdef YP_AUG_AVX2
    int vertical_first = yp_aug_have_avx2() && M[0] >= 0;
#endif
    int16_t *H[2] = {hbuf, hbuf + n3};
    int have[2] = {-1, -1}; /* the source row each buffer holds */
    for (int y = 0; y < dst->h; y++) {
        int64_t Y = (int64_t)sat_int((M[4] * y + M[5]) * 1024) + 16;
        Y = (Y - (int64_t)((uint64_t)Y & 31)) / 32;
        int fy = (int)((uint64_t)Y & 31), sy = sat_short((Y - fy) / 32);
        uint8_t *D = dst->rgb + (size_t)y * n3;
        if (sy < -1 || sy > src->h - 1) { /* both y neighbours outside: all 114 */
            memset(D, BORDER, n3);
            continue;
        }
        int inside = sy >= 0 && sy < src->h - 1, a = inside ? lo : dst->w, b = inside ? hi : dst->w;
        edge_pixels(src, D, col, frac, sy, fy, 0, a < b ? a : dst->w);
        if (a >= b) continue;
        edge_pixels(src, D, col, frac, sy, fy, b, dst->w);
#ifdef YP_AUG_AVX2
        if (vertical_first) {
            inside_run_avx2(src, D, col, frac, sy, fy, a, b, hbuf, 2 * n3);
            continue;
        }
#endif
        for (int k = 0; k < 2; k++) {
            int r = sy + k, slot = r & 1;
            if (have[slot] == r) continue;
            const uint8_t *p = src->rgb + (size_t)r * stride;
            int16_t *h = H[slot];
            for (int x = a; x < b; x++) {
                const uint8_t *q = p + (size_t)col[x] * 3;
                int fx = frac[x], gx = 32 - fx;
                h[3 * x] = (int16_t)(gx * q[0] + fx * q[3]);
                h[3 * x + 1] = (int16_t)(gx * q[1] + fx * q[4]);
                h[3 * x + 2] = (int16_t)(gx * q[2] + fx * q[5]);
            }
            have[slot] = r;
        }
        const int16_t *h0 = H[sy & 1], *h1 = H[(sy + 1) & 1];
        int gy = 32 - fy;
        for (size_t i = 3 * (size_t)a; i < 3 * (size_t)b; i++) D[i] = (uint8_t)((gy * h0[i] + fy * h1[i] + 512) >> 10);
    }
}

static void warp_affine(const yp_image *src, yp_image *dst, const double *m, int *delta) {
    double M[6];
    affine_inverse(m, M);
    int *adelta = delta, *bdelta = delta + dst->w;
    if (M[1] == 0 && M[3] == 0) {
        warp_axis_aligned(src, dst, M, adelta, bdelta, (int16_t *)(bdelta + dst->w));
        return;
    }
    for (int x = 0; x < dst->w; x++) adelta[x] = sat_int(M[0] * x * 1024), bdelta[x] = sat_int(M[3] * x * 1024);
    for (int y = 0; y < dst->h; y++) {
        int64_t X0 = (int64_t)sat_int((M[1] * y + M[2]) * 1024) + 16,
                Y0 = (int64_t)sat_int((M[4] * y + M[5]) * 1024) + 16;
        uint8_t *D = dst->rgb + (size_t)y * (size_t)dst->w * 3;
        for (int x = 0; x < dst->w; x++) {
            int64_t X = X0 + adelta[x], Y = Y0 + bdelta[x];
            X = (X - (int64_t)((uint64_t)X & 31)) / 32, Y = (Y - (int64_t)((uint64_t)Y & 31)) / 32; /* >> 5 */
            sample(src, X, Y, D + 3 * (size_t)x);
        }
    }
}

void yp_warp_source_rect(const yp_warp *w, int src_w, int src_h, int rect[4]) {
    rect[0] = rect[1] = 0, rect[2] = src_w, rect[3] = src_h;
    if (w->perspective || w->out_w < 1 || w->out_h < 1) return;
    double M[6];
    affine_inverse(w->m, M);
    double xe = w->out_w - 1, ye = w->out_h - 1, lim = (double)(1 << 30) / 1024; /* sat_int's terms far from INT_MAX */
    for (int r = 0; r < 2; r++) {
        const double *m = M + 3 * r;
        double col = fabs(m[0]) * xe, row0 = fabs(m[2]), row1 = fabs(m[1] * ye + m[2]);
        if (!(col < lim && row0 < lim && row1 < lim)) return; /* NaN too */
    }
    for (int r = 0; r < 2; r++) {
        const double *m = M + 3 * r;
        double c[4] = {m[2], m[0] * xe + m[2], m[1] * ye + m[2], m[0] * xe + m[1] * ye + m[2]}, lo = c[0], hi = c[0];
        for (int k = 1; k < 4; k++) lo = fmin(lo, c[k]), hi = fmax(hi, c[k]);
        double n = r ? src_h : src_w;
        lo = floor(lo) - 2, hi = floor(hi) + 3; /* the neighbour at +1, the 1/32 rounding, a margin */
        rect[r] = (int)fmax(0, fmin(n, lo)), rect[2 + r] = (int)fmax(0, fmin(n, hi));
    }
}

/* cv::invert's 3x3 rule (cofactors over det3); a singular matrix inverts to zeros. */
static void inverse3(const double *m, double *t) {
    double d =
        m[0] * (m[4] * m[8] - m[5] * m[7]) - m[1] * (m[3] * m[8] - m[5] * m[6]) + m[2] * (m[3] * m[7] - m[4] * m[6]);
    if (d == 0) {
        memset(t, 0, 9 * sizeof *t);
        return;
    }
    d = 1. / d;
    t[0] = (m[4] * m[8] - m[5] * m[7]) * d, t[1] = (m[2] * m[7] - m[1] * m[8]) * d,
    t[2] = (m[1] * m[5] - m[2] * m[4]) * d;
    t[3] = (m[5] * m[6] - m[3] * m[8]) * d, t[4] = (m[0] * m[8] - m[2] * m[6]) * d,
    t[5] = (m[2] * m[3] - m[0] * m[5]) * d;
    t[6] = (m[3] * m[7] - m[4] * m[6]) * d, t[7] = (m[1] * m[6] - m[0] * m[7]) * d,
    t[8] = (m[0] * m[4] - m[1] * m[3]) * d;
}

static double clamp_int_range(double v) { return fmax((double)INT_MIN, fmin((double)INT_MAX, v)); }

static void warp_perspective(const yp_image *src, yp_image *dst, const double *m) {
    double M[9];
    inverse3(m, M);
    int bh = dst->h < 32 ? dst->h : 32, bw = 4096 / bh < dst->w ? 4096 / bh : dst->w; /* OpenCV's blocks */
    for (int y = 0; y < dst->h; y++) {
        uint8_t *D = dst->rgb + (size_t)y * (size_t)dst->w * 3;
        for (int xb = 0; xb < dst->w; xb += bw) {
            double X0 = M[0] * xb + M[1] * y + M[2], Y0 = M[3] * xb + M[4] * y + M[5], W0 = M[6] * xb + M[7] * y + M[8];
            for (int x1 = 0; x1 < bw && xb + x1 < dst->w; x1++) {
                double W = W0 + M[6] * x1;
                W = W != 0 ? 32 / W : 0;
                int X = sat_int(clamp_int_range((X0 + M[0] * x1) * W)),
                    Y = sat_int(clamp_int_range((Y0 + M[3] * x1) * W));
                sample(src, X, Y, D + 3 * (size_t)(xb + x1));
            }
        }
    }
}

int yp_warp_image(const yp_image *src, yp_image *dst, const yp_warp *w, void *ws, size_t ws_bytes) {
    size_t need;
    if (yp_warp_ws(w, &need) || ws_bytes < need || dst->w != w->out_w || dst->h != w->out_h || src->w < 1 || src->h < 1)
        return -1;
    if (w->perspective) warp_perspective(src, dst, w->m);
    else warp_affine(src, dst, w->m, ws);
    return 0;
}

int yp_box_candidate(const float box1[4], const double box2[4]) {
    const double eps = 1e-16;
    float w1 = box1[2] - box1[0], h1 = box1[3] - box1[1];
    double w2 = box2[2] - box2[0], h2 = box2[3] - box2[1];
    double ar = fmax(w2 / (h2 + eps), h2 / (w2 + eps));
    return w2 > 2 && h2 > 2 && w2 * h2 / (double)(w1 * h1 + (float)eps) > 0.1 && ar < 100;
}

/* One corner through M (divided by its w when perspective). */
static void corner(const yp_warp *w, double x, double y, double *ox, double *oy) {
    const double *m = w->m;
    double X = m[0] * x + m[1] * y + m[2], Y = m[3] * x + m[4] * y + m[5];
    if (w->perspective) {
        double W = m[6] * x + m[7] * y + m[8];
        X /= W, Y /= W;
    }
    *ox = X, *oy = Y;
}

int64_t yp_warp_labels(float *rows, int64_t n, const yp_warp *w) {
    int64_t kept = 0;
    float s = (float)w->s;
    for (int64_t i = 0; i < n; i++) {
        const float *r = rows + 5 * i;
        double xs[4], ys[4], box[4];
        corner(w, r[1], r[2], &xs[0], &ys[0]), corner(w, r[3], r[4], &xs[1], &ys[1]);
        corner(w, r[1], r[4], &xs[2], &ys[2]), corner(w, r[3], r[2], &xs[3], &ys[3]);
        box[0] = box[2] = xs[0], box[1] = box[3] = ys[0];
        for (int k = 1; k < 4; k++) {
            box[0] = fmin(box[0], xs[k]), box[2] = fmax(box[2], xs[k]);
            box[1] = fmin(box[1], ys[k]), box[3] = fmax(box[3], ys[k]);
        }
        for (int k = 0; k < 4; k++) { /* clip to the output (NaN from a perspective w of 0 stays NaN) */
            double hi = k % 2 ? w->out_h : w->out_w;
            box[k] = box[k] < 0 ? 0 : box[k] > hi ? hi : box[k];
        }
        float before[4] = {r[1] * s, r[2] * s, r[3] * s, r[4] * s};
        if (!yp_box_candidate(before, box)) continue;
        float *o = rows + 5 * kept++;
        o[0] = r[0];
        for (int k = 0; k < 4; k++) o[1 + k] = (float)box[k];
    }
    return kept;
}
