/* train_opts.c - `yoloplan train`'s options (train_opts.h): the table, the argv parser, JSON and
 * opt.yaml. */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "cli.h"
#include "device.h"
#include "train_opts.h"
#include "yp_atomic_file.h"

typedef enum { T_STR, T_INT, T_FLAG, T_ONOFF } opt_type;

typedef struct {
    const char *flag;  /* command-line spelling; NULL: stored only */
    const char *key;   /* JSON and opt.yaml key (train.py's where it has one) */
    opt_type type;
    size_t off, size;  /* T_STR: the char array */
    long lo, hi;       /* T_INT range */
    const char *const *choices; /* T_STR: allowed values (NULL: any) */
    int (*check)(const char *flag, const char *v, yp_err *err); /* T_STR: refuses a bad value (NULL: none) */
} opt_desc;

static const char *const optimizers[] = {"sgd", "adam", "adamw", NULL};
static const char *const caches[] = {"ram", NULL};

/* --label-smoothing EPS: a number in [0, 1), as the hyp file takes it. */
static int check_fraction(const char *flag, const char *v, yp_err *err) {
    char *end;
    double x = strtod(v, &end);
    if (!*v || *end || !(x >= 0.0 && x < 1.0)) return yp_err_set(err, "%s %s: expected a number in [0, 1)", flag, v);
    return 0;
}

#define S(flag, key, field, ch) \
    {flag, key, T_STR, offsetof(train_opts, field), sizeof(((train_opts *)0)->field), 0, 0, ch, NULL}
#define I(flag, key, field, lo, hi) {flag, key, T_INT, offsetof(train_opts, field), 0, lo, hi, NULL, NULL}
#define F(flag, key, field) {flag, key, T_FLAG, offsetof(train_opts, field), 0, 0, 0, NULL, NULL}
/* Rows sharing a field are one option under several spellings (train.py's and yoloplan's). */
static const opt_desc table[] = {
    S("--data", "data", data, NULL),
    S("--model", "cfg", model, NULL),
    S("--cfg", "cfg", model, NULL),
    S("--weights", "weights", weights, NULL),
    S("--hyp", "hyp", hyp, NULL),
    I("--img", "imgsz", img, 1, 8192),
    I("--imgsz", "imgsz", img, 1, 8192),
    I("--img-size", "imgsz", img, 1, 8192),
    I("--batch", "batch_size", batch, -1, 1024),
    I("--batch-size", "batch_size", batch, -1, 1024),
    I("--epochs", "epochs", epochs, 1, 1000000),
    {"--device", "device", T_STR, offsetof(train_opts, device), sizeof(((train_opts *)0)->device), 0, 0, NULL,
     cli_device_check},
    S("--gpu", "gpu", gpu, NULL),
    S("--mem", "mem", mem, NULL),
    I("--workers", "workers", workers, 1, 64),
    I("--threads", "threads", threads, 1, 1024),
    I("--seed", "seed", seed, 0, 2147483647L),
    S("--project", "project", project, NULL),
    S("--name", "name", name, NULL),
    F("--exist-ok", "exist_ok", exist_ok),
    S("--cache", "cache", cache, caches),
    {"--mosaic", "mosaic", T_ONOFF, offsetof(train_opts, mosaic), 0, 0, 0, NULL, NULL},
    F("--multi-scale", "multi_scale", multi_scale),
    I("--freeze", "freeze", freeze, 0, 1000),
    S("--optimizer", "optimizer", optimizer, optimizers),
    I("--patience", "patience", patience, 0, 1000000),
    {"--label-smoothing", "label_smoothing", T_STR, offsetof(train_opts, label_smoothing),
     sizeof(((train_opts *)0)->label_smoothing), 0, 0, NULL, check_fraction},
    F("--no-augment", "no_augment", no_augment),
    F("--noval", "noval", noval),
    F("--noplots", "noplots", noplots),
    F("--noautoanchor", "noautoanchor", noautoanchor),
    F("--cos-lr", "cos_lr", cos_lr),
    S(NULL, "save_dir", save_dir, NULL),
};
#define N_OPTS (sizeof table / sizeof table[0])

/* train.py's flags that yoloplan does not implement, each refused with why (never ignored). */
static const struct {
    const char *flag, *why;
} unsupported[] = {
    {"--rect", "it trains square batches, mosaicked or letterboxed to --img"},
    {"--nosave", "it writes last and best every epoch, which --resume continues from"},
    {"--evolve", "there is no hyperparameter evolution; give the values with --hyp H.yaml"},
    {"--evolve_population", "there is no hyperparameter evolution; give the values with --hyp H.yaml"},
    {"--resume_evolve", "there is no hyperparameter evolution; give the values with --hyp H.yaml"},
    {"--bucket", "there is no hyperparameter evolution, whose results the gsutil bucket holds"},
    {"--image-weights", "every epoch samples each training image once"},
    {"--single-cls", "it trains the dataset's classes; relabel the dataset to one class instead"},
    {"--quad", "there is no quad dataloader; batches are --batch images at --img"},
    {"--save-period", "it keeps weights/last and weights/best only"},
    {"--sync-bn", "SyncBatchNorm is for multi-GPU (DDP) training, which is not available yet"},
    {"--local_rank", "DDP's launcher sets it; multi-GPU (DDP) training is not available yet"},
    {"--entity", "there is no Weights & Biases logging; results.csv and results.png hold the run"},
    {"--upload_dataset", "there is no Weights & Biases logging; results.csv and results.png hold the run"},
    {"--bbox_interval", "there is no Weights & Biases logging; results.csv and results.png hold the run"},
    {"--artifact_alias", "there is no Weights & Biases logging; results.csv and results.png hold the run"},
};

