/* fuzz_plan_load.c - libFuzzer target for plan.json (planner/plan_io.c, yp_plan_load: parse,
 * validate, re-plan from the embedded model and candidate, compare). The input is written to a
 * scratch file plan.json.
 * Properties checked on every input:
 *   - the loader never crashes, leaks or reads out of bounds (ASan/UBSan);
 *   - a refused input comes with a non-empty message;
 *   - an accepted plan passes yp_plan_check (its own consistency check). */
#include <stdint.h>
#include <string.h>

#include "fuzz_temp.h"
#include "yp_plan_io.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const char *path = fz_temp_write("plan.json", data, size);
    yp_err err;
    memset(err.msg, 0, sizeof err.msg);
    yp_plan plan;
    yp_graph *g = NULL;
    if (yp_plan_load(path, &plan, &g, &err)) {
        if (err.msg[0] == '\0') fz_fail("fuzz_plan_load", "input refused without a message", NULL);
        yp_graph_free(g);
        return 0;
    }
    if (yp_plan_check(&plan, &err)) fz_fail("fuzz_plan_load", "a loaded plan fails yp_plan_check", err.msg);
    yp_plan_free(&plan);
    yp_graph_free(g);
    return 0;
}
