/* conv.c - conv2d forward, backward-data and backward-weights on the CPU (NHWC activations, OIHW
 * weights, fp32, groups 1), all three as OpenBLAS sgemm calls.
 *
 * A 1x1 stride-1 unpadded conv is one GEMM over the whole batch: the NHWC batch already is the
 * (n*h*w, c_in) matrix and the OIHW weight the (c_out, c_in) one. Every other conv goes one image at
 * a time through im2col columns in the caller's workspace (yp_conv_workspace_floats): one row of
 * k*k*c_in floats per output pixel, ordered (kh, kw, c_in) so that a row is k contiguous copies of
 * k*c_in floats from the input; the weights are reordered once per call to (c_out, kh, kw, c_in)
 * to match (the reordering is c_out*k*k*c_in floats, small next to the columns).
 *   forward          y_img (P, c_out)   = cols (P, K) . Wr^T          P = out.h*out.w, K = k*k*c_in
 *   backward-data    dcols (P, K)       = dy_img (P, c_out) . Wr      then col2im adds into dx
 *   backward-weights dWr (c_out, K)    += dy_img^T . cols              then written back as OIHW
 * Stride-1 backward-data (every 3x3 s1 conv of YOLOv5) is instead the transposed conv: im2col of dy
 * with padding k-1-p, times the 180-degree-rotated (c_in, kh, kw, c_out) weights, which avoids the
 * scatter-add and runs at the forward's rate (~1.6x the col2im form on the 64->64 3x3 layer).
 * OpenBLAS threads the GEMMs; the copies around them are single-threaded. */
#include <cblas.h>
#include <limits.h>
#include <string.h>

#include "yp_cpu.h"

/* Returns 0 when d describes a conv these kernels run, else -1 naming what is wrong. */
static int conv_check(const char *op, const yp_conv_desc *d) {
    if (!d)
        return yp_cpu_fail("%s: NULL descriptor", op);
    if (d->groups != 1)
        return yp_cpu_fail("%s: groups %d not supported (the CPU backend runs groups == 1 only)", op,
                           d->groups);
    if (d->k < 1 || d->s < 1 || d->p < 0)
        return yp_cpu_fail("%s: bad kernel %d / stride %d / padding %d", op, d->k, d->s, d->p);
    if (yp_cpu_check_dims(op, "input", d->in) || yp_cpu_check_dims(op, "output", d->out))
        return -1;
    int64_t oh = (d->in.h + 2 * d->p - d->k) / d->s + 1, ow = (d->in.w + 2 * d->p - d->k) / d->s + 1;
    if (d->in.h + 2 * d->p < d->k || d->in.w + 2 * d->p < d->k || d->out.h != oh || d->out.w != ow ||
        d->out.n != d->in.n)
        return yp_cpu_fail("%s: output %lldx%lldx%lld does not follow from input %lldx%lldx%lld with k %d "
                           "s %d p %d",
                           op, (long long)d->out.n, (long long)d->out.h, (long long)d->out.w,
                           (long long)d->in.n, (long long)d->in.h, (long long)d->in.w, d->k, d->s, d->p);
    /* cblas takes int dimensions: the largest is a 1x1 conv's n*h*w rows, or one image's K*c_out. */
    int64_t kk = (int64_t)d->k * d->k * d->in.c;
    if (d->in.n * d->in.h * d->in.w > INT_MAX || d->out.h * d->out.w * kk > INT_MAX ||
        d->out.c * kk > INT_MAX)
        return yp_cpu_fail("%s: tensor too large for 32-bit BLAS dimensions", op);
    return 0;
}

static int is_pointwise(const yp_conv_desc *d) {
    return d->k == 1 && d->s == 1 && d->p == 0;
}

/* The columns of image x_img (in.h, in.w, c) into cols (out.h*out.w rows of k*k*c). Positions in
 * the padding are zeros. */
