/* yp_executor.h - runs a plan exactly as planned: one allocation of
 * plan->arena_bytes, every tensor bound to base + its planned offset, the schedule's steps
 * interpreted in order (forward, loss, the backward with the recomputation the plan's saving
 * policy and checkpoint set ask for), and the optimizer and EMA update, with no allocation inside
 * the step loop. The plan's validation pass runs in the same arena (yp_exec_eval, below).
 *
 * Debug mode (yp_exec_init with guard_bytes > 0) spreads the same layout apart so that every
 * tensor has guard_bytes of canary before and after it (the mapping keeps every pair of tensors
 * that are live together apart), writes a tensor's canaries when it comes to life and checks
 * those of every live tensor after each step; the arena is then larger than planned by the guards.
 *
 * An executor is the training schedule's binding onto the arena (yp_binding.h), the trainer's
 * state, the profile, and the validation pass's binding into the same arena.
 *
 * Ownership: yp_exec_init allocates the arena and the bindings' tables; yp_exec_free releases
 * them. The plan and the backend instance must outlive the executor (free the instance after
 * yp_exec_free). The executor runs the backend from one thread at a time. */
#ifndef YP_EXECUTOR_H
#define YP_EXECUTOR_H

#include "yp_backend_kind.h"
#include "yp_binding.h"
#include "yp_grad_scaler.h"

typedef struct {
    double lr;            /* learning rate of the weights: train.py's groups 1 (conv weights) and 2 (BN
                           * weights); lr0 0.01, ramped from 0 by the warm-up */
    double lr_bias;       /* learning rate of the biases (conv and BN biases: train.py's group 0); the
                           * warm-up ramps it down from warmup_bias_lr 0.1, then it equals lr */
    double momentum;      /* SGD momentum / Adam beta1: 0.937 */
    double beta2, eps;    /* Adam: 0.999, 1e-8 */
    double weight_decay;  /* conv weights only, already scaled by batch*accumulate/64: 5e-4 */
    double max_grad_norm; /* clip_grad_norm_ max_norm: 10.0 */
    double ema_decay;     /* 0.9999 */
    double ema_tau;       /* updates of the decay ramp: 2000 */
} yp_hyp;

/* hyp.scratch-low for the optimizer (SGD lr 0.01, or Adam/AdamW lr 0.001 as YOLOv5 uses). */
yp_hyp yp_hyp_default(yp_optimizer opt);

/* The training state over the training binding (update.c): what the optimizer and the EMA need
 * besides the tensors, the counters of the accumulation and the updates, and AMP's loss scaler.
 * With the scaler on (an amp-fp16 plan, as train.py's GradScaler(enabled=amp); amp-bf16 and fp32
 * run without), each micro-step's loss is multiplied by its scale before backward and an update
 * divides the gradients by it, and an update whose gradients hold an inf or NaN skips the
 * optimizer (the gradients are zeroed and the EMA still updated, as train.py's
 * scaler.step / zero_grad / ema.update do). */
typedef struct {
    yp_hyp hyp;
    int *opt_m, *opt_v, *ema; /* per training tensor: its optimizer states / EMA copy (-1 if none) */
    int64_t micro;            /* micro-batches accumulated since the last update */
    int64_t updates;          /* updates done, skipped ones included (ModelEMA.updates: the EMA ramp) */
    int64_t opt_steps;        /* optimizer steps taken (Adam's t); == updates without the scaler */
    double last_grad_norm;    /* the last update's gradient norm, unscaled, before clipping (inf
                               * where the scaler skipped it) */
    int scaler_on;            /* the loss scaler runs (yp_trainer_init: amp-fp16 plans) */
    yp_grad_scaler scaler;    /* its state (yp_grad_scaler.h) */
    yp_optim_tensor *multi;   /* the optimizer's tensors, for a backend with optim_multi (update.c) */
    int lowp_stale;           /* the fp32 masters changed since the AMP weight copies were cast from
                               * them (init, a load, an update): the next micro-step casts first */
} yp_trainer;

/* Wall time per kind of step (profile.c; yp_exec_profile below): YP_PHASE_COUNT rows of
 * YP_OP_COUNT + 1 entries, indexed by YP_EXEC_PROF_INDEX. */
