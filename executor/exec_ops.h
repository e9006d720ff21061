/* exec_ops.h - the executor's op table: one row per op, indexed by yp_op as graph/ops.c's rows
 * are, holding everything the executor does with the op: run its forward, recompute and
 * backward steps through the backend's entries (the fused forms of a fused schedule too,
 * yp_step.fused, and the evaluation pass's), name the backend entries those call (what init asks
 * of a backend), prepare its steps at init, and give its parameters their initial values.
 * Nothing else in the executor switches on an op. The adapters live by family, one idea a file:
 * exec_conv.c (conv2d, detect), exec_bn.c (batchnorm2d, and the BN applied inside SiLU steps),
 * exec_pointwise.c (silu, relu, leaky_relu, hardswish), exec_join.c (add, concat),
 * exec_resample.c (upsample_nearest, maxpool2d, space_to_depth, contract, expand, zero_pad),
 * exec_attention.c (attention); exec_ops.c holds the table. The helpers below read a step's
 * operands (yp_operands, graph/yp_schedule.h) out of the arena. Executor-internal. */
#ifndef YP_EXEC_OPS_H
#define YP_EXEC_OPS_H

#include <stddef.h>

#include "yp_executor_internal.h"

/* One step being run or prepared: the binding of its schedule (all an adapter reads: tensors,
 * backend, nodes), the step, and where an error goes. */
typedef struct {
    const yp_binding *b;
    const yp_step *st;
    yp_err *err;
} yp_exec_call;

/* Runs (or, for a row's prepare, prepares) step c->st. 0, or -1 with c->err set, naming the
 * step, its op, what failed and the backend's reason. */
typedef int (*yp_exec_step_fn)(const yp_exec_call *c);

/* A backend entry a step calls: a yp_ops member (kernels/yp_ops.h), by name and offset. A list of
 * them ends with a NULL name. */
typedef struct {
    const char *name;
    size_t offset;
} yp_exec_entry;
#define YP_EXEC_ENTRY(f) {#f, offsetof(yp_ops, f)}
#define YP_EXEC_MAX_NEEDS 6 /* a row's list: its entries and the NULL name that ends it */

/* The initial value of parameter tensor t (kind WEIGHT, a parameter of one of the op's nodes)
 * into host memory p, drawing from *rng where the value is random. */
typedef void (*yp_exec_init_fn)(const yp_binding *b, int t, uint64_t *rng, float *p);

typedef struct {
    yp_op op;
    yp_exec_step_fn forward;   /* a forward step: training mode (BN with batch statistics) */
    yp_exec_step_fn recompute; /* a recompute step (BN applying the saved statistics) */
    yp_exec_step_fn backward;  /* a backward step */
    /* A forward step of the evaluation pass (yp_sched_opts.eval): BN with the running statistics;
     * NULL: the op's eval forward is its forward. */
    yp_exec_step_fn eval;
    /* A step of fused kind k (yp_step.fused, in any phase) runs fused[k]; NULL where the op has
     * no such form. fused[YP_FUSED_NONE] is unused. */
    yp_exec_step_fn fused[YP_FUSED_COUNT];
    /* Optional: called at init for each of the op's forward, recompute and backward steps, before
     * the first step runs: builds what the backend keeps for it and checks what the plan gave
     * it. Needed by the ops the backend's conv entries run (matrix_math ops: primitives, scratch). */
    yp_exec_step_fn prepare;
    /* Needed by an op whose nodes have parameters (the schedule's WEIGHT tensors). */
    yp_exec_init_fn init_param;
    /* 1 when the op's training steps copy between the host and the arena (attention uploads its
     * scalars): such a step cannot be part of a recorded run (replay.c). */
    int host_io;
    /* The backend entries its training steps (forward, recompute, backward, prepare) call, the
     * entries they use only when present (conv2d_prepare, conv2d_backward) left out, and so are
     * the fused forms' (yp_exec_fusions checks those): yp_exec_init refuses a backend that lacks
     * one for a step of the plan. */
    yp_exec_entry needs[YP_EXEC_MAX_NEEDS];
    /* What its evaluation forward (eval) calls beyond those: bn_forward_eval. */
    yp_exec_entry eval_needs[YP_EXEC_MAX_NEEDS];
} yp_exec_op_row;

/* The row of op (0 <= op < YP_OP_COUNT). */
const yp_exec_op_row *yp_exec_op_row_get(yp_op op);

/* The adapter that runs step st (by its op, phase and fused kind), or NULL when st's op has
 * none (a step without an op: the loss, the optimizer; or a row missing an entry). */
yp_exec_step_fn yp_exec_step_adapter(const yp_step *st);

/* The adapter that runs node step st of an evaluation schedule (yp_sched_opts.eval: forward steps,
 * never fused): its row's eval entry, else its forward; NULL for any other step (the loss and the
 * decode have no op: eval.c runs them). */
yp_exec_step_fn yp_exec_eval_adapter(const yp_step *st);

/* Whether the backend's table o has entry e. */
int yp_exec_has_entry(const yp_ops *o, const yp_exec_entry *e);

/* The backend entries step st of schedule s calls, a list ended by a NULL name: its op row's needs
 * (eval_needs in an evaluation schedule), or the loss's (loss_level), the decode's (detect_decode),
 * the optimizer's (the gradient norm's sum_squares and the step of s's optimizer) or the EMA's. */
const yp_exec_entry *yp_exec_step_needs(const yp_schedule *s, const yp_step *st);

/* The first entry, in step order, that a step of s calls and o lacks; NULL when o has them all. */
const char *yp_exec_missing_entry(const yp_schedule *s, const yp_ops *o);

