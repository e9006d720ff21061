/* profile.c - wall time per kind of training step (yp_profile, yp_executor.h): the table
 * yp_exec_profile turns on and off, and the clock the trainer (update.c) times its steps and its
 * update with (yp_profile_start / yp_profile_add, yp_executor_internal.h). */
#include <stdlib.h>
#include <time.h>

#include "yp_executor_internal.h"
#include "yp_clock.h"

double yp_profile_clock(void) { return yp_now_s(); }

int yp_exec_profile(yp_exec *x, int on) {
    yp_profile *p = &x->prof;
    free(p->s), free(p->n);
    p->s = NULL, p->n = NULL;
    if (!on) return 0;
    size_t n = (size_t)YP_PHASE_COUNT * (YP_OP_COUNT + 1);
    p->s = calloc(n, sizeof *p->s), p->n = calloc(n, sizeof *p->n);
    return p->s && p->n ? 0 : (yp_exec_profile(x, 0), -1);
}
