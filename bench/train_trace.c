/* train_trace.c - a short `yoloplan train --no-augment` run, traced micro-batch by micro-batch,
 * for bench/train_vs_pytorch.sh to replay in PyTorch (bench/reference/train_ref.py):
 *
 *   ./build/bench/train_trace --data D.yaml --weights W.safetensors --out DIR
 *       [--model yolov5n] [--img 128] [--batch 8] [--seed 0] [--epochs 100] [--threads 2]
 *       [--workers 2] [--save FILE] (--steps N | --opt-steps N)
 *
 * Builds the CPU plan at --batch (fp32, SGD, EMA on, mosaic off), initialises the executor, loads
 * W (a state dict with Ultralytics' names, e.g. the reference model's initial weights) and runs
 * yp_train_run with augmentation off, no validation and hyp.scratch-low: --steps N micro-batches,
 * or, with --opt-steps N, as many as train.py's schedule needs for N optimizer steps (the
 * warm-up's accumulation grows, so that is more than N). --epochs matters although the run stops
 * early: the learning rate's decay lf(epoch) depends on it.
 *
 * Writes into DIR (which must exist):
 *
 * batches.bin - the exact batches the run trained on, from a second yp_loader opened with the
 *   loop's own options (yp_train_loader_opts; the loader is deterministic per seed, so it delivers
 *   the same batches). Little-endian:
 *     char magic[8] "YPBATCH1"
 *     int64 n_batches, batch, imgsz, batches_per_epoch (nb, drop_last), epochs
 *     n_batches times:
 *       int64 epoch, index (batch within the epoch), n (images), n_labels
 *       uint8 images[n][imgsz][imgsz][3]   NHWC, RGB, as the loader delivers them
 *       float32 labels[n_labels][6]        image in batch, class, cx, cy, w, h (normalised)
 *
 * losses.tsv - a header line, then one line per micro-batch, tab-separated:
 *     step       1-based micro-batch
 *     epoch, ni  the epoch and global batch (ni = index + nb * epoch)
 *     box, obj, cls, total   the loss items (after the gains; total = their sum)
 *     lr0, lr1, lr2          the groups' learning rates the loop ran with (biases, decayed conv
 *                            weights, BN weights)
 *     momentum, accumulate   SGD's momentum and the accumulation in force
 *     opt_step   1 when an optimizer step followed this micro-batch
 *     opt_steps  optimizer steps so far (this one included)
 *     grad_norm  that step's gradient norm before clip_grad_norm_ (0 without a step)
 *   The knobs are what yp_train_run used (yp_train_opts.step_info), not recomputed.
 *
 * --save FILE also writes the executor's state after the run as a checkpoint (executor/io/yp_checkpoint.h:
 * the weights, their EMA, SGD's momentum buffers under Ultralytics' names), which train_ref.py's
 * --save matches name for name, to find where two runs part.
 *
 * A bench, not a test: exits 0 when the run and the files are done, 1 on failure, 2 on bad usage. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "yp_checkpoint.h"
#include "yp_ir.h"
#include "yp_models.h"
#include "yp_train.h"

#define USAGE                                                                                                          \
    "usage: train_trace --data D.yaml --weights W.safetensors --out DIR [--model yolov5n] [--img 128] [--batch 8]\n"  \
    "                   [--seed 0] [--epochs 100] [--threads 2] [--workers 2] [--save FILE]\n"                          \
    "                   (--steps N | --opt-steps N)\n"

typedef struct {
    const char *data, *weights, *out, *model, *save;
    long img, batch, seed, epochs, threads, workers, steps, opt_steps;
} args;

static int parse_long(const char *opt, const char *v, long lo, long *out) {
    char *end = NULL;
    long x = strtol(v, &end, 10);
    if (!*v || *end || x < lo) {
        fprintf(stderr, "train_trace: %s %s: give an integer >= %ld\n", opt, v, lo);
        return -1;
    }
    *out = x;
    return 0;
}

static int parse(int argc, char **argv, args *a) {
    *a = (args){.model = "yolov5n", .img = 128, .batch = 8, .seed = 0, .epochs = 100, .threads = 2, .workers = 2};
    for (int i = 1; i < argc; i++) {
        const char *k = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(k, "-h") || !strcmp(k, "--help")) return fputs(USAGE, stdout), 1;
        if (!v) return fprintf(stderr, "train_trace: %s needs a value\n" USAGE, k), -1;
        i++;
        int rc = 0;
        if (!strcmp(k, "--data")) a->data = v;
        else if (!strcmp(k, "--weights")) a->weights = v;
        else if (!strcmp(k, "--out")) a->out = v;
        else if (!strcmp(k, "--model")) a->model = v;
        else if (!strcmp(k, "--save")) a->save = v;
        else if (!strcmp(k, "--img")) rc = parse_long(k, v, 32, &a->img);
        else if (!strcmp(k, "--batch")) rc = parse_long(k, v, 1, &a->batch);
        else if (!strcmp(k, "--seed")) rc = parse_long(k, v, 0, &a->seed);
        else if (!strcmp(k, "--epochs")) rc = parse_long(k, v, 1, &a->epochs);
        else if (!strcmp(k, "--threads")) rc = parse_long(k, v, 1, &a->threads);
        else if (!strcmp(k, "--workers")) rc = parse_long(k, v, 1, &a->workers);
        else if (!strcmp(k, "--steps")) rc = parse_long(k, v, 1, &a->steps);
        else if (!strcmp(k, "--opt-steps")) rc = parse_long(k, v, 1, &a->opt_steps);
        else return fprintf(stderr, "train_trace: unknown option %s\n" USAGE, k), -1;
        if (rc) return -1;
    }
    if (!a->data || !a->weights || !a->out || (!a->steps == !a->opt_steps))
        return fprintf(stderr, "train_trace: --data, --weights, --out and one of --steps, --opt-steps are required\n"
                       USAGE), -1;
    if (a->img % 32) return fprintf(stderr, "train_trace: --img %ld: give a multiple of 32\n", a->img), -1;
    return 0;
}

/* The micro-batches train.py's rule (step when ni - last_opt_step >= accumulate) needs for n
 * optimizer steps; 0 when the epochs end first. */
