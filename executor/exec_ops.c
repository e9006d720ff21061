/* exec_ops.c - the executor's op table (exec_ops.h): one row per op, the lookup of a step's
 * adapter (a training step's, an evaluation step's) and of the backend entries it calls, the error
 * every adapter reports, and the fusions a backend's entries can run. */
#include <string.h>

#include "exec_ops.h"

#define E YP_EXEC_ENTRY
static const yp_exec_op_row rows[YP_OP_COUNT] = {
    [YP_OP_CONV2D] = {.op = YP_OP_CONV2D, .forward = yp_exec_conv_forward, .recompute = yp_exec_conv_forward,
        .backward = yp_exec_conv_backward, .prepare = yp_exec_conv_prepare, .init_param = yp_exec_conv_init,
        .needs = {E(conv2d_scratch), E(conv2d_forward), E(conv2d_backward_data), E(conv2d_backward_weights),
                  E(axpy_grad)}}, /* axpy_grad: the input copy */
    [YP_OP_BATCHNORM2D] = {.op = YP_OP_BATCHNORM2D, .forward = yp_exec_bn_forward, .recompute = yp_exec_bn_recompute,
        .backward = yp_exec_bn_backward, .eval = yp_exec_bn_eval,
        .fused = {[YP_FUSED_BN_STATS] = yp_exec_bn_forward, [YP_FUSED_BN_BWD_SUMS] = yp_exec_bn_backward},
        .init_param = yp_exec_bn_init, .needs = {E(bn_forward_train), E(bn_apply), E(bn_backward)},
        .eval_needs = {E(bn_forward_eval)}},
    [YP_OP_SILU] = {.op = YP_OP_SILU, .forward = yp_exec_silu_forward, .recompute = yp_exec_silu_forward,
        .backward = yp_exec_silu_backward,
        .fused = {[YP_FUSED_BN_SILU] = yp_exec_bn_silu_forward, [YP_FUSED_BN_SILU_BWD] = yp_exec_bn_silu_backward},
        .needs = {E(silu_forward), E(silu_backward)}},
    [YP_OP_ADD] = {.op = YP_OP_ADD, .forward = yp_exec_add_forward, .recompute = yp_exec_add_forward,
        .backward = yp_exec_add_backward, .needs = {E(add_forward), E(axpy_grad)}},
    [YP_OP_CONCAT] = {.op = YP_OP_CONCAT, .forward = yp_exec_concat_forward, .recompute = yp_exec_concat_forward,
        .backward = yp_exec_concat_backward, .needs = {E(concat_forward), E(concat_backward)}},
    [YP_OP_UPSAMPLE_NEAREST] = {.op = YP_OP_UPSAMPLE_NEAREST, .forward = yp_exec_upsample_forward,
        .recompute = yp_exec_upsample_forward, .backward = yp_exec_upsample_backward,
        .needs = {E(upsample_forward), E(upsample_backward)}},
    [YP_OP_MAXPOOL2D] = {.op = YP_OP_MAXPOOL2D, .forward = yp_exec_maxpool_forward,
        .recompute = yp_exec_maxpool_forward, .backward = yp_exec_maxpool_backward,
        .needs = {E(maxpool_forward), E(maxpool_backward)}},
    [YP_OP_DETECT] = {.op = YP_OP_DETECT, .forward = yp_exec_detect_forward, .recompute = yp_exec_detect_forward,
        .backward = yp_exec_detect_backward, .prepare = yp_exec_detect_prepare, .init_param = yp_exec_detect_init,
        .needs = {E(conv2d_scratch), E(conv2d_forward), E(conv2d_backward_data), E(conv2d_backward_weights)}},
    [YP_OP_SPACE_TO_DEPTH] = {.op = YP_OP_SPACE_TO_DEPTH, .forward = yp_exec_s2d_forward,
        .recompute = yp_exec_s2d_forward, .backward = yp_exec_s2d_backward,
        .needs = {E(space_to_depth), E(depth_to_space)}},
    [YP_OP_ATTENTION] = {.op = YP_OP_ATTENTION, .forward = yp_exec_attn_forward, .recompute = yp_exec_attn_forward,
        .backward = yp_exec_attn_backward, .prepare = yp_exec_attn_prepare, .host_io = 1,
        .needs = {E(attention_forward), E(attention_backward)}},
    [YP_OP_RELU] = {.op = YP_OP_RELU, .forward = yp_exec_relu_forward, .recompute = yp_exec_relu_forward,
        .backward = yp_exec_relu_backward, .needs = {E(relu_forward), E(relu_backward)}},
    [YP_OP_LEAKY_RELU] = {.op = YP_OP_LEAKY_RELU, .forward = yp_exec_leaky_relu_forward,
        .recompute = yp_exec_leaky_relu_forward, .backward = yp_exec_leaky_relu_backward,
        .needs = {E(leaky_relu_forward), E(leaky_relu_backward)}},
    [YP_OP_HARDSWISH] = {.op = YP_OP_HARDSWISH, .forward = yp_exec_hardswish_forward,
        .recompute = yp_exec_hardswish_forward, .backward = yp_exec_hardswish_backward,
        .needs = {E(hardswish_forward), E(hardswish_backward)}},
    [YP_OP_ZERO_PAD] = {.op = YP_OP_ZERO_PAD, .forward = yp_exec_zero_pad_forward,
        .recompute = yp_exec_zero_pad_forward, .backward = yp_exec_zero_pad_backward,
        .needs = {E(zero_pad_forward), E(zero_pad_backward)}},
    [YP_OP_CONTRACT] = {.op = YP_OP_CONTRACT, .forward = yp_exec_contract_forward,
        .recompute = yp_exec_contract_forward, .backward = yp_exec_contract_backward,
        .needs = {E(space_to_depth), E(depth_to_space)}},
    [YP_OP_EXPAND] = {.op = YP_OP_EXPAND, .forward = yp_exec_expand_forward,
        .recompute = yp_exec_expand_forward, .backward = yp_exec_expand_backward,
        .needs = {E(depth_to_space), E(space_to_depth)}},
};