typedef struct {
    double *s;  /* seconds per (phase, op), NULL when off */
    int64_t *n; /* and calls */
} yp_profile;

/* A schedule rebuilt at another image size inside the plan's layout (multiscale.c): training's
 * at a multi-scale side, or validation's at a rect batch shape. */
typedef struct {
    int64_t h, w;     /* its image size */
    yp_schedule *s;   /* owned */
    yp_binding b;     /* bound with the plan's offsets (yp_bind_resized) */
} yp_exec_size;

/* The training step's recorded runs (replay.c, yp_backend.h's graph entries): one per binding
 * and run of device-only steps, recorded on its first micro-step. */
typedef struct {
    const void *binding; /* the yp_binding the run belongs to (the training one, or a size's) */
    int first, end;      /* its steps [first, end) */
    void *graph;         /* the backend's recording */
} yp_exec_graph;

typedef struct {
    int off;             /* 1: plain launches only (yp_exec_graphs_off, or a recording failed) */
    int n, cap;
    yp_exec_graph *v;
    char why[256];       /* why recording stopped ("" if it never failed) */
} yp_exec_graphs;

typedef struct yp_exec {
    yp_binding train;   /* the training schedule bound onto the arena (its `arena`: the allocation) */
    yp_trainer trainer; /* hyperparameters, optimizer and EMA links, counters */
    yp_profile prof;    /* off unless yp_exec_profile turned it on */
    yp_binding *eval;   /* the validation pass bound into the same arena (eval.c); yp_exec_init
                         * refuses a plan whose pass cannot be bound, so NULL only when zeroed */
    yp_exec_size *sizes; /* other training sizes (yp_exec_add_size), n_sizes of them */
    int n_sizes;
    yp_exec_size *eval_sizes; /* other validation shapes (yp_exec_add_eval_shape) */
    int n_eval_sizes;
    yp_exec_graphs graphs; /* the recorded runs of the training step (replay.c) */
    int per_tensor_optim;  /* 1: the update calls the per-tensor optimizer entries even where the
                            * backend has optim_multi (0 after yp_exec_init; tests compare the two) */
    int64_t rss_before_arena; /* the process's resident bytes when yp_exec_init had bound the plan and
                               * built the backend's primitives, just before zeroing the arena
                               * (yp_train_host.h's baseline; -1 when /proc cannot tell) */
} yp_exec;

/* The process's resident set now (bytes), or -1 where /proc/self/statm cannot be read. */
int64_t yp_process_rss_bytes(void);

/* ---- conv scratch models (planner/yp_scratch.h) of the backends; scratch_model.c ----
 * A plan the executor runs must give every conv step at least the scratch the backend asks for
 * (yp_exec_init checks it), so it is planned with the backend's scratch model. The models are the
 * backend kinds' (kernels/yp_backend_kind.h):
 *   "onednn:T"   a CPU instance (oneDNN) with T threads; its scratch depends on the thread count,
 *                so a plan made for T runs on an instance created with T threads.
 *   "cuda"       a CUDA instance (cuDNN): the bound of kernels/yp_cudnn_scratch.h, which needs no
 *                GPU and covers what the algorithms the instance picks ask for on any card.
 *   "cuda:CARD"  what cuDNN picks on that card, asked of an instance on it. */

/* The resolver of the backends' models, for yp_candidate_set_scratch and yp_plan_load_with, with
 * no instance at hand: resolves "onednn:T" (T in 1..1024) and "cuda"; the oneDNN rule asks a CPU
 * instance with T threads, made for the query and freed after it, so it leaves no state and the
 * caller's thread count as it was; the CUDA rule is arithmetic. A card's model ("cuda:CARD") needs
 * an instance of that card, which this resolver does not keep: it is refused in one line (no GPU
 * here, another card, or yp_exec_models to load it). Static; never free it. */
const yp_scratch_resolver *yp_exec_scratch_resolver(void);

/* The resolver with the instance a card's model is asked through: `be`, the instance the plans run
 * on (borrowed, may be NULL), when it is on that card; else one the models make on the kind's first
 * device when the model is first resolved, kept in `made` and freed by yp_exec_models_free. Every
 * other model resolves as yp_exec_scratch_resolver's. Pass &m->r to the planner; rules resolved
 * through it point at those instances, so free the models (and be) after the plans. Do not move m
 * after yp_exec_models_init: r holds its address. */
