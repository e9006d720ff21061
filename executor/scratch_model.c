/* scratch_model.c - the backends' conv scratch models as the planner takes them (planner/yp_scratch.h):
 * the resolver of their names, the model a backend needs now, and a candidate made for a backend (its
 * model, and the fusions its op table runs). The names and what answers them are the backend kinds'
 * (kernels/yp_backend_kind.h); here they become the planner's rules. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <threads.h>

#include "yp_backend_kind.h"
#include "yp_executor.h"

_Static_assert(YP_MODEL_NAME_MAX == YP_SCRATCH_NAME_MAX, "a kind's model name must fit the planner's field");

/* A query as the backends' conv entries describe it. */
static yp_conv_desc desc_of(const yp_conv_query *q) {
    return (yp_conv_desc){.in = {q->in.n, q->in.h, q->in.w, q->in.c}, .out = {q->out.n, q->out.h, q->out.w, q->out.c},
                          .kh = q->kh, .kw = q->kw, .sh = q->sh, .sw = q->sw, .ph = q->ph, .pw = q->pw,
                          .groups = q->groups, .dtype = yp_exec_elem(q->dtype), .wdtype = yp_exec_elem(q->wdtype)};
}

int yp_exec_conv_scratch(void *ctx, const yp_conv_query *q, int64_t *per_image, int64_t *fixed, yp_err *err) {
    yp_backend *be = ctx;
    yp_conv_desc d = desc_of(q);
    if (!be->ops || !be->ops->conv2d_scratch)
        return yp_err_set(err, "backend %s has no conv ops", be->name);
    if (be->ops->conv2d_scratch(be, &d, q->bias, q->backward ? YP_CONV_BACKWARD : YP_CONV_FORWARD, per_image, fixed))
        return yp_err_set(err, "%s", be->last_error(be));
    return 0;
}

/* A model answered without an instance at hand (ctx: its key, yp_scratch_model_key): the bound
 * ("cuda"), or an instance made from its spec for the query and freed after it ("onednn:T": oneDNN's
 * scratchpads depend on the thread count, which an instance fixes, so the answer is T's whatever the
 * caller runs with; the query is pure, so a fresh instance answers as the one that will run the
 * plan, and the rule keeps no state and needs no owner). */
static int key_rule(void *ctx, const yp_conv_query *q, int64_t *per_image, int64_t *fixed, yp_err *err) {
    yp_scratch_model m;
    char why[256];
    yp_conv_desc d = desc_of(q);
    if (yp_scratch_model_from_key((uintptr_t)ctx, &m))
        return yp_err_set(err, "conv scratch rule: %p is no model's key", ctx);
    if (yp_scratch_model_ask(&m, NULL, &d, q->bias, q->backward ? YP_CONV_BACKWARD : YP_CONV_FORWARD, per_image,
                             fixed, why, sizeof why))
        return yp_err_set(err, "%s", why);
    return 0;
}

static void rule_of_key(const yp_scratch_model *m, yp_scratch_rule *rule) {
    rule->fn = key_rule;
    rule->ctx = (void *)yp_scratch_model_key(m);
}

/* The instance that answers card model m: the models' borrowed one, the one they made, or one made
 * now and kept (ms NULL: made only to say why it cannot be used). NULL with why. */
static yp_backend *card_instance(yp_exec_models *ms, const yp_scratch_model *m, char *why, size_t n) {
    if (ms && yp_scratch_model_answered_by(m, ms->be)) return ms->be;
    if (ms && yp_scratch_model_answered_by(m, ms->made)) return ms->made;
    yp_backend *be = yp_scratch_model_instance(m, why, n);
    if (be && !ms) {
        yp_backend_free(be);
        snprintf(why, n, "this machine has that card, but the loader gave no instance to ask it (load with the "
                 "executor's yp_exec_models)");
        return NULL;
    }
    if (be) yp_backend_free(ms->made), ms->made = be;
    return be;
}

