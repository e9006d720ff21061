/* test_train_signal.c - SIGINT and SIGTERM end `yoloplan train` cleanly, and a finished run's
 * checkpoints are stripped (train.py's strip_optimizer), on the fault tests' tiny model and
 * synthetic set (yp_test_train_fault.h), EPOCHS epochs with --noval (so that each epoch writes
 * exactly best then last, and the test-only shim's YP_SHIM=stop:N, which stops the process before
 * its N-th checkpoint file, lands at a known point):
 *   - the reference run, sent SIGINT while it writes its final last: exit 130, one line saying it
 *     stopped before the strip and the --resume that finishes, last whole and unstripped at the
 *     final epoch; val reads it; that --resume strips last and best ("Optimizer stripped from
 *     ..., X.XMB", each tensor F16, 2 bytes a value and no optimizer, EMA or gradient), val on the
 *     stripped last gives the same table within fp16's rounding, a further --resume is refused in
 *     train.py's words (exit 2, one line), --weights fine-tunes from the stripped best;
 *   - SIGINT while epoch 1's checkpoints are written: they finish, the run stops before epoch 2's
 *     first batch (the loaders' worker threads block the signal, the main thread takes it),
 *     exit 130, one line naming the epoch and the --resume command, last whole at epoch 1, no
 *     partial file; --resume (stopped the same way at its end) gives the reference's
 *     whole unstripped state bit for bit (weights, BN statistics, EMA, momentum, counters) and its
 *     results.csv byte for byte, then the same stripped files;
 *   - SIGTERM at a time after the first checkpoint (most likely inside an epoch, whose batches are
 *     dropped): exit 143, the line, last whole; --resume ends as the reference;
 *   - a second signal while the first is being handled (SIGINT and SIGTERM both pending at the
 *     stop): the process is killed by it at once; last is whole and --resume ends as the
 *     reference. */
#include <dirent.h>
#include <math.h>

#include "yp_test.h"
#include "yp_test_fs.h"
#include "yp_test_train_fault.h"

#define EPOCHS 5
#define RUN_ARGS TF_ARGS " runs --epochs 5 --noval --name "

static char out[1 << 16], err[1 << 13];

/* Waits for pid to stop (the shim's SIGSTOP): 1; 0 when it ended first, its code into *rc. */
static int wait_stopped(pid_t pid, int *rc) {
    int st = 0;
    if (waitpid(pid, &st, WUNTRACED) != pid) return *rc = -1000, 0;
    if (WIFSTOPPED(st)) return 1;
    *rc = WIFEXITED(st) ? WEXITSTATUS(st) : WIFSIGNALED(st) ? -WTERMSIG(st) : -1000;
    return 0;
}

static int g_blocking, g_main_blocks; /* at the last stop: threads blocking SIGINT and SIGTERM; the main one too */

/* Counts the threads of pid whose mask blocks SIGINT and SIGTERM (/proc/PID/task/TID/status,
 * SigBlk) into g_blocking, and whether the main thread (TID = PID) is one into g_main_blocks. */
static void count_blocking(pid_t pid) {
    char p[64], line[256];
    g_blocking = g_main_blocks = 0;
    snprintf(p, sizeof p, "/proc/%d/task", (int)pid);
    DIR *d = opendir(p);
    for (struct dirent *t; d && (t = readdir(d));) {
        if (t->d_name[0] == '.') continue;
        char sp[400];
        snprintf(sp, sizeof sp, "%s/%s/status", p, t->d_name);
        FILE *f = fopen(sp, "r");
        while (f && fgets(line, sizeof line, f)) {
            unsigned long long m = 0;
            if (sscanf(line, "SigBlk: %llx", &m) != 1) continue;
            const unsigned long long both = 1ull << (SIGINT - 1) | 1ull << (SIGTERM - 1);
            if ((m & both) == both) g_blocking++, g_main_blocks |= atoi(t->d_name) == (int)pid;
        }
        if (f) fclose(f);
    }
    if (d) closedir(d);
}

/* Runs `yoloplan ARGS` stopped before its checkpoint file `file`, sends it sigs[0..n) there and
 * lets it go on (count_blocking looks at its threads at the stop). Its exit code (tf_wait's:
 * -signal when one killed it); LOG.out, LOG.err into out, err. */
