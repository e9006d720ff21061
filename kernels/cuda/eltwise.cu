// eltwise.cu - the data-movement ops on the GPU (NHWC): add, axpy_grad, channel concat, nearest
// upsampling, max pooling, space_to_depth and depth_to_space (Focus, Contract, Expand) and zero
// padding, forward and backward, with the CPU backend's semantics (kernels/cpu/eltwise.c, pool.c).
// Element types F32, F16 and BF16 (the op's dt, or the pool and pad descriptors' dtype), every
// operand of that type; anything else is refused (check_elem). One template per kernel, over the
// storage type: loads widen to fp32, sums and beta*dx are fp32, and each output element is
// rounded to the type once, when stored (copies move the stored bits). The F32 path is that
// template for float, the code it always ran.
// One thread per output element of each kernel, in grid-stride loops with 64-bit indices, each
// element computed by the shared host+device functions of kernels/yp_index_math.h (tested on the
// host against the CPU backend by test_kernels_index). Every backward is a gather (each thread
// owns one element of dx and sums what reaches it): no atomics, deterministic sums, added in the
// CPU's order, so with beta 0 or 1 the results are the CPU's bits (under F16/BF16: the CPU's fp32
// result on the same inputs, rounded to the type; tests/kernels/test_cuda_lowp.c).
#include <cuda_runtime.h>

#include "launch.cuh"
#include "yp_cuda.h"
#include "yp_index_math.h"

using yp_cuda::check_count;
using yp_cuda::check_dims;
using yp_cuda::check_elem;
using yp_cuda::check_ptrs;
using yp_cuda::grid_for;
using yp_cuda::kBlockSize;

// ----------------------------------------------------------------------------
// kernels: each a grid-stride loop over one element function of yp_index_math.h, a template over
// the storage type T (float, __half, __nv_bfloat16): every operand read through yp_ld and written
// through yp_st, the arithmetic in fp32 (for T = float the loads and stores are plain accesses).

template <typename T>
static __global__ void add_kernel(const T *a, const T *b, T *y, int64_t n) {
    GRID_STRIDE(i, n) yp_st(y + i, yp_ld(a + i) + yp_ld(b + i));
}

// dx may be dy (beta 0: a copy onto itself).
template <typename T>
static __global__ void axpy_kernel(const T *dy, T *dx, float beta, int64_t n) {
    GRID_STRIDE(i, n) yp_st(dx + i, yp_acc(beta, dx + i, yp_ld(dy + i)));
}

// One input of a concat: x (rows, c) into columns [off, off + c) of y (rows, ctot).
template <typename T>
static __global__ void concat_fwd_kernel(const T *x, int64_t c, T *y, int64_t ctot, int64_t off, int64_t n) {
    GRID_STRIDE(i, n) y[yp_concat_index(i, c, ctot, off)] = x[i];
}

template <typename T>
static __global__ void concat_bwd_kernel(T *dx, int64_t c, const T *dy, int64_t ctot, int64_t off, float beta,
                                         int64_t n) {
    GRID_STRIDE(i, n) yp_st(dx + i, yp_acc(beta, dx + i, yp_ld(dy + yp_concat_index(i, c, ctot, off))));
}

template <typename T>
static __global__ void upsample_fwd_kernel(const T *x, T *y, yp_dims in, int64_t s, int64_t total) {
    GRID_STRIDE(o, total) y[o] = x[yp_upsample_source(in, s, o)];
}

template <typename T>
static __global__ void upsample_bwd_kernel(const T *dy, T *dx, yp_dims in, int64_t s, float beta, int64_t total) {
    GRID_STRIDE(e, total) yp_st(dx + e, yp_upsample_grad(dy, dx, in, s, beta, e));
}

// The maximum is one of the inputs, so storing it in T is exact.
template <typename T>
static __global__ void maxpool_fwd_kernel(const T *x, T *y, yp_pool_desc d, int64_t total) {
    GRID_STRIDE(o, total) yp_st(y + o, yp_pool_forward_at(x, d, o));
}

