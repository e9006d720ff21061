/* yp_liveness.h - the liveness simulation (docs/architecture.md §6): live bytes at every step of a
 * schedule, the peak, the step where it occurs and the breakdown by kind at the peak. This is
 * the one function that computes those numbers; reports and the executor reuse its result.
 * Ownership: yp_liveness_compute fills a struct whose arrays the caller frees with
 * yp_liveness_free. */
#ifndef YP_LIVENESS_H
#define YP_LIVENESS_H

#include "yp_schedule.h"

/* n rounded up to a multiple of align (> 0): a tensor's size in an arena aligned to align. */
static inline int64_t yp_align_up(int64_t n, int64_t align) { return (n + align - 1) / align * align; }

typedef struct {
    int n_steps;
    int64_t align;     /* the arena alignment the sizes were rounded to (the candidate's) */
    int64_t *live;     /* live bytes (sizes rounded up to align) at each step */
    int64_t *by_kind;  /* live bytes by kind at each step: [step * YP_KIND_COUNT + kind] */
    int peak_step;     /* first step where live bytes peak */
    int64_t peak;      /* max over steps of live: the lower bound of any arena */
    int64_t at_peak[YP_KIND_COUNT];
} yp_liveness;

/* Simulates s with every tensor at its size rounded up to align (a power of two, the plan's arena
 * alignment). 0, or -1 with err set (align not a power of two, out of memory). */
int yp_liveness_compute(const yp_schedule *s, int64_t align, yp_liveness *out, yp_err *err);
void yp_liveness_free(yp_liveness *l);

#endif
