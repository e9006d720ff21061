/* yp_schedule.h - the training step derived from a graph: forward steps in topological order,
 * the loss, backward steps in reverse order (with the recomputation the saving policy needs),
 * the optimizer and the EMA update, and the fusions the options allow applied to those steps;
 * every tensor with its kind, bytes, producer, consumers and live interval. This is the
 * planner's input.
 *
 * Ownership: yp_schedule_build returns a schedule the caller frees with yp_schedule_free; it
 * keeps a pointer to the graph, which must outlive it. */
#ifndef YP_SCHEDULE_H
#define YP_SCHEDULE_H

#include <stdint.h>
#include <stdio.h>

#include "yp_graph.h"

/* F64: per-channel sums a fused step hands the next one (YP_ROLE_BN_SUMS), never an activation. */
typedef enum { YP_DTYPE_F32, YP_DTYPE_F16, YP_DTYPE_BF16, YP_DTYPE_I64, YP_DTYPE_F64, YP_DTYPE_COUNT } yp_dtype;

typedef enum {
    YP_KIND_WEIGHT,    /* fp32 master parameters and BN running statistics (persistent) */
    YP_KIND_GRAD,      /* weight gradients (persistent across micro-batches) */
    YP_KIND_OPTSTATE,  /* SGD momentum, Adam moments (persistent) */
    YP_KIND_EMA,       /* EMA copy of parameters and BN statistics (persistent) */
    YP_KIND_LOWP,      /* fp16/bf16 copies of conv weights under AMP (persistent) */
    YP_KIND_INPUT,     /* the input image batch */
    YP_KIND_ACT,       /* forward activation freed during the forward pass */
    YP_KIND_SAVED,     /* forward tensor kept until backward reads it */
    YP_KIND_ACTGRAD,   /* gradient of an activation (transient, backward) */
    YP_KIND_RECOMPUTE, /* forward value recomputed during backward (transient) */
    YP_KIND_WORKSPACE, /* scratch of one step (im2col, library workspace) */
    YP_KIND_LOSS,      /* targets, target-assignment buffers, loss value */
    YP_KIND_COUNT
} yp_kind;

typedef enum {
    YP_PHASE_FORWARD,
    YP_PHASE_LOSS,
    YP_PHASE_RECOMPUTE,
    YP_PHASE_BACKWARD,
    YP_PHASE_OPTIMIZER,
    YP_PHASE_COUNT
} yp_phase;

/* What the forward pass keeps for backward: the rest is recomputed in backward. */
typedef enum {
    YP_SAVE_YOLOPLAN, /* conv outputs (pre-BN) + BN statistics; the rest is recomputed */
    YP_SAVE_PYTORCH,  /* what PyTorch autograd saves: conv/BN/SiLU/leaky/hardswish inputs, ReLU outputs,
                       * BN stats, maxpool input+indices */
    YP_SAVE_CONCAT,   /* yoloplan's, plus concat outputs: no concat, nor the branches it joins, is rebuilt
                       * (measured on the CPU: half the recompute time of yolov5s for ~17% more saved) */
    YP_SAVE_COUNT
} yp_save_policy;

/* The retention rules of a saving policy: which forward values the step keeps for backward (the
 * rest is recomputed in backward), one row per runtime over the same step structure. Outside a
 * keep_all row, a checkpointed layer keeps only its boundary conv (yp_layer_boundary_conv). */
typedef struct {
    const char *name;  /* "yoloplan", "pytorch", "yoloplan+cat" */
    int keep_all;      /* every value backward reads is kept (PyTorch eager autograd) */
    unsigned keep_ops; /* bit (1u << op): outputs of these ops are kept outside checkpointed layers */
    int pool_indices;  /* maxpool writes its argmax for backward (else backward finds it again from x) */
    int attn_probs;    /* attention keeps its softmax output for backward (else backward recomputes it
                        * from q and k into its workspace) */
    int input_copies;  /* a conv with torch_input_copy keeps its own copy of its input at batch > 1
                        * (YP_ROLE_INPUT_COPY), as PyTorch's nn.Linear on a permuted view does */
} yp_retention;

/* The row of policy p (yp_retention_table[p]). */
extern const yp_retention yp_retention_table[YP_SAVE_COUNT];

