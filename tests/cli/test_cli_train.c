/* test_cli_train.c - `yoloplan train` and `yoloplan val` end to end on a tiny synthetic dataset
 * (16 + 4 images at 64 px): the plan line, the run folder (plan.json, hyp.yaml, opt.yaml,
 * results.csv with train.py's rows, results.png/.svg, last and best checkpoints), exp2 for a
 * second run, a run killed mid-way and resumed (every epoch once in results.csv), "nothing to
 * resume", --cache ram giving the uncached run's results, val with --save-json, and each bad input: one line naming the file or option, exit 2
 * (1 for a plan that does not fit); --device cuda as far as this machine allows, and the other
 * device specs (cpu:T, train.py's N, several devices refused: no multi-GPU DDP yet). */
#define _XOPEN_SOURCE 700 /* mkdtemp */
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "yp_synth.h"
#include "yp_test.h"
#include "yp_test_run.h"
#include "yp_test_fs.h"

static char out[1 << 17], errtxt[1 << 14];
static char dir[96], data[160];

#define TRAIN_ARGS "train --data '%s' --model yolov5n --img 64 --batch 4 --workers 2 --threads 2 --project '%s/runs'"

static int run(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int run(const char *fmt, ...) {
    char args[3072];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(args, sizeof args, fmt, ap);
    va_end(ap);
    yp_test_cmd c = {YP_BINARY, dir, 1, out, errtxt, sizeof out, sizeof errtxt};
    return yp_test_run_cmd(&c, args);
}

static int exists(const char *fmt, const char *a) {
    char p[512];
    struct stat st;
    snprintf(p, sizeof p, fmt, dir, a);
    return stat(p, &st) == 0 && st.st_size > 0;
}

static int read_text(const char *path, char *buf, size_t n) {
    FILE *f = fopen(path, "rb");
    size_t k = f ? fread(buf, 1, n - 1, f) : 0;
    if (f) fclose(f);
    buf[k] = 0;
    return f ? 0 : -1;
}

static void test_train_run_folder(void) {
    CHECK_EQ_I64(run(TRAIN_ARGS " --epochs 2", data, dir), 0);
    CHECK_STR_HAS(out, "plan: yolov5n, batch 4, accumulate 16, img 64, fp32");
    CHECK_STR_HAS(out, "train: 16 images, 0 backgrounds, 0 corrupt");
    CHECK_STR_HAS(out, "      Epoch    GPU_mem   box_loss   obj_loss   cls_loss  Instances       Size");
    CHECK_STR_HAS(out, "        1/1");
    CHECK_STR_HAS(out, "                 Class     Images  Instances          P          R      mAP50   mAP50-95");
    CHECK_STR_HAS(out, "Results saved to ");
    static const char *const files[] = {"plan.json", "hyp.yaml", "opt.yaml", "results.csv", "results.png",
                                        "results.svg", "weights/last.safetensors", "weights/best.safetensors"};
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        int ok = exists("%s/runs/exp/%s", files[i]);
        if (!ok) fprintf(stderr, "missing runs/exp/%s\n", files[i]);
        CHECK(ok);
    }
    char csv[4096], path[256];
    snprintf(path, sizeof path, "%s/runs/exp/results.csv", dir);
    CHECK(read_text(path, csv, sizeof csv) == 0);
    CHECK_EQ_I64(yp_test_count_lines(csv), 3);
    CHECK(strncmp(csv, "               epoch,      train/box_loss,", 42) == 0);
    CHECK_STR_HAS(csv, "\n                   1,");
    /* a second run gets exp2 */
    CHECK_EQ_I64(run(TRAIN_ARGS " --epochs 1", data, dir), 0);
    CHECK(exists("%s/runs/exp2/%s", "weights/last.safetensors"));
    /* a finished run has nothing to resume */
    CHECK_EQ_I64(run("train --resume runs/exp/weights/last.safetensors"), 2);
    CHECK_STR_HAS(errtxt, "nothing to resume");
    CHECK_EQ_I64(yp_test_count_lines(errtxt), 1);
}

/* A run killed (SIGKILL) in its second or a later epoch continues with --resume: every epoch in
 * results.csv exactly once. */
