/* train.c - the epoch loop of train.py on the executor (yp_train.h): per batch the warm-up knobs,
 * a micro-step and, when the accumulation is due, the optimizer step and EMA; per epoch
 * validation, fitness, early stopping, checkpoints and the caller's callback; train.py's console;
 * the stop between batches that a signal asks for (train_signal.c). */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "yp_checkpoint.h"
#include "yp_train.h"
#include "yp_clock.h"

/* ---------------------------------------------------------------- state */

yp_train_state yp_train_state_initial(void) {
    yp_train_state s = {0, -1, 0.0, 0};
    return s;
}

static cJSON *state_obj(const yp_train_state *s) {
    cJSON *j = cJSON_CreateObject();
    if (!j) return NULL;
    char buf[40];
    cJSON_AddNumberToObject(j, "next_epoch", (double)s->next_epoch);
    cJSON_AddNumberToObject(j, "last_opt_step", (double)s->last_opt_step);
    snprintf(buf, sizeof buf, "%.17g", s->best_fitness); /* exact, as the checkpoint's numbers */
    cJSON_AddStringToObject(j, "best_fitness", buf);
    cJSON_AddNumberToObject(j, "best_epoch", (double)s->best_epoch);
    return j;
}

char *yp_train_state_json(const yp_train_state *s) {
    cJSON *j = state_obj(s);
    char *t = j ? cJSON_PrintUnformatted(j) : NULL;
    cJSON_Delete(j);
    return t;
}

int yp_train_state_parse(const char *options_json, yp_train_state *s, yp_err *err) {
    cJSON *root = cJSON_Parse(options_json ? options_json : "");
    cJSON *j = cJSON_GetObjectItemCaseSensitive(root, "train_state");
    const char *keys[4] = {"next_epoch", "last_opt_step", "best_fitness", "best_epoch"};
    cJSON *v[4];
    int ok = cJSON_IsObject(j);
    for (int k = 0; ok && k < 4; k++) {
        v[k] = cJSON_GetObjectItemCaseSensitive(j, keys[k]);
        ok = k == 2 ? cJSON_IsString(v[k]) : cJSON_IsNumber(v[k]);
    }
    if (ok) {
        char *end;
        s->next_epoch = (int64_t)v[0]->valuedouble, s->last_opt_step = (int64_t)v[1]->valuedouble;
        s->best_fitness = strtod(v[2]->valuestring, &end), s->best_epoch = (int64_t)v[3]->valuedouble;
        ok = !*end && s->next_epoch >= 0 && s->last_opt_step >= -1 && s->best_epoch >= 0;
    }
    cJSON_Delete(root);
    if (!ok) return yp_err_set(err, "the checkpoint's options have no valid train_state (next_epoch, last_opt_step, "
                               "best_fitness, best_epoch); it was not written by yoloplan train");
    return 0;
}

/* The caller's options with the loop's state added under "train_state", as JSON text. */
static char *options_with_state(const char *options, const yp_train_state *s) {
    cJSON *root = cJSON_Parse(options && *options ? options : "{}");
    if (!cJSON_IsObject(root)) cJSON_Delete(root), root = cJSON_CreateObject();
    cJSON_DeleteItemFromObjectCaseSensitive(root, "train_state");
    cJSON *st = state_obj(s);
    char *t = NULL;
    if (root && st && cJSON_AddItemToObject(root, "train_state", st)) st = NULL, t = cJSON_PrintUnformatted(root);
    cJSON_Delete(st);
    cJSON_Delete(root);
    return t;
}

/* ---------------------------------------------------------------- console */

typedef struct {
    FILE *f;
    int tty;
    char mem[16];
    int64_t epoch, epochs, nb;
    double t0;
} console;

static void fmt_hms(double s, char *buf, size_t n) {
    long v = s > 0 && s < 1e8 ? (long)(s + 0.5) : 0;
    if (v >= 3600) snprintf(buf, n, "%ld:%02ld:%02ld", v / 3600, v / 60 % 60, v % 60);
    else snprintf(buf, n, "%02ld:%02ld", v / 60, v % 60);
}

static void con_header(const console *c) {
    if (!c->f) return;
    fprintf(c->f, "\n%11s%11s%11s%11s%11s%11s%11s\n", "Epoch", "GPU_mem", "box_loss", "obj_loss", "cls_loss",
            "Instances", "Size");
}

