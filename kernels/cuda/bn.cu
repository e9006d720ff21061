// bn.cu - BatchNorm2d on the GPU (NHWC; x, y, dx, dy of d->dtype: fp32, fp16 or bf16; per-channel
// operands fp32, sums double), with the CPU backend's semantics (kernels/cpu/bn.c) and its
// per-channel formulas, from the shared kernels/yp_bn_math.h:
//   stats = {mean[c], invstd[c]} (fp32), invstd = 1/sqrt(biased var + eps); running_mean and
//   running_var = (1 - momentum)*old + momentum*batch value in double, running_var with the
//   unbiased variance; the normalisation folded per channel into y = fma(x, a, b) with
//   a = gamma*invstd and b = beta - mean*a computed in double from the saved fp32 stats (so a
//   recompute, bn_apply or bn_silu_apply, reproduces the training output exactly); bn_backward
//   dx = k1*dy + k2*(x - mean) + k3 with k1 = gamma*invstd, k2 = -k1*invstd^2*sum(dy*(x-mean))/N,
//   k3 = -k1*sum(dy)/N; dgamma = sum(dy*(x-mean))*invstd, dbeta = sum(dy).
// The per-channel sums are in double: the forward's over x - x[row 0] (shifted data, no
// cancellation when |mean| is large next to the spread), as the CPU does.
//
// Element types: each kernel is a template over the storage type T of x, y, dx, dy (float, __half,
// __nv_bfloat16; YP_CUDA_BY_ELEM picks it), which it reads and writes through yp_ld / yp_st
// (kernels/yp_elem_math.h); everything between the load and the store is the fp32/double
// arithmetic above, so the fp32 kernels are these templates instantiated for float and a
// low-precision output is the fp32 result rounded once (PyTorch's fp16/bf16 BN computes in fp32
// the same way). The one place the rounding shows up in the arithmetic is bn_silu_backward's
// sums: they are taken over dx as stored, so that bn_backward given them computes what its own
// first pass over that stored dx would.
//
// The ops take no scratch (yp_ops.h), so a reduction over the n*h*w rows of a channel cannot
// leave partial sums in memory between blocks: each block of kCh x kRows threads owns kCh
// channels and all their rows (one block per kCh channels), reduces them in shared memory in a
// fixed tree (deterministic), and then does what needs the sums itself (statistics and the
// running update; dx of bn_backward). That bounds those kernels' parallelism at c/kCh blocks; the
// passes that need no reduction (every apply, the SiLU backward without sums, bn_backward given
// sums) run over all the rows in parallel.
#include <cuda_runtime.h>

#include "launch.cuh"
#include "yp_bn_math.h"
#include "yp_cuda.h"
#include "yp_index_math.h"  // yp_acc

using yp_cuda::check_dims;
using yp_cuda::check_elem;
using yp_cuda::check_ptrs;
using yp_cuda::grid_for;
using yp_cuda::kBlockSize;

// A reduction block: kCh channels (threadIdx.x; a warp reads 4 rows of 8 channels, 32 bytes
// each in fp32: whole sectors; 16 bytes in fp16/bf16, half sectors, which moves no more sectors
// than fp32 does) by kRows row lanes (threadIdx.y).
static const int kCh = 8;
static const int kRows = 64;

// ----------------------------------------------------------------------------
// device helpers

static __device__ __forceinline__ float silu_of(float v) {
    return v / (1.0f + expf(-v));
}

static __device__ __forceinline__ float silu_grad_of(float v, float dy) {
    float s = 1.0f / (1.0f + expf(-v));
    return dy * s * (1.0f + v * (1.0f - s));
}

// Stores v at p (rounded to T) and returns the value stored: v itself for float.
template <typename T>
static __device__ __forceinline__ float store_rounded(T *p, float v) {
    T t;
    yp_st(&t, v);
    *p = t;
    return yp_ld(&t);
}

// Sums s1, s2 over the kRows threads of the block that share threadIdx.x, in a fixed tree; the
// totals are returned to every thread.
static __device__ void block_reduce2(double *s1, double *s2) {
    __shared__ double sh1[kRows][kCh], sh2[kRows][kCh];
    const int tx = threadIdx.x, ty = threadIdx.y;
    sh1[ty][tx] = *s1;
    sh2[ty][tx] = *s2;
    __syncthreads();
    for (int h = kRows / 2; h > 0; h >>= 1) {
        if (ty < h) {
            sh1[ty][tx] += sh1[ty + h][tx];
            sh2[ty][tx] += sh2[ty + h][tx];
        }
        __syncthreads();
    }
    *s1 = sh1[0][tx];
    *s2 = sh2[0][tx];
}