template <typename T>
static __global__ void maxpool_bwd_kernel(const T *x, const T *dy, T *dx, yp_pool_desc d, float beta,
                                          int64_t total) {
    GRID_STRIDE(e, total) yp_st(dx + e, yp_pool_grad(x, dy, dx, d, beta, e));
}

// Pixel blocks to channels: each coarse element gathers its one fine element (space_to_depth),
// each fine element its one coarse element (depth_to_space).
template <typename T>
static __global__ void s2d_kernel(const T *fine, T *coarse, yp_s2d_desc d, float beta, int64_t total) {
    GRID_STRIDE(o, total) yp_st(coarse + o, yp_acc(beta, coarse + o, yp_ld(fine + yp_s2d_source(&d, o))));
}

template <typename T>
static __global__ void d2s_kernel(const T *coarse, T *fine, yp_s2d_desc d, float beta, int64_t total) {
    GRID_STRIDE(e, total) yp_st(fine + e, yp_acc(beta, fine + e, yp_ld(coarse + yp_s2d_target(&d, e))));
}

// Zero padding: each output element from its source (0 in the border); backward gathers each
// input element's one gradient.
template <typename T>
static __global__ void pad_fwd_kernel(const T *x, T *y, yp_pad_desc d, int64_t total) {
    GRID_STRIDE(o, total) {
        int64_t src = yp_pad_source(&d, o);
        yp_st(y + o, src < 0 ? 0.0f : yp_ld(x + src));
    }
}

template <typename T>
static __global__ void pad_bwd_kernel(const T *dy, T *dx, yp_pad_desc d, float beta, int64_t total) {
    GRID_STRIDE(e, total) yp_st(dx + e, yp_acc(beta, dx + e, yp_ld(dy + yp_pad_target(&d, e))));
}

// ----------------------------------------------------------------------------
// launchers

// Makes the device current and launches `total` elements' worth of a grid-stride kernel.
#define LAUNCH(op, cb, kernel, total, ...)                                            \
    do {                                                                              \
        if ((total) == 0)                                                             \
            return 0; /* a zero-block launch is an error in CUDA */                   \
        if (yp_cuda_use(op, cb))                                                      \
            return -1;                                                                \
        kernel<<<grid_for(total), kBlockSize, 0, (cb)->stream>>>(__VA_ARGS__);        \
        return yp_cuda_check_launch(op);                                              \
    } while (0)

static int64_t elems(yp_dims d) {
    return d.n * d.h * d.w * d.c;
}

extern "C" int yp_cuda_add_forward(yp_backend *be, yp_elem dt, const float *a, const float *b, float *y,
                                   int64_t n) {
    static const char op[] = "add_forward";
    const void *p[] = {a, b, y};
    if (check_elem(op, dt) || check_count(op, n) || (n > 0 && check_ptrs(op, 3, p)))
        return -1;
    YP_CUDA_BY_ELEM(dt, T, LAUNCH(op, yp_cuda_of(be), add_kernel<T>, n, (const T *)a, (const T *)b, (T *)y, n));
}

extern "C" int yp_cuda_axpy_grad(yp_backend *be, yp_elem dt, const float *dy, float *dx, float beta, int64_t n) {
    static const char op[] = "axpy_grad";
    const void *p[] = {dy, dx};
    if (check_elem(op, dt) || check_count(op, n) || (n > 0 && check_ptrs(op, 2, p)))
        return -1;
    YP_CUDA_BY_ELEM(dt, T, LAUNCH(op, yp_cuda_of(be), axpy_kernel<T>, n, (const T *)dy, (T *)dx, beta, n));
}

// 0 when the k channel counts are positive and add up to out.c, else -1.
static int concat_check(const char *op, int k, const int64_t *cs, yp_dims out) {
    if (k < 1 || !cs)
        return yp_cuda_fail("%s: %d inputs (need >= 1 and their channel counts)", op, k);
    if (check_dims(op, "output", out))
        return -1;
    int64_t total = 0;
    for (int i = 0; i < k; i++) {
        if (cs[i] < 1)
            return yp_cuda_fail("%s: input %d has %lld channels", op, i, (long long)cs[i]);
        total += cs[i];
    }
    if (total != out.c)
        return yp_cuda_fail("%s: input channels add up to %lld, output has %lld", op, (long long)total,
                            (long long)out.c);
    return 0;
}

