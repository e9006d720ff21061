/* eltwise.c - the data-movement ops on the CPU (NHWC, fp32): add, the gradient accumulation
 * axpy_grad, channel concat, nearest upsampling, space_to_depth and depth_to_space (Focus,
 * Contract, Expand) and zero padding, forward and backward.
 * Every backward writes dx = beta*dx + (its gradient) and never reads dx when beta is 0. */
#include <string.h>

#include "yp_cpu.h"

/* dst = beta*dst + src over n floats (dst == src allowed when beta == 0), on the calling thread
 * (the callers below run it per pixel or row inside their own parallel loops). */
static void accumulate(float *dst, const float *src, int64_t n, float beta) {
    if (beta == 0.0f) {
        if (dst != src)
            memmove(dst, src, (size_t)n * sizeof *dst);
    } else if (beta == 1.0f) {
        for (int64_t i = 0; i < n; i++)
            dst[i] += src[i];
    } else {
        for (int64_t i = 0; i < n; i++)
            dst[i] = beta * dst[i] + src[i];
    }
}

/* The same over a whole tensor, in spans on the OpenMP threads. */
static void accumulate_all(float *dst, const float *src, int64_t n, float beta) {
    enum { SPAN = 16384 };
    const int64_t spans = (n + SPAN - 1) / SPAN;
#pragma omp parallel for schedule(static) if (n >= YP_PAR_MIN)
    for (int64_t k = 0; k < spans; k++)
        accumulate(dst + k * SPAN, src + k * SPAN, n - k * SPAN < SPAN ? n - k * SPAN : SPAN, beta);
}

int yp_cpu_add_forward(yp_backend *be, yp_elem dt, const float *a, const float *b, float *y, int64_t n) {
    static const char op[] = "add_forward";
    (void)be;
    if (yp_cpu_check_elem(op, dt)) return -1;
    if (yp_cpu_check_count(op, n) || (n > 0 && yp_cpu_check_ptrs(op, 3, (const void *[]){a, b, y})))
        return -1;
#pragma omp parallel for simd schedule(static) if (n >= YP_PAR_MIN)
    for (int64_t i = 0; i < n; i++)
        y[i] = a[i] + b[i];
    return 0;
}

int yp_cpu_axpy_grad(yp_backend *be, yp_elem dt, const float *dy, float *dx, float beta, int64_t n) {
    static const char op[] = "axpy_grad";
    (void)be;
    if (yp_cpu_check_elem(op, dt)) return -1;
    if (yp_cpu_check_count(op, n) || (n > 0 && yp_cpu_check_ptrs(op, 2, (const void *[]){dy, dx})))
        return -1;
    accumulate_all(dx, dy, n, beta);
    return 0;
}

/* Returns 0 when the k channel counts are positive and add up to out.c, else -1. */
static int concat_check(const char *op, int k, const int64_t *cs, yp_dims out) {
    if (k < 1 || !cs)
        return yp_cpu_fail("%s: %d inputs (need >= 1 and their channel counts)", op, k);
    if (yp_cpu_check_dims(op, "output", out))
        return -1;
    int64_t total = 0;
    for (int i = 0; i < k; i++) {
        if (cs[i] < 1)
            return yp_cpu_fail("%s: input %d has %lld channels", op, i, (long long)cs[i]);
        total += cs[i];
    }
    if (total != out.c)
        return yp_cpu_fail("%s: input channels add up to %lld, output has %lld", op, (long long)total,
                           (long long)out.c);
    return 0;
}

