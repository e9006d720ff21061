/* test_cli_flags.c - the command line as a train.py / val.py user types it: `--help` and `-h` for
 * every command (its usage on stdout, exit 0), train.py's spellings of train's options
 * (--batch-size, --imgsz, --img-size, --cfg NAME.yaml, --batch-size -1, --device cuda:0,
 * --optimizer Adam, a bare --cache) and val.py's of val's (--batch-size, --conf-thres,
 * --iou-thres, --max-det, --task, --verbose), each train.py / val.py flag yoloplan lacks refused in
 * one line (exit 2, no run folder), one option under two spellings refused, --img 333 rounded up
 * the same way by the planner and by train (train.py's check_img_size), the default batch on a
 * 48-image synthetic set (16, keeping train.py's 3 iterations an epoch), GPU_mem 0G on the CPU,
 * --noplots, --label-smoothing and --noautoanchor (refused for a yaml's `anchors: N`). */
#define _XOPEN_SOURCE 700 /* mkdtemp */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "yp_synth.h"
#include "yp_test.h"
#include "yp_test_fs.h"
#include "yp_test_run.h"

static char out[1 << 17], errtxt[1 << 14];
static char dir[96], data[160];

/* 48 training images of 64 px: yolov5n trains an epoch of them in seconds on 2 threads. */
#define TRAIN "train --data '%s' --workers 2 --threads 2 --epochs 1 --project '%s/runs' "

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

static int exists(const char *name) {
    char p[512];
    struct stat st;
    snprintf(p, sizeof p, "%s/%s", dir, name);
    return stat(p, &st) == 0;
}

/* Exit 2 with one line on stderr holding want, nothing on stdout. */
static void refused(int rc, const char *want) {
    CHECK_EQ_I64(rc, 2);
    CHECK_STR_HAS(errtxt, want);
    CHECK_EQ_I64(yp_test_count_lines(errtxt), 1);
    CHECK_EQ_I64((long long)strlen(out), 0);
}

/* Every command main.c dispatches prints its own usage for --help and -h, on stdout, exit 0,
 * whatever else is on the line; `yoloplan help CMD` is the same text. */
static void test_help_each_command(void) {
    static const char *const cmds[][2] = {
        {"plan", "usage: yoloplan --gpu GPU"},         {"info", "usage: yoloplan info "},
        {"import", "usage: yoloplan import "},         {"schedule", "usage: yoloplan schedule "},
        {"bench-step", "usage: yoloplan bench-step "}, {"synth", "usage: yoloplan synth "},
        {"train", "usage: yoloplan train "},           {"val", "usage: yoloplan val "},
        {"version", "usage: yoloplan version"},        {"help", "usage: yoloplan help"},
    };
    static char first[sizeof out];
    for (size_t i = 0; i < sizeof cmds / sizeof *cmds; i++) {
        const char *c = cmds[i][0];
        CHECK_EQ_I64(run("%s --help", c), 0);
        if (strncmp(out, cmds[i][1], strlen(cmds[i][1]))) fprintf(stderr, "%s --help printed: %.80s\n", c, out);
        CHECK(strncmp(out, cmds[i][1], strlen(cmds[i][1])) == 0);
        CHECK_STR_HAS(out, "Exit codes: 0 success");
        CHECK_EQ_I64((long long)strlen(errtxt), 0);
        snprintf(first, sizeof first, "%s", out);
        CHECK_EQ_I64(run("%s --data nowhere.yaml -h", c), 0); /* nothing else on the line is looked at */
        CHECK(strcmp(out, first) == 0);
        CHECK_EQ_I64(run("help %s", c), 0);
        CHECK(strcmp(out, first) == 0);
    }
    CHECK_EQ_I64(run("--gpu 8GB --help"), 0); /* the planner's options come first */
    CHECK(strncmp(out, "usage: yoloplan --gpu GPU", 25) == 0);
    CHECK_EQ_I64(run("train --help"), 0); /* train's lists train.py's flags and the ones refused */
    CHECK_STR_HAS(out, "--batch-size B | --batch B");
    CHECK_STR_HAS(out, "--imgsz S | --img S | --img-size S");
    CHECK_STR_HAS(out, "--image-weights");
    CHECK_EQ_I64(run("val -h"), 0);
    CHECK_STR_HAS(out, "--conf-thres C | --conf C");
    CHECK_EQ_I64(run("help frobnicate"), 2);
    CHECK_EQ_I64(run("frobnicate --help"), 2);
    CHECK_STR_HAS(errtxt, "unknown command \"frobnicate\"");
}

