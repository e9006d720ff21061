/* test_zoo_plan.c - every detection yaml of the zoo (tests/data/zoo/params.tsv) plans, for
 * yoloplan's executor and for Ultralytics train.py: `yoloplan --gpu 8GB --model Y --img 256
 * --max-batch 8` and `yoloplan --gpu 8GB --target pytorch --model Y --img 256 --batch 2` exit 0,
 * the first with a chosen row, the second with its verdict. (Such a scan found the pytorch
 * target failing for the transformer model once its schedules differed between batches, and
 * check_amp at --img instead of 640 refusing stride-64 models.) Slow: the pytorch target replays
 * train.py's allocations for training, validation and the what-if, about 3 s a model. */
#include <stdlib.h>

#include "yp_test.h"
#include "yp_test_fs.h"
#include "yp_test_run.h"
#include "yp_test_zoo.h"

static char out[1 << 17], errtxt[1 << 14];
static char dir[96];

static void test_every_yaml_plans(void) {
    FILE *f = fopen(YP_TEST_DATA "/zoo/params.tsv", "r");
    CHECK(f != NULL);
    yp_zoo_row z;
    int planned = 0;
    while (f && yp_zoo_next(f, &z)) {
        char args[1024];
        yp_test_cmd c = {YP_BINARY, dir, 0, out, errtxt, sizeof out, sizeof errtxt};
        snprintf(args, sizeof args, "--gpu 8GB --model '%s' --img 256 --max-batch 8", z.path);
        int rc = yp_test_run_cmd(&c, args);
        if (rc != 0 || !strstr(out, "\n*1 ")) fprintf(stderr, "%s: exit %d: %s%s\n", z.rel, rc, errtxt, out);
        CHECK(rc == 0 && strstr(out, "\n*1 ") != NULL);
        snprintf(args, sizeof args, "--gpu 8GB --target pytorch --model '%s' --img 256 --batch 2", z.path);
        rc = yp_test_run_cmd(&c, args);
        if (rc != 0 || !strstr(out, "FITS")) fprintf(stderr, "%s (pytorch): exit %d: %s%s\n", z.rel, rc, errtxt, out);
        CHECK(rc == 0 && strstr(out, "FITS") != NULL);
        planned++;
    }
    if (f) fclose(f);
    fprintf(stderr, "zoo: %d yamls planned for yoloplan and for train.py\n", planned);
    CHECK(planned == 31); /* params.tsv's rows (test_zoo) */
}

int main(void) {
    const char *tmp = getenv("TMPDIR");
    snprintf(dir, sizeof dir, "%s/yp_zoo_plan_XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(dir)) return perror("mkdtemp"), 1;
    YP_RUN(test_every_yaml_plans);
    yp_test_remove_tree(dir);
    return yp_test_summary();
}