/* Sets c->err to "step N (phase op node): what: <the backend's last error>"; returns -1. */
int yp_exec_fail(const yp_exec_call *c, const char *what);

/* Runs a backend entry; on failure returns yp_exec_fail(c, what) from the adapter. */
#define YP_EXEC_OK(expr, what)                           \
    do {                                                 \
        if ((expr) != 0) return yp_exec_fail(c, (what)); \
    } while (0)

/* ---- a step's operands (t: a tensor index from yp_operands) ---- */
static inline float *F(const yp_exec_call *c, int t) { return yp_bind_tensor(c->b, t); }
static inline const yp_tensor *T(const yp_exec_call *c, int t) { return &c->b->s->tensors[t]; }
/* An optional operand: NULL when the step has none (a conv without bias, an unwanted gradient). */
static inline float *OPT(const yp_exec_call *c, int t) { return t >= 0 ? F(c, t) : NULL; }
/* The element type of tensor t as the backend's ops take it. */
static inline yp_elem E(const yp_exec_call *c, int t) { return yp_exec_elem(T(c, t)->dtype); }
static inline yp_dims dims(const yp_exec_call *c, int t) {
    yp_shape s = T(c, t)->shape;
    return (yp_dims){s.n, s.h, s.w, s.c};
}
static inline int64_t numel(const yp_exec_call *c, int t) { return yp_shape_numel(T(c, t)->shape); }
/* Dims of graph value v (a node's output, or the image) from its forward tensor. */
static inline yp_dims value_dims(const yp_exec_call *c, int v) {
    return dims(c, v == YP_INPUT_IMAGE ? c->b->images_t : c->b->fwd_t[v]);
}
/* The node of the step. */
static inline const yp_node *node_of(const yp_exec_call *c) { return &c->b->s->g->nodes[c->st->node]; }
/* beta for an activation gradient the step writes: 0 when the step creates it, 1 to add. */
static inline float beta_of(const yp_exec_call *c, int t) {
    return t < 0 || T(c, t)->producer == (int)(c->st - c->b->s->steps) ? 0.0f : 1.0f;
}

/* ---- the adapters, by family ---- */
/* exec_conv.c */
int yp_exec_conv_forward(const yp_exec_call *c); /* forward and recompute */
int yp_exec_conv_backward(const yp_exec_call *c);
int yp_exec_conv_prepare(const yp_exec_call *c);
void yp_exec_conv_init(const yp_binding *b, int t, uint64_t *rng, float *p);
int yp_exec_detect_forward(const yp_exec_call *c);
int yp_exec_detect_backward(const yp_exec_call *c);
int yp_exec_detect_prepare(const yp_exec_call *c);
void yp_exec_detect_init(const yp_binding *b, int t, uint64_t *rng, float *p);
/* exec_bn.c */
int yp_exec_bn_forward(const yp_exec_call *c); /* also YP_FUSED_BN_STATS (no output) */
int yp_exec_bn_recompute(const yp_exec_call *c);
int yp_exec_bn_backward(const yp_exec_call *c); /* also YP_FUSED_BN_BWD_SUMS (reads bn_sums) */
int yp_exec_bn_eval(const yp_exec_call *c);     /* the evaluation pass: the running statistics */
void yp_exec_bn_init(const yp_binding *b, int t, uint64_t *rng, float *p);
int yp_exec_bn_silu_forward(const yp_exec_call *c);  /* YP_FUSED_BN_SILU, the SiLU row's */
int yp_exec_bn_silu_backward(const yp_exec_call *c); /* YP_FUSED_BN_SILU_BWD, the SiLU row's */
/* exec_pointwise.c */
int yp_exec_silu_forward(const yp_exec_call *c); /* forward and recompute */
int yp_exec_silu_backward(const yp_exec_call *c);
int yp_exec_relu_forward(const yp_exec_call *c); /* forward and recompute, as the three below */
int yp_exec_relu_backward(const yp_exec_call *c);
int yp_exec_leaky_relu_forward(const yp_exec_call *c);
int yp_exec_leaky_relu_backward(const yp_exec_call *c);
int yp_exec_hardswish_forward(const yp_exec_call *c);
int yp_exec_hardswish_backward(const yp_exec_call *c);
/* exec_join.c */
int yp_exec_add_forward(const yp_exec_call *c);
int yp_exec_add_backward(const yp_exec_call *c);
int yp_exec_concat_forward(const yp_exec_call *c);
int yp_exec_concat_backward(const yp_exec_call *c);
/* exec_resample.c */
int yp_exec_upsample_forward(const yp_exec_call *c);
int yp_exec_upsample_backward(const yp_exec_call *c);
int yp_exec_maxpool_forward(const yp_exec_call *c);
int yp_exec_maxpool_backward(const yp_exec_call *c);
int yp_exec_s2d_forward(const yp_exec_call *c);
int yp_exec_s2d_backward(const yp_exec_call *c);
int yp_exec_contract_forward(const yp_exec_call *c); /* forward and recompute, as expand's */
int yp_exec_contract_backward(const yp_exec_call *c);
int yp_exec_expand_forward(const yp_exec_call *c);
int yp_exec_expand_backward(const yp_exec_call *c);
int yp_exec_zero_pad_forward(const yp_exec_call *c);
int yp_exec_zero_pad_backward(const yp_exec_call *c);
/* exec_attention.c */
int yp_exec_attn_forward(const yp_exec_call *c); /* forward and recompute */
int yp_exec_attn_backward(const yp_exec_call *c);
int yp_exec_attn_prepare(const yp_exec_call *c);

#endif