/* Is layer l in the checkpoint set (bit l of a 64-bit mask; layers past 63 are never checkpointed). */
#define YP_CKPT_MAX_LAYERS 64 /* a checkpoint set is a 64-bit mask of layers 0..63 */
static inline int yp_ckpt_has(uint64_t layers, int l) { return l >= 0 && l < YP_CKPT_MAX_LAYERS && (layers >> l & 1); }

/* "yoloplan", "pytorch", "yoloplan+cat"; parse returns -1 for an unknown name. */
const char *yp_save_policy_name(yp_save_policy p);
int yp_save_policy_parse(const char *s);

typedef enum { YP_OPT_SGD, YP_OPT_ADAM, YP_OPT_ADAMW, YP_OPT_COUNT } yp_optimizer;

/* Fusions the schedule may apply (yp_sched_opts.fusions, a bit set of (1u << yp_fusion)): an
 * explicit whitelist, as ggml-alloc keeps one for in-place reuse, since only a backend with the
 * fused entries can run the rewritten steps (the executor says which it has). Each one applies
 * wherever its conditions hold (graph/schedule_fuse.c):
 *   BN_SILU  a training BatchNorm whose output only SiLU steps read (forward, recompute or
 *            backward), while the BN input and statistics live at least as long as that output:
 *            the BN output tensor is not created; the forward BN writes only its statistics,
 *            each SiLU step applies the BN itself from the BN's input and statistics (yp_step.fused,
 *            the bn_* operands), a recompute BN that fed only such steps is dropped, and the BN's
 *            backward right after its SiLU's, on the gradient that step writes, takes the
 *            per-channel sums that step computes (a YP_ROLE_BN_SUMS tensor) instead of a pass.
 * A retention row with keep_all (PyTorch eager) never fuses: it keeps what eager autograd keeps,
 * BN outputs included. */
typedef enum { YP_FUSION_BN_SILU, YP_FUSION_COUNT } yp_fusion;
#define YP_FUSE_BN_SILU (1u << YP_FUSION_BN_SILU)
#define YP_FUSE_ALL ((1u << YP_FUSION_COUNT) - 1u)

/* "bn_silu"; parse returns -1 for an unknown name. */
const char *yp_fusion_name(yp_fusion f);
int yp_fusion_parse(const char *s);

/* What a step of a fused schedule is (yp_step.fused); YP_FUSED_NONE for every step of an
 * unfused one. */
typedef enum {
    YP_FUSED_NONE,
    YP_FUSED_BN_STATS,    /* forward BN: batch and running statistics only; no output (y[0] absent) */
    YP_FUSED_BN_SILU,     /* forward or recompute SiLU: y = silu(bn_apply(bn_x)) with bn_gamma, bn_beta,
                           * bn_stats; x[0] absent */
    YP_FUSED_BN_SILU_BWD, /* backward SiLU: dx = silu'(bn_apply(bn_x)) * dy; x[0] absent; writes
                           * bn_sums when the BN's backward comes right after it */
    YP_FUSED_BN_BWD_SUMS, /* backward BN: reads bn_sums (sum(dy), sum(dy*(x - mean)) per channel) from
                           * the SiLU backward before it instead of computing them */
    YP_FUSED_COUNT
} yp_fused;

/* "bn_stats", "bn+silu", "bn+silu_bwd", "bn_bwd_sums" ("" for none). */
const char *yp_fused_name(yp_fused f);

#define YP_SCHED_MAX_SIDES 64 /* multi-scale sides a schedule's scratch covers (train.py's 0.5-1.5x at 2048) */

/* One conv as a scratch rule sees it (a Detect level is a 1x1 conv with bias). */
typedef struct {
    yp_shape in, out;
    int kh, kw, sh, sw, ph, pw, groups, bias; /* yp_conv_attrs' */
    int backward;   /* 0: forward (also recompute); 1: backward-data and backward-weights */
    yp_dtype dtype; /* of the activations (yp_sched_opts.act_dtype) */
    yp_dtype wdtype; /* of the weights the conv reads: dtype under AMP for a trained conv (its
                      * low-precision copy), else F32 (the master: fp32 plans, frozen layers) */
} yp_conv_query;

/* The scratch rule of the backend that will run the step: the floats of scratch one conv step
 * needs, `per_image` growing with the image (a YP_SCALE_PIXELS tensor "ws:") and `fixed` not (a
 * YP_SCALE_CONST tensor "wt:"). Returns 0, or -1 with err set. The executor supplies the rule of
 * its backend (yp_exec_conv_scratch); without one the schedule plans im2col scratch
 * (yp_conv_scratch_im2col), the backend-neutral estimate the planner's sweep uses. */
