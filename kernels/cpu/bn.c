/* bn.c - BatchNorm2d on the CPU (NHWC, fp32): training forward with batch statistics and the
 * running-stat update, eval forward, re-application with saved statistics, and backward.
 *
 * Per-channel sums are accumulated in double over all n*h*w rows, in blocks of CB channels so the
 * accumulators live on the stack (no op allocates); a channel block is one contiguous stretch of
 * every row, so for c <= CB each pass is a plain sequential sweep. The rows are split between the
 * OpenMP threads (static schedule: with a fixed thread count the sums add up in a fixed order). */
#include <math.h>
#include <stddef.h>

#include "yp_bn_math.h" /* the per-channel formulas, shared with the CUDA backend */
#include "yp_cpu.h"

enum { CB = 256 };
/* Rows per block of the sums (each thread takes whole blocks). */
enum { ROW_BLOCK = 128 };

static int64_t row_blocks(int64_t rows) { return (rows + ROW_BLOCK - 1) / ROW_BLOCK; }
/* The rows of block k: from its first, *nr of them. */
static int64_t block_rows(int64_t rows, int64_t k, int64_t *nr) {
    int64_t r0 = k * ROW_BLOCK;
    *nr = rows - r0 < ROW_BLOCK ? rows - r0 : ROW_BLOCK;
    return r0;
}

/* s1[j] += sum of g[j], s2[j] += sum of g[j]*(x[j] - mean[j]) over one row of n channels, through
 * float partial sums a1, a2 that the caller flushes into double every SUM_RUN rows: the row loop
 * vectorises in fp32, and 16-term fp32 sums lose nothing measurable before the double total. */
enum { SUM_RUN = 16 };
static inline void row_sums(const float *x, const float *g, const float *mean, int64_t n, float *a1, float *a2) {
    for (int64_t j = 0; j < n; j++) {
        float gv = g[j];
        a1[j] += gv;
        a2[j] = YP_AFFINE(gv, x[j] - mean[j], a2[j]);
    }
}

static inline void flush_sums(float *a1, float *a2, int64_t n, double *s1, double *s2) {
    for (int64_t j = 0; j < n; j++) {
        s1[j] += a1[j], s2[j] += a2[j];
        a1[j] = a2[j] = 0.0f;
    }
}

/* BN backward's sums over rows [0, rows) of one block (dy and x `stride` floats per row). */
static void block_sums(const float *x, const float *dy, int64_t rows, int64_t stride, int64_t n, const float *mean,
                       double *s1, double *s2) {
    float a1[CB] = {0}, a2[CB] = {0};
    for (int64_t r = 0; r < rows; r++) {
        row_sums(x + r * stride, dy + r * stride, mean, n, a1, a2);
        if (r % SUM_RUN == SUM_RUN - 1 || r == rows - 1) flush_sums(a1, a2, n, s1, s2);
    }
}

/* BN forward's sums of v = x - k[j] and v*v over rows [0, rows) of one block, in the same fp32
 * runs. */
static void block_moments(const float *x, int64_t rows, int64_t stride, int64_t n, const float *k, double *s1,
                          double *s2) {
    float a1[CB] = {0}, a2[CB] = {0};
    for (int64_t r = 0; r < rows; r++) {
        const float *xr = x + r * stride;
        for (int64_t j = 0; j < n; j++) {
            float v = xr[j] - k[j];
            a1[j] += v;
            a2[j] += v * v;
        }
        if (r % SUM_RUN == SUM_RUN - 1 || r == rows - 1) flush_sums(a1, a2, n, s1, s2);
    }
}

static int bn_check(const char *op, const yp_bn_desc *d) {
    if (!d)
        return yp_cpu_fail("%s: NULL descriptor", op);
    if (yp_cpu_check_elem(op, d->dtype))
        return -1;
    if (yp_cpu_check_dims(op, "input", d->dims))
        return -1;
    if (!(d->eps > 0.0f))
        return yp_cpu_fail("%s: eps %g must be > 0", op, (double)d->eps);
    return 0;
}

