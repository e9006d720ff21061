/* yp_cuda.h - internal to kernels/: what the CUDA library (kernels/cuda/) exports to the dispatcher
 * (kernels/backend.c) and what its own files share. C linkage; the dispatcher's part uses plain C
 * types only, so it includes this as C. Only included when the library is built with YP_HAVE_CUDA.
 * Defines: yp_cuda_backend_new, yp_cuda_ops, yp_cuda_build_info, yp_cuda_fail, yp_cuda_check_launch, the
 * launchers (one block per file kernels/cuda/<file>.cu, with its yp_cuda_register_<file> that sets
 * them in the op table) and, for the .cu files only,
 * yp_cuda_backend (an instance) and yp_cuda_of. */
#ifndef YP_CUDA_H
#define YP_CUDA_H

#include <stddef.h>
#include <stdint.h>

#include "yp_backend.h"


#ifdef __cplusplus
extern "C" {
#endif

/* A new CUDA instance on `device`, or NULL with the reason in why (see yp_backend_cuda_new). */
yp_backend *yp_cuda_backend_new(int device, char *why, size_t why_len);

/* The CUDA op table (static; needs no device). */
const yp_ops *yp_cuda_ops(void);

/* "built for sm_75,... with CUDA 13.0, cuDNN 9.19.0"; static storage. */
const char *yp_cuda_build_info(void);

/* Records a formatted reason as the calling thread's last error. Always returns -1. */
int yp_cuda_fail(const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 1, 2)))
#endif
    ;

/* After a kernel launch: 0, or -1 with "<what>: launch failed: <CUDA error>" recorded. */
int yp_cuda_check_launch(const char *what);

/* ---- launchers (contracts in yp_ops.h) ---- */
/* cast.cu: the cast entry (any pair of F32, F16, BF16); yp_cuda_register_cast sets it. */
void yp_cuda_register_cast(yp_ops *o);
int yp_cuda_cast(yp_backend *be, yp_elem from, const float *x, yp_elem to, float *y, int64_t n);

/* silu.cu: SiLU (F32, F16, BF16; fp32 arithmetic, stored in the element type). */
int yp_cuda_silu_forward(yp_backend *be, yp_elem dt, const float *x, float *y, int64_t n);
int yp_cuda_silu_backward(yp_backend *be, yp_elem dt, const float *x, const float *dy, float *dx, int64_t n);

/* act.cu: relu, leaky_relu, hardswish (F32, F16, BF16; fp32 arithmetic, stored in the element
 * type). yp_cuda_register_act sets them. */
void yp_cuda_register_act(yp_ops *o);
int yp_cuda_relu_forward(yp_backend *be, yp_elem dt, const float *x, float *y, int64_t n);
int yp_cuda_relu_backward(yp_backend *be, yp_elem dt, const float *y, const float *dy, float *dx, float beta,
                          int64_t n);
int yp_cuda_leaky_relu_forward(yp_backend *be, yp_elem dt, float slope, const float *x, float *y, int64_t n);
int yp_cuda_leaky_relu_backward(yp_backend *be, yp_elem dt, float slope, const float *x, const float *dy, float *dx,
                                float beta, int64_t n);
int yp_cuda_hardswish_forward(yp_backend *be, yp_elem dt, const float *x, float *y, int64_t n);
int yp_cuda_hardswish_backward(yp_backend *be, yp_elem dt, const float *x, const float *dy, float *dx, float beta,
                               int64_t n);

/* conv.cu: convolutions through cuDNN (fp32). */
int yp_cuda_conv2d_scratch(yp_backend *be, const yp_conv_desc *d, int has_bias, yp_conv_stage stage,
                           int64_t *per_image, int64_t *fixed);
int yp_cuda_conv2d_prepare(yp_backend *be, const yp_conv_desc *d, int has_bias, yp_conv_stage stage);
int yp_cuda_conv2d_forward(yp_backend *be, const yp_conv_desc *d, const float *x, const float *w, const float *bias,
                           float *y, float *ws, float *wt);
int yp_cuda_conv2d_backward_data(yp_backend *be, const yp_conv_desc *d, const float *dy, const float *w, float *dx,
                                 float beta, float *ws, float *wt);
int yp_cuda_conv2d_backward_weights(yp_backend *be, const yp_conv_desc *d, const float *x, const float *dy, float *dw,
                                    float *dbias, float beta, float *ws, float *wt);
int yp_cuda_conv2d_backward(yp_backend *be, const yp_conv_desc *d, const float *x, const float *dy, const float *w,
                            float *dx, float *dw, float *dbias, yp_betas beta, float *ws, float *wt);