static void test_kill_and_resume(void) {
    char cmd[2048], csv[8192], path[256];
    snprintf(path, sizeof path, "%s/runs/kill/results.csv", dir);
    snprintf(cmd, sizeof cmd, TRAIN_ARGS " --epochs 12 --name kill", data, dir);
    pid_t pid = fork();
    if (pid == 0) {
        char line[3072];
        snprintf(line, sizeof line, "cd '%s' && exec '%s' %s >/dev/null 2>&1", dir, YP_BINARY, cmd);
        execl("/bin/sh", "sh", "-c", line, (char *)NULL);
        _exit(127);
    }
    CHECK(pid > 0);
    int rows = 0;
    /* until epoch 1's row is there (so epoch 0's checkpoint, written after its row, is too; 60 s at most) */
    for (int t = 0; pid > 0 && t < 60000 && rows < 3; t++) {
        struct timespec ts = {0, 1000000};
        nanosleep(&ts, NULL);
        rows = read_text(path, csv, sizeof csv) == 0 ? yp_test_count_lines(csv) : 0;
    }
    if (pid > 0) kill(pid, SIGKILL), waitpid(pid, NULL, 0);
    CHECK(rows >= 3);
    read_text(path, csv, sizeof csv);
    CHECK(yp_test_count_lines(csv) < 13); /* killed before the end */
    CHECK_EQ_I64(run("train --resume runs/kill/weights/last.safetensors"), 0);
    if (errtxt[0]) fprintf(stderr, "%s", errtxt);
    CHECK_STR_HAS(out, "Resuming training from runs/kill/weights/last.safetensors from epoch");
    CHECK(read_text(path, csv, sizeof csv) == 0);
    CHECK_EQ_I64(yp_test_count_lines(csv), 13);
    for (int e = 0; e < 12; e++) {
        char want[40];
        snprintf(want, sizeof want, "\n%20d,", e);
        const char *a = strstr(csv, want);
        CHECK(a && !strstr(a + 1, want)); /* once */
    }
    /* a bare --resume finds the newest last.safetensors under runs/ (here: this run's) */
    CHECK_EQ_I64(run("train --resume"), 2);
    CHECK_STR_HAS(errtxt, "nothing to resume");
}

/* --cache ram: the images decoded once give the run an uncached one gives, row for row. */
static void test_cache_ram(void) {
    char a[8192], b[8192], path[256];
    CHECK_EQ_I64(run(TRAIN_ARGS " --epochs 2 --name cached --cache ram", data, dir), 0);
    CHECK_STR_HAS(out, "train: Caching images (");
    CHECK_EQ_I64(run(TRAIN_ARGS " --epochs 2 --name uncached", data, dir), 0);
    snprintf(path, sizeof path, "%s/runs/cached/results.csv", dir);
    CHECK(read_text(path, a, sizeof a) == 0);
    snprintf(path, sizeof path, "%s/runs/uncached/results.csv", dir);
    CHECK(read_text(path, b, sizeof b) == 0);
    CHECK(yp_test_count_lines(a) == 3 && strcmp(a, b) == 0);
}

static void test_val(void) {
    CHECK_EQ_I64(run("val --weights runs/exp/weights/best.safetensors --data '%s' --img 64 --batch 8 --threads 2 "
                     "--workers 2 --save-json --project runs/val", data), 0);
    CHECK_STR_HAS(out, "                   all          4");
    CHECK_STR_HAS(out, "Results saved to runs/val/exp");
    char json[1 << 16], path[256];
    snprintf(path, sizeof path, "%s/runs/val/exp/best_predictions.json", dir);
    CHECK(read_text(path, json, sizeof json) == 0);
    CHECK(json[0] == '[');
    CHECK_EQ_I64(run("val --weights '%s' --data '%s' --img 64", data, data), 2);
    CHECK_STR_HAS(errtxt, "data.yaml");
    CHECK_EQ_I64(yp_test_count_lines(errtxt), 1);
}

static void write_file(const char *name, const char *text) {
    char p[256];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    FILE *f = fopen(p, "wb");
    if (f) fputs(text, f), fclose(f);
}

