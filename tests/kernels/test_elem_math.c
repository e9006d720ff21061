/* test_elem_math.c - the element-type conversions of kernels/yp_elem_math.h, which the CPU's cast
 * entry, the checkpoint loader and the fp16/bf16 tests use on the host (the GPU uses cvt.rn):
 *   - every one of the 65536 fp16 bit patterns converts to fp32 exactly and back to itself (NaNs
 *     stay NaN); likewise for bf16;
 *   - fp32 to fp16 and to bf16 round to nearest, ties to even, by an independent check: for
 *     values over the whole range (subnormal halves, the overflow edge 65504..65520, ties placed
 *     exactly), the result's value is no farther from the input (in double) than its two
 *     neighbours', and an exact tie picks the even one;
 *   - PyTorch's .half() and .bfloat16() of the same values (tests/data/elem/conversions.bin,
 *     written by tests/ref/make_elem_fixture.py) agree bit for bit;
 *   - the edge cases by name: 65519.99 -> 65504, 65520 -> inf, 2^-25 -> 0, just above it -> the
 *     smallest subnormal, -0 keeps its sign, inf stays inf. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "yp_elem_math.h"
#include "yp_test.h"

static void test_round_trips(void) {
    int bad16 = 0, bad_bf = 0;
    for (uint32_t h = 0; h < 65536; h++) {
        float f = yp_f16_to_f32((uint16_t)h), b = yp_bf16_to_f32((uint16_t)h);
        if (isnan(f)) bad16 += !isnan(yp_f16_to_f32(yp_f32_to_f16(f)));
        else bad16 += yp_f32_to_f16(f) != h;
        if (isnan(b)) bad_bf += !isnan(yp_bf16_to_f32(yp_f32_to_bf16(b)));
        else bad_bf += yp_f32_to_bf16(b) != h;
    }
    CHECK_EQ_I64(bad16, 0);
    CHECK_EQ_I64(bad_bf, 0);
}

/* Whether bits h (of a 16-bit type through to_f32, whose largest finite magnitude has bits
 * `max`) is the nearest-even rounding of v. Infinity is right from halfway past the largest
 * finite value (its ulp above it) on. */
static int nearest_even(float v, uint16_t h, float (*to_f32)(uint16_t), uint16_t max) {
    double x = v, got = to_f32(h), e = fabs(got - x);
    double top = to_f32(max), ulp = top - to_f32((uint16_t)(max - 1));
    if (isinf(got)) return fabs(x) >= top + ulp / 2 && (got > 0) == (x > 0);
    if (fabs(x) >= top + ulp / 2) return 0;
    for (int d = -1; d <= 1; d += 2) {
        if ((h & 0x7FFF) == 0 && d < 0) continue;     /* no smaller magnitude of this sign */
        if ((h & 0x7FFF) == max && d > 0) continue;   /* the next one is infinity */
        double other = to_f32((uint16_t)(h + d));
        double eo = fabs(other - x);
        if (eo < e || (eo == e && (h & 1))) return 0;
    }
    return 1;
}

static void test_nearest_even(void) {
    int bad16 = 0, bad_bf = 0, n = 0;
    uint64_t st = 88172645463325252ull;
    for (int i = 0; i < 200000; i++) {
        st ^= st << 13, st ^= st >> 7, st ^= st << 17;
        uint32_t bits = (uint32_t)st;
        float v;
        memcpy(&v, &bits, sizeof v);
        if (isnan(v)) continue;
        /* half of them scaled into fp16's range, subnormals included */
        int ex;
        if (i & 1) v = ldexpf(frexpf(v, &ex), (int)((st >> 40) % 44) - 26);
        n++;
        bad16 += !nearest_even(v, yp_f32_to_f16(v), yp_f16_to_f32, 0x7BFF);
        bad_bf += !nearest_even(v, yp_f32_to_bf16(v), yp_bf16_to_f32, 0x7F7F);
    }
    /* exact ties: halfway between consecutive halves, both parities */
    for (uint32_t h = 1; h < 0x7BFF; h += 97) {
        double mid = ((double)yp_f16_to_f32((uint16_t)h) + yp_f16_to_f32((uint16_t)(h + 1))) / 2;
        float v = (float)mid;
        if ((double)v != mid) continue;
        n++;
        uint16_t got = yp_f32_to_f16(v);
        bad16 += got != ((h & 1) ? h + 1 : h);
    }
    printf("  %d values\n", n);
    CHECK_EQ_I64(bad16, 0);
    CHECK_EQ_I64(bad_bf, 0);
}