/* detect.cu: Detect's evaluation decode (x of d->dtype: fp32, fp16 or bf16; y fp32). */
int yp_cuda_detect_decode(yp_backend *be, const yp_decode_desc *d, const float *const *x, float *y);

/* loss.cu: one Detect level's YOLOv5 loss and its gradient (pred, dpred of d->dtype: fp32, fp16 or bf16;
 * objmap fp32; fp32 arithmetic). */
int yp_cuda_loss_level(yp_backend *be, const yp_loss_desc *d, int level, const float *pred, const yp_loss_target *pos,
                       int64_t n_pos, float *objmap, float *dpred, yp_loss_terms *terms);
/* eltwise.cu: add, axpy_grad, concat, upsample, maxpool, space_to_depth, depth_to_space, zero_pad (F32,
 * F16, BF16; fp32 arithmetic, stored in the element type). yp_cuda_register_eltwise sets those entries
 * of an op table. */
void yp_cuda_register_eltwise(yp_ops *o);
int yp_cuda_add_forward(yp_backend *be, yp_elem dt, const float *a, const float *b, float *y, int64_t n);
int yp_cuda_axpy_grad(yp_backend *be, yp_elem dt, const float *dy, float *dx, float beta, int64_t n);
int yp_cuda_concat_forward(yp_backend *be, yp_elem dt, int k, const float *const *xs, const int64_t *cs,
                           yp_dims out, float *y);
int yp_cuda_concat_backward(yp_backend *be, yp_elem dt, int k, float *const *dxs, const int64_t *cs, yp_dims out,
                            const float *dy, const float *betas);
int yp_cuda_upsample_forward(yp_backend *be, yp_elem dt, yp_dims in, int scale, const float *x, float *y);
int yp_cuda_upsample_backward(yp_backend *be, yp_elem dt, yp_dims in, int scale, const float *dy, float *dx,
                              float beta);
int yp_cuda_maxpool_forward(yp_backend *be, const yp_pool_desc *d, const float *x, float *y);
int yp_cuda_maxpool_backward(yp_backend *be, const yp_pool_desc *d, const float *x, const float *dy, float *dx,
                             float beta);
int yp_cuda_space_to_depth(yp_backend *be, yp_elem dt, const yp_s2d_desc *d, const float *fine, float *coarse,
                           float beta);
int yp_cuda_depth_to_space(yp_backend *be, yp_elem dt, const yp_s2d_desc *d, const float *coarse, float *fine,
                           float beta);
int yp_cuda_zero_pad_forward(yp_backend *be, const yp_pad_desc *d, const float *x, float *y);
int yp_cuda_zero_pad_backward(yp_backend *be, const yp_pad_desc *d, const float *dy, float *dx, float beta);

/* attention.cu: multi-head attention forward and backward (F32, F16, BF16: the operands, P and the
 * backward's scratch all of the descriptor's dtype, fp32 arithmetic); yp_cuda_register_attention
 * sets those entries. */
void yp_cuda_register_attention(yp_ops *o);
int yp_cuda_attention_forward(yp_backend *be, const yp_attn_desc *d, const float *q, const float *k, const float *v,
                              float *y, float *probs);
int yp_cuda_attention_backward(yp_backend *be, const yp_attn_desc *d, const float *q, const float *k, const float *v,
                               const float *probs, const float *dy, float *dq, float *dk, float *dv,
                               const float *betas, float *ws);

/* bn.cu: the BatchNorm entries and the fused BN+SiLU (x, y, dx, dy of d->dtype: fp32, fp16 or bf16;
 * per-channel operands fp32; fp32 arithmetic). yp_cuda_register_bn sets them. */
void yp_cuda_register_bn(yp_ops *o);
int yp_cuda_bn_forward_train(yp_backend *be, const yp_bn_desc *d, const float *x, const float *gamma,
                             const float *beta_, float *y, float *stats, float *running_mean, float *running_var);
int yp_cuda_bn_forward_eval(yp_backend *be, const yp_bn_desc *d, const float *x, const float *gamma,
                            const float *beta_, float *y, const float *running_mean, const float *running_var);
int yp_cuda_bn_apply(yp_backend *be, const yp_bn_desc *d, const float *x, const float *gamma, const float *beta_,
                     const float *stats, float *y);
int yp_cuda_bn_silu_apply(yp_backend *be, const yp_bn_desc *d, const float *x, const float *gamma,
                          const float *beta_, const float *stats, float *y);