// One launch per input (checked by the caller, the device made current), elements of type T.
template <typename T>
static int concat_fwd_launch(yp_cuda_backend *cb, const char *op, int k, const float *const *xs, const int64_t *cs,
                             yp_dims out, float *y) {
    const int64_t rows = out.n * out.h * out.w;
    int64_t off = 0;
    for (int i = 0; i < k; i++) {
        const int64_t n = rows * cs[i];
        concat_fwd_kernel<T><<<grid_for(n), kBlockSize, 0, cb->stream>>>((const T *)xs[i], cs[i], (T *)y, out.c,
                                                                         off, n);
        if (yp_cuda_check_launch(op))
            return -1;
        off += cs[i];
    }
    return 0;
}

template <typename T>
static int concat_bwd_launch(yp_cuda_backend *cb, const char *op, int k, float *const *dxs, const int64_t *cs,
                             yp_dims out, const float *dy, const float *betas) {
    const int64_t rows = out.n * out.h * out.w;
    int64_t off = 0;
    for (int i = 0; i < k; i++) {
        const int64_t n = rows * cs[i];
        if (dxs[i]) {
            concat_bwd_kernel<T><<<grid_for(n), kBlockSize, 0, cb->stream>>>((T *)dxs[i], cs[i], (const T *)dy,
                                                                             out.c, off, betas[i], n);
            if (yp_cuda_check_launch(op))
                return -1;
        }
        off += cs[i];
    }
    return 0;
}

// xs and cs are host arrays (of device pointers and channel counts): one launch per input.
extern "C" int yp_cuda_concat_forward(yp_backend *be, yp_elem dt, int k, const float *const *xs, const int64_t *cs,
                                      yp_dims out, float *y) {
    static const char op[] = "concat_forward";
    yp_cuda_backend *cb = yp_cuda_of(be);
    const void *p[] = {xs, y};
    if (check_elem(op, dt) || concat_check(op, k, cs, out) || check_ptrs(op, 2, p))
        return -1;
    for (int i = 0; i < k; i++)
        if (!xs[i])
            return yp_cuda_fail("%s: input %d is NULL", op, i);
    if (yp_cuda_use(op, cb))
        return -1;
    YP_CUDA_BY_ELEM(dt, T, return concat_fwd_launch<T>(cb, op, k, xs, cs, out, y));
}

// dxs, cs and betas are host arrays; a NULL dxs[i] is skipped.
extern "C" int yp_cuda_concat_backward(yp_backend *be, yp_elem dt, int k, float *const *dxs, const int64_t *cs,
                                       yp_dims out, const float *dy, const float *betas) {
    static const char op[] = "concat_backward";
    yp_cuda_backend *cb = yp_cuda_of(be);
    const void *p[] = {dxs, dy, betas};
    if (check_elem(op, dt) || concat_check(op, k, cs, out) || check_ptrs(op, 3, p))
        return -1;
    if (yp_cuda_use(op, cb))
        return -1;
    YP_CUDA_BY_ELEM(dt, T, return concat_bwd_launch<T>(cb, op, k, dxs, cs, out, dy, betas));
}

static int upsample_check(const char *op, yp_elem dt, yp_dims in, int scale, const void *a, const void *b) {
    const void *p[] = {a, b};
    if (check_elem(op, dt) || check_dims(op, "input", in) || check_ptrs(op, 2, p))
        return -1;
    if (scale < 1)
        return yp_cuda_fail("%s: scale %d must be >= 1", op, scale);
    return 0;
}

extern "C" int yp_cuda_upsample_forward(yp_backend *be, yp_elem dt, yp_dims in, int scale, const float *x,
                                        float *y) {
    static const char op[] = "upsample_forward";
    if (upsample_check(op, dt, in, scale, x, y))
        return -1;
    const int64_t total = elems(in) * scale * scale;
    YP_CUDA_BY_ELEM(dt, T,
                    LAUNCH(op, yp_cuda_of(be), upsample_fwd_kernel<T>, total, (const T *)x, (T *)y, in,
                           (int64_t)scale, total));
}

