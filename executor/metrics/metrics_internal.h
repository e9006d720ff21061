/* metrics_internal.h - what the metrics files share (yp_metrics.h is the interface): a stable
 * radix sort on 64-bit keys by their high half, the sort key of a float for highest-first order,
 * and numpy's summation and interpolation, reproduced so that sums and curves come out as numpy
 * computes them.
 * Defines: yp_mx_sort_hi32, yp_mx_desc_key, yp_mx_sum, yp_mx_interp. */
#ifndef YP_METRICS_INTERNAL_H
#define YP_METRICS_INTERNAL_H

#include <stdint.h>

/* Sorts a[0..n) by the high 32 bits, ascending, stable (equal high halves keep their order);
 * tmp: room for n keys. Four passes of 8 bits. */
void yp_mx_sort_hi32(uint64_t *a, uint64_t *tmp, int64_t n);

/* A 32-bit key whose ascending order is v's descending order (finite or infinite v; -0 and +0
 * get the same key, as they compare equal). */
uint32_t yp_mx_desc_key(float v);

/* numpy's add.reduce of a contiguous float64 array: pairwise summation (8 accumulators up to
 * 128 values, halves beyond), so means match np.mean to the bit. */
double yp_mx_sum(const double *a, int64_t n);

/* np.interp(x, xp, fp, left, right) at one x: xp non-decreasing (n >= 1). With j the last index
 * with xp[j] <= x: left below xp[0], right above xp[n-1], fp[j] where xp[j] == x or j == n-1,
 * else fp[j] + slope*(x - xp[j]) with slope = (fp[j+1] - fp[j])/(xp[j+1] - xp[j]) (numpy's
 * fallbacks when that is NaN included). */
double yp_mx_interp(double x, const double *xp, const double *fp, int64_t n, double left, double right);

#endif