int yp_cpu_concat_forward(yp_backend *be, yp_elem dt, int k, const float *const *xs, const int64_t *cs, yp_dims out,
                          float *y) {
    static const char op[] = "concat_forward";
    (void)be;
    if (yp_cpu_check_elem(op, dt)) return -1;
    if (concat_check(op, k, cs, out) || yp_cpu_check_ptrs(op, 2, (const void *[]){xs, y}))
        return -1;
    for (int i = 0; i < k; i++)
        if (!xs[i])
            return yp_cpu_fail("%s: input %d is NULL", op, i);
    const int64_t rows = out.n * out.h * out.w;
    /* Input by input: each is one sequential read, written as a strided stripe of y. */
    int64_t off = 0;
    for (int i = 0; i < k; i++) {
        const int64_t c = cs[i];
        const float *x = xs[i];
#pragma omp parallel for schedule(static) if (rows * c >= YP_PAR_MIN)
        for (int64_t r = 0; r < rows; r++)
            memcpy(y + r * out.c + off, x + r * c, (size_t)c * sizeof *y);
        off += c;
    }
    return 0;
}

int yp_cpu_concat_backward(yp_backend *be, yp_elem dt, int k, float *const *dxs, const int64_t *cs, yp_dims out,
                           const float *dy, const float *betas) {
    static const char op[] = "concat_backward";
    (void)be;
    if (yp_cpu_check_elem(op, dt)) return -1;
    if (concat_check(op, k, cs, out) || yp_cpu_check_ptrs(op, 3, (const void *[]){dxs, dy, betas}))
        return -1;
    const int64_t rows = out.n * out.h * out.w;
    int64_t off = 0;
    for (int i = 0; i < k; i++) {
        const int64_t c = cs[i];
        float *dx = dxs[i];
        if (dx)
#pragma omp parallel for schedule(static) if (rows * c >= YP_PAR_MIN)
            for (int64_t r = 0; r < rows; r++)
                accumulate(dx + r * c, dy + r * out.c + off, c, betas[i]);
        off += c;
    }
    return 0;
}

static int upsample_check(const char *op, yp_dims in, int scale, const void *a, const void *b) {
    if (yp_cpu_check_dims(op, "input", in) || yp_cpu_check_ptrs(op, 2, (const void *[]){a, b}))
        return -1;
    if (scale < 1)
        return yp_cpu_fail("%s: scale %d must be >= 1", op, scale);
    return 0;
}

/* y[n][oy][ox] = x[n][oy/s][ox/s]: each input pixel's channel vector copied to s*s places. */
int yp_cpu_upsample_forward(yp_backend *be, yp_elem dt, yp_dims in, int scale, const float *x, float *y) {
    static const char op[] = "upsample_forward";
    (void)be;
    if (yp_cpu_check_elem(op, dt)) return -1;
    if (upsample_check(op, in, scale, x, y))
        return -1;
    const int64_t s = scale, C = in.c, ow = in.w * s;
#pragma omp parallel for collapse(2) schedule(static) if (in.n * in.h * in.w * C >= YP_PAR_MIN)
    for (int64_t i = 0; i < in.n; i++)
        for (int64_t iy = 0; iy < in.h; iy++) {
            const float *xrow = x + (i * in.h + iy) * in.w * C;
            float *yrow = y + (i * in.h + iy) * s * ow * C;
            for (int64_t ix = 0; ix < in.w; ix++)
                for (int64_t t = 0; t < s; t++)
                    memcpy(yrow + (ix * s + t) * C, xrow + ix * C, (size_t)C * sizeof *y);
            for (int64_t t = 1; t < s; t++) /* the other s-1 output rows repeat the first */
                memcpy(yrow + t * ow * C, yrow, (size_t)(ow * C) * sizeof *y);
        }
    return 0;
}

