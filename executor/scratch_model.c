/* scratch_model.c - the backends' conv scratch models by name (planner/yp_scratch.h): the
 * resolver the planner asks for "onednn:T" and "cuda", the model a backend needs now, and a
 * candidate made for a backend (its model, and the fusions its op table runs). */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "yp_cudnn_scratch.h"
#include "yp_executor.h"

#define ONEDNN_PREFIX "onednn:"
#define ONEDNN_MAX_THREADS 1024
#define CUDA_MODEL "cuda"

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

/* "onednn:T": a CPU instance with T threads asked (ctx holds T). oneDNN's scratchpads depend on
 * the thread count, which an instance fixes, so the answer is T's whatever the caller runs with.
 * The instance lives for one query: the rule keeps no state and needs no owner (the query is pure,
 * so a fresh instance answers as the one that will run the plan). */
static int onednn_rule(void *ctx, const yp_conv_query *q, int64_t *per_image, int64_t *fixed, yp_err *err) {
    char why[256];
    const yp_cpu_config cfg = {(int)(intptr_t)ctx};
    yp_backend *be = yp_backend_cpu_new(&cfg, why, sizeof why);
    if (!be) return yp_err_set(err, "%s", why);
    int rc = yp_exec_conv_scratch(be, q, per_image, fixed, err);
    yp_backend_free(be);
    return rc;
}

/* "cuda": the CUDA backend's bound (kernels/yp_cudnn_scratch.h), the same on every card and
 * without one, so a plan made for a GPU re-plans to the byte on a machine without it. */
static int cuda_rule(void *ctx, const yp_conv_query *q, int64_t *per_image, int64_t *fixed, yp_err *err) {
    (void)ctx, (void)err;
    yp_conv_desc d = desc_of(q);
    yp_cudnn_scratch_bound(&d, q->backward ? YP_CONV_BACKWARD : YP_CONV_FORWARD, per_image, fixed);
    return 0;
}

/* "cuda:CARD": what cuDNN chooses on that card, asked through a CUDA instance's conv2d_scratch
 * (the chosen algorithm's workspace, exact for the card). CARD is the device's name as a slug
 * (lowercase letters and digits, '-' for the rest: "nvidia-h200"), so a plan names the card its
 * figures are for, and a loader on another machine refuses it rather than trust them. */
static void card_slug(const char *device, char *out, size_t n) {
    size_t k = 0;
    for (const char *p = device; *p && k + 1 < n; p++) {
        char c = *p >= 'A' && *p <= 'Z' ? (char)(*p - 'A' + 'a') : *p;
        int alnum = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
        if (alnum) out[k++] = c;
        else if (k > 0 && out[k - 1] != '-') out[k++] = '-';
    }
    while (k > 0 && out[k - 1] == '-') k--;
    out[k] = 0;
}

void yp_exec_card_model(yp_backend *be, char *buf, size_t n) {
    char name[128], slug[YP_SCRATCH_NAME_MAX - sizeof CUDA_MODEL]; /* room for "cuda:" and the NUL */
    int64_t total, free_b;
    buf[0] = 0;
    if (!be->device_info || be->device_info(be, name, sizeof name, &total, &free_b)) return;
    card_slug(name, slug, sizeof slug);
    snprintf(buf, n, "%s:%s", CUDA_MODEL, slug);
}

/* The process's CUDA instance for resolving "cuda:CARD" on load (made once, kept for the process:
 * the CUDA context is the process's either way), or NULL with why set. */
static yp_backend *card_instance(char *why, size_t n) {
    static yp_backend *be;
    static char reason[256];
    if (!be && !reason[0]) be = yp_backend_cuda_new(0, reason, sizeof reason);
    if (!be) snprintf(why, n, "%s", reason);
    return be;
}

