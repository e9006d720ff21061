/* exec_pointwise.c - the silu row of the executor's op table (exec_ops.h): its forward (also
 * recompute) and backward through the backend's SiLU entries. Its fused forms, a SiLU step that
 * applies the BN before it, are BN math and live in exec_bn.c. */
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