/* train.py's progress line: the description, then tqdm's bar, count, elapsed<remaining, rate. */
static void con_progress(const console *c, int64_t done, const double mloss[3], int64_t instances, int size,
                         int final) {
    if (!c->f || (!c->tty && !final)) return;
    char ep[48], el[64], rem[64], bar[11];
    snprintf(ep, sizeof ep, "%lld/%lld", (long long)c->epoch, (long long)c->epochs - 1);
    double el_s = yp_now_s() - c->t0, rate = el_s > 0 ? (double)done / el_s : 0;
    fmt_hms(el_s, el, sizeof el);
    fmt_hms(rate > 0 ? (double)(c->nb - done) / rate : 0, rem, sizeof rem);
    int fill = c->nb > 0 ? (int)(10 * done / c->nb) : 10;
    for (int k = 0; k < 10; k++) bar[k] = k < fill ? '#' : ' ';
    bar[10] = 0;
    fprintf(c->f, "%s%11s%11s%11.4g%11.4g%11.4g%11.4g%11.4g: %3d%%|%s| %lld/%lld [%s<%s, %5.2fit/s]%s",
            c->tty ? "\r" : "", ep, c->mem, mloss[0], mloss[1], mloss[2], (double)instances, (double)size,
            c->nb > 0 ? (int)(100 * done / c->nb) : 100, bar, (long long)done, (long long)c->nb, el, rem, rate,
            final ? "\n" : "");
    fflush(c->f);
}

/* ---------------------------------------------------------------- the loop */

typedef struct {
    yp_exec *x;
    yp_train_opts *o;
    yp_train_state *st;
    yp_loader *loader;
    yp_validator *val;
    yp_train_sched sched;
    float *images, *scaled; /* the loader's batch as floats; multi-scale: resized to the batch's size */
    int64_t n_floats, nb, steps;
    int64_t imgsz;          /* the nominal size (--img) */
    int multi_scale, gs;
    int64_t bad_reported; /* the loader's bad images the console has counted */
    console con;
} loop;

/* The knobs of global batch ni into the trainer. */
static void apply_knobs(loop *L, const yp_train_knobs *k) {
    yp_hyp *h = &L->x->trainer.hyp;
    h->lr_bias = k->lr[0];
    h->lr = k->lr[1]; /* groups 1 and 2 share it */
    if (L->sched.sgd) h->momentum = k->momentum;
}

/* Whether the interrupt flag is up before batch i of epoch: then where into the options (and
 * the progress line, left open on a terminal, ended). */
static int interrupted(loop *L, int64_t epoch, int64_t i) {
    yp_train_opts *o = L->o;
    int sig = o->interrupt ? (int)*o->interrupt : 0;
    if (!sig) return 0;
    o->interrupted = sig, o->interrupted_epoch = epoch, o->interrupted_batch = i;
    if (L->con.f && L->con.tty && i > 0) fputc('\n', L->con.f);
    return 1;
}

/* One epoch's batches. Returns 0, 1 when max_steps stopped the run, 2 when the interrupt flag
 * did, -1 with err set. */