typedef struct {
    yp_scratch_resolver r;
    yp_backend *be;   /* borrowed */
    yp_backend *made; /* made for a card's model when be was not on it (owned) */
} yp_exec_models;
void yp_exec_models_init(yp_exec_models *m, yp_backend *be);
void yp_exec_models_free(yp_exec_models *m);

/* The conv scratch model that asks CUDA instance be's cuDNN ("cuda:" + its card's name as a slug,
 * e.g. "cuda:nvidia-h200": exact for that card; a loader refuses it on a machine without that
 * card), or "" when be cannot name its device (yp_scratch_model_card). */
void yp_exec_card_model(yp_backend *be, char *buf, size_t n);

/* The model instance be needs into buf ("onednn:T" for a CPU instance of T threads; "cuda" for a
 * CUDA instance; the backend's name for one of no kind). */
void yp_exec_scratch_model(const yp_backend *be, char *buf, size_t n);

/* The conv scratch rule of backend instance `ctx` (a yp_backend *) for yp_sched_opts: what its
 * conv2d_scratch asks for (a pure query). */
int yp_exec_conv_scratch(void *ctx, const yp_conv_query *q, int64_t *per_image, int64_t *fixed, yp_err *err);

/* Makes candidate c plan for backend instance be: the model yp_scratch_model_of names ("onednn:T"
 * for a CPU instance, its card's for a CUDA instance that names it), with be's own conv2d_scratch
 * as the rule (be must outlive the plans built from c), or, for a CUDA instance that cannot name
 * its card, the "cuda" bound; an arena alignment be can run: c->alignment raised to
 * max(be->alignment, YP_ALIGN_DEFAULT) if below it (a larger one is kept; powers of two, so it is a
 * multiple of be's), and the schedule fusions be's op table runs (yp_exec_fusions). A backend of
 * no kind gets its rule under the backend's name: such a plan runs, but a saved copy cannot be
 * loaded. */
void yp_exec_candidate_for(yp_candidate *c, yp_backend *be);

/* The schedule fusions (bits 1u << yp_fusion, yp_schedule.h) the executor runs on backend be:
 * YP_FUSE_BN_SILU when its op table has bn_silu_apply and bn_silu_backward. yp_exec_init refuses
 * a plan with fused steps that be cannot run. */
unsigned yp_exec_fusions(const yp_backend *be);

/* The fusions of the backend a conv scratch model names (for a planner that plans for it by that
 * name, `--scratch onednn:T`): those of its kind's op table, read without an instance ("onednn:T":
 * the CPU's, what yp_exec_candidate_for gives a CPU instance; "cuda", "cuda:CARD": the CUDA op
 * table's, none in a build without CUDA); 0 for any other name (im2col is backend-neutral). */
unsigned yp_exec_model_fusions(const char *model);

/* The precisions (bits 1u << yp_precision) the executor runs on backends of a kind (its element
 * types, known in any build: the CPU fp32; CUDA fp32, amp-fp16, amp-bf16), and on the kind a
 * scratch model names (every precision for a name of no kind: im2col plans for any). */
unsigned yp_exec_kind_precisions(const yp_backend_kind *kind);
unsigned yp_exec_model_precisions(const char *model);

/* The element type (yp_ops.h) the backend's ops are given for tensors of schedule dtype d. */
yp_elem yp_exec_elem(yp_dtype d);

/* The precisions (bits 1u << yp_precision) whose plans be's op table runs: those whose activation
 * type is in its `elems` (the CPU: fp32; CUDA: fp32, amp-fp16, amp-bf16). */
unsigned yp_exec_precisions(const yp_backend *be);

/* Prepares p for backend be (only fp32 plans run on the CPU): allocates and binds the arena,
 * initialises the weights as PyTorch and YOLOv5 do (seeded), zeroes gradients and optimizer
 * state; builds the backend's per-conv state so that no step builds anything. The steps run as
 * the schedule has them, fused ones included: the executor decides nothing about them. 0, or -1
 * with err set (no ops on this backend, a plan with fused steps on a backend without the fused
 * entries, AMP plan, a plan whose conv scratch is smaller than the backend needs, out of memory). */
int yp_exec_init(yp_exec *x, const yp_plan *p, yp_backend *be, int64_t guard_bytes, uint64_t seed,
                 yp_err *err);