int yp_cuda_bn_silu_backward(yp_backend *be, const yp_bn_desc *d, const float *x, const float *gamma,
                             const float *beta_, const float *stats, const float *dy, float *dx, double *sums);
int yp_cuda_bn_backward(yp_backend *be, const yp_bn_desc *d, const float *x, const float *stats,
                        const float *gamma, const float *dy, const double *sums, float *dx, float *dgamma,
                        float *dbeta, yp_betas beta);

/* optim.cu: sgd_step, adam_step, ema_update, sgd_ema_step, optim_multi, sum_squares, sum_squares_multi (fp32, the
 * masters; F16/BF16 refused). yp_cuda_register_optim sets them. */
void yp_cuda_register_optim(yp_ops *o);
int yp_cuda_sgd_step(yp_backend *be, yp_elem dt, float *w, const float *grad, float *m, int64_t n,
                     const yp_optim_hyp *h);
int yp_cuda_adam_step(yp_backend *be, yp_elem dt, float *w, const float *grad, float *m, float *v, int64_t n,
                      const yp_optim_hyp *h);
int yp_cuda_ema_update(yp_backend *be, yp_elem dt, float *ema, const float *w, int64_t n, float d);
int yp_cuda_sgd_ema_step(yp_backend *be, yp_elem dt, float *w, float *grad, float *m, float *ema, int64_t n,
                         const yp_optim_hyp *h);
int yp_cuda_optim_multi(yp_backend *be, yp_elem dt, int adam, int k, const yp_optim_tensor *ts,
                        const yp_optim_hyp *h);
int yp_cuda_sum_squares(yp_backend *be, yp_elem dt, const float *x, int64_t n, double *out);
int yp_cuda_sum_squares_multi(yp_backend *be, yp_elem dt, int k, const float *const *xs, const int64_t *ns,
                              double *out);

#ifdef __cplusplus
}
#endif

#ifdef __CUDACC__
#include <cuda_runtime.h>
#include <cudnn.h>

struct yp_cuda_conv_cache; /* conv.cu: descriptors and algorithms per conv shape */
struct yp_cuda_loss_sums;  /* loss.cu: the device words loss_level reduces into */
struct yp_cuda_sum_words;  /* optim.cu: the device words sum_squares reduces into */

/* A CUDA instance. `base` comes first, so that the yp_backend * handed out and this are one
 * address. Every entry makes `device` current and queues its work on `stream`, so work of one
 * instance runs in order and instances on other devices or streams stay apart. */
struct yp_cuda_backend {
    yp_backend base;
    int device;
    cudaStream_t stream;
    cudnnHandle_t cudnn;              /* bound to stream; created with the instance (conv.cu) */
    struct yp_cuda_conv_cache *convs; /* conv.cu's per-shape cache (host memory); NULL until the first conv */
    struct yp_cuda_loss_sums *loss;   /* loss.cu's device words; created with the instance */
    struct yp_cuda_sum_words *sums;   /* optim.cu's device words (device memory); created with the instance */
};

/* The op table's registrations (each in its .cu file): set that file's entries of *o. */
void yp_cuda_register_conv(yp_ops *o);
void yp_cuda_register_detect(yp_ops *o);
void yp_cuda_register_loss(yp_ops *o);
/* Create that file's device state of the instance (called by yp_cuda_backend_new on its device,
 * after the stream; the ops then never create it): 0, or -1 with the reason recorded. */
int yp_cuda_conv_init(yp_cuda_backend *cb);
int yp_cuda_loss_init(yp_cuda_backend *cb);
int yp_cuda_optim_init(yp_cuda_backend *cb);
/* Frees what that file keeps in the instance (called by the instance's release, on its device). */
void yp_cuda_conv_release(yp_cuda_backend *cb);
void yp_cuda_loss_release(yp_cuda_backend *cb);
void yp_cuda_optim_release(yp_cuda_backend *cb);

static inline yp_cuda_backend *yp_cuda_of(yp_backend *be) {
    return reinterpret_cast<yp_cuda_backend *>(be);
}

/* Makes the instance's device current on the calling thread (a launch on its stream needs it):
 * 0, or -1 with "<what>: cudaSetDevice(d): <error>" recorded. */
static inline int yp_cuda_use(const char *what, yp_cuda_backend *cb) {
    cudaError_t e = cudaSetDevice(cb->device);
    if (e != cudaSuccess)
        return yp_cuda_fail("%s: cudaSetDevice(%d): %s", what, cb->device, cudaGetErrorString(e));
    return 0;
}
#endif

#endif
