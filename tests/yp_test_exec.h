/* yp_test_exec.h - what the tests that run an executor on a PyTorch step fixture share: an
 * executor on a plan with the fixture's initial weights (its "init/<name>" records).
 * Defines: yp_test_exec_init. */
#ifndef YP_TEST_EXEC_H
#define YP_TEST_EXEC_H

#include <stdio.h>
#include <string.h>

#include "step_fixture.h"
#include "yp_executor.h"

/* An executor on plan p for backend be (guard bytes of canaries around each tensor, 0: none),
 * every parameter the fixture has set to its "init/" record. 0, or -1 after a message on stderr
 * (x freed then; p is the caller's). */
static inline int yp_test_exec_init(yp_exec *x, const yp_plan *p, yp_backend *be, int64_t guard, const fx_file *fx) {
    yp_err err;
    if (yp_exec_init(x, p, be, guard, 1, &err)) return fprintf(stderr, "exec: %s\n", err.msg), -1;
    for (int i = 0; i < fx->n; i++) {
        if (strncmp(fx->r[i].name, "init/", 5)) continue;
        yp_named_tensor nt = {fx->r[i].name + 5, fx->r[i].data, fx->r[i].numel};
        if (yp_exec_load_params(x, &nt, 1, &err)) {
            fprintf(stderr, "load %s: %s\n", fx->r[i].name, err.msg);
            yp_exec_free(x);
            return -1;
        }
    }
    return 0;
}

#endif
