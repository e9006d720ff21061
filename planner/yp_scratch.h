/* yp_scratch.h - conv scratch models: which rule sizes a plan's conv workspace tensors ("ws:"
 * per image, "wt:" fixed; graph/yp_schedule.h), chosen by name so that a plan carries it.
 *
 * The name is part of the candidate and of its JSON ("conv_scratch"), so a saved plan.json says
 * which rule it was planned with and a loader re-plans with the same one. Names:
 *   "im2col"                 the backend-neutral estimate (yp_conv_scratch_im2col): the default,
 *                            what the planner's sweep uses for a GPU it only plans for. The
 *                            planner resolves it itself.
 *   "onednn:T"               the CPU backend's oneDNN convolutions on T threads (T in 1..1024):
 *                            exactly what its conv2d_scratch asks for with T threads, which is
 *                            what the CPU executor checks at init. Resolved by the executor
 *                            library (yp_exec_scratch_resolver in executor/yp_executor.h).
 *   "cuda"                   the CUDA backend's cuDNN convolutions: the conservative bound of
 *                            kernels/yp_cudnn_scratch.h (per conv max(16 MiB, its input + output
 *                            bytes), and its KRSC weights for k > 1), the same with or without a
 *                            GPU, so a plan for the card re-plans to the byte anywhere; the
 *                            executor checks at init that it covers what the card's algorithms
 *                            ask for. Resolved by the executor library too.
 *
 * Why a resolver: the planner does not link the kernels (docs/architecture.md §3), so it cannot turn a
 * backend's name into that backend's rule. The caller passes a yp_scratch_resolver, a small
 * table of one function, that knows its backends' names; the planner asks it for every name
 * other than "im2col". A caller that passes none (NULL) can only plan and load im2col plans;
 * any other name is refused with one line naming the model and the names that caller knows.
 * The resolved rule is kept next to the name in the candidate (yp_candidate_set_scratch) and
 * is never written: only the name travels. */
#ifndef YP_SCRATCH_H
#define YP_SCRATCH_H

#include "yp_schedule.h"

#define YP_SCRATCH_NAME_MAX 32
#define YP_SCRATCH_IM2COL "im2col"

/* A resolved rule: fn(ctx, ...) as yp_sched_opts takes it; fn NULL means im2col. */
typedef struct {
    yp_conv_scratch_fn fn;
    void *ctx;
} yp_scratch_rule;

typedef struct yp_scratch_resolver {
    /* The names it resolves, for messages, e.g. "onednn:T (T: CPU threads, 1..1024)". */
    const char *known;
    /* 0 with *rule set; 1 when name is none of its (rule untouched, err untouched); -1 with err
     * set when the name is one of its but cannot be used (e.g. a thread count out of range). ctx
     * is the resolver's own (below). */
    int (*resolve)(void *ctx, const char *name, yp_scratch_rule *rule, yp_err *err);
    /* What resolve needs besides the name (e.g. the instance a model is asked through), or NULL;
     * a rule resolved may point into it, so it outlives the plans made with that rule. */
    void *ctx;
} yp_scratch_resolver;

/* Resolves name: "im2col" (or "") here, anything else through r (may be NULL). 0, or -1 with err
 * set to one line: `conv scratch model "NAME": <why>; known: im2col, <r->known>`. */
int yp_scratch_resolve(const char *name, const yp_scratch_resolver *r, yp_scratch_rule *rule, yp_err *err);

#endif
