/* yp_test_models.h - loads a bundled model IR (models/<name>.json) for a test; prints the loader's
 * message and returns NULL on failure. The caller frees the graph. */
#ifndef YP_TEST_MODELS_H
#define YP_TEST_MODELS_H

#include <stdio.h>

#include "yp_ir.h"

static inline yp_graph *yp_test_model(const char *name) {
    char path[512];
    yp_err err;
    snprintf(path, sizeof path, "%s/%s.json", YP_MODELS_DIR, name);
    yp_graph *g = yp_ir_load_file(path, &err);
    if (!g) fprintf(stderr, "%s\n", err.msg);
    return g;
}

#endif
