/* augment_color.c - YOLOv5's augment_hsv, the flips and the final xyxy -> xywhn (yp_augment.h).
 * Colour conversions are OpenCV 4.6's uint8 ones (COLOR_RGB2HSV, COLOR_HSV2RGB, H range 180):
 *   to HSV: v = max, diff = v - min, s = (diff * sdiv[v] + 2^11) >> 12 with
 *     sdiv[i] = lrint((255 << 12) / i); h = g - b when v is r, b - r + 2 diff when v is g, else
 *     r - g + 4 diff, then h = (h * hdiv[diff] + 2^11) >> 12 (arithmetic shift) with
 *     hdiv[i] = lrint((180 << 12) / (6 i)), plus 180 when negative (tables are 0 at index 0);
 *   to RGB, in float: h * (6 / 180) folded into [0, 6), sector = floor, f = h - sector,
 *     tab = {v, v (1 - s), v fma(-s, f, 1), v fma(-s, 1 - f, 1)} with s, v scaled by 1/255,
 *     picked per sector, each * 255 truncated; but the last (w mod 32) pixels of a row take
 *     v (1 - s (1 - f)) unfused for the last entry and round * 255 half to even. That is what
 *     OpenCV 4.6 computes on an AVX2 machine (Debian's build dispatches to AVX2: a vector loop
 *     of 32 pixels a step that truncates, and a scalar tail that rounds, each with its compiler's
 *     fusions); without AVX2 OpenCV's own output differs (16-pixel steps, other fusions).
 *     bench/augment_vs_opencv checks every H, S, V against the library.
 * The look-up tables are augment_hsv's: hue (x g0) mod 180, saturation and value
 * clip(x g, 0, 255), all in double, truncated to uint8. The other float steps must not be
 * contracted into FMAs; C11 mode (the project's) turns contraction off in GCC. */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "augment_avx2.h"
#include "yp_augment.h"

#define HSV_BLOCK 32 /* pixels per step of OpenCV's AVX2 HSV2RGB loop (4 x 8 floats) */

typedef struct {
    int sdiv[256], hdiv[256];
} hsv_tables;

static void tables_init(hsv_tables *t) {
    t->sdiv[0] = t->hdiv[0] = 0;
    for (int i = 1; i < 256; i++) {
        t->sdiv[i] = (int)lrint((255 << 12) / (1. * i));
        t->hdiv[i] = (int)lrint((180 << 12) / (6. * i));
    }
}

/* Floor of v / 4096 (an arithmetic shift by 12, written portably). */
static int shr12(int v) { return v >= 0 ? v >> 12 : -((-v + 4095) >> 12); }

static void to_hsv(const hsv_tables *t, const uint8_t *p, uint8_t *o) {
    int r = p[0], g = p[1], b = p[2];
    int v = b > g ? b : g, vmin = b < g ? b : g;
    v = v > r ? v : r, vmin = vmin < r ? vmin : r;
    int diff = v - vmin, h;
    int s = (diff * t->sdiv[v] + (1 << 11)) >> 12;
    if (v == r) h = g - b;
    else if (v == g) h = b - r + 2 * diff;
    else h = r - g + 4 * diff;
    h = shr12(h * t->hdiv[diff] + (1 << 11));
    h += h < 0 ? 180 : 0;
    o[0] = (uint8_t)(h > 255 ? 255 : h), o[1] = (uint8_t)s, o[2] = (uint8_t)v;
}

static uint8_t round_u8(float x) {
    long v = lrintf(x);
    return (uint8_t)(v < 0 ? 0 : v > 255 ? 255 : v);
}

static uint8_t trunc_u8(float x) { return (uint8_t)(x < 0 ? 0 : x > 255 ? 255 : x); }

/* One pixel HSV -> RGB; vec: OpenCV's vector rule (fused, truncated), else its scalar tail
 * (the last entry unfused, rounded). */
