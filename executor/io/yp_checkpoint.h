/* yp_checkpoint.h - checkpoints of a training run: an executor's whole training state in one
 * safetensors file (yp_safetensors.h), written atomically, loaded back to resume bit for bit, or
 * read for its weights alone to fine-tune another model (YOLOv5's --resume and --weights).
 *
 * The layout (every tensor F32, in PyTorch's shapes: a conv weight (c_out, c_in/groups, k, k), a
 * Detect level's (na*(nc+5), c_in, 1, 1), biases and BN tensors (c)):
 *   model.0.conv.weight, model.0.bn.running_mean, ...   the weights and BN running statistics
 *                          under Ultralytics' state-dict names (yp_exec_find_param's), so the
 *                          "model.*" tensors are a state dict of the model
 *   ema.model.0.conv.weight, ...                        the EMA copy of each (when the plan has
 *                          EMA): ModelEMA's state dict with "ema." in front
 *   optimizer.momentum_buffer.<name>                    SGD's momentum of each trained parameter
 *   optimizer.exp_avg.<name>, optimizer.exp_avg_sq.<name>  Adam/AdamW's moments
 *   grad.<name>            the accumulated gradients, only when micro-batches were accumulated
 *                          since the last update (trainer.micro > 0)
 * and "__metadata__" (strings; numbers printed so that they read back exactly, %.17g):
 *   format "yoloplan-checkpoint", version "1", epoch, best_fitness, updates, micro, optimizer
 *   ("sgd", "adam", "adamw"), ema ("0"/"1"), hyp.lr, hyp.lr_bias, hyp.momentum, hyp.beta2, hyp.eps,
 *   hyp.weight_decay, hyp.max_grad_norm, hyp.ema_decay, hyp.ema_tau, last_grad_norm, plan (the
 *   plan's plan.json text, yp_plan_json_text) and options (the caller's JSON text).
 * BN's num_batches_tracked is not stored (YOLOv5's BN has a fixed momentum, so nothing reads it);
 * AMP's low-precision weight copies are not either (derived from the weights). Anything outside
 * the arena that the run needs to continue identically (the data order, augmentation's random
 * state) is the caller's, in `options` or its own files.
 *
 * The arena is read and written only through the backend's mem_copy, staged on the host one
 * tensor at a time.
 *
 * A stripped checkpoint (yp_ckpt_strip: the end of a finished run, as train.py's strip_optimizer
 * leaves last.pt and best.pt) holds the weights alone: each "model.*" tensor from the EMA copy
 * when the file has one (else the weights), BN running statistics included, in F16, and no ema.*,
 * optimizer.* or grad.* tensor; its metadata is format, version, stripped "1", epoch "-1" (train.py
 * sets epoch -1), options, and plan reduced to its format, version, model and candidate (no
 * schedule, no memory layout: a plan to read, not to train with), nothing else. --weights and val
 * read it (F16 -> F32 on load); --resume refuses it: the run it came from is finished. */
#ifndef YP_CHECKPOINT_H
#define YP_CHECKPOINT_H

#include <stdio.h>

#include "yp_executor.h"
#include "yp_safetensors.h"

#define YP_CKPT_FORMAT "yoloplan-checkpoint"
#define YP_CKPT_VERSION 1

/* What the caller adds to a checkpoint. */
typedef struct {
    int64_t epoch;       /* the last epoch finished (train.py's ckpt['epoch']) */
    double best_fitness; /* the best validation fitness so far */
    const char *options; /* the run's options as JSON text (UTF-8); NULL: "{}" */
} yp_ckpt_meta;

/* Writes x's training state (the layout above) to path atomically (yp_st_save; faults NULL but
 * in tests). 0, or -1 with err set; on failure an existing file at path is left as it was. */
int yp_ckpt_save(const yp_exec *x, const char *path, const yp_ckpt_meta *m, const yp_st_faults *faults, yp_err *err);

