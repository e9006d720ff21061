/* test_zoo_train.c - every detection yaml of the zoo (tests/data/zoo/params.tsv) trains on the
 * CPU: `yoloplan train` at 64 px, batch 4, one epoch of 8 synthetic images (2 steps), then
 * validation; exit 0, one results.csv row of finite losses, and for `anchors: N` yamls the
 * AutoAnchor line. The yamls test_zoo lists as not yet built are skipped here (named). Slow: about
 * a minute on two cores for the 29 models. */
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <sys/stat.h>

#include "yp_synth.h"
#include "yp_test.h"
#include "yp_test_fs.h"
#include "yp_test_run.h"
#include "yp_test_zoo.h"

static char out[1 << 17], errtxt[1 << 14];
static char dir[96], data[160];

static void test_every_yaml_trains(void) {
    FILE *f = fopen(YP_TEST_DATA "/zoo/params.tsv", "r");
    CHECK(f != NULL);
    yp_zoo_row z;
    int trained = 0, skipped = 0;
    while (f && yp_zoo_next(f, &z)) {
        if (yp_zoo_not_yet(z.rel)) {
            fprintf(stderr, "  skip %s (not built yet: %s)\n", z.rel, yp_zoo_not_yet(z.rel));
            skipped++;
            continue;
        }
        char args[2048], name[64], csv[512], text[4096];
        snprintf(name, sizeof name, "m%d", trained);
        snprintf(args, sizeof args,
                 "train --data '%s' --model '%s' --img 64 --batch 4 --epochs 1 --workers 1 --threads 2 "
                 "--project '%s/runs' --name %s",
                 data, z.path, dir, name);
        yp_test_cmd c = {YP_BINARY, dir, 1, out, errtxt, sizeof out, sizeof errtxt};
        int rc = yp_test_run_cmd(&c, args);
        if (rc != 0) fprintf(stderr, "%s: exit %d: %s\n", z.rel, rc, errtxt);
        CHECK_EQ_I64(rc, 0);
        snprintf(csv, sizeof csv, "%s/runs/%s/results.csv", dir, name);
        FILE *r = fopen(csv, "rb");
        size_t n = r ? fread(text, 1, sizeof text - 1, r) : 0;
        if (r) fclose(r);
        text[n] = 0;
        const char *row = strchr(text, '\n'); /* after the header */
        double box = NAN, obj = NAN, cls = NAN;
        int fields = row ? sscanf(row + 1, " %*d , %lf , %lf , %lf", &box, &obj, &cls) : 0;
        if (fields != 3 || !isfinite(box + obj + cls)) fprintf(stderr, "%s: results.csv: %s\n", z.rel, text);
        CHECK(fields == 3 && isfinite(box) && isfinite(obj) && isfinite(cls));
        if (strstr(z.rel, "-p2.") || strstr(z.rel, "-p34.") || strstr(z.rel, "-p6.") || strstr(z.rel, "-p7."))
            CHECK_STR_HAS(out, "gives `anchors: 3`; k-means fitted");
        trained++;
    }
    if (f) fclose(f);
    fprintf(stderr, "zoo: %d yamls trained 2 steps at 64 px, %d not built yet\n", trained, skipped);
    CHECK(trained + skipped == 31); /* params.tsv's rows (test_zoo) */
}

int main(void) {
    const char *tmp = getenv("TMPDIR");
    snprintf(dir, sizeof dir, "%s/yp_zoo_train_XXXXXX", tmp && *tmp ? tmp : "/tmp");
    yp_err err = {0};
    yp_synth_opts so = {.n_train = 8, .n_val = 4, .nc = 80, .w = 96, .h = 96, .seed = 11};
    char synth[128];
    if (!mkdtemp(dir)) return perror("mkdtemp"), 1;
    snprintf(synth, sizeof synth, "%s/synth", dir);
    snprintf(data, sizeof data, "%s/synth/data.yaml", dir);
    if (yp_synth_write(synth, &so, NULL, &err)) return fprintf(stderr, "setup: %s\n", err.msg), 1;
    YP_RUN(test_every_yaml_trains);
    yp_test_remove_tree(dir);
    return yp_test_summary();
}