void train_opts_default(train_opts *o) {
    memset(o, 0, sizeof *o);
    snprintf(o->model, sizeof o->model, "yolov5s");
    snprintf(o->project, sizeof o->project, "runs/train");
    snprintf(o->name, sizeof o->name, "exp");
    snprintf(o->device, sizeof o->device, "cpu");
    snprintf(o->optimizer, sizeof o->optimizer, "sgd");
    o->img = 640, o->epochs = 100, o->workers = 8, o->patience = 100, o->mosaic = 1;
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    o->threads = n > 0 ? n : 1;
}

static const char *choice_list(const char *const *c, char *buf, size_t n) {
    buf[0] = 0;
    for (int i = 0; c[i]; i++) snprintf(buf + strlen(buf), n - strlen(buf), "%s%s", i ? "|" : "", c[i]);
    return buf;
}

/* Sets option d from text v. A choice matches in any case (train.py's SGD, Adam, AdamW) and is
 * kept as the table spells it. */
static int set_value(train_opts *o, const opt_desc *d, const char *v, yp_err *err) {
    char *p = (char *)o + d->off;
    const char *name = d->flag ? d->flag : d->key;
    if (d->type == T_STR) {
        if (strlen(v) >= d->size) return yp_err_set(err, "%s: the value is longer than %zu bytes", name, d->size - 1);
        if (d->choices) {
            int k = -1;
            for (int i = 0; d->choices[i] && k < 0; i++)
                if (!strcasecmp(d->choices[i], v)) k = i;
            char buf[64];
            if (k < 0) return yp_err_set(err, "%s %s: expected %s", name, v, choice_list(d->choices, buf, sizeof buf));
            v = d->choices[k];
        }
        if (d->check && d->check(name, v, err)) return -1;
        memcpy(p, v, strlen(v) + 1);
        return 0;
    }
    if (d->type == T_ONOFF) {
        if (strcmp(v, "on") && strcmp(v, "off")) return yp_err_set(err, "%s %s: expected on or off", name, v);
        *(int *)p = !strcmp(v, "on");
        return 0;
    }
    long x;
    if (cli_parse_int(name, v, d->lo, d->hi, &x, err)) return -1;
    if (d->off == offsetof(train_opts, batch) && x == 0)
        return yp_err_set(err, "%s 0: expected a batch in 1..%ld, or -1 for the plan's fastest that fits (train.py's "
                          "AutoBatch); omit it for the plan's choice within train.py's iterations per epoch",
                          name, d->hi);
    if (d->type == T_FLAG) *(int *)p = (int)x;
    else *(long *)p = x;
    return 0;
}

static int is_number(const char *s) {
    char *end;
    if (!*s) return 0;
    (void)strtol(s, &end, 10);
    return !*end;
}

/* A train.py flag yoloplan refuses, with why; 0 when a is not one. */
static int refuse_unsupported(const char *a, const char *v, yp_err *err) {
    for (size_t k = 0; k < sizeof unsupported / sizeof *unsupported; k++)
        if (!strcmp(unsupported[k].flag, a))
            return yp_err_set(err, "%s is train.py's; yoloplan does not support it (%s)", a, unsupported[k].why);
    if (!strcmp(a, "--cache") && v && strncmp(v, "--", 2) && strcasecmp(v, "ram"))
        return yp_err_set(err, "--cache %s is train.py's; yoloplan does not support it (it caches the decoded images "
                          "in RAM only: --cache or --cache ram)", v);
    return 0;
}