/* A checkpoint's metadata. plan and options are malloc'd; free with yp_ckpt_info_free. */
typedef struct {
    int64_t epoch, updates, micro; /* a stripped file: -1, 0, 0 */
    double best_fitness;           /* a stripped file: 0 */
    char optimizer[8];             /* a stripped file: "" */
    int stripped;                  /* 1: yp_ckpt_strip's file (weights only, F16) */
    char *plan, *options;
} yp_ckpt_info;

/* Reads path's metadata only (to rebuild the run's plan and options before making an executor).
 * 0, or -1 with err naming the file and the field. */
int yp_ckpt_read_info(const char *path, yp_ckpt_info *info, yp_err *err);
void yp_ckpt_info_free(yp_ckpt_info *info);

/* What yp_ckpt_strip did. */
typedef struct {
    int already;                   /* 1: the file was stripped before; left as it was */
    int tensors;                   /* model tensors written */
    int64_t bytes_before, bytes_after; /* the file's size before and after */
} yp_ckpt_strip_result;

/* Rewrites the checkpoint at path as a stripped one (above), atomically (yp_st_save: a failure
 * leaves the file as it was). A file stripped already is left alone (out->already). 0, or -1 with
 * err naming the file (not a checkpoint, a tensor that is not F32 or F16, a failed write). */
int yp_ckpt_strip(const char *path, yp_ckpt_strip_result *out, yp_err *err);

/* Restores everything yp_ckpt_save wrote into x (--resume): every tensor, the trainer's update
 * and micro-batch counts, hyperparameters and last gradient norm, so that the steps that follow
 * are bit for bit those of the run that was saved. x's plan must have exactly the file's state
 * tensors: the same optimizer, EMA on or off, the same trained parameters, each with the file's
 * shape in F32; the plan's memory layout may differ (the file says nothing about offsets). All of
 * that is checked before anything is copied, so a refused file leaves x untouched; a read or copy
 * that fails after the checks (the file shrank, the device failed) leaves x partly restored, to
 * be freed. A stripped file is refused first. info (may be NULL) receives the metadata. 0, or -1
 * with err set. */
int yp_ckpt_resume(yp_exec *x, const char *path, yp_ckpt_info *info, yp_err *err);

/* What yp_ckpt_load_weights transferred. */
typedef struct {
    int loaded;  /* model tensors set from the file */
    int skipped; /* found in the file with another shape (or not a float dtype): left as they were */
    int missing; /* model tensors the file does not have: left as they were */
    int unused;  /* tensors of the file no model tensor took (EMA, optimizer, num_batches_tracked, ...) */
} yp_ckpt_transfer;

/* Fine-tuning (--weights): sets each of x's weights and BN statistics, and its EMA copy, from the
 * file's tensor of the same name (a checkpoint's "model.*" tensors, or any state dict written
 * with those names, e.g. by scripts/pt2safetensors.py) in F32, F16, BF16 or F64, as YOLOv5's
 * intersect_dicts does: a tensor whose shape differs (another nc changes Detect's) is skipped,
 * with one line on log (may be NULL) naming it and both shapes; a closing line gives the counts.
 * The file is safetensors, or a PyTorch .pt when it starts as one (a zip: yp_pt.h), read in place:
 * a YOLOv5 checkpoint's "model" (as train.py's --weights takes ckpt['model']; its "ema" is under
 * "ema."), a state dict or a pickled module, with a first line on log saying which.
 * Optimizer state and counters are untouched. 0 with *out filled, or -1 with err set (a file that
 * cannot be read). */
int yp_ckpt_load_weights(yp_exec *x, const char *path, FILE *log, yp_ckpt_transfer *out, yp_err *err);

/* For validating a file (yoloplan val): as yp_ckpt_load_weights, but each tensor from the file's
 * EMA copy ("ema.<name>"; a .pt checkpoint's "ema" when not None) where it has one, as YOLOv5's
 * attempt_load prefers ckpt['ema']. */
int yp_ckpt_load_eval_weights(yp_exec *x, const char *path, FILE *log, yp_ckpt_transfer *out, yp_err *err);

#endif
