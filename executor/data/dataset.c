/* dataset.c - yp_dataset_scan_split (yp_dataset.h): reads an Ultralytics data.yaml (the yaml
 * tree of graph/yaml_tree.h, so errors name FILE:LINE), resolves the dataset root and the entries
 * of one split (train, val or test) like YOLOv5's check_dataset and collects the image files
 * (dataset_images.c); the label cache (label_cache.c) checks each image and its label file
 * (dataset_verify.c, dataset_labels.c), and the counts are added up here. */
#define _XOPEN_SOURCE 700 /* realpath */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dataset_internal.h"
#include "yp_label_cache.h"
#include "yaml_tree.h"

#define MAX_NC 100000
#define TRAIN_HELP "a folder of images, a .txt list of image paths, or a list of those"

enum { D_PATH, D_TRAIN, D_VAL, D_TEST, D_NC, D_NAMES, D_COUNT };
static const char *const data_keys[D_COUNT] = {"path", "train", "val", "test", "nc", "names"};

typedef struct {
    const char *file;
    yp_err *err;
    int split;                  /* D_TRAIN, D_VAL or D_TEST: the key whose images are collected */
    const yp_ynode *v[D_COUNT]; /* values of the keys this scan reads; the other splits' keys and
                                   unknown keys are ignored */
    int path_relative;          /* `path` is absent or relative: hint at YOLOv5's different base */
} data_yaml;

/* The data_keys index of split ("train", "val", "test"), or -1. */
static int split_key(const char *split) {
    if (split && strcmp(split, "train") == 0) return D_TRAIN;
    if (split && strcmp(split, "val") == 0) return D_VAL;
    if (split && strcmp(split, "test") == 0) return D_TEST;
    return -1;
}

/* The split's key ("train", "val", "test"). */
static const char *split_name(const data_yaml *d) { return data_keys[d->split]; }

/* How to add the split's key when it is missing. */
static const char *missing_fix(int split) {
    return split == D_VAL    ? "add val: images/val, or train with --noval"
           : split == D_TEST ? "add test: images/test (" TRAIN_HELP ")"
                             : "add train: images/train (" TRAIN_HELP ")";
}

static int type_error(const data_yaml *d, const yp_ynode *n, const char *what, const char *expected) {
    char got[80];
    return yp_err_set(d->err, "%s:%d: %s: expected %s, got %s; fix the value", d->file, n->line, what, expected,
                      yp_yn_describe(n, got, sizeof got));
}

/* Collects the keys this scan reads. Unknown keys (download scripts, ...) are allowed. */
static int read_keys(data_yaml *d, const yp_ynode *root) {
    if (yp_yn_is_null(root))
        return yp_err_set(d->err, "%s:1: empty file; a data.yaml needs %s (" TRAIN_HELP ") and nc or names",
                          d->file, split_name(d));
    if (root->kind != YP_YN_MAP)
        return type_error(d, root, "the file", "a mapping with keys path, train, val, nc, names");
    for (int i = 0; i + 1 < root->n; i += 2) {
        const yp_ynode *key = root->kids[i];
        for (int k = 0; k < D_COUNT; k++) {
            if (strcmp(key->text, data_keys[k]) != 0) continue;
            if ((k == D_TRAIN || k == D_VAL || k == D_TEST) && k != d->split) break; /* another split's */
            if (d->v[k])
                return yp_err_set(d->err, "%s:%d: duplicate key \"%s\" (first given at line %d); keep one", d->file,
                                  key->line, key->text, d->v[k]->line);
            d->v[k] = root->kids[i + 1];
        }
    }
    const yp_ynode *s = d->v[d->split];
    if (!s || yp_yn_is_null(s))
        return yp_err_set(d->err, "%s:%d: missing key \"%s\"; %s", d->file, s ? s->line : root->line, split_name(d),
                          missing_fix(d->split));
    return 0;
}

/* Classes in `names`: a list, or a mapping with integer keys 0: name. Returns the count, or -1. */
static int count_names(const data_yaml *d, const yp_ynode *names) {
    if (names->kind == YP_YN_SEQ) return names->n;
    if (names->kind != YP_YN_MAP) return type_error(d, names, "names", "a list [a, b] or a mapping {0: a, 1: b}");
    for (int i = 0; i < names->n; i += 2) {
        long k;
        if (yp_yn_long(names->kids[i], &k))
            return yp_err_set(d->err, "%s:%d: names: key \"%.40s\" is not a class number; write 0: name, 1: name, ...",
                              d->file, names->kids[i]->line, names->kids[i]->text);
    }
    return names->n / 2;
}

