/* cmd_schedule.c - `yoloplan schedule`: prints the derived training step (steps, tensors, lives),
 * with --fuse the schedule's fusions applied (yp_sched_opts.fusions). */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "yp_schedule.h"

int cmd_schedule(int argc, char **argv) {
    const char *model = "yolov5s";
    int64_t w = 640, h = 640;
    long batch = 1;
    yp_err err;
    yp_save_policy policy = YP_SAVE_YOLOPLAN;
    unsigned fusions = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--model") && v) model = v, i++;
        else if (!strcmp(a, "--img") && v) {
            if (cli_parse_img(v, &w, &h, &err)) return cli_fail(&err);
            i++;
        } else if (!strcmp(a, "--batch") && v) {
            if (cli_parse_int("--batch", v, 1, 1L << 20, &batch, &err)) return cli_fail(&err);
            i++;
        } else if (!strcmp(a, "--policy") && v && yp_save_policy_parse(v) >= 0) {
            policy = (yp_save_policy)yp_save_policy_parse(v);
            i++;
        } else if (!strcmp(a, "--fuse") && v && yp_fusion_parse(v) >= 0) {
            fusions |= 1u << yp_fusion_parse(v);
            i++;
        } else {
            yp_err_set(&err, "schedule: unknown or incomplete option \"%s\"; see yoloplan schedule --help", a);
            return cli_fail(&err);
        }
    }
    yp_graph *g = cli_load_model(model, 0, &err);
    if (!g) return cli_fail(&err);
    yp_sched_opts o = yp_sched_opts_default(batch, h, w);
    o.policy = policy;
    o.fusions = fusions;
    yp_schedule *s = yp_schedule_build(g, &o, &err);
    int rc = YP_EXIT_OK;
    if (!s) rc = cli_fail(&err);
    else {
        yp_schedule_print(s, stdout);
        printf("# saved for backward: %lld bytes\n", (long long)yp_schedule_saved_bytes(s));
    }
    yp_schedule_free(s);
    yp_graph_free(g);
    return rc;
}