typedef int (*yp_conv_scratch_fn)(void *ctx, const yp_conv_query *q, int64_t *per_image, int64_t *fixed,
                                  yp_err *err);

/* im2col columns of one image (for a stride-1 conv with k > 1 also those of its transposed
 * backward-data) and the weights reordered to match; nothing for a 1x1 stride-1 conv (one GEMM).
 * Always returns 0. */
int yp_conv_scratch_im2col(void *ctx, const yp_conv_query *q, int64_t *per_image, int64_t *fixed, yp_err *err);

typedef struct {
    int64_t batch, h, w;
    yp_dtype act_dtype;    /* activations and their gradients: F32, or F16/BF16 under AMP */
    yp_save_policy policy; /* the row of yp_retention_table the step follows, unless `retention` is set */
    const yp_retention *retention; /* NULL: yp_retention_table[policy] */
    uint64_t ckpt_layers;  /* bit L: layer L is checkpointed (its conv outputs are recomputed too) */
    int freeze;            /* layers 0..freeze-1 get no gradients and save nothing */
    int64_t labels;        /* labels in the whole batch (target assignment buffers grow with it) */
    yp_optimizer optimizer;
    int ema;               /* keep an EMA copy */
    int eval;              /* the evaluation pass (validation): BN in eval mode (running statistics
                            * read, nothing updated), every layer frozen, the loss without gradients,
                            * then a decode step writing the boxes NMS reads; no backward or optimizer */
    yp_conv_scratch_fn conv_scratch; /* NULL: yp_conv_scratch_im2col */
    void *conv_scratch_ctx;
    unsigned fusions;      /* fusions allowed (bits 1u << yp_fusion, above); 0: none */
    /* Multi-scale: the other square sides this step also runs at in the same layout (the executor
     * rebuilds the schedule at each, keeping the offsets). Each conv's scratch is then the largest
     * the rule asks for over h x w and these sides (the conv's sizes scaled by side / h), so the
     * schedule built at any of them has the same tensors, none larger. 0: none. */
    int n_scratch_sides;
    int64_t scratch_sides[YP_SCHED_MAX_SIDES];
    /* Rectangular validation (val.py's rect batches): with side S > 0 every conv's scratch also
     * covers the shapes S x S, (k * stride, S) and (S, k * stride), k = 1 .. S / stride - 1, so the
     * schedule built at any of them (keeping these two) has the same tensors, none larger. */
    int64_t scratch_rect_side, scratch_rect_stride;
} yp_sched_opts;

/* Default options: fp32, yoloplan policy, no checkpoints, SGD, EMA, 8 labels per image, training,
 * no fusions. */
yp_sched_opts yp_sched_opts_default(int64_t batch, int64_t h, int64_t w);

/* How a tensor's bytes grow with the candidate: every tensor is exactly one of these, so bytes at
 * (batch b, image h x w, L labels) = unit * {1, q, b*q, L} with q = h*w / stride_max^2. The
 * planner builds one schedule at the unit size and scales it (every size is linear in batch). */
typedef enum {
    YP_SCALE_CONST,        /* weights, optimizer state, BN statistics */
    YP_SCALE_PIXELS,       /* per-image scratch (im2col of one image) */
    YP_SCALE_BATCH_PIXELS, /* activations, their gradients, the input batch, objectness targets */
    YP_SCALE_LABELS,       /* targets and target-assignment rows */
    YP_SCALE_BATCH_PIXELS2, /* per image, with the square of its pixels: attention's L x L scores */
    YP_SCALE_COUNT
} yp_scale;

/* What a tensor is, typed, so that no code parses names (names are for display and state-dict
 * I/O only). Parameters of a node are in the order its steps read them; a tensor derived from a
 * parameter (its gradient, optimizer state, EMA or low-precision copy) names that parameter in
 * yp_tensor.param. */
