/* dataset_names.c - yp_dataset_names (yp_dataset.h): the class names of a data.yaml, for the
 * validation table. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "yp_dataset.h"
#include "yaml_tree.h"

void yp_dataset_names_free(char **names, int nc) {
    for (int i = 0; names && i < nc; i++) free(names[i]);
    free(names);
}

int yp_dataset_names(const char *data_yaml, int nc, char ***out, yp_err *err) {
    *out = NULL;
    if (nc < 1) return yp_err_set(err, "%s: no classes", data_yaml);
    yp_ynode *root = yp_yn_read(data_yaml, err);
    if (!root) return -1;
    char **names = calloc((size_t)nc, sizeof *names);
    const yp_ynode *n = root->kind == YP_YN_MAP ? yp_yn_map_get(root, "names") : NULL;
    int rc = names ? 0 : yp_err_set(err, "%s: out of memory", data_yaml);
    for (int i = 0; !rc && n && n->kind == YP_YN_SEQ && i < n->n && i < nc; i++)
        if (n->kids[i]->kind == YP_YN_SCALAR && !(names[i] = strdup(n->kids[i]->text))) rc = -1;
    for (int i = 0; !rc && n && n->kind == YP_YN_MAP && i + 1 < n->n; i += 2) {
        long k;
        if (!yp_yn_long(n->kids[i], &k) && k >= 0 && k < nc && n->kids[i + 1]->kind == YP_YN_SCALAR && !names[k] &&
            !(names[k] = strdup(n->kids[i + 1]->text)))
            rc = -1;
    }
    for (int i = 0; !rc && i < nc; i++) { /* no names (nc only): the class numbers, as YOLOv5's class0 .. */
        char buf[24];
        snprintf(buf, sizeof buf, "class%d", i);
        if (!names[i] && !(names[i] = strdup(buf))) rc = -1;
    }
    yp_yn_free(root);
    if (rc) {
        yp_dataset_names_free(names, nc);
        return yp_err_set(err, "%s: out of memory reading names", data_yaml);
    }
    *out = names;
    return 0;
}
