/* graph_edit.c - edits of a loaded graph (yp_graph.h): its class count, its anchors per level, and
 * the copy to edit when the original must stay. */
#include <stdlib.h>
#include <string.h>

#include "yp_ir.h"

int yp_graph_set_nc(yp_graph *g, int nc, const char *file, yp_err *err) {
    if (nc < 1 || nc > YP_GRAPH_MAX_NC)
        return yp_err_set(err, "%s: nc %d is out of range; use 1..%d", file, nc, YP_GRAPH_MAX_NC);
    if (nc == g->nc) return 0;
    g->nc = nc;
    g->nodes[g->n_nodes - 1].a.detect.nc = nc;
    for (int i = 0; i < g->n_layers; i++) /* the displayed arguments too: Detect's first is nc */
        if (!strcmp(g->layers[i].module, "Detect") && g->layers[i].n_args > 0) g->layers[i].args[0] = nc;
    return yp_graph_check(g, file, err);
}

int yp_graph_keep_anchors(yp_graph *g, int na, const char *file, yp_err *err) {
    if (na < 1 || na > g->na)
        return yp_err_set(err, "%s: %d anchors per level: the model has %d; keep 1..%d", file, na, g->na, g->na);
    if (na == g->na) return 0;
    for (int l = 0; l < g->nl; l++) /* the dropped ones: nothing reads them; zeroed so none survives */
        memset(g->anchors[l][na], 0, (size_t)(g->na - na) * sizeof g->anchors[l][0]);
    g->na = na;
    g->nodes[g->n_nodes - 1].a.detect.na = na;
    return yp_graph_check(g, file, err);
}

yp_graph *yp_graph_copy(const yp_graph *g, yp_err *err) {
    char *ir = yp_ir_write_string(g); /* the IR round trip: every field the graph owns, checked */
    if (!ir) return yp_err_set(err, "%s: out of memory copying the graph", g->name), NULL;
    yp_graph *h = yp_ir_load_buffer(ir, strlen(ir), g->name, err);
    free(ir);
    return h;
}