static void im2col(const yp_conv_desc *d, const float *x_img, float *cols) {
    const int64_t H = d->in.h, W = d->in.w, C = d->in.c, k = d->k;
    const int64_t krow = k * C, K = k * krow;
    float *row = cols;
    for (int64_t oy = 0; oy < d->out.h; oy++) {
        int64_t iy0 = oy * d->s - d->p;
        for (int64_t ox = 0; ox < d->out.w; ox++, row += K) {
            int64_t ix0 = ox * d->s - d->p;
            int inside_x = ix0 >= 0 && ix0 + k <= W;
            for (int64_t kh = 0; kh < k; kh++) {
                int64_t iy = iy0 + kh;
                float *dst = row + kh * krow;
                if (iy < 0 || iy >= H) {
                    memset(dst, 0, (size_t)krow * sizeof *dst);
                    continue;
                }
                const float *src = x_img + iy * W * C;
                if (inside_x) {
                    memcpy(dst, src + ix0 * C, (size_t)krow * sizeof *dst);
                    continue;
                }
                for (int64_t kw = 0; kw < k; kw++) {
                    int64_t ix = ix0 + kw;
                    if (ix < 0 || ix >= W)
                        memset(dst + kw * C, 0, (size_t)C * sizeof *dst);
                    else
                        memcpy(dst + kw * C, src + ix * C, (size_t)C * sizeof *dst);
                }
            }
        }
    }
}

static void add_into(float *restrict dst, const float *restrict src, int64_t n) {
    for (int64_t i = 0; i < n; i++)
        dst[i] += src[i];
}

/* dx_img += col2im(cols): every column entry added back to the input position it was copied from
 * (padding entries are dropped). */
static void col2im_add(const yp_conv_desc *d, const float *cols, float *dx_img) {
    const int64_t H = d->in.h, W = d->in.w, C = d->in.c, k = d->k;
    const int64_t krow = k * C, K = k * krow;
    const float *row = cols;
    for (int64_t oy = 0; oy < d->out.h; oy++) {
        int64_t iy0 = oy * d->s - d->p;
        for (int64_t ox = 0; ox < d->out.w; ox++, row += K) {
            int64_t ix0 = ox * d->s - d->p;
            int inside_x = ix0 >= 0 && ix0 + k <= W;
            for (int64_t kh = 0; kh < k; kh++) {
                int64_t iy = iy0 + kh;
                if (iy < 0 || iy >= H)
                    continue;
                float *dst = dx_img + iy * W * C;
                const float *src = row + kh * krow;
                if (inside_x) {
                    add_into(dst + ix0 * C, src, krow);
                    continue;
                }
                for (int64_t kw = 0; kw < k; kw++) {
                    int64_t ix = ix0 + kw;
                    if (ix >= 0 && ix < W)
                        add_into(dst + ix * C, src + kw * C, C);
                }
            }
        }
    }
}

/* wr[co][(kh*k + kw)*c + ci] = w[((co*c + ci)*k + kh)*k + kw]: OIHW to (c_out, kh, kw, c_in). */
static void weights_to_ohwi(const yp_conv_desc *d, const float *w, float *wr) {
    const int64_t C = d->in.c, kk = (int64_t)d->k * d->k;
    for (int64_t co = 0; co < d->out.c; co++) {
        const float *src = w + co * C * kk;
        float *dst = wr + co * C * kk;
        for (int64_t ci = 0; ci < C; ci++)
            for (int64_t t = 0; t < kk; t++)
                dst[t * C + ci] = src[ci * kk + t];
    }
}

/* w = beta*w + the OIHW form of wr (c_out, kh, kw, c_in); beta == 0 does not read w. */
static void weights_from_ohwi(const yp_conv_desc *d, const float *wr, float *w, float beta) {
    const int64_t C = d->in.c, kk = (int64_t)d->k * d->k;
    for (int64_t co = 0; co < d->out.c; co++) {
        const float *src = wr + co * C * kk;
        float *dst = w + co * C * kk;
        for (int64_t ci = 0; ci < C; ci++)
            for (int64_t t = 0; t < kk; t++) {
                float v = src[t * C + ci];
                dst[ci * kk + t] = beta == 0.0f ? v : beta * dst[ci * kk + t] + v;
            }
    }
}

/* The weights as the (c_out, K) matrix matching the columns: w itself for k == 1, else the
 * reordered copy written into the weight scratch wt. */
