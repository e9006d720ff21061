/* fuzz_checkpoint.c - libFuzzer target for checkpoints: the safetensors reader
 * (executor/io/safetensors.c: yp_st_open, then every tensor read, found by name and every metadata
 * key looked up) and the checkpoint readers on top (executor/io/checkpoint.c: yp_ckpt_read_info,
 * yp_ckpt_load_weights and yp_ckpt_resume into an executor of the tiny test IR
 * (tests/data/ir/tiny.json) at batch 1, 64 px, on the CPU backend, made once). The input is
 * written to a scratch file ckpt.safetensors.
 * Properties checked on every input:
 *   - no reader crashes, leaks or reads out of bounds (ASan/UBSan);
 *   - a refusal comes with a non-empty message;
 *   - an opened file's entries lie inside the file, and each is found again by its name. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_temp.h"
#include "yp_backend.h"
#include "yp_checkpoint.h"
#include "yp_executor.h"
#include "yp_gpu.h"
#include "yp_ir.h"
#include "yp_plan.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static yp_graph *graph;
static yp_plan plan;
static yp_backend *cpu;
static yp_exec exec;

static void make_exec(void) {
    yp_err err;
    yp_gpu gpu;
    char why[256];
    yp_cpu_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.threads = 1;
    graph = yp_ir_load_file(YP_TEST_DATA "/ir/tiny.json", &err);
    if (!graph) fz_fail("fuzz_checkpoint", "cannot load the tiny IR", err.msg);
    cpu = yp_backend_cpu_new(&cfg, why, sizeof why);
    if (!cpu) fz_fail("fuzz_checkpoint", "no CPU backend", why);
    yp_candidate c = yp_candidate_default();
    c.batch = 1, c.img_w = c.img_h = 64, c.mosaic = 0, c.labels_per_image = 4;
    yp_exec_candidate_for(&c, cpu);
    if (yp_gpu_parse("8GB", &gpu, &err) || yp_plan_build(graph, &c, &gpu, 0, 0, &plan, &err) ||
        yp_exec_init(&exec, &plan, cpu, 0, 1, &err))
        fz_fail("fuzz_checkpoint", "cannot make the executor", err.msg);
}

static void refused(const yp_err *err, const char *what) {
    if (err->msg[0] == '\0') fz_fail("fuzz_checkpoint", "refused without a message", what);
}

static void read_all(const char *path) {
    yp_st_file f;
    yp_err err;
    err.msg[0] = '\0';
    if (yp_st_open(&f, path, &err)) {
        refused(&err, "yp_st_open");
        yp_st_close(&f);
        return;
    }
    for (int i = 0; i < f.n; i++) {
        const yp_st_entry *e = &f.e[i];
        if (e->begin < 0 || e->end < e->begin || f.data_start + e->end > f.file_bytes)
            fz_fail("fuzz_checkpoint", "an entry outside the file", e->name);
        if (yp_st_find(&f, e->name) != i) fz_fail("fuzz_checkpoint", "an entry not found by its name", e->name);
        void *buf = malloc((size_t)(e->end - e->begin) + 1);
        if (!buf) continue;
        err.msg[0] = '\0';
        if (yp_st_read(&f, i, buf, &err)) refused(&err, "yp_st_read");
        free(buf);
    }
    for (int i = 0; i < f.n_meta; i++)
        if (yp_st_meta(&f, f.meta_key[i]) == NULL) fz_fail("fuzz_checkpoint", "a metadata key not found", f.meta_key[i]);
    yp_st_close(&f);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (!graph) make_exec();
    const char *path = fz_temp_write("ckpt.safetensors", data, size);
    read_all(path);

    yp_err err;
    yp_ckpt_info info;
    err.msg[0] = '\0';
    if (yp_ckpt_read_info(path, &info, &err) == 0) yp_ckpt_info_free(&info);
    else refused(&err, "yp_ckpt_read_info");

    yp_ckpt_transfer tr;
    err.msg[0] = '\0';
    if (yp_ckpt_load_weights(&exec, path, NULL, &tr, &err)) refused(&err, "yp_ckpt_load_weights");
    err.msg[0] = '\0';
    if (yp_ckpt_load_eval_weights(&exec, path, NULL, &tr, &err)) refused(&err, "yp_ckpt_load_eval_weights");
    err.msg[0] = '\0';
    if (yp_ckpt_resume(&exec, path, &info, &err) == 0) yp_ckpt_info_free(&info);
    else refused(&err, "yp_ckpt_resume");
    return 0;
}