static int run_signalled(const char *args, int file, const int *sigs, int n, const char *log) {
    char shim[32], path[64];
    snprintf(shim, sizeof shim, "stop:%d", file);
    pid_t pid = tf_spawn(args, shim, log);
    int rc = -1000;
    if (pid > 0 && wait_stopped(pid, &rc)) {
        count_blocking(pid);
        for (int i = 0; i < n; i++) kill(pid, sigs[i]);
        kill(pid, SIGCONT);
        rc = tf_wait(pid);
    }
    snprintf(path, sizeof path, "%s.out", log), tf_read(path, out, sizeof out);
    snprintf(path, sizeof path, "%s.err", log), tf_read(path, err, sizeof err);
    return rc;
}

static int run_plain(const char *args, const char *log) {
    char path[64];
    int rc = tf_run(args, NULL, log);
    snprintf(path, sizeof path, "%s.out", log), tf_read(path, out, sizeof out);
    snprintf(path, sizeof path, "%s.err", log), tf_read(path, err, sizeof err);
    return rc;
}

static int lines(const char *s) {
    int n = 0;
    for (; *s; s++) n += *s == '\n';
    return n;
}

/* tf_dir/from copied to tf_dir/to. 0, or -1. */
static int copy(const char *from, const char *to) {
    char a[400], b[400], buf[1 << 16];
    snprintf(a, sizeof a, "%s/%s", tf_dir, from), snprintf(b, sizeof b, "%s/%s", tf_dir, to);
    FILE *in = fopen(a, "rb"), *o = fopen(b, "wb");
    int ok = in && o;
    for (size_t k; ok && (k = fread(buf, 1, sizeof buf, in)) > 0;) ok = fwrite(buf, 1, k, o) == k;
    if (in) fclose(in);
    if (o && fclose(o)) ok = 0;
    return ok ? 0 : -1;
}

/* Whether tf_dir/rel is stripped: epoch -1, every tensor F16 (2 bytes a value: the data is the
 * values' count x 2), none under ema., optimizer. or grad.; its data bytes into *data. */
static int is_stripped(const char *rel, int64_t *data) {
    char p[400];
    snprintf(p, sizeof p, "%s/%s", tf_dir, rel);
    yp_st_file f;
    yp_err e = {0};
    int64_t epoch = 0, values = 0;
    if (!tf_ckpt_whole(rel, &epoch) || epoch != -1 || yp_st_open(&f, p, &e)) return 0;
    int ok = 1;
    for (int i = 0; i < f.n; i++) {
        int64_t n = 1;
        for (int d = 0; d < f.e[i].ndim; d++) n *= f.e[i].shape[d];
        values += n;
        ok = ok && f.e[i].dtype == YP_ST_F16 && strncmp(f.e[i].name, "ema.", 4) &&
             strncmp(f.e[i].name, "optimizer.", 10) && strncmp(f.e[i].name, "grad.", 5);
    }
    *data = f.file_bytes - f.data_start;
    ok = ok && *data == 2 * values;
    yp_st_close(&f);
    return ok;
}

/* val.py's "all" row of `yoloplan val --weights rel` into v[6] (images, instances, P, R, mAP50,
 * mAP50-95). 0, or -1. */
static int val_row(const char *rel, const char *log, double v[6]) {
    char args[400];
    snprintf(args, sizeof args, "val --weights %s --data synth/data.yaml --img 64 --batch 8 --workers 2 --threads 2",
             rel);
    if (run_plain(args, log) != 0) return fprintf(stderr, "  val: %s", err), -1;
    const char *a = strstr(out, "                   all ");
    if (!a || sscanf(a + 22, "%lf %lf %lf %lf %lf %lf", &v[0], &v[1], &v[2], &v[3], &v[4], &v[5]) != 6) return -1;
    return 0;
}

/* The run `name` ended as the reference: results.csv byte for byte, last and best bit for bit. */
static void same_as_ref(const char *name) {
    char a[1 << 13], b[1 << 13], p[128], q[128];
    snprintf(p, sizeof p, "runs/%s/results.csv", name);
    CHECK(tf_read("runs/ref/results.csv", a, sizeof a) == 0 && tf_read(p, b, sizeof b) == 0);
    CHECK(strcmp(a, b) == 0);
    CHECK_EQ_I64(lines(b), EPOCHS + 1);
    static const char *const files[2] = {"last", "best"};
    for (int k = 0; k < 2; k++) {
        snprintf(p, sizeof p, "runs/ref/weights/%s.safetensors", files[k]);
        snprintf(q, sizeof q, "runs/%s/weights/%s.safetensors", name, files[k]);
        int64_t data = 0;
        CHECK(is_stripped(q, &data));
        CHECK(tf_same_state(p, q));
    }
    snprintf(p, sizeof p, "runs/%s/weights", name);
    CHECK_EQ_I64(tf_tmp_files(p), 0);
}

