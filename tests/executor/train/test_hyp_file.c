/* test_hyp_file.c - the hyperparameter file (executor/train/yp_hyp_file.h): the defaults are
 * hyp.scratch-low's, a scratch-low file reads to them, write then read gives every value back
 * exactly (atomically, nothing left behind), and each bad file is one line naming FILE:LINE:
 * unknown key, not a number, out of range, the refused values (mixup, copy_paste, focal loss,
 * pw != 1), empty, not a mapping, duplicate, missing, a FIFO (without hanging), a device, too long. */
#define _XOPEN_SOURCE 700 /* mkdtemp, mkfifo */
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "yaml_tree.h"
#include "yp_hyp_file.h"
#include "yp_test.h"
#include "yp_test_fs.h"

static char dir[512];

static const char *path_of(const char *name) {
    static char p[4][1024];
    static int next;
    char *out = p[next++ % 4];
    snprintf(out, sizeof p[0], "%s/%s", dir, name);
    return out;
}

static void put(const char *name, const char *text) {
    FILE *f = fopen(path_of(name), "wb");
    if (!f) return;
    fputs(text, f);
    fclose(f);
}

/* The values of hyp.scratch-low.yaml, as that file writes them. */
static const char scratch_low[] =
    "lr0: 0.01\nlrf: 0.01\nmomentum: 0.937\nweight_decay: 0.0005\nwarmup_epochs: 3.0\nwarmup_momentum: 0.8\n"
    "warmup_bias_lr: 0.1\nbox: 0.05\ncls: 0.5\ncls_pw: 1.0\nobj: 1.0\nobj_pw: 1.0\niou_t: 0.20\nanchor_t: 4.0\n"
    "# anchors: 3\nfl_gamma: 0.0\nhsv_h: 0.015\nhsv_s: 0.7\nhsv_v: 0.4\ndegrees: 0.0\ntranslate: 0.1\nscale: 0.5\n"
    "shear: 0.0\nperspective: 0.0\nflipud: 0.0\nfliplr: 0.5\nmosaic: 1.0\nmixup: 0.0\ncopy_paste: 0.0\n";

static int same(const yp_hyp_file *a, const yp_hyp_file *b) { return memcmp(a, b, sizeof *a) == 0; }

static void test_defaults_are_scratch_low(void) {
    yp_hyp_file h;
    yp_hyp_file_default(&h);
    CHECK(h.lr0 == 0.01 && h.lrf == 0.01 && h.momentum == 0.937 && h.weight_decay == 0.0005);
    CHECK(h.warmup_epochs == 3.0 && h.warmup_momentum == 0.8 && h.warmup_bias_lr == 0.1);
    CHECK(h.box == 0.05 && h.cls == 0.5 && h.cls_pw == 1.0 && h.obj == 1.0 && h.obj_pw == 1.0);
    CHECK(h.iou_t == 0.20 && h.anchor_t == 4.0 && h.fl_gamma == 0.0 && h.label_smoothing == 0.0);
    CHECK(h.aug.hsv_h == 0.015 && h.aug.hsv_s == 0.7 && h.aug.hsv_v == 0.4);
    CHECK(h.aug.degrees == 0.0 && h.aug.translate == 0.1 && h.aug.scale == 0.5 && h.aug.shear == 0.0);
    CHECK(h.aug.perspective == 0.0 && h.aug.flipud == 0.0 && h.aug.fliplr == 0.5 && h.aug.mosaic == 1.0);
    CHECK(h.mixup == 0.0 && h.copy_paste == 0.0);
    yp_aug_hyp a;
    yp_aug_hyp_default(&a);
    CHECK(memcmp(&a, &h.aug, sizeof a) == 0);
}

