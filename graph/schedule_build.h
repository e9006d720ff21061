/* schedule_build.h - internal to graph/: the schedule builder's state and the functions its files
 * share (schedule.c drives them; yp_schedule.h is the public interface). */
#ifndef YP_SCHEDULE_BUILD_H
#define YP_SCHEDULE_BUILD_H

#include "yp_schedule.h"

typedef struct {
    yp_schedule *s;
    const yp_graph *g;
    yp_node_info *info;
    int oom;
    int *rg;        /* node output requires grad */
    int *trainable; /* node has parameters that get gradients */
    int *out_t;     /* forward tensor per node and level: [node * YP_MAX_LEVELS + level] */
    int *grad_t;    /* activation gradient per node and level, -1 until created */
    int *stats_t;   /* BN batch statistics (mean, inverse std) */
    int *idx_t;     /* maxpool indices (a retention row with pool_indices) */
    int *probs_t;   /* attention's kept softmax output (a retention row with attn_probs) */
    int *copy_t;    /* a torch_input_copy conv's copy of its input (a retention row with input_copies) */
    const yp_retention *rules; /* what the forward pass keeps */
    int *pending;   /* values waiting for their inputs' recomputation (need_value's stack) */
    int *param_t;   /* first parameter tensor of the node, -1 if none */
    int *n_param;   /* parameter tensors of the node (trainable first, then BN running stats) */
    int *rec_t;     /* recomputed value per node, valid while rec_stamp == stamp */
    int *rec_stamp;
    int *boundary;  /* conv whose output (through BN, SiLU) is its layer's output: kept even when checkpointed */
    int *grad_of;   /* per weight tensor: its gradient tensor, or -1 */
    int *lowp_of;   /* per weight tensor: its low-precision copy, or -1 */
    int n_weights;
    int stamp;
    int image_t, targets_t, n_recompute;
    int *tin, *tout; /* operands of the step being built */
    int n_in, n_out, cap_in, cap_out;
    yp_operands cur; /* and their names */
    int rule_failed; /* the conv scratch rule failed: rule_err says why */
    yp_err rule_err;
} bld;

/* What a new tensor is; its bytes follow from shape and dtype, its param is -1 (derived() sets it). */
typedef struct {
    yp_role role;
    yp_kind kind;
    yp_scale scale;
    yp_dtype dtype;
    yp_shape shape;
    int node, level;
} tspec;

/* ---- plumbing (schedule_build.c) */
/* Array p (elements of `size` bytes) grown to hold `need` (capacity doubling); on failure p is
 * returned unchanged and *oom set. */
void *sb_grow(void *p, int *cap, int need, size_t size, int *oom);
/* Appends a tensor named by fmt with a and c; returns its index (0 with b->oom set on failure). */
int sb_new_tensor(bld *b, tspec sp, const char *fmt, const char *a, const char *c);
yp_shape sb_flat(int64_t n);
/* Operands of the step being built: read, written, and the same with their name (b->cur slot). */
void sb_op_in(bld *b, int t);
void sb_op_out(bld *b, int t);
void sb_in_as(bld *b, int *slot, int t);
void sb_out_as(bld *b, int *slot, int t);
yp_operands sb_no_operands(void);
/* Appends a step with the operands collected since the last one; returns its index. */
int sb_emit(bld *b, yp_phase ph, int op, int node, const char *label, int64_t flops);

/* ---- parameters (schedule_params.c) */
void sb_make_params(bld *b, int i);       /* node i's weights, Ultralytics names */
void sb_make_param_state(bld *b);         /* gradients, optimizer state, EMA, AMP copies */
int sb_is_buffer(const yp_tensor *t);     /* a BN running statistic */
int sb_weight_for_math(const bld *b, int t);
int *sb_param_slot(yp_operands *a, const yp_tensor *p, int grad);
void sb_params_in(bld *b, int i, int trainable_only);

/* ---- forward and loss (schedule_forward.c) */
void sb_conv_workspace(bld *b, int i, const char *what); /* also attention's (sb_attn_workspace) */
int sb_value_fwd(bld *b, int id, int level);
int64_t sb_node_flops(const bld *b, int i);
void sb_forward_node(bld *b, int i);
void sb_loss_step(bld *b);
void sb_decode_step(bld *b); /* evaluation only */

/* ---- attention (schedule_attention.c) */
/* Forward or recompute ("fwd", "re"): the softmax output (kept for backward, or workspace);
 * backward ("bwd"): its scratch. */
void sb_attn_workspace(bld *b, int i, const char *what);
/* Backward of attention node i: what its forward kept for it (P and the scalars), as inputs. */
void sb_attn_kept_in(bld *b, int i);

/* ---- retention and backward (schedule_backward.c) */
void sb_mark_boundaries(bld *b);
void sb_backward_node(bld *b, int i);
void sb_optimizer_steps(bld *b);

/* ---- lives (schedule_lives.c) */
/* Producers, consumers and live intervals from the steps' lists (appends the consumer lists to
 * refs); s->n_refs must count the steps' lists only. */
void sb_compute_lives(bld *b);

/* ---- fusions (schedule_fuse.c) */
/* Applies the fusions opts.fusions allows to the built schedule whose lives are computed, then
 * computes the lives again (yp_schedule.h, yp_fusion). */
void sb_fuse(bld *b);

#endif