void yp_exec_free(yp_exec *x);

/* The address of training tensor t inside the arena (yp_bind_tensor of x->train). */
void *yp_exec_tensor(const yp_exec *x, int t);

/* One micro-batch: images (batch, h, w, 3) NHWC float in [0, 1] and n_targets rows of
 * (image, class, cx, cy, w, h); runs forward, loss and backward (gradients accumulate).
 * loss_out: lbox, lobj, lcls, total. 0, or -1 with err set. */
int yp_exec_micro_step(yp_exec *x, const float *images, const float *targets, int64_t n_targets, double loss_out[4],
                       yp_err *err);

/* ---- multi-scale (multiscale.c) ----
 * A plan made with multi_scale holds the training step at its largest size (1.5x the nominal);
 * smaller batches run the same schedule rebuilt at their size, bound with the plan's offsets, in
 * the same arena (never a second allocation). */

/* Adds square size side x side: builds the schedule, checks it fits the plan's layout, binds and
 * prepares it (its convs' primitives), with the loss's gains of the training binding. The plan's
 * own size needs no call. 0, or -1 with err set. */
int yp_exec_add_size(yp_exec *x, int64_t side, yp_err *err);

/* The binding that runs batches of side x side: the training binding at the plan's size, an added
 * size's, or NULL. */
const yp_binding *yp_exec_binding_for(const yp_exec *x, int64_t side);

/* Rectangular validation (val.py's rect batches, planner/yp_candidate.h val_rect): a plan made
 * with val_rect holds the validation pass at its largest shape, every conv's scratch covering the
 * others; a batch of another shape h x w runs the evaluation schedule rebuilt at it, bound with the
 * pass's offsets. Adds h x w (built, checked against the pass's layout, bound, prepared, with the
 * validation binding's loss gains); the pass's own shape needs no call. Not with guards. 0, or -1
 * with err set. */
int yp_exec_add_eval_shape(yp_exec *x, int64_t h, int64_t w, yp_err *err);

/* The binding that validates h x w batches: the validation binding at the planned shape, an
 * added shape's, or NULL. */
const yp_binding *yp_exec_eval_binding_for(const yp_exec *x, int64_t h, int64_t w);

/* yp_exec_micro_step at side x side (images (batch, side, side, 3)). */
int yp_exec_micro_step_at(yp_exec *x, int64_t side, const float *images, const float *targets, int64_t n_targets,
                          double loss_out[4], yp_err *err);

/* F.interpolate(mode="bilinear", align_corners=False) of n NHWC images with 3 channels from
 * in x in to out x out (the batch resize of a multi-scale step). */
void yp_resize_bilinear_nhwc(const float *src, int64_t n, int64_t in, float *dst, int64_t out);

/* The loss's hyperparameters of train.py's hyp file: box, obj and cls gains, anchor_t, label smoothing. */
typedef struct {
    double box, obj, cls, anchor_t, label_smoothing;
} yp_loss_hyp;

/* Sets the loss of x's training step and of its validation pass as train.py does before training:
 * box, obj and cls scaled by yp_loss_cfg_scale_gains at the plan's nominal image size, anchor_t,
 * label smoothing. */
void yp_exec_set_loss_hyp(yp_exec *x, const yp_loss_hyp *h);

/* The optimizer step on the accumulated gradients (clipped to hyp.max_grad_norm), then zeroes
 * them and updates the EMA. 0, or -1 with err set. */
int yp_exec_update(yp_exec *x, yp_err *err);

/* Copies every parameter and BN statistic into / out of the arena by Ultralytics' state-dict
 * names (model.0.conv.weight, ...); load reports a missing name or a size mismatch. */
typedef struct {
    const char *name;
    float *data;
    int64_t numel;
} yp_named_tensor;

int yp_exec_load_params(yp_exec *x, const yp_named_tensor *params, int n, yp_err *err);

/* Checks the canaries of every training tensor live at `step` (yp_bind_check_guards of x->train;
 * a no-op without guards). 0, or -1 with err naming the tensor whose bytes were overwritten. */
int yp_exec_check_guards(const yp_exec *x, int step, yp_err *err);