static const float *weights_matrix(const yp_conv_desc *d, const float *w, float *wt) {
    if (d->k == 1)
        return w;
    weights_to_ohwi(d, w, wt);
    return wt;
}

/* Both scratch parts present when the descriptor needs them. */
static int scratch_ok(const char *op, const yp_conv_desc *d, const float *ws, const float *wt) {
    int64_t cols, w;
    yp_conv_workspace_split(d, &cols, &w);
    if ((cols && !ws) || (w && !wt))
        return yp_cpu_fail("%s: NULL workspace (needs %lld column and %lld weight floats)", op, (long long)cols,
                           (long long)w);
    return 0;
}

int yp_cpu_conv2d_forward(const yp_conv_desc *d, const float *x, const float *w, const float *bias, float *y,
                          float *ws, float *wt) {
    static const char op[] = "conv2d_forward";
    if (conv_check(op, d) || yp_cpu_check_ptrs(op, 3, (const void *[]){x, w, y}))
        return -1;
    if (scratch_ok(op, d, ws, wt))
        return -1;
    const int64_t rows = d->out.n * d->out.h * d->out.w, co = d->out.c;
    /* With a bias, y starts as the bias in every row and the GEMMs add onto it (beta 1). */
    float gemm_beta = 0.0f;
    if (bias) {
        for (int64_t r = 0; r < rows; r++)
            memcpy(y + r * co, bias, (size_t)co * sizeof *y);
        gemm_beta = 1.0f;
    }
    if (is_pointwise(d)) {
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)rows, (int)co, (int)d->in.c, 1.0f, x,
                    (int)d->in.c, w, (int)d->in.c, gemm_beta, y, (int)co);
        return 0;
    }
    const int64_t P = d->out.h * d->out.w, K = (int64_t)d->k * d->k * d->in.c;
    const float *wm = weights_matrix(d, w, wt);
    for (int64_t i = 0; i < d->in.n; i++) {
        im2col(d, x + i * d->in.h * d->in.w * d->in.c, ws);
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)P, (int)co, (int)K, 1.0f, ws, (int)K, wm,
                    (int)K, gemm_beta, y + i * P * co, (int)co);
    }
    return 0;
}

/* A stride-1 conv with p <= k-1 has backward-data = conv(dy, flipped transposed w) with padding
 * k-1-p, whose output has exactly the input's extent: a gather (im2col of dy) and one GEMM that
 * applies beta itself, instead of a GEMM and a scatter-add (col2im). */
static int transposed_path(const yp_conv_desc *d) {
    return d->s == 1 && d->k > 1 && d->p <= d->k - 1;
}

static yp_conv_desc transposed_desc(const yp_conv_desc *d) {
    yp_conv_desc t = *d;
    t.in = d->out;
    t.out = d->in;
    t.p = d->k - 1 - d->p;
    return t;
}

/* wt[ci][(kh*k + kw)*c_out + co] = w[co][ci][k-1-kh][k-1-kw]: the weights of the transposed conv
 * (c_in outputs, c_out inputs, kernel rotated by 180 degrees), matching its columns. */
static void weights_transposed(const yp_conv_desc *d, const float *w, float *wt) {
    const int64_t C = d->in.c, Co = d->out.c, k = d->k, kk = k * k;
    for (int64_t co = 0; co < Co; co++)
        for (int64_t ci = 0; ci < C; ci++) {
            const float *src = w + (co * C + ci) * kk;
            float *dst = wt + ci * kk * Co + co;
            for (int64_t t = 0; t < kk; t++)
                dst[t * Co] = src[kk - 1 - t];
        }
}

