/* yp_train.h - YOLOv5's train.py on the executor: the per-batch learning-rate, momentum and
 * accumulation schedule (warm-up, linear or cosine decay), validation with mAP (val.py), and the
 * epoch loop that ties the loader, the executor's steps, validation and checkpoints together.
 *
 * The loop runs inside one executor (one arena, allocated before the first step); it allocates its
 * host buffers (the float batch, the NMS workspace, the metric tables) once at start-up, so no
 * allocation happens per batch. What it writes besides checkpoints (results.csv, curves) is the
 * caller's, through the per-epoch callback.
 *
 * Defines: yp_train_sched (+ yp_train_sched_init, yp_train_lf, yp_train_knobs_at), yp_validator
 * (+ new, run, print, free), yp_val_host (+ yp_validator_host_bytes), yp_train_opts (+
 * yp_train_loader_opts, yp_train_val_opts), yp_train_step_info, yp_train_state, yp_epoch_result,
 * yp_train_run, yp_train_state_json, yp_train_state_parse, and the run's signals
 * (yp_train_signals_catch, _release, _block, _unblock, yp_train_signal_flag) */
#ifndef YP_TRAIN_H
#define YP_TRAIN_H

#include <signal.h>
#include <stdio.h>

#include "yp_executor.h"
#include "yp_hyp_file.h"
#include "yp_label_cache.h"
#include "yp_loader.h"
#include "yp_metrics.h"

#define YP_NBS 64 /* train.py's nominal batch size */
#define YP_MULTISCALE_STREAM 0x6d756c7469ull /* "multi": the random stream of the batch sizes */

/* ---------------------------------------------------------------- schedule (train_sched.c) */

typedef struct {
    double lr0, lrf, momentum, warmup_momentum, warmup_bias_lr;
    int cos_lr;          /* --cos-lr: one_cycle instead of the linear decay */
    int sgd;             /* SGD's groups have a momentum the warm-up ramps; Adam's betas are kept */
    int64_t epochs;
    int64_t batch;       /* the loader's batch */
    int64_t nw;          /* warm-up iterations: max(round(warmup_epochs * nb), 100) */
    int accumulate;      /* after the warm-up: max(round(nbs / batch), 1) */
} yp_train_sched;

/* train.py's settings for batch size `batch` and nb batches per epoch. Python's round (half to
 * even) where train.py rounds. */
void yp_train_sched_init(yp_train_sched *s, const yp_hyp_file *h, int cos_lr, int sgd, int64_t epochs, int64_t batch,
                         int64_t nb);

/* The LambdaLR factor of epoch e: linear (1 - e/epochs)(1 - lrf) + lrf, or one_cycle
 * ((1 - cos(e pi / epochs)) / 2)(lrf - 1) + 1. */
double yp_train_lf(const yp_train_sched *s, int64_t epoch);

/* What train.py sets before the forward pass of global batch ni (ni = i + nb * epoch): */
typedef struct {
    double lr[3];    /* param groups 0 (biases), 1 (conv weights, decayed), 2 (BN weights) */
    double momentum; /* SGD's momentum (the hyp's for Adam) */
    int accumulate;  /* step when ni - last_opt_step >= accumulate */
} yp_train_knobs;

/* Up to ni = nw the warm-up interpolates over [0, nw]: accumulate from 1 to nbs/batch (rounded
 * half to even, at least 1), group 0's lr from warmup_bias_lr and the others' from 0 to
 * lr0 * lf(epoch), momentum from warmup_momentum; afterwards lr0 * lf(epoch), the hyp momentum
 * and s->accumulate. */
void yp_train_knobs_at(const yp_train_sched *s, int64_t epoch, int64_t ni, yp_train_knobs *out);

/* ---------------------------------------------------------------- validation (validate.c) */

typedef struct {
    int workers;            /* loader threads */
    int64_t runs;           /* validation passes the loader prepares (epochs validated) */
    yp_nms_cfg nms;         /* yp_nms_cfg_val unless --conf / --iou */
    int loss;               /* 1: also the loss over the split (val/box_loss ...) */
    const struct yp_image_cache *cache; /* --cache ram: the split's images, cached without augment's
                                         * resize rule; NULL: decoded each pass */
} yp_val_opts;

/* One validation pass's results (val.py's `results`, `maps` and the counts). */
typedef struct {
    int64_t images, instances; /* images scored, their labels (an image that could not be read is
                                * left out of both, never replaced by another) */
    int64_t skipped;           /* images of the split that could not be read in this pass */
    double mp, mr, map50, map, fitness;
    double loss[3];            /* lbox, lobj, lcls: mean over the batches (0 without opts.loss) */
    double seconds;            /* the pass's wall time */
    double ms_inference, ms_nms; /* per image */
} yp_val_result;

