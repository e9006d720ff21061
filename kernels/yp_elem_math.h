/* yp_elem_math.h - the element types of yp_ops.h (yp_elem) as storage: their sizes, the
 * conversions fp32 <-> fp16 (IEEE binary16) and fp32 <-> bf16, and, for the CUDA kernels, the
 * typed loads and stores every operand goes through, so that one kernel template serves all
 * three types while the arithmetic stays fp32 (as PyTorch's own fp16/bf16 kernels compute).
 *
 * Rounding: fp32 to fp16 and to bf16 round to nearest, ties to even, as the GPU's cvt.rn and
 * PyTorch's .half() / .bfloat16() do; overflow gives infinity, NaN stays NaN (quiet). The host
 * functions are plain C11 (bit arithmetic): the CPU backend's cast entry, the checkpoint loader
 * (F16/BF16 tensors) and the tests use them, and test_elem_math checks them against PyTorch's
 * conversions and the GPU's rule on every fp16 value and on edge cases.
 *
 * For CUDA C++ (nvcc) it also defines yp_ld / yp_st, overloaded on float, __half and
 * __nv_bfloat16 (host and device), and YP_ELEM_GENERIC: a function of the shared math headers
 * written over `yp_val` pointers is a template over the storage type under C++ and a plain
 * float function under C, so the CPU backend and the host tests run exactly the code the
 * kernels instantiate for fp32. */
#ifndef YP_ELEM_MATH_H
#define YP_ELEM_MATH_H

#include <stdint.h>
#include <string.h>

#include "yp_ops.h"

#if defined(__CUDACC__)
#define YP_ELEM_HD __host__ __device__
#else
#define YP_ELEM_HD
#endif

/* Bytes of one element of t: 4, 2, 2; 0 for anything else. */
static inline size_t yp_elem_size(yp_elem t) {
    return t == YP_ELEM_F32 ? 4 : t == YP_ELEM_F16 || t == YP_ELEM_BF16 ? 2 : 0;
}

static inline uint32_t yp_f32_bits(float v) {
    uint32_t b;
    memcpy(&b, &v, sizeof b);
    return b;
}
static inline float yp_bits_f32(uint32_t b) {
    float v;
    memcpy(&v, &b, sizeof v);
    return v;
}

/* fp16 bits to fp32, exactly: subnormals, infinities and NaN included. */
static inline float yp_f16_to_f32(uint16_t h) {
    uint32_t sign = (uint32_t)(h >> 15) << 31, e = h >> 10 & 31, m = h & 1023, bits;
    if (e == 31) {
        bits = sign | 0x7F800000u | m << 13;
    } else if (e) {
        bits = sign | (e + 112) << 23 | m << 13;
    } else if (m) { /* subnormal: normalise */
        e = 113;
        while (!(m & 1024)) m <<= 1, e--;
        bits = sign | e << 23 | (m & 1023) << 13;
    } else {
        bits = sign;
    }
    return yp_bits_f32(bits);
}

/* fp32 to fp16 bits, round to nearest even; |v| >= 65520 gives infinity, NaN a quiet NaN. */
static inline uint16_t yp_f32_to_f16(float v) {
    uint32_t b = yp_f32_bits(v), sign = (b >> 16) & 0x8000u, abs = b & 0x7FFFFFFFu;
    if (abs > 0x7F800000u) return (uint16_t)(sign | 0x7E00u | ((abs >> 13) & 0x3FFu)); /* NaN, kept quiet */
    if (abs >= 0x477FF000u) return (uint16_t)(sign | 0x7C00u); /* rounds past 65504: infinity */
    if (abs < 0x38800000u) { /* below 2^-14: a subnormal half (or zero) */
        if (abs < 0x33000000u) return (uint16_t)sign; /* at most 2^-25: rounds to zero */
        uint32_t e = abs >> 23, m = (abs & 0x7FFFFFu) | 0x800000u;
        uint32_t shift = 126 - e; /* 14 .. 24: the half's unit is 2^-24 */
        uint32_t q = m >> shift, rem = m & ((1u << shift) - 1), tie = 1u << (shift - 1);
        if (rem > tie || (rem == tie && (q & 1))) q++;
        return (uint16_t)(sign | q);
    }
    uint32_t q = (abs >> 13) - (112u << 10); /* rebias the exponent: 127 - 15 */
    uint32_t rem = abs & 0x1FFFu;
    if (rem > 0x1000u || (rem == 0x1000u && (q & 1))) q++; /* a carry into the exponent is right */
    return (uint16_t)(sign | q);
}

/* bf16 bits to fp32: the upper half of the fp32 bits. */
static inline float yp_bf16_to_f32(uint16_t h) { return yp_bits_f32((uint32_t)h << 16); }

/* fp32 to bf16 bits, round to nearest even; NaN a quiet NaN. */
static inline uint16_t yp_f32_to_bf16(float v) {
    uint32_t b = yp_f32_bits(v);
    if ((b & 0x7FFFFFFFu) > 0x7F800000u) return (uint16_t)((b >> 16) | 0x40u);
    return (uint16_t)((b + 0x7FFFu + ((b >> 16) & 1u)) >> 16);
}

/* Element i of an array of type t at p, as fp32 (t one of F32, F16, BF16). */
static inline float yp_elem_get(yp_elem t, const void *p, int64_t i) {
    if (t == YP_ELEM_F32) return ((const float *)p)[i];
    uint16_t h = ((const uint16_t *)p)[i];
    return t == YP_ELEM_F16 ? yp_f16_to_f32(h) : yp_bf16_to_f32(h);
}

/* Sets element i of an array of type t at p to v rounded to t. */
static inline void yp_elem_put(yp_elem t, void *p, int64_t i, float v) {
    if (t == YP_ELEM_F32)
        ((float *)p)[i] = v;
    else
        ((uint16_t *)p)[i] = t == YP_ELEM_F16 ? yp_f32_to_f16(v) : yp_f32_to_bf16(v);
}

/* v rounded to type t and back (what storing v in a t tensor keeps). */
static inline float yp_elem_round(yp_elem t, float v) {
    return t == YP_ELEM_F16    ? yp_f16_to_f32(yp_f32_to_f16(v))
           : t == YP_ELEM_BF16 ? yp_bf16_to_f32(yp_f32_to_bf16(v))
                               : v;
}

/* ---- typed loads and stores, and the generic functions of the shared math headers ---- */
#ifdef __cplusplus
#if defined(__CUDACC__)
#include <cuda_bf16.h>
#include <cuda_fp16.h>
static inline YP_ELEM_HD float yp_ld(const __half *p) { return __half2float(*p); }
static inline YP_ELEM_HD float yp_ld(const __nv_bfloat16 *p) { return __bfloat162float(*p); }
static inline YP_ELEM_HD void yp_st(__half *p, float v) { *p = __float2half_rn(v); }
static inline YP_ELEM_HD void yp_st(__nv_bfloat16 *p, float v) { *p = __float2bfloat16_rn(v); }
#endif
static inline YP_ELEM_HD float yp_ld(const float *p) { return *p; }
static inline YP_ELEM_HD void yp_st(float *p, float v) { *p = v; }
#define YP_ELEM_GENERIC template <typename yp_val>
#else
typedef float yp_val; /* under C the generic functions are the fp32 ones */
static inline float yp_ld(const float *p) { return *p; }
static inline void yp_st(float *p, float v) { *p = v; }
#define YP_ELEM_GENERIC
#endif

#endif
