/* yp_whatif.h - "will model M at batch B and size S fit, and if not, what helps?" (docs/architecture.md
 * §1 question 3): the plan of one pinned candidate, then the remedies users try one by one, each
 * built as a real plan so its memory and its time cost are what the planner would promise.
 * Ownership: the caller frees each remedy's plan with yp_plan_free (yp_whatif_free does all). */
#ifndef YP_WHATIF_H
#define YP_WHATIF_H

#include "yp_plan.h"

#define YP_WHATIF_MAX 16

typedef struct {
    char what[200];      /* "batch 32 (accumulate 2)", "AMP fp16", ... */
    const yp_graph *g;
    yp_plan plan;
} yp_remedy;

typedef struct {
    yp_plan base;
    int n;
    yp_remedy r[YP_WHATIF_MAX];
} yp_whatif;

/* Plans c on gpu and the remedies. `smaller` is the next smaller model (or NULL). 0, or -1. */
int yp_whatif_run(const yp_graph *g, const yp_graph *smaller, const yp_candidate *c, const yp_gpu *gpu,
                  int64_t reserve, yp_whatif *out, yp_err *err);
void yp_whatif_free(yp_whatif *w);

#endif
