/* fuzz_pt.c - libFuzzer target for PyTorch .pt files (executor/io/yp_pt.h). An input that starts as
 * a zip ("PK") is written to a scratch file in.pt and read whole: yp_pt_open, every entry found by
 * its name and read (those up to 1 MiB), then yp_ckpt_load_weights and yp_ckpt_load_eval_weights into
 * an executor of the tiny test IR (tests/data/ir/tiny.json; batch 1, 64 px, CPU, made once). Any
 * other input is a bare pickle (data.pkl): the pickle machine runs it and the state dict is looked
 * for (pt_internal.h), so mutations reach the machine without a zip's CRCs in the way.
 * Properties checked on every input:
 *   - nothing crashes, leaks or reads out of bounds (ASan/UBSan), and nothing a pickle names runs;
 *   - a refusal comes with a one-line message naming the file;
 *   - an opened file's entries have begin <= end within the tensor cap, unique names, each found
 *     again by its name; a bare pickle's state dict holds TENSOR values only. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_exec.h"
#include "fuzz_temp.h"
#include "pt_internal.h"
#include "yp_checkpoint.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void refused(const yp_err *err, const char *path, const char *what) {
    if (err->msg[0] == '\0') fz_fail("fuzz_pt", "refused without a message", what);
    if (strncmp(err->msg, path, strlen(path))) fz_fail("fuzz_pt", "a refusal that does not name the file", err->msg);
    if (strchr(err->msg, '\n')) fz_fail("fuzz_pt", "a refusal of more than one line", err->msg);
}

static void read_pt(const char *path, yp_exec *exec) {
    yp_pt_file f;
    yp_err err;
    err.msg[0] = '\0';
    if (yp_pt_open(&f, path, &err)) {
        refused(&err, path, "yp_pt_open");
        yp_pt_close(&f);
        return;
    }
    for (int i = 0; i < f.n; i++) {
        const yp_st_entry *e = &f.e[i];
        int64_t bytes = e->end - e->begin;
        if (e->begin < 0 || bytes < 0 || bytes > YP_PT_MAX_TENSOR_BYTES)
            fz_fail("fuzz_pt", "an entry's byte range is negative or above the cap", e->name);
        if (yp_pt_find(&f, e->name) != i) fz_fail("fuzz_pt", "an entry not found by its name", e->name);
        void *buf = bytes <= (1 << 20) ? malloc((size_t)bytes + 1) : NULL;
        if (!buf) continue;
        err.msg[0] = '\0';
        if (yp_pt_read(&f, i, buf, &err)) refused(&err, path, "yp_pt_read");
        free(buf);
    }
    yp_pt_close(&f);
    yp_ckpt_transfer tr;
    err.msg[0] = '\0';
    if (yp_ckpt_load_weights(exec, path, NULL, &tr, &err)) refused(&err, path, "yp_ckpt_load_weights");
    err.msg[0] = '\0';
    if (yp_ckpt_load_eval_weights(exec, path, NULL, &tr, &err)) refused(&err, path, "yp_ckpt_load_eval_weights");
}

static void run_pickle(const uint8_t *data, size_t size) {
    pt_vm vm;
    yp_err err;
    err.msg[0] = '\0';
    if (pt_vm_run(&vm, "in.pkl", data, size, &err)) {
        refused(&err, "in.pkl", "pt_vm_run");
        pt_vm_free(&vm);
        return;
    }
    if (vm.root < 0 || vm.root >= vm.nv) fz_fail("fuzz_pt", "a pickle run with no root value", NULL);
    pt_named *t = NULL;
    int n = 0;
    char what[256];
    err.msg[0] = '\0';
    if (pt_state_dict(&vm, &t, &n, what, sizeof what, &err)) {
        refused(&err, "in.pkl", "pt_state_dict");
    } else {
        for (int i = 0; i < n; i++)
            if (vm.v[t[i].t].kind != PT_TENSOR)
                fz_fail("fuzz_pt", "a state dict entry that is not a tensor", t[i].name);
    }
    pt_named_free(t, n);
    pt_vm_free(&vm);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    yp_exec *exec = fz_tiny_exec("fuzz_pt");
    if (size >= 2 && data[0] == 'P' && data[1] == 'K')
        read_pt(fz_temp_write("in.pt", data, size), exec);
    else
        run_pickle(data, size);
    return 0;
}
