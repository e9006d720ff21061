/* yp_half.h - IEEE 754 half precision (binary16) to float, exactly: subnormals, infinities and
 * NaN included. Header-only: the checkpoint loader (F16 tensors) and the test fixtures (records
 * stored as float16) read the same bits the same way.
 * Defines: yp_half_to_float. */
#ifndef YP_HALF_H
#define YP_HALF_H

#include <stdint.h>
#include <string.h>

static inline float yp_half_to_float(uint16_t h) {
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
    float v;
    memcpy(&v, &bits, sizeof v);
    return v;
}

#endif
