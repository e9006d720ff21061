/* scratch_model.c - the backends' conv scratch models by name (planner/yp_scratch.h): the
 * resolver the planner asks for "onednn:T", and the model a backend needs now. */
#include <omp.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "yp_executor.h"

#define ONEDNN_PREFIX "onednn:"
#define ONEDNN_MAX_THREADS 1024

int yp_exec_conv_scratch(void *ctx, const yp_conv_query *q, int64_t *per_image, int64_t *fixed, yp_err *err) {
    const yp_backend *be = ctx;
    yp_conv_desc d = {{q->in.n, q->in.h, q->in.w, q->in.c}, {q->out.n, q->out.h, q->out.w, q->out.c},
                      q->k, q->s, q->p, q->groups};
    if (!be->ops || !be->ops->conv2d_scratch)
        return yp_err_set(err, "backend %s has no conv ops", be->name);
    if (be->ops->conv2d_scratch(&d, q->bias, q->backward ? YP_CONV_BACKWARD : YP_CONV_FORWARD, per_image, fixed))
        return yp_err_set(err, "%s", be->last_error());
    return 0;
}

/* "onednn:T": the CPU backend asked with T threads (ctx holds T). oneDNN's scratchpads depend on
 * the thread count, and the CPU backend keys its conv cache on it, so the answer is T's whatever
 * the caller runs with; the caller's count is put back. */
static int onednn_rule(void *ctx, const yp_conv_query *q, int64_t *per_image, int64_t *fixed, yp_err *err) {
    int t = (int)(intptr_t)ctx, was = omp_get_max_threads();
    if (t != was) yp_cpu_set_threads(t);
    int rc = yp_exec_conv_scratch((void *)(uintptr_t)yp_backend_cpu(), q, per_image, fixed, err);
    if (t != was) yp_cpu_set_threads(was);
    return rc;
}

/* "onednn:T" with T a thread count written plainly (1..1024, no sign, no leading zero); 1 for
 * any name outside "onednn". */
static int resolve(const char *name, yp_scratch_rule *rule, yp_err *err) {
    const size_t n = strlen(ONEDNN_PREFIX);
    if (strcmp(name, "onednn") && strncmp(name, ONEDNN_PREFIX, n)) return 1;
    const char *v = strlen(name) > n ? name + n : "";
    long t = 0;
    int ok = v[0] >= '1' && v[0] <= '9';
    for (const char *p = v; ok && *p; p++) {
        ok = *p >= '0' && *p <= '9';
        t = t * 10 + (*p - '0');
        ok = ok && t <= ONEDNN_MAX_THREADS;
    }
    if (!ok) return yp_err_set(err, "T must be the CPU thread count, an integer in 1..%d", ONEDNN_MAX_THREADS);
    rule->fn = onednn_rule;
    rule->ctx = (void *)(intptr_t)t;
    return 0;
}

const yp_scratch_resolver *yp_exec_scratch_resolver(void) {
    static const yp_scratch_resolver r = {"onednn:T (T: CPU threads, 1..1024)", resolve};
    return &r;
}

void yp_exec_scratch_model(const yp_backend *be, char *buf, size_t n) {
    if (be == yp_backend_cpu()) snprintf(buf, n, ONEDNN_PREFIX "%d", omp_get_max_threads());
    else snprintf(buf, n, "%s", be->name);
}

void yp_exec_candidate_for(yp_candidate *c, const yp_backend *be) {
    char name[YP_SCRATCH_NAME_MAX];
    yp_exec_scratch_model(be, name, sizeof name);
    if (be == yp_backend_cpu() && !yp_candidate_set_scratch(c, name, yp_exec_scratch_resolver(), NULL)) return;
    snprintf(c->scratch, sizeof c->scratch, "%s", name);
    c->scratch_rule.fn = yp_exec_conv_scratch;
    c->scratch_rule.ctx = (void *)(uintptr_t)be; /* read-only through the rule */
}