int train_opts_parse(int argc, char **argv, train_opts *o, yp_err *err) {
    const opt_desc *given[N_OPTS]; /* the rows given, to find one option under two spellings */
    size_t n_given = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (refuse_unsupported(a, v, err)) return -1;
        if (!strcmp(a, "--resume")) { /* an optional value: the next word unless it is an option */
            o->resume_given = 1;
            if (v && strncmp(v, "--", 2)) {
                if (strlen(v) >= sizeof o->resume) return yp_err_set(err, "--resume: the path is too long");
                snprintf(o->resume, sizeof o->resume, "%s", argv[++i]);
            }
            continue;
        }
        const opt_desc *d = NULL;
        for (size_t k = 0; k < N_OPTS && !d; k++)
            if (table[k].flag && !strcmp(table[k].flag, a)) d = &table[k];
        if (!d)
            return yp_err_set(err, "train: unknown option %s; see yoloplan train --help (train takes YOLOv5 train.py's "
                              "flags: --data --cfg --weights --img --batch-size --epochs ...)", a);
        for (size_t k = 0; k < n_given; k++)
            if (given[k]->off == d->off && given[k] != d)
                return yp_err_set(err, "%s: %s is the same option, given already (the last would win silently); give "
                                  "it once", a, given[k]->flag);
        if (n_given < N_OPTS) given[n_given++] = d;
        if (d->type == T_FLAG) {
            *(int *)((char *)o + d->off) = 1;
            continue;
        }
        if (d->off == offsetof(train_opts, cache) && (!v || !strncmp(v, "--", 2))) { /* train.py: bare = ram */
            snprintf(o->cache, sizeof o->cache, "ram");
            continue;
        }
        if (!v) return yp_err_set(err, "train: option %s needs a value", a);
        if (set_value(o, d, argv[++i], err)) return -1;
        if (d->off == offsetof(train_opts, freeze) && i + 1 < argc && is_number(argv[i + 1]))
            return yp_err_set(err, "--freeze %s %s ...: a list of layers is train.py's; yoloplan does not support it "
                              "(it freezes the first N layers: --freeze N, e.g. --freeze 10 for the backbone)", argv[i],
                              argv[i + 1]);
    }
    return 0;
}

char *train_opts_json(const train_opts *o) {
    cJSON *j = cJSON_CreateObject();
    for (size_t k = 0; j && k < N_OPTS; k++) {
        const opt_desc *d = &table[k];
        const char *p = (const char *)o + d->off;
        if (cJSON_GetObjectItemCaseSensitive(j, d->key)) continue; /* --model and --cfg share a field */
        if (d->type == T_STR) cJSON_AddStringToObject(j, d->key, p);
        else if (d->type == T_INT) cJSON_AddNumberToObject(j, d->key, (double)*(const long *)p);
        else cJSON_AddBoolToObject(j, d->key, *(const int *)p);
    }
    char *t = j ? cJSON_PrintUnformatted(j) : NULL;
    cJSON_Delete(j);
    return t;
}

int train_opts_from_json(const char *json, train_opts *o, yp_err *err) {
    cJSON *j = cJSON_Parse(json ? json : "");
    if (!cJSON_IsObject(j)) {
        cJSON_Delete(j);
        return yp_err_set(err, "the options are not a JSON object");
    }
    int rc = 0;
    for (size_t k = 0; !rc && k < N_OPTS; k++) {
        const opt_desc *d = &table[k];
        cJSON *v = cJSON_GetObjectItemCaseSensitive(j, d->key);
        char *p = (char *)o + d->off;
        if (!v) continue;
        if (d->type == T_STR && cJSON_IsString(v) && strlen(v->valuestring) < d->size)
            memcpy(p, v->valuestring, strlen(v->valuestring) + 1);
        else if (d->type == T_INT && cJSON_IsNumber(v)) *(long *)p = (long)v->valuedouble;
        else if ((d->type == T_FLAG || d->type == T_ONOFF) && cJSON_IsBool(v)) *(int *)p = cJSON_IsTrue(v);
        else rc = yp_err_set(err, "the options' \"%s\" has the wrong type", d->key);
    }
    cJSON_Delete(j);
    return rc;
}

int train_opts_write_yaml(const train_opts *o, const char *path, yp_err *err) {
    size_t cap = 16384, n = 0;
    char *buf = malloc(cap);
    if (!buf) return yp_err_set(err, "%s: out of memory", path);
    const char *done[N_OPTS];
    size_t n_done = 0;
    for (size_t k = 0; k < N_OPTS; k++) {
        const opt_desc *d = &table[k];
        int dup = 0;
        for (size_t i = 0; i < n_done; i++) dup |= !strcmp(done[i], d->key);
        if (dup) continue;
        done[n_done++] = d->key;
        const char *p = (const char *)o + d->off;
        int w;
        if (d->type == T_STR) { /* a JSON string is a valid yaml scalar */
            cJSON *s = cJSON_CreateString(p);
            char *q = s ? cJSON_PrintUnformatted(s) : NULL;
            w = snprintf(buf + n, cap - n, "%s: %s\n", d->key, q ? q : "''");
            free(q), cJSON_Delete(s);
        } else if (d->type == T_INT) {
            w = snprintf(buf + n, cap - n, "%s: %ld\n", d->key, *(const long *)p);
        } else {
            w = snprintf(buf + n, cap - n, "%s: %s\n", d->key, *(const int *)p ? "true" : "false");
        }
        if (w < 0 || (size_t)w >= cap - n) {
            free(buf);
            return yp_err_set(err, "%s: the options do not fit in %zu bytes", path, cap);
        }
        n += (size_t)w;
    }
    int rc = yp_af_save_bytes(path, buf, n, err);
    free(buf);
    return rc;
}