/* Any kind's model (yp_scratch_model_parse); 1 for any other name. ctx: the yp_exec_models, or NULL. */
static int resolve(void *ctx, const char *name, yp_scratch_rule *rule, yp_err *err) {
    yp_scratch_model m;
    char why[320];
    int rc = yp_scratch_model_parse(name, &m, why, sizeof why);
    if (rc) return rc < 0 ? yp_err_set(err, "%s", why) : 1;
    if (m.answer != YP_SCRATCH_BY_CARD) {
        rule_of_key(&m, rule);
        return 0;
    }
    yp_backend *be = card_instance(ctx, &m, why, sizeof why);
    if (!be) return yp_err_set(err, "%s", why);
    rule->fn = yp_exec_conv_scratch;
    rule->ctx = be;
    return 0;
}

static yp_scratch_resolver plain = {NULL, resolve, NULL};
static once_flag plain_once = ONCE_FLAG_INIT;

static void plain_init(void) { plain.known = yp_scratch_models_known(); }

const yp_scratch_resolver *yp_exec_scratch_resolver(void) {
    call_once(&plain_once, plain_init);
    return &plain;
}

void yp_exec_models_init(yp_exec_models *m, yp_backend *be) {
    memset(m, 0, sizeof *m);
    m->r = (yp_scratch_resolver){yp_scratch_models_known(), resolve, m};
    m->be = be;
}

void yp_exec_models_free(yp_exec_models *m) {
    yp_backend_free(m->made);
    m->made = NULL;
}

void yp_exec_card_model(yp_backend *be, char *buf, size_t n) { yp_scratch_model_card(be, buf, n); }

void yp_exec_scratch_model(const yp_backend *be, char *buf, size_t n) { yp_scratch_model_needed(be, buf, n); }

/* The model yp_scratch_model_of names: one be answers itself ("onednn:T" of a CPU instance, a CUDA
 * instance's card) is asked of be, so the plan is exact for it (a plan.json of a card's model
 * re-plans where that card is; the bound "cuda", with --scratch cuda, re-plans anywhere); a bound (a
 * stand-in instance that cannot name its device) is asked of no device; a backend of no kind is
 * asked under its own name. The alignment: the largest of the candidate's, the backend's and
 * YP_ALIGN_DEFAULT (all powers of two, so it is a multiple of each; the CPU's 64 leaves 256, so
 * CPU plans keep their figures). The fusions: those its op table runs. */
void yp_exec_candidate_for(yp_candidate *c, yp_backend *be) {
    yp_scratch_model m;
    c->scratch_rule.fn = yp_exec_conv_scratch;
    c->scratch_rule.ctx = be;
    if (yp_scratch_model_of(be, &m)) {
        snprintf(c->scratch, sizeof c->scratch, "%s", be->name);
    } else {
        snprintf(c->scratch, sizeof c->scratch, "%s", m.name);
        if (!yp_scratch_model_answered_by(&m, be)) rule_of_key(&m, &c->scratch_rule);
    }
    int64_t a = (int64_t)be->alignment > YP_ALIGN_DEFAULT ? (int64_t)be->alignment : YP_ALIGN_DEFAULT;
    if (c->alignment < a) c->alignment = a;
    c->fusions = yp_exec_fusions(be);
}

/* The op table of the model's kind, read without an instance (none for a name of no kind). */
static const yp_ops *model_ops(const char *model) {
    yp_scratch_model m;
    return yp_scratch_model_parse(model, &m, NULL, 0) ? NULL : m.kind->ops();
}

unsigned yp_exec_model_fusions(const char *model) {
    yp_backend table = {.ops = model_ops(model)};
    return yp_exec_fusions(&table);
}

unsigned yp_exec_model_precisions(const char *model) {
    yp_scratch_model m;
    if (yp_scratch_model_parse(model, &m, NULL, 0)) return (1u << YP_PREC_COUNT) - 1;
    return yp_exec_kind_precisions(m.kind);
}

unsigned yp_exec_kind_precisions(const yp_backend_kind *kind) {
    yp_ops elems = {.elems = kind->elems};
    yp_backend table = {.ops = &elems};
    return yp_exec_precisions(&table);
}