/* nc from `nc` and/or `names`. Returns 0 with *nc set, or -1 with err set. */
static int read_nc(const data_yaml *d, int line, int *nc) {
    const yp_ynode *n = d->v[D_NC], *names = d->v[D_NAMES];
    long v = -1;
    int count = -1;
    if (n && !yp_yn_is_null(n) && yp_yn_long(n, &v)) return type_error(d, n, "nc", "the number of classes");
    if (n && !yp_yn_is_null(n) && (v < 1 || v > MAX_NC))
        return yp_err_set(d->err, "%s:%d: nc: %ld is out of range; use 1..%d", d->file, n->line, v, MAX_NC);
    if (names && !yp_yn_is_null(names) && (count = count_names(d, names)) < 0) return -1;
    if (v < 0 && count < 0)
        return yp_err_set(d->err, "%s:%d: missing key \"nc\"; add nc: <number of classes> (or names: [a, b, ...])",
                          d->file, line);
    if (count > MAX_NC)
        return yp_err_set(d->err, "%s:%d: names lists %d classes; at most %d", d->file, names->line, count, MAX_NC);
    if (v < 0 && count == 0)
        return yp_err_set(d->err, "%s:%d: names is empty; list the class names", d->file, names->line);
    if (v > 0 && count >= 0 && v != count)
        return yp_err_set(d->err, "%s:%d: nc is %ld but names lists %d classes (line %d); make them agree", d->file,
                          n->line, v, count, names->line);
    *nc = v > 0 ? (int)v : count;
    return 0;
}

/* Joins dir and name (name absolute: name alone; name "": dir) into out. Returns 0, or -1 if it does not fit. */
static int join(const char *dir, const char *name, char *out, size_t size) {
    int n = name[0] == '/' ? snprintf(out, size, "%s", name)
            : !name[0]   ? snprintf(out, size, "%s", dir)
                         : snprintf(out, size, "%s/%s", dir, name);
    return n < 0 || (size_t)n >= size ? -1 : 0;
}

/* Replaces path by its canonical form (symlinks, "..") when it exists. Returns 1 if it exists. */
static int canonical(char *path, size_t size) {
    char *real = realpath(path, NULL);
    if (!real) return 0;
    int fits = strlen(real) < size;
    if (fits) memcpy(path, real, strlen(real) + 1);
    free(real);
    return fits;
}

/* The folder of file ("." when it has none) into dir. */
static void folder_of(const char *file, char *dir, size_t size) {
    const char *slash = strrchr(file, '/');
    if (!slash) snprintf(dir, size, ".");
    else if (slash == file) snprintf(dir, size, "/");
    else snprintf(dir, size, "%.*s", (int)(slash - file), file);
}

/* The dataset root: `path` from the yaml's folder, or the yaml's folder. */
static int resolve_root(data_yaml *d, char *root, size_t size) {
    const yp_ynode *p = d->v[D_PATH] && !yp_yn_is_null(d->v[D_PATH]) ? d->v[D_PATH] : NULL;
    char dir[YP_DS_PATH_MAX], path[YP_DS_PATH_MAX];
    if (p && p->kind != YP_YN_SCALAR) return type_error(d, p, "path", "the dataset's root folder");
    d->path_relative = !p || p->text[0] != '/';
    folder_of(d->file, dir, sizeof dir);
    int rc = join(dir, p ? p->text : "", path, sizeof path);
    if (rc == 0) canonical(path, sizeof path);
    if (rc || strlen(path) >= size)
        return yp_err_set(d->err, "%s:%d: path: the dataset root is longer than %zu characters; move it", d->file,
                          p ? p->line : 1, size - 1);
    memcpy(root, path, strlen(path) + 1);
    return 0;
}

/* One entry n of the split, resolved against root into out (YOLOv5 retries "../x" as "x"). */
static int resolve_entry(const data_yaml *d, const char *root, const yp_ynode *n, char *out, size_t size) {
    const char *key = split_name(d);
    if (n->kind != YP_YN_SCALAR || yp_yn_is_null(n)) return type_error(d, n, key, TRAIN_HELP);
    if (join(root, n->text, out, size))
        return yp_err_set(d->err, "%s:%d: %s: the path is too long; shorten it", d->file, n->line, key);
    if (canonical(out, size)) return 0;
    if (strncmp(n->text, "../", 3) == 0 && join(root, n->text + 3, out, size) == 0 && canonical(out, size)) return 0;
    join(root, n->text, out, size);
    return yp_err_set(d->err, "%s:%d: %s: %s does not exist; fix %s or path (the dataset root, %s)%s", d->file,
                      n->line, key, out, key, root,
                      d->path_relative ? "; note: a relative path is taken from the yaml's folder (YOLOv5 takes it "
                                         "from its own folder)" : "");
}