static int64_t micro_for_opt_steps(const yp_train_sched *s, int64_t nb, int64_t n) {
    int64_t last = -1, done = 0;
    for (int64_t ni = 0; ni < s->epochs * nb; ni++) {
        yp_train_knobs k;
        yp_train_knobs_at(s, ni / nb, ni, &k);
        if (ni - last >= k.accumulate) last = ni, done++;
        if (done == n) return ni + 1;
    }
    return 0;
}

static int write_batches(const yp_candidate *c, const yp_train_opts *o, int64_t n_batches, int64_t nb, const char *path,
                         yp_err *err) {
    yp_loader_opts lo;
    yp_train_loader_opts(o, c->batch, c->img_w, 0, &lo);
    yp_loader *l = yp_loader_open(o->train, &lo, err);
    if (!l) return -1;
    FILE *f = fopen(path, "wb");
    int rc = f ? 0 : yp_err_set(err, "%s: cannot be written", path);
    int64_t head[5] = {n_batches, lo.batch, lo.imgsz, nb, o->epochs};
    if (!rc && (fwrite("YPBATCH1", 1, 8, f) != 8 || fwrite(head, sizeof head, 1, f) != 1))
        rc = yp_err_set(err, "%s: write failed", path);
    for (int64_t i = 0; !rc && i < n_batches; i++) {
        yp_loader_batch b;
        int got = yp_loader_next(l, &b, err);
        if (got <= 0) {
            rc = got < 0 ? -1 : yp_err_set(err, "the second loader ended at batch %lld", (long long)i);
            break;
        }
        int64_t rec[4] = {b.epoch, b.index, b.n, b.n_labels};
        size_t pix = (size_t)b.n * (size_t)b.imgsz * (size_t)b.imgsz * 3;
        if (fwrite(rec, sizeof rec, 1, f) != 1 || fwrite(b.images, 1, pix, f) != pix ||
            (b.n_labels && fwrite(b.labels, 6 * sizeof(float), (size_t)b.n_labels, f) != (size_t)b.n_labels))
            rc = yp_err_set(err, "%s: write failed", path);
    }
    if (f && fclose(f) && !rc) rc = yp_err_set(err, "%s: write failed", path);
    yp_loader_close(l);
    return rc;
}