// ----------------------------------------------------------------------------
// kernels

// Training statistics: one block per kCh channels, all rows.
template <typename T>
static __global__ void bn_stats_kernel(const T *x, int64_t rows, int64_t c, float eps, float momentum,
                                       float *stats, float *running_mean, float *running_var) {
    const int64_t ch = (int64_t)blockIdx.x * kCh + threadIdx.x;
    const bool live = ch < c;
    const float k = live ? yp_ld(x + ch) : 0.0f;  // the shift: row 0's value
    double s1 = 0.0, s2 = 0.0;
    if (live)
        for (int64_t r = threadIdx.y; r < rows; r += kRows) {
            float v = yp_ld(x + r * c + ch) - k;
            s1 += v;
            s2 += (double)v * v;
        }
    block_reduce2(&s1, &s2);
    if (live && threadIdx.y == 0)
        yp_bn_stats(s1, s2, k, rows, eps, momentum, &stats[ch], &stats[c + ch], &running_mean[ch],
                    &running_var[ch]);
}

// y = fma(x, a, b) (then SiLU when `silu`) with a, b folded from mean and the second per-channel
// array: invstd, or (is_var) the variance, invstd = 1/sqrt(var + eps). y may be x.
template <typename T>
static __global__ void bn_apply_kernel(const T *x, const float *gamma, const float *beta_, const float *mean,
                                       const float *second, int is_var, float eps, int silu, T *y, int64_t c,
                                       int64_t total) {
    int64_t stride = (int64_t)blockDim.x * gridDim.x;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < total; i += stride) {
        int64_t ch = i % c;
        double is = is_var ? 1.0 / sqrt((double)second[ch] + (double)eps) : (double)second[ch];
        float a, b;
        yp_bn_fold(gamma[ch], beta_[ch], (double)mean[ch], is, &a, &b);
        float v = fmaf(yp_ld(x + i), a, b);
        yp_st(y + i, silu ? silu_of(v) : v);
    }
}

// dx = silu'(bn_apply(x)) * dy, elementwise (dx may be dy).
template <typename T>
static __global__ void bn_silu_grad_kernel(const T *x, const float *gamma, const float *beta_, const float *stats,
                                           const T *dy, T *dx, int64_t c, int64_t total) {
    int64_t stride = (int64_t)blockDim.x * gridDim.x;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < total; i += stride) {
        int64_t ch = i % c;
        float a, b;
        yp_bn_fold(gamma[ch], beta_[ch], (double)stats[ch], (double)stats[c + ch], &a, &b);
        yp_st(dx + i, silu_grad_of(fmaf(yp_ld(x + i), a, b), yp_ld(dy + i)));
    }
}

// The same, with bn_backward's sums of that dx: sums = {sum(dx)[c], sum(dx*(x - mean))[c]}, over
// dx as stored (rounded to T), which is what bn_backward's own pass would read.
template <typename T>
static __global__ void bn_silu_grad_sums_kernel(const T *x, const float *gamma, const float *beta_,
                                                const float *stats, const T *dy, T *dx, double *sums, int64_t rows,
                                                int64_t c) {
    const int64_t ch = (int64_t)blockIdx.x * kCh + threadIdx.x;
    const bool live = ch < c;
    double s1 = 0.0, s2 = 0.0;
    if (live) {
        const float mean = stats[ch];
        float a, b;
        yp_bn_fold(gamma[ch], beta_[ch], (double)mean, (double)stats[c + ch], &a, &b);
        for (int64_t r = threadIdx.y; r < rows; r += kRows) {
            const int64_t i = r * c + ch;
            float xv = yp_ld(x + i);
            float g = silu_grad_of(fmaf(xv, a, b), yp_ld(dy + i));
            g = store_rounded(dx + i, g);  // the sums are of dx as stored
            s1 += g;
            s2 += (double)g * (double)(xv - mean);
        }
    }
    block_reduce2(&s1, &s2);
    if (live && threadIdx.y == 0) {
        sums[ch] = s1;
        sums[c + ch] = s2;
    }
}

