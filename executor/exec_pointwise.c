/* exec_pointwise.c - the activation rows of the executor's op table (exec_ops.h): silu, relu,
 * leaky_relu and hardswish, their forward (also recompute) and backward through the backend's
 * entries. SiLU's fused forms, a SiLU step that applies the BN before it, are BN math and live in
 * exec_bn.c. ReLU's backward reads its own output (y[0], what autograd saves), the others their
 * input (x[0]); those three add to a gradient that another step wrote first. */
#include "exec_ops.h"

int yp_exec_silu_forward(const yp_exec_call *c) {
    const yp_operands *a = &c->st->a;
    YP_EXEC_OK(c->b->ops->silu_forward(c->b->be, E(c, a->y[0]), F(c, a->x[0]), F(c, a->y[0]), numel(c, a->y[0])),
               "silu");
    return 0;
}

int yp_exec_silu_backward(const yp_exec_call *c) {
    const yp_operands *a = &c->st->a;
    if (beta_of(c, a->dx[0]) != 0.0f) return yp_err_set(c->err, "silu backward cannot accumulate");
    YP_EXEC_OK(c->b->ops->silu_backward(c->b->be, E(c, a->dx[0]), F(c, a->x[0]), F(c, a->dy[0]), F(c, a->dx[0]),
                                        numel(c, a->dy[0])),
               "silu backward");
    return 0;
}

int yp_exec_relu_forward(const yp_exec_call *c) {
    const yp_operands *a = &c->st->a;
    YP_EXEC_OK(c->b->ops->relu_forward(c->b->be, E(c, a->y[0]), F(c, a->x[0]), F(c, a->y[0]), numel(c, a->y[0])),
               "relu");
    return 0;
}

int yp_exec_relu_backward(const yp_exec_call *c) {
    const yp_operands *a = &c->st->a;
    int dx = a->dx[0];
    if (dx < 0) return 0; /* the input needs no gradient */
    YP_EXEC_OK(c->b->ops->relu_backward(c->b->be, E(c, dx), F(c, a->y[0]), F(c, a->dy[0]), F(c, dx), beta_of(c, dx),
                                        numel(c, dx)),
               "relu backward");
    return 0;
}

int yp_exec_leaky_relu_forward(const yp_exec_call *c) {
    const yp_operands *a = &c->st->a;
    float slope = (float)node_of(c)->a.leaky.slope;
    YP_EXEC_OK(c->b->ops->leaky_relu_forward(c->b->be, E(c, a->y[0]), slope, F(c, a->x[0]), F(c, a->y[0]),
                                             numel(c, a->y[0])),
               "leaky_relu");
    return 0;
}

int yp_exec_leaky_relu_backward(const yp_exec_call *c) {
    const yp_operands *a = &c->st->a;
    int dx = a->dx[0];
    if (dx < 0) return 0;
    float slope = (float)node_of(c)->a.leaky.slope;
    YP_EXEC_OK(c->b->ops->leaky_relu_backward(c->b->be, E(c, dx), slope, F(c, a->x[0]), F(c, a->dy[0]), F(c, dx),
                                              beta_of(c, dx), numel(c, dx)),
               "leaky_relu backward");
    return 0;
}

int yp_exec_hardswish_forward(const yp_exec_call *c) {
    const yp_operands *a = &c->st->a;
    YP_EXEC_OK(c->b->ops->hardswish_forward(c->b->be, E(c, a->y[0]), F(c, a->x[0]), F(c, a->y[0]),
                                            numel(c, a->y[0])),
               "hardswish");
    return 0;
}

int yp_exec_hardswish_backward(const yp_exec_call *c) {
    const yp_operands *a = &c->st->a;
    int dx = a->dx[0];
    if (dx < 0) return 0;
    YP_EXEC_OK(c->b->ops->hardswish_backward(c->b->be, E(c, dx), F(c, a->x[0]), F(c, a->dy[0]), F(c, dx),
                                             beta_of(c, dx), numel(c, dx)),
               "hardswish backward");
    return 0;
}
