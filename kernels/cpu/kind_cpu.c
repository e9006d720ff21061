/* kind_cpu.c - the CPU's row of the kind table (yp_backend_kind.h): specs "cpu" and "cpu:T", its
 * instances (yp_backend_cpu_new), and its conv scratch model "onednn:T", what oneDNN asks for on T
 * threads, which any CPU instance of T threads answers. */
#include <stdio.h>
#include <string.h>

#include "../backend_kinds.h"
#include "yp_cpu.h"

#define MODEL_PREFIX "onednn:"

static int cpu_parse(const char *arg, yp_device_spec *s, char *why, size_t why_len) {
    if (arg && yp_kind_parse_count(arg, YP_CPU_THREADS_MAX, &s->threads))
        return yp_kind_fail(why, why_len, "T of cpu:T is the thread count, an integer in 1..%d", YP_CPU_THREADS_MAX);
    return 0;
}

static yp_backend *cpu_create(const yp_device_spec *s, char *why, size_t why_len) {
    const yp_cpu_config cfg = {s->threads};
    return yp_backend_cpu_new(&cfg, why, why_len);
}

static const yp_ops *cpu_ops(void) { return &yp_cpu_ops; }

/* "onednn:T" with T written plainly (1..1024, no sign, no leading zero); "onednn" alone is its name
 * without the thread count, refused as such. */
static int cpu_model_parse(const char *name, yp_scratch_model *m, char *why, size_t why_len) {
    const size_t n = strlen(MODEL_PREFIX);
    if (strcmp(name, "onednn") && strncmp(name, MODEL_PREFIX, n)) return 1;
    const char *v = strlen(name) > n ? name + n : "";
    if (yp_kind_parse_count(v, YP_CPU_THREADS_MAX, &m->spec.threads))
        return yp_kind_fail(why, why_len, "T must be the CPU thread count, an integer in 1..%d", YP_CPU_THREADS_MAX);
    m->answer = YP_SCRATCH_BY_SPEC;
    return 0;
}

static void cpu_model_needed(const yp_backend *be, char *buf, size_t n) {
    int t = yp_backend_cpu_threads(be);
    if (t > 0) snprintf(buf, n, MODEL_PREFIX "%d", t);
    else snprintf(buf, n, "%s", be->name);
}

static int cpu_spec_matches(const yp_backend *be, const yp_device_spec *s) {
    return s->threads > 0 && yp_backend_cpu_threads(be) == s->threads;
}

const yp_backend_kind yp_kind_cpu = {
    .name = "cpu",
    .label = "CPU",
    .host_memory = 1,
    .elems = YP_ELEM_BIT(YP_ELEM_F32),
    .specs = "cpu:T for T threads",
    .models = "onednn:T (T: CPU threads, 1..1024)",
    .parse = cpu_parse,
    .create = cpu_create,
    .ops = cpu_ops,
    .model_parse = cpu_model_parse,
    .model_needed = cpu_model_needed,
    .spec_matches = cpu_spec_matches,
};