// BN backward. Without sums: one block (gridDim.y == 1) per kCh channels sums dy and
// dy*(x - mean) over all rows, then writes dgamma/dbeta and dx. With sums, blockIdx.y splits
// the rows too (no reduction); its row 0 of blocks writes dgamma/dbeta.
template <typename T>
static __global__ void bn_backward_kernel(const T *x, const float *stats, const float *gamma, const T *dy,
                                          const double *sums, T *dx, float *dgamma, float *dbeta, float beta_dx,
                                          float beta_w, int64_t rows, int64_t c) {
    const int64_t ch = (int64_t)blockIdx.x * kCh + threadIdx.x;
    const bool live = ch < c;
    const float mean = live ? stats[ch] : 0.0f;
    double sdy = 0.0, sdyx = 0.0;
    if (sums) {
        if (live)
            sdy = sums[ch], sdyx = sums[c + ch];
    } else {
        if (live)
            for (int64_t r = threadIdx.y; r < rows; r += kRows) {
                const int64_t i = r * c + ch;
                float g = yp_ld(dy + i);
                sdy += g;
                sdyx += (double)g * (double)(yp_ld(x + i) - mean);
            }
        block_reduce2(&sdy, &sdyx);
    }
    if (!live)
        return;
    // one thread per channel writes the parameter gradients
    const bool writer = threadIdx.y == 0 && blockIdx.y == 0;
    float k1, k2, k3;
    yp_bn_backward_channel(gamma[ch], stats[c + ch], sdy, sdyx, rows, beta_w, &k1, &k2, &k3,
                           writer && dgamma ? &dgamma[ch] : nullptr, writer && dbeta ? &dbeta[ch] : nullptr);
    const int64_t step = (int64_t)kRows * gridDim.y;
    for (int64_t r = (int64_t)blockIdx.y * kRows + threadIdx.y; r < rows; r += step) {
        const int64_t i = r * c + ch;
        yp_st(dx + i, yp_acc(beta_dx, dx + i, yp_bn_dx(k1, k2, k3, yp_ld(dy + i), yp_ld(x + i), mean)));
    }
}

// ----------------------------------------------------------------------------
// launchers

static int bn_check(const char *op, const yp_bn_desc *d) {
    if (!d)
        return yp_cuda_fail("%s: NULL descriptor", op);
    if (check_elem(op, d->dtype) || check_dims(op, "input", d->dims))
        return -1;
    if (!(d->eps > 0.0f))
        return yp_cuda_fail("%s: eps %g must be > 0", op, (double)d->eps);
    return 0;
}

static int64_t bn_rows(const yp_bn_desc *d) {
    return d->dims.n * d->dims.h * d->dims.w;
}

// The reduction kernels' grid: one block per kCh channels (times `ysplit` row groups).
static dim3 channel_grid(int64_t c, unsigned ysplit) {
    return dim3((unsigned)((c + kCh - 1) / kCh), ysplit, 1);
}

static int launch_apply(const char *op, yp_cuda_backend *cb, const yp_bn_desc *d, const float *x,
                        const float *gamma, const float *beta_, const float *mean, const float *second, int is_var,
                        int silu, float *y) {
    const int64_t total = bn_rows(d) * d->dims.c;
    YP_CUDA_BY_ELEM(d->dtype, T,
                    bn_apply_kernel<T><<<grid_for(total), kBlockSize, 0, cb->stream>>>(
                        (const T *)x, gamma, beta_, mean, second, is_var, d->eps, silu, (T *)y, d->dims.c, total));
    return yp_cuda_check_launch(op);
}

extern "C" int yp_cuda_bn_forward_train(yp_backend *be, const yp_bn_desc *d, const float *x, const float *gamma,
                                        const float *beta_, float *y, float *stats, float *running_mean,
                                        float *running_var) {
    static const char op[] = "bn_forward_train";
    yp_cuda_backend *cb = yp_cuda_of(be);
    const void *p[] = {x, gamma, beta_, stats, running_mean, running_var};
    if (bn_check(op, d) || check_ptrs(op, 6, p))
        return -1;
    const int64_t rows = bn_rows(d), c = d->dims.c;
    if (rows < 2)
        return yp_cuda_fail("%s: training needs more than 1 value per channel (n*h*w = %lld)", op,
                            (long long)rows);
    if (yp_cuda_use(op, cb))
        return -1;
    YP_CUDA_BY_ELEM(d->dtype, T,
                    bn_stats_kernel<T><<<channel_grid(c, 1), dim3(kCh, kRows), 0, cb->stream>>>(
                        (const T *)x, rows, c, d->eps, d->momentum, stats, running_mean, running_var));
    if (yp_cuda_check_launch(op))
        return -1;
    // normalised with the statistics as saved (fp32), as bn_apply would
    return y ? launch_apply(op, cb, d, x, gamma, beta_, stats, stats + c, 0, 0, y) : 0;
}

extern "C" int yp_cuda_bn_forward_eval(yp_backend *be, const yp_bn_desc *d, const float *x, const float *gamma,
                                       const float *beta_, float *y, const float *running_mean,
                                       const float *running_var) {
    static const char op[] = "bn_forward_eval";
    yp_cuda_backend *cb = yp_cuda_of(be);
    const void *p[] = {x, gamma, beta_, y, running_mean, running_var};
    if (bn_check(op, d) || check_ptrs(op, 6, p) || yp_cuda_use(op, cb))
        return -1;
    return launch_apply(op, cb, d, x, gamma, beta_, running_mean, running_var, 1, 0, y);
}

