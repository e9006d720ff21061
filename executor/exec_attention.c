/* exec_attention.c - the attention row of the executor's op table (exec_ops.h): its forward (and
 * recompute) and backward steps through the backend's attention entries, and the init-time check
 * that the plan gave each step the softmax output and scratch the entries read and write
 * (yp_attn_probs_floats). Attention has no parameters: its projections are conv2d nodes. */
#include <math.h>

#include "exec_ops.h"

/* Attention node n on tensors of y's shape (its output, or its gradient). */
static yp_attn_desc attn_desc(const yp_exec_call *c, const yp_node *n, int y) {
    yp_attn_desc d = {dims(c, y), n->a.attn.heads, E(c, y)};
    return d;
}

int yp_exec_attn_forward(const yp_exec_call *c) {
    const yp_operands *a = &c->st->a;
    yp_attn_desc d = attn_desc(c, node_of(c), a->y[0]);
    YP_EXEC_OK(c->b->ops->attention_forward(c->b->be, &d, F(c, a->x[0]), F(c, a->x[1]), F(c, a->x[2]), F(c, a->y[0]),
                                            F(c, a->probs)),
               "attention");
    if (a->attn_scalars[0] < 0) return 0;
    /* what PyTorch keeps beside P (YP_ROLE_ATTN_SCALARS): q's divisor and the head count */
    const double scale = sqrt((double)(d.dims.c / d.heads));
    const int64_t heads = d.heads;
    yp_backend *be = c->b->be;
    YP_EXEC_OK(be->mem_copy(be, F(c, a->attn_scalars[0]), &scale, sizeof scale, YP_COPY_HOST_TO_DEVICE) ||
                   be->mem_copy(be, F(c, a->attn_scalars[1]), &heads, sizeof heads, YP_COPY_HOST_TO_DEVICE),
               "attention scalars");
    return 0;
}

int yp_exec_attn_backward(const yp_exec_call *c) {
    const yp_operands *a = &c->st->a;
    yp_attn_desc d = attn_desc(c, node_of(c), a->dy[0]);
    float betas[3];
    for (int k = 0; k < 3; k++) { /* a value that is two inputs has one gradient: the later adds */
        betas[k] = beta_of(c, a->dx[k]);
        for (int j = 0; j < k; j++)
            if (a->dx[k] >= 0 && a->dx[j] == a->dx[k]) betas[k] = 1.0f;
    }
    YP_EXEC_OK(c->b->ops->attention_backward(c->b->be, &d, F(c, a->x[0]), F(c, a->x[1]), F(c, a->x[2]),
                                             OPT(c, a->probs), F(c, a->dy[0]), OPT(c, a->dx[0]), OPT(c, a->dx[1]),
                                             OPT(c, a->dx[2]), betas, F(c, a->scratch_image)),
               "attention backward");
    return 0;
}

/* Forward and recompute write P into probs; backward reads it where kept, and its scratch holds
 * dP (and P again where not). */
int yp_exec_attn_prepare(const yp_exec_call *c) {
    const yp_node *n = node_of(c);
    const yp_operands *a = &c->st->a;
    yp_shape y = T(c, c->b->fwd_t[n->id])->shape;
    int64_t pf = yp_attn_probs_floats(y.n, n->a.attn.heads, y.h, y.w);
    int bwd = c->st->phase == YP_PHASE_BACKWARD, t = bwd ? a->scratch_image : a->probs;
    int64_t need = pf < 0 ? -1 : pf * (bwd && a->probs < 0 ? 2 : 1) * (int64_t)sizeof(float);
    int64_t have = t >= 0 ? T(c, t)->bytes : 0;
    if (need < 0 || have < need)
        return yp_err_set(c->err, "step %d (%s): the plan gives %lld bytes of attention %s, the entries need %lld; "
                          "rebuild the plan from this schedule", (int)(c->st - c->b->s->steps), n->name,
                          (long long)have, bwd ? "scratch" : "probabilities", (long long)need);
    return 0;
}