extern "C" int yp_cuda_upsample_backward(yp_backend *be, yp_elem dt, yp_dims in, int scale, const float *dy,
                                         float *dx, float beta) {
    static const char op[] = "upsample_backward";
    if (upsample_check(op, dt, in, scale, dy, dx))
        return -1;
    const int64_t total = elems(in);
    YP_CUDA_BY_ELEM(dt, T,
                    LAUNCH(op, yp_cuda_of(be), upsample_bwd_kernel<T>, total, (const T *)dy, (T *)dx, in,
                           (int64_t)scale, beta, total));
}

static int pool_check(const char *op, const yp_pool_desc *d) {
    if (!d)
        return yp_cuda_fail("%s: NULL descriptor", op);
    if (check_elem(op, d->dtype) || check_dims(op, "input", d->in) || check_dims(op, "output", d->out))
        return -1;
    if (d->k < 1 || d->s < 1 || d->p < 0 || d->p > d->k / 2)
        return yp_cuda_fail("%s: bad kernel %d / stride %d / padding %d (padding must be <= k/2)", op, d->k, d->s,
                            d->p);
    int64_t oh = (d->in.h + 2 * d->p - d->k) / d->s + 1, ow = (d->in.w + 2 * d->p - d->k) / d->s + 1;
    if (d->in.h + 2 * d->p < d->k || d->in.w + 2 * d->p < d->k || d->out.h != oh || d->out.w != ow ||
        d->out.n != d->in.n || d->out.c != d->in.c)
        return yp_cuda_fail("%s: output %lldx%lldx%lldx%lld does not follow from input %lldx%lldx%lldx%lld "
                            "with k %d s %d p %d",
                            op, (long long)d->out.n, (long long)d->out.h, (long long)d->out.w,
                            (long long)d->out.c, (long long)d->in.n, (long long)d->in.h, (long long)d->in.w,
                            (long long)d->in.c, d->k, d->s, d->p);
    return 0;
}

extern "C" int yp_cuda_maxpool_forward(yp_backend *be, const yp_pool_desc *d, const float *x, float *y) {
    static const char op[] = "maxpool_forward";
    const void *p[] = {x, y};
    if (pool_check(op, d) || check_ptrs(op, 2, p))
        return -1;
    const int64_t total = elems(d->out);
    YP_CUDA_BY_ELEM(d->dtype, T,
                    LAUNCH(op, yp_cuda_of(be), maxpool_fwd_kernel<T>, total, (const T *)x, (T *)y, *d, total));
}

extern "C" int yp_cuda_maxpool_backward(yp_backend *be, const yp_pool_desc *d, const float *x, const float *dy,
                                        float *dx, float beta) {
    static const char op[] = "maxpool_backward";
    const void *p[] = {x, dy, dx};
    if (pool_check(op, d) || check_ptrs(op, 3, p))
        return -1;
    const int64_t total = elems(d->in);
    YP_CUDA_BY_ELEM(d->dtype, T,
                    LAUNCH(op, yp_cuda_of(be), maxpool_bwd_kernel<T>, total, (const T *)x, (const T *)dy, (T *)dx,
                           *d, beta, total));
}

// The CPU backend's checks (kernels/cpu/eltwise.c): a descriptor the gain divides, two buffers.
static int s2d_check(const char *op, yp_elem dt, const yp_s2d_desc *d, const void *src, const void *dst) {
    const void *p[] = {src, dst};
    if (check_elem(op, dt))
        return -1;
    if (!d)
        return yp_cuda_fail("%s: NULL descriptor", op);
    if (check_dims(op, "fine map", d->fine) || check_ptrs(op, 2, p))
        return -1;
    if (d->gain < 1 || d->order < 0 || d->order >= YP_S2D_ORDER_COUNT)
        return yp_cuda_fail("%s: gain %d, order %d (need a gain >= 1 and a yp_s2d_order)", op, d->gain, d->order);
    if (d->fine.h % d->gain || d->fine.w % d->gain)
        return yp_cuda_fail("%s: fine map %lldx%lld: height and width must be multiples of the gain %d", op,
                            (long long)d->fine.h, (long long)d->fine.w, d->gain);
    if (src == dst)
        return yp_cuda_fail("%s: source and destination are one buffer; it cannot run in place", op);
    return 0;
}

