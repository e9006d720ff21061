/* fuzz_ir_load.c - libFuzzer target for the IR loader (graph/ir_load.c).
 * Properties checked on every input:
 *   - yp_ir_load_buffer never crashes, leaks or reads out of bounds (ASan/UBSan, len-bounded input);
 *   - a refused input comes with a non-empty, NUL-terminated message;
 *   - an accepted graph serialises, and that text loads again and serialises to the same bytes
 *     (the writer's output is canonical). */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "yp_ir.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Aborts with a message: libFuzzer records the input as a crash. */
static void fail(const char *what, const char *detail) {
    fprintf(stderr, "fuzz_ir_load: %s%s%s\n", what, detail ? ": " : "", detail ? detail : "");
    abort();
}

static void check_round_trip(const yp_graph *g) {
    char *text = yp_ir_write_string(g);
    if (!text)
        return; /* out of memory is allowed */
    yp_err err;
    err.msg[0] = '\0';
    yp_graph *again = yp_ir_load_buffer(text, strlen(text), "fuzz-roundtrip.json", &err);
    if (!again)
        fail("the writer's output does not load again", err.msg);
    char *text2 = yp_ir_write_string(again);
    if (text2 && strcmp(text, text2) != 0)
        fail("write(load(write(g))) differs from write(g)", NULL);
    free(text2);
    yp_graph_free(again);
    free(text);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    yp_err err;
    memset(err.msg, 0, sizeof err.msg);
    yp_graph *g = yp_ir_load_buffer((const char *)data, size, "fuzz.json", &err);
    if (!g) {
        if (err.msg[0] == '\0' || memchr(err.msg, '\0', sizeof err.msg) == NULL)
            fail("input refused without a message", NULL);
        return 0;
    }
    check_round_trip(g);
    yp_graph_free(g);
    return 0;
}