/* Each train.py flag yoloplan does not implement: one line "--X is train.py's; yoloplan does not
 * support it (why)", exit 2, before anything is made; the same for val.py's. */
static void test_refused_flags(void) {
    static const char *const train_py[][2] = {
        {"--rect", "--rect"}, {"--nosave", "--nosave"}, {"--evolve", "--evolve"}, {"--evolve 10", "--evolve"},
        {"--evolve_population d", "--evolve_population"}, {"--resume_evolve x", "--resume_evolve"},
        {"--bucket b", "--bucket"}, {"--image-weights", "--image-weights"}, {"--single-cls", "--single-cls"},
        {"--quad", "--quad"}, {"--save-period 5", "--save-period"}, {"--sync-bn", "--sync-bn"},
        {"--local_rank 0", "--local_rank"}, {"--entity e", "--entity"}, {"--upload_dataset", "--upload_dataset"},
        {"--bbox_interval 1", "--bbox_interval"}, {"--artifact_alias latest", "--artifact_alias"},
        {"--cache disk", "--cache disk"}, {"--cache val", "--cache val"}};
    char want[96];
    for (size_t i = 0; i < sizeof train_py / sizeof *train_py; i++) {
        snprintf(want, sizeof want, "%s is train.py's; yoloplan does not support it (", train_py[i][1]);
        refused(run(TRAIN "--model yolov5n --img 64 --name refused %s", data, dir, train_py[i][0]), want);
    }
    CHECK(!exists("runs/refused"));
    refused(run(TRAIN "--freeze 0 1 2", data, dir), "--freeze 0 1 ...: a list of layers is train.py's");
    refused(run(TRAIN "--device 0,1", data, dir),
            "--device 0,1: multi-GPU training (DDP) is not available yet; pass one device, e.g. --device 0");
    refused(run(TRAIN "--device cuda:0,1", data, dir), "multi-GPU training (DDP) is not available yet");
    refused(run(TRAIN "--batch 0", data, dir), "--batch 0: expected a batch in 1..1024, or -1");
    refused(run(TRAIN "--batch-size -2", data, dir), "--batch-size -2: expected an integer in -1..1024");
    refused(run(TRAIN "--label-smoothing 1.5", data, dir), "--label-smoothing 1.5: expected a number in [0, 1)");
    refused(run(TRAIN "--optimizer RMSProp", data, dir), "--optimizer RMSProp: expected sgd|adam|adamw");
    /* one option under two spellings: the last would win silently */
    refused(run(TRAIN "--batch 4 --batch-size 8", data, dir), "--batch-size: --batch is the same option");
    refused(run(TRAIN "--img 64 --imgsz 64", data, dir), "--imgsz: --img is the same option");
    refused(run(TRAIN "--img-size 64 --img 64", data, dir), "--img: --img-size is the same option");
    refused(run(TRAIN "--model yolov5n --cfg yolov5n.yaml", data, dir), "--cfg: --model is the same option");
    CHECK_EQ_I64(run(TRAIN "--cfg nowhere/yolov9.yaml", data, dir), 2); /* after the data's counts on stdout */
    CHECK_STR_HAS(errtxt, "--model nowhere/yolov9.yaml: no such file and no bundled model of that name");
    CHECK_EQ_I64(yp_test_count_lines(errtxt), 1);
    /* a yaml's `anchors: N` has no anchors to keep: only AutoAnchor fills them */
    CHECK_EQ_I64(run(TRAIN "--noautoanchor --img 64 --model '%s/yaml/good/repeats_identity.yaml'", data, dir,
                     YP_TEST_DATA), 2);
    CHECK_STR_HAS(errtxt, "--noautoanchor: ");
    CHECK_STR_HAS(errtxt, "gives `anchors: 2`, which only AutoAnchor fills");
    CHECK_EQ_I64(yp_test_count_lines(errtxt), 1);
    static const char *const val_py[] = {"--save-txt", "--save-hybrid", "--save-conf", "--single-cls", "--augment",
                                         "--half", "--dnn"};
    for (size_t i = 0; i < sizeof val_py / sizeof *val_py; i++) {
        snprintf(want, sizeof want, "%s is val.py's; yoloplan does not support it (", val_py[i]);
        refused(run("val --weights w.safetensors --data '%s' %s", data, val_py[i]), want);
    }
    refused(run("val --weights w.safetensors --data '%s' --task speed", data), "--task speed is val.py's");
    refused(run("val --weights a.pt b.pt --data '%s'", data), "--weights a.pt b.pt is val.py's ensemble");
    refused(run("val --weights w.safetensors --data '%s' --conf 0.1 --conf-thres 0.2", data),
            "--conf-thres: --conf is the same option");
    refused(run("val --weights w.safetensors --data '%s' --device cuda:0", data),
            "--device cuda:0: val runs on the CPU executor only for now");
}

