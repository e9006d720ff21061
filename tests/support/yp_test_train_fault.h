/* yp_test_train_fault.h - what the fault tests of `yoloplan train` (test_train_kill,
 * test_train_faults) share: a scratch folder with a synthetic dataset and a tiny YOLOv5 (yolov5n's
 * rows at depth 0.1, width 0.0625: 2 MB checkpoints, a fraction of a second per epoch), starting
 * the binary there with the test-only checkpoint shim preloaded (tests/cli/ckpt_shim.c), loading
 * every tensor of a checkpoint to prove it whole, and comparing two checkpoints bit for bit.
 * Defines: tf_dir, tf_setup, tf_spawn, tf_wait, tf_run, tf_read, tf_ckpt_whole, tf_same_state,
 * tf_tmp_files, TF_ARGS. */
#ifndef YP_TEST_TRAIN_FAULT_H
#define YP_TEST_TRAIN_FAULT_H

#define _XOPEN_SOURCE 700 /* mkdtemp */
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "yp_checkpoint.h"
#include "yp_synth.h"

/* Every path is relative to tf_dir (the children run there), so no argument holds a space. */
#define TF_ARGS "train --data synth/data.yaml --model tiny.yaml --img 64 --batch 4 --workers 2 --threads 2 --project"

static char tf_dir[160];

/* The scratch folder, its dataset (n_train + 4 images, 64 px) and tiny.yaml. 0, or -1 with a line. */
static int tf_setup(const char *name, int n_train) {
    const char *tmp = getenv("TMPDIR");
    snprintf(tf_dir, sizeof tf_dir, "%s/yp_%s_XXXXXX", tmp && *tmp ? tmp : "/tmp", name);
    if (!mkdtemp(tf_dir)) return perror("mkdtemp"), -1;
    char path[300], line[512];
    snprintf(path, sizeof path, "%s/synth", tf_dir);
    yp_err err = {0};
    yp_synth_opts so = {.n_train = n_train, .n_val = 4, .nc = 3, .w = 64, .h = 64, .seed = 5};
    if (yp_synth_write(path, &so, NULL, &err)) return fprintf(stderr, "setup: %s\n", err.msg), -1;
    FILE *in = fopen(YP_MODELS_DIR "/yolov5n.yaml", "r");
    snprintf(path, sizeof path, "%s/tiny.yaml", tf_dir);
    FILE *out = fopen(path, "w");
    if (!in || !out) return fprintf(stderr, "setup: cannot copy yolov5n.yaml\n"), -1;
    while (fgets(line, sizeof line, in)) {
        if (!strncmp(line, "depth_multiple:", 15)) snprintf(line, sizeof line, "depth_multiple: 0.1\n");
        if (!strncmp(line, "width_multiple:", 15)) snprintf(line, sizeof line, "width_multiple: 0.0625\n");
        fputs(line, out);
    }
    fclose(in), fclose(out);
    return 0;
}

/* Starts `yoloplan ARGS` (split at spaces) in tf_dir, stdout and stderr into LOG.out / LOG.err
 * there, with the shim preloaded when shim is not NULL (YP_SHIM=shim). The child's pid. */
static pid_t tf_spawn(const char *args, const char *shim, const char *log) {
    pid_t pid = fork();
    if (pid != 0) return pid;
    char buf[2048], *argv[64], path[400];
    int n = 0;
    snprintf(buf, sizeof buf, "%s", args);
    argv[n++] = (char *)YP_BINARY;
    for (char *t = strtok(buf, " "); t && n < 63; t = strtok(NULL, " ")) argv[n++] = t;
    argv[n] = NULL;
    if (chdir(tf_dir)) _exit(126);
    for (int k = 0; k < 2; k++) {
        snprintf(path, sizeof path, "%s.%s", log, k ? "err" : "out");
        int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (fd < 0 || dup2(fd, k ? 2 : 1) < 0) _exit(126);
        close(fd);
    }
    /* OpenMP's threads sleep when idle instead of spinning: a loaded machine (2 cores, other
     * tests) ran these runs 10x slower with spinning; the results do not depend on it */
    setenv("OMP_WAIT_POLICY", "PASSIVE", 1);
    if (shim) {
        setenv("YP_SHIM", shim, 1);
        setenv("LD_PRELOAD", YP_SHIM_LIB, 1);
        /* a sanitizer build: the shim comes before the ASan runtime in the library list */
        const char *a = getenv("ASAN_OPTIONS");
        snprintf(path, sizeof path, "%s%sverify_asan_link_order=0", a ? a : "", a && *a ? ":" : "");
        setenv("ASAN_OPTIONS", path, 1);
    }
    execv(YP_BINARY, argv);
    _exit(127);
}

/* waitpid; the exit code, or -(signal) when a signal ended it. */
static int tf_wait(pid_t pid) {
    int st = 0;
    if (waitpid(pid, &st, 0) != pid) return -1000;
    return WIFEXITED(st) ? WEXITSTATUS(st) : WIFSIGNALED(st) ? -WTERMSIG(st) : -1000;
}

