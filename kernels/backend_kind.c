/* backend_kind.c - the kind table (yp_backend_kind.h): device specs routed to their kind's row,
 * instances made from them, and conv scratch models parsed, named and answered through the row of
 * the kind that owns them. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <threads.h>

#include "backend_kinds.h"

static const yp_backend_kind *const kinds[] = {&yp_kind_cpu, &yp_kind_cuda};
#define N_KINDS ((int)(sizeof kinds / sizeof kinds[0]))

int yp_kind_fail(char *why, size_t why_len, const char *fmt, ...) {
    if (why && why_len > 0) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(why, why_len, fmt, ap);
        va_end(ap);
    }
    return -1;
}

int yp_kind_parse_count(const char *v, int max, int *out) {
    long t = 0;
    int ok = v && v[0] >= '1' && v[0] <= '9';
    for (const char *p = v; ok && *p; p++) {
        ok = *p >= '0' && *p <= '9';
        t = t * 10 + (*p - '0');
        ok = ok && t <= max;
    }
    if (!ok) return -1;
    *out = (int)t;
    return 0;
}

/* ---------------------------------------------------------------- device specs */

/* "expected cpu or cuda (or cpu:T for T threads, cuda:N ...)": every kind's name, then its specs. */
static int spec_refused(char *why, size_t why_len) {
    char names[64] = "", specs[256] = "";
    for (int k = 0; k < N_KINDS; k++) {
        snprintf(names + strlen(names), sizeof names - strlen(names), "%s%s", k ? " or " : "", kinds[k]->name);
        snprintf(specs + strlen(specs), sizeof specs - strlen(specs), "%s%s", k ? ", " : "", kinds[k]->specs);
    }
    return yp_kind_fail(why, why_len, "expected %s (or %s)", names, specs);
}

int yp_device_spec_parse(const char *text, yp_device_spec *s, char *why, size_t why_len) {
    memset(s, 0, sizeof *s);
    if (!text) return spec_refused(why, why_len);
    const char *colon = strchr(text, ':');
    size_t n = colon ? (size_t)(colon - text) : strlen(text);
    for (int k = 0; k < N_KINDS; k++) {
        const yp_backend_kind *kind = kinds[k];
        if (strlen(kind->name) != n || strncmp(text, kind->name, n)) continue;
        s->kind = kind;
        return kind->parse(colon ? colon + 1 : NULL, s, why, why_len);
    }
    for (int k = 0; k < N_KINDS; k++) /* train.py's bare device numbers */
        if (kinds[k]->numbers && text[0] >= '0' && text[0] <= '9') {
            s->kind = kinds[k];
            return kinds[k]->parse(text, s, why, why_len);
        }
    return spec_refused(why, why_len);
}

int yp_device_spec_adopt(yp_device_spec *s, const yp_scratch_model *m) {
    if (!s->kind || m->kind != s->kind || m->answer != YP_SCRATCH_BY_SPEC || m->spec.threads == s->threads) return 0;
    s->threads = m->spec.threads;
    return 1;
}

yp_backend *yp_backend_new_spec(const yp_device_spec *s, char *why, size_t why_len) {
    if (!s || !s->kind) {
        spec_refused(why, why_len);
        return NULL;
    }
    if (s->n_devices > 1) {
        char list[128] = "";
        for (int i = 0; i < s->n_devices; i++)
            snprintf(list + strlen(list), sizeof list - strlen(list), "%s%d", i ? "," : "", s->devices[i]);
        yp_kind_fail(why, why_len, "%d devices (%s): several devices are not supported yet; give one, e.g. %d",
                     s->n_devices, list, s->devices[0]);
        return NULL;
    }
    return s->kind->create(s, why, why_len);
}

yp_backend *yp_backend_new(const char *spec, char *why, size_t why_len) {
    yp_device_spec s;
    if (yp_device_spec_parse(spec, &s, why, why_len)) return NULL;
    return yp_backend_new_spec(&s, why, why_len);
}

const yp_backend_kind *yp_backend_kind_of(const yp_backend *be) {
    for (int k = 0; be && be->name && k < N_KINDS; k++)
        if (!strcmp(be->name, kinds[k]->name)) return kinds[k];
    return NULL;
}

/* ---------------------------------------------------------------- scratch models */

int yp_scratch_model_parse(const char *name, yp_scratch_model *m, char *why, size_t why_len) {
    memset(m, 0, sizeof *m);
    if (!name || strlen(name) >= sizeof m->name) return 1;
    for (int k = 0; k < N_KINDS; k++) {
        int rc = kinds[k]->model_parse(name, m, why, why_len);
        if (rc == 1) continue;
        m->kind = kinds[k];
        m->spec.kind = m->answer == YP_SCRATCH_BY_SPEC ? kinds[k] : NULL;
        snprintf(m->name, sizeof m->name, "%s", name);
        return rc;
    }
    return 1;
}