extern "C" int yp_cuda_bn_apply(yp_backend *be, const yp_bn_desc *d, const float *x, const float *gamma,
                                const float *beta_, const float *stats, float *y) {
    static const char op[] = "bn_apply";
    yp_cuda_backend *cb = yp_cuda_of(be);
    const void *p[] = {x, gamma, beta_, stats, y};
    if (bn_check(op, d) || check_ptrs(op, 5, p) || yp_cuda_use(op, cb))
        return -1;
    return launch_apply(op, cb, d, x, gamma, beta_, stats, stats + d->dims.c, 0, 0, y);
}

extern "C" int yp_cuda_bn_silu_apply(yp_backend *be, const yp_bn_desc *d, const float *x, const float *gamma,
                                     const float *beta_, const float *stats, float *y) {
    static const char op[] = "bn_silu_apply";
    yp_cuda_backend *cb = yp_cuda_of(be);
    const void *p[] = {x, gamma, beta_, stats, y};
    if (bn_check(op, d) || check_ptrs(op, 5, p) || yp_cuda_use(op, cb))
        return -1;
    return launch_apply(op, cb, d, x, gamma, beta_, stats, stats + d->dims.c, 0, 1, y);
}

extern "C" int yp_cuda_bn_silu_backward(yp_backend *be, const yp_bn_desc *d, const float *x, const float *gamma,
                                        const float *beta_, const float *stats, const float *dy, float *dx,
                                        double *sums) {
    static const char op[] = "bn_silu_backward";
    yp_cuda_backend *cb = yp_cuda_of(be);
    const void *p[] = {x, gamma, beta_, stats, dy, dx};
    if (bn_check(op, d) || check_ptrs(op, 6, p) || yp_cuda_use(op, cb))
        return -1;
    const int64_t rows = bn_rows(d), c = d->dims.c, total = rows * c;
    if (sums) {
        YP_CUDA_BY_ELEM(d->dtype, T,
                        bn_silu_grad_sums_kernel<T><<<channel_grid(c, 1), dim3(kCh, kRows), 0, cb->stream>>>(
                            (const T *)x, gamma, beta_, stats, (const T *)dy, (T *)dx, sums, rows, c));
    } else {
        YP_CUDA_BY_ELEM(d->dtype, T,
                        bn_silu_grad_kernel<T><<<grid_for(total), kBlockSize, 0, cb->stream>>>(
                            (const T *)x, gamma, beta_, stats, (const T *)dy, (T *)dx, c, total));
    }
    return yp_cuda_check_launch(op);
}

extern "C" int yp_cuda_bn_backward(yp_backend *be, const yp_bn_desc *d, const float *x, const float *stats,
                                   const float *gamma, const float *dy, const double *sums, float *dx,
                                   float *dgamma, float *dbeta, yp_betas betas) {
    static const char op[] = "bn_backward";
    yp_cuda_backend *cb = yp_cuda_of(be);
    const void *p[] = {x, stats, gamma, dy, dx};
    if (bn_check(op, d) || check_ptrs(op, 5, p) || yp_cuda_use(op, cb))
        return -1;
    const int64_t rows = bn_rows(d), c = d->dims.c;
    unsigned ysplit = 1;
    if (sums) {  // no reduction: the rows split too, 16 row lanes' worth of rows per block at least
        int64_t groups = (rows + (int64_t)kRows * 16 - 1) / ((int64_t)kRows * 16);
        ysplit = (unsigned)(groups < 65535 ? groups : 65535);
    }
    YP_CUDA_BY_ELEM(d->dtype, T,
                    bn_backward_kernel<T><<<channel_grid(c, ysplit), dim3(kCh, kRows), 0, cb->stream>>>(
                        (const T *)x, stats, gamma, (const T *)dy, sums, (T *)dx, dgamma, dbeta, betas.dx, betas.w,
                        rows, c));
    return yp_cuda_check_launch(op);
}

extern "C" void yp_cuda_register_bn(yp_ops *o) {
    o->bn_forward_train = yp_cuda_bn_forward_train;
    o->bn_forward_eval = yp_cuda_bn_forward_eval;
    o->bn_apply = yp_cuda_bn_apply;
    o->bn_backward = yp_cuda_bn_backward;
    o->bn_silu_apply = yp_cuda_bn_silu_apply;
    o->bn_silu_backward = yp_cuda_bn_silu_backward;
}
