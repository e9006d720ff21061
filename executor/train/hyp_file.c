/* hyp_file.c - YOLOv5's hyperparameter file (yp_hyp_file.h): one table of keys (field, range,
 * the one value supported where only one is), read through the yaml tree (graph/yaml_tree.h, so
 * errors name FILE:LINE) and written atomically (yp_atomic_file.h). */
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "yaml_tree.h"
#include "yp_atomic_file.h"
#include "yp_hyp_file.h"

typedef struct {
    const char *key;
    size_t off;           /* the field in yp_hyp_file */
    double lo, hi;        /* the range; hi INFINITY: no upper bound */
    int lo_open, hi_open; /* 1: the bound itself is outside */
    const char *what;     /* said after the range, "" for nothing */
    const char *refused;  /* non-NULL: only `only` is supported; why another value is refused */
    double only;
} key_info;

#define F(name) offsetof(yp_hyp_file, name)
#define INF INFINITY
#define LOADER "not supported by yoloplan's loader"
#define LOSS "not supported by yoloplan's loss"

/* In the order of hyp.scratch-low.yaml, label_smoothing last (train.py adds it). */
static const key_info keys[] = {
    {"lr0", F(lr0), 0, INF, 1, 0, "the initial learning rate", NULL, 0},
    {"lrf", F(lrf), 0, 1, 0, 0, "the final learning rate is lr0 * lrf", NULL, 0},
    {"momentum", F(momentum), 0, 1, 0, 1, "SGD momentum, Adam beta1", NULL, 0},
    {"weight_decay", F(weight_decay), 0, 1, 0, 1, "", NULL, 0},
    {"warmup_epochs", F(warmup_epochs), 0, INF, 0, 0, "fractions allowed", NULL, 0},
    {"warmup_momentum", F(warmup_momentum), 0, 1, 0, 1, "", NULL, 0},
    {"warmup_bias_lr", F(warmup_bias_lr), 0, INF, 0, 0, "", NULL, 0},
    {"box", F(box), 0, INF, 0, 0, "a loss gain", NULL, 0},
    {"cls", F(cls), 0, INF, 0, 0, "a loss gain", NULL, 0},
    {"cls_pw", F(cls_pw), 0, INF, 1, 0, "", LOSS " (a BCE positive weight)", 1},
    {"obj", F(obj), 0, INF, 0, 0, "a loss gain", NULL, 0},
    {"obj_pw", F(obj_pw), 0, INF, 1, 0, "", LOSS " (a BCE positive weight)", 1},
    {"iou_t", F(iou_t), 0, 1, 0, 0, "", NULL, 0},
    {"anchor_t", F(anchor_t), 1, INF, 1, 0, "a width/height ratio limit", NULL, 0},
    {"fl_gamma", F(fl_gamma), 0, INF, 0, 0, "", "focal loss is " LOSS, 0},
    {"hsv_h", F(aug.hsv_h), 0, 1, 0, 0, "", NULL, 0},
    {"hsv_s", F(aug.hsv_s), 0, 1, 0, 0, "", NULL, 0},
    {"hsv_v", F(aug.hsv_v), 0, 1, 0, 0, "", NULL, 0},
    {"degrees", F(aug.degrees), 0, 180, 0, 0, "", NULL, 0},
    {"translate", F(aug.translate), 0, 1, 0, 0, "", NULL, 0},
    {"scale", F(aug.scale), 0, 1, 0, 1, "the scale is drawn from 1 - scale .. 1 + scale", NULL, 0},
    {"shear", F(aug.shear), 0, 90, 0, 1, "degrees", NULL, 0},
    {"perspective", F(aug.perspective), 0, 1, 0, 1, "", NULL, 0},
    {"flipud", F(aug.flipud), 0, 1, 0, 0, "a probability", NULL, 0},
    {"fliplr", F(aug.fliplr), 0, 1, 0, 0, "a probability", NULL, 0},
    {"mosaic", F(aug.mosaic), 0, 1, 0, 0, "a probability", NULL, 0},
    {"mixup", F(mixup), 0, 1, 0, 0, "a probability", LOADER, 0},
    {"copy_paste", F(copy_paste), 0, 1, 0, 0, "a probability", LOADER, 0},
    {"label_smoothing", F(label_smoothing), 0, 1, 0, 0, "", NULL, 0},
};
#define N_KEYS ((int)(sizeof keys / sizeof keys[0]))

static double *field(yp_hyp_file *h, const key_info *k) { return (double *)(void *)((char *)h + k->off); }
static double value(const yp_hyp_file *h, const key_info *k) {
    return *(const double *)(const void *)((const char *)h + k->off);
}

void yp_hyp_file_default(yp_hyp_file *h) {
    memset(h, 0, sizeof *h);
    h->lr0 = 0.01, h->lrf = 0.01, h->momentum = 0.937, h->weight_decay = 0.0005;
    h->warmup_epochs = 3.0, h->warmup_momentum = 0.8, h->warmup_bias_lr = 0.1;
    h->box = 0.05, h->cls = 0.5, h->cls_pw = 1.0, h->obj = 1.0, h->obj_pw = 1.0;
    h->iou_t = 0.20, h->anchor_t = 4.0, h->fl_gamma = 0.0, h->label_smoothing = 0.0;
    yp_aug_hyp_default(&h->aug);
    h->mixup = 0.0, h->copy_paste = 0.0;
}

