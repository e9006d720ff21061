/* schedule_backward.c - what the forward pass keeps (the retention rules), the recomputation of
 * the rest, backward steps, and the optimizer and EMA steps. */
#include <stdlib.h>
#include <string.h>

#include "schedule_build.h"

/* Is node v's output kept from the forward pass (rather than recomputed)? The retention row
 * says which ops' outputs are; a checkpointed layer drops all but its boundary conv, so its
 * output stays cheap to rebuild for the layers that read it and the cost of checkpointing one
 * layer does not depend on the others (what makes the checkpoint front a simple DP). */
static int kept(const bld *b, int v) {
    const yp_retention *r = b->rules;
    if (r->keep_all || !b->rg[v]) return 1;
    const yp_node *n = &b->g->nodes[v];
    if (yp_ckpt_has(b->s->opts.ckpt_layers, n->layer)) return b->boundary[v]; /* only convs are boundaries */
    return (r->keep_ops >> n->op & 1u) != 0;
}

void sb_mark_boundaries(bld *b) {
    for (int l = 0; l < b->g->n_layers; l++) {
        int v = yp_layer_boundary_conv(b->g, l);
        if (v >= 0) b->boundary[v] = 1;
    }
}

/* The tensor holding node v's forward output now, or -1 when it must be recomputed first. */
static int available(const bld *b, int v) {
    if (v == YP_INPUT_IMAGE || kept(b, v)) return sb_value_fwd((bld *)b, v, 0);
    return b->rec_stamp[v] == b->stamp ? b->rec_t[v] : -1;
}

/* Emits a recompute step for node v's output, whose inputs are all available; returns the new
 * tensor. */
static int recompute(bld *b, int v) {
    const yp_node *n = &b->g->nodes[v];
    for (int k = 0; k < n->n_inputs; k++) sb_in_as(b, &b->cur.x[k], available(b, n->inputs[k]));
    sb_params_in(b, v, 1);
    if (yp_op_fwd_writes(n) & YP_FWD_STATS) sb_in_as(b, &b->cur.stats, b->stats_t[v]); /* applies the saved ones */
    char tag[16];
    snprintf(tag, sizeof tag, "#%d", b->n_recompute++);
    tspec sp = {
        YP_ROLE_RECOMPUTED, YP_KIND_RECOMPUTE, YP_SCALE_BATCH_PIXELS, b->s->opts.act_dtype, b->info[v].out[0], v, 0};
    int t = sb_new_tensor(b, sp, "re:%s%s", n->name, tag);
    sb_out_as(b, &b->cur.y[0], t);
    sb_conv_workspace(b, v, "re");
    int64_t fl = sb_node_flops(b, v);
    sb_emit(b, YP_PHASE_RECOMPUTE, n->op, v, "", fl);
    b->s->recompute_flops += fl;
    b->rec_t[v] = t, b->rec_stamp[v] = b->stamp;
    return t;
}

/* The tensor holding node v's forward output for a backward step (image for YP_INPUT_IMAGE),
 * recomputing what is missing depth first, inputs in order, with an explicit stack (a chain of
 * dropped values is as long as a checkpointed layer, and an IR may have 10^5 nodes). */
static int need_value(bld *b, int v) {
    int t = available(b, v), top = 0;
    if (t >= 0) return t;
    b->pending[top++] = v;
    while (top > 0 && !b->oom) {
        const yp_node *n = &b->g->nodes[b->pending[top - 1]];
        int missing = -1;
        for (int k = 0; k < n->n_inputs && missing < 0; k++)
            if (available(b, n->inputs[k]) < 0) missing = n->inputs[k];
        if (missing >= 0) b->pending[top++] = missing; /* a DAG: each node is on the stack once */
        else t = recompute(b, b->pending[--top]);
    }
    return t;
}

/* The forward tensors node i's backward reads besides its output gradients (-1: not read). */
typedef struct {
    int x[YP_MAX_INPUTS], y, stats, indices;
} bwd_needs;

static bwd_needs backward_needs(bld *b, int i) {
    const yp_node *n = &b->g->nodes[i];
    unsigned reads = yp_op_get(n->op)->bwd_reads;
    bwd_needs nd = {.y = -1, .stats = -1, .indices = -1};
    for (int k = 0; k < YP_MAX_INPUTS; k++) nd.x[k] = -1;
    if (reads & YP_BWD_INPUT || (reads & YP_BWD_INPUT_IF_TRAINS && b->trainable[i]))
        for (int k = 0; k < n->n_inputs; k++) nd.x[k] = b->copy_t[i] >= 0 ? b->copy_t[i] : need_value(b, n->inputs[k]);
    if (reads & YP_BWD_OUTPUT) nd.y = need_value(b, i); /* kept, or recomputed from its inputs */
    if (reads & YP_BWD_STATS) nd.stats = b->stats_t[i];
    if (reads & YP_BWD_INDICES && b->rules->pool_indices) nd.indices = b->idx_t[i];
    return nd;
}

