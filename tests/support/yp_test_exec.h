/* yp_test_exec.h - what the tests that run an executor on a PyTorch step fixture share: an
 * executor on a plan with the fixture's initial weights (its "init/<name>" records), and one
 * training step checked against the fixture's loss and gradients.
 * Defines: yp_test_exec_init, yp_test_step_vs_fixture. */
#ifndef YP_TEST_EXEC_H
#define YP_TEST_EXEC_H

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "step_fixture.h"
#include "yp_executor.h"
#include "yp_test.h"

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

/* One micro-step of x on the fixture's "images" and "targets": its loss parts and total within
 * 1e-4 of the total of "loss/1" (checked), and each parameter's gradient against its
 * "grad/<name>" record, an error above tol printed. A record named `zero` (or NULL) has gradient
 * 0 in exact arithmetic, so both sides hold rounding noise: it counts 0 where |g| <= 1e-8, else 1.
 * Returns the gradients compared, their worst relative error into *worst; -1 when the step fails. */
static inline int yp_test_step_vs_fixture(yp_exec *x, const fx_file *fx, const char *zero, double tol, double *worst) {
    const fx_record *img = fx_get(fx, "images"), *tg = fx_get(fx, "targets"), *ref = fx_get(fx, "loss/1");
    double loss[4];
    yp_err err;
    *worst = 0;
    if (!img || !tg || !ref) return fprintf(stderr, "  the fixture has no images, targets or loss/1\n"), -1;
    if (yp_exec_micro_step(x, img->data, tg->data, tg->numel / 6, loss, &err))
        return fprintf(stderr, "  step: %s\n", err.msg), -1;
    printf("  loss %.7f (torch %.7f)\n", loss[3], ref->data[3]);
    for (int k = 0; k < 4; k++) CHECK(fabs(loss[k] - ref->data[k]) <= 1e-4 * fabs(ref->data[3]));
    int grads = 0;
    for (int i = 0; i < fx->n; i++) {
        if (strncmp(fx->r[i].name, "grad/", 5)) continue;
        int t = yp_exec_find_param(x, fx->r[i].name + 5);
        CHECK(t >= 0);
        if (t < 0) continue;
        const float *g = yp_exec_tensor(x, x->train.s->tensors[t].grad);
        double e = fx_rel_err(g, fx->r[i].data, fx->r[i].numel);
        if (zero && !strcmp(fx->r[i].name + 5, zero)) {
            double m = 0;
            for (int64_t j = 0; j < fx->r[i].numel; j++) m = fabs(g[j]) > m ? fabs(g[j]) : m;
            e = m <= 1e-8 ? 0 : 1;
        }
        if (e > tol) fprintf(stderr, "  grad %s: rel err %.2e\n", fx->r[i].name + 5, e);
        *worst = e > *worst ? e : *worst, grads++;
    }
    printf("  %d gradients, worst rel err %.2e\n", grads, *worst);
    return grads;
}

#endif