typedef struct yp_validator yp_validator;

/* Validation of x's plan over `val` (kept: it must outlive the validator): the letterboxing loader
 * at the plan's validation batch and size, the decoded-box buffer, the NMS workspace and the metric
 * tables, all allocated here. NULL with err set (an image size other than the plan's square, a
 * dataset with another nc, out of memory). */
yp_validator *yp_validator_new(yp_exec *x, const yp_labels *val, const yp_val_opts *o, yp_err *err);

/* Host memory a validator allocates for e (yp_exec_eval_shape), nc classes, `val` and o, bytes
 * (what yp_validator_new allocates; only touched pages count in the process's RSS, and the
 * mAP tables fill up to the detections a pass finds). */
typedef struct {
    int64_t loader;  /* yp_loader_host_bytes of its letterboxing loader */
    int64_t images;  /* the float batch: min(batch, images in the split) x h x w x 3 floats */
    int64_t decoded; /* Detect's decoded rows of that batch: boxes x fields floats per image */
    int64_t nms;     /* yp_nms_workspace_bytes, one image's detections and labels */
    int64_t map;     /* yp_map_host_bytes for max_det detections per image of the split */
    int64_t total;   /* loader + images + decoded + nms + map */
    int64_t decoders; /* not in total: its loader's decoder estimate (yp_loader_bytes.decoders) */
} yp_val_host;

int yp_validator_host_bytes(const yp_eval_shape *e, int nc, const yp_labels *val, const yp_val_opts *o,
                            yp_val_host *h, yp_err *err);

/* One pass over the split with the weights the validation pass reads (the EMA copies, or the
 * weights without EMA): per image NMS, boxes to original pixels, matching; then the metrics.
 * json (may be NULL) receives every image's detections (--save-json). 0, or -1 with err set. */
int yp_validator_run(yp_validator *v, yp_coco_json *json, yp_val_result *out, yp_err *err);

/* val.py's table of the last pass: the header, "all" and, with per_class, one row per class
 * with labels (names may be NULL: the class index). */
void yp_validator_print(const yp_validator *v, const yp_val_result *r, int per_class, char *const *names, FILE *f);

void yp_validator_free(yp_validator *v);

/* ---------------------------------------------------------------- the loop (train.c) */

/* The loop's own state: what a checkpoint must carry besides the executor's for a resumed run to
 * continue exactly. */
typedef struct {
    int64_t next_epoch;    /* the first epoch to run */
    int64_t last_opt_step; /* global batch of the last optimizer step (-1: none) */
    double best_fitness;   /* the best fitness so far (best.safetensors' epoch) */
    int64_t best_epoch;    /* EarlyStopping's best epoch */
} yp_train_state;

/* A fresh run: epoch 0, no step, fitness 0. */
yp_train_state yp_train_state_initial(void);

/* The state as a JSON object text (malloc'd) / back from a checkpoint's options text (the key
 * "train_state" of yp_train_run's options). 0, or -1 with err set. */
char *yp_train_state_json(const yp_train_state *s);
int yp_train_state_parse(const char *options_json, yp_train_state *s, yp_err *err);

/* What the loop reports per epoch (train.py's log_vals). */
typedef struct {
    int64_t epoch, epochs;
    double train_loss[3];  /* mean box, obj, cls loss over the epoch's batches */
    int validated;         /* 0 with --noval before the final epoch: the metrics are zero */
    yp_val_result val;
    double lr[3];          /* the groups' rates at the end of the epoch */
    double fitness;
    int is_best;           /* fitness == best so far: best.safetensors was written */
    double seconds;        /* the epoch's wall time, validation included */
    int final;             /* the last epoch this run will train (the final one, or early stopping's) */
} yp_epoch_result;

typedef int (*yp_epoch_cb)(void *ctx, const yp_epoch_result *r, yp_err *err);

/* What the loop did for one micro-batch (yp_train_opts.step_info): the knobs it ran with and
 * whether the optimizer stepped after it, for benches that replay a run elsewhere. */
typedef struct {
    int64_t epoch, ni;    /* the epoch and the global batch (ni = i + nb * epoch) */
    yp_train_knobs knobs; /* the groups' lr, the momentum and the accumulation in force */
    int stepped;          /* 1: ni - last_opt_step reached the accumulation: an optimizer step followed */
    double grad_norm;     /* that step's gradient norm before clipping (0 without a step) */
} yp_train_step_info;

