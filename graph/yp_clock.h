/* yp_clock.h - the one monotonic clock of the project: seconds since an arbitrary start, for
 * timing steps, epochs, ETAs and benchmarks (never for anything that must be reproducible). */
#ifndef YP_CLOCK_H
#define YP_CLOCK_H

#include <time.h>

static inline double yp_now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

#endif
