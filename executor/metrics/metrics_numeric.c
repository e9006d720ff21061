/* metrics_numeric.c - the metrics' shared numerics (contracts in metrics_internal.h): a stable
 * radix sort, highest-first float keys, and numpy's pairwise sum and np.interp. */
#include <math.h>
#include <string.h>

#include "metrics_internal.h"

void yp_mx_sort_hi32(uint64_t *a, uint64_t *tmp, int64_t n) {
    uint64_t *src = a, *dst = tmp;
    for (int shift = 32; shift < 64; shift += 8) {
        int64_t count[257] = {0};
        for (int64_t i = 0; i < n; i++) count[(src[i] >> shift & 255) + 1]++;
        for (int b = 0; b < 256; b++) count[b + 1] += count[b];
        for (int64_t i = 0; i < n; i++) dst[count[src[i] >> shift & 255]++] = src[i];
        uint64_t *t = src;
        src = dst, dst = t;
    }
    /* four passes: the result is back in a */
}

uint32_t yp_mx_desc_key(float v) {
    uint32_t bits;
    if (v == 0) v = 0; /* -0 sorts with +0 */
    memcpy(&bits, &v, sizeof bits);
    uint32_t asc = (bits >> 31) ? ~bits : bits | 0x80000000u; /* ascending order of v */
    return ~asc;
}

double yp_mx_sum(const double *a, int64_t n) {
    if (n < 8) {
        double res = -0.0;
        for (int64_t i = 0; i < n; i++) res += a[i];
        return res;
    }
    if (n <= 128) {
        double r[8];
        for (int j = 0; j < 8; j++) r[j] = a[j];
        int64_t i;
        for (i = 8; i < n - n % 8; i += 8)
            for (int j = 0; j < 8; j++) r[j] += a[i + j];
        double res = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
        for (; i < n; i++) res += a[i];
        return res;
    }
    int64_t n2 = n / 2;
    n2 -= n2 % 8;
    return yp_mx_sum(a, n2) + yp_mx_sum(a + n2, n - n2);
}

/* The last index j with xp[j] <= x, for xp[0] <= x <= xp[n-1]. */
static int64_t last_at_or_below(double x, const double *xp, int64_t n) {
    int64_t lo = 0, hi = n; /* first index with xp > x, in [lo, hi] */
    while (lo < hi) {
        int64_t mid = lo + (hi - lo) / 2;
        if (x >= xp[mid]) lo = mid + 1;
        else hi = mid;
    }
    return lo - 1;
}

double yp_mx_interp(double x, const double *xp, const double *fp, int64_t n, double left, double right) {
    if (isnan(x)) return x;
    if (x > xp[n - 1]) return right;
    if (x < xp[0]) return left;
    int64_t j = last_at_or_below(x, xp, n);
    if (j == n - 1 || xp[j] == x) return fp[j];
    double slope = (fp[j + 1] - fp[j]) / (xp[j + 1] - xp[j]);
    double y = slope * (x - xp[j]) + fp[j];
    if (isnan(y)) {
        y = slope * (x - xp[j + 1]) + fp[j + 1];
        if (isnan(y) && fp[j] == fp[j + 1]) y = fp[j];
    }
    return y;
}
