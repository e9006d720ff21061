/* yp_ops.h - the op entries of a backend (NHWC activations, PyTorch OIHW weights).
 *
 * Layout: an activation of logical shape (n, c, h, w) is stored NHWC: x[((i*h + y)*w + x)*c + ch].
 * Weights keep PyTorch's layouts so state dicts load without reshuffling: conv weight
 * (c_out, c_in/groups, k, k), BN weight/bias/running stats (c). Detect's output is its 1x1 conv's
 * NHWC output (n, h, w, na*(nc+5)): anchor a, field f of cell (y, x) is at [..][a*(nc+5) + f],
 * which is PyTorch's (n, na, h, w, nc+5) tensor permuted; the loss (loss_level) reads it in place.
 *
 * Context: every entry takes the backend instance it belongs to first (`be`, yp_backend.h), which
 * holds what the ops need beyond their operands: the thread count, library handles, the stream,
 * per-shape caches. Call an entry of be->ops with that same be.
 *
 * Element type (yp_elem): conv, BN, pooling, zero padding, attention, the loss and the decode
 * carry it in their descriptor (`dtype`); every other op takes it as the parameter right after
 * `be`. It is the type of the tensor operands: the activations and their gradients (x, y, dx, dy,
 * the loss's predictions and their gradients, the decode's input), and for the optimizer ops w,
 * grad and the states. Under AMP (fp16 or bf16 activations) the parameters stay fp32 masters, as
 * in PyTorch's mixed precision: a conv's weights are of type `wdtype` of its descriptor (the
 * schedule's low-precision copy, or the fp32 master of a frozen layer, which has none), its bias
 * and its weight and bias gradients are fp32 (the masters' .grad); BN's per-channel operands
 * (gamma, beta, stats, running stats, their gradients) are fp32, and so are the loss's objmap and
 * positives and the decoded boxes; `sums` and the loss's terms are double. The optimizer ops run
 * on the fp32 masters. Buffers are typed after the fp32 path (float *); under another type they
 * hold that type (kernels/yp_elem_math.h: sizes, conversions). `elems` of the table says which
 * types its activation ops run; an op refuses a type it lacks: -1, and last_error names the op
 * and the type (the CPU runs YP_ELEM_F32 only). YP_ELEM_F32 is 0, so a zero-initialised
 * descriptor is fp32 throughout.
 *
 * Gradient outputs take `beta`: 0 overwrites, 1 adds to what is there (an activation read by
 * several consumers accumulates its gradient; weight gradients accumulate over micro-batches).
 * Scratch (reordered weights, the library's scratchpad, one image of an accumulated gradient) is
 * passed in by the caller from the plan's workspace tensors: conv2d_scratch says how much; no op
 * allocates tensor memory.
 * Every entry returns 0, or -1 with the reason in the backend's last_error. */
#ifndef YP_OPS_H
#define YP_OPS_H

#include <stdint.h>

typedef struct yp_backend yp_backend; /* an instance (yp_backend.h) */

/* The element type of an op's tensor operands (see "Element type" above). */
typedef enum { YP_ELEM_F32, YP_ELEM_F16, YP_ELEM_BF16, YP_ELEM_COUNT } yp_elem;

#ifdef __cplusplus
extern "C" {
#endif
/* "f32", "f16", "bf16"; "?" for anything else. Static strings. */
const char *yp_elem_name(yp_elem t);
#ifdef __cplusplus
}
#endif

typedef struct {
    int64_t n, h, w, c; /* NHWC extents */
} yp_dims;

typedef struct {
    yp_dims in, out;    /* out.h = (in.h + 2 ph - kh) / sh + 1, out.w likewise, out.c = c_out */
    int kh, kw, sh, sw, ph, pw, groups; /* kernel, stride, padding per axis (height, width) */
    yp_elem dtype;  /* of x, y, dx, dy */
    yp_elem wdtype; /* of w (dtype, or F32 for fp32 weights under AMP); bias, dw, dbias are F32 */
} yp_conv_desc;

/* Taps of d's kernel (kh * kw): 1 for a pointwise conv, whose weights are a plain matrix. */
static inline int64_t yp_conv_taps(const yp_conv_desc *d) { return (int64_t)d->kh * d->kw; }