static void to_rgb(const uint8_t *p, uint8_t *o, int vec) {
    static const int sector_data[6][3] = {{1, 3, 0}, {1, 0, 2}, {3, 0, 1}, {0, 2, 1}, {0, 1, 3}, {2, 1, 0}};
    float h = p[0], s = p[1] * (1.f / 255.f), v = p[2] * (1.f / 255.f), r, g, b;
    if (s == 0) {
        r = g = b = v;
    } else {
        h *= 6.0f / 180;
        while (h >= 6) h -= 6;
        int sector = (int)floorf(h);
        h -= (float)sector;
        if ((unsigned)sector >= 6u) sector = 0, h = 0.f;
        float t2 = fmaf(-s, h, 1.f), t3 = vec ? fmaf(-s, 1.f - h, 1.f) : 1.f - s * (1.f - h);
        float tab[4] = {v, v * (1.f - s), v * t2, v * t3};
        b = tab[sector_data[sector][0]], g = tab[sector_data[sector][1]], r = tab[sector_data[sector][2]];
    }
    uint8_t (*cast)(float) = vec ? trunc_u8 : round_u8;
    o[0] = cast(r * 255.f), o[1] = cast(g * 255.f), o[2] = cast(b * 255.f);
}

void yp_rgb_to_hsv_row(const uint8_t *rgb, uint8_t *hsv, int n) {
    hsv_tables t;
    tables_init(&t);
    for (int i = 0; i < n; i++) to_hsv(&t, rgb + 3 * i, hsv + 3 * i);
}

void yp_hsv_to_rgb_row(const uint8_t *hsv, uint8_t *rgb, int n) {
    int vec = n / HSV_BLOCK * HSV_BLOCK;
    for (int i = 0; i < n; i++) to_rgb(hsv + 3 * i, rgb + 3 * i, i < vec);
}

int yp_hsv_draw(yp_rng *r, const yp_aug_hyp *h, double gain[3]) {
    if (h->hsv_h == 0 && h->hsv_s == 0 && h->hsv_v == 0) return 0;
    const double g[3] = {h->hsv_h, h->hsv_s, h->hsv_v};
    for (int i = 0; i < 3; i++) gain[i] = yp_rng_uniform(r, -1, 1) * g[i] + 1;
    return 1;
}

static uint8_t clip_u8(double x) { return (uint8_t)(x < 0 ? 0 : x > 255 ? 255 : x); }

/* yp_hsv_apply's per-call tables: the RGB2HSV divisors, augment_hsv's three look-up tables, and
 * for HSV2RGB every H's sector and fraction and every S's and V's float (to_rgb's own float
 * operations, evaluated once per value instead of once per pixel). */
typedef struct {
    hsv_tables div;
    uint8_t lut[3][256];
    uint8_t sector[256];
    float frac[256], sf[256], vf[256];
    /* the vector path's gather tables (32-bit entries): sv[v] = sdiv[v] | lut[2][v] << 24 (one gather
     * for both of v's look-ups; sdiv < 2^20), lh[h] = lut[0][h], ls[s] = lut[1][s] */
    uint32_t sv[256];
    int lh[256], ls[256];
} hsv_apply_tables;

static void apply_tables_init(hsv_apply_tables *t, const double gain[3]) {
    tables_init(&t->div);
    for (int x = 0; x < 256; x++) {
        double hue = fmod(x * gain[0], 180); /* numpy's mod takes the divisor's sign */
        t->lut[0][x] = clip_u8(hue < 0 ? hue + 180 : hue);
        t->lut[1][x] = clip_u8(x * gain[1]);
        t->lut[2][x] = clip_u8(x * gain[2]);
        float h = (float)x * (6.0f / 180);
        while (h >= 6) h -= 6;
        int sector = (int)floorf(h);
        h -= (float)sector;
        if ((unsigned)sector >= 6u) sector = 0, h = 0.f;
        t->sector[x] = (uint8_t)sector, t->frac[x] = h;
        t->sf[x] = (float)x * (1.f / 255.f), t->vf[x] = (float)x * (1.f / 255.f);
    }
    for (int x = 0; x < 256; x++) {
        t->sv[x] = (uint32_t)t->div.sdiv[x] | (uint32_t)t->lut[2][x] << 24;
        t->lh[x] = t->lut[0][x], t->ls[x] = t->lut[1][x];
    }
}

/* to_hsv without branches (the selections become conditional moves: noisy images defeat the
 * branch predictor): the same integers. */
