/* synth_write.c - writing a synthetic dataset to disk (yp_synth.h): the folders, each image
 * (synth.c draws it) as JPEG or PNG with its label file, and the data.yaml that the dataset scan
 * and YOLOv5 read. */
#define _XOPEN_SOURCE 700 /* realpath */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "yp_synth.h"

#define PATH_CAP 4096

/* snprintf into a PATH_CAP buffer; -1 with err set when it does not fit. */
static int path_join(char *out, const char *a, const char *b, yp_err *err) {
    int n = snprintf(out, PATH_CAP, "%s/%s", a, b);
    if (n < 0 || n >= PATH_CAP) return yp_err_set(err, "%s: path too long; choose a shorter output folder", a);
    return 0;
}

/* mkdir -p. Returns 0, or -1 with err set. */
static int make_dirs(const char *path, yp_err *err) {
    char p[PATH_CAP];
    size_t n = strlen(path);
    if (n == 0 || n >= sizeof p) return yp_err_set(err, "%s: not a usable folder name", path);
    memcpy(p, path, n + 1);
    for (size_t i = 1; i <= n; i++) {
        if (p[i] != '/' && p[i] != '\0') continue;
        char c = p[i];
        p[i] = '\0';
        if (mkdir(p, 0777) && errno != EEXIST) return yp_err_set(err, "%s: cannot create: %s", p, strerror(errno));
        struct stat st;
        if (stat(p, &st) || !S_ISDIR(st.st_mode)) return yp_err_set(err, "%s: exists and is not a folder", p);
        p[i] = c;
    }
    return 0;
}

/* 0 when dir does not exist or is an empty folder; else -1 with err set. */
static int check_fresh(const char *dir, yp_err *err) {
    struct stat st;
    if (stat(dir, &st)) return errno == ENOENT ? 0 : yp_err_set(err, "%s: %s", dir, strerror(errno));
    if (!S_ISDIR(st.st_mode)) return yp_err_set(err, "%s: exists and is not a folder; give a new folder", dir);
    DIR *d = opendir(dir);
    if (!d) return yp_err_set(err, "%s: cannot read: %s", dir, strerror(errno));
    int empty = 1;
    for (struct dirent *e; empty && (e = readdir(d));) empty = !strcmp(e->d_name, ".") || !strcmp(e->d_name, "..");
    closedir(d);
    if (!empty) return yp_err_set(err, "%s: exists and is not empty; give a new folder (synth never overwrites)", dir);
    return 0;
}

static int write_labels(const char *path, const yp_synth_sample *s, yp_err *err) {
    FILE *f = fopen(path, "wb");
    if (!f) return yp_err_set(err, "%s: cannot create: %s", path, strerror(errno));
    double w = s->image.w, h = s->image.h;
    for (int i = 0; i < s->n_boxes; i++) {
        const yp_synth_box *b = &s->boxes[i];
        fprintf(f, "%d %.6f %.6f %.6f %.6f\n", b->cls, (b->x0 + b->x1) / (2 * w), (b->y0 + b->y1) / (2 * h),
                (b->x1 - b->x0) / w, (b->y1 - b->y0) / h);
    }
    int bad = ferror(f);
    if (fclose(f) || bad) return yp_err_set(err, "%s: write failed: %s", path, strerror(errno));
    return 0;
}

/* Digits of the file names: at least 6, enough for n - 1. */
static int name_digits(int64_t n) {
    int d = 1;
    for (int64_t v = n - 1; v >= 10; v /= 10) d++;
    return d > 6 ? d : 6;
}

/* out = i with at least `digits` digits (zero-padded), a dot and ext; out holds 32 bytes. */
static void file_name(char *out, int digits, int64_t i, const char *ext) {
    char num[24];
    int n = 0;
    do num[n++] = (char)('0' + i % 10), i /= 10;
    while (i > 0);
    while (n < digits && n < 20) num[n++] = '0';
    for (int k = 0; k < n; k++) out[k] = num[n - 1 - k];
    snprintf(out + n, 32 - (size_t)n, ".%s", ext);
}

