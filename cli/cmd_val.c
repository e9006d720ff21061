/* cmd_val.c - `yoloplan val`: val.py on the CPU executor. The model comes from the checkpoint's
 * plan (a yoloplan checkpoint) or --model (a plain state dict), the weights from the file (its
 * EMA copy where it has one); a validation plan (batch --batch, gradients of no layer) is made for
 * the host, then one pass over the split prints val.py's table and, with --save-json, writes the
 * COCO-format predictions. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "cli.h"
#include "device.h"
#include "run_dir.h"
#include "yp_checkpoint.h"
#include "yp_device_plan.h"
#include "yp_ir.h"
#include "yp_train.h"

typedef struct {
    const char *weights, *data, *model, *project, *name, *task, *device;
    int64_t img, batch, max_det;
    long workers, threads;
    double conf, iou;
    int save_json, exist_ok, verbose;
} val_opts;

#define VAL_USAGE "see yoloplan val --help"

/* val.py's flags that yoloplan does not implement, each refused with why (never ignored). */
static const struct {
    const char *flag, *why;
} unsupported[] = {
    {"--save-txt", "it writes the COCO JSON of --save-json, no per-image label files"},
    {"--save-hybrid", "it writes the COCO JSON of --save-json, no per-image label files"},
    {"--save-conf", "it writes the COCO JSON of --save-json, no per-image label files"},
    {"--single-cls", "it validates the dataset's classes"},
    {"--augment", "there is no test-time augmentation"},
    {"--half", "validation runs in fp32 on the CPU executor"},
    {"--dnn", "it reads its own checkpoints and state dicts, not ONNX"},
};

static int parse_double(const char *opt, const char *v, double lo, double hi, double *out, yp_err *err) {
    char *end;
    double x = strtod(v, &end);
    if (!*v || *end || !(x >= lo && x <= hi))
        return yp_err_set(err, "%s %s: expected a number in [%g, %g]", opt, v, lo, hi);
    *out = x;
    return 0;
}

/* val.py's spellings of the options (and its argparse abbreviations --conf, --iou, --batch). */
static const char *canonical(const char *a) {
    static const char *const alias[][2] = {{"--batch-size", "--batch"}, {"--imgsz", "--img"}, {"--img-size", "--img"},
                                           {"--conf-thres", "--conf"},  {"--iou-thres", "--iou"}, {"--cfg", "--model"}};
    for (size_t i = 0; i < sizeof alias / sizeof *alias; i++)
        if (!strcmp(a, alias[i][0])) return alias[i][1];
    return a;
}

/* One option a (value v); 1 when it took v, 0 when it took none, -1 with err set. */
static int parse_one(val_opts *o, const char *given, const char *v, yp_err *err) {
    const char *a = canonical(given);
    long n = 0;
    for (size_t k = 0; k < sizeof unsupported / sizeof *unsupported; k++)
        if (!strcmp(unsupported[k].flag, a))
            return yp_err_set(err, "%s is val.py's; yoloplan does not support it (%s)", a, unsupported[k].why);
    if (!strcmp(a, "--save-json")) return o->save_json = 1, 0;
    if (!strcmp(a, "--exist-ok")) return o->exist_ok = 1, 0;
    if (!strcmp(a, "--verbose")) return o->verbose = 1, 0;
    if (!v) return yp_err_set(err, "val: option %s needs a value; " VAL_USAGE, given);
    int rc = 0;
    if (!strcmp(a, "--weights")) o->weights = v;
    else if (!strcmp(a, "--data")) o->data = v;
    else if (!strcmp(a, "--model")) o->model = v;
    else if (!strcmp(a, "--project")) o->project = v;
    else if (!strcmp(a, "--name")) o->name = v;
    else if (!strcmp(a, "--device")) o->device = v;
    else if (!strcmp(a, "--task")) {
        if (!strcmp(v, "speed") || !strcmp(v, "study"))
            return yp_err_set(err, "--task %s is val.py's; yoloplan does not support it (it validates a split: --task "
                              "train, val or test)", v);
        if (strcmp(v, "train") && strcmp(v, "val") && strcmp(v, "test"))
            return yp_err_set(err, "--task %s: expected train, val or test (the data.yaml split)", v);
        o->task = v;
    } else if (!strcmp(a, "--img")) rc = cli_parse_int(given, v, 1, 8192, &n, err), o->img = n;
    else if (!strcmp(a, "--batch")) rc = cli_parse_int(given, v, 2, 2048, &n, err), o->batch = n;
    else if (!strcmp(a, "--max-det")) rc = cli_parse_int(given, v, 1, 30000, &n, err), o->max_det = n;
    else if (!strcmp(a, "--workers")) rc = cli_parse_int(given, v, 1, 64, &o->workers, err);
    else if (!strcmp(a, "--threads")) rc = cli_parse_int(given, v, 1, 1024, &o->threads, err);
    else if (!strcmp(a, "--conf")) rc = parse_double(given, v, 0.0, 1.0, &o->conf, err);
    else if (!strcmp(a, "--iou")) rc = parse_double(given, v, 0.0, 1.0, &o->iou, err);
    else return yp_err_set(err, "val: unknown option %s; " VAL_USAGE, given);
    return rc ? -1 : 1;
}

