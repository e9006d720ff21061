/* fuzz_yaml_import.c - libFuzzer target for the model yaml importer (graph/yaml_import.c,
 * yp_yaml_import). The input is written to a scratch file model.yaml (the importer reads a path).
 * Properties checked on every input:
 *   - the importer never crashes, leaks or reads out of bounds (ASan/UBSan);
 *   - a refused input comes with a non-empty message;
 *   - an accepted model's IR (yp_ir_write_string) loads back with the IR loader: the importer
 *     never writes an IR that `yoloplan import` would save and every other command refuse. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_temp.h"
#include "yp_ir.h"
#include "yp_yaml.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const char *path = fz_temp_write("model.yaml", data, size);
    yp_err err;
    memset(err.msg, 0, sizeof err.msg);
    yp_graph *g = yp_yaml_import(path, 0, &err);
    if (!g) {
        if (err.msg[0] == '\0' || memchr(err.msg, '\0', sizeof err.msg) == NULL)
            fz_fail("fuzz_yaml_import", "input refused without a message", NULL);
        return 0;
    }
    char *text = yp_ir_write_string(g);
    if (text) {
        yp_graph *again = yp_ir_load_buffer(text, strlen(text), "imported.json", &err);
        if (!again) fz_fail("fuzz_yaml_import", "the imported model's IR does not load", err.msg);
        yp_graph_free(again);
        free(text);
    }
    yp_graph_free(g);
    return 0;
}
