/* exec_resample.c - the upsample_nearest, maxpool2d, space_to_depth, contract, expand and zero_pad
 * rows of the executor's op table (exec_ops.h): the ops that move values between pixels; a
 * backward whose input needs no gradient does nothing. */
#include "exec_ops.h"

int yp_exec_upsample_forward(const yp_exec_call *c) {
    const yp_operands *a = &c->st->a;
    YP_EXEC_OK(c->b->ops->upsample_forward(c->b->be, E(c, a->y[0]), dims(c, a->x[0]), node_of(c)->a.up.scale,
                                           F(c, a->x[0]), F(c, a->y[0])),
               "upsample");
    return 0;
}

int yp_exec_upsample_backward(const yp_exec_call *c) {
    const yp_operands *a = &c->st->a;
    int dx = a->dx[0];
    if (dx < 0) return 0; /* the input needs no gradient */
    YP_EXEC_OK(c->b->ops->upsample_backward(c->b->be, E(c, dx), dims(c, dx), node_of(c)->a.up.scale, F(c, a->dy[0]),
                                            F(c, dx), beta_of(c, dx)),
               "upsample backward");
    return 0;
}

/* Maxpool node n from tensor x to tensor y (or y's gradient). */
static yp_pool_desc pool_desc(const yp_exec_call *c, const yp_node *n, int x, int y) {
    yp_pool_desc d = {dims(c, x), dims(c, y), n->a.pool.k, n->a.pool.s, n->a.pool.p, E(c, x)};
    return d;
}

int yp_exec_maxpool_forward(const yp_exec_call *c) {
    const yp_operands *a = &c->st->a;
    yp_pool_desc d = pool_desc(c, node_of(c), a->x[0], a->y[0]);
    YP_EXEC_OK(c->b->ops->maxpool_forward(c->b->be, &d, F(c, a->x[0]), F(c, a->y[0])), "maxpool");
    return 0;
}

int yp_exec_maxpool_backward(const yp_exec_call *c) {
    const yp_operands *a = &c->st->a;
    int dx = a->dx[0];
    if (dx < 0) return 0;
    yp_pool_desc d = pool_desc(c, node_of(c), a->x[0], a->dy[0]);
    YP_EXEC_OK(c->b->ops->maxpool_backward(c->b->be, &d, F(c, a->x[0]), F(c, a->dy[0]), F(c, dx), beta_of(c, dx)),
               "maxpool backward");
    return 0;
}

/* Focus's space_to_depth: 2x2 blocks in its column-major order, the fine map the input. */
static yp_s2d_desc focus_desc(const yp_exec_call *c, int fine) {
    yp_s2d_desc d = {dims(c, fine), 2, YP_S2D_COL_MAJOR};
    return d;
}

int yp_exec_s2d_forward(const yp_exec_call *c) {
    const yp_operands *a = &c->st->a;
    yp_s2d_desc d = focus_desc(c, a->x[0]);
    YP_EXEC_OK(c->b->ops->space_to_depth(c->b->be, E(c, a->y[0]), &d, F(c, a->x[0]), F(c, a->y[0]), 0.0f), "s2d");
    return 0;
}

int yp_exec_s2d_backward(const yp_exec_call *c) {
    const yp_operands *a = &c->st->a;
    int dx = a->dx[0];
    if (dx < 0) return 0; /* the input needs no gradient */
    yp_s2d_desc d = focus_desc(c, dx);
    YP_EXEC_OK(c->b->ops->depth_to_space(c->b->be, E(c, dx), &d, F(c, a->dy[0]), F(c, dx), beta_of(c, dx)),
               "s2d backward");
    return 0;
}

/* Contract and Expand (YOLOv5's): gain x gain blocks in row-major order; the fine map is
 * Contract's input, Expand's output (or, in their backward, those tensors' gradients). */
static yp_s2d_desc block_desc(const yp_exec_call *c, int fine) {
    yp_s2d_desc d = {dims(c, fine), node_of(c)->a.s2d.gain, YP_S2D_ROW_MAJOR};
    return d;
}

int yp_exec_contract_forward(const yp_exec_call *c) {
    const yp_operands *a = &c->st->a;
    yp_s2d_desc d = block_desc(c, a->x[0]);
    YP_EXEC_OK(c->b->ops->space_to_depth(c->b->be, E(c, a->y[0]), &d, F(c, a->x[0]), F(c, a->y[0]), 0.0f),
               "contract");
    return 0;
}

int yp_exec_contract_backward(const yp_exec_call *c) {
    const yp_operands *a = &c->st->a;
    int dx = a->dx[0];
    if (dx < 0) return 0; /* the input needs no gradient */
    yp_s2d_desc d = block_desc(c, dx);
    YP_EXEC_OK(c->b->ops->depth_to_space(c->b->be, E(c, dx), &d, F(c, a->dy[0]), F(c, dx), beta_of(c, dx)),
               "contract backward");
    return 0;
}

int yp_exec_expand_forward(const yp_exec_call *c) {
    const yp_operands *a = &c->st->a;
    yp_s2d_desc d = block_desc(c, a->y[0]);
    YP_EXEC_OK(c->b->ops->depth_to_space(c->b->be, E(c, a->y[0]), &d, F(c, a->x[0]), F(c, a->y[0]), 0.0f),
               "expand");
    return 0;
}

int yp_exec_expand_backward(const yp_exec_call *c) {
    const yp_operands *a = &c->st->a;
    int dx = a->dx[0];
    if (dx < 0) return 0;
    yp_s2d_desc d = block_desc(c, a->dy[0]);
    YP_EXEC_OK(c->b->ops->space_to_depth(c->b->be, E(c, dx), &d, F(c, a->dy[0]), F(c, dx), beta_of(c, dx)),
               "expand backward");
    return 0;
}

/* Zero_pad node n around tensor x (its input, or the input's gradient). */
static yp_pad_desc pad_desc(const yp_exec_call *c, const yp_node *n, int x) {
    const yp_pad_attrs *p = &n->a.pad;
    yp_pad_desc d = {dims(c, x), p->left, p->right, p->top, p->bottom, E(c, x)};
    return d;
}

int yp_exec_zero_pad_forward(const yp_exec_call *c) {
    const yp_operands *a = &c->st->a;
    yp_pad_desc d = pad_desc(c, node_of(c), a->x[0]);
    YP_EXEC_OK(c->b->ops->zero_pad_forward(c->b->be, &d, F(c, a->x[0]), F(c, a->y[0])), "zero_pad");
    return 0;
}

int yp_exec_zero_pad_backward(const yp_exec_call *c) {
    const yp_operands *a = &c->st->a;
    int dx = a->dx[0];
    if (dx < 0) return 0; /* the input needs no gradient */
    yp_pad_desc d = pad_desc(c, node_of(c), dx);
    YP_EXEC_OK(c->b->ops->zero_pad_backward(c->b->be, &d, F(c, a->dy[0]), F(c, dx), beta_of(c, dx)),
               "zero_pad backward");
    return 0;
}
