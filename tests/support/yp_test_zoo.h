/* yp_test_zoo.h - the model zoo's test list, shared by test_zoo (import, parameter counts) and
 * test_zoo_train (a short CPU training run of each): tests/data/zoo/params.tsv's rows, and the
 * yamls whose modules yoloplan does not build yet with the text their refusal names (each entry
 * must go when its modules land: test_zoo then fails on the import it no longer refuses).
 * Defines: yp_zoo_row, yp_zoo_next, yp_zoo_not_yet. */
#ifndef YP_TEST_ZOO_H
#define YP_TEST_ZOO_H

#include <stdio.h>
#include <string.h>

static const struct { const char *path, *refusal; } yp_zoo_not_yet_list[] = {
    {NULL, NULL}, /* none left: every shipped detection yaml is built */
};

/* The refusal text for a zoo path, or NULL when it must import. */
static inline const char *yp_zoo_not_yet(const char *rel) {
    for (size_t i = 0; yp_zoo_not_yet_list[i].path; i++)
        if (strcmp(yp_zoo_not_yet_list[i].path, rel) == 0) return yp_zoo_not_yet_list[i].refusal;
    return NULL;
}

typedef struct {
    char rel[256];       /* path from the repository root */
    char path[600];      /* the same from YP_TEST_DATA */
    long long official;  /* Ultralytics' parameter count */
} yp_zoo_row;

/* The next row of params.tsv (f opened on it); 0 at the end. */
static inline int yp_zoo_next(FILE *f, yp_zoo_row *r) {
    char line[512];
    while (fgets(line, sizeof line, f)) {
        if (line[0] == '#' || sscanf(line, "%255s %lld", r->rel, &r->official) != 2) continue;
        snprintf(r->path, sizeof r->path, "%s/../../%s", YP_TEST_DATA, r->rel);
        return 1;
    }
    return 0;
}

#endif