static inline void to_hsv_flat(const hsv_tables *t, const uint8_t *p, int *ho, int *so, int *vo) {
    int r = p[0], g = p[1], b = p[2];
    int v = b > g ? b : g, vmin = b < g ? b : g;
    v = v > r ? v : r, vmin = vmin < r ? vmin : r;
    int diff = v - vmin;
    int hr = g - b, hg = b - r + 2 * diff, hb = r - g + 4 * diff;
    int h = v == r ? hr : v == g ? hg : hb;
    h = h * t->hdiv[diff] + (1 << 11);
    h = h >= 0 ? h / 4096 : -((-h + 4095) / 4096); /* shr12 */
    h += h < 0 ? 180 : 0;
    *ho = h > 255 ? 255 : h, *so = (diff * t->sdiv[v] + (1 << 11)) >> 12, *vo = v;
}

/* One pixel through augment_hsv: to HSV, the tables, back to RGB by the vector (vec) or tail
 * rule of to_rgb. Branch-free where to_rgb branches: with s == 0 every entry of tab is v
 * (fmaf(-0, f, 1) is exactly 1), which is to_rgb's grey case. Inlined with vec a constant. */
static inline __attribute__((always_inline)) void hsv_pixel(const hsv_apply_tables *t, const uint8_t *p, uint8_t *o,
                                                             const int vec) {
    static const uint8_t pick[6][3] = {{1, 3, 0}, {1, 0, 2}, {3, 0, 1}, {0, 2, 1}, {0, 1, 3}, {2, 1, 0}};
    int hh, ss, vv;
    to_hsv_flat(&t->div, p, &hh, &ss, &vv);
    int h = t->lut[0][hh];
    float s = t->sf[t->lut[1][ss]], v = t->vf[t->lut[2][vv]], f = t->frac[h];
    float t3 = vec ? fmaf(-s, 1.f - f, 1.f) : 1.f - s * (1.f - f);
    float tab[4] = {v, v * (1.f - s), v * fmaf(-s, f, 1.f), v * t3};
    const uint8_t *k = pick[t->sector[h]];
    float b = tab[k[0]], g = tab[k[1]], r = tab[k[2]];
    if (vec) o[0] = trunc_u8(r * 255.f), o[1] = trunc_u8(g * 255.f), o[2] = trunc_u8(b * 255.f);
    else o[0] = round_u8(r * 255.f), o[1] = round_u8(g * 255.f), o[2] = round_u8(b * 255.f);
}

static void hsv_pixel_at(const hsv_apply_tables *t, const uint8_t *p, uint8_t *o, int vec) {
    if (vec) hsv_pixel(t, p, o, 1);
    else hsv_pixel(t, p, o, 0);
}

#ifdef YP_AUG_AVX2
/* The vector path: hsv_pixel's vector rule on 8 pixels at a time with AVX2 and FMA (selected at
 * run time, so a baseline build has it too): the same integer steps (the divisor and table
 * look-ups as gathers, the arithmetic shift as floor), the same float operations in the same order
 * (fmaf(-s, x, 1) is fnmadd(s, x, 1): negation is exact), the sector's picks as blends. */
#define AVX2 YP_AUG_AVX2_FN
#define load8 yp_aug_load8
#define store8 yp_aug_store8

static inline AVX2 __m256 pick6(__m256 a0, __m256 a1, __m256 a2, __m256 a3, __m256 a4, __m256 a5, const __m256 *m) {
    __m256 r = a0;
    r = _mm256_blendv_ps(r, a1, m[1]), r = _mm256_blendv_ps(r, a2, m[2]), r = _mm256_blendv_ps(r, a3, m[3]);
    return _mm256_blendv_ps(_mm256_blendv_ps(r, a4, m[4]), a5, m[5]);
}

static inline AVX2 __m256i to_u8(__m256 x) {
    x = _mm256_mul_ps(x, _mm256_set1_ps(255.f));
    return _mm256_cvttps_epi32(_mm256_min_ps(_mm256_max_ps(x, _mm256_setzero_ps()), _mm256_set1_ps(255.f)));
}

