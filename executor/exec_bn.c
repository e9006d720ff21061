/* exec_bn.c - the batchnorm2d row of the executor's op table (exec_ops.h) and the BN applied
 * inside SiLU steps, the fused forms of the SiLU row: a training forward (batch statistics; in
 * a fused schedule statistics only, YP_FUSED_BN_STATS), the recompute with the saved statistics,
 * the backward (taking the sums a fused SiLU backward handed it, YP_FUSED_BN_BWD_SUMS), the
 * evaluation pass's forward (the running statistics), and silu(bn(x)) and its gradient straight
 * from the BN's input (YP_FUSED_BN_SILU, _BWD). What is fused is the schedule's decision
 * (graph/schedule_fuse.c); these only run what it says. */
#include "exec_ops.h"

/* BN node n over input tensor x. */
static yp_bn_desc bn_desc(const yp_exec_call *c, const yp_node *n, int x) {
    yp_bn_desc d = {dims(c, x), (float)n->a.bn.eps, (float)n->a.bn.momentum, E(c, x)};
    return d;
}

/* The per-channel sums tensor of the step (yp_operands.bn_sums: f64), or NULL. */
static double *sums_of(const yp_exec_call *c) {
    return c->st->a.bn_sums >= 0 ? yp_bind_tensor(c->b, c->st->a.bn_sums) : NULL;
}

int yp_exec_bn_forward(const yp_exec_call *c) {
    const yp_operands *a = &c->st->a;
    yp_bn_desc d = bn_desc(c, node_of(c), a->x[0]);
    YP_EXEC_OK(c->b->ops->bn_forward_train(c->b->be, &d, F(c, a->x[0]), F(c, a->gamma), F(c, a->beta),
                                           OPT(c, a->y[0]), F(c, a->stats), F(c, a->running_mean),
                                           F(c, a->running_var)),
               "batchnorm");
    return 0;
}

int yp_exec_bn_recompute(const yp_exec_call *c) {
    const yp_operands *a = &c->st->a;
    yp_bn_desc d = bn_desc(c, node_of(c), a->x[0]);
    YP_EXEC_OK(c->b->ops->bn_apply(c->b->be, &d, F(c, a->x[0]), F(c, a->gamma), F(c, a->beta), F(c, a->stats),
                                   F(c, a->y[0])),
               "bn apply");
    return 0;
}

int yp_exec_bn_backward(const yp_exec_call *c) {
    const yp_operands *a = &c->st->a;
    int dx = a->dx[0];
    yp_bn_desc d = bn_desc(c, node_of(c), a->x[0]);
    YP_EXEC_OK(c->b->ops->bn_backward(c->b->be, &d, F(c, a->x[0]), F(c, a->stats), F(c, a->gamma), F(c, a->dy[0]),
                                      sums_of(c), OPT(c, dx), OPT(c, a->dgamma), OPT(c, a->dbeta),
                                      (yp_betas){beta_of(c, dx), 1.0f}),
               "bn backward");
    return 0;
}

/* Eval mode: normalised with the running statistics, which stay as they are (the evaluation
 * pass has no batch statistics; its running_mean and running_var are the EMA's, yp_val_plan.h). */
int yp_exec_bn_eval(const yp_exec_call *c) {
    const yp_operands *a = &c->st->a;
    yp_bn_desc d = bn_desc(c, node_of(c), a->x[0]);
    YP_EXEC_OK(c->b->ops->bn_forward_eval(c->b->be, &d, F(c, a->x[0]), F(c, a->gamma), F(c, a->beta), F(c, a->y[0]),
                                          F(c, a->running_mean), F(c, a->running_var)),
               "batchnorm (eval)");
    return 0;
}

/* PyTorch's BatchNorm2d: weight 1, bias 0, running mean 0, running var 1. */
void yp_exec_bn_init(const yp_binding *b, int t, uint64_t *rng, float *p) {
    const yp_tensor *w = &b->s->tensors[t];
    float v = w->role == YP_ROLE_BN_GAMMA || w->role == YP_ROLE_RUNNING_VAR ? 1.0f : 0.0f;
    (void)rng;
    for (int64_t i = 0; i < w->shape.w; i++) p[i] = v;
}

/* ---------------------------------------------------------------- inside SiLU steps */

/* The BN applied inside fused SiLU step c (yp_step.fused_node), over its bn_x. */
static yp_bn_desc fused_desc(const yp_exec_call *c) {
    return bn_desc(c, &c->b->s->g->nodes[c->st->fused_node], c->st->a.bn_x);
}

int yp_exec_bn_silu_forward(const yp_exec_call *c) {
    const yp_operands *a = &c->st->a;
    yp_bn_desc d = fused_desc(c);
    YP_EXEC_OK(c->b->ops->bn_silu_apply(c->b->be, &d, F(c, a->bn_x), F(c, a->bn_gamma), F(c, a->bn_beta),
                                        F(c, a->bn_stats), F(c, a->y[0])),
               "bn + silu");
    return 0;
}

int yp_exec_bn_silu_backward(const yp_exec_call *c) {
    const yp_operands *a = &c->st->a;
    if (beta_of(c, a->dx[0]) != 0.0f) return yp_err_set(c->err, "silu backward cannot accumulate");
    yp_bn_desc d = fused_desc(c);
    YP_EXEC_OK(c->b->ops->bn_silu_backward(c->b->be, &d, F(c, a->bn_x), F(c, a->bn_gamma), F(c, a->bn_beta),
                                           F(c, a->bn_stats), F(c, a->dy[0]), F(c, a->dx[0]), sums_of(c)),
               "bn + silu backward");
    return 0;
}
