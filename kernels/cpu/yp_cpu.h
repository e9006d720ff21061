/* yp_cpu.h - internal to kernels/cpu: the CPU backend's entries, shared between its files.
 * Defines: yp_cpu_backend (an instance: the yp_backend it hands out and its context),
 * yp_cpu_fail (records last_error), the argument and element-type checks and the beta helper
 * every op uses, yp_cpu_ops (the op table, ops_cpu.c) and one declaration per op entry
 * (contracts in yp_ops.h and yp_backend.h). */
#ifndef YP_CPU_H
#define YP_CPU_H

#include <stdint.h>

#include "yp_backend.h"
#include "silu_math.h"

typedef struct yp_cpu_conv yp_cpu_conv; /* conv.c's state (conv_dnnl.h) */

/* A CPU instance. `base` comes first, so that the yp_backend * handed out and this are one
 * address: the entries get their context back with yp_cpu_of(be), a cast. */
typedef struct {
    yp_backend base;
    int threads;       /* the OpenMP thread count its ops run with (>= 1) */
    yp_cpu_conv *conv; /* the oneDNN engine and stream, and the conv primitives built for this instance */
} yp_cpu_backend;

static inline yp_cpu_backend *yp_cpu_of(yp_backend *be) {
    return (yp_cpu_backend *)be;
}

/* Records a formatted reason as the calling thread's last error. Always returns -1. */
int yp_cpu_fail(const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 1, 2)))
#endif
    ;

/* Shared checks (ops_cpu.c). Each returns 0, or -1 with "<op>: <reason>" recorded. */
int yp_cpu_check_count(const char *op, int64_t n);               /* n >= 0 */
int yp_cpu_check_dims(const char *op, const char *what, yp_dims d); /* every extent >= 1 */
int yp_cpu_check_ptrs(const char *op, int count, const void *const *ptrs); /* none NULL */

/* The CPU runs fp32 only: 0 for YP_ELEM_F32, else -1 with "cpu backend: <op>: dtype <t> not
 * supported; the CPU runs fp32 plans" recorded. One compare on the fast path. */
int yp_cpu_elem_fail(const char *op, yp_elem t);
static inline int yp_cpu_check_elem(const char *op, yp_elem t) {
    return t == YP_ELEM_F32 ? 0 : yp_cpu_elem_fail(op, t);
}

/* x = beta*x over n floats: beta == 0 writes zeros without reading x (it may hold NaN garbage from
 * the arena), beta == 1 does nothing. */
void yp_cpu_scale_beta(float *x, int64_t n, float beta);

/* Loops over at least this many floats run on the OpenMP threads (the instance's count); shorter
 * ones stay on the calling thread, where waking the team would cost more than it saves. */
#define YP_PAR_MIN 32768

/* The op table (ops_cpu.c); backend_cpu.c points its `ops` at it. */
extern const yp_ops yp_cpu_ops;

/* conv.c: the instance's conv state (created with the instance, freed with it) */
int yp_cpu_conv_create(yp_cpu_backend *cb, char *why, size_t why_len);
void yp_cpu_conv_destroy(yp_cpu_backend *cb);

int yp_cpu_silu_forward(yp_backend *be, yp_elem dt, const float *x, float *y, int64_t n);
int yp_cpu_silu_backward(yp_backend *be, yp_elem dt, const float *x, const float *dy, float *dx, int64_t n);

/* act.c */
int yp_cpu_relu_forward(yp_backend *be, yp_elem dt, const float *x, float *y, int64_t n);
int yp_cpu_relu_backward(yp_backend *be, yp_elem dt, const float *y, const float *dy, float *dx, float beta,
                         int64_t n);
int yp_cpu_leaky_relu_forward(yp_backend *be, yp_elem dt, float slope, const float *x, float *y, int64_t n);
int yp_cpu_leaky_relu_backward(yp_backend *be, yp_elem dt, float slope, const float *x, const float *dy, float *dx,
                               float beta, int64_t n);
int yp_cpu_hardswish_forward(yp_backend *be, yp_elem dt, const float *x, float *y, int64_t n);
int yp_cpu_hardswish_backward(yp_backend *be, yp_elem dt, const float *x, const float *dy, float *dx, float beta,
                              int64_t n);

/* conv.c */
int yp_cpu_conv2d_scratch(yp_backend *be, const yp_conv_desc *d, int has_bias, yp_conv_stage stage,
                          int64_t *per_image, int64_t *fixed);
int yp_cpu_conv2d_prepare(yp_backend *be, const yp_conv_desc *d, int has_bias, yp_conv_stage stage);
int yp_cpu_conv2d_forward(yp_backend *be, const yp_conv_desc *d, const float *x, const float *w, const float *bias,
                          float *y, float *ws, float *wt);
int yp_cpu_conv2d_backward_data(yp_backend *be, const yp_conv_desc *d, const float *dy, const float *w, float *dx,
                                float beta, float *ws, float *wt);
int yp_cpu_conv2d_backward(yp_backend *be, const yp_conv_desc *d, const float *x, const float *dy, const float *w,
                           float *dx, float *dw, float *dbias, yp_betas beta, float *ws, float *wt);
