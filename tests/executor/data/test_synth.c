/* test_synth.c - the synthetic dataset (executor/data/yp_synth.h) and `yoloplan synth`: the same
 * options give the same bytes, the labels are valid YOLO rows that the dataset scan counts, the
 * images decode at the size asked (PNG to the very pixels drawn), and bad options exit 2 with
 * one line. */
#define _XOPEN_SOURCE 700 /* realpath */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "yp_dataset.h"
#include "yp_image.h"
#include "yp_synth.h"
#include "yp_test_run.h"
#include "yp_test.h"

static char dir[64] = "/tmp/yp_test_synth.XXXXXX";

static const yp_synth_opts opts = {.n_train = 14, .n_val = 3, .nc = 7, .w = 96, .h = 64, .seed = 5};

/* ---- files ---- */

/* The whole file in a malloc'd buffer (NULL when unreadable). */
static uint8_t *slurp(const char *path, size_t *n) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    uint8_t *buf = NULL;
    size_t cap = 0;
    *n = 0;
    for (;;) {
        if (*n == cap) {
            uint8_t *b = realloc(buf, cap = cap ? 2 * cap : 4096);
            if (!b) break;
            buf = b;
        }
        size_t got = fread(buf + *n, 1, cap - *n, f);
        if (!got) break;
        *n += got;
    }
    fclose(f);
    return buf;
}

/* The sorted names in folder path (at most 64 of at most 31 characters). Returns the count. */
static int list(const char *path, char names[64][32]) {
    DIR *d = opendir(path);
    int n = 0;
    for (struct dirent *e; d && (e = readdir(d));)
        if (e->d_name[0] != '.' && n < 64 && strlen(e->d_name) < 32) strcpy(names[n++], e->d_name);
    if (d) closedir(d);
    qsort(names, (size_t)n, 32, (int (*)(const void *, const void *))strcmp);
    return n;
}

static const char *const folders[] = {"images/train", "images/val", "labels/train", "labels/val"};

/* Whether trees a and b hold the same files with the same bytes (data.yaml compared by the caller). */
static int same_tree(const char *a, const char *b) {
    int same = 1;
    for (size_t k = 0; k < 4; k++) {
        char pa[512], pb[512], na[64][32], nb[64][32];
        snprintf(pa, sizeof pa, "%s/%s", a, folders[k]);
        snprintf(pb, sizeof pb, "%s/%s", b, folders[k]);
        int n = list(pa, na);
        if (n == 0 || n != list(pb, nb)) return 0;
        for (int i = 0; i < n && same; i++) {
            char fa[600], fb[600];
            size_t la = 0, lb = 0;
            if (snprintf(fa, sizeof fa, "%s/%s", pa, na[i]) >= (int)sizeof fa ||
                snprintf(fb, sizeof fb, "%s/%s", pb, nb[i]) >= (int)sizeof fb)
                return 0;
            uint8_t *x = slurp(fa, &la), *y = slurp(fb, &lb);
            same = strcmp(na[i], nb[i]) == 0 && x && y && la == lb && memcmp(x, y, la) == 0;
            free(x);
            free(y);
        }
    }
    return same;
}

static int same_file(const char *a, const char *b) {
    size_t la = 0, lb = 0;
    uint8_t *x = slurp(a, &la), *y = slurp(b, &lb);
    int same = x && y && la == lb && memcmp(x, y, la) == 0;
    free(x);
    free(y);
    return same;
}

static void remove_tree(const char *root) {
    char names[64][32], path[600], sub[512];
    for (size_t k = 0; k < 4; k++) {
        snprintf(sub, sizeof sub, "%s/%s", root, folders[k]);
        int n = list(sub, names);
        for (int i = 0; i < n; i++) snprintf(path, sizeof path, "%s/%.31s", sub, names[i]), unlink(path);
        rmdir(sub);
    }
    snprintf(path, sizeof path, "%s/images", root), rmdir(path);
    snprintf(path, sizeof path, "%s/labels", root), rmdir(path);
    snprintf(path, sizeof path, "%s/data.yaml", root), unlink(path);
    rmdir(root);
}

/* ---- cases ---- */

