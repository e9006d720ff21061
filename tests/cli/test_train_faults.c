/* test_train_faults.c - `yoloplan train` when the world fails during a run, end to end on a tiny
 * model (tests/support/yp_test_train_fault.h); the run is paused at an exact point through the test-only
 * shim (tests/cli/ckpt_shim.c: YP_SHIM=stop:N stops it before it creates its Nth checkpoint file) while
 * the test changes the disk:
 *   - a full disk (a small tmpfs): the checkpoint write that fails gives one line naming the file,
 *     the failure and the fix, exit 2; the previous checkpoints are whole; with space added,
 *     --resume continues to the end;
 *   - the run folder's file system remounted read-only mid-run: the same, and --resume after it is
 *     writable again;
 *   - training images deleted mid-run: skipped, counted in one summary line per epoch, the run
 *     finishes; all of them deleted: a clear stop (exit 2, the error last), not a crash;
 *   - a loss that stops being finite (lr0 1e30): stopped before the update, the last checkpoint
 *     whole at the last epoch that finished.
 * The mounts need root and CAP_SYS_ADMIN; without them those cases skip with a message. */
#include <errno.h>
#include <sys/mount.h>

#include "yp_test.h"
#include "yp_test_fs.h"
#include "yp_test_run.h"
#include "yp_test_train_fault.h"

static char out[1 << 16], errtxt[1 << 16];

/* The log's stdout and stderr into out / errtxt. */
static void read_log(const char *log) {
    char p[64];
    snprintf(p, sizeof p, "%s.out", log);
    tf_read(p, out, sizeof out);
    snprintf(p, sizeof p, "%s.err", log);
    tf_read(p, errtxt, sizeof errtxt);
}

static int count(const char *hay, const char *needle) {
    int n = 0;
    for (const char *p = hay; (p = strstr(p, needle)); p++) n++;
    return n;
}

static const char *last_line(const char *s) {
    size_t n = strlen(s);
    while (n && s[n - 1] == '\n') n--;
    while (n && s[n - 1] != '\n') n--;
    return s + n;
}

/* A tmpfs of size at tf_dir/rel. 0, or -1 (not permitted here: the caller skips). */
static int mount_tmpfs(const char *rel, const char *size) {
    char p[400], opts[64];
    snprintf(p, sizeof p, "%s/%s", tf_dir, rel);
    snprintf(opts, sizeof opts, "size=%s", size);
    if (mkdir(p, 0755) && errno != EEXIST) return -1;
    if (mount("tmpfs", p, "tmpfs", 0, opts)) return -1;
    return 0;
}

static int remount(const char *rel, unsigned long flags, const char *opts) {
    char p[400];
    snprintf(p, sizeof p, "%s/%s", tf_dir, rel);
    return mount("tmpfs", p, "tmpfs", MS_REMOUNT | flags, opts);
}

static void unmount(const char *rel) {
    char p[400];
    snprintf(p, sizeof p, "%s/%s", tf_dir, rel);
    umount(p);
}

/* The run's error line: one line on stderr, naming a checkpoint of the run and the fix. */
static void check_error_line(const char *want_errno, const char *want_fix) {
    CHECK_EQ_I64(yp_test_count_lines(errtxt), 1);
    CHECK_STR_HAS(errtxt, "/weights/");
    CHECK_STR_HAS(errtxt, ".safetensors: ");
    CHECK_STR_HAS(errtxt, want_errno);
    CHECK_STR_HAS(errtxt, "the previous file is intact");
    CHECK_STR_HAS(errtxt, want_fix);
    CHECK_STR_HAS(errtxt, "yoloplan train --resume ");
}

static void test_disk_full(void) {
    /* 5 MiB: plan.json, the plots and epoch 0's two 1.9 MB checkpoints fit; epoch 1's do not */
    if (mount_tmpfs("full", "5m")) {
        SKIP("mounting a tmpfs is not permitted here (needs root and CAP_SYS_ADMIN)");
        return;
    }
    int rc = tf_run(TF_ARGS " full --epochs 4 --name run", NULL, "full");
    read_log("full");
    CHECK_EQ_I64(rc, 2);
    check_error_line("No space left on device", "free space on that disk");
    int64_t e = -1, be = -1;
    CHECK(tf_ckpt_whole("full/run/weights/last.safetensors", &e));
    CHECK(tf_ckpt_whole("full/run/weights/best.safetensors", &be));
    CHECK(e >= 0 && e < 3);
    CHECK_EQ_I64(tf_tmp_files("full/run/weights"), 0); /* the failed write removed its temporary file */
    /* the fix the line gives: more space, then --resume, which goes to the end */
    CHECK(remount("full", 0, "size=64m") == 0);
    CHECK_EQ_I64(tf_run("train --resume full/run/weights/last.safetensors", NULL, "full2"), 0);
    CHECK(tf_ckpt_whole("full/run/weights/last.safetensors", &e));
    CHECK_EQ_I64(e, -1); /* finished: stripped (epoch -1, as train.py's strip_optimizer) */
    CHECK(tf_read("full/run/results.csv", out, sizeof out) == 0);
    CHECK_EQ_I64(yp_test_count_lines(out), 5); /* the header and epochs 0..3, each once */
    unmount("full");
}