/* hsv_pixel(t, ., ., 1) on each lane. */
static inline AVX2 __m256i hsv8(const hsv_apply_tables *t, __m256i x) {
    const __m256i b8 = _mm256_set1_epi32(255), half = _mm256_set1_epi32(1 << 11);
    __m256i r = _mm256_and_si256(x, b8), g = _mm256_and_si256(_mm256_srli_epi32(x, 8), b8),
            b = _mm256_srli_epi32(x, 16);
    __m256i v = _mm256_max_epi32(_mm256_max_epi32(b, g), r);
    __m256i diff = _mm256_sub_epi32(v, _mm256_min_epi32(_mm256_min_epi32(b, g), r));
    __m256i sv = _mm256_i32gather_epi32((const int *)t->sv, v, 4);
    __m256i s = _mm256_and_si256(sv, _mm256_set1_epi32((1 << 24) - 1));
    s = _mm256_srai_epi32(_mm256_add_epi32(_mm256_mullo_epi32(diff, s), half), 12);
    __m256i hr = _mm256_sub_epi32(g, b), hg = _mm256_add_epi32(_mm256_sub_epi32(b, r), _mm256_add_epi32(diff, diff)),
            hb = _mm256_add_epi32(_mm256_sub_epi32(r, g), _mm256_slli_epi32(diff, 2));
    __m256i h = _mm256_blendv_epi8(_mm256_blendv_epi8(hb, hg, _mm256_cmpeq_epi32(v, g)), hr, _mm256_cmpeq_epi32(v, r));
    h = _mm256_mullo_epi32(h, _mm256_i32gather_epi32(t->div.hdiv, diff, 4));
    h = _mm256_srai_epi32(_mm256_add_epi32(h, half), 12);
    h = _mm256_add_epi32(h, _mm256_and_si256(_mm256_cmpgt_epi32(_mm256_setzero_si256(), h), _mm256_set1_epi32(180)));
    h = _mm256_min_epi32(h, b8);
    /* apply_tables_init's sector and fraction of the looked-up hue, its float steps (one subtraction
     * of 6 is its loop for hues up to 255; the sector is then below 6) */
    const __m256 six = _mm256_set1_ps(6.f), inv255 = _mm256_set1_ps(1.f / 255.f), one = _mm256_set1_ps(1.f);
    __m256 hf = _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_i32gather_epi32(t->lh, h, 4)), _mm256_set1_ps(6.0f / 180));
    hf = _mm256_sub_ps(hf, _mm256_and_ps(_mm256_cmp_ps(hf, six, _CMP_GE_OQ), six));
    __m256 fl = _mm256_floor_ps(hf), f = _mm256_sub_ps(hf, fl);
    __m256i sec = _mm256_cvttps_epi32(fl);
    __m256 sf = _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_i32gather_epi32(t->ls, s, 4)), inv255);
    __m256 vf = _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_srli_epi32(sv, 24)), inv255);
    __m256 t1 = _mm256_mul_ps(vf, _mm256_sub_ps(one, sf)), t2 = _mm256_mul_ps(vf, _mm256_fnmadd_ps(sf, f, one)),
           t3 = _mm256_mul_ps(vf, _mm256_fnmadd_ps(sf, _mm256_sub_ps(one, f), one));
    __m256 m[6];
    for (int k = 1; k < 6; k++) m[k] = _mm256_castsi256_ps(_mm256_cmpeq_epi32(sec, _mm256_set1_epi32(k)));
    /* pick[sector] = {b, g, r} entries of tab = {v, t1, t2, t3} */
    __m256i ro = to_u8(pick6(vf, t2, t1, t1, t3, vf, m)), go = to_u8(pick6(t3, vf, vf, t2, t1, t1, m)),
            bo = to_u8(pick6(t1, t1, t3, vf, vf, t2, m));
    return yp_aug_rgb8(ro, go, bo);
}

static inline AVX2 __m256i reverse8(__m256i x) {
    return _mm256_permutevar8x32_epi32(x, _mm256_setr_epi32(7, 6, 5, 4, 3, 2, 1, 0));
}

/* One row of w pixels, vec of them (a multiple of 8) by the vector rule: yp_hsv_apply_flip's
 * row. Flipped, pairs of pixels a, b = w-1-a go by the scalar rule while b is a tail pixel, then
 * pairs of 8-pixel blocks from both ends (both loaded before either is stored), then the middle
 * pixels in scalar pairs. */