static int64_t bn_rows(const yp_bn_desc *d) {
    return d->dims.n * d->dims.h * d->dims.w;
}

/* The per-channel a, b of y = x*a + b for channels [c0, c0+cb), from mean and invstd indexed
 * from c0. */
static void fold(const float *gamma, const float *beta_, int64_t c0, int64_t cb, const double *mean,
                 const double *invstd, float *a, float *b) {
    for (int64_t j = 0; j < cb; j++)
        yp_bn_fold(gamma[c0 + j], beta_[c0 + j], mean[j], invstd[j], &a[j], &b[j]);
}

/* y[r*stride + j] = x[r*stride + j]*a[j] + b[j] for j < cb in every row (the normalisation folded
 * into one multiply-add, as PyTorch's CPU kernel does). x and y may be the same buffer. */
static void affine_rows(const float *x, float *y, int64_t rows, int64_t stride, int64_t cb, const float *a,
                        const float *b) {
#pragma omp parallel for schedule(static) if (rows * cb >= YP_PAR_MIN)
    for (int64_t r = 0; r < rows; r++) {
        const float *xr = x + r * stride;
        float *yr = y + r * stride;
        for (int64_t j = 0; j < cb; j++)
            yr[j] = YP_AFFINE(xr[j], a[j], b[j]);
    }
}

/* y = gamma*(x - mean)*invstd + beta for the channels [c0, c0+cb), per-channel values indexed from
 * c0 in mean and invstd. */
static void normalize_block(const yp_bn_desc *d, const float *x, float *y, int64_t c0, int64_t cb,
                            const float *gamma, const float *beta_, const double *mean, const double *invstd) {
    float a[CB], b[CB];
    fold(gamma, beta_, c0, cb, mean, invstd, a, b);
    affine_rows(x + c0, y + c0, bn_rows(d), d->dims.c, cb, a, b);
}

int yp_cpu_bn_forward_train(yp_backend *be, const yp_bn_desc *d, const float *x, const float *gamma, const float *beta_,
                            float *y, float *stats, float *running_mean, float *running_var) {
    static const char op[] = "bn_forward_train";
    (void)be;
    if (bn_check(op, d) ||
        yp_cpu_check_ptrs(op, 6, (const void *[]){x, gamma, beta_, stats, running_mean, running_var}))
        return -1;
    const int64_t rows = bn_rows(d), c = d->dims.c;
    if (rows < 2)
        return yp_cpu_fail("%s: training needs more than 1 value per channel (n*h*w = %lld)", op,
                           (long long)rows);
    for (int64_t c0 = 0; c0 < c; c0 += CB) {
        int64_t cb = c - c0 < CB ? c - c0 : CB;
        /* sums of x - k and its square with k = the first row (shifted data: no cancellation
         * in sq/N - (sum/N)^2 when |mean| is large next to the spread), in fp32 runs of SUM_RUN
         * rows flushed into double as the backward's sums */
        const float *k = x + c0;
        double sum[CB] = {0}, sq[CB] = {0};
        const int64_t blocks = row_blocks(rows);
#pragma omp parallel for schedule(static) reduction(+ : sum[:cb], sq[:cb]) if (rows * cb >= YP_PAR_MIN)
        for (int64_t b = 0; b < blocks; b++) {
            int64_t nr, r0 = block_rows(rows, b, &nr);
            block_moments(x + r0 * c + c0, nr, c, cb, k, sum, sq);
        }
        double mean[CB], invstd[CB];
        for (int64_t j = 0; j < cb; j++)
            yp_bn_stats(sum[j], sq[j], k[j], rows, d->eps, d->momentum, &stats[c0 + j], &stats[c + c0 + j],
                        &running_mean[c0 + j], &running_var[c0 + j]);
        /* normalise with the statistics as saved (fp32), so that a recompute or a fused
         * bn_silu_apply from them reproduces this output bit for bit */
        for (int64_t j = 0; j < cb; j++) mean[j] = stats[c0 + j], invstd[j] = stats[c + c0 + j];
        if (y) normalize_block(d, x, y, c0, cb, gamma, beta_, mean, invstd);
    }
    return 0;
}