extern "C" int yp_cuda_space_to_depth(yp_backend *be, yp_elem dt, const yp_s2d_desc *d, const float *fine,
                                      float *coarse, float beta) {
    static const char op[] = "space_to_depth";
    if (s2d_check(op, dt, d, fine, coarse))
        return -1;
    const int64_t total = elems(d->fine);
    YP_CUDA_BY_ELEM(dt, T,
                    LAUNCH(op, yp_cuda_of(be), s2d_kernel<T>, total, (const T *)fine, (T *)coarse, *d, beta,
                           total));
}

extern "C" int yp_cuda_depth_to_space(yp_backend *be, yp_elem dt, const yp_s2d_desc *d, const float *coarse,
                                      float *fine, float beta) {
    static const char op[] = "depth_to_space";
    if (s2d_check(op, dt, d, coarse, fine))
        return -1;
    const int64_t total = elems(d->fine);
    YP_CUDA_BY_ELEM(dt, T,
                    LAUNCH(op, yp_cuda_of(be), d2s_kernel<T>, total, (const T *)coarse, (T *)fine, *d, beta,
                           total));
}

static int pad_check(const char *op, const yp_pad_desc *d, const void *a, const void *b) {
    const void *p[] = {a, b};
    if (!d)
        return yp_cuda_fail("%s: NULL descriptor", op);
    if (check_elem(op, d->dtype) || check_dims(op, "input", d->in) || check_ptrs(op, 2, p))
        return -1;
    if (d->left < 0 || d->right < 0 || d->top < 0 || d->bottom < 0)
        return yp_cuda_fail("%s: negative padding (left %d, right %d, top %d, bottom %d)", op, d->left, d->right,
                            d->top, d->bottom);
    return 0;
}

extern "C" int yp_cuda_zero_pad_forward(yp_backend *be, const yp_pad_desc *d, const float *x, float *y) {
    static const char op[] = "zero_pad_forward";
    if (pad_check(op, d, x, y))
        return -1;
    const int64_t total = d->in.n * (d->in.h + d->top + d->bottom) * (d->in.w + d->left + d->right) * d->in.c;
    YP_CUDA_BY_ELEM(d->dtype, T,
                    LAUNCH(op, yp_cuda_of(be), pad_fwd_kernel<T>, total, (const T *)x, (T *)y, *d, total));
}

extern "C" int yp_cuda_zero_pad_backward(yp_backend *be, const yp_pad_desc *d, const float *dy, float *dx,
                                         float beta) {
    static const char op[] = "zero_pad_backward";
    if (pad_check(op, d, dy, dx))
        return -1;
    const int64_t total = elems(d->in);
    YP_CUDA_BY_ELEM(d->dtype, T,
                    LAUNCH(op, yp_cuda_of(be), pad_bwd_kernel<T>, total, (const T *)dy, (T *)dx, *d, beta,
                           total));
}

extern "C" void yp_cuda_register_eltwise(yp_ops *o) {
    o->add_forward = yp_cuda_add_forward;
    o->axpy_grad = yp_cuda_axpy_grad;
    o->concat_forward = yp_cuda_concat_forward;
    o->concat_backward = yp_cuda_concat_backward;
    o->upsample_forward = yp_cuda_upsample_forward;
    o->upsample_backward = yp_cuda_upsample_backward;
    o->maxpool_forward = yp_cuda_maxpool_forward;
    o->maxpool_backward = yp_cuda_maxpool_backward;
    o->space_to_depth = yp_cuda_space_to_depth;
    o->depth_to_space = yp_cuda_depth_to_space;
    o->zero_pad_forward = yp_cuda_zero_pad_forward;
    o->zero_pad_backward = yp_cuda_zero_pad_backward;
}