static void test_read_scratch_low(void) {
    yp_hyp_file h, def;
    yp_err err = {{0}};
    yp_hyp_file_default(&def);
    put("low.yaml", scratch_low);
    memset(&h, 0x55, sizeof h);
    REQUIRE(yp_hyp_file_read(path_of("low.yaml"), &h, &err) == 0);
    CHECK(same(&h, &def));
    /* integers are numbers, absent keys keep their defaults, anchors is ignored */
    put("part.yaml", "lr0: 0.02\nobj: 2\nanchors: 3\nwarmup_epochs: 0.5\n");
    REQUIRE(yp_hyp_file_read(path_of("part.yaml"), &h, &err) == 0);
    CHECK(h.lr0 == 0.02 && h.obj == 2.0 && h.warmup_epochs == 0.5 && h.momentum == 0.937 && h.aug.mosaic == 1.0);
    put("anchors.yaml", "anchors: [[10, 13, 16, 30]]\nlabel_smoothing: 0.1\n");
    REQUIRE(yp_hyp_file_read(path_of("anchors.yaml"), &h, &err) == 0);
    CHECK(h.label_smoothing == 0.1 && h.lr0 == 0.01);
}

/* Entries of folder other than keep (a temporary file left behind). */
static int entries_besides(const char *folder, const char *keep) {
    DIR *d = opendir(folder);
    int n = 0;
    for (struct dirent *e; d && (e = readdir(d));)
        n += strcmp(e->d_name, ".") && strcmp(e->d_name, "..") && strcmp(e->d_name, keep);
    if (d) closedir(d);
    return n;
}

static void test_round_trip(void) {
    yp_hyp_file h, back;
    yp_err err = {{0}};
    mkdir(path_of("run"), 0755);
    yp_hyp_file_default(&h);
    REQUIRE(yp_hyp_file_write(path_of("run/hyp.yaml"), &h, &err) == 0);
    REQUIRE(yp_hyp_file_read(path_of("run/hyp.yaml"), &back, &err) == 0);
    CHECK(same(&h, &back));
    /* values no short decimal gives back, overwriting the file */
    h.lr0 = 0.1 + 0.2, h.lrf = nextafter(0.01, 1), h.momentum = 0.95, h.weight_decay = 1e-5;
    h.warmup_epochs = 1.0 / 3, h.warmup_momentum = 0.0, h.warmup_bias_lr = 1e-300, h.box = 0.05 * 3 / 4;
    h.cls = 0.5 * 20 / 80, h.obj = 1.0 * (320.0 / 640) * (320.0 / 640), h.iou_t = 1.0, h.anchor_t = nextafter(1, 2);
    h.label_smoothing = 0.1, h.aug.hsv_h = 1.0 / 7, h.aug.degrees = 179.99999999999997, h.aug.scale = 0.9;
    h.aug.shear = 2.5, h.aug.perspective = 0.0005, h.aug.flipud = 0.5, h.aug.mosaic = 0.0;
    REQUIRE(yp_hyp_file_write(path_of("run/hyp.yaml"), &h, &err) == 0);
    memset(&back, 0, sizeof back);
    REQUIRE(yp_hyp_file_read(path_of("run/hyp.yaml"), &back, &err) == 0);
    CHECK(same(&h, &back));
    /* every key once, numbers as YAML 1.1 (PyYAML) floats, nothing else in the folder */
    FILE *f = fopen(path_of("run/hyp.yaml"), "r");
    REQUIRE(f != NULL);
    char text[4096];
    size_t n = fread(text, 1, sizeof text - 1, f);
    fclose(f);
    text[n] = '\0';
    CHECK_STR_HAS(text, "\nlr0: 0.30000000000000004\n");
    CHECK_STR_HAS(text, "\nmomentum: 0.95\n");
    CHECK_STR_HAS(text, "\nweight_decay: 1.0e-05\n");
    CHECK_STR_HAS(text, "\nwarmup_momentum: 0.0\n");
    CHECK_STR_HAS(text, "\nwarmup_bias_lr: 1.0e-300\n");
    CHECK_STR_HAS(text, "\niou_t: 1.0\n");
    CHECK_STR_HAS(text, "\ncopy_paste: 0.0\nlabel_smoothing: 0.1\n");
    int lines = 0;
    for (size_t i = 0; i < n; i++) lines += text[i] == '\n';
    CHECK_EQ_I64(lines, 1 + 29); /* the comment and 29 keys */
    CHECK_EQ_I64(entries_besides(path_of("run"), "hyp.yaml"), 0);
}