static int tf_run(const char *args, const char *shim, const char *log) { return tf_wait(tf_spawn(args, shim, log)); }

/* tf_dir/rel's text into buf (cut at n - 1). 0, or -1 when it cannot be opened. */
static int tf_read(const char *rel, char *buf, size_t n) {
    char p[400];
    snprintf(p, sizeof p, "%s/%s", tf_dir, rel);
    FILE *f = fopen(p, "rb");
    size_t k = f ? fread(buf, 1, n - 1, f) : 0;
    if (f) fclose(f);
    buf[k] = 0;
    return f ? 0 : -1;
}

/* Whether tf_dir/rel is a whole checkpoint: its header, its metadata and every tensor's bytes
 * read back (a truncated or half-written file fails one of them). Its epoch into *epoch. */
static int tf_ckpt_whole(const char *rel, int64_t *epoch) {
    char p[400];
    snprintf(p, sizeof p, "%s/%s", tf_dir, rel);
    yp_err err = {0};
    yp_ckpt_info info;
    yp_st_file f;
    memset(&f, 0, sizeof f);
    if (yp_ckpt_read_info(p, &info, &err)) return fprintf(stderr, "  %s\n", err.msg), 0;
    *epoch = info.epoch;
    yp_ckpt_info_free(&info);
    if (yp_st_open(&f, p, &err)) return fprintf(stderr, "  %s\n", err.msg), 0;
    int ok = 1;
    for (int i = 0; ok && i < f.n; i++) {
        void *b = malloc((size_t)(f.e[i].end - f.e[i].begin) + 1);
        ok = b && yp_st_read(&f, i, b, &err) == 0;
        if (!ok) fprintf(stderr, "  %s\n", err.msg);
        free(b);
    }
    yp_st_close(&f);
    return ok;
}

/* Whether checkpoints a and b (relative to tf_dir) hold the same tensors bit for bit and the same
 * counters and hyperparameters (a stripped file has none: both or neither; the marker too); the
 * first difference on stderr. */
static inline int tf_same_state(const char *a, const char *b) {
    char pa[400], pb[400];
    snprintf(pa, sizeof pa, "%s/%s", tf_dir, a), snprintf(pb, sizeof pb, "%s/%s", tf_dir, b);
    yp_st_file fa, fb;
    yp_err err = {0};
    memset(&fa, 0, sizeof fa), memset(&fb, 0, sizeof fb);
    int ok = yp_st_open(&fa, pa, &err) == 0 && yp_st_open(&fb, pb, &err) == 0;
    if (!ok) fprintf(stderr, "  %s\n", err.msg);
    if (ok && fa.n != fb.n) ok = 0, fprintf(stderr, "  %s: %d tensors, %s: %d\n", a, fa.n, b, fb.n);
    static const char *const keys[] = {"epoch", "best_fitness", "updates", "micro", "hyp.lr", "hyp.lr_bias",
                                       "hyp.momentum", "hyp.weight_decay", "last_grad_norm", "ema", "stripped"};
    for (size_t k = 0; ok && k < sizeof keys / sizeof keys[0]; k++) {
        const char *va = yp_st_meta(&fa, keys[k]), *vb = yp_st_meta(&fb, keys[k]);
        ok = (!va && !vb) || (va && vb && !strcmp(va, vb)); /* a stripped file has none of the counters */
        if (!ok) fprintf(stderr, "  %s: %s %s, %s %s\n", keys[k], a, va ? va : "-", b, vb ? vb : "-");
    }
    for (int i = 0; ok && i < fa.n; i++) {
        int j = yp_st_find(&fb, fa.e[i].name);
        int64_t n = fa.e[i].end - fa.e[i].begin;
        ok = j >= 0 && fb.e[j].end - fb.e[j].begin == n;
        char *x = ok ? malloc((size_t)n + 1) : NULL, *y = ok ? malloc((size_t)n + 1) : NULL;
        ok = ok && x && y && !yp_st_read(&fa, i, x, &err) && !yp_st_read(&fb, j, y, &err) && !memcmp(x, y, (size_t)n);
        if (!ok) fprintf(stderr, "  tensor %s differs between %s and %s\n", fa.e[i].name, a, b);
        free(x), free(y);
    }
    yp_st_close(&fa), yp_st_close(&fb);
    return ok;
}

/* How many temporary files ("*.tmp.*") tf_dir/rel holds. */
static int tf_tmp_files(const char *rel) {
    char p[400];
    snprintf(p, sizeof p, "%s/%s", tf_dir, rel);
    DIR *d = opendir(p);
    int n = 0;
    for (struct dirent *e; d && (e = readdir(d));) n += strstr(e->d_name, ".tmp.") != NULL;
    if (d) closedir(d);
    return n;
}

#endif