/* v in the shortest form that reads back to v, with a '.' always (3.0, 1.0e-05). */
static void format_number(double v, char *out, size_t size) {
    char buf[32];
    if (!isfinite(v)) {
        snprintf(out, size, "%g", v);
        return;
    }
    for (int p = 1; p <= 17; p++) {
        snprintf(buf, sizeof buf, "%.*g", p, v);
        if (strtod(buf, NULL) == v) break;
    }
    char *e = strchr(buf, 'e');
    if (strchr(buf, '.')) snprintf(out, size, "%s", buf);
    else if (e) snprintf(out, size, "%.*s.0%s", (int)(e - buf), buf, e);
    else snprintf(out, size, "%s.0", buf);
}

/* "0 <= momentum < 1", "lr0 > 0". */
static void range_text(const key_info *k, char *out, size_t size) {
    if (isinf(k->hi)) snprintf(out, size, "%s %s %g", k->key, k->lo_open ? ">" : ">=", k->lo);
    else snprintf(out, size, "%g %s %s %s %g", k->lo, k->lo_open ? "<" : "<=", k->key, k->hi_open ? "<" : "<=", k->hi);
}

/* Checks v (written `text`) for key k; at names the place ("hyp.yaml:3" or the path). Returns 0,
 * or -1 with err set. */
static int check_value(const key_info *k, double v, const char *text, const char *at, yp_err *err) {
    char range[96], only[48];
    if (!isfinite(v)) return yp_err_set(err, "%s: %s %s is not a finite number; fix the value", at, k->key, text);
    int below = k->lo_open ? !(v > k->lo) : !(v >= k->lo);
    int above = k->hi_open ? !(v < k->hi) : !(v <= k->hi);
    if (below || above) {
        range_text(k, range, sizeof range);
        return yp_err_set(err, "%s: %s %s is out of range; use %s%s%s%s", at, k->key, text, range,
                          k->what[0] ? " (" : "", k->what, k->what[0] ? ")" : "");
    }
    if (k->refused && v != k->only) {
        format_number(k->only, only, sizeof only);
        return yp_err_set(err, "%s: %s %s: %s; set %s: %s", at, k->key, text, k->refused, k->key, only);
    }
    return 0;
}

static const key_info *find_key(const char *name) {
    for (int i = 0; i < N_KEYS; i++)
        if (strcmp(keys[i].key, name) == 0) return &keys[i];
    return NULL;
}

static int unknown_key(const char *file, const yp_ynode *key, yp_err *err) {
    char list[600];
    size_t n = 0;
    for (int i = 0; i < N_KEYS && n < sizeof list; i++)
        n += (size_t)snprintf(list + n, sizeof list - n, "%s%s", i ? ", " : "", keys[i].key);
    return yp_err_set(err, "%s:%d: unknown key \"%.40s\"; the keys are %s (anchors is accepted and ignored)", file,
                      key->line, key->text, list);
}

/* Sets h from the mapping root. Returns 0, or -1 with err set. */
static int parse(const char *file, const yp_ynode *root, yp_hyp_file *h, yp_err *err) {
    char got[80], at[4200];
    int seen[N_KEYS] = {0};
    if (yp_yn_is_null(root))
        return yp_err_set(err, "%s:1: empty file; a hyp file maps each hyperparameter to a number, e.g. lr0: 0.01 "
                          "(YOLOv5's hyp.scratch-low.yaml)", file);
    if (root->kind != YP_YN_MAP)
        return yp_err_set(err, "%s:%d: expected a mapping of hyperparameters (lr0: 0.01, ...), got %s; fix the file",
                          file, root->line, yp_yn_describe(root, got, sizeof got));
    for (int i = 0; i + 1 < root->n; i += 2) {
        const yp_ynode *key = root->kids[i], *v = root->kids[i + 1];
        if (strcmp(key->text, "anchors") == 0) continue;
        const key_info *k = find_key(key->text);
        if (!k) return unknown_key(file, key, err);
        int idx = (int)(k - keys);
        if (seen[idx])
            return yp_err_set(err, "%s:%d: duplicate key \"%s\" (first given at line %d); keep one", file, key->line,
                              k->key, seen[idx]);
        seen[idx] = key->line;
        double x;
        if (yp_yn_double(v, &x))
            return yp_err_set(err, "%s:%d: %s: expected a number, got %s; fix the value", file, v->line, k->key,
                              yp_yn_describe(v, got, sizeof got));
        snprintf(at, sizeof at, "%s:%d", file, v->line);
        char text[48];
        snprintf(text, sizeof text, "%.40s", v->text);
        if (check_value(k, x, text, at, err)) return -1;
        *field(h, k) = x;
    }
    return 0;
}

int yp_hyp_file_read(const char *path, yp_hyp_file *out, yp_err *err) {
    yp_hyp_file h;
    yp_hyp_file_default(&h);
    yp_ynode *root = yp_yn_read(path, err);
    if (!root) return -1;
    int rc = parse(path, root, &h, err);
    yp_yn_free(root);
    if (rc == 0) *out = h;
    return rc;
}

int yp_hyp_file_write(const char *path, const yp_hyp_file *h, yp_err *err) {
    char text[4096], num[48];
    size_t n = (size_t)snprintf(text, sizeof text,
                                "# yoloplan hyperparameters: YOLOv5's hyp keys, plus label_smoothing (train.py's "
                                "--label-smoothing)\n");
    for (int i = 0; i < N_KEYS; i++) {
        double v = value(h, &keys[i]);
        format_number(v, num, sizeof num);
        if (check_value(&keys[i], v, num, path, err)) return -1;
        n += (size_t)snprintf(text + n, sizeof text - n, "%s: %s\n", keys[i].key, num);
    }
    return yp_af_save_bytes(path, text, n, err);
}