static int write_losses(const yp_train_opts *o, const char *path, yp_err *err) {
    FILE *f = fopen(path, "w");
    if (!f) return yp_err_set(err, "%s: cannot be written", path);
    fprintf(f, "step\tepoch\tni\tbox\tobj\tcls\ttotal\tlr0\tlr1\tlr2\tmomentum\taccumulate\topt_step\topt_steps\t"
            "grad_norm\n");
    int64_t steps = 0;
    for (int64_t i = 0; i < o->n_step_losses; i++) {
        const double *l = o->step_losses[i];
        const yp_train_step_info *s = &o->step_info[i];
        steps += s->stepped;
        fprintf(f, "%lld\t%lld\t%lld\t%.9g\t%.9g\t%.9g\t%.9g\t%.12g\t%.12g\t%.12g\t%.12g\t%d\t%d\t%lld\t%.9g\n",
                (long long)i + 1, (long long)s->epoch, (long long)s->ni, l[0], l[1], l[2], l[0] + l[1] + l[2],
                s->knobs.lr[0], s->knobs.lr[1], s->knobs.lr[2], s->knobs.momentum, s->knobs.accumulate, s->stepped,
                (long long)steps, s->grad_norm);
    }
    if (fclose(f)) return yp_err_set(err, "%s: write failed", path);
    return 0;
}

typedef struct {
    yp_labels train;
    yp_graph *g;
    yp_backend *cpu;
    yp_plan p;
    int have_plan, have_exec;
    yp_exec x;
    double (*losses)[3];
    yp_train_step_info *info;
} trace;

static void trace_free(trace *t) {
    if (t->have_exec) yp_exec_free(&t->x);
    if (t->have_plan) yp_plan_free(&t->p);
    yp_backend_free(t->cpu);
    yp_graph_free(t->g);
    yp_labels_free(&t->train);
    free(t->losses), free(t->info);
}

static yp_graph *load_model(const char *name, int nc, yp_err *err) {
    const yp_model_blob *m = yp_models_find(name);
    yp_graph *g = m ? yp_ir_load_buffer(m->json, m->len, name, err) : yp_ir_load_file(name, err);
    if (g && nc != g->nc) {
        g->nc = nc, g->nodes[g->n_nodes - 1].a.detect.nc = nc;
        if (yp_graph_check(g, name, err)) yp_graph_free(g), g = NULL;
    }
    return g;
}