static void one_line_exit(int code, const char *want) {
    CHECK_STR_HAS(errtxt, want);
    CHECK_EQ_I64(yp_test_count_lines(errtxt), 1);
    (void)code;
}

static void test_bad_input(void) {
    CHECK_EQ_I64(run("train --model yolov5n"), 2);
    one_line_exit(2, "--data is required");
    write_file("bad.yaml", "train: [unclosed\n");
    CHECK_EQ_I64(run("train --data bad.yaml"), 2);
    one_line_exit(2, "bad.yaml:");
    CHECK_EQ_I64(run("train --data '%s' --epochs zero", data), 2);
    one_line_exit(2, "--epochs zero");
    CHECK_EQ_I64(run("train --data '%s' --optimizer rmsprop", data), 2);
    one_line_exit(2, "--optimizer rmsprop: expected sgd|adam|adamw");
    CHECK_EQ_I64(run("train --data '%s' --epochs 1 --epochs 2", data), 2); /* the last would win silently */
    one_line_exit(2, "--epochs given twice");
    write_file("notckpt.safetensors", "this is not a checkpoint\n");
    CHECK_EQ_I64(run(TRAIN_ARGS " --epochs 1 --name w --weights notckpt.safetensors", data, dir), 2);
    one_line_exit(2, "notckpt.safetensors");
    /* a .pt is read in place; one whose 'model' would call os.system is refused, nothing run */
    CHECK_EQ_I64(run(TRAIN_ARGS " --epochs 1 --name w --weights '%s/pt/bad_os_system.pt'", data, dir, YP_TEST_DATA), 2);
    one_line_exit(2, "bad_os_system.pt: 'model' is a posix.system, neither a module nor a state dict");
    write_file("mixup.yaml", "lr0: 0.01\nmixup: 0.1\n");
    CHECK_EQ_I64(run(TRAIN_ARGS " --epochs 1 --hyp mixup.yaml", data, dir), 2);
    one_line_exit(2, "mixup.yaml:2");
    CHECK_EQ_I64(run("train --data '%s' --model yolov5n --img 64 --batch 4 --workers 2 --threads 2 --epochs 1 "
                     "--project /proc/yp_no", data), 2);
    one_line_exit(2, "--project /proc/yp_no");
    CHECK_EQ_I64(run(TRAIN_ARGS " --epochs 1 --mem 1MiB", data, dir), 1); /* refused before any allocation */
    one_line_exit(1, "needs");
    /* a budget where --batch 16 does not fit but a smaller batch does: the refusal names the best
     * one. The plan's fixed host bytes (oneDNN's scratch) depend on the CPU's instruction set, so
     * the budget is searched for rather than fixed; every budget tried refuses in one line. */
    int named = 0;
    for (int mib = 24; mib <= 64 && !named; mib += 4) {
        CHECK_EQ_I64(run("train --data '%s' --model yolov5n --img 64 --batch 16 --workers 2 --threads 2 --project "
                         "'%s/runs' --epochs 1 --mem %dMiB", data, dir, mib), 1);
        CHECK_EQ_I64(yp_test_count_lines(errtxt), 1);
        named = strstr(errtxt, "the best that fits is --batch") != NULL;
    }
    CHECK(named);
    /* a diverging run (lr0 1e30) stops at the first loss that is not finite, before the update,
     * with the last finished epoch's checkpoint in place */
    write_file("diverge.yaml", "lr0: 1.0e+30\nwarmup_epochs: 0\n");
    CHECK_EQ_I64(run(TRAIN_ARGS " --epochs 3 --name nan --hyp diverge.yaml", data, dir), 2);
    one_line_exit(2, "the loss is not finite");
    char last[300];
    snprintf(last, sizeof last, "%s/runs/nan/weights/last.safetensors", dir);
    const char *at = strstr(errtxt, " at epoch ");
    long e = at ? strtol(at + 10, NULL, 10) : -1;
    CHECK(e >= 0);
    CHECK_EQ_I64(access(last, R_OK) == 0, e > 0); /* a finished epoch left its checkpoint; none before */
    CHECK_EQ_I64(run(TRAIN_ARGS " --cache disk", data, dir), 2);
    one_line_exit(2, "--cache disk is train.py's; yoloplan does not support it");
    CHECK_EQ_I64(run("train --resume nowhere/last.safetensors"), 2);
    one_line_exit(2, "nowhere/last.safetensors");
    CHECK_EQ_I64(run("val --data '%s'", data), 2);
    one_line_exit(2, "--weights and --data are required");
}