/* --device: val runs on the CPU executor (cpu or cpu:T); a GPU's spec is refused in one line. */
static int check_device(val_opts *o, yp_err *err) {
    yp_device_spec s;
    if (!o->device) return 0;
    if (cli_device_spec("--device", o->device, o->threads, &s, err)) return -1;
    if (strcmp(s.kind->name, "cpu"))
        return yp_err_set(err, "--device %s: val runs on the CPU executor only for now; pass --device cpu (or cpu:T)",
                          o->device);
    if (s.threads > 0) o->threads = s.threads; /* cpu:T, else --threads */
    return 0;
}

static int parse(int argc, char **argv, val_opts *o, yp_err *err) {
    *o = (val_opts){.model = "yolov5s", .project = "runs/val", .name = "exp", .task = "val", .img = 640, .batch = 32,
                    .max_det = 300, .workers = 8, .threads = 0, .conf = 0.001, .iou = 0.6};
    const char *seen[64][2]; /* the options given, by their canonical name: one under two spellings is refused */
    int n_seen = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *c = canonical(a);
        for (int k = 0; k < n_seen; k++)
            if (!strcmp(seen[k][0], c) && strcmp(seen[k][1], a))
                return yp_err_set(err, "%s: %s is the same option, given already (the last would win silently); give "
                                  "it once", a, seen[k][1]);
        if (n_seen < 64) seen[n_seen][0] = c, seen[n_seen][1] = a, n_seen++;
        int rc = parse_one(o, a, i + 1 < argc ? argv[i + 1] : NULL, err);
        if (rc < 0) return -1;
        i += rc;
        if (rc && !strcmp(c, "--weights") && i + 1 < argc && strncmp(argv[i + 1], "-", 1))
            return yp_err_set(err, "--weights %s %s is val.py's ensemble of several models; yoloplan does not support "
                              "it (it validates one checkpoint: give one --weights)", argv[i], argv[i + 1]);
    }
    if (!o->weights || !o->data) return yp_err_set(err, "val: --weights and --data are required; " VAL_USAGE);
    if (check_device(o, err)) return -1;
    if (!o->threads) o->threads = sysconf(_SC_NPROCESSORS_ONLN) > 0 ? sysconf(_SC_NPROCESSORS_ONLN) : 1;
    return 0;
}

/* The model: a yoloplan checkpoint's plan names it (its "model" IR); otherwise --model. */
static yp_graph *load_model(const val_opts *o, int nc, yp_err *err) {
    yp_ckpt_info info;
    if (yp_ckpt_read_info(o->weights, &info, NULL) == 0) {
        cJSON *plan = cJSON_Parse(info.plan ? info.plan : "");
        cJSON *ir = cJSON_GetObjectItemCaseSensitive(plan, "model");
        char *text = cJSON_IsObject(ir) ? cJSON_PrintUnformatted(ir) : NULL;
        yp_graph *g = text ? yp_ir_load_buffer(text, strlen(text), o->weights, err) : NULL;
        free(text);
        cJSON_Delete(plan);
        yp_ckpt_info_free(&info);
        if (g && g->nc != nc) {
            yp_err_set(err, "--weights %s: the model has nc %d, --data %d classes; validate on the data it was trained "
                       "for", o->weights, g->nc, nc);
            yp_graph_free(g);
            return NULL;
        }
        if (g) return g;
        return NULL;
    }
    return cli_load_model(o->model, nc, err);
}

