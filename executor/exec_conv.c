/* exec_conv.c - the conv2d and detect rows of the executor's op table (exec_ops.h): their steps
 * through the backend's conv entries (a Detect level is a 1x1 conv with bias), the init-time
 * preparation that builds each conv's primitives and checks the scratch the plan gave it, and
 * PyTorch's initial weights with YOLOv5's Detect bias priors. */
#include <math.h>

#include "exec_ops.h"
#include "yp_splitmix64.h"

/* The scratch a conv step was given (yp_operands.scratch_image / scratch_fixed), or NULL. */
#define WS(c) OPT(c, (c)->st->a.scratch_image), OPT(c, (c)->st->a.scratch_fixed)

/* Conv n with output (or output gradient) tensor y. */
static yp_conv_desc conv_desc(const yp_exec_call *c, const yp_node *n, int y) {
    const yp_conv_attrs *a = &n->a.conv;
    return (yp_conv_desc){.in = value_dims(c, n->inputs[0]), .out = dims(c, y), .kh = a->kh, .kw = a->kw,
                          .sh = a->sh, .sw = a->sw, .ph = a->ph, .pw = a->pw, .groups = a->groups, .dtype = E(c, y),
                          .wdtype = E(c, c->st->a.w[0])};
}

/* Level l of Detect n with output (or output gradient) tensor y. */
static yp_conv_desc detect_desc(const yp_exec_call *c, const yp_node *n, int l, int y) {
    return (yp_conv_desc){.in = value_dims(c, n->inputs[l]), .out = dims(c, y), .kh = 1, .kw = 1, .sh = 1, .sw = 1,
                          .groups = 1, .dtype = E(c, y), .wdtype = E(c, c->st->a.w[l])};
}

/* ---------------------------------------------------------------- steps */

int yp_exec_conv_forward(const yp_exec_call *c) {
    const yp_operands *a = &c->st->a;
    yp_conv_desc d = conv_desc(c, node_of(c), a->y[0]);
    if (a->in_copy >= 0) { /* PyTorch's contiguous copy of a permuted input, which its backward reads */
        const yp_dims x = d.in;
        YP_EXEC_OK(c->b->ops->axpy_grad(c->b->be, E(c, a->in_copy), F(c, a->x[0]), F(c, a->in_copy), 0.0f,
                                        x.n * x.h * x.w * x.c),
                   "conv2d input copy");
    }
    YP_EXEC_OK(c->b->ops->conv2d_forward(c->b->be, &d, F(c, a->x[0]), F(c, a->w[0]), OPT(c, a->bias[0]), F(c, a->y[0]),
                                         WS(c)),
               "conv2d");
    return 0;
}

int yp_exec_conv_backward(const yp_exec_call *c) {
    const yp_ops *o = c->b->ops;
    const yp_operands *a = &c->st->a;
    int tr = a->dw[0] >= 0, dx = a->dx[0]; /* dw absent: a frozen conv */
    yp_conv_desc d = conv_desc(c, node_of(c), a->dy[0]);
    if (dx >= 0 && tr && o->conv2d_backward) {
        YP_EXEC_OK(o->conv2d_backward(c->b->be, &d, F(c, a->x[0]), F(c, a->dy[0]), F(c, a->w[0]), F(c, dx),
                                      F(c, a->dw[0]), OPT(c, a->dbias[0]), (yp_betas){beta_of(c, dx), 1.0f}, WS(c)),
                   "conv backward");
        return 0;
    }
    if (dx >= 0)
        YP_EXEC_OK(
            o->conv2d_backward_data(c->b->be, &d, F(c, a->dy[0]), F(c, a->w[0]), F(c, dx), beta_of(c, dx), WS(c)),
            "conv backward data");
    if (tr)
        YP_EXEC_OK(o->conv2d_backward_weights(c->b->be, &d, F(c, a->x[0]), F(c, a->dy[0]), F(c, a->dw[0]),
                                              OPT(c, a->dbias[0]), 1.0f, WS(c)),
                   "conv backward weights");
    return 0;
}

int yp_exec_detect_forward(const yp_exec_call *c) {
    const yp_node *n = node_of(c);
    const yp_operands *a = &c->st->a;
    for (int l = 0; l < n->n_inputs; l++) {
        yp_conv_desc d = detect_desc(c, n, l, a->y[l]);
        YP_EXEC_OK(c->b->ops->conv2d_forward(c->b->be, &d, F(c, a->x[l]), F(c, a->w[l]), F(c, a->bias[l]),
                                             F(c, a->y[l]), WS(c)),
                   "detect conv");
    }
    return 0;
}