static void test_same_bytes(void) {
    char a[128], a0[128], b[128], ya[160], ya0[160], yb[160];
    yp_err err;
    yp_synth_stats st, st2;
    snprintf(a, sizeof a, "%s/a", dir);
    snprintf(a0, sizeof a0, "%s/a0", dir);
    snprintf(b, sizeof b, "%s/sub/b", dir); /* parents are created */
    REQUIRE(yp_synth_write(a, &opts, &st, &err) == 0);
    CHECK_EQ_I64(st.n_images, 17);
    CHECK(st.n_jpeg > 0 && st.n_png > 0);
    CHECK_EQ_I64(st.n_jpeg + st.n_png, 17);
    REQUIRE(rename(a, a0) == 0);
    REQUIRE(yp_synth_write(a, &opts, &st2, &err) == 0); /* the same command again */
    CHECK(memcmp(&st, &st2, sizeof st) == 0);
    CHECK(same_tree(a, a0));
    snprintf(ya, sizeof ya, "%s/data.yaml", a);
    snprintf(ya0, sizeof ya0, "%s/data.yaml", a0);
    CHECK(same_file(ya, ya0));
    REQUIRE(yp_synth_write(b, &opts, NULL, &err) == 0); /* elsewhere: only data.yaml's path differs */
    CHECK(same_tree(a, b));
    snprintf(yb, sizeof yb, "%s/data.yaml", b);
    size_t n;
    char *text = (char *)slurp(yb, &n);
    REQUIRE(text);
    text = realloc(text, n + 1), text[n] = '\0';
    CHECK_STR_HAS(text, "/sub/b\"\ntrain: images/train\nval: images/val\nnc: 7\nnames: [red_rectangle, red_ellipse, "
                        "red_triangle, red_diamond, red_cross, green_rectangle, green_ellipse]\n");
    free(text);
    CHECK(yp_synth_write(a, &opts, NULL, &err) == -1); /* never into a folder with files */
    CHECK_STR_HAS(err.msg, "exists and is not empty");
    yp_synth_opts other = opts;
    other.seed = 6;
    remove_tree(b);
    REQUIRE(yp_synth_write(b, &other, NULL, &err) == 0);
    CHECK(!same_tree(a, b));
    remove_tree(b);
    remove_tree(a0);
    char sub[128];
    snprintf(sub, sizeof sub, "%s/sub", dir);
    rmdir(sub);
}

/* Every row of every label file of the split under root: 5 fields, a class < nc, box inside
 * [0, 1]. Counts rows, boxes cut by the border, overlapping pairs and the size range. */
typedef struct {
    int64_t rows, bad, cut, overlaps;
    double min_side, max_side;
} label_census;

static void census(const char *root, const char *split, int nc, label_census *c) {
    char path[512], names[64][32];
    snprintf(path, sizeof path, "%s/labels/%s", root, split);
    int n = list(path, names);
    for (int i = 0; i < n; i++) {
        char file[600], line[256];
        snprintf(file, sizeof file, "%s/%.31s", path, names[i]);
        FILE *f = fopen(file, "r");
        double box[YP_SYNTH_MAX_OBJECTS][4];
        int nb = 0;
        while (f && fgets(line, sizeof line, f)) {
            int cls, used = 0;
            double x, y, w, h;
            int ok = sscanf(line, "%d %lf %lf %lf %lf%n", &cls, &x, &y, &w, &h, &used) == 5 && line[used] == '\n' &&
                     cls >= 0 && cls < nc && w > 0 && h > 0 && x - w / 2 >= -1e-6 && x + w / 2 <= 1 + 1e-6 &&
                     y - h / 2 >= -1e-6 && y + h / 2 <= 1 + 1e-6 && x <= 1 && y <= 1 && w <= 1 && h <= 1;
            c->bad += !ok;
            c->rows++;
            c->cut += x - w / 2 < 1e-6 || y - h / 2 < 1e-6 || x + w / 2 > 1 - 1e-6 || y + h / 2 > 1 - 1e-6;
            double side = w < h ? w : h;
            if (side < c->min_side) c->min_side = side;
            if (side > c->max_side) c->max_side = side;
            if (nb < YP_SYNTH_MAX_OBJECTS) box[nb][0] = x - w / 2, box[nb][1] = y - h / 2, box[nb][2] = x + w / 2,
                                          box[nb][3] = y + h / 2, nb++;
        }
        if (f) fclose(f);
        for (int p = 0; p < nb; p++)
            for (int q = p + 1; q < nb; q++)
                c->overlaps += box[p][0] < box[q][2] && box[q][0] < box[p][2] && box[p][1] < box[q][3] &&
                               box[q][1] < box[p][3];
    }
}