static int train_epoch(loop *L, int64_t epoch, double mloss[3], double lr[3], yp_err *err) {
    yp_exec *x = L->x;
    yp_train_opts *o = L->o;
    yp_train_knobs k = {{0, 0, 0}, 0, 1};
    int64_t instances = 0;
    int size = 0;
    mloss[0] = mloss[1] = mloss[2] = 0;
    for (int64_t i = 0; i < L->nb; i++) {
        if (interrupted(L, epoch, i)) return 2;
        yp_loader_batch b;
        int rc = yp_loader_next(L->loader, &b, err);
        if (rc == 0)
            return yp_err_set(err, "training: the loader ended early at epoch %lld batch %lld", (long long)epoch,
                              (long long)i);
        if (rc < 0) { /* no image loads any more (deleted, a disk gone), or a worker failed */
            yp_err inner = *err;
            return yp_err_set(err, "training stopped at epoch %lld batch %lld: %s; %s", (long long)epoch, (long long)i,
                              inner.msg, o->last_path && access(o->last_path, F_OK) == 0
                                             ? "once the images are readable again, yoloplan train --resume continues "
                                               "from weights/last.safetensors"
                                             : "no epoch finished, so no checkpoint was written");
        }
        if (b.epoch != epoch || b.index != i)
            return yp_err_set(err, "training: the loader delivered epoch %lld batch %lld for epoch %lld batch %lld",
                              (long long)b.epoch, (long long)b.index, (long long)epoch, (long long)i);
        int64_t ni = i + L->nb * epoch;
        yp_train_knobs_at(&L->sched, epoch, ni, &k);
        apply_knobs(L, &k);
        double loss[4];
        if (yp_loader_to_float(&b, L->images, L->n_floats) < 0)
            return yp_err_set(err, "training: a batch of %d images does not fit the plan", b.n);
        int64_t side = L->imgsz;
        const float *in = L->images;
        if (L->multi_scale) { /* train.py: sz = randrange(0.5 imgsz, 1.5 imgsz + gs) // gs * gs, per batch */
            yp_rng r;
            yp_rng_seed(&r, o->seed, YP_MULTISCALE_STREAM ^ (uint64_t)ni);
            int64_t lo = (int64_t)(L->imgsz * 0.5), hi = (int64_t)(L->imgsz * 1.5) + L->gs;
            side = (lo + yp_rng_below(&r, hi - lo)) / L->gs * L->gs;
            if (side != L->imgsz) yp_resize_bilinear_nhwc(L->images, b.n, L->imgsz, L->scaled, side), in = L->scaled;
        }
        if (yp_exec_micro_step_at(x, side, in, b.labels, b.n_labels, loss, err)) return -1;
        /* without the loss scaler (fp32, bf16) nothing skips a step: a loss that is not finite
         * would turn every weight into NaN at the update, and the next checkpoint with them; stop
         * before it. With it (amp-fp16) the update skips the step, as GradScaler does. */
        if (!x->trainer.scaler_on && (!isfinite(loss[0]) || !isfinite(loss[1]) || !isfinite(loss[2])))
            return yp_err_set(
                err,
                "training: the loss is not finite (box %g, obj %g, cls %g) at epoch %lld, batch %lld, "
                "lr %.3g; stopped before the update, so the run's weights/last.safetensors keeps the last "
                "epoch that finished: lower lr0 (--hyp) or check the labels",
                loss[0], loss[1], loss[2], (long long)epoch, (long long)i, k.lr[0]);
        const int stepped = ni - L->st->last_opt_step >= k.accumulate;
        if (stepped) {
            if (yp_exec_update(x, err)) return -1;
            L->st->last_opt_step = ni;
        }
        for (int c = 0; c < 3; c++) mloss[c] = (mloss[c] * (double)i + loss[c]) / (double)(i + 1);
        if ((o->step_losses || o->step_info) && o->n_step_losses < o->step_losses_cap) {
            if (o->step_losses) memcpy(o->step_losses[o->n_step_losses], loss, 3 * sizeof(double));
            if (o->step_info)
                o->step_info[o->n_step_losses] = (yp_train_step_info){
                    epoch, ni, k, stepped, stepped ? x->trainer.last_grad_norm : 0.0};
            o->n_step_losses++;
        }
        instances = b.n_labels, size = (int)side;
        L->steps++;
        if (o->max_steps > 0 && L->steps >= o->max_steps) {
            con_progress(&L->con, i + 1, mloss, instances, size, 1);
            return 1;
        }
        con_progress(&L->con, i + 1, mloss, instances, size, i + 1 == L->nb);
    }
    memcpy(lr, k.lr, sizeof k.lr);
    return 0;
}

/* One line when images could not be read since the last one (deleted or damaged during the run:
 * the loader warned once per file and, to keep the plan's batch shape, filled their positions
 * with other images of the epoch's order; the line says how many positions). */
static void con_skipped(loop *L, int64_t epoch) {
    yp_loader_stats s;
    yp_loader_get_stats(L->loader, &s);
    if (s.bad_images <= L->bad_reported) return;
    if (L->con.f)
        fprintf(L->con.f,
                "train: %lld images could not be read by the end of epoch %lld (%lld of %lld in all), skipped; "
                "%lld batch positions so far were filled by other images to keep the batch size (the first to "
                "fail: %s)\n",
                (long long)(s.bad_images - L->bad_reported), (long long)epoch, (long long)s.bad_images,
                (long long)L->o->train->n, (long long)s.replaced, s.first_bad);
    L->bad_reported = s.bad_images;
}

static int save(loop *L, const char *path, yp_err *err) {
    char *opts = options_with_state(L->o->options_json, L->st);
    if (!opts) return yp_err_set(err, "checkpoint: out of memory");
    yp_ckpt_meta m = {L->st->next_epoch - 1, L->st->best_fitness, opts};
    int rc = yp_ckpt_save(L->x, path, &m, NULL, err);
    free(opts);
    return rc;
}

