/* schedule_params.c - parameter tensors of every node and what each one carries: gradient,
 * optimizer state, EMA and low-precision copies; the parameter operands of a step. */
#include <stdlib.h>
#include <string.h>

#include "schedule_build.h"

/* Weight tensors of node i from its op's row, Ultralytics names: model.0.conv.weight,
 * model.0.bn.running_mean, model.24.m.0.bias, ... */
void sb_make_params(bld *b, int i) {
    const yp_node *n = &b->g->nodes[i];
    yp_param_spec ps[YP_MAX_NODE_PARAMS];
    int k = yp_op_params(n, ps);
    b->param_t[i] = -1;
    for (int j = 0; j < k; j++) {
        tspec sp = {ps[j].role, YP_KIND_WEIGHT, YP_SCALE_CONST, YP_DTYPE_F32, sb_flat(yp_param_numel(&ps[j])), i,
                    ps[j].level};
        int t = sb_new_tensor(b, sp, "%s%s", n->name, ps[j].suffix);
        if (b->param_t[i] < 0) b->param_t[i] = t;
        b->n_param[i]++;
    }
}

int sb_is_buffer(const yp_tensor *t) { return t->role == YP_ROLE_RUNNING_MEAN || t->role == YP_ROLE_RUNNING_VAR; }

/* A tensor derived from parameter w (index t): its gradient, optimizer state, EMA or copy. */
static int derived(bld *b, yp_role role, yp_kind kind, yp_dtype dt, int t, const char *prefix) {
    yp_tensor w = b->s->tensors[t];
    tspec sp = {role, kind, YP_SCALE_CONST, dt, w.shape, w.node, w.level};
    int d = sb_new_tensor(b, sp, "%s%s", prefix, w.name);
    if (!b->oom) b->s->tensors[d].param = t;
    return d;
}

/* Gradient, optimizer state, EMA and low-precision copies of every parameter. */
void sb_make_param_state(bld *b) {
    const yp_sched_opts *o = &b->s->opts;
    int n_weights = b->n_weights = b->s->n_tensors;
    b->grad_of = malloc((size_t)n_weights * sizeof(int));
    b->lowp_of = malloc((size_t)n_weights * sizeof(int));
    if (!b->grad_of || !b->lowp_of) {
        b->oom = 1;
        return;
    }
    for (int t = 0; t < n_weights; t++) {
        yp_tensor w = b->s->tensors[t];
        b->grad_of[t] = b->lowp_of[t] = -1;
        if (w.kind != YP_KIND_WEIGHT) continue;
        if (o->ema) derived(b, YP_ROLE_EMA, YP_KIND_EMA, YP_DTYPE_F32, t, "ema:");
        if (sb_is_buffer(&w) || !b->trainable[w.node]) continue;
        b->grad_of[t] = derived(b, YP_ROLE_GRAD, YP_KIND_GRAD, YP_DTYPE_F32, t, "grad:");
        if (!b->oom) b->s->tensors[t].grad = b->grad_of[t];
        if (o->optimizer == YP_OPT_SGD) {
            derived(b, YP_ROLE_MOMENTUM, YP_KIND_OPTSTATE, YP_DTYPE_F32, t, "momentum:");
        } else {
            derived(b, YP_ROLE_ADAM_M, YP_KIND_OPTSTATE, YP_DTYPE_F32, t, "adam.m:");
            derived(b, YP_ROLE_ADAM_V, YP_KIND_OPTSTATE, YP_DTYPE_F32, t, "adam.v:");
        }
        if (o->act_dtype == YP_DTYPE_F32 || b->oom || !yp_tensor_amp_copied(b->s, &b->s->tensors[t])) continue;
        char pre[8]; /* "f16:", "bf16:" */
        snprintf(pre, sizeof pre, "%s:", yp_dtype_name(o->act_dtype));
        b->lowp_of[t] = derived(b, YP_ROLE_LOWP, YP_KIND_LOWP, o->act_dtype, t, pre);
    }
}

/* The tensor a conv/detect step multiplies with: the low-precision copy under AMP. */
int sb_weight_for_math(const bld *b, int t) {
    return b->lowp_of[t] >= 0 ? b->lowp_of[t] : t;
}

/* The operand slot a parameter (or its gradient) fills. */
int *sb_param_slot(yp_operands *a, const yp_tensor *p, int grad) {
    switch (p->role) {
    case YP_ROLE_CONV_WEIGHT: return grad ? &a->dw[p->level] : &a->w[p->level];
    case YP_ROLE_CONV_BIAS: return grad ? &a->dbias[p->level] : &a->bias[p->level];
    case YP_ROLE_BN_GAMMA: return grad ? &a->dgamma : &a->gamma;
    case YP_ROLE_BN_BETA: return grad ? &a->dbeta : &a->beta;
    case YP_ROLE_RUNNING_MEAN: return &a->running_mean;
    default: return &a->running_var;
    }
}

void sb_params_in(bld *b, int i, int trainable_only) {
    for (int k = 0; k < b->n_param[i]; k++) {
        int t = b->param_t[i] + k;
        if (trainable_only && sb_is_buffer(&b->s->tensors[t])) continue;
        sb_in_as(b, sb_param_slot(&b->cur, &b->s->tensors[t], 0), sb_weight_for_math(b, t));
    }
}