static void test_write_refuses(void) {
    yp_hyp_file h;
    yp_err err = {{0}};
    yp_hyp_file_default(&h);
    h.mixup = 0.1;
    CHECK(yp_hyp_file_write(path_of("bad_w.yaml"), &h, &err) == -1);
    CHECK_STR_HAS(err.msg, "bad_w.yaml: mixup 0.1: not supported by yoloplan's loader; set mixup: 0.0");
    yp_hyp_file_default(&h);
    h.lr0 = NAN;
    CHECK(yp_hyp_file_write(path_of("bad_w.yaml"), &h, &err) == -1);
    CHECK_STR_HAS(err.msg, "bad_w.yaml: lr0 nan is not a finite number");
    CHECK(access(path_of("bad_w.yaml"), F_OK) != 0);
    yp_hyp_file_default(&h);
    CHECK(yp_hyp_file_write(path_of("no/such/folder/hyp.yaml"), &h, &err) == -1);
    CHECK_STR_HAS(err.msg, "hyp.yaml: cannot create a temporary file next to it");
}

/* Reads name (written with text, unless text is NULL); expects failure and the message
 * "<dir>/<name><tail>" exactly, on one line, with h untouched. */
static void refused(const char *name, const char *text, const char *tail) {
    yp_hyp_file h, before;
    yp_err err = {{0}};
    char want[2048];
    if (text) put(name, text);
    memset(&h, 0x5a, sizeof h);
    before = h;
    snprintf(want, sizeof want, "%s%s", path_of(name), tail);
    int rc = yp_hyp_file_read(path_of(name), &h, &err);
    CHECK(rc == -1);
    if (strcmp(err.msg, want) != 0) {
        fprintf(stderr, "    got:  %s\n    want: %s\n", err.msg, want);
        CHECK(strcmp(err.msg, want) == 0);
    }
    CHECK(strchr(err.msg, '\n') == NULL);
    CHECK(same(&h, &before));
}

static void test_bad_files(void) {
    refused("unknown.yaml", "lr0: 0.01\nlr: 0.1\n",
            ":2: unknown key \"lr\"; the keys are lr0, lrf, momentum, weight_decay, warmup_epochs, warmup_momentum, "
            "warmup_bias_lr, box, cls, cls_pw, obj, obj_pw, iou_t, anchor_t, fl_gamma, hsv_h, hsv_s, hsv_v, degrees, "
            "translate, scale, shear, perspective, flipud, fliplr, mosaic, mixup, copy_paste, label_smoothing "
            "(anchors is accepted and ignored)");
    refused("word.yaml", "lr0: 0.01\nmomentum: fast\n",
            ":2: momentum: expected a number, got the string \"fast\"; fix the value");
    refused("quoted.yaml", "lr0: '0.01'\n",
            ":1: lr0: expected a number, got the quoted string \"0.01\"; fix the value");
    refused("list.yaml", "box:\n  - 0.05\n", ":2: box: expected a number, got a list; fix the value");
    refused("null.yaml", "lr0: 0.01\ncls:\nobj: 1.0\n", ":2: cls: expected a number, got nothing; fix the value");
    refused("nan.yaml", "lr0: nan\n", ":1: lr0: expected a number, got the string \"nan\"; fix the value");
    refused("range.yaml", "lr0: 0.01\nlrf: 0.01\nmomentum: 1.2\n",
            ":3: momentum 1.2 is out of range; use 0 <= momentum < 1 (SGD momentum, Adam beta1)");
    refused("zero_lr.yaml", "lr0: 0\n", ":1: lr0 0 is out of range; use lr0 > 0 (the initial learning rate)");
    refused("flip.yaml", "fliplr: 1.5\n", ":1: fliplr 1.5 is out of range; use 0 <= fliplr <= 1 (a probability)");
    refused("wd.yaml", "weight_decay: -0.0005\n",
            ":1: weight_decay -0.0005 is out of range; use 0 <= weight_decay < 1");
    refused("anchor_t.yaml", "anchor_t: 1\n",
            ":1: anchor_t 1 is out of range; use anchor_t > 1 (a width/height ratio limit)");
    refused("mixup.yaml", "lr0: 0.01\nscale: 0.9\nmixup: 0.1\n",
            ":3: mixup 0.1: not supported by yoloplan's loader; set mixup: 0.0");
    refused("mixup_neg.yaml", "mixup: -1\n", ":1: mixup -1 is out of range; use 0 <= mixup <= 1 (a probability)");
    refused("copy_paste.yaml", "copy_paste: 0.1\n",
            ":1: copy_paste 0.1: not supported by yoloplan's loader; set copy_paste: 0.0");
    refused("focal.yaml", "fl_gamma: 1.5\n", ":1: fl_gamma 1.5: focal loss is not supported by yoloplan's loss; "
            "set fl_gamma: 0.0");
    refused("cls_pw.yaml", "cls_pw: 2\n",
            ":1: cls_pw 2: not supported by yoloplan's loss (a BCE positive weight); set cls_pw: 1.0");
    refused("obj_pw.yaml", "obj_pw: 0.5\n",
            ":1: obj_pw 0.5: not supported by yoloplan's loss (a BCE positive weight); set obj_pw: 1.0");
    refused("dup.yaml", "lr0: 0.01\nlrf: 0.1\nlr0: 0.02\n",
            ":3: duplicate key \"lr0\" (first given at line 1); keep one");
    refused("empty.yaml", "", ":1: empty file; a hyp file maps each hyperparameter to a number, e.g. lr0: 0.01 "
            "(YOLOv5's hyp.scratch-low.yaml)");
    refused("comments.yaml", "# nothing here\n\n", ":1: empty file; a hyp file maps each hyperparameter to a number, "
            "e.g. lr0: 0.01 (YOLOv5's hyp.scratch-low.yaml)");
    refused("seq.yaml", "- 0.01\n- 0.937\n",
            ":1: expected a mapping of hyperparameters (lr0: 0.01, ...), got a list; fix the file");
    refused("scalar.yaml", "\n\nhello\n",
            ":3: expected a mapping of hyperparameters (lr0: 0.01, ...), got the string \"hello\"; fix the file");
}