static void test_labels_and_scan(void) {
    char a[128], yaml[160];
    snprintf(a, sizeof a, "%s/a", dir);
    snprintf(yaml, sizeof yaml, "%s/data.yaml", a);
    label_census train = {.min_side = 1}, val = {.min_side = 1};
    census(a, "train", opts.nc, &train);
    census(a, "val", opts.nc, &val);
    CHECK(train.rows >= opts.n_train && train.rows <= opts.n_train * YP_SYNTH_MAX_OBJECTS);
    CHECK(val.rows >= opts.n_val);
    CHECK_EQ_I64(train.bad + val.bad, 0);
    CHECK(train.cut > 0);      /* some objects cross the border */
    CHECK(train.overlaps > 0); /* some overlap */
    CHECK(train.min_side < 0.1 && train.max_side > 0.3);
    yp_dataset_stats st;
    yp_err err;
    int rc = yp_dataset_scan(yaml, &st, &err);
    if (rc) printf("    %s\n", err.msg);
    REQUIRE(rc == 0);
    char *real = realpath(a, NULL);
    CHECK(real && strcmp(st.root, real) == 0);
    free(real);
    CHECK_EQ_I64(st.nc, opts.nc);
    CHECK_EQ_I64(st.n_images, opts.n_train);
    CHECK_EQ_I64(st.n_labelled, opts.n_train);
    CHECK_EQ_I64(st.n_background, 0);
    CHECK_EQ_I64(st.n_bad_files, 0);
    CHECK_EQ_I64(st.n_labels + st.n_duplicates, train.rows);
}

static void test_images_decode(void) {
    char a[128], path[600], names[64][32];
    int n_png = 0;
    for (int split = 0; split < 2; split++) {
        snprintf(a, sizeof a, "%s/a/images/%s", dir, split ? "val" : "train");
        int n = list(a, names);
        CHECK_EQ_I64(n, split ? opts.n_val : opts.n_train);
        for (int i = 0; i < n; i++) {
            yp_image im;
            yp_err err;
            snprintf(path, sizeof path, "%s/%s", a, names[i]);
            int rc = yp_image_read(path, NULL, &im, &err);
            if (rc) printf("    %s\n", err.msg);
            CHECK(rc == 0 && im.w == opts.w && im.h == opts.h);
            yp_synth_sample s;
            REQUIRE(yp_synth_make(&opts, split, i, &s, &err) == 0);
            CHECK(strstr(names[i], s.png ? ".png" : ".jpg") != NULL);
            if (rc == 0 && s.png) {
                n_png++;
                CHECK(memcmp(im.rgb, s.image.rgb, (size_t)im.w * im.h * 3) == 0);
            }
            yp_synth_sample_free(&s);
            yp_image_free(&im);
        }
    }
    CHECK(n_png > 0);
}

/* A sample is a function of (seed, split, index) alone, and its boxes lie inside the image. */
static void test_samples(void) {
    yp_synth_sample s, t;
    yp_err err;
    yp_synth_opts big = opts;
    big.n_train = 1000, big.w = 333, big.h = 200;
    REQUIRE(yp_synth_make(&big, 0, 7, &s, &err) == 0);
    REQUIRE(yp_synth_make(&big, 0, 7, &t, &err) == 0);
    CHECK(s.image.w == 333 && s.image.h == 200 && memcmp(s.image.rgb, t.image.rgb, 333 * 200 * 3) == 0);
    CHECK(s.n_boxes == t.n_boxes && memcmp(s.boxes, t.boxes, sizeof s.boxes) == 0);
    yp_synth_sample_free(&t);
    REQUIRE(yp_synth_make(&big, 1, 7, &t, &err) == 0); /* the other split's image 7 differs */
    CHECK(memcmp(s.image.rgb, t.image.rgb, 333 * 200 * 3) != 0);
    yp_synth_sample_free(&t);
    int counts[YP_SYNTH_MAX_OBJECTS + 1] = {0}, outside = 0;
    for (int i = 0; i < 60; i++) {
        REQUIRE(yp_synth_make(&big, 0, i, &t, &err) == 0);
        counts[t.n_boxes]++;
        for (int k = 0; k < t.n_boxes; k++) {
            const yp_synth_box *b = &t.boxes[k];
            outside += b->x0 < 0 || b->y0 < 0 || b->x1 > 333 || b->y1 > 200 || b->x1 - b->x0 < 2 || b->y1 - b->y0 < 2 ||
                       b->cls < 0 || b->cls >= big.nc;
        }
        yp_synth_sample_free(&t);
    }
    CHECK_EQ_I64(outside, 0);
    CHECK_EQ_I64(counts[0], 0);
    CHECK(counts[1] + counts[2] > 0 && counts[11] + counts[12] > 0); /* 1 to 12 objects */
    yp_synth_sample_free(&s);
    big.nc = 81;
    CHECK(yp_synth_make(&big, 0, 0, &s, &err) == -1);
    CHECK_STR_HAS(err.msg, "81 classes; give 1..80");
    char name[32];
    yp_synth_class_name(79, name, sizeof name);
    CHECK(strcmp(name, "grey_cross") == 0);
}

