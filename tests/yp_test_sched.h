/* yp_test_sched.h - schedule lookups the tests share.
 * Defines: yp_test_backward_of. */
#ifndef YP_TEST_SCHED_H
#define YP_TEST_SCHED_H

#include "yp_schedule.h"

/* The backward step of node v in s, or NULL. */
static inline const yp_step *yp_test_backward_of(const yp_schedule *s, int v) {
    for (int i = 0; i < s->n_steps; i++)
        if (s->steps[i].phase == YP_PHASE_BACKWARD && s->steps[i].node == v) return &s->steps[i];
    return NULL;
}

#endif