/* Shared by eval and apply: y = gamma*(x - mean)*invstd + beta with per-channel mean/invstd given
 * as floats (invstd computed by the caller). */
static void apply_stats(const yp_bn_desc *d, const float *x, const float *gamma, const float *beta_,
                        const float *mean, const float *invstd_or_var, int is_var, float *y) {
    const int64_t c = d->dims.c;
    for (int64_t c0 = 0; c0 < c; c0 += CB) {
        int64_t cb = c - c0 < CB ? c - c0 : CB;
        double m[CB], is[CB];
        for (int64_t j = 0; j < cb; j++) {
            m[j] = mean[c0 + j];
            is[j] = is_var ? 1.0 / sqrt((double)invstd_or_var[c0 + j] + (double)d->eps)
                           : (double)invstd_or_var[c0 + j];
        }
        normalize_block(d, x, y, c0, cb, gamma, beta_, m, is);
    }
}

int yp_cpu_bn_forward_eval(yp_backend *be, const yp_bn_desc *d, const float *x, const float *gamma, const float *beta_,
                           float *y, const float *running_mean, const float *running_var) {
    static const char op[] = "bn_forward_eval";
    (void)be;
    if (bn_check(op, d) || yp_cpu_check_ptrs(op, 6, (const void *[]){x, gamma, beta_, y, running_mean, running_var}))
        return -1;
    apply_stats(d, x, gamma, beta_, running_mean, running_var, 1, y);
    return 0;
}

int yp_cpu_bn_apply(yp_backend *be, const yp_bn_desc *d, const float *x, const float *gamma, const float *beta_,
                    const float *stats, float *y) {
    static const char op[] = "bn_apply";
    (void)be;
    if (bn_check(op, d) || yp_cpu_check_ptrs(op, 5, (const void *[]){x, gamma, beta_, stats, y}))
        return -1;
    apply_stats(d, x, gamma, beta_, stats, stats + d->dims.c, 0, y);
    return 0;
}

/* With xh = (x - mean)*invstd, sdy = sum(dy), sdyxh = sum(dy*xh) over the rows of a channel:
 *   dbeta = sdy, dgamma = sdyxh, dx = gamma*invstd*(dy - sdy/N - xh*sdyxh/N).
 * Pass 1 sums dy and dy*(x - mean) per channel block (skipped when the caller has them: `sums`,
 * from bn_silu_backward), pass 2 writes dx. dx may be dy. */