int yp_exec_detect_backward(const yp_exec_call *c) {
    const yp_ops *o = c->b->ops;
    const yp_node *n = node_of(c);
    const yp_operands *a = &c->st->a;
    for (int l = 0; l < n->n_inputs; l++) { /* dw absent: a frozen head */
        yp_conv_desc d = detect_desc(c, n, l, a->dy[l]);
        if (a->dx[l] >= 0)
            YP_EXEC_OK(o->conv2d_backward_data(c->b->be, &d, F(c, a->dy[l]), F(c, a->w[l]), F(c, a->dx[l]),
                                               beta_of(c, a->dx[l]), WS(c)),
                       "detect backward data");
        if (a->dw[l] >= 0)
            YP_EXEC_OK(o->conv2d_backward_weights(c->b->be, &d, F(c, a->x[l]), F(c, a->dy[l]), F(c, a->dw[l]),
                                                  F(c, a->dbias[l]), 1.0f, WS(c)),
                       "detect backward weights");
    }
    return 0;
}

/* ---------------------------------------------------------------- preparation */

/* Builds what the backend keeps for conv d at the stage of step c, and checks the step's
 * scratch against what the backend asks for. */
static int check_scratch(const yp_exec_call *c, const yp_conv_desc *d, int bias) {
    yp_conv_stage st = c->st->phase == YP_PHASE_BACKWARD ? YP_CONV_BACKWARD : YP_CONV_FORWARD;
    int64_t per_image, fixed;
    if ((c->b->ops->conv2d_prepare && c->b->ops->conv2d_prepare(c->b->be, d, bias, st)) ||
        c->b->ops->conv2d_scratch(c->b->be, d, bias, st, &per_image, &fixed))
        return yp_exec_fail(c, "preparing the conv");
    const int given[2] = {c->st->a.scratch_image, c->st->a.scratch_fixed};
    int64_t need[2] = {per_image * (int64_t)sizeof(float), fixed * (int64_t)sizeof(float)};
    for (int k = 0; k < 2; k++) {
        int t = given[k];
        int64_t have = t >= 0 ? T(c, t)->bytes : 0;
        if (have < need[k]) {
            char model[YP_SCRATCH_NAME_MAX];
            yp_exec_scratch_model(c->b->be, model, sizeof model);
            return yp_err_set(c->err, "step %d (%s): the plan gives %lld bytes of %s scratch, the %s backend needs "
                              "%lld: the plan's conv scratch model is %s, this backend needs %s; plan with "
                              "--scratch %s", (int)(c->st - c->b->s->steps), node_of(c)->name,
                              (long long)have, k ? "fixed" : "per-image", c->b->be->name, (long long)need[k],
                              yp_candidate_scratch_name(&c->b->plan->cand), model, model);
        }
    }
    return 0;
}

/* Every step of conv n describes it by its forward output. */
int yp_exec_conv_prepare(const yp_exec_call *c) {
    const yp_node *n = node_of(c);
    int y = c->b->fwd_t[n->id];
    yp_conv_desc d = conv_desc(c, n, y);
    return check_scratch(c, &d, n->a.conv.bias);
}

int yp_exec_detect_prepare(const yp_exec_call *c) {
    const yp_node *n = node_of(c);
    for (int l = 0; l < n->n_inputs; l++) {
        int y = c->b->fwd_t[n->id] + l; /* the forward step creates the levels' outputs one after another */
        yp_conv_desc d = detect_desc(c, n, l, y);
        if (check_scratch(c, &d, 1)) return -1;
    }
    return 0;
}

/* ---------------------------------------------------------------- initial weights */

/* splitmix64: a small, seedable generator so runs are reproducible. */
static double uniform(uint64_t *state) { return (double)(yp_splitmix64_next(state) >> 11) / 9007199254740992.0; }

/* PyTorch's default for conv weights and biases: U(-1/sqrt(fan_in), 1/sqrt(fan_in))
 * (kaiming_uniform with a = sqrt(5)). */
static void kaiming_uniform(float *p, int64_t n, int64_t fan_in, uint64_t *rng) {
    double bound = 1.0 / sqrt((double)fan_in);
    for (int64_t i = 0; i < n; i++) p[i] = (float)((2.0 * uniform(rng) - 1.0) * bound);
}

void yp_exec_conv_init(const yp_binding *b, int t, uint64_t *rng, float *p) {
    const yp_tensor *w = &b->s->tensors[t];
    const yp_conv_attrs *a = &b->s->g->nodes[w->node].a.conv;
    kaiming_uniform(p, w->shape.w, (int64_t)a->c_in / a->groups * a->kh * a->kw, rng);
}

/* PyTorch's default, then YOLOv5's Detect bias priors: objectness += log(8 / (640 / stride)^2),
 * classes += log(0.6 / (nc - 0.99999)). */
void yp_exec_detect_init(const yp_binding *b, int t, uint64_t *rng, float *p) {
    const yp_tensor *w = &b->s->tensors[t];
    const yp_graph *g = b->s->g;
    const yp_detect_attrs *d = &g->nodes[w->node].a.detect;
    int l = w->level;
    kaiming_uniform(p, w->shape.w, d->c_in[l], rng);
    if (w->role != YP_ROLE_CONV_BIAS) return;
    int no = d->nc + 5;
    double cells = 640.0 / g->strides[l];
    for (int k = 0; k < d->na; k++) {
        p[k * no + 4] += (float)log(8.0 / (cells * cells));
        for (int j = 0; j < d->nc; j++) p[k * no + 5 + j] += (float)log(0.6 / (d->nc - 0.99999));
    }
}