typedef struct {
    yp_dims dims;
    float eps, momentum; /* running = (1 - momentum) * running + momentum * batch statistic */
    yp_elem dtype;       /* of x, y, dx, dy */
} yp_bn_desc;

/* The hyperparameters of one optimizer update of one parameter tensor (PyTorch's names). */
typedef struct {
    float lr;
    float momentum;     /* SGD momentum; Adam's beta1 */
    float beta2, eps;   /* Adam */
    float weight_decay; /* this tensor's (0 where its parameter group does not decay) */
    int decoupled;      /* AdamW: weight decay applied to w, not added to the gradient */
    int64_t step;       /* Adam's bias correction: the update's number, from 1 */
    float grad_scale;   /* the raw gradient is multiplied by this first (clipping, accumulation, loss scale) */
    float ema_decay;    /* sgd_ema_step's EMA decay d */
} yp_optim_hyp;

typedef struct {
    yp_dims in, out;
    int k, s, p;
    yp_elem dtype;
} yp_pool_desc;

/* Zero padding: out = (in.n, in.h + top + bottom, in.w + left + right, in.c). */
typedef struct {
    yp_dims in;
    int left, right, top, bottom; /* each >= 0 */
    yp_elem dtype;
} yp_pad_desc;

/* Pixel blocks to channels: the fine map `fine` (n, h, w, c) and the coarse map (n, h/gain,
 * w/gain, gain*gain*c) hold the same values. Coarse pixel (oy, ox) holds gain*gain channel blocks
 * of c; block b is fine pixel (oy*gain + sy, ox*gain + sx) with
 *   YP_S2D_COL_MAJOR  b = sx*gain + sy: Focus (gain 2), PyTorch's
 *                     cat(x[..., ::2, ::2], x[..., 1::2, ::2], x[..., ::2, 1::2], x[..., 1::2, 1::2]);
 *   YP_S2D_ROW_MAJOR  b = sy*gain + sx: YOLOv5's Contract (view, permute(0, 3, 5, 1, 2, 4)), whose
 *                     inverse is its Expand. */
typedef enum { YP_S2D_COL_MAJOR, YP_S2D_ROW_MAJOR, YP_S2D_ORDER_COUNT } yp_s2d_order;
typedef struct {
    yp_dims fine; /* the fine map; h and w multiples of gain */
    int gain;     /* >= 1 */
    int order;    /* yp_s2d_order */
} yp_s2d_desc;

/* One parameter tensor of a multi-tensor optimizer update (optim_multi). */
typedef struct {
    float *w, *grad, *m;     /* the weight, its gradient and SGD's momentum (Adam's first moment) */
    float *v;                /* Adam's second moment; unused by SGD */
    float *ema;              /* its EMA, or NULL: none */
    int64_t n;
    float lr, weight_decay;  /* this tensor's parameter group's */
} yp_optim_tensor;

/* The betas of a backward entry with two kinds of gradient outputs: `dx` for the input's
 * gradient, `w` for the parameters' (weight and bias) gradients. */
typedef struct {
    float dx, w;
} yp_betas;

/* ---- the loss (loss_level) ----
 * YOLOv5's training loss (utils/loss.py ComputeLoss) over Detect's outputs, one level per call.
 * Target assignment (build_targets) reads only the labels, anchors and grid sizes, so it runs on
 * the host (executor/yp_loss.h) and hands each level's positives to loss_level; everything that
 * reads the predictions is the backend's. */
#define YP_LOSS_MAX_LEVELS 5  /* = YP_MAX_LEVELS of yp_graph.h (asserted in executor/loss_targets.c) */
#define YP_LOSS_MAX_ANCHORS 8 /* = YP_MAX_ANCHORS of yp_graph.h (asserted there too) */

/* The loss's hyperparameters (executor/yp_loss.h fills them as train.py does). */
typedef struct {
    int nc, na, nl;                                            /* classes, anchors per level, levels */
    float anchors[YP_LOSS_MAX_LEVELS][YP_LOSS_MAX_ANCHORS][2]; /* pixels (w, h), as yp_graph.anchors */
    int strides[YP_LOSS_MAX_LEVELS];                           /* pixels per grid cell, per level */
    float anchor_t;                                            /* hyp anchor_t (4.0; target assignment only) */
    float box, obj, cls;              /* gains as applied, i.e. after train.py's scaling */
    float balance[YP_LOSS_MAX_LEVELS]; /* objectness weight per level: 4.0, 1.0, 0.4 for 3 levels */
    float label_smoothing;            /* class targets 1 - eps/2 and eps/2 (0 -> 1 and 0) */
} yp_loss_cfg;