/* The steps without an op: ComputeLoss, validation's decode, and the update (yp_exec_update: the
 * gradient norm, then SGD's or Adam's step; the EMA). */
static const yp_exec_entry loss_needs[] = {E(loss_level), {0}}, decode_needs[] = {E(detect_decode), {0}},
                           sgd_needs[] = {E(sum_squares), E(sgd_step), {0}},
                           adam_needs[] = {E(sum_squares), E(adam_step), {0}}, ema_needs[] = {E(ema_update), {0}},
                           no_needs[] = {{0}};
#undef E

const yp_exec_op_row *yp_exec_op_row_get(yp_op op) {
    YP_ASSERT(op >= 0 && op < YP_OP_COUNT);
    return &rows[op];
}

yp_exec_step_fn yp_exec_step_adapter(const yp_step *st) {
    if (st->op < 0 || st->op >= YP_OP_COUNT) return NULL;
    const yp_exec_op_row *r = &rows[st->op];
    if (st->fused != YP_FUSED_NONE) return (unsigned)st->fused < YP_FUSED_COUNT ? r->fused[st->fused] : NULL;
    switch (st->phase) {
    case YP_PHASE_FORWARD: return r->forward;
    case YP_PHASE_RECOMPUTE: return r->recompute;
    case YP_PHASE_BACKWARD: return r->backward;
    default: return NULL;
    }
}

yp_exec_step_fn yp_exec_eval_adapter(const yp_step *st) {
    if (st->op < 0 || st->op >= YP_OP_COUNT || st->phase != YP_PHASE_FORWARD || st->fused != YP_FUSED_NONE)
        return NULL;
    return rows[st->op].eval ? rows[st->op].eval : rows[st->op].forward;
}

int yp_exec_has_entry(const yp_ops *o, const yp_exec_entry *e) {
    void (*f)(void); /* every entry is a function pointer; which one does not matter here */
    memcpy(&f, (const char *)o + e->offset, sizeof f);
    return f != NULL;
}

const yp_exec_entry *yp_exec_step_needs(const yp_schedule *s, const yp_step *st) {
    if (st->op >= 0 && st->op < YP_OP_COUNT) return s->opts.eval ? rows[st->op].eval_needs : rows[st->op].needs;
    if (st->phase == YP_PHASE_LOSS) return loss_needs;
    if (st->a.decoded >= 0) return decode_needs;
    if (st->phase != YP_PHASE_OPTIMIZER) return no_needs;
    if (!strcmp(st->label, "ema")) return ema_needs;
    return s->opts.optimizer == YP_OPT_SGD ? sgd_needs : adam_needs;
}

const char *yp_exec_missing_entry(const yp_schedule *s, const yp_ops *o) {
    for (int i = 0; i < s->n_steps; i++)
        for (const yp_exec_entry *e = yp_exec_step_needs(s, &s->steps[i]); e->name; e++)
            if (!yp_exec_has_entry(o, e)) return e->name;
    return NULL;
}

int yp_exec_fail(const yp_exec_call *c, const char *what) {
    const yp_step *st = c->st;
    const char *who = st->node >= 0 ? c->b->s->g->nodes[st->node].name : st->label;
    return yp_err_set(c->err, "step %d (%s %s %s): %s: %s", (int)(st - c->b->s->steps), yp_phase_name(st->phase),
                      st->op >= 0 ? yp_op_get((yp_op)st->op)->name : "-", who, what, c->b->be->last_error(c->b->be));
}

/* The fused rows' adapters call bn_silu_apply and bn_silu_backward (and bn_forward_train without
 * an output, bn_backward with sums, which every BN entry takes). */
unsigned yp_exec_fusions(const yp_backend *be) {
    const yp_ops *o = be ? be->ops : NULL;
    return o && o->bn_silu_apply && o->bn_silu_backward ? YP_FUSE_BN_SILU : 0u;
}
