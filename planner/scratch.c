/* scratch.c - conv scratch models by name (yp_scratch.h) and the candidate's choice of one. */
#include <stdio.h>
#include <string.h>

#include "yp_candidate.h"

static int is_im2col(const char *name) { return !name[0] || !strcmp(name, YP_SCRATCH_IM2COL); }

int yp_scratch_resolve(const char *name, const yp_scratch_resolver *r, yp_scratch_rule *rule, yp_err *err) {
    char known[160];
    snprintf(known, sizeof known, "%s%s%s", YP_SCRATCH_IM2COL, r && r->known ? ", " : "",
             r && r->known ? r->known : "");
    if (!name) return yp_err_set(err, "conv scratch model: none given; known: %s", known);
    if (strlen(name) >= YP_SCRATCH_NAME_MAX)
        return yp_err_set(err, "conv scratch model \"%.40s...\": too long; known: %s", name, known);
    if (is_im2col(name)) {
        rule->fn = NULL, rule->ctx = NULL;
        return 0;
    }
    yp_err why = {{0}};
    int rc = r && r->resolve ? r->resolve(r->ctx, name, rule, &why) : 1;
    if (rc == 0) return 0;
    if (rc < 0) return yp_err_set(err, "conv scratch model \"%s\": %s; known: %s", name, why.msg, known);
    return yp_err_set(err, "conv scratch model \"%s\": unknown%s; known: %s", name,
                      r ? "" : " to this program (the backends' models need the executor's resolver)", known);
}

int yp_candidate_set_scratch(yp_candidate *c, const char *name, const yp_scratch_resolver *r, yp_err *err) {
    yp_scratch_rule rule;
    if (yp_scratch_resolve(name, r, &rule, err)) return -1;
    snprintf(c->scratch, sizeof c->scratch, "%s", is_im2col(name) ? YP_SCRATCH_IM2COL : name);
    c->scratch_rule = rule;
    return 0;
}

const char *yp_candidate_scratch_name(const yp_candidate *c) { return c->scratch[0] ? c->scratch : YP_SCRATCH_IM2COL; }

int yp_candidate_check_scratch(const yp_candidate *c, yp_err *err) {
    if (!memchr(c->scratch, 0, sizeof c->scratch))
        return yp_err_set(err, "conv scratch model: the name is not terminated");
    int im2col = is_im2col(c->scratch);
    if (!im2col && !c->scratch_rule.fn)
        return yp_err_set(err, "conv scratch model \"%s\": not resolved (set it with yp_candidate_set_scratch and "
                          "the resolver of the backend that knows it)", c->scratch);
    if (im2col && c->scratch_rule.fn && c->scratch_rule.fn != yp_conv_scratch_im2col)
        return yp_err_set(err, "conv scratch model \"im2col\" with another rule attached: name the model the rule "
                          "belongs to (yp_candidate_set_scratch)");
    return 0;
}