/* One evaluation of the loss: the hyperparameters, the batch and every level's grid. */
typedef struct {
    yp_loss_cfg cfg;
    int64_t batch;
    int64_t grid_h[YP_LOSS_MAX_LEVELS], grid_w[YP_LOSS_MAX_LEVELS];
    yp_elem dtype; /* of the predictions and their gradients */
    float grad_scale; /* AMP's loss scale S (GradScaler): dpred is d(S x total)/d(pred); 0 or 1: none.
                       * Applied by yp_loss_compute through the gains, which only the gradient reads
                       * (exact for GradScaler's powers of two); the terms and out stay unscaled */
} yp_loss_desc;

/* One positive of one level, as build_targets makes it: 9 four-byte fields, 36 bytes. */
typedef struct {
    int32_t b, a, gj, gi; /* image, anchor, cell row and column (clamped into the grid) */
    int32_t cls;          /* class index */
    float tbox[4];        /* target x, y relative to the cell (-0.5..1.5), w, h; grid units */
} yp_loss_target;

/* One level's loss before the gains, double (the sums behind each mean are kept in double). */
typedef struct {
    double box; /* mean over the level's positives of 1 - CIoU; 0 without positives */
    double obj; /* balance[level] x the mean objectness BCE over its batch*h*w*na (image, cell, anchor)s */
    double cls; /* mean class BCE over positives x nc; 0 without positives or when nc == 1 */
} yp_loss_terms;

/* What the evaluation decode needs to know of YOLOv5's Detect (detect_decode). */
#define YP_DECODE_MAX_LEVELS 5  /* = YP_MAX_LEVELS of graph/yp_graph.h (asserted in executor/eval.c) */
#define YP_DECODE_MAX_ANCHORS 8 /* = YP_MAX_ANCHORS of graph/yp_graph.h */
typedef struct {
    int64_t n;                   /* images */
    int nl, na, nc;              /* levels, anchors per level, classes: each cell has na*(nc+5) channels */
    int64_t h[YP_DECODE_MAX_LEVELS], w[YP_DECODE_MAX_LEVELS];       /* level l's grid */
    float stride[YP_DECODE_MAX_LEVELS];                              /* level l's pixels per cell */
    float anchors[YP_DECODE_MAX_LEVELS][YP_DECODE_MAX_ANCHORS][2];   /* pixels (w, h), as yp_graph's */
    yp_elem dtype;               /* of x; y is fp32 whatever it is (box coordinates in pixels) */
} yp_decode_desc;

/* Attention (the core of YOLOv5's TransformerLayer, C3TR): q, k, v and y are NHWC `dims`; per
 * image and head h (channels h*dh .. h*dh+dh-1, dh = c/heads) the L = h*w pixels, row-major, are
 * the tokens: P_h = softmax(q_h k_h^T / sqrt(dh)) (L x L), y_h = P_h v_h. P of every image and
 * head is (n, heads, L, L), n*heads*L*L floats (yp_attn_probs_floats, graph/yp_schedule.h). */
typedef struct {
    yp_dims dims;
    int heads; /* divides dims.c */
    yp_elem dtype;
} yp_attn_desc;

/* The stages a conv's scratch is asked for: forward (also recompute and evaluation) and backward
 * (backward-data and backward-weights, run one after the other in one step). */
typedef enum { YP_CONV_FORWARD, YP_CONV_BACKWARD } yp_conv_stage;

/* The bit of element type t in yp_ops.elems. */
#define YP_ELEM_BIT(t) (1u << (unsigned)(t))

