/* yp_preflight.h - the check before step 1 on a device that can say how much memory is free: the
 * plan's arena and the backend's fixed cost (yp_backend.fixed_bytes) must fit in the device
 * memory the run has, or the run is refused before the arena is allocated. Pure arithmetic (no
 * device), so it is unit-tested with fabricated figures; the command line reads the figures from
 * the backend (yp_preflight_of) and, on a refusal, names the best plan that fits.
 *
 * The figures. The free memory is read after the backend instance was created, so the fixed
 * cost has already been taken out of it: the memory the run has is free + fixed, and
 * arena + fixed > free + fixed, i.e. arena > free, refuses. */
#ifndef YP_PREFLIGHT_H
#define YP_PREFLIGHT_H

#include <stddef.h>
#include <stdint.h>

#include "yp_backend.h"
#include "yp_error.h"

typedef struct {
    int64_t arena_bytes; /* the plan's arena: the one mem_alloc the executor makes */
    int64_t fixed_bytes; /* the backend's own device state, already taken (yp_backend.fixed_bytes) */
    int known;           /* 1: free_bytes was read from the device; 0: the backend cannot tell (CPU) */
    int64_t free_bytes;  /* device memory free now, after the backend was created */
} yp_preflight;

typedef enum {
    YP_PREFLIGHT_FITS,    /* arena + fixed <= the run's memory: go on */
    YP_PREFLIGHT_UNKNOWN, /* no free figure (the CPU backend): nothing to check here */
    YP_PREFLIGHT_SHORT,   /* refuse before allocating the arena */
} yp_preflight_verdict;

/* The device memory the run has: free + fixed (the fixed cost was taken before free was read);
 * -1 when unknown. */
int64_t yp_preflight_budget(const yp_preflight *p);

/* The verdict on p (negative figures count as unknown). */
yp_preflight_verdict yp_preflight_decide(const yp_preflight *p);

/* p for backend be and an arena of arena_bytes: its fixed cost and, where it can tell, its free
 * memory now (yp_backend_device_free). 0, or -1 with err set when asking the device failed. */
int yp_preflight_of(yp_backend *be, int64_t arena_bytes, yp_preflight *p, yp_err *err);

/* One line for a YP_PREFLIGHT_SHORT verdict, naming both figures: "arena 12.00 GiB + fixed cost
 * 0.31 GiB = 12.31 GiB, but the device has 10.11 GiB for them (9.80 GiB free now, after the
 * fixed cost)". */
void yp_preflight_describe(const yp_preflight *p, char *buf, size_t n);

#endif