typedef enum {
    YP_ROLE_CONV_WEIGHT,   /* conv / Detect-level weight (c_out, c_in/groups, k, k) */
    YP_ROLE_CONV_BIAS,     /* conv / Detect-level bias */
    YP_ROLE_BN_GAMMA,      /* BN weight */
    YP_ROLE_BN_BETA,       /* BN bias */
    YP_ROLE_RUNNING_MEAN,  /* BN running statistics: state, not trained */
    YP_ROLE_RUNNING_VAR,
    YP_ROLE_GRAD,          /* gradient of parameter `param` */
    YP_ROLE_MOMENTUM,      /* SGD momentum buffer of `param` */
    YP_ROLE_ADAM_M,        /* Adam first moment of `param` */
    YP_ROLE_ADAM_V,        /* Adam second moment of `param` */
    YP_ROLE_EMA,           /* EMA copy of `param` (a parameter or a running statistic) */
    YP_ROLE_LOWP,          /* fp16/bf16 copy of `param` under AMP */
    YP_ROLE_IMAGES,        /* the input batch */
    YP_ROLE_TARGETS,       /* the batch's label rows (image, class, cx, cy, w, h) */
    YP_ROLE_VALUE,         /* a node's forward output (at `level` for Detect) */
    YP_ROLE_BN_STATS,      /* BN batch statistics {mean[c], invstd[c]} */
    YP_ROLE_POOL_INDICES,  /* maxpool argmax (PyTorch's saving policy) */
    YP_ROLE_RECOMPUTED,    /* a forward value recomputed in backward */
    YP_ROLE_VALUE_GRAD,    /* gradient of a node's output (at `level` for Detect) */
    YP_ROLE_SCRATCH_IMAGE, /* conv scratch growing with the image (YP_SCALE_PIXELS) */
    YP_ROLE_SCRATCH_FIXED, /* conv scratch of a fixed size (YP_SCALE_CONST) */
    YP_ROLE_LOSS_ASSIGN,   /* the loss's target-assignment rows */
    YP_ROLE_LOSS_OBJMAP,   /* the loss's objectness targets */
    YP_ROLE_LOSS_VALUE,    /* lbox, lobj, lcls, total */
    YP_ROLE_DECODED,       /* evaluation: Detect's outputs decoded to boxes (batch, na*sum(H*W), nc+5) */
    YP_ROLE_BN_SUMS,       /* fused BN+SiLU backward: {sum(dy), sum(dy*(x - mean))} per channel, f64 */
    /* attention's softmax output, (n, heads, L, L) for L = h*w pixels: saved for backward where
     * the retention row has attn_probs, else the forward's workspace. Its bytes grow with the
     * square of the pixels; the tensor is exact at the size the schedule is built for. */
    YP_ROLE_ATTN_PROBS,
    YP_ROLE_ATTN_SCRATCH,  /* attention backward: dP/dS, and P itself where it was not kept */
    /* beside a kept P, the two 0-dim tensors torch's multi_head_attention_forward saves with it:
     * level 0 the f64 sqrt(c/heads) that divides q, level 1 the i64 head count that divides the
     * summed weights (written by the forward; the kernels take both from the shape) */
    YP_ROLE_ATTN_SCALARS,
    /* the contiguous copy of its input a torch_input_copy conv makes and saves (retention
     * input_copies, batch > 1): written by the forward, read by the backward instead of x */
    YP_ROLE_INPUT_COPY,
    YP_ROLE_COUNT
} yp_role;

const char *yp_role_name(yp_role r);

/* Is role r a node parameter or BN running statistic (kind WEIGHT)? */
static inline int yp_role_is_param(yp_role r) { return r <= YP_ROLE_RUNNING_VAR; }

/* One parameter tensor of a node as its op's row gives it (yp_op_info.params): the schedule makes
 * the WEIGHT tensor from it, the checkpoint names and shapes it in the file. */
struct yp_param_spec {
    yp_role role;     /* a parameter role (yp_role_is_param) */
    int level;        /* Detect's level; 0 for other ops */
    char suffix[24];  /* state-dict name after the node's: ".weight", ".running_var", ".m.2.bias" */
    int ndim;         /* PyTorch's rank: 4 for a conv weight (c_out, c_in/groups, kh, kw), else 1 */
    int64_t shape[4]; /* PyTorch's shape (ndim entries) */
};

/* The elements of parameter p. */
static inline int64_t yp_param_numel(const yp_param_spec *p) {
    int64_t n = 1;
    for (int k = 0; k < p->ndim; k++) n *= p->shape[k];
    return n;
}

