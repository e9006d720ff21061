/* yp_test_published.h - what the tests against published figures share (test_torch_published.c,
 * test_torch_speed.c): a bundled model yaml imported with nc classes, and the median of the
 * errors' absolute values. */
#ifndef YP_TEST_PUBLISHED_H
#define YP_TEST_PUBLISHED_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "yp_yaml.h"

/* models/<name>.yaml with nc classes; prints the importer's message and returns NULL on failure. */
static inline yp_graph *yp_test_model_yaml(const char *name, int nc) {
    char path[256];
    yp_err err;
    snprintf(path, sizeof path, "%s/%s.yaml", YP_MODELS_DIR, name);
    yp_graph *g = yp_yaml_import(path, nc, &err);
    if (!g) fprintf(stderr, "%s: %s\n", path, err.msg);
    return g;
}

static inline int yp_test_cmp_abs(const void *x, const void *y) {
    double a = fabs(*(const double *)x), b = fabs(*(const double *)y);
    return (a > b) - (a < b);
}

/* The median of |e[0..n)| (e is sorted by |e| in place); 0 when n is 0. */
static inline double yp_test_median_abs(double *e, int n) {
    qsort(e, (size_t)n, sizeof *e, yp_test_cmp_abs);
    return n ? (n % 2 ? fabs(e[n / 2]) : (fabs(e[n / 2 - 1]) + fabs(e[n / 2])) / 2) : 0;
}

#endif