/* Wall time per kind of training step, into x->prof: yp_exec_profile(x, 1) starts counting (0
 * stops and clears); the table has YP_PHASE_COUNT rows of YP_OP_COUNT + 1 entries (op -1, steps
 * without an op, last); the optimizer and EMA update counts as (YP_PHASE_OPTIMIZER, -1).
 * Validation is not counted. 0, or -1 when out of memory. */
int yp_exec_profile(yp_exec *x, int on);
#define YP_EXEC_PROF_INDEX(phase, op) ((phase) * (YP_OP_COUNT + 1) + ((op) >= 0 ? (op) : YP_OP_COUNT))

/* Index of the weight tensor (kind WEIGHT) with this name, or -1. */
int yp_exec_find_param(const yp_exec *x, const char *name);

/* ---- recorded runs (replay.c) ----
 * Where the backend records (yp_backend.h's graph entries: CUDA graphs), each run of consecutive
 * device-only steps of a micro-step (node steps of ops without host I/O, before the optimizer)
 * is recorded on its first micro-step and launched as one recording on every later one: the
 * arena is static, so their arguments never change. The loss, attention's steps and the update
 * run as plain calls between them. Runs are not recorded with guards or the profile on (they
 * check or time each step). If a recording fails, its steps run plainly, x->graphs.why says why
 * (printed once on stderr) and the executor runs plain launches from then on. */

/* The end of the run of device-only steps of s that starts at step `first`: the first step from
 * `first` on that is not one (first itself when it is not one). */
int yp_exec_run_end(const yp_schedule *s, int first);

/* Turns recording off (plain launches from now on, e.g. to compare); frees the recordings. */
void yp_exec_graphs_off(yp_exec *x);

/* ---- validation (eval.c) ----
 * The plan's evaluation pass (planner/yp_val_plan.h) runs in the same arena, between training
 * steps: yp_exec_init binds its tensors through the plan's mapping (its parameters are the
 * training tensors it aliases: the EMA copies, BN running statistics included, or the weights
 * with EMA off; everything else at its planned offset above training's whole-step region, which
 * validation never writes) and prepares its convs, so a call allocates and builds nothing. The
 * steps run through the backend: convs, BN in eval mode (bn_forward_eval), SiLU, add, concat,
 * upsample, maxpool, Focus, Detect, the loss without gradients (loss_level, its targets assigned
 * on the host as training's) and detect_decode. Training continues bit for bit as if validation
 * had not run. */

/* The validation pass's sizes: at most `batch` images (h, w) per call; each gives `boxes` rows
 * of `fields` (x, y, w, h in pixels, objectness, nc class scores) floats. img: the nominal size
 * images are loaded at (load_image's long side); rect: batches come in val.py's rect shapes, none
 * larger than h x w (else every batch is img x img = h x w). */
typedef struct {
    int64_t batch, h, w, boxes, fields;
    int64_t img;
    int rect;
} yp_eval_shape;

yp_eval_shape yp_exec_eval_shape(const yp_exec *x);

/* One validation batch. */
typedef struct {
    const float *images;   /* (n_images, h, w, 3) NHWC floats in [0, 1], letterboxed */
    int64_t n_images;      /* 1 .. yp_eval_shape.batch; the rest of the planned batch is run on zeros */
    const float *targets;  /* n_targets rows (image, class, cx, cy, w, h), image < n_images: the loss is
                            * computed over the n_images; NULL: no loss (n_targets ignored) */
    int64_t n_targets;
    int64_t h, w;          /* their size: the plan's (yp_eval_shape; also when 0) or a shape added
                            * with yp_exec_add_eval_shape */
} yp_eval_batch;

typedef struct {
    float *decoded; /* host, n_images * boxes * fields floats: Detect's eval output (yp_ops.h
                     * detect_decode); NULL: not copied */
    double loss[4]; /* lbox, lobj, lcls, total (yp_loss_compute's) over the n_images; 0 without targets */
    int64_t boxes;  /* rows per image written to decoded: yp_eval_shape.boxes at the plan's shape,
                     * fewer at a smaller one */
} yp_eval_out;

/* Runs the validation pass on one batch. 0, or -1 with err set (a batch larger than planned, too
 * many labels, a backend without bn_forward_eval or detect_decode, an op's failure). */
int yp_exec_eval(yp_exec *x, const yp_eval_batch *in, yp_eval_out *out, yp_err *err);

#endif