static AVX2 void hsv_row_avx2(const hsv_apply_tables *t, uint8_t *row, int w, int vec, int flip_lr) {
    if (!flip_lr) {
        for (int i = 0; i < vec; i += 8) store8(row + 3 * i, hsv8(t, load8(row + 3 * i)));
        for (int i = vec; i < w; i++) hsv_pixel(t, row + 3 * i, row + 3 * i, 0);
        return;
    }
    int a = 0, b = w - 1;
    uint8_t pa[3], pb[3];
    for (; a <= b && b >= vec; a++, b--) {
        hsv_pixel_at(t, row + 3 * a, pa, a < vec), hsv_pixel(t, row + 3 * b, pb, 0);
        memcpy(row + 3 * a, pb, 3), memcpy(row + 3 * b, pa, 3);
    }
    for (; b - a + 1 >= 16; a += 8, b -= 8) {
        __m256i l = hsv8(t, load8(row + 3 * a)), r = hsv8(t, load8(row + 3 * (b - 7)));
        store8(row + 3 * a, reverse8(r)), store8(row + 3 * (b - 7), reverse8(l));
    }
    for (; a <= b; a++, b--) {
        hsv_pixel(t, row + 3 * a, pa, 1), hsv_pixel(t, row + 3 * b, pb, 1);
        memcpy(row + 3 * a, pb, 3), memcpy(row + 3 * b, pa, 3);
    }
}

#endif

void yp_hsv_apply_flip(yp_image *img, const double gain[3], int flip_lr) {
    hsv_apply_tables t;
    apply_tables_init(&t, gain);
    size_t stride = (size_t)img->w * 3;
    int w = img->w, vec = w / HSV_BLOCK * HSV_BLOCK; /* OpenCV's rule by the pixel's place before the flip */
#ifdef YP_AUG_AVX2
    if (yp_aug_have_avx2()) {
        for (int y = 0; y < img->h; y++) hsv_row_avx2(&t, img->rgb + (size_t)y * stride, w, vec, flip_lr);
        return;
    }
#endif
    for (int y = 0; y < img->h; y++) {
        uint8_t *row = img->rgb + (size_t)y * stride;
        if (!flip_lr) {
            for (int i = 0; i < vec; i++) hsv_pixel(&t, row + 3 * i, row + 3 * i, 1);
            for (int i = vec; i < w; i++) hsv_pixel(&t, row + 3 * i, row + 3 * i, 0);
            continue;
        }
        for (int a = 0, b = w - 1; a <= b; a++, b--) {
            uint8_t pa[3], pb[3];
            if (b < vec) {
                hsv_pixel(&t, row + 3 * a, pa, 1), hsv_pixel(&t, row + 3 * b, pb, 1);
            } else {
                hsv_pixel_at(&t, row + 3 * a, pa, a < vec), hsv_pixel(&t, row + 3 * b, pb, 0);
            }
            memcpy(row + 3 * a, pb, 3), memcpy(row + 3 * b, pa, 3);
        }
    }
}

void yp_hsv_apply(yp_image *img, const double gain[3]) { yp_hsv_apply_flip(img, gain, 0); }

void yp_flip_lr(yp_image *img) {
    for (int y = 0; y < img->h; y++) {
        uint8_t *row = img->rgb + (size_t)y * (size_t)img->w * 3;
        for (int a = 0, b = img->w - 1; a < b; a++, b--)
            for (int c = 0; c < 3; c++) {
                uint8_t t = row[3 * a + c];
                row[3 * a + c] = row[3 * b + c], row[3 * b + c] = t;
            }
    }
}

void yp_flip_ud(yp_image *img) {
    size_t stride = (size_t)img->w * 3;
    for (int a = 0, b = img->h - 1; a < b; a++, b--) {
        uint8_t *p = img->rgb + (size_t)a * stride, *q = img->rgb + (size_t)b * stride;
        for (size_t i = 0; i < stride; i++) {
            uint8_t t = p[i];
            p[i] = q[i], q[i] = t;
        }
    }
}

void yp_labels_xyxy_to_xywhn(float *rows, int64_t n, int w, int h) {
    float xmax = (float)(w - 1e-3), ymax = (float)(h - 1e-3), fw = (float)w, fh = (float)h;
    for (int64_t i = 0; i < n; i++) {
        float *r = rows + 5 * i;
        for (int k = 1; k < 5; k++) {
            float hi = k % 2 ? xmax : ymax;
            r[k] = r[k] < 0 ? 0 : r[k] > hi ? hi : r[k];
        }
        float x1 = r[1], y1 = r[2], x2 = r[3], y2 = r[4];
        r[1] = (x1 + x2) / 2 / fw, r[2] = (y1 + y2) / 2 / fh;
        r[3] = (x2 - x1) / fw, r[4] = (y2 - y1) / fh;
    }
}