int yp_cpu_bn_backward(yp_backend *be, const yp_bn_desc *d, const float *x, const float *stats, const float *gamma,
                       const float *dy, const double *sums, float *dx, float *dgamma, float *dbeta, yp_betas betas) {
    static const char op[] = "bn_backward";
    const float beta = betas.dx, beta_w = betas.w;
    (void)be;
    if (bn_check(op, d) || yp_cpu_check_ptrs(op, 5, (const void *[]){x, stats, gamma, dy, dx}))
        return -1;
    const int64_t rows = bn_rows(d), c = d->dims.c;
    for (int64_t c0 = 0; c0 < c; c0 += CB) {
        int64_t cb = c - c0 < CB ? c - c0 : CB;
        const float *mean = stats + c0, *invstd = stats + c + c0;
        double sdy[CB] = {0}, sdyx[CB] = {0};
        if (sums) {
            for (int64_t j = 0; j < cb; j++) sdy[j] = sums[c0 + j], sdyx[j] = sums[c + c0 + j];
        } else {
            const int64_t blocks = row_blocks(rows);
#pragma omp parallel for schedule(static) reduction(+ : sdy[:cb], sdyx[:cb]) if (rows * cb >= YP_PAR_MIN)
            for (int64_t k = 0; k < blocks; k++) {
                int64_t nr, r0 = block_rows(rows, k, &nr);
                block_sums(x + r0 * c + c0, dy + r0 * c + c0, nr, c, cb, mean, sdy, sdyx);
            }
        }
        /* dx = k1*dy + k2*(x - mean) + k3 with k1 = gamma*invstd, k2 = -k1*invstd^2*sdyx/N,
         * k3 = -k1*sdy/N (yp_bn_math.h), and the parameter gradients. */
        float k1[CB], k2[CB], k3[CB];
        for (int64_t j = 0; j < cb; j++)
            yp_bn_backward_channel(gamma[c0 + j], invstd[j], sdy[j], sdyx[j], rows, beta_w, &k1[j], &k2[j], &k3[j],
                                   dgamma ? &dgamma[c0 + j] : NULL, dbeta ? &dbeta[c0 + j] : NULL);
#pragma omp parallel for schedule(static) if (rows * cb >= YP_PAR_MIN)
        for (int64_t r = 0; r < rows; r++) {
            const float *xr = x + r * c + c0, *dyr = dy + r * c + c0;
            float *dxr = dx + r * c + c0;
            if (beta == 0.0f) {
                for (int64_t j = 0; j < cb; j++)
                    dxr[j] = yp_bn_dx(k1[j], k2[j], k3[j], dyr[j], xr[j], mean[j]);
            } else {
                for (int64_t j = 0; j < cb; j++)
                    dxr[j] = beta * dxr[j] + yp_bn_dx(k1[j], k2[j], k3[j], dyr[j], xr[j], mean[j]);
            }
        }
    }
    return 0;
}

/* The folded a, b of every channel from saved stats (c <= CB per block). Shared by the fusions. */
static void fold_stats(const float *gamma, const float *beta_, const float *stats, int64_t c, int64_t c0, int64_t cb,
                       float *a, float *b) {
    double m[CB], is[CB];
    for (int64_t j = 0; j < cb; j++) m[j] = stats[c0 + j], is[j] = stats[c + c0 + j];
    fold(gamma, beta_, c0, cb, m, is, a, b);
}

int yp_cpu_bn_silu_apply(yp_backend *be, const yp_bn_desc *d, const float *x, const float *gamma, const float *beta_,
                         const float *stats, float *y) {
    static const char op[] = "bn_silu_apply";
    (void)be;
    if (bn_check(op, d) || yp_cpu_check_ptrs(op, 5, (const void *[]){x, gamma, beta_, stats, y}))
        return -1;
    const int64_t rows = bn_rows(d), c = d->dims.c;
    for (int64_t c0 = 0; c0 < c; c0 += CB) {
        int64_t cb = c - c0 < CB ? c - c0 : CB;
        float a[CB], b[CB];
        fold_stats(gamma, beta_, stats, c, c0, cb, a, b);
#pragma omp parallel for schedule(static) if (rows * cb >= YP_PAR_MIN)
        for (int64_t r = 0; r < rows; r++) {
            const float *xr = x + r * c + c0;
            float *yr = y + r * c + c0;
            yp_silu_affine_span(xr, a, b, yr, cb);
        }
    }
    return 0;
}

/* dx = silu'(x*a + b) * dy over rows [0, rows) of one block (x, dy, dx `stride` floats per row,
 * channels [0, n)), and block_sums' sums of that dx: the same operations in the same order per
 * channel, so the same bits. The AVX-512 form computes the gradient and the sums from the same
 * registers (masked lanes add zeros). */