static int run(val_opts *o, yp_err *err) {
    yp_labels val;
    memset(&val, 0, sizeof val);
    yp_graph *g = NULL;
    yp_backend *be = NULL;
    yp_plan p;
    yp_exec x;
    yp_validator *v = NULL;
    yp_coco_json *json = NULL;
    char **names = NULL;
    int have_plan = 0, have_exec = 0, rc = -1;
    char why[256], dir[RUN_DIR_PATH], path[RUN_DIR_PATH + 320];
    const yp_cpu_config cpu = {(int)o->threads};
    memset(&x, 0, sizeof x);
    if (yp_labels_load_split(o->data, o->task, &val, err) || !(g = load_model(o, val.stats.nc, err)) ||
        cli_check_rgb(g, o->weights ? o->weights : o->model, err))
        goto done;
    o->img = cli_check_img_size(o->img, yp_stride_gs(yp_graph_max_stride(g)), 0, stderr); /* val.py: no floor */
    if (!(be = yp_backend_cpu_new(&cpu, why, sizeof why))) {
        yp_err_set(err, "val: %s", why);
        goto done;
    }
    /* the validation pass runs at twice the planned training batch; no layer trains */
    yp_device_plan_opts po = {.so = yp_search_opts_default(), .as_given = 1};
    yp_candidate *c = &po.so.base;
    *c = yp_candidate_default();
    c->batch = (o->batch + 1) / 2, c->img_w = c->img_h = o->img, c->mosaic = 0, c->ema = 0, c->freeze = g->n_layers;
    c->labels_per_image = val.stats.max_labels > 0 ? (double)val.stats.max_labels : 1.0;
    yp_exec_candidate_for(c, be);
    po.so.n_models = 1, po.so.models[0] = g, po.so.batch = c->batch;
    yp_gpu host;
    yp_device_plan d;
    int64_t avail = cli_host_available_bytes();
    if (cli_device_budget(be, avail > 0 ? avail : (int64_t)1 << 30, NULL, &host, err) ||
        yp_device_plan_make(&po, &host, &d, err))
        goto done;
    p = d.plan;
    have_plan = 1;
    if (!p.fits) {
        yp_err_set(err, "val: batch %lld at --img %lld needs %.2f GiB, the host has %.2f GiB available; lower --batch",
                   (long long)o->batch, (long long)o->img, (double)p.device_bytes / 1073741824.0,
                   (double)avail / 1073741824.0);
        rc = -2;
        goto done;
    }
    if (yp_exec_init(&x, &p, be, 0, 1, err)) goto done;
    have_exec = 1;
    yp_ckpt_transfer t;
    if (yp_ckpt_load_eval_weights(&x, o->weights, stdout, &t, err)) goto done;
    if (t.loaded == 0) {
        yp_err_set(err, "--weights %s: none of the model's tensors is in the file; give a checkpoint of this model",
                   o->weights);
        goto done;
    }
    yp_val_opts vo = {.workers = (int)o->workers, .runs = 1, .loss = 0};
    yp_nms_cfg_val(&vo.nms);
    vo.nms.conf_thres = (float)o->conf, vo.nms.iou_thres = o->iou, vo.nms.max_det = o->max_det;
    if (!(v = yp_validator_new(&x, &val, &vo, err))) goto done;
    if (o->save_json && !(json = yp_coco_json_new())) {
        yp_err_set(err, "val: out of memory");
        goto done;
    }
    yp_val_result r;
    if (yp_validator_run(v, json, &r, err)) goto done;
    if (yp_dataset_names(o->data, val.stats.nc, &names, err)) goto done;
    /* val.py: the per-class table with --verbose, or for fewer than 50 classes */
    yp_validator_print(v, &r, o->verbose || val.stats.nc < 50, names, stdout);
    if (json) {
        const char *base = strrchr(o->weights, '/');
        char stem[256];
        snprintf(stem, sizeof stem, "%s", base ? base + 1 : o->weights);
        char *dot = strrchr(stem, '.');
        if (dot) *dot = 0;
        if (run_dir_make(o->project, o->name, o->exist_ok, 0, dir, sizeof dir, err)) goto done;
        snprintf(path, sizeof path, "%s/%s_predictions.json", dir, stem);
        if (yp_coco_json_write(json, path, err)) goto done;
        printf("Saving %s...\nResults saved to %s\n", path, dir);
    }
    rc = 0;
done:
    yp_dataset_names_free(names, val.stats.nc);
    yp_coco_json_free(json);
    yp_validator_free(v);
    if (have_exec) yp_exec_free(&x);
    yp_backend_free(be);
    if (have_plan) yp_plan_free(&p);
    yp_graph_free(g);
    yp_labels_free(&val);
    return rc;
}

int cmd_val(int argc, char **argv) {
    val_opts o;
    yp_err err = {0};
    int rc = parse(argc, argv, &o, &err);
    if (!rc) rc = run(&o, &err);
    if (rc == -2) {
        fprintf(stderr, "yoloplan: %s\n", err.msg);
        return YP_EXIT_NOFIT;
    }
    return rc ? cli_fail(&err) : YP_EXIT_OK;
}