/* A run file of epoch e (results, a checkpoint) could not be written: err (which names the file,
 * the failure and its fix, and says the previous file is intact) gets how the run goes on. -1. */
static int stopped_at(const loop *L, int64_t e, yp_err *err) {
    yp_err inner = *err;
    if (!L->o->last_path) return -1;
    if (access(L->o->last_path, F_OK) == 0) /* a checkpoint of an earlier epoch is there */
        return yp_err_set(err,
                          "%s; training stopped at the end of epoch %lld: after the fix, yoloplan train --resume %s "
                          "continues from the last epoch saved",
                          inner.msg, (long long)e, L->o->last_path);
    return yp_err_set(err, "%s; training stopped at the end of epoch %lld, before any checkpoint: start it again after "
                      "the fix", inner.msg, (long long)e);
}

/* Validation, fitness, early stopping and checkpoints after epoch e. Returns 0, 1 to stop
 * early, -1 with err set. */
static int end_epoch(loop *L, yp_epoch_result *r, int *possible_stop, yp_err *err) {
    yp_train_opts *o = L->o;
    yp_train_state *st = L->st;
    int64_t e = r->epoch;
    int final = e + 1 == o->epochs || *possible_stop;
    if (L->val && (!o->noval || final)) {
        if (yp_validator_run(L->val, NULL, &r->val, err)) return -1;
        r->validated = 1;
        if (o->console) yp_validator_print(L->val, &r->val, final && o->per_class, o->names, o->console);
    }
    r->fitness = r->validated ? r->val.fitness : 0.0;
    /* EarlyStopping (compares with the best before this epoch), then the best fitness */
    if (r->fitness >= st->best_fitness) st->best_epoch = e;
    int64_t delta = e - st->best_epoch;
    int stop = o->patience > 0 && delta >= o->patience;
    *possible_stop = o->patience > 0 && delta >= o->patience - 1;
    if (r->fitness > st->best_fitness) st->best_fitness = r->fitness;
    r->is_best = r->fitness == st->best_fitness;
    st->next_epoch = e + 1;
    /* the caller's files first: a crash between them and the checkpoint repeats this epoch on
     * --resume, whose files the caller then cuts back to the checkpoint's epoch */
    r->seconds = yp_now_s() - L->con.t0;
    r->final = final || stop;
    /* best before last: a crash between them leaves last at the epoch before, so --resume trains
     * this epoch again and writes its best again; the other order would resume after an epoch
     * whose best was never saved */
    if ((o->on_epoch && o->on_epoch(o->ctx, r, err)) || (o->best_path && r->is_best && save(L, o->best_path, err)) ||
        (o->last_path && save(L, o->last_path, err)))
        return stopped_at(L, e, err);
    if (stop && o->console)
        fprintf(o->console, "Stopping training early as no improvement observed in last %lld epochs. Best results "
                "observed at epoch %lld, best model saved as best.safetensors.\n", (long long)o->patience,
                (long long)st->best_epoch);
    return stop;
}

static void loop_free(loop *L) {
    yp_loader_close(L->loader);
    yp_validator_free(L->val);
    free(L->images), free(L->scaled);
}

void yp_train_loader_opts(const yp_train_opts *o, int64_t batch, int64_t imgsz, int64_t first_epoch,
                          yp_loader_opts *lo) {
    yp_loader_opts_default(lo);
    lo->workers = o->workers, lo->batch = (int)batch, lo->imgsz = (int)imgsz;
    lo->first_epoch = first_epoch, lo->epochs = o->epochs, lo->drop_last = 1, lo->seed = o->seed;
    lo->hyp = o->hyp.aug, lo->no_augment = !o->augment, lo->cache = o->train_cache;
}

void yp_train_val_opts(const yp_train_opts *o, int64_t first_epoch, yp_val_opts *vo) {
    *vo = (yp_val_opts){.workers = o->workers, .runs = o->noval ? 1 : o->epochs - first_epoch, .loss = 1,
                        .cache = o->val_cache};
    yp_nms_cfg_val(&vo->nms);
}