static void silu_grad_sums_block(const float *x, const float *dy, float *dx, int64_t rows, int64_t stride, int64_t n,
                                 const float *a, const float *b, const float *mean, double *s1, double *s2) {
#if defined(YP_SILU_VEC)
    float a1[CB] __attribute__((aligned(64))) = {0}, a2[CB] __attribute__((aligned(64))) = {0};
    for (int64_t r = 0; r < rows; r++) { /* row by row: the rows stream from memory in order */
        for (int64_t j = 0; j < n; j += 16) {
            __mmask16 m = yp_mask16(j, n);
            int64_t o = r * stride + j;
            __m512 xv = _mm512_maskz_loadu_ps(m, x + o);
            __m512 v = _mm512_fmadd_ps(xv, _mm512_maskz_loadu_ps(m, a + j), _mm512_maskz_loadu_ps(m, b + j));
            __m512 g = yp_silu_grad16(v, _mm512_maskz_loadu_ps(m, dy + o));
            _mm512_mask_storeu_ps(dx + o, m, g);
            _mm512_store_ps(a1 + j, _mm512_add_ps(_mm512_load_ps(a1 + j), g));
            _mm512_store_ps(a2 + j, _mm512_fmadd_ps(g, _mm512_sub_ps(xv, _mm512_maskz_loadu_ps(m, mean + j)),
                                                    _mm512_load_ps(a2 + j)));
        }
        if (r % SUM_RUN == SUM_RUN - 1 || r == rows - 1) flush_sums(a1, a2, n, s1, s2);
    }
#else
    float a1[CB] = {0}, a2[CB] = {0};
    for (int64_t r = 0; r < rows; r++) {
        const float *xr = x + r * stride;
        float *dxr = dx + r * stride;
        yp_silu_affine_grad_span(xr, a, b, dy + r * stride, dxr, n);
        row_sums(xr, dxr, mean, n, a1, a2); /* as block_sums would on this dx */
        if (r % SUM_RUN == SUM_RUN - 1 || r == rows - 1) flush_sums(a1, a2, n, s1, s2);
    }
#endif
}

int yp_cpu_bn_silu_backward(yp_backend *be, const yp_bn_desc *d, const float *x, const float *gamma, const float *beta_,
                            const float *stats, const float *dy, float *dx, double *sums) {
    static const char op[] = "bn_silu_backward";
    (void)be;
    if (bn_check(op, d) || yp_cpu_check_ptrs(op, 6, (const void *[]){x, gamma, beta_, stats, dy, dx}))
        return -1;
    const int64_t rows = bn_rows(d), c = d->dims.c;
    for (int64_t c0 = 0; c0 < c; c0 += CB) {
        int64_t cb = c - c0 < CB ? c - c0 : CB;
        float a[CB], b[CB];
        fold_stats(gamma, beta_, stats, c, c0, cb, a, b);
        if (!sums) {
#pragma omp parallel for schedule(static) if (rows * cb >= YP_PAR_MIN)
            for (int64_t r = 0; r < rows; r++) {
                const float *xr = x + r * c + c0, *dyr = dy + r * c + c0;
                float *dxr = dx + r * c + c0;
                yp_silu_affine_grad_span(xr, a, b, dyr, dxr, cb);
            }
            continue;
        }
        /* also BN backward's pass 1 on the values just written, block by block of rows as
         * bn_backward sums them (same sums) */
        const float *mean = stats + c0;
        double s1[CB] = {0}, s2[CB] = {0};
        const int64_t blocks = row_blocks(rows);
#pragma omp parallel for schedule(static) reduction(+ : s1[:cb], s2[:cb]) if (rows * cb >= YP_PAR_MIN)
        for (int64_t k = 0; k < blocks; k++) {
            int64_t nr, r0 = block_rows(rows, k, &nr);
            silu_grad_sums_block(x + r0 * c + c0, dy + r0 * c + c0, dx + r0 * c + c0, nr, c, cb, a, b, mean, s1, s2);
        }
        for (int64_t j = 0; j < cb; j++) sums[c0 + j] = s1[j], sums[c + c0 + j] = s2[j];
    }
    return 0;
}
