/* yp_test_sched.h - schedule builds and lookups the tests share.
 * Defines: yp_test_schedule, yp_test_backward_of. */
#ifndef YP_TEST_SCHED_H
#define YP_TEST_SCHED_H

#include <stdio.h>

#include "yp_schedule.h"

/* g's training schedule at batch x side x side under policy pol (the other options default), or
 * NULL after a message. */
static inline yp_schedule *yp_test_schedule(const yp_graph *g, int64_t batch, int64_t side, yp_save_policy pol) {
    yp_err err;
    yp_sched_opts o = yp_sched_opts_default(batch, side, side);
    o.policy = pol;
    yp_schedule *s = yp_schedule_build(g, &o, &err);
    if (!s) fprintf(stderr, "schedule: %s\n", err.msg);
    return s;
}

/* The backward step of node v in s, or NULL. */
static inline const yp_step *yp_test_backward_of(const yp_schedule *s, int v) {
    for (int i = 0; i < s->n_steps; i++)
        if (s->steps[i].phase == YP_PHASE_BACKWARD && s->steps[i].node == v) return &s->steps[i];
    return NULL;
}

#endif