/* Collects the images of every entry of the split, sorted. */
static int collect_images(const data_yaml *d, const char *root, yp_ds_paths *images, yp_dataset_stats *st) {
    const yp_ynode *t = d->v[d->split];
    const char *key = split_name(d);
    int n = t->kind == YP_YN_SEQ ? t->n : 1;
    if (t->kind == YP_YN_MAP || n == 0) return type_error(d, t, key, TRAIN_HELP);
    for (int i = 0; i < n; i++) {
        const yp_ynode *e = t->kind == YP_YN_SEQ ? t->kids[i] : t;
        char path[YP_DS_PATH_MAX], where[YP_DS_PATH_MAX + 32];
        if (resolve_entry(d, root, e, path, sizeof path)) return -1;
        snprintf(where, sizeof where, "%s:%d: %s", d->file, e->line, key);
        if (yp_ds_collect(path, where, root, images, st, d->err)) return -1;
    }
    if (images->n == 0 && st->n_bad_files > 0)
        return yp_err_set(d->err, "%s:%d: %s: none of the listed images exist, the first: %s", d->file, t->line, key,
                          st->first_bad);
    if (images->n == 0)
        return yp_err_set(d->err, "%s:%d: %s: no images found (extensions bmp dng jpeg jpg mpo png tif tiff webp "
                          "pfm); check %s and path (the dataset root, %s)", d->file, t->line, key, key, root);
    yp_ds_paths_sort(images);
    return 0;
}

void yp_ds_count_image(yp_dataset_stats *st, const yp_ds_label_file *lf) {
    st->n_images++;
    st->n_labelled += lf->found;
    st->n_background += lf->n_rows == 0;
    st->n_labels += lf->n_rows;
    st->n_duplicates += lf->n_dup;
    if (lf->n_rows > st->max_labels) st->max_labels = lf->n_rows;
}

int yp_ds_check_counts(const char *file, const yp_ds_paths *images, const yp_dataset_stats *st, int64_t files_found,
                       yp_err *err) {
    char label[YP_DS_PATH_MAX];
    if (st->n_images == 0 && st->n_bad_files > 0)
        return yp_err_set(err, "%s: all %lld images were dropped as corrupt (image or label), the first: %s", file,
                          (long long)st->n_bad_files, st->first_bad);
    if (files_found == 0 && yp_ds_label_path(yp_ds_paths_at(images, 0), label, sizeof label) == 0)
        return yp_err_set(err, "%s: no label file found for any of the %lld images (the first would be %s); put "
                          "them in labels/ next to images/, one .txt per image", file, (long long)images->n, label);
    return 0;
}

int yp_ds_read_image_labels(const char *image, const yp_dataset_stats *st, yp_ds_scratch *s, yp_ds_label_file *lf,
                            char *problem, size_t size) {
    char label[YP_DS_PATH_MAX];
    if (yp_ds_label_path(image, label, sizeof label) == 0)
        return yp_ds_read_labels(label, yp_ds_shown(label, st->root), st->nc, s, lf, problem, size);
    memset(lf, 0, sizeof *lf);
    snprintf(problem, size, "%.300s: the label path is too long; shorten the path", yp_ds_shown(image, st->root));
    return 1;
}

/* A split name that is not one of the three. Returns -1. */
static int bad_split(const char *data_yaml_path, const char *split, yp_err *err) {
    return yp_err_set(err, "%s: unknown split \"%.40s\"; use train, val or test", data_yaml_path,
                      split ? split : "(null)");
}

int yp_ds_find_images(const char *data_yaml_path, const char *split, yp_dataset_stats *out, yp_ds_paths *images,
                      yp_err *err) {
    memset(out, 0, sizeof *out);
    int key = split_key(split);
    if (key < 0) return bad_split(data_yaml_path, split, err);
    yp_ynode *root = yp_yn_read(data_yaml_path, err);
    if (!root) return -1;
    data_yaml d = {.file = data_yaml_path, .err = err, .split = key};
    int rc = read_keys(&d, root);
    if (rc == 0) rc = read_nc(&d, root->line, &out->nc);
    if (rc == 0) rc = resolve_root(&d, out->root, sizeof out->root);
    if (rc == 0) rc = collect_images(&d, out->root, images, out);
    yp_yn_free(root);
    return rc;
}

int yp_dataset_scan_split(const char *data_yaml_path, const char *split, yp_dataset_stats *out, yp_err *err) {
    yp_labels l; /* one scan for the plan and the run: the images decoded once, then the cache's */
    int rc = yp_labels_load_split(data_yaml_path, split, &l, err);
    if (rc == 0) *out = l.stats;
    else memset(out, 0, sizeof *out);
    yp_labels_free(&l);
    return rc;
}

int yp_dataset_scan(const char *data_yaml_path, yp_dataset_stats *out, yp_err *err) {
    return yp_dataset_scan_split(data_yaml_path, "train", out, err);
}
