/* exec_join.c - the add and concat rows of the executor's op table (exec_ops.h): the ops that
 * join several values, and their backward, which hands each input its part of the gradient. */
#include "exec_ops.h"

int yp_exec_add_forward(const yp_exec_call *c) {
    const yp_operands *a = &c->st->a;
    YP_EXEC_OK(c->b->ops->add_forward(c->b->be, E(c, a->y[0]), F(c, a->x[0]), F(c, a->x[1]), F(c, a->y[0]),
                                      numel(c, a->y[0])),
               "add");
    return 0;
}

/* dy added to each input's gradient (absent: that input needs none). */
int yp_exec_add_backward(const yp_exec_call *c) {
    const yp_operands *a = &c->st->a;
    for (int k = 0; k < 2; k++)
        if (a->dx[k] >= 0)
            YP_EXEC_OK(c->b->ops->axpy_grad(c->b->be, E(c, a->dy[0]), F(c, a->dy[0]), F(c, a->dx[k]),
                                            beta_of(c, a->dx[k]), numel(c, a->dy[0])),
                       "add backward");
    return 0;
}

int yp_exec_concat_forward(const yp_exec_call *c) {
    const yp_operands *a = &c->st->a;
    int k = node_of(c)->n_inputs;
    const float *xs[YP_MAX_INPUTS];
    int64_t cs[YP_MAX_INPUTS];
    for (int i = 0; i < k; i++) xs[i] = F(c, a->x[i]), cs[i] = T(c, a->x[i])->shape.c;
    YP_EXEC_OK(c->b->ops->concat_forward(c->b->be, E(c, a->y[0]), k, xs, cs, dims(c, a->y[0]), F(c, a->y[0])),
               "concat");
    return 0;
}

int yp_exec_concat_backward(const yp_exec_call *c) {
    const yp_node *n = node_of(c);
    const yp_operands *a = &c->st->a;
    float *dxs[YP_MAX_INPUTS];
    float betas[YP_MAX_INPUTS];
    int64_t cs[YP_MAX_INPUTS];
    for (int k = 0; k < n->n_inputs; k++) {
        cs[k] = value_dims(c, n->inputs[k]).c;
        dxs[k] = OPT(c, a->dx[k]), betas[k] = beta_of(c, a->dx[k]);
    }
    YP_EXEC_OK(c->b->ops->concat_backward(c->b->be, E(c, a->dy[0]), n->n_inputs, dxs, cs, dims(c, a->dy[0]),
                                          F(c, a->dy[0]), betas),
               "concat backward");
    return 0;
}
