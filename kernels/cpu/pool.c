/* pool.c - max pooling on the CPU (NHWC, fp32, floor mode, no dilation), forward and backward.
 * Window positions outside the input are skipped (padding acts as -inf). The scan is PyTorch's:
 * kh outer, kw inner, a later element wins only when strictly greater or NaN, so ties go to the
 * first maximum and NaN propagates. Backward recomputes that argmax from x instead of saving
 * indices. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "yp_cpu.h"

enum { CB = 256 }; /* channels per block of the backward's stack arrays */

static int pool_check(const char *op, const yp_pool_desc *d) {
    if (!d)
        return yp_cpu_fail("%s: NULL descriptor", op);
    if (yp_cpu_check_elem(op, d->dtype))
        return -1;
    if (yp_cpu_check_dims(op, "input", d->in) || yp_cpu_check_dims(op, "output", d->out))
        return -1;
    if (d->k < 1 || d->s < 1 || d->p < 0 || d->p > d->k / 2)
        return yp_cpu_fail("%s: bad kernel %d / stride %d / padding %d (padding must be <= k/2)", op, d->k,
                           d->s, d->p);
    int64_t oh = (d->in.h + 2 * d->p - d->k) / d->s + 1, ow = (d->in.w + 2 * d->p - d->k) / d->s + 1;
    if (d->in.h + 2 * d->p < d->k || d->in.w + 2 * d->p < d->k || d->out.h != oh || d->out.w != ow ||
        d->out.n != d->in.n || d->out.c != d->in.c)
        return yp_cpu_fail("%s: output %lldx%lldx%lldx%lld does not follow from input %lldx%lldx%lldx%lld "
                           "with k %d s %d p %d",
                           op, (long long)d->out.n, (long long)d->out.h, (long long)d->out.w,
                           (long long)d->out.c, (long long)d->in.n, (long long)d->in.h, (long long)d->in.w,
                           (long long)d->in.c, d->k, d->s, d->p);
    return 0;
}

/* The valid input range [*lo, *hi) of output coordinate o along an axis of the given extent. */
static void window(int64_t o, const yp_pool_desc *d, int64_t extent, int64_t *lo, int64_t *hi) {
    int64_t a = o * d->s - d->p, b = a + d->k;
    *lo = a < 0 ? 0 : a;
    *hi = b > extent ? extent : b;
}

/* m = max(m, x) elementwise with PyTorch's rule (strictly greater or NaN), branch-free so it
 * vectorises. */
static void max_into(float *restrict m, const float *restrict x, int64_t n) {
    for (int64_t j = 0; j < n; j++) {
        float v = x[j];
        m[j] = (v > m[j] || v != v) ? v : m[j];
    }
}

/* The same with the winner's pixel index kept beside each maximum. */
static void argmax_into(float *restrict m, int32_t *restrict arg, const float *restrict x, int32_t pixel,
                        int64_t n) {
    for (int64_t j = 0; j < n; j++) {
        float v = x[j];
        int take = v > m[j] || v != v;
        m[j] = take ? v : m[j];
        arg[j] = take ? pixel : arg[j];
    }
}

int yp_cpu_maxpool_forward(yp_backend *be, const yp_pool_desc *d, const float *x, float *y) {
    static const char op[] = "maxpool_forward";
    (void)be;
    if (pool_check(op, d) || yp_cpu_check_ptrs(op, 2, (const void *[]){x, y}))
        return -1;
    const int64_t C = d->in.c, H = d->in.h, W = d->in.w;
#pragma omp parallel for collapse(2) schedule(static) if (d->out.n * d->out.h * d->out.w * C >= YP_PAR_MIN)
    for (int64_t i = 0; i < d->in.n; i++) {
        for (int64_t oy = 0; oy < d->out.h; oy++) {
            const float *ximg = x + i * H * W * C;
            float *yp = y + (i * d->out.h + oy) * d->out.w * C;
            int64_t y0, y1;
            window(oy, d, H, &y0, &y1);
            for (int64_t ox = 0; ox < d->out.w; ox++, yp += C) {
                int64_t x0, x1;
                window(ox, d, W, &x0, &x1);
                /* the first window position initialises, the rest compete in kh-outer order */
                memcpy(yp, ximg + (y0 * W + x0) * C, (size_t)C * sizeof *yp);
                for (int64_t iy = y0; iy < y1; iy++)
                    for (int64_t ix = iy == y0 ? x0 + 1 : x0; ix < x1; ix++)
                        max_into(yp, ximg + (iy * W + ix) * C, C);
            }
        }
    }
    return 0;
}

int yp_cpu_maxpool_backward(yp_backend *be, const yp_pool_desc *d, const float *x, const float *dy, float *dx,
                            float beta) {
    static const char op[] = "maxpool_backward";
    (void)be;
    if (pool_check(op, d) || yp_cpu_check_ptrs(op, 3, (const void *[]){x, dy, dx}))
        return -1;
    const int64_t C = d->in.c, H = d->in.h, W = d->in.w;
    if (H * W > INT32_MAX)
        return yp_cpu_fail("%s: %lldx%lld pixels per image is too many", op, (long long)H, (long long)W);
    yp_cpu_scale_beta(dx, d->in.n * H * W * C, beta);
    /* image by image in parallel: the windows of one image overlap, so its scatter-adds stay on one thread */
#pragma omp parallel for schedule(static) if (d->in.n * H * W * C >= YP_PAR_MIN)
    for (int64_t i = 0; i < d->in.n; i++) {
        const float *g = dy + i * d->out.h * d->out.w * C;
        const float *ximg = x + i * H * W * C;
        float *dximg = dx + i * H * W * C;
        for (int64_t oy = 0; oy < d->out.h; oy++) {
            int64_t y0, y1;
            window(oy, d, H, &y0, &y1);
            for (int64_t ox = 0; ox < d->out.w; ox++, g += C) {
                int64_t x0, x1;
                window(ox, d, W, &x0, &x1);
                for (int64_t c0 = 0; c0 < C; c0 += CB) {
                    int64_t cb = C - c0 < CB ? C - c0 : CB;
                    float best[CB];
                    int32_t arg[CB]; /* pixel index iy*W + ix of the maximum, per channel */
                    int32_t first = (int32_t)(y0 * W + x0);
                    memcpy(best, ximg + first * C + c0, (size_t)cb * sizeof *best);
                    for (int64_t j = 0; j < cb; j++)
                        arg[j] = first;
                    for (int64_t iy = y0; iy < y1; iy++)
                        for (int64_t ix = iy == y0 ? x0 + 1 : x0; ix < x1; ix++)
                            argmax_into(best, arg, ximg + (iy * W + ix) * C + c0, (int32_t)(iy * W + ix), cb);
                    for (int64_t j = 0; j < cb; j++)
                        dximg[(int64_t)arg[j] * C + c0 + j] += g[c0 + j];
                }
            }
        }
    }
    return 0;
}