static void test_interrupt_before_strip_then_strip(void) {
    const int sig = SIGINT;
    CHECK_EQ_I64(run_signalled(RUN_ARGS "ref", 2 * EPOCHS, &sig, 1, "ref"), 130);
    CHECK_STR_HAS(err, "yoloplan: interrupted after the final epoch 4/4, before its checkpoints were stripped; "
                       "finish with: yoloplan train --resume runs/ref/weights/last.safetensors");
    CHECK_EQ_I64(lines(err), 1);
    CHECK(!strstr(out, "Optimizer stripped"));
    int64_t e = -2, data = 0, data_best = 0;
    CHECK(tf_ckpt_whole("runs/ref/weights/last.safetensors", &e));
    CHECK_EQ_I64(e, EPOCHS - 1);
    REQUIRE(copy("runs/ref/weights/last.safetensors", "ref_full.safetensors") == 0);
    struct stat st;
    char p[400];
    snprintf(p, sizeof p, "%s/ref_full.safetensors", tf_dir);
    const long long before = stat(p, &st) == 0 ? (long long)st.st_size : -1;
    double a[6], b[6];
    REQUIRE(val_row("runs/ref/weights/last.safetensors", "val_full", a) == 0);
    /* --resume of a run trained to its end: nothing more to train, the strip */
    CHECK_EQ_I64(run_plain("train --resume runs/ref/weights/last.safetensors", "ref_strip"), 0);
    CHECK_STR_HAS(out, "Optimizer stripped from runs/ref/weights/last.safetensors, ");
    CHECK_STR_HAS(out, "Optimizer stripped from runs/ref/weights/best.safetensors, ");
    CHECK(strstr(out, "weights/last.safetensors, ") < strstr(out, "weights/best.safetensors, ")); /* train.py's order */
    CHECK_STR_HAS(out, "Results saved to runs/ref");
    CHECK(is_stripped("runs/ref/weights/last.safetensors", &data));
    CHECK(is_stripped("runs/ref/weights/best.safetensors", &data_best));
    snprintf(p, sizeof p, "%s/runs/ref/weights/last.safetensors", tf_dir);
    const long long after = stat(p, &st) == 0 ? (long long)st.st_size : -1;
    printf("  last: %lld bytes before the strip, %lld after (%lld of them the fp16 values)\n", before, after,
           (long long)data);
    CHECK(after > 0 && before > 4 * after); /* weights, EMA and momentum in fp32 against the EMA's in fp16 */
    /* the strip keeps the EMA's weights: val's table within fp16's rounding */
    REQUIRE(val_row("runs/ref/weights/last.safetensors", "val_stripped", b) == 0);
    printf("  val all: P %.4g R %.4g mAP50 %.4g mAP %.4g unstripped; %.4g %.4g %.4g %.4g stripped\n", a[2], a[3], a[4],
           a[5], b[2], b[3], b[4], b[5]);
    CHECK(a[0] == b[0] && a[1] == b[1]);
    for (int k = 2; k < 6; k++) CHECK(fabs(a[k] - b[k]) <= 0.05 * fabs(a[k]) + 1e-4);
    CHECK(a[4] > 0); /* a model that finds something: the comparison can fail */
    /* a stripped run: nothing to resume (train.py's smart_resume), exit 2, one line */
    CHECK_EQ_I64(run_plain("train --resume runs/ref/weights/last.safetensors", "ref_again"), 2);
    CHECK_STR_HAS(err, "runs/ref/weights/last.safetensors training to 5 epochs is finished, nothing to resume. Start a "
                       "new training without --resume, i.e. 'yoloplan train --weights "
                       "runs/ref/weights/last.safetensors'");
    CHECK_EQ_I64(lines(err), 1);
    /* --weights: the fp16 weights fine-tune a new run */
    CHECK_EQ_I64(run_plain(TF_ARGS " runs --epochs 1 --noval --name ft --weights runs/ref/weights/best.safetensors",
                           "ft"),
                 0);
    CHECK_STR_HAS(out, "runs/ref/weights/best.safetensors: transferred ");
    CHECK_STR_HAS(out, " (0 skipped, 0 not in the file; 0 tensors of the file unused)");
}