/* dx[n][iy][ix] = beta*dx + the sum of dy over the s*s output pixels that copied it. */
int yp_cpu_upsample_backward(yp_backend *be, yp_elem dt, yp_dims in, int scale, const float *dy, float *dx,
                             float beta) {
    static const char op[] = "upsample_backward";
    (void)be;
    if (yp_cpu_check_elem(op, dt)) return -1;
    if (upsample_check(op, in, scale, dy, dx))
        return -1;
    const int64_t s = scale, C = in.c, ow = in.w * s;
#pragma omp parallel for collapse(2) schedule(static) if (in.n * in.h * in.w * C >= YP_PAR_MIN)
    for (int64_t i = 0; i < in.n; i++)
        for (int64_t iy = 0; iy < in.h; iy++) {
            const float *dyrow = dy + (i * in.h + iy) * s * ow * C;
            float *dxrow = dx + (i * in.h + iy) * in.w * C;
            for (int64_t ix = 0; ix < in.w; ix++) {
                float *g = dxrow + ix * C;
                /* the first copy sets (beta 0: without reading g), the others add */
                const float *first = dyrow + ix * s * C;
                if (beta == 0.0f)
                    for (int64_t c = 0; c < C; c++) g[c] = first[c];
                else
                    for (int64_t c = 0; c < C; c++) g[c] = beta * g[c] + first[c];
                for (int64_t ty = 0; ty < s; ty++)
                    for (int64_t tx = ty == 0 ? 1 : 0; tx < s; tx++) {
                        const float *src = dyrow + (ty * ow + ix * s + tx) * C;
                        for (int64_t c = 0; c < C; c++) g[c] += src[c];
                    }
            }
        }
    return 0;
}

/* ---- pixel blocks to channels (yp_s2d_desc): Focus, YOLOv5's Contract and Expand. Each coarse
 * pixel's g*g channel blocks are whole channel vectors of fine pixels, so both directions move
 * C floats at a time; parallel over (image, coarse row), each writing its own elements. */

/* Returns 0, or -1 for a bad descriptor, a map the gain does not divide (PyTorch's view would
 * fail on it too) or one buffer for both sides. */
static int s2d_check(const char *op, yp_elem dt, const yp_s2d_desc *d, const void *src, const void *dst) {
    if (yp_cpu_check_elem(op, dt)) return -1;
    if (!d) return yp_cpu_fail("%s: NULL descriptor", op);
    if (yp_cpu_check_dims(op, "fine map", d->fine) || yp_cpu_check_ptrs(op, 2, (const void *[]){src, dst}))
        return -1;
    if (d->gain < 1 || d->order < 0 || d->order >= YP_S2D_ORDER_COUNT)
        return yp_cpu_fail("%s: gain %d, order %d (need a gain >= 1 and a yp_s2d_order)", op, d->gain, d->order);
    if (d->fine.h % d->gain || d->fine.w % d->gain)
        return yp_cpu_fail("%s: fine map %lldx%lld: height and width must be multiples of the gain %d", op,
                           (long long)d->fine.h, (long long)d->fine.w, d->gain);
    if (src == dst) return yp_cpu_fail("%s: source and destination are one buffer; it cannot run in place", op);
    return 0;
}

/* Offset in the fine map of the channel vector that coarse pixel (i, oy, ox) holds as block b. */
static int64_t s2d_fine_offset(const yp_s2d_desc *d, int64_t i, int64_t oy, int64_t ox, int64_t b) {
    const int64_t g = d->gain, hi = b / g, lo = b % g;
    const int64_t sy = d->order == YP_S2D_COL_MAJOR ? lo : hi, sx = d->order == YP_S2D_COL_MAJOR ? hi : lo;
    return ((i * d->fine.h + oy * g + sy) * d->fine.w + ox * g + sx) * d->fine.c;
}

/* To the coarse map: dst (coarse) = beta*dst + the blocks of src (fine); else dst (fine) =
 * beta*dst + src's (coarse) channels spread back into blocks. */
