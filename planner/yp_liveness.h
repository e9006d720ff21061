/* yp_liveness.h - the liveness simulation (docs/architecture.md §6): live bytes at every step of a
 * schedule, the peak, the step where it occurs and the breakdown by kind at the peak. This is
 * the one function that computes those numbers; reports and the executor reuse its result.
 * Ownership: yp_liveness_compute fills a struct whose arrays the caller frees with
 * yp_liveness_free. */
#ifndef YP_LIVENESS_H
#define YP_LIVENESS_H

#include "yp_schedule.h"

#define YP_ALIGN 256 /* arena alignment of every tensor (bytes) */

static inline int64_t yp_align_up(int64_t n) { return (n + YP_ALIGN - 1) / YP_ALIGN * YP_ALIGN; }

typedef struct {
    int n_steps;
    int64_t *live;     /* live bytes (256-aligned sizes) at each step */
    int64_t *by_kind;  /* live bytes by kind at each step: [step * YP_KIND_COUNT + kind] */
    int peak_step;     /* first step where live bytes peak */
    int64_t peak;      /* max over steps of live: the lower bound of any arena */
    int64_t at_peak[YP_KIND_COUNT];
} yp_liveness;

/* Simulates s. 0, or -1 with err set (out of memory). */
int yp_liveness_compute(const yp_schedule *s, yp_liveness *out, yp_err *err);
void yp_liveness_free(yp_liveness *l);

#endif
