/* fuzz_checkpoint.c - libFuzzer target for checkpoints: the safetensors reader
 * (executor/io/safetensors.c: yp_st_open, then every tensor read, found by name and every metadata
 * key looked up) and the checkpoint readers on top (executor/io/checkpoint.c: yp_ckpt_read_info,
 * yp_ckpt_load_weights and yp_ckpt_resume into an executor of the tiny test IR
 * (tests/data/ir/tiny.json) at batch 1, 64 px, on the CPU backend, made once: fuzz_exec.h). The input is
 * written to a scratch file ckpt.safetensors.
 * Properties checked on every input:
 *   - no reader crashes, leaks or reads out of bounds (ASan/UBSan);
 *   - a refusal comes with a non-empty message;
 *   - an opened file's entries lie inside the file, and each is found again by its name. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_exec.h"
#include "fuzz_temp.h"
#include "yp_checkpoint.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

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
    yp_exec *exec = fz_tiny_exec("fuzz_checkpoint");
    const char *path = fz_temp_write("ckpt.safetensors", data, size);
    read_all(path);

    yp_err err;
    yp_ckpt_info info;
    err.msg[0] = '\0';
    if (yp_ckpt_read_info(path, &info, &err) == 0) yp_ckpt_info_free(&info);
    else refused(&err, "yp_ckpt_read_info");

    yp_ckpt_transfer tr;
    err.msg[0] = '\0';
    if (yp_ckpt_load_weights(exec, path, NULL, &tr, &err)) refused(&err, "yp_ckpt_load_weights");
    err.msg[0] = '\0';
    if (yp_ckpt_load_eval_weights(exec, path, NULL, &tr, &err)) refused(&err, "yp_ckpt_load_eval_weights");
    err.msg[0] = '\0';
    if (yp_ckpt_resume(exec, path, &info, &err) == 0) yp_ckpt_info_free(&info);
    else refused(&err, "yp_ckpt_resume");
    return 0;
}