typedef struct {
    char name[96];       /* for display and state-dict I/O only: code reads role, level, param */
    yp_role role;
    int level;           /* Detect level of a per-level tensor (its parameters, outputs, their gradients); else 0 */
    int param;           /* the parameter a GRAD, MOMENTUM, ADAM_M, ADAM_V, EMA or LOWP tensor belongs to; else -1 */
    yp_kind kind;
    yp_scale scale;
    yp_dtype dtype;
    yp_shape shape;      /* logical shape; flat tensors use n=1, c=1, h=1, w=numel */
    int64_t bytes;
    int node;            /* graph node it belongs to, or -1 */
    int grad;            /* for a trainable parameter: its gradient tensor; else -1 */
    int producer;        /* first step that writes it; -1 when it is live on entry */
    int first, last;     /* live interval, steps inclusive */
    int cons_off, n_cons; /* consumer steps: sched->refs[cons_off .. cons_off + n_cons) */
} yp_tensor;

/* The operands of a step by name: which tensor of the step's input and output lists plays which
 * part. The planner reads only the lists (yp_step_inputs/outputs); the executor reads these.
 * Absent operands are -1. Per phase (the lists hold exactly the tensors named here, in the order
 * forward inputs, parameters, outputs / gradients, needs, parameters, input gradients,
 * parameter gradients; scratch last):
 *   forward    x[k]: the node's input values; w, bias (per Detect level; the low-precision copy
 *              under AMP); BN: gamma, beta, running_mean, running_var (read and updated), stats
 *              (written); y[l]: the outputs; maxpool under the PyTorch policy: indices (written)
 *   recompute  x[k], w, bias, gamma, beta, BN: stats (the saved ones, read); y[0]: the value
 *   loss       x[l]: Detect's outputs; targets; loss_assign, loss_objmap, loss_value (written);
 *              dx[l]: the gradients of Detect's outputs (written; absent when nothing trains)
 *   backward   dy[l]: the gradients of the outputs; x[k]: the forward values backward reads (conv
 *              and Detect inputs when the node trains, the BN/SiLU/maxpool input), y[0]: the
 *              node's own forward output where its backward reads that (ReLU), stats, indices;
 *              w, bias, gamma, beta; dx[k]: input k's gradient (absent when input k needs none;
 *              also an input when the step adds to it, yp_tensor.producer says which); dw, dbias,
 *              dgamma, dbeta (read and accumulated; absent when the node is frozen)
 *   all conv and Detect steps: scratch_image, scratch_fixed (written, when the rule asks for them)
 *   attention: forward and recompute write probs (the forward where the retention row keeps it
 *              also attn_scalars); backward reads probs and attn_scalars where kept and writes
 *              scratch_image (yp_attn_probs_floats)
 *   fused steps (yp_step.fused, yp_fused): a SiLU step that applies the BN before it reads that
 *              BN's input, parameters and statistics as bn_x, bn_gamma, bn_beta, bn_stats (its
 *              own x[0], the BN output, is absent); bn_sums is written by such a backward SiLU
 *              and read by the BN backward right after it
 *   optimizer and EMA steps have no named operands (they read every parameter's state by role). */
typedef struct {
    int x[YP_MAX_INPUTS], y[YP_MAX_LEVELS];
    int w[YP_MAX_LEVELS], bias[YP_MAX_LEVELS];
    int gamma, beta, running_mean, running_var, stats, indices;
    int dy[YP_MAX_LEVELS], dx[YP_MAX_INPUTS];
    int dw[YP_MAX_LEVELS], dbias[YP_MAX_LEVELS], dgamma, dbeta;
    int scratch_image, scratch_fixed;
    int targets, loss_assign, loss_objmap, loss_value;
    int decoded;         /* the decode step (evaluation): x[l] Detect's outputs in, the boxes out */
    int bn_x, bn_gamma, bn_beta, bn_stats; /* fused steps: the BN applied inside this one */
    int bn_sums;         /* fused backward: the sums a SiLU backward hands the BN backward */
    int probs;           /* attention: its softmax output (forward and recompute: written; backward:
                          * read where kept) */
    int attn_scalars[2]; /* attention where P is kept: YP_ROLE_ATTN_SCALARS (forward: written; backward: read) */
    int in_copy;         /* conv forward under retention input_copies: x[0]'s copy (YP_ROLE_INPUT_COPY),
                          * written; the backward reads it as x[0] */
} yp_operands;