typedef struct {
    const yp_labels *train;   /* the training split */
    const yp_labels *val;     /* the validation split; NULL: no validation at all */
    const struct yp_image_cache *train_cache, *val_cache; /* --cache ram (yp_image_cache.h), or NULL */
    int cache_ram;            /* --cache ram asked for: the host estimate counts the caches (their bytes
                               * once filled, n x imgsz^2 x 3 each before) */
    yp_hyp_file hyp;
    int64_t epochs;
    int workers;
    uint64_t seed;
    int augment;              /* 0: --no-augment (load_image + letterbox, no random transform) */
    int cos_lr;
    int64_t patience;         /* EarlyStopping's patience in epochs (<= 0: never) */
    int noval;                /* validate only the final epoch */
    int per_class;            /* the per-class table after the final validation */
    char *const *names;       /* class names for the table (may be NULL) */
    const char *last_path;    /* weights/last.safetensors (NULL: no checkpoints) */
    const char *best_path;    /* weights/best.safetensors */
    const char *options_json; /* the run's options (JSON object text) stored in every checkpoint */
    FILE *console;            /* train.py's console lines (NULL: quiet) */
    int tty;                  /* 1: refresh the progress line in place; 0: one line per epoch */
    int64_t max_steps;        /* > 0: stop after this many micro-batches in all (tests, benches) */
    yp_epoch_cb on_epoch;     /* after each epoch's validation, before its checkpoints (may be NULL) */
    void *ctx;
    /* optional: every micro-batch's loss items (box, obj, cls) and/or what the loop did for it
     * appended here (either may be NULL), up to step_losses_cap entries each; n_step_losses counts */
    double (*step_losses)[3];
    yp_train_step_info *step_info;
    int64_t step_losses_cap, n_step_losses;
    /* optional: a flag (yp_train_signal_flag) that, once nonzero (a signal's number), stops the
     * run before its next batch; the epoch in progress is dropped (the loader starts a run only
     * at an epoch's first batch), so the last checkpoint, of the last epoch that finished, is
     * where --resume continues exactly */
    const volatile sig_atomic_t *interrupt;
    int interrupted;                 /* out: the flag's signal when it stopped the run; 0: it did not */
    int64_t interrupted_epoch;       /* out: the epoch it stopped in */
    int64_t interrupted_batch;       /* out: that epoch's batches trained (and dropped) */
    int64_t batches;                 /* out: batches per epoch */
} yp_train_opts;

/* The options yp_train_run opens its loaders with: the training loader at the plan's batch and
 * square size from epoch first_epoch on (whole batches only), and the validator (o->workers
 * threads, the passes left to validate: every remaining epoch, or the last one with noval). A
 * second training loader opened with the same options delivers the batches the loop trains on. */
void yp_train_loader_opts(const yp_train_opts *o, int64_t batch, int64_t imgsz, int64_t first_epoch,
                          yp_loader_opts *lo);
void yp_train_val_opts(const yp_train_opts *o, int64_t first_epoch, yp_val_opts *vo);

/* Runs epochs st->next_epoch .. opts->epochs - 1 of training on x (initialised, weights set or
 * resumed), as train.py: per batch the knobs, one micro-step, an optimizer step + EMA when the
 * accumulation is due; per epoch validation (EMA weights), fitness, early stopping, the callback,
 * best then last checkpoint (atomic; a failed write leaves the previous file and is an error
 * whose line says --resume continues; best first, so a crash between the two resumes before the
 * epoch and writes its best again). Images the loader could not read give one console line per
 * epoch. The training loader uses whole batches of the plan's batch (drop_last). Its worker
 * threads are started with SIGINT and SIGTERM blocked. opts->interrupt stops it between batches
 * (opts->interrupted says where); a checkpoint write in progress finishes first. Updates *st.
 * 0 (also when interrupted), or -1 with err set. */
int yp_train_run(yp_exec *x, yp_train_opts *opts, yp_train_state *st, yp_err *err);

/* ---------------------------------------------------------------- signals (train_signal.c) */

/* Installs the run's SIGINT and SIGTERM handler (SA_RESTART): the first signal sets the flag
 * yp_train_signal_flag() points to (to its number) and nothing else; a second one restores the
 * default action and raises itself (the process ends at once, killed by it). 0, or -1 (errno). */
int yp_train_signals_catch(void);
/* The handlers from before yp_train_signals_catch. */
void yp_train_signals_release(void);
const volatile sig_atomic_t *yp_train_signal_flag(void);
/* Blocks SIGINT and SIGTERM in the calling thread (threads it starts inherit the mask), the old
 * mask into *old / sets the old mask back. */
void yp_train_signals_block(sigset_t *old);
void yp_train_signals_unblock(const sigset_t *old);

#endif