static void test_edges(void) {
    CHECK_EQ_I64(yp_f32_to_f16(65504.0f), 0x7BFF);
    CHECK_EQ_I64(yp_f32_to_f16(65519.99f), 0x7BFF);
    CHECK_EQ_I64(yp_f32_to_f16(65520.0f), 0x7C00);
    CHECK_EQ_I64(yp_f32_to_f16(-1e9f), 0xFC00);
    CHECK_EQ_I64(yp_f32_to_f16(INFINITY), 0x7C00);
    CHECK_EQ_I64(yp_f32_to_f16(ldexpf(1.0f, -25)), 0);
    CHECK_EQ_I64(yp_f32_to_f16(ldexpf(1.0f, -25) * 1.0001f), 1);
    CHECK_EQ_I64(yp_f32_to_f16(ldexpf(1.0f, -14)), 0x0400); /* the smallest normal */
    CHECK_EQ_I64(yp_f32_to_f16(-0.0f), 0x8000);
    CHECK(isnan(yp_f16_to_f32(yp_f32_to_f16(NAN))));
    CHECK_EQ_I64(yp_f32_to_bf16(1.0f), 0x3F80);
    CHECK_EQ_I64(yp_f32_to_bf16(1.00390625f), 0x3F80); /* a tie to even (down) */
    CHECK_EQ_I64(yp_f32_to_bf16(1.01171875f), 0x3F82); /* a tie to even (up) */
    CHECK_EQ_I64(yp_f32_to_bf16(3.4e38f), 0x7F80);     /* rounds past the largest: inf */
    CHECK(isnan(yp_bf16_to_f32(yp_f32_to_bf16(NAN))));
    CHECK_EQ_I64((int64_t)yp_elem_size(YP_ELEM_F16), 2);
    CHECK_EQ_I64((int64_t)yp_elem_size(YP_ELEM_COUNT), 0);
}

/* The fixture: u32 count, then per value its f32 bits, PyTorch's f16 bits and bf16 bits (u32,
 * u16, u16; little endian). */
static void test_vs_pytorch(void) {
    FILE *f = fopen(YP_TEST_DATA "/elem/conversions.bin", "rb");
    REQUIRE(f != NULL);
    uint32_t n = 0;
    REQUIRE(fread(&n, 4, 1, f) == 1);
    int bad16 = 0, bad_bf = 0;
    uint32_t got = 0;
    for (uint32_t i = 0; i < n; i++) {
        uint32_t bits;
        uint16_t h, b;
        if (fread(&bits, 4, 1, f) != 1 || fread(&h, 2, 1, f) != 1 || fread(&b, 2, 1, f) != 1) break;
        got++;
        float v;
        memcpy(&v, &bits, sizeof v);
        bad16 += isnan(v) ? !isnan(yp_f16_to_f32(yp_f32_to_f16(v))) : yp_f32_to_f16(v) != h;
        bad_bf += isnan(v) ? !isnan(yp_bf16_to_f32(yp_f32_to_bf16(v))) : yp_f32_to_bf16(v) != b;
    }
    fclose(f);
    printf("  %u values against PyTorch\n", got);
    CHECK_EQ_I64(got, n);
    CHECK(n > 1000);
    CHECK_EQ_I64(bad16, 0);
    CHECK_EQ_I64(bad_bf, 0);
}

int main(void) {
    YP_RUN(test_round_trips);
    YP_RUN(test_nearest_even);
    YP_RUN(test_edges);
    YP_RUN(test_vs_pytorch);
    return yp_test_summary();
}