/* Runs the binary with args; returns its exit status, its stderr in errtxt. */
static int run(const char *args, char *errtxt, size_t size) {
    char cmd[1024], errfile[128];
    snprintf(errfile, sizeof errfile, "%s/stderr", dir);
    snprintf(cmd, sizeof cmd, "'%s' synth %s >/dev/null 2>'%s'", YP_BINARY, args, errfile);
    int st = system(cmd);
    size_t n = 0;
    FILE *e = fopen(errfile, "rb");
    if (e) n = fread(errtxt, 1, size - 1, e), fclose(e);
    errtxt[n] = '\0';
    unlink(errfile);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static void test_cli(void) {
    char args[512], e[2048];
    snprintf(args, sizeof args, "--out '%s/c' --images 3 --val 1 --classes 3 --img 48x32 --seed 9", dir);
    CHECK_EQ_I64(run(args, e, sizeof e), 0);
    char yaml[160];
    snprintf(yaml, sizeof yaml, "%s/c/data.yaml", dir);
    yp_dataset_stats st;
    yp_err err;
    CHECK(yp_dataset_scan(yaml, &st, &err) == 0 && st.n_images == 3 && st.nc == 3);
    CHECK_EQ_I64(run(args, e, sizeof e), 2); /* c is not empty now */
    CHECK_STR_HAS(e, "exists and is not empty");
    CHECK_EQ_I64(yp_test_count_lines(e), 1);
    static const struct {
        const char *args, *says;
    } bad[] = {
        {"--out x --images 3 --classes 3 --img 64", "synth: --seed is required"},
        {"--out x --images 0 --classes 3 --img 64 --seed 1", "--images 0: expected an integer in 1..10000000"},
        {"--out x --images 2 --classes 81 --img 64 --seed 1", "--classes 81: expected an integer in 1..80"},
        {"--out x --images 2 --classes 3 --img 8 --seed 1", "--img 8: each side must be 16..8192"},
        {"--out x --images 2 --classes 3 --img 64 --seed -1", "--seed -1: expected an integer"},
        {"--out x --images 2 --classes 3 --img 64 --seed 1 --val", "unknown or incomplete option \"--val\""},
        {"--out x --images 2 --classes 3 --img 64 --seed 1 --colour red", "unknown or incomplete option \"--colour\""},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        CHECK_EQ_I64(run(bad[i].args, e, sizeof e), 2);
        CHECK_STR_HAS(e, bad[i].says);
        CHECK_EQ_I64(yp_test_count_lines(e), 1);
    }
    char c[128];
    snprintf(c, sizeof c, "%s/c", dir);
    remove_tree(c);
}

int main(void) {
    if (!mkdtemp(dir)) {
        perror("test_synth: mkdtemp");
        return 1;
    }
    YP_RUN(test_same_bytes);
    YP_RUN(test_labels_and_scan);
    YP_RUN(test_images_decode);
    YP_RUN(test_samples);
    YP_RUN(test_cli);
    char a[128];
    snprintf(a, sizeof a, "%s/a", dir);
    remove_tree(a);
    rmdir(dir);
    return yp_test_summary();
}
