/* cmd_synth.c - `yoloplan synth`: writes a deterministic synthetic YOLO dataset (executor's
 * yp_synth.h) and says how to train on it. Only the arguments are handled here. */
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "yp_synth.h"

#define SYNTH_USAGE "see yoloplan synth --help" /* the usage itself: usage.c */

typedef struct {
    const char *out;
    long images, val, classes, seed;
    int64_t w, h;
} synth_args;

/* Reads one option with its value. Returns 1 when a is not a synth option, 0, or -1 (err set). */
static int parse_one(synth_args *s, const char *a, const char *v, yp_err *err) {
    if (!v) return 1;
    if (!strcmp(a, "--out")) return s->out = v, 0;
    if (!strcmp(a, "--images")) return cli_parse_int("--images", v, 1, YP_SYNTH_MAX_IMAGES, &s->images, err);
    if (!strcmp(a, "--val")) return cli_parse_int("--val", v, 0, YP_SYNTH_MAX_IMAGES, &s->val, err);
    if (!strcmp(a, "--classes")) return cli_parse_int("--classes", v, 1, YP_SYNTH_MAX_CLASSES, &s->classes, err);
    if (!strcmp(a, "--seed")) return cli_parse_int("--seed", v, 0, LONG_MAX, &s->seed, err);
    if (!strcmp(a, "--img")) {
        if (cli_parse_img(v, &s->w, &s->h, err)) return -1;
        if (s->w < YP_SYNTH_MIN_SIDE || s->w > YP_SYNTH_MAX_SIDE || s->h < YP_SYNTH_MIN_SIDE ||
            s->h > YP_SYNTH_MAX_SIDE)
            return yp_err_set(err, "--img %s: each side must be %d..%d", v, YP_SYNTH_MIN_SIDE, YP_SYNTH_MAX_SIDE);
        return 0;
    }
    return 1;
}

static int parse(int argc, char **argv, synth_args *s, yp_err *err) {
    *s = (synth_args){.images = -1, .val = -1, .classes = -1, .seed = -1};
    for (int i = 1; i < argc; i += 2) {
        int rc = parse_one(s, argv[i], i + 1 < argc ? argv[i + 1] : NULL, err);
        if (rc < 0) return -1;
        if (rc > 0) return yp_err_set(err, "synth: unknown or incomplete option \"%s\"; " SYNTH_USAGE, argv[i]);
    }
    const char *missing = !s->out ? "--out" : s->images < 0 ? "--images" : s->classes < 0 ? "--classes"
                          : s->w == 0 ? "--img" : s->seed < 0 ? "--seed" : NULL;
    if (missing) return yp_err_set(err, "synth: %s is required; " SYNTH_USAGE, missing);
    if (s->val < 0) s->val = (s->images + 9) / 10; /* default: a tenth as many for validation */
    return 0;
}

int cmd_synth(int argc, char **argv) {
    synth_args a;
    yp_err err;
    if (parse(argc, argv, &a, &err)) return cli_fail(&err);
    yp_synth_opts o = {.n_train = a.images, .n_val = a.val, .nc = (int)a.classes, .w = (int)a.w, .h = (int)a.h,
                       .seed = (uint64_t)a.seed};
    yp_synth_stats st;
    if (yp_synth_write(a.out, &o, &st, &err)) return cli_fail(&err);
    printf("synth: %s: %lld train + %lld val images (%lld JPEG, %lld PNG), %lld labels, %d classes\n"
           "plan for it: yoloplan --gpu 8GB --data %s/data.yaml\n",
           a.out, (long long)o.n_train, (long long)o.n_val, (long long)st.n_jpeg, (long long)st.n_png,
           (long long)st.n_labels, o.nc, a.out);
    return YP_EXIT_OK;
}