/* Writes split (0 train, 1 val) of n images under root, adding to st. */
static int write_split(const char *root, const yp_synth_opts *o, int split, int64_t n, yp_synth_stats *st,
                       yp_err *err) {
    const char *name = split ? "val" : "train";
    char images[PATH_CAP], labels[PATH_CAP], sub[32], path[PATH_CAP], file[32];
    snprintf(sub, sizeof sub, "images/%s", name);
    if (path_join(images, root, sub, err) || make_dirs(images, err)) return -1;
    snprintf(sub, sizeof sub, "labels/%s", name);
    if (path_join(labels, root, sub, err) || make_dirs(labels, err)) return -1;
    int digits = name_digits(n);
    for (int64_t i = 0; i < n; i++) {
        yp_synth_sample s;
        if (yp_synth_make(o, split, i, &s, err)) return -1;
        file_name(file, digits, i, s.png ? "png" : "jpg");
        int rc = path_join(path, images, file, err);
        if (!rc)
            rc = s.png ? yp_image_write_png(path, &s.image, err) : yp_image_write_jpeg(path, &s.image, s.quality, err);
        file_name(file, digits, i, "txt");
        if (!rc) rc = path_join(path, labels, file, err);
        if (!rc) rc = write_labels(path, &s, err);
        st->n_images++, st->n_png += s.png, st->n_jpeg += !s.png, st->n_labels += s.n_boxes;
        yp_synth_sample_free(&s);
        if (rc) return -1;
    }
    return 0;
}

/* root as a YAML double-quoted scalar. Returns 0, or -1 when it holds a control character. */
static int yaml_quote(const char *root, char *out, size_t size) {
    size_t n = 0;
    out[n++] = '"';
    for (const char *c = root; *c; c++) {
        if ((unsigned char)*c < 0x20 || n + 3 >= size) return -1;
        if (*c == '"' || *c == '\\') out[n++] = '\\';
        out[n++] = *c;
    }
    out[n++] = '"';
    out[n] = '\0';
    return 0;
}

static int write_yaml(const char *root, const yp_synth_opts *o, yp_err *err) {
    char path[PATH_CAP], quoted[2 * PATH_CAP + 3], name[32];
    if (path_join(path, root, "data.yaml", err)) return -1;
    if (yaml_quote(root, quoted, sizeof quoted))
        return yp_err_set(err, "%s: the folder's name has a control character; choose another", root);
    FILE *f = fopen(path, "wb");
    if (!f) return yp_err_set(err, "%s: cannot create: %s", path, strerror(errno));
    fprintf(f, "# written by yoloplan synth: %lld train + %lld val images of %dx%d, %d classes, seed %llu\n",
            (long long)o->n_train, (long long)o->n_val, o->w, o->h, o->nc, (unsigned long long)o->seed);
    fprintf(f, "path: %s\ntrain: images/train\nval: images/%s\nnc: %d\nnames: [", quoted, o->n_val ? "val" : "train",
            o->nc);
    for (int k = 0; k < o->nc; k++) {
        yp_synth_class_name(k, name, sizeof name);
        fprintf(f, "%s%s", k ? ", " : "", name);
    }
    fputs("]\n", f);
    int bad = ferror(f);
    if (fclose(f) || bad) return yp_err_set(err, "%s: write failed: %s", path, strerror(errno));
    return 0;
}

int yp_synth_write(const char *dir, const yp_synth_opts *o, yp_synth_stats *st, yp_err *err) {
    yp_synth_stats local;
    if (!st) st = &local;
    memset(st, 0, sizeof *st);
    if (yp_synth_check(o, err) || check_fresh(dir, err) || make_dirs(dir, err)) return -1;
    char *root = realpath(dir, NULL);
    if (!root) return yp_err_set(err, "%s: %s", dir, strerror(errno));
    int rc =
        strlen(root) + 32 >= PATH_CAP ? yp_err_set(err, "%s: path too long; choose a shorter output folder", root) : 0;
    if (!rc) rc = write_split(root, o, 0, o->n_train, st, err);
    if (!rc && o->n_val) rc = write_split(root, o, 1, o->n_val, st, err);
    if (!rc) rc = write_yaml(root, o, err);
    free(root);
    return rc;
}