int yp_cpu_conv2d_backward_data(const yp_conv_desc *d, const float *dy, const float *w, float *dx, float beta,
                                float *ws, float *wt) {
    static const char op[] = "conv2d_backward_data";
    if (conv_check(op, d) || yp_cpu_check_ptrs(op, 3, (const void *[]){dy, w, dx}))
        return -1;
    if (scratch_ok(op, d, ws, wt))
        return -1;
    const int64_t co = d->out.c, ci = d->in.c;
    if (is_pointwise(d)) {
        /* dx (rows, c_in) = beta*dx + dy (rows, c_out) . W (c_out, c_in); BLAS does not read C when
         * beta is 0. */
        int64_t rows = d->in.n * d->in.h * d->in.w;
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)rows, (int)ci, (int)co, 1.0f, dy, (int)co,
                    w, (int)ci, beta, dx, (int)ci);
        return 0;
    }
    const int64_t P = d->out.h * d->out.w, img = d->in.h * d->in.w * ci;
    if (transposed_path(d)) {
        yp_conv_desc t = transposed_desc(d);
        const int64_t Pt = d->in.h * d->in.w, Kt = (int64_t)d->k * d->k * co;
        weights_transposed(d, w, wt);
        for (int64_t i = 0; i < d->in.n; i++) {
            im2col(&t, dy + i * P * co, ws);
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)Pt, (int)ci, (int)Kt, 1.0f, ws, (int)Kt, wt,
                        (int)Kt, beta, dx + i * img, (int)ci);
        }
        return 0;
    }
    const int64_t K = (int64_t)d->k * d->k * ci;
    const float *wm = weights_matrix(d, w, wt);
    yp_cpu_scale_beta(dx, d->in.n * img, beta);
    for (int64_t i = 0; i < d->in.n; i++) {
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)P, (int)K, (int)co, 1.0f, dy + i * P * co,
                    (int)co, wm, (int)K, 0.0f, ws, (int)K);
        col2im_add(d, ws, dx + i * img);
    }
    return 0;
}

/* dbias = beta*dbias + the per-channel sum of dy over all rows, accumulated in double. */
static void bias_grad(const float *dy, int64_t rows, int64_t c, float *dbias, float beta) {
    enum { CB = 256 };
    for (int64_t c0 = 0; c0 < c; c0 += CB) {
        int64_t cb = c - c0 < CB ? c - c0 : CB;
        double acc[CB] = {0};
        for (int64_t r = 0; r < rows; r++) {
            const float *row = dy + r * c + c0;
            for (int64_t j = 0; j < cb; j++)
                acc[j] += row[j];
        }
        for (int64_t j = 0; j < cb; j++)
            dbias[c0 + j] = beta == 0.0f ? (float)acc[j] : (float)(beta * dbias[c0 + j] + acc[j]);
    }
}

int yp_cpu_conv2d_backward_weights(const yp_conv_desc *d, const float *x, const float *dy, float *dw,
                                   float *dbias, float beta, float *ws, float *wt) {
    static const char op[] = "conv2d_backward_weights";
    if (conv_check(op, d) || yp_cpu_check_ptrs(op, 3, (const void *[]){x, dy, dw}))
        return -1;
    if (scratch_ok(op, d, ws, wt))
        return -1;
    const int64_t co = d->out.c, ci = d->in.c;
    if (dbias)
        bias_grad(dy, d->out.n * d->out.h * d->out.w, co, dbias, beta);
    if (is_pointwise(d)) {
        /* dW (c_out, c_in) = beta*dW + dy^T (c_out, rows) . x (rows, c_in). */
        int64_t rows = d->in.n * d->in.h * d->in.w;
        cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, (int)co, (int)ci, (int)rows, 1.0f, dy, (int)co, x,
                    (int)ci, beta, dw, (int)ci);
        return 0;
    }
    const int64_t P = d->out.h * d->out.w, K = (int64_t)d->k * d->k * ci, img = d->in.h * d->in.w * ci;
    /* k == 1 (strided or padded): the columns already are in OIHW order, accumulate into dw with
     * the caller's beta on the first image. k > 1: accumulate (c_out, kh, kw, c_in) in the weight
     * scratch, then reorder into dw with beta. */
    float *acc = d->k == 1 ? dw : wt;
    float first_beta = d->k == 1 ? beta : 0.0f;
    for (int64_t i = 0; i < d->in.n; i++) {
        im2col(d, x + i * img, ws);
        cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, (int)co, (int)K, (int)P, 1.0f, dy + i * P * co,
                    (int)co, ws, (int)K, i == 0 ? first_beta : 1.0f, acc, (int)K);
    }
    if (d->k > 1)
        weights_from_ohwi(d, acc, dw, beta);
    return 0;
}