static int run(const args *a, trace *t, yp_err *err) {
    char why[256] = "", path[4096];
    if (yp_labels_load(a->data, &t->train, err)) return -1;
    if (!(t->g = load_model(a->model, t->train.stats.nc, err))) return -1;
    if (!(t->cpu = yp_backend_cpu_new(&(yp_cpu_config){(int)a->threads}, why, sizeof why)))
        return yp_err_set(err, "the CPU backend: %s", why);
    yp_candidate c = yp_candidate_default();
    c.batch = a->batch, c.img_w = c.img_h = a->img, c.mosaic = 0, c.ema = 1, c.optimizer = YP_OPT_SGD;
    c.labels_per_image = t->train.stats.max_labels > 0 ? (double)t->train.stats.max_labels : 1.0;
    yp_exec_candidate_for(&c, t->cpu);
    yp_gpu host;
    yp_gpu_host((int64_t)16 << 30, &host);
    if (yp_plan_build(t->g, &c, &host, 0, 0, &t->p, err)) return -1;
    t->have_plan = 1;
    if (yp_exec_init(&t->x, &t->p, t->cpu, 0, (uint64_t)a->seed + 1, err)) return -1;
    t->have_exec = 1;
    yp_ckpt_transfer tr;
    if (yp_ckpt_load_weights(&t->x, a->weights, stderr, &tr, err)) return -1;
    if (tr.skipped || tr.missing)
        return yp_err_set(err, "%s: %d tensors skipped and %d missing: not the model's initial weights", a->weights,
                          tr.skipped, tr.missing);

    yp_train_opts o;
    memset(&o, 0, sizeof o);
    o.train = &t->train, o.val = NULL;
    yp_hyp_file_default(&o.hyp);
    o.hyp.aug.mosaic = 0.0;
    o.epochs = a->epochs, o.workers = (int)a->workers, o.seed = (uint64_t)a->seed, o.augment = 0;
    const int64_t nb = t->train.n / a->batch;
    if (nb < 1) return yp_err_set(err, "--batch %ld: the training split has %lld images", a->batch, (long long)t->train.n);
    int64_t micro = a->steps;
    if (a->opt_steps) {
        yp_train_sched s;
        yp_train_sched_init(&s, &o.hyp, 0, 1, a->epochs, a->batch, nb);
        if (!(micro = micro_for_opt_steps(&s, nb, a->opt_steps)))
            return yp_err_set(err, "--opt-steps %ld do not fit in %ld epochs of %lld batches: raise --epochs",
                              a->opt_steps, a->epochs, (long long)nb);
    }
    if (micro > a->epochs * nb)
        return yp_err_set(err, "--steps %lld: %ld epochs have %lld batches: raise --epochs", (long long)micro, a->epochs,
                          (long long)(a->epochs * nb));
    t->losses = malloc((size_t)micro * sizeof *t->losses), t->info = malloc((size_t)micro * sizeof *t->info);
    if (!t->losses || !t->info) return yp_err_set(err, "out of memory");
    o.step_losses = t->losses, o.step_info = t->info, o.step_losses_cap = micro;
    o.max_steps = micro;
    yp_train_state st = yp_train_state_initial();
    printf("train_trace: %s, nc %d, batch %ld, img %ld, %lld batches per epoch, %lld micro-batches%s\n", t->g->name,
           t->g->nc, a->batch, a->img, (long long)nb, (long long)micro, a->opt_steps ? " (for the optimizer steps)" : "");
    if (yp_train_run(&t->x, &o, &st, err)) return -1;
    if (o.n_step_losses != micro)
        return yp_err_set(err, "the run recorded %lld of %lld micro-batches", (long long)o.n_step_losses,
                          (long long)micro);
    if (a->opt_steps && t->x.trainer.updates != a->opt_steps)
        return yp_err_set(err, "the run made %lld optimizer steps, the schedule said %ld",
                          (long long)t->x.trainer.updates, a->opt_steps);
    if (snprintf(path, sizeof path, "%s/losses.tsv", a->out) >= (int)sizeof path || write_losses(&o, path, err))
        return -1;
    if (snprintf(path, sizeof path, "%s/batches.bin", a->out) >= (int)sizeof path ||
        write_batches(&t->p.cand, &o, micro, nb, path, err))
        return -1;
    yp_ckpt_meta meta = {0, 0.0, NULL};
    if (a->save && yp_ckpt_save(&t->x, a->save, &meta, NULL, err)) return -1;
    printf("train_trace: %lld optimizer steps; wrote %s/losses.tsv and %s/batches.bin\n",
           (long long)t->x.trainer.updates, a->out, a->out);
    return 0;
}

int main(int argc, char **argv) {
    args a;
    int rc = parse(argc, argv, &a);
    if (rc) return rc < 0 ? 2 : 0;
    trace t;
    memset(&t, 0, sizeof t);
    yp_err err = {0};
    rc = run(&a, &t, &err);
    if (rc) fprintf(stderr, "train_trace: %s\n", err.msg);
    trace_free(&t);
    return rc ? 1 : 0;
}