/* bench-step --device `device` (a GPU's spec): one step, or without a GPU one line naming the
 * device and why, exit 2. */
static void bench_on_gpu(const char *device) {
    int rc = run("bench-step --device %s --model yolov5n --img 64 --batch 1 --steps 1 --warmup 0", device);
    char want[64];
    snprintf(want, sizeof want, "bench-step --device %s: ", device);
    if (rc == 0) {
        CHECK_STR_HAS(out, "cuda (fixed cost ");
    } else {
        CHECK_EQ_I64(rc, 2);
        one_line_exit(2, want);
    }
}

/* --device cuda for train and bench-step: without a GPU (or a build without CUDA) one line naming
 * the device and why, exit 2, nothing trained; with one, the plan line names the fixed cost the
 * backend measured and the run goes through the preflight to the steps. */
static void test_device_cuda(void) {
    int rc = run(TRAIN_ARGS " --epochs 1 --name cuda --device cuda", data, dir);
    if (rc == 0) {
        printf("  note: a GPU is here: train --device cuda ran\n");
        CHECK_STR_HAS(out, "device cuda (fixed cost ");
    } else {
        CHECK_EQ_I64(rc, 2);
        one_line_exit(2, "--device cuda: ");
        CHECK(!exists("%s/runs/%s", "cuda"));
    }
    bench_on_gpu("cuda");
    CHECK_EQ_I64(run("bench-step --device tpu"), 2);
    one_line_exit(2, "--device tpu: expected cpu or cuda");
}

/* Any backend kind's spec (kernels/yp_backend_kind.h): cpu:T runs on T threads, train.py's device
 * numbers mean CUDA devices, and several devices are refused in one line (exit 2, nothing made). */
static void test_device_specs(void) {
    CHECK_EQ_I64(run(TRAIN_ARGS " --epochs 1 --name cpu1 --device cpu:1", data, dir), 0);
    CHECK_STR_HAS(out, "device cpu:1 (1 threads)");
    CHECK_EQ_I64(run(TRAIN_ARGS " --epochs 1 --name multi --device 0,1", data, dir), 2);
    one_line_exit(2, "--device 0,1: multi-GPU training (DDP) is not available yet; pass one device");
    CHECK(!exists("%s/runs/%s", "multi"));
    CHECK_EQ_I64(run("bench-step --device cpu:1 --model yolov5n --img 64 --batch 1 --steps 1 --warmup 0 --json"), 0);
    CHECK_STR_HAS(out, "\"threads\":\t1,");
    bench_on_gpu("0");
    CHECK_EQ_I64(run("bench-step --device cpu:0"), 2);
    one_line_exit(2, "--device cpu:0: T of cpu:T is the thread count");
}

int main(void) {
    const char *tmp = getenv("TMPDIR");
    snprintf(dir, sizeof dir, "%s/yp_cli_train_XXXXXX", tmp && *tmp ? tmp : "/tmp");
    yp_err err = {0};
    yp_synth_opts so = {.n_train = 16, .n_val = 4, .nc = 3, .w = 64, .h = 64, .seed = 5};
    char synth[128];
    if (!mkdtemp(dir)) return perror("mkdtemp"), 1;
    snprintf(synth, sizeof synth, "%s/synth", dir);
    snprintf(data, sizeof data, "%s/synth/data.yaml", dir);
    if (yp_synth_write(synth, &so, NULL, &err)) return fprintf(stderr, "setup: %s\n", err.msg), 1;
    YP_RUN(test_train_run_folder);
    YP_RUN(test_kill_and_resume);
    YP_RUN(test_cache_ram);
    YP_RUN(test_val);
    YP_RUN(test_bad_input);
    YP_RUN(test_device_cuda);
    YP_RUN(test_device_specs);
    yp_test_remove_tree(dir);
    return yp_test_summary();
}
