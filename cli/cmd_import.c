/* cmd_import.c - `yoloplan import MODEL.yaml -o MODEL.json [--nc N]`. */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "yp_ir.h"
#include "yp_yaml.h"

int cmd_import(int argc, char **argv) {
    const char *in = NULL, *out = NULL;
    long nc = 0;
    yp_err err;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "-o") && v) out = v, i++;
        else if (!strcmp(a, "--nc") && v) {
            if (cli_parse_int("--nc", v, 1, 100000, &nc, &err)) return cli_fail(&err);
            i++;
        } else if (a[0] != '-' && !in) in = a;
        else {
            yp_err_set(&err, "import: unexpected argument \"%s\"; see yoloplan import --help", a);
            return cli_fail(&err);
        }
    }
    if (!in || !out) {
        yp_err_set(&err, "import: MODEL.yaml and -o MODEL.json are required; see yoloplan import --help");
        return cli_fail(&err);
    }
    yp_graph *g = yp_yaml_import(in, (int)nc, &err);
    if (!g) return cli_fail(&err);
    int rc = yp_ir_write_file(g, out, &err);
    if (rc == 0) printf("wrote %s: %d layers, %d nodes, %lld parameters\n", out, g->n_layers, g->n_nodes,
                        (long long)yp_graph_params(g));
    yp_graph_free(g);
    return rc ? cli_fail(&err) : YP_EXIT_OK;
}