static int act_grad(bld *b, int v, int level) {
    int *slot = &b->grad_t[v * YP_MAX_LEVELS + level];
    if (*slot >= 0) {
        sb_op_in(b, *slot); /* accumulate into the existing gradient */
        return *slot;
    }
    tspec sp = {YP_ROLE_VALUE_GRAD,
                YP_KIND_ACTGRAD,
                YP_SCALE_BATCH_PIXELS,
                b->s->opts.act_dtype,
                b->info[v].out[level],
                v,
                level};
    *slot = sb_new_tensor(b, sp, "dact:%s%s", b->g->nodes[v].name, "");
    return *slot;
}

void sb_backward_node(bld *b, int i) {
    const yp_node *n = &b->g->nodes[i];
    yp_operands *a = &b->cur;
    int has_grad = 0;
    for (int l = 0; l < b->info[i].n_out; l++) has_grad |= b->grad_t[i * YP_MAX_LEVELS + l] >= 0;
    if (!has_grad) return; /* output unused by anything that needs gradients */
    if (b->stamp != n->layer) b->stamp = n->layer; /* recomputed values live within one layer's backward */
    bwd_needs nd = backward_needs(b, i); /* first: it may emit recompute steps */
    for (int l = 0; l < b->info[i].n_out; l++)
        if (b->grad_t[i * YP_MAX_LEVELS + l] >= 0) sb_in_as(b, &a->dy[l], b->grad_t[i * YP_MAX_LEVELS + l]);
    for (int k = 0; k < YP_MAX_INPUTS; k++)
        if (nd.x[k] >= 0) sb_in_as(b, &a->x[k], nd.x[k]);
    if (nd.y >= 0) sb_in_as(b, &a->y[0], nd.y);
    if (nd.stats >= 0) sb_in_as(b, &a->stats, nd.stats);
    if (nd.indices >= 0) sb_in_as(b, &a->indices, nd.indices);
    if (yp_op_get(n->op)->bwd_reads & YP_BWD_ATTN_PROBS) sb_attn_kept_in(b, i);
    sb_params_in(b, i, 1); /* nothing for an op without parameters */
    for (int k = 0; k < n->n_inputs; k++) {
        int v = n->inputs[k];
        if (v != YP_INPUT_IMAGE && b->rg[v]) sb_out_as(b, &a->dx[k], act_grad(b, v, 0));
    }
    for (int k = 0; k < b->n_param[i] && b->trainable[i]; k++) {
        int p = b->param_t[i] + k, gt = b->grad_of[p];
        if (gt >= 0) *sb_param_slot(a, &b->s->tensors[p], 1) = gt, sb_op_in(b, gt), sb_op_out(b, gt);
    }
    sb_conv_workspace(b, i, "bwd");
    /* twice the forward; a conv's data gradient alone where its weights do not train */
    int64_t fl = sb_node_flops(b, i) * (yp_op_get(n->op)->conv_like && !b->trainable[i] ? 1 : 2);
    sb_emit(b, YP_PHASE_BACKWARD, n->op, i, "", fl);
}

/* ---------------------------------------------------------------- optimizer */

void sb_optimizer_steps(bld *b) {
    yp_schedule *s = b->s;
    int64_t n_params = 0;
    for (int t = 0; t < s->n_tensors; t++) {
        yp_kind k = s->tensors[t].kind;
        if (k == YP_KIND_GRAD) sb_op_in(b, t), n_params += s->tensors[t].shape.w;
        if (k == YP_KIND_OPTSTATE || k == YP_KIND_LOWP) sb_op_in(b, t), sb_op_out(b, t);
        if (k == YP_KIND_WEIGHT && !sb_is_buffer(&s->tensors[t]) && b->trainable[s->tensors[t].node])
            sb_op_in(b, t), sb_op_out(b, t);
    }
    sb_emit(b, YP_PHASE_OPTIMIZER, -1, -1, "optimizer", 10 * n_params);
    if (!s->opts.ema) return;
    for (int t = 0; t < s->n_tensors; t++) {
        yp_kind k = s->tensors[t].kind;
        if (k == YP_KIND_WEIGHT) sb_op_in(b, t);
        if (k == YP_KIND_EMA) sb_op_in(b, t), sb_op_out(b, t);
    }
    sb_emit(b, YP_PHASE_OPTIMIZER, -1, -1, "ema", 3 * n_params);
}