/* The planner and train round --img up as train.py's check_img_size does, with its one warning
 * line: the planner then plans exactly what --img 352 plans, train plans at 352; a size below two
 * strides becomes 64. */
static void test_planner_img(void) {
    static char want[sizeof out];
    CHECK_EQ_I64(run("--gpu 8GB --model yolov5n --img 352 --top 2"), 0);
    snprintf(want, sizeof want, "%s", out);
    CHECK_EQ_I64((long long)strlen(errtxt), 0);
    CHECK_EQ_I64(run("--gpu 8GB --model yolov5n --img 333 --top 2"), 0);
    CHECK(strcmp(out, want) == 0);
    CHECK_STR_HAS(errtxt, "WARNING: --img-size 333 must be multiple of max stride 32, updating to 352\n");
    CHECK_EQ_I64(yp_test_count_lines(errtxt), 1);
    CHECK_EQ_I64(run("--gpu 8GB --model yolov5n --imgsz 333 --top 2"), 0); /* train.py's spelling */
    CHECK(strcmp(out, want) == 0);
    CHECK_EQ_I64(run("--gpu 8GB --model yolov5n --img 333x100 --top 1"), 0);
    CHECK_STR_HAS(errtxt, "--img-size 100 must be multiple of max stride 32, updating to 128");
    CHECK_STR_HAS(out, " 352x128 ");
    CHECK_EQ_I64(run("--gpu 8GB --model yolov5n --img 32 --top 1"), 0);
    CHECK_STR_HAS(errtxt, "--img-size 32 must be multiple of max stride 32, updating to 64");
    /* train: the same line, then it plans at 352 (a budget nothing fits ends it there, exit 1) */
    CHECK_EQ_I64(run(TRAIN "--model yolov5n --img 333 --mem 1MiB", data, dir), 1);
    CHECK_STR_HAS(errtxt, "WARNING: --img-size 333 must be multiple of max stride 32, updating to 352\n");
    CHECK_STR_HAS(errtxt, "no plan of yolov5n at --img 352");
    CHECK_EQ_I64(yp_test_count_lines(errtxt), 2);
    CHECK_EQ_I64(run(TRAIN "--model yolov5n --img 16 --mem 1MiB", data, dir), 1);
    CHECK_STR_HAS(errtxt, "WARNING: --img-size 16 must be multiple of max stride 32, updating to 64\n");
    CHECK_EQ_I64(run("--gpu 8GB --target pytorch --model yolov5n --img 333"), 0);
    CHECK_STR_HAS(errtxt, "updating to 352");
    CHECK_STR_HAS(out, "yolov5n at 352");
}

/* The default batch on 48 images: never fewer iterations an epoch than train.py's default 16 gives
 * (3), so 16, and the plan line says why; train.py's spellings of the options (--cfg NAME.yaml
 * finding the bundled model, --img-size rounded up with check_img_size's line); GPU_mem 0G on the
 * CPU, with the arena in the plan line. */
