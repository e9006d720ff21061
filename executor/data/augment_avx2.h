/* augment_avx2.h - what the augmentation kernels' AVX2 paths share (internal to executor/data):
 * YP_AUG_AVX2 (defined where GCC or clang targets x86, so that the paths are built even for a
 * baseline instruction set), the YP_AUG_AVX2_FN attribute that compiles one function for AVX2 and
 * FMA, yp_aug_have_avx2() (the run-time choice: the vector path where the CPU has both, else the
 * plain loops, which give the same bytes), and the moves of 8 RGB pixels (24 bytes) between memory
 * and the 32-bit lanes 0x00BBGGRR of a vector (R the pixel's first byte), neither touching a byte
 * outside the 24. */
#ifndef YP_AUGMENT_AVX2_H
#define YP_AUGMENT_AVX2_H

#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
#define YP_AUG_AVX2 1
#include <immintrin.h>
#include <stdint.h>

#define YP_AUG_AVX2_FN __attribute__((target("avx2,fma")))

/* libgcc's CPU model, filled once at start-up: a read, no race. */
static inline int yp_aug_have_avx2(void) { return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"); }

static inline YP_AUG_AVX2_FN __m256i yp_aug_load8(const uint8_t *p) {
    __m128i lo = _mm_loadu_si128((const __m128i *)p), hi = _mm_loadu_si128((const __m128i *)(p + 8));
    __m256i x = _mm256_inserti128_si256(_mm256_castsi128_si256(lo), hi, 1);
    const __m256i m = _mm256_setr_epi8(0, 1, 2, -1, 3, 4, 5, -1, 6, 7, 8, -1, 9, 10, 11, -1, /* bytes 0..11 */
                                       4, 5, 6, -1, 7, 8, 9, -1, 10, 11, 12, -1, 13, 14, 15, -1); /* 12..23 */
    return _mm256_shuffle_epi8(x, m);
}

static inline YP_AUG_AVX2_FN void yp_aug_store8(uint8_t *o, __m256i x) {
    const __m256i m = _mm256_setr_epi8(0, 1, 2, 4, 5, 6, 8, 9, 10, 12, 13, 14, -1, -1, -1, -1, 0, 1, 2, 4, 5, 6, 8, 9,
                                       10, 12, 13, 14, -1, -1, -1, -1);
    __m256i y = _mm256_permutevar8x32_epi32(_mm256_shuffle_epi8(x, m), _mm256_setr_epi32(0, 1, 2, 4, 5, 6, 3, 7));
    _mm_storeu_si128((__m128i *)o, _mm256_castsi256_si128(y));
    _mm_storel_epi64((__m128i *)(o + 16), _mm256_extracti128_si256(y, 1));
}

/* Lanes r, g, b (each 0..255) as pixels. */
static inline YP_AUG_AVX2_FN __m256i yp_aug_rgb8(__m256i r, __m256i g, __m256i b) {
    return _mm256_or_si256(r, _mm256_or_si256(_mm256_slli_epi32(g, 8), _mm256_slli_epi32(b, 16)));
}
#endif

#endif