typedef struct yp_ops {
    /* The element types the activation ops of this table run: YP_ELEM_BIT of each (the CPU:
     * F32 only; CUDA: F32, F16, BF16). A plan whose activations are of another type cannot run
     * on the backend (the executor refuses it before allocating). */
    unsigned elems;

    /* y[i] = x[i] rounded to type `to`, from x of type `from` (any pair of F32, F16, BF16:
     * round to nearest even, kernels/yp_elem_math.h); x and y distinct buffers. The executor
     * refreshes the low-precision weight copies with it after each update. */
    int (*cast)(yp_backend *be, yp_elem from, const float *x, yp_elem to, float *y, int64_t n);

    /* y[i] = x[i] * sigmoid(x[i]); x and y may be the same buffer (in place). */
    int (*silu_forward)(yp_backend *be, yp_elem dt, const float *x, float *y, int64_t n);
    /* dx[i] = dy[i] * s * (1 + x[i] * (1 - s)), s = sigmoid(x[i]); dx may alias dy. */
    int (*silu_backward)(yp_backend *be, yp_elem dt, const float *x, const float *dy, float *dx, int64_t n);
    /* The other activations (PyTorch 1.13's formulas, kernels/yp_act_math.h); x and y may be one
     * buffer, and so may dy and dx when beta is 0 (dx = beta*dx + the gradient).
     * ReLU: y = max(x, 0); its backward reads the output y, as autograd saves it: dx += dy where y > 0. */
    int (*relu_forward)(yp_backend *be, yp_elem dt, const float *x, float *y, int64_t n);
    int (*relu_backward)(yp_backend *be, yp_elem dt, const float *y, const float *dy, float *dx, float beta,
                         int64_t n);
    /* LeakyReLU: y = x > 0 ? x : slope*x; backward from the input x. */
    int (*leaky_relu_forward)(yp_backend *be, yp_elem dt, float slope, const float *x, float *y, int64_t n);
    int (*leaky_relu_backward)(yp_backend *be, yp_elem dt, float slope, const float *x, const float *dy, float *dx,
                               float beta, int64_t n);
    /* Hardswish: y = x * clamp(x + 3, 0, 6) / 6; backward from the input x (dy from x = 3 on). */
    int (*hardswish_forward)(yp_backend *be, yp_elem dt, const float *x, float *y, int64_t n);
    int (*hardswish_backward)(yp_backend *be, yp_elem dt, const float *x, const float *dy, float *dx, float beta,
                              int64_t n);

    /* The scratch the conv entries below need for d at `stage`, in floats, in two parts that a
     * planner sizes separately: `per_image` grows with the image (passed as `ws`), `fixed` does not
     * (passed as `wt`). A pure query: it builds nothing that stays (it may build and drop what the
     * library needs to answer, or read what conv2d_prepare already built) and depends only on d,
     * has_bias, stage and the instance (on the CPU its thread count), never on the caller's
     * thread settings. The scratch passed in must be 64-byte aligned (arena tensors are). */
    int (*conv2d_scratch)(yp_backend *be, const yp_conv_desc *d, int has_bias, yp_conv_stage stage,
                          int64_t *per_image, int64_t *fixed);
    /* Optional: builds and keeps in the instance what the conv entries of d at `stage` run
     * (primitives, algorithm choices), so that the op calls build nothing; the executor calls it
     * for every conv of the schedule before the first step. Without it an op builds on first use.
     * conv2d_scratch answers the same before and after. Freed with the instance. */
    int (*conv2d_prepare)(yp_backend *be, const yp_conv_desc *d, int has_bias, yp_conv_stage stage);
    /* y = conv(x, w) + bias (bias may be NULL). ws, wt: the scratch conv2d_scratch asked for. */
    int (*conv2d_forward)(yp_backend *be, const yp_conv_desc *d, const float *x, const float *w, const float *bias,
                          float *y, float *ws, float *wt);
    /* dx = beta*dx + conv_transpose(dy, w). */
    int (*conv2d_backward_data)(yp_backend *be, const yp_conv_desc *d, const float *dy, const float *w, float *dx,
                                float beta, float *ws, float *wt);
    /* dw = beta*dw + dy (x) x; dbias = beta*dbias + sum(dy) (dbias may be NULL). */
    int (*conv2d_backward_weights)(yp_backend *be, const yp_conv_desc *d, const float *x, const float *dy, float *dw,
                                   float *dbias, float beta, float *ws, float *wt);
    /* Optional: both at once (dx or dw may be NULL: not wanted), sharing what the two passes can
     * (on the CPU, dy reordered once for both); dx with beta.dx, dw and dbias with beta.w. The
     * same results as the two entries. */
    int (*conv2d_backward)(yp_backend *be, const yp_conv_desc *d, const float *x, const float *dy, const float *w,
                           float *dx, float *dw, float *dbias, yp_betas beta, float *ws, float *wt);

    /* Training mode: batch statistics into stats = {mean[c], invstd[c]}, running stats updated
     * (running_var with the unbiased variance, as PyTorch), y = gamma*(x-mean)*invstd + beta
     * (y may be NULL: statistics only, for a fused bn_silu_apply to follow). */
    int (*bn_forward_train)(yp_backend *be, const yp_bn_desc *d, const float *x, const float *gamma,
                            const float *beta_, float *y, float *stats, float *running_mean, float *running_var);
    /* Eval mode: y = gamma*(x-running_mean)/sqrt(running_var+eps) + beta. */
    int (*bn_forward_eval)(yp_backend *be, const yp_bn_desc *d, const float *x, const float *gamma,
                           const float *beta_, float *y, const float *running_mean, const float *running_var);
    /* Recompute: y = gamma*(x-mean)*invstd + beta with saved stats (no statistics, no update). */
    int (*bn_apply)(yp_backend *be, const yp_bn_desc *d, const float *x, const float *gamma, const float *beta_,
                    const float *stats, float *y);
    /* Optional fusions of a BN apply with the SiLU after it, so that the BN output never goes
     * through memory (the executor uses them when nothing else reads that output):
     * y = silu(bn_apply(x)), and dx = silu'(bn_apply(x)) * dy (dx overwritten; may alias dy);
     * `sums` (2c doubles, may be NULL) receives what bn_backward's first pass would compute from
     * that dx -- sum(dx) and sum(dx*(x - mean)) per channel -- so that it can skip the pass. */
    int (*bn_silu_apply)(yp_backend *be, const yp_bn_desc *d, const float *x, const float *gamma,
                         const float *beta_, const float *stats, float *y);
    int (*bn_silu_backward)(yp_backend *be, const yp_bn_desc *d, const float *x, const float *gamma,
                            const float *beta_, const float *stats, const float *dy, float *dx, double *sums);
    /* dx = beta.dx*dx + BN backward (sums: from bn_silu_backward on this dy, or NULL);
     * dgamma/dbeta = beta.w*(old) + their gradients (either may be NULL: not wanted). */
    int (*bn_backward)(yp_backend *be, const yp_bn_desc *d, const float *x, const float *stats, const float *gamma,
                       const float *dy, const double *sums, float *dx, float *dgamma, float *dbeta, yp_betas beta);

    /* y = a + b; backward is dy added to each input's gradient (no entry needed). */
    int (*add_forward)(yp_backend *be, yp_elem dt, const float *a, const float *b, float *y, int64_t n);
    /* dx = beta*dx + dy (also used for add's backward). */
    int (*axpy_grad)(yp_backend *be, yp_elem dt, const float *dy, float *dx, float beta, int64_t n);

    /* Channel concat of k NHWC inputs of the same n,h,w and channels cs[i]. */
    int (*concat_forward)(yp_backend *be, yp_elem dt, int k, const float *const *xs, const int64_t *cs, yp_dims out,
                          float *y);
    /* dxs[i] = beta[i]*dxs[i] + channel slice i of dy (dxs[i] may be NULL: no gradient wanted). */
    int (*concat_backward)(yp_backend *be, yp_elem dt, int k, float *const *dxs, const int64_t *cs, yp_dims out,
                           const float *dy, const float *betas);

    /* Nearest-neighbour upsampling by an integer scale. */
    int (*upsample_forward)(yp_backend *be, yp_elem dt, yp_dims in, int scale, const float *x, float *y);
    int (*upsample_backward)(yp_backend *be, yp_elem dt, yp_dims in, int scale, const float *dy, float *dx,
                             float beta);

    /* Max pooling (padding is -inf). Backward recomputes the argmax from x (first maximum in
     * window order, as PyTorch) and routes dy to it. */
    int (*maxpool_forward)(yp_backend *be, const yp_pool_desc *d, const float *x, float *y);
    int (*maxpool_backward)(yp_backend *be, const yp_pool_desc *d, const float *x, const float *dy, float *dx,
                            float beta);

    /* Attention (yp_attn_desc): writes y and probs (P, n*heads*L*L floats: the tensor the
     * backward reads, or the caller's workspace when it will not). */
    int (*attention_forward)(yp_backend *be, const yp_attn_desc *d, const float *q, const float *k, const float *v,
                             float *y, float *probs);
    /* dq, dk, dv = betas[0..2] * (old) + their gradients (betas: a host array, as concat's; each
     * gradient may be NULL: not wanted; two may be one buffer when the same value is two inputs,
     * the later beta 1). probs: the forward's P, or NULL: computed again from q and k into ws.
     * ws: n*heads*L*L floats for dP, twice that when probs is NULL. */
    int (*attention_backward)(yp_backend *be, const yp_attn_desc *d, const float *q, const float *k, const float *v,
                              const float *probs, const float *dy, float *dq, float *dk, float *dv,
                              const float *betas, float *ws);

    /* Pixel blocks to channels and back (yp_s2d_desc: Focus, YOLOv5's Contract and Expand):
     * space_to_depth: coarse = beta*coarse + the blocks of fine; depth_to_space: fine = beta*fine
     * + the channels of coarse spread back into blocks (each is the other's inverse permutation,
     * so each is the other's backward). beta 0 overwrites without reading; source and destination
     * must be distinct buffers. d->fine.h and d->fine.w must be multiples of d->gain. */
    int (*space_to_depth)(yp_backend *be, yp_elem dt, const yp_s2d_desc *d, const float *fine, float *coarse,
                          float beta);
    int (*depth_to_space)(yp_backend *be, yp_elem dt, const yp_s2d_desc *d, const float *coarse, float *fine,
                          float beta);

    /* nn.ZeroPad2d((left, right, top, bottom)): x (d->in) inside a border of zeros; backward is
     * dx = beta*dx + dy's interior (the border's gradient goes nowhere). */
    int (*zero_pad_forward)(yp_backend *be, const yp_pad_desc *d, const float *x, float *y);
    int (*zero_pad_backward)(yp_backend *be, const yp_pad_desc *d, const float *dy, float *dx, float beta);

    /* SGD (Nesterov, PyTorch semantics) on one parameter tensor: g = grad*scale + wd*w;
     * m = momentum*m + g; w -= lr * (g + momentum*m). Reads lr, momentum, weight_decay, grad_scale. */
    int (*sgd_step)(yp_backend *be, yp_elem dt, float *w, const float *grad, float *m, int64_t n,
                    const yp_optim_hyp *h);
    /* Adam / AdamW (h->decoupled) with bias correction at h->step (1-based); beta1 = h->momentum. */
    int (*adam_step)(yp_backend *be, yp_elem dt, float *w, const float *grad, float *m, float *v, int64_t n,
                     const yp_optim_hyp *h);
    /* ema = d*ema + (1-d)*w. */
    int (*ema_update)(yp_backend *be, yp_elem dt, float *ema, const float *w, int64_t n, float d);
    /* Optional: sgd_step, then grad = 0, then (ema not NULL) ema_update with the new w and decay
     * h->ema_decay, in one pass over the tensor (the same results as the three). */
    int (*sgd_ema_step)(yp_backend *be, yp_elem dt, float *w, float *grad, float *m, float *ema, int64_t n,
                        const yp_optim_hyp *h);
    /* Optional: the whole update of k parameter tensors in as few launches as the device allows
     * (a multi-tensor apply): for each ts[j], the step of sgd_step (adam 0) or adam_step (adam 1;
     * h->decoupled: AdamW) with h but ts[j]'s lr and weight_decay, then its gradient zeroed, then
     * (ema not NULL) ema_update with the new w and decay h->ema_decay: the same results as those
     * entries one tensor at a time. ts is a host array of k >= 0 entries (device pointers). */
    int (*optim_multi)(yp_backend *be, yp_elem dt, int adam, int k, const yp_optim_tensor *ts, const yp_optim_hyp *h);
    /* *out = sum of x[i]^2, accumulated in double (for gradient-norm clipping). */
    int (*sum_squares)(yp_backend *be, yp_elem dt, const float *x, int64_t n, double *out);
    /* Optional: *out = s_0 + s_1 + ... + s_{k-1} added in that order from 0, s_j the sum_squares of
     * xs[j] (ns[j] elements): the gradient norm over every gradient tensor in one entry, so that
     * a device backend keeps the per-tensor sums on the device and waits once, not once per
     * tensor. xs and ns are host arrays of k >= 0 entries (k == 0: *out = 0); the xs[j] device
     * memory. The same result as the k sum_squares calls added up on the host in that order. */
    int (*sum_squares_multi)(yp_backend *be, yp_elem dt, int k, const float *const *xs, const int64_t *ns,
                             double *out);

    /* The loss of Detect level `level` (0 <= level < d->cfg.nl) and its gradient: YOLOv5's
     * ComputeLoss on that level's share, in its semantics at HEAD (cls_pw = obj_pw = 1, no focal
     * loss, no sort_obj_iou):
     *   pred    the level's predictions (d->batch, d->grid_h[level], d->grid_w[level],
     *           na*(nc+5)) NHWC as Detect writes them (see Layout: fields x, y, w, h, objectness,
     *           nc class logits, raw); read only;
     *   pos     its n_pos positives (n_pos >= 0) in build_targets order, which matters: where
     *           several share an (image, anchor, cell), the last one's CIoU is the objectness
     *           target. Each is checked to lie inside the level (else -1);
     *   objmap  d->batch*h*w*na floats of work (the objectness targets, cell-major), clobbered;
     *   dpred   overwritten with d(total)/d(pred), total = (lbox + lobj + lcls) * batch summed over
     *           the levels (gains, balance and batch from d), as autograd computes it for YOLOv5:
     *           the objectness targets and CIoU's alpha are constants; NULL: no gradient (the
     *           evaluation case);
     *   terms   this level's terms (yp_loss_terms); the caller adds the levels up and applies the
     *           gains: lbox = box gain x sum of box, lobj = obj gain x sum of obj, lcls = cls gain
     *           x sum of cls (0 when nc == 1), total = (lbox + lobj + lcls) * batch.
     * Box: predicted (2s0 - 0.5, 2s1 - 0.5, (2s2)^2 aw, (2s3)^2 ah) with s = sigmoid of the box
     * logits and (aw, ah) the anchor over the stride; CIoU against tbox (eps 1e-7); objectness
     * target = CIoU clamped at 0; BCE-with-logits for objectness and classes.
     * One level per call because the plan's loss:assign holds one level's positives
     * (yp_loss_assign_floats), so the caller uploads the next level's after this call.
     * `terms` is host memory, written before the entry returns (as sum_squares' out): a device
     * backend reduces on the device and copies three doubles back, a wait that costs nothing
     * extra here because the caller's next upload into loss:assign (mem_copy) waits for this call
     * anyway; and the terms stay double without a planned tensor of doubles (loss:value is four
     * fp32). pred, pos, objmap and dpred are device memory. */
    int (*loss_level)(yp_backend *be, const yp_loss_desc *d, int level, const float *pred, const yp_loss_target *pos,
                      int64_t n_pos, float *objmap, float *dpred, yp_loss_terms *terms);

    /* Evaluation: Detect's raw outputs decoded into boxes, what YOLOv5's Detect returns in eval
     * mode (models/yolo.py) and NMS reads. x[l] is level l's output (n, h[l], w[l], na*(nc+5)),
     * the layout above; y is (n, R, nc+5) with R = sum over l of na*h[l]*w[l]: per image the
     * levels in order, within a level anchor-major, then grid row gy, then column gx (PyTorch's
     * view(n, na*h*w, nc+5) of the (n, na, h, w, nc+5) tensor). With s = sigmoid(raw) per field:
     * box centre (2s - 0.5 + gx, 2s - 0.5 + gy) * stride[l], box size (2s)^2 * the anchor's (w, h)
     * in pixels, objectness and class scores s. */
    int (*detect_decode)(yp_backend *be, const yp_decode_desc *d, const float *const *x, float *y);
} yp_ops;

#endif