static void test_sigint_at_checkpoint(void) {
    const int sig = SIGINT;
    /* stopped before file 3: epoch 1's best; both of epoch 1's files are written after the signal */
    CHECK_EQ_I64(run_signalled(RUN_ARGS "int", 3, &sig, 1, "int"), 130);
    /* the loaders' live workers block both signals (a fault in the block leaves none), the main thread not */
    printf("  %d threads blocked SIGINT and SIGTERM at the stop\n", g_blocking);
    CHECK(g_blocking >= 1);
    CHECK(!g_main_blocks);
    CHECK_STR_HAS(err, "yoloplan: interrupted at epoch 2/4 (batch 0 of 8); resume with: yoloplan train --resume "
                       "runs/int/weights/last.safetensors (it continues from the end of epoch 1, the last saved)");
    CHECK_EQ_I64(lines(err), 1);
    int64_t e = -2;
    CHECK(tf_ckpt_whole("runs/int/weights/last.safetensors", &e));
    CHECK_EQ_I64(e, 1);
    CHECK_EQ_I64(tf_tmp_files("runs/int/weights"), 0);
    /* epochs 2..4: six files; the sixth is the final last: stopped there, the state before the strip */
    CHECK_EQ_I64(run_signalled("train --resume runs/int/weights/last.safetensors", 2 * (EPOCHS - 2), &sig, 1, "int2"),
                 130);
    CHECK_STR_HAS(err, "before its checkpoints were stripped");
    CHECK(tf_same_state("ref_full.safetensors", "runs/int/weights/last.safetensors"));
    CHECK_EQ_I64(run_plain("train --resume runs/int/weights/last.safetensors", "int3"), 0);
    same_as_ref("int");
}

static void test_sigterm_in_an_epoch(void) {
    pid_t pid = tf_spawn(RUN_ARGS "term", NULL, "term");
    REQUIRE(pid > 0);
    char p[400];
    struct stat st;
    snprintf(p, sizeof p, "%s/runs/term/weights/last.safetensors", tf_dir);
    for (int t = 0; t < 60000 && stat(p, &st) != 0; t++) { /* epoch 0's checkpoint (60 s at most) */
        struct timespec ts = {0, 1000000};
        nanosleep(&ts, NULL);
    }
    struct timespec ts = {0, 30000000}; /* into epoch 1 */
    nanosleep(&ts, NULL);
    kill(pid, SIGTERM);
    CHECK_EQ_I64(tf_wait(pid), 143);
    tf_read("term.err", err, sizeof err);
    printf("  %s", err);
    CHECK_STR_HAS(err, "yoloplan: interrupted ");
    CHECK_STR_HAS(err, "yoloplan train --resume runs/term/weights/last.safetensors");
    CHECK_EQ_I64(lines(err), 1);
    int64_t e = -2;
    CHECK(tf_ckpt_whole("runs/term/weights/last.safetensors", &e));
    CHECK(e >= 0 && e < EPOCHS);
    CHECK_EQ_I64(run_plain("train --resume runs/term/weights/last.safetensors", "term2"), 0);
    same_as_ref("term");
}

static void test_second_signal_ends_at_once(void) {
    const int sigs[2] = {SIGINT, SIGTERM}; /* both pending at the stop: the second comes while the first is handled */
    int rc = run_signalled(RUN_ARGS "twice", 3, sigs, 2, "twice");
    printf("  exit %d\n", rc);
    CHECK(rc == -SIGINT || rc == -SIGTERM); /* killed by the signal, not exit 130/143 after finishing */
    CHECK(!strstr(err, "interrupted at"));
    int64_t e = -2;
    CHECK(tf_ckpt_whole("runs/twice/weights/last.safetensors", &e));
    CHECK(e == 0 || e == 1);
    CHECK_EQ_I64(run_plain("train --resume runs/twice/weights/last.safetensors", "twice2"), 0);
    same_as_ref("twice");
}

int main(void) {
    if (tf_setup("train_signal", 32)) return 1;
    YP_RUN(test_interrupt_before_strip_then_strip);
    YP_RUN(test_sigint_at_checkpoint);
    YP_RUN(test_sigterm_in_an_epoch);
    YP_RUN(test_second_signal_ends_at_once);
    if (!yp_test_cases_failed && !getenv("YP_KEEP")) yp_test_remove_tree(tf_dir);
    else fprintf(stderr, "kept %s for a look (YP_KEEP keeps it always)\n", tf_dir);
    return yp_test_summary();
}