static int resolve_card(const char *name, yp_scratch_rule *rule, yp_err *err) {
    char why[256], here[YP_SCRATCH_NAME_MAX];
    yp_backend *be = card_instance(why, sizeof why);
    if (!be)
        return yp_err_set(err, "the conv workspaces cuDNN chose on that card, and this machine has no usable GPU "
                          "(%s); plan again here, or with --scratch cuda for a plan that re-plans anywhere", why);
    yp_exec_card_model(be, here, sizeof here);
    if (strcmp(here, name))
        return yp_err_set(err, "the conv workspaces cuDNN chose on that card, and this machine's GPU is %s; plan "
                          "again here, or with --scratch cuda for a plan that re-plans anywhere",
                          here[0] ? here + strlen(CUDA_MODEL ":") : "unnamed");
    rule->fn = yp_exec_conv_scratch;
    rule->ctx = be;
    return 0;
}

/* "cuda", "cuda:CARD", or "onednn:T" with T a thread count written plainly (1..1024, no sign, no
 * leading zero); 1 for any other name. */
static int resolve(const char *name, yp_scratch_rule *rule, yp_err *err) {
    const size_t n = strlen(ONEDNN_PREFIX);
    if (!strcmp(name, CUDA_MODEL)) {
        rule->fn = cuda_rule;
        rule->ctx = NULL;
        return 0;
    }
    if (!strncmp(name, CUDA_MODEL ":", strlen(CUDA_MODEL ":"))) return resolve_card(name, rule, err);
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
    static const yp_scratch_resolver r = {"onednn:T (T: CPU threads, 1..1024), cuda, cuda:CARD (that card's cuDNN)",
                                          resolve};
    return &r;
}

void yp_exec_scratch_model(const yp_backend *be, char *buf, size_t n) {
    int t = yp_backend_cpu_threads(be);
    if (t > 0) snprintf(buf, n, ONEDNN_PREFIX "%d", t);
    else snprintf(buf, n, "%s", be->name);
}

/* The rule under the model's name: for a CPU instance its own conv2d_scratch (the same answers as
 * the resolved "onednn:T" rule, without an instance per query); for a CUDA instance that names its
 * card, "cuda:CARD", its own conv2d_scratch too: the workspace of the algorithm cuDNN picks for
 * each conv on this card, so the plan is exact for it (a plan.json of it re-plans where that card
 * is; the bound "cuda", with --scratch cuda, re-plans anywhere); a stand-in instance that cannot
 * name a device gets the "cuda" bound. The alignment: the
 * largest of the candidate's, the backend's and YP_ALIGN_DEFAULT (all powers of two, so it is a
 * multiple of each; the CPU's 64 leaves 256, so CPU plans keep their figures). The fusions: those
 * its op table runs. */
void yp_exec_candidate_for(yp_candidate *c, yp_backend *be) {
    yp_exec_scratch_model(be, c->scratch, sizeof c->scratch);
    c->scratch_rule.fn = yp_exec_conv_scratch;
    c->scratch_rule.ctx = be;
    if (!strcmp(c->scratch, CUDA_MODEL)) {
        yp_exec_card_model(be, c->scratch, sizeof c->scratch);
        if (!c->scratch[0]) snprintf(c->scratch, sizeof c->scratch, "%s", CUDA_MODEL), c->scratch_rule.fn = cuda_rule,
                            c->scratch_rule.ctx = NULL;
    }
    int64_t a = (int64_t)be->alignment > YP_ALIGN_DEFAULT ? (int64_t)be->alignment : YP_ALIGN_DEFAULT;
    if (c->alignment < a) c->alignment = a;
    c->fusions = yp_exec_fusions(be);
}

/* A CPU instance of one thread asked: every CPU instance shares one op table. "cuda": the CUDA
 * op table, which needs no device to read (none when the library was built without CUDA). */
unsigned yp_exec_model_fusions(const char *model) {
    if (model && (!strcmp(model, CUDA_MODEL) || !strncmp(model, CUDA_MODEL ":", strlen(CUDA_MODEL ":")))) {
        yp_backend table = {.name = CUDA_MODEL, .ops = yp_backend_cuda_ops()};
        return yp_exec_fusions(&table);
    }
    if (!model || strncmp(model, ONEDNN_PREFIX, strlen(ONEDNN_PREFIX))) return 0;
    const yp_cpu_config cfg = {1};
    yp_backend *be = yp_backend_cpu_new(&cfg, NULL, 0);
    unsigned f = yp_exec_fusions(be);
    yp_backend_free(be);
    return f;
}