static char known[256];
static once_flag known_once = ONCE_FLAG_INIT;

static void known_init(void) {
    for (int k = 0; k < N_KINDS; k++)
        snprintf(known + strlen(known), sizeof known - strlen(known), "%s%s", k ? ", " : "", kinds[k]->models);
}

const char *yp_scratch_models_known(void) {
    call_once(&known_once, known_init);
    return known;
}

void yp_scratch_model_needed(const yp_backend *be, char *buf, size_t n) {
    const yp_backend_kind *kind = yp_backend_kind_of(be);
    if (kind) kind->model_needed(be, buf, n);
    else snprintf(buf, n, "%s", be->name ? be->name : "");
}

void yp_scratch_model_card(yp_backend *be, char *buf, size_t n) {
    const yp_backend_kind *kind = yp_backend_kind_of(be);
    if (n > 0) buf[0] = 0;
    if (kind && kind->model_card) kind->model_card(be, buf, n);
}

int yp_scratch_model_of(yp_backend *be, yp_scratch_model *m) {
    char name[YP_MODEL_NAME_MAX];
    if (!yp_backend_kind_of(be)) return -1;
    yp_scratch_model_card(be, name, sizeof name);
    if (!name[0]) yp_scratch_model_needed(be, name, sizeof name);
    return yp_scratch_model_parse(name, m, NULL, 0) ? -1 : 0;
}

int yp_scratch_model_answered_by(const yp_scratch_model *m, yp_backend *be) {
    if (!be || yp_backend_kind_of(be) != m->kind) return 0;
    if (m->answer == YP_SCRATCH_BY_SPEC) return m->kind->spec_matches && m->kind->spec_matches(be, &m->spec);
    if (m->answer != YP_SCRATCH_BY_CARD) return 0;
    char here[YP_MODEL_NAME_MAX];
    yp_scratch_model_card(be, here, sizeof here);
    return here[0] && !strcmp(here, m->name);
}

yp_backend *yp_scratch_model_instance(const yp_scratch_model *m, char *why, size_t why_len) {
    char reason[256] = "", here[YP_MODEL_NAME_MAX] = "";
    yp_device_spec s;
    yp_backend *be = NULL;
    if (!yp_device_spec_parse(m->kind->name, &s, reason, sizeof reason))
        be = yp_backend_new_spec(&s, reason, sizeof reason);
    if (yp_scratch_model_answered_by(m, be)) return be;
    if (be) yp_scratch_model_card(be, here, sizeof here);
    yp_backend_free(be);
    if (m->kind->card_refused) m->kind->card_refused(here, reason, why, why_len);
    else yp_kind_fail(why, why_len, "no %s instance answers it", m->kind->label);
    return NULL;
}

int yp_scratch_model_ask(const yp_scratch_model *m, yp_backend *be, const yp_conv_desc *d, int has_bias,
                         yp_conv_stage st, int64_t *per_image, int64_t *fixed, char *why, size_t why_len) {
    if (m->answer == YP_SCRATCH_BOUND && m->kind->bound) {
        m->kind->bound(d, st, per_image, fixed);
        return 0;
    }
    yp_backend *made = NULL;
    if (!yp_scratch_model_answered_by(m, be)) {
        if (m->answer != YP_SCRATCH_BY_SPEC)
            return yp_kind_fail(why, why_len, "%s: no instance that answers it was given", m->name);
        if (!(be = made = yp_backend_new_spec(&m->spec, why, why_len))) return -1;
    }
    int rc = 0;
    if (!be->ops || !be->ops->conv2d_scratch) rc = yp_kind_fail(why, why_len, "backend %s has no conv ops", be->name);
    else if (be->ops->conv2d_scratch(be, d, has_bias, st, per_image, fixed))
        rc = yp_kind_fail(why, why_len, "%s", be->last_error(be));
    yp_backend_free(made);
    return rc;
}

/* A key: the kind's index + 1 in the bits above 16, the spec's thread count below. */
uintptr_t yp_scratch_model_key(const yp_scratch_model *m) {
    if (m->answer == YP_SCRATCH_BY_CARD) return 0;
    for (int k = 0; k < N_KINDS; k++)
        if (kinds[k] == m->kind) return ((uintptr_t)(k + 1) << 16) | (uintptr_t)(m->spec.threads & 0xffff);
    return 0;
}

int yp_scratch_model_from_key(uintptr_t key, yp_scratch_model *m) {
    int k = (int)(key >> 16) - 1, threads = (int)(key & 0xffff);
    if (k < 0 || k >= N_KINDS) return -1;
    memset(m, 0, sizeof *m);
    m->kind = kinds[k];
    m->answer = threads > 0 ? YP_SCRATCH_BY_SPEC : YP_SCRATCH_BOUND;
    if (threads > 0) m->spec = (yp_device_spec){.kind = kinds[k], .threads = threads};
    return 0;
}