typedef struct {
    yp_phase phase;
    int op;              /* yp_op, or -1 for loss, optimizer and EMA steps */
    int node;            /* graph node, or -1 */
    char label[32];      /* "loss", "optimizer", "ema" for steps without a node */
    int in_off, n_in;    /* tensors read:    sched->refs[in_off ..] */
    int out_off, n_out;  /* tensors written: sched->refs[out_off ..] (accumulation: in both lists) */
    int64_t flops;
    yp_operands a;       /* the same operands by name */
    yp_fused fused;      /* what the step is in a fused schedule (YP_FUSED_NONE otherwise) */
    int fused_node;      /* YP_FUSED_BN_SILU(_BWD): the BN node applied inside it; else -1 */
} yp_step;

typedef struct {
    const yp_graph *g;
    yp_sched_opts opts;
    int images_t, targets_t; /* the input tensors: the image batch and the label rows */
    int n_tensors, n_steps, n_refs;
    int n_state;             /* tensors [0, n_state): the inputs, the parameters and their state
                              * (gradients, optimizer, EMA, low-precision copies), the same indices
                              * at every batch and image size of one graph and set of options; the
                              * activations after them may differ (PyTorch's input copies exist at
                              * batch > 1 only) */
    yp_tensor *tensors;
    yp_step *steps;
    int *refs;
    int loss_step;       /* index of the loss step: forward before, backward after */
    int64_t recompute_flops;
    int cap_t, cap_s, cap_r; /* internal capacities */
} yp_schedule;

size_t yp_dtype_size(yp_dtype d);
const char *yp_dtype_name(yp_dtype d);
const char *yp_kind_name(yp_kind k);
const char *yp_phase_name(yp_phase p);

/* Builds the training step of g under opts. NULL with err set on bad options (size, batch). */
yp_schedule *yp_schedule_build(const yp_graph *g, const yp_sched_opts *opts, yp_err *err);
void yp_schedule_free(yp_schedule *s);

static inline const int *yp_step_inputs(const yp_schedule *s, const yp_step *st) { return s->refs + st->in_off; }
static inline const int *yp_step_outputs(const yp_schedule *s, const yp_step *st) { return s->refs + st->out_off; }
static inline const int *yp_tensor_consumers(const yp_schedule *s, const yp_tensor *t) {
    return s->refs + t->cons_off;
}

/* The loss's two work buffers (the tensors loss:assign and loss:objmap), in floats; one rule for
 * the schedule and for the executor's loss (executor/yp_loss.h), -1 on a bad argument or overflow:
 *   assign: the positives of one level at a time: each label tried against every anchor in up to
 *           YP_LOSS_CELLS_PER_LABEL cells (its own and the neighbours nearer than 0.5; a centre on a
 *           cell corner gets all four), YP_LOSS_POSITIVE_FLOATS floats each (yp_loss_target);
 *   objmap: the objectness targets of one level at a time, (batch, na, H, W) of the largest level. */
#define YP_LOSS_CELLS_PER_LABEL 5
#define YP_LOSS_POSITIVE_FLOATS 9
int64_t yp_loss_assign_floats(int64_t na, int64_t labels);
int64_t yp_loss_objmap_floats(int64_t batch, int64_t na, int nl, const int64_t *grid_h, const int64_t *grid_w);

/* Attention's softmax output, heads*L*L floats per image for L = h*w pixels, and its backward's
 * scratch: that much again for dP/dS, twice when the forward's P was not kept. -1 on overflow.
 * One rule for the schedule and the backends' attention entries (kernels/yp_ops.h). */
int64_t yp_attn_probs_floats(int64_t n, int64_t heads, int64_t h, int64_t w);

/* Does this parameter get a low-precision copy under AMP (trainable conv and detect weights)? */
int yp_tensor_amp_copied(const yp_schedule *s, const yp_tensor *t);

/* Index of the tensor with this name, or -1. */
int yp_schedule_find(const yp_schedule *s, const char *name);

/* Bytes saved for backward by one forward pass: tensors of kind SAVED plus the input batch when
 * backward reads it (each tensor counted once). */
int64_t yp_schedule_saved_bytes(const yp_schedule *s);

/* Human-readable listing of steps and tensors (for `yoloplan schedule` and debugging). */
void yp_schedule_print(const yp_schedule *s, FILE *f);

#endif