static void test_read_only_mid_run(void) {
    if (mount_tmpfs("ro", "64m")) {
        SKIP("mounting a tmpfs is not permitted here (needs root and CAP_SYS_ADMIN)");
        return;
    }
    /* stopped before its 3rd checkpoint file (epoch 1's first; epoch 0 wrote best and last) */
    pid_t pid = tf_spawn(TF_ARGS " ro --epochs 4 --name run", "stop:3", "ro");
    int st = 0;
    REQUIRE(pid > 0 && waitpid(pid, &st, WUNTRACED) == pid && WIFSTOPPED(st));
    int ro = remount("ro", MS_RDONLY, NULL);
    kill(pid, SIGCONT);
    int rc = tf_wait(pid);
    read_log("ro");
    CHECK_EQ_I64(ro, 0);
    CHECK_EQ_I64(rc, 2);
    check_error_line("Read-only file system", "remount it read-write");
    int64_t e = -1, be = -1;
    CHECK(tf_ckpt_whole("ro/run/weights/last.safetensors", &e));
    CHECK(tf_ckpt_whole("ro/run/weights/best.safetensors", &be));
    CHECK_EQ_I64(e, 0);
    CHECK(remount("ro", 0, NULL) == 0); /* writable again: --resume goes to the end */
    CHECK_EQ_I64(tf_run("train --resume ro/run/weights/last.safetensors", NULL, "ro2"), 0);
    CHECK(tf_ckpt_whole("ro/run/weights/last.safetensors", &e));
    CHECK_EQ_I64(e, -1); /* finished: stripped */
    unmount("ro");
}

/* Deletes training images 0..n-1 (synth names them in order). */
static void delete_images(int n) {
    char p[400];
    snprintf(p, sizeof p, "%s/synth/images/train", tf_dir);
    DIR *d = opendir(p);
    int k = 0;
    for (struct dirent *e; d && k < n && (e = readdir(d));) {
        if (e->d_name[0] == '.') continue;
        char f[700];
        snprintf(f, sizeof f, "%s/%s", p, e->d_name);
        k += unlink(f) == 0;
    }
    if (d) closedir(d);
}

static void test_images_vanish(void) {
    pid_t pid = tf_spawn(TF_ARGS " runs --epochs 4 --name vanish", "stop:3", "vanish");
    int st = 0;
    REQUIRE(pid > 0 && waitpid(pid, &st, WUNTRACED) == pid && WIFSTOPPED(st));
    delete_images(4);
    kill(pid, SIGCONT);
    int rc = tf_wait(pid);
    read_log("vanish");
    CHECK_EQ_I64(rc, 0);
    CHECK(count(errtxt, "loader: skipping ") <= 4);          /* one line per image, once */
    CHECK(count(errtxt, "No such file or directory") >= 1);
    CHECK_EQ_I64(count(out, "images could not be read by the end of epoch"), 1); /* the summary */
    CHECK_STR_HAS(out, " of 16 in all), skipped; ");
    CHECK_STR_HAS(out, " batch positions so far were filled by other images to keep the batch size (the first "
                       "to fail: ");
    CHECK_STR_HAS(out, "Results saved to ");
    /* every image gone: a clear stop */
    pid = tf_spawn(TF_ARGS " runs --epochs 4 --name gone", "stop:3", "gone");
    REQUIRE(pid > 0 && waitpid(pid, &st, WUNTRACED) == pid && WIFSTOPPED(st));
    delete_images(1000);
    kill(pid, SIGCONT);
    rc = tf_wait(pid);
    read_log("gone");
    CHECK_EQ_I64(rc, 2);
    CHECK_STR_HAS(last_line(errtxt), "training stopped at epoch ");
    CHECK_STR_HAS(last_line(errtxt), "no image of the dataset loads (the first to fail: ");
    CHECK_STR_HAS(last_line(errtxt), "No such file or directory");
    CHECK_STR_HAS(last_line(errtxt), "yoloplan train --resume continues");
    int64_t e = -1;
    CHECK(tf_ckpt_whole("runs/gone/weights/last.safetensors", &e));
    CHECK(e >= 0);
}

static void test_nan_loss(void) {
    char p[400];
    snprintf(p, sizeof p, "%s/diverge.yaml", tf_dir);
    FILE *f = fopen(p, "w");
    REQUIRE(f);
    /* lr0 1000 with warm-up: the rate reaches the blow-up after epoch 0 has been saved (1e30
     * diverges at epoch 0's third batch, before any checkpoint) */
    fputs("lr0: 1000.0\nwarmup_bias_lr: 0.0\n", f);
    fclose(f);
    int rc = tf_run(TF_ARGS " runs --epochs 4 --name nan --hyp diverge.yaml", NULL, "nan");
    read_log("nan");
    CHECK_EQ_I64(rc, 2);
    CHECK_EQ_I64(yp_test_count_lines(errtxt), 1);
    CHECK_STR_HAS(errtxt, "the loss is not finite");
    CHECK_STR_HAS(errtxt, "stopped before the update");
    const char *at = strstr(errtxt, " at epoch ");
    long stop = at ? strtol(at + 10, NULL, 10) : -1;
    CHECK(stop >= 1);
    int64_t e = -1;
    CHECK(tf_ckpt_whole("runs/nan/weights/last.safetensors", &e));
    CHECK_EQ_I64(e, stop - 1); /* the last epoch that finished, its weights finite */
}

int main(void) {
    if (tf_setup("train_faults", 16)) return 1;
    YP_RUN(test_disk_full);
    YP_RUN(test_read_only_mid_run);
    YP_RUN(test_nan_loss);
    YP_RUN(test_images_vanish); /* deletes images: after the cases that train on all of them */
    if (!yp_test_cases_failed && !getenv("YP_KEEP")) yp_test_remove_tree(tf_dir);
    else fprintf(stderr, "kept %s for a look (YP_KEEP keeps it always)\n", tf_dir);
    return yp_test_summary();
}
