/* fuzz_exec.c - the tiny test IR's executor of the fuzz targets (fuzz_exec.h). */
#include "fuzz_exec.h"

#include <string.h>

#include "fuzz_temp.h"
#include "yp_backend.h"
#include "yp_gpu.h"
#include "yp_ir.h"
#include "yp_plan.h"

static yp_graph *graph;
static yp_plan plan;
static yp_backend *cpu;
static yp_exec exec;

yp_exec *fz_tiny_exec(const char *target) {
    if (graph) return &exec;
    yp_err err;
    yp_gpu gpu;
    char why[256];
    yp_cpu_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.threads = 1;
    graph = yp_ir_load_file(YP_TEST_DATA "/ir/tiny.json", &err);
    if (!graph) fz_fail(target, "cannot load the tiny IR", err.msg);
    cpu = yp_backend_cpu_new(&cfg, why, sizeof why);
    if (!cpu) fz_fail(target, "no CPU backend", why);
    yp_candidate c = yp_candidate_default();
    c.batch = 1, c.img_w = c.img_h = 64, c.mosaic = 0, c.labels_per_image = 4;
    yp_exec_candidate_for(&c, cpu);
    if (yp_gpu_parse("8GB", &gpu, &err) || yp_plan_build(graph, &c, &gpu, 0, 0, &plan, &err) ||
        yp_exec_init(&exec, &plan, cpu, 0, 1, &err))
        fz_fail(target, "cannot make the executor", err.msg);
    return &exec;
}