static void test_train_defaults_and_spellings(void) {
    CHECK_EQ_I64(run(TRAIN "--cfg yolov5n.yaml --img-size 33 --optimizer AdamW --cache --name d", data, dir), 0);
    CHECK_STR_HAS(errtxt, "WARNING: --img-size 33 must be multiple of max stride 32, updating to 64\n");
    CHECK_EQ_I64(yp_test_count_lines(errtxt), 1);
    CHECK_STR_HAS(out, "plan: yolov5n, batch 16 (kept <= 16 so an epoch has train.py's 3 iterations on 48 images), "
                       "accumulate 4, img 64, fp32");
    CHECK_STR_HAS(out, "arena 0.");
    CHECK_STR_HAS(out, "train: Caching images ("); /* a bare --cache is ram */
    CHECK_STR_HAS(out, "        0/0         0G ");
    CHECK_STR_HAS(out, " 3/3 [");
    char yaml[8192], path[512];
    snprintf(path, sizeof path, "%s/runs/d/opt.yaml", dir);
    FILE *f = fopen(path, "rb");
    size_t n = f ? fread(yaml, 1, sizeof yaml - 1, f) : 0;
    if (f) fclose(f);
    yaml[n] = 0;
    CHECK_STR_HAS(yaml, "batch_size: 16\n");
    CHECK_STR_HAS(yaml, "imgsz: 64\n");
    CHECK_STR_HAS(yaml, "optimizer: \"adamw\"\n");
    CHECK_STR_HAS(yaml, "cfg: \"yolov5n.yaml\"\n");
    /* --batch-size -1 (AutoBatch): the plan's fastest that fits, up to the 48 images here; --noplots */
    CHECK_EQ_I64(run(TRAIN "--cfg models/yolov5n.yaml --imgsz 64 --batch-size -1 --noplots --label-smoothing 0.1 "
                           "--device cpu --name auto", data, dir), 0);
    CHECK_STR_HAS(out, " (--batch -1: the fastest that fits, at most 48: the nominal 64 or the 48 images)");
    CHECK(exists("runs/auto/results.csv") && !exists("runs/auto/results.png"));
    snprintf(path, sizeof path, "%s/runs/auto/hyp.yaml", dir);
    f = fopen(path, "rb");
    n = f ? fread(yaml, 1, sizeof yaml - 1, f) : 0;
    if (f) fclose(f);
    yaml[n] = 0;
    CHECK_STR_HAS(yaml, "label_smoothing: 0.1");
    /* a pinned --batch-size is the batch, with nothing to explain; --weights '' is from scratch (the
     * README's train.py recipe line) */
    CHECK_EQ_I64(run(TRAIN "--weights '' --cfg yolov5n --img 64 --batch-size 8 --noautoanchor --name pinned", data,
                     dir), 0);
    CHECK_STR_HAS(out, "plan: yolov5n, batch 8, accumulate 8, img 64");
    /* --device cuda:0 is one device: without a GPU one line saying why, nothing trained */
    int rc = run(TRAIN "--cfg yolov5n --img 64 --batch 8 --device cuda:0 --name cuda0", data, dir);
    if (rc) {
        CHECK_EQ_I64(rc, 2);
        CHECK_STR_HAS(errtxt, "--device cuda:0: ");
        CHECK_EQ_I64(yp_test_count_lines(errtxt), 1);
        CHECK(!exists("runs/cuda0"));
    } else {
        CHECK_STR_HAS(out, "device cuda:0 (fixed cost ");
    }
    /* val.py's spellings on that run's checkpoint */
    CHECK_EQ_I64(run("val --weights runs/d/weights/best.safetensors --data '%s' --batch-size 8 --imgsz 33 "
                     "--conf-thres 0.01 --iou-thres 0.5 --max-det 100 --task train --device cpu:2 --workers 2 "
                     "--verbose", data), 0);
    CHECK_STR_HAS(errtxt, "WARNING: --img-size 33 must be multiple of max stride 32, updating to 64\n");
    CHECK_STR_HAS(out, "                   all         48");
}

int main(void) {
    const char *tmp = getenv("TMPDIR");
    snprintf(dir, sizeof dir, "%s/yp_cli_flags_XXXXXX", tmp && *tmp ? tmp : "/tmp");
    yp_err err = {0};
    yp_synth_opts so = {.n_train = 48, .n_val = 4, .nc = 2, .w = 64, .h = 64, .seed = 3};
    char synth[128];
    if (!mkdtemp(dir)) return perror("mkdtemp"), 1;
    snprintf(synth, sizeof synth, "%s/synth", dir);
    snprintf(data, sizeof data, "%s/synth/data.yaml", dir);
    if (yp_synth_write(synth, &so, NULL, &err)) return fprintf(stderr, "setup: %s\n", err.msg), 1;
    YP_RUN(test_help_each_command);
    YP_RUN(test_refused_flags);
    YP_RUN(test_planner_img);
    YP_RUN(test_train_defaults_and_spellings);
    yp_test_remove_tree(dir);
    return yp_test_summary();
}