int yp_cpu_conv2d_backward_weights(yp_backend *be, const yp_conv_desc *d, const float *x, const float *dy, float *dw,
                                   float *dbias, float beta, float *ws, float *wt);

/* bn.c */
int yp_cpu_bn_forward_train(yp_backend *be, const yp_bn_desc *d, const float *x, const float *gamma,
                            const float *beta_, float *y, float *stats, float *running_mean, float *running_var);
int yp_cpu_bn_forward_eval(yp_backend *be, const yp_bn_desc *d, const float *x, const float *gamma,
                           const float *beta_, float *y, const float *running_mean, const float *running_var);
int yp_cpu_bn_apply(yp_backend *be, const yp_bn_desc *d, const float *x, const float *gamma, const float *beta_,
                    const float *stats, float *y);
int yp_cpu_bn_silu_apply(yp_backend *be, const yp_bn_desc *d, const float *x, const float *gamma,
                         const float *beta_, const float *stats, float *y);
int yp_cpu_bn_silu_backward(yp_backend *be, const yp_bn_desc *d, const float *x, const float *gamma,
                            const float *beta_, const float *stats, const float *dy, float *dx, double *sums);
int yp_cpu_bn_backward(yp_backend *be, const yp_bn_desc *d, const float *x, const float *stats, const float *gamma,
                       const float *dy, const double *sums, float *dx, float *dgamma, float *dbeta, yp_betas beta);

/* eltwise.c */
int yp_cpu_add_forward(yp_backend *be, yp_elem dt, const float *a, const float *b, float *y, int64_t n);
int yp_cpu_axpy_grad(yp_backend *be, yp_elem dt, const float *dy, float *dx, float beta, int64_t n);
int yp_cpu_concat_forward(yp_backend *be, yp_elem dt, int k, const float *const *xs, const int64_t *cs, yp_dims out,
                          float *y);
int yp_cpu_concat_backward(yp_backend *be, yp_elem dt, int k, float *const *dxs, const int64_t *cs, yp_dims out,
                           const float *dy, const float *betas);
int yp_cpu_upsample_forward(yp_backend *be, yp_elem dt, yp_dims in, int scale, const float *x, float *y);
int yp_cpu_upsample_backward(yp_backend *be, yp_elem dt, yp_dims in, int scale, const float *dy, float *dx,
                             float beta);
int yp_cpu_space_to_depth(yp_backend *be, yp_elem dt, const yp_s2d_desc *d, const float *fine, float *coarse,
                          float beta);
int yp_cpu_depth_to_space(yp_backend *be, yp_elem dt, const yp_s2d_desc *d, const float *coarse, float *fine,
                          float beta);
int yp_cpu_zero_pad_forward(yp_backend *be, const yp_pad_desc *d, const float *x, float *y);
int yp_cpu_zero_pad_backward(yp_backend *be, const yp_pad_desc *d, const float *dy, float *dx, float beta);

/* attention.c */
int yp_cpu_attention_forward(yp_backend *be, const yp_attn_desc *d, const float *q, const float *k, const float *v,
                             float *y, float *probs);
int yp_cpu_attention_backward(yp_backend *be, const yp_attn_desc *d, const float *q, const float *k, const float *v,
                              const float *probs, const float *dy, float *dq, float *dk, float *dv,
                              const float *betas, float *ws);

/* pool.c */
int yp_cpu_maxpool_forward(yp_backend *be, const yp_pool_desc *d, const float *x, float *y);
int yp_cpu_maxpool_backward(yp_backend *be, const yp_pool_desc *d, const float *x, const float *dy, float *dx,
                            float beta);

/* optim.c */
int yp_cpu_sgd_step(yp_backend *be, yp_elem dt, float *w, const float *grad, float *m, int64_t n,
                    const yp_optim_hyp *h);
int yp_cpu_adam_step(yp_backend *be, yp_elem dt, float *w, const float *grad, float *m, float *v, int64_t n,
                     const yp_optim_hyp *h);
int yp_cpu_sgd_ema_step(yp_backend *be, yp_elem dt, float *w, float *grad, float *m, float *ema, int64_t n,
                        const yp_optim_hyp *h);
int yp_cpu_ema_update(yp_backend *be, yp_elem dt, float *ema, const float *w, int64_t n, float d);
int yp_cpu_optim_multi(yp_backend *be, yp_elem dt, int adam, int k, const yp_optim_tensor *ts, const yp_optim_hyp *h);
int yp_cpu_sum_squares(yp_backend *be, yp_elem dt, const float *x, int64_t n, double *out);
int yp_cpu_sum_squares_multi(yp_backend *be, yp_elem dt, int k, const float *const *xs, const int64_t *ns,
                             double *out);

/* loss.c */
int yp_cpu_loss_level(yp_backend *be, const yp_loss_desc *d, int level, const float *pred, const yp_loss_target *pos,
                      int64_t n_pos, float *objmap, float *dpred, yp_loss_terms *terms);

/* decode.c */
int yp_cpu_detect_decode(yp_backend *be, const yp_decode_desc *d, const float *const *x, float *y);

#endif