static int loop_open(loop *L, yp_err *err) {
    yp_exec *x = L->x;
    yp_train_opts *o = L->o;
    const yp_schedule *s = x->train.s;
    const yp_candidate *c = &x->train.plan->cand;
    if (c->img_h != c->img_w)
        return yp_err_set(err,
                          "training: the plan trains %lldx%lld images; the loader builds square ones: plan a square "
                          "--img",
                          (long long)c->img_w, (long long)c->img_h);
    L->imgsz = c->img_w, L->multi_scale = c->multi_scale, L->gs = yp_graph_max_stride(s->g);
    if (L->st->next_epoch >= o->epochs)
        return yp_err_set(err, "training: epoch %lld of %lld is done: nothing to resume", (long long)L->st->next_epoch,
                          (long long)o->epochs);
    if (o->train->stats.nc != s->g->nc)
        return yp_err_set(err, "training: the data has nc %d, the model %d", o->train->stats.nc, s->g->nc);
    yp_loader_opts lo;
    yp_train_loader_opts(o, s->opts.batch, L->imgsz, L->st->next_epoch, &lo);
    if (!(L->loader = yp_loader_open(o->train, &lo, err))) return -1;
    L->nb = yp_loader_batches_per_epoch(L->loader);
    L->n_floats = s->opts.batch * L->imgsz * L->imgsz * 3;
    if (!(L->images = malloc((size_t)L->n_floats * sizeof(float))) ||
        (L->multi_scale && !(L->scaled = malloc((size_t)(s->opts.batch * s->opts.h * s->opts.w * 3) * sizeof(float)))))
        return yp_err_set(err, "training: out of memory for the float batch");
    if (L->multi_scale) { /* every size a batch can take, prepared now: nothing is built per batch */
        int64_t sides[256];
        int n = yp_candidate_multiscale_sides(c, L->gs, sides, 256);
        if (n < 0)
            return yp_err_set(err, "training: --multi-scale at --img %lld has over 256 sizes", (long long)L->imgsz);
        for (int k = 0; k < n; k++)
            if (yp_exec_add_size(x, sides[k], err)) return -1;
    }
    if (o->val) {
        yp_val_opts vo;
        yp_train_val_opts(o, L->st->next_epoch, &vo);
        if (!(L->val = yp_validator_new(x, o->val, &vo, err))) return -1;
    }
    yp_train_sched_init(&L->sched, &o->hyp, o->cos_lr, s->opts.optimizer == YP_OPT_SGD, o->epochs, s->opts.batch,
                        L->nb);
    /* train.py scales the decay by the batch and accumulation it trains with */
    yp_hyp *h = &x->trainer.hyp;
    h->weight_decay = o->hyp.weight_decay * (double)s->opts.batch * L->sched.accumulate / YP_NBS;
    h->momentum = o->hyp.momentum;
    yp_exec_set_loss_hyp(x, &(yp_loss_hyp){.box = o->hyp.box, .obj = o->hyp.obj, .cls = o->hyp.cls,
                                            .anchor_t = o->hyp.anchor_t, .label_smoothing = o->hyp.label_smoothing});
    L->con = (console){.f = o->console, .tty = o->tty, .epochs = o->epochs, .nb = L->nb};
    /* train.py's GPU_mem: torch.cuda.memory_reserved() / 1e9, 0 on the CPU (the plan line has the arena) */
    double reserved = x->train.be->host_memory ? 0.0 : (double)x->train.arena_bytes;
    snprintf(L->con.mem, sizeof L->con.mem, "%.3gG", reserved / 1e9);
    return 0;
}

int yp_train_run(yp_exec *x, yp_train_opts *o, yp_train_state *st, yp_err *err) {
    loop L;
    memset(&L, 0, sizeof L);
    L.x = x, L.o = o, L.st = st;
    o->n_step_losses = 0, o->interrupted = 0, o->interrupted_epoch = o->interrupted_batch = 0;
    sigset_t mask; /* the loaders' worker threads start with the signals blocked: the loop takes them */
    yp_train_signals_block(&mask);
    int rc = loop_open(&L, err), possible_stop = 0;
    yp_train_signals_unblock(&mask);
    o->batches = L.nb;
    for (int64_t e = st->next_epoch; !rc && e < o->epochs; e++) {
        if (interrupted(&L, e, 0)) break;
        yp_epoch_result r;
        memset(&r, 0, sizeof r);
        r.epoch = e, r.epochs = o->epochs;
        L.con.epoch = e, L.con.t0 = yp_now_s();
        con_header(&L.con);
        rc = train_epoch(&L, e, r.train_loss, r.lr, err);
        if (rc >= 0) con_skipped(&L, e);
        /* 1: max_steps reached, 2: interrupted; the epoch unfinished: no validation, no checkpoint */
        if (rc) break;
        int stop = end_epoch(&L, &r, &possible_stop, err);
        if (stop < 0) rc = -1;
        if (stop) break;
    }
    loop_free(&L);
    return rc < 0 ? -1 : 0;
}