static void test_bad_paths(void) {
    yp_hyp_file h;
    yp_err err = {{0}};
    refused("absent.yaml", NULL, ": cannot open: No such file or directory; check the path");
    REQUIRE(mkfifo(path_of("fifo.yaml"), 0600) == 0); /* no writer: a blocking open would wait forever */
    refused("fifo.yaml", NULL, ": a FIFO, not a yaml file; give a regular file");
    CHECK(yp_hyp_file_read("/dev/zero", &h, &err) == -1); /* an endless file */
    CHECK_STR_HAS(err.msg, "/dev/zero: a device, not a yaml file");
    mkdir(path_of("folder.yaml"), 0755);
    refused("folder.yaml", NULL, ": a folder, not a yaml file; give a regular file");
    put("huge.yaml", "lr0: 0.01\n"); /* sparse: no disk space used */
    REQUIRE(truncate(path_of("huge.yaml"), (off_t)YP_YN_MAX_FILE + 1) == 0);
    CHECK(yp_hyp_file_read(path_of("huge.yaml"), &h, &err) == -1);
    CHECK_STR_HAS(err.msg, "huge.yaml: 16777217 bytes, more than the 16777216 a yaml file may have");
    put("syntax.yaml", "lr0: 0.01\nlrf: [0.01\nmomentum: 0.9\n");
    CHECK(yp_hyp_file_read(path_of("syntax.yaml"), &h, &err) == -1);
    CHECK_STR_HAS(err.msg, "syntax.yaml:");
    CHECK_STR_HAS(err.msg, "syntax error");
}

int main(void) {
    const char *tmp = getenv("TMPDIR");
    snprintf(dir, sizeof dir, "%s/yp_hyp_file_XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        return 1;
    }
    YP_RUN(test_defaults_are_scratch_low);
    YP_RUN(test_read_scratch_low);
    YP_RUN(test_round_trip);
    YP_RUN(test_write_refuses);
    YP_RUN(test_bad_files);
    YP_RUN(test_bad_paths);
    yp_test_remove_tree(dir);
    return yp_test_summary();
}