static void s2d_move(const yp_s2d_desc *d, const float *src, float *dst, float beta, int to_coarse) {
    const int64_t g = d->gain, C = d->fine.c, blocks = g * g, oh = d->fine.h / g, ow = d->fine.w / g;
#pragma omp parallel for collapse(2) schedule(static) if (d->fine.n * d->fine.h * d->fine.w * C >= YP_PAR_MIN)
    for (int64_t i = 0; i < d->fine.n; i++)
        for (int64_t oy = 0; oy < oh; oy++) {
            const int64_t row = (i * oh + oy) * ow * blocks * C;
            for (int64_t ox = 0; ox < ow; ox++)
                for (int64_t b = 0; b < blocks; b++) {
                    const int64_t c = row + (ox * blocks + b) * C, f = s2d_fine_offset(d, i, oy, ox, b);
                    if (to_coarse)
                        accumulate(dst + c, src + f, C, beta);
                    else
                        accumulate(dst + f, src + c, C, beta);
                }
        }
}

int yp_cpu_space_to_depth(yp_backend *be, yp_elem dt, const yp_s2d_desc *d, const float *fine, float *coarse,
                          float beta) {
    (void)be;
    if (s2d_check("space_to_depth", dt, d, fine, coarse)) return -1;
    s2d_move(d, fine, coarse, beta, 1);
    return 0;
}

int yp_cpu_depth_to_space(yp_backend *be, yp_elem dt, const yp_s2d_desc *d, const float *coarse, float *fine,
                          float beta) {
    (void)be;
    if (s2d_check("depth_to_space", dt, d, coarse, fine)) return -1;
    s2d_move(d, coarse, fine, beta, 0);
    return 0;
}

/* ---- zero padding: each output row is zeros, the input row, zeros (or all zeros in the border) */

static int pad_check(const char *op, const yp_pad_desc *d, const void *a, const void *b) {
    if (!d) return yp_cpu_fail("%s: NULL descriptor", op);
    if (yp_cpu_check_elem(op, d->dtype) || yp_cpu_check_dims(op, "input", d->in) ||
        yp_cpu_check_ptrs(op, 2, (const void *[]){a, b}))
        return -1;
    if (d->left < 0 || d->right < 0 || d->top < 0 || d->bottom < 0)
        return yp_cpu_fail("%s: negative padding (left %d, right %d, top %d, bottom %d)", op, d->left, d->right,
                           d->top, d->bottom);
    return 0;
}

int yp_cpu_zero_pad_forward(yp_backend *be, const yp_pad_desc *d, const float *x, float *y) {
    (void)be;
    if (pad_check("zero_pad_forward", d, x, y)) return -1;
    const int64_t C = d->in.c, W = d->in.w, H = d->in.h, OW = W + d->left + d->right, OH = H + d->top + d->bottom;
#pragma omp parallel for collapse(2) schedule(static) if (d->in.n * OH * OW * C >= YP_PAR_MIN)
    for (int64_t i = 0; i < d->in.n; i++)
        for (int64_t oy = 0; oy < OH; oy++) {
            float *row = y + (i * OH + oy) * OW * C;
            int64_t iy = oy - d->top;
            if (iy < 0 || iy >= H) {
                memset(row, 0, (size_t)(OW * C) * sizeof *row);
                continue;
            }
            memset(row, 0, (size_t)(d->left * C) * sizeof *row);
            memcpy(row + d->left * C, x + (i * H + iy) * W * C, (size_t)(W * C) * sizeof *row);
            memset(row + (d->left + W) * C, 0, (size_t)(d->right * C) * sizeof *row);
        }
    return 0;
}

int yp_cpu_zero_pad_backward(yp_backend *be, const yp_pad_desc *d, const float *dy, float *dx, float beta) {
    (void)be;
    if (pad_check("zero_pad_backward", d, dy, dx)) return -1;
    const int64_t C = d->in.c, W = d->in.w, H = d->in.h, OW = W + d->left + d->right, OH = H + d->top + d->bottom;
#pragma omp parallel for collapse(2) schedule(static) if (d->in.n * H * W * C >= YP_PAR_MIN)
    for (int64_t i = 0; i < d->in.n; i++)
        for (int64_t iy = 0; iy < H; iy++)
            accumulate(dx + (i * H + iy) * W * C, dy + ((i * OH + iy + d->top) * OW + d->left) * C, W * C, beta);
    return 0;
}
