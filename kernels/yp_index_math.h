/* yp_index_math.h - the data-movement ops (yp_ops.h: concat, upsample, maxpool, space_to_depth
 * and depth_to_space, zero_pad) as one output element at a time, in index arithmetic on NHWC
 * tensors with 64-bit indices: each function computes element `o` (or `e`) of the op's output
 * from its inputs, so a caller that runs it for every index in any order, one thread per index,
 * computes the whole op with no two threads writing one element. The CUDA backend's kernels
 * (kernels/cuda/eltwise.cu) are exactly such loops; the host test test_kernels_index runs the
 * same functions on the CPU against the CPU backend's ops, so the index arithmetic is checked
 * without a GPU. Plain C11 and CUDA: `static inline`, and __host__ __device__ under nvcc.
 *
 * The backward ops are gathers that add in the CPU backend's order (dx scaled by beta first,
 * then the contributions in output raster order), so with beta 0 or 1 they give its bits.
 * The functions that read tensors are YP_ELEM_GENERIC (yp_elem_math.h): under CUDA C++ templates
 * over the storage type (fp32, fp16, bf16; read through yp_ld, the sums in fp32), under C the
 * fp32 functions the CPU runs. */
#ifndef YP_INDEX_MATH_H
#define YP_INDEX_MATH_H

#include <stdint.h>

#include "yp_elem_math.h"
#include "yp_ops.h"

#if defined(__CUDACC__)
#define YP_INDEX_HD __host__ __device__
#else
#define YP_INDEX_HD
#endif

/* A gradient output's new value: v where beta is 0 (old is not read: it may be arena garbage),
 * else beta*old + v. */
YP_ELEM_GENERIC static inline YP_INDEX_HD float yp_acc(float beta, const yp_val *old, float v) {
    return beta == 0.0f ? v : beta * yp_ld(old) + v;
}

/* Concat: element i of an input with c channels sits at this index of the output with ctot
 * channels, the input's channels starting at off. */
static inline YP_INDEX_HD int64_t yp_concat_index(int64_t i, int64_t c, int64_t ctot, int64_t off) {
    int64_t r = i / c;
    return r * ctot + off + (i - r * c);
}

/* Nearest upsampling by s: output element o of (n, h*s, w*s, c) copies this input element. */
static inline YP_INDEX_HD int64_t yp_upsample_source(yp_dims in, int64_t s, int64_t o) {
    const int64_t C = in.c, OW = in.w * s, OH = in.h * s;
    int64_t c = o % C, t = o / C;
    int64_t ox = t % OW;
    t /= OW;
    int64_t oy = t % OH, i = t / OH;
    return ((i * in.h + oy / s) * in.w + ox / s) * C + c;
}

/* Its backward at input element e: beta*dx[e] + the gradients of its s*s copies, the first copy
 * first, then the others in (ty, tx) raster order. */
YP_ELEM_GENERIC static inline YP_INDEX_HD float yp_upsample_grad(const yp_val *dy, const yp_val *dx, yp_dims in,
                                                                 int64_t s, float beta, int64_t e) {
    const int64_t C = in.c, OW = in.w * s, OH = in.h * s;
    int64_t c = e % C, t = e / C;
    int64_t ix = t % in.w;
    t /= in.w;
    int64_t iy = t % in.h, i = t / in.h;
    const yp_val *first = dy + ((i * OH + iy * s) * OW + ix * s) * C + c;
    float g = yp_acc(beta, dx + e, yp_ld(first));
    for (int64_t ty = 0; ty < s; ty++)
        for (int64_t tx = ty == 0 ? 1 : 0; tx < s; tx++)
            g += yp_ld(first + (ty * OW + tx) * C);
    return g;
}

/* The valid input range [*lo, *hi) of pooling output coordinate o along an axis of `extent`. */
static inline YP_INDEX_HD void yp_pool_window(int64_t o, int k, int s, int p, int64_t extent, int64_t *lo,
                                              int64_t *hi) {
    int64_t a = o * s - p, b = a + k;
    *lo = a < 0 ? 0 : a;
    *hi = b > extent ? extent : b;
}

/* The maximum of pooling window (oy, ox) in channel c of one image (ximg, d.in's h, w, c) and,
 * in *arg, its pixel iy*w + ix. PyTorch's scan: kh outer, kw inner, a later element wins only
 * when strictly greater or NaN (ties go to the first maximum, NaN propagates). */
YP_ELEM_GENERIC static inline YP_INDEX_HD float yp_pool_max(const yp_val *ximg, int64_t oy, int64_t ox, int64_t c,
                                                            yp_pool_desc d, int64_t *arg) {
    const int64_t C = d.in.c, W = d.in.w;
    int64_t y0, y1, x0, x1;
    yp_pool_window(oy, d.k, d.s, d.p, d.in.h, &y0, &y1);
    yp_pool_window(ox, d.k, d.s, d.p, W, &x0, &x1);
    int64_t best_at = y0 * W + x0;
    float best = yp_ld(ximg + best_at * C + c);
    for (int64_t iy = y0; iy < y1; iy++)
        for (int64_t ix = iy == y0 ? x0 + 1 : x0; ix < x1; ix++) {
            float v = yp_ld(ximg + (iy * W + ix) * C + c);
            if (v > best || v != v) {
                best = v;
                best_at = iy * W + ix;
            }
        }
    *arg = best_at;
    return best;
}

/* Max pooling's output element o. */
YP_ELEM_GENERIC static inline YP_INDEX_HD float yp_pool_forward_at(const yp_val *x, yp_pool_desc d, int64_t o) {
    const int64_t C = d.out.c, OW = d.out.w, OH = d.out.h;
    int64_t c = o % C, t = o / C;
    int64_t ox = t % OW;
    t /= OW;
    int64_t oy = t % OH, i = t / OH;
    int64_t arg;
    return yp_pool_max(x + i * d.in.h * d.in.w * C, oy, ox, c, d, &arg);
}

/* Its backward at input element e: beta*dx[e] (0 without reading for beta 0), plus dy of every
 * output window that covers e and whose maximum (recomputed from x) e is, in output raster
 * order, which is the order the CPU's scatter adds them in. */
YP_ELEM_GENERIC static inline YP_INDEX_HD float yp_pool_grad(const yp_val *x, const yp_val *dy, const yp_val *dx,
                                                             yp_pool_desc d, float beta, int64_t e) {
    const int64_t C = d.in.c, H = d.in.h, W = d.in.w, OH = d.out.h, OW = d.out.w;
    int64_t c = e % C, t = e / C;
    int64_t ix = t % W;
    t /= W;
    int64_t iy = t % H, i = t / H;
    /* the outputs o with o*s - p <= iy < o*s - p + k, clamped into the output */
    int64_t ly = iy + d.p - d.k + 1, lx = ix + d.p - d.k + 1;
    int64_t oy0 = ly <= 0 ? 0 : (ly + d.s - 1) / d.s, oy1 = (iy + d.p) / d.s;
    int64_t ox0 = lx <= 0 ? 0 : (lx + d.s - 1) / d.s, ox1 = (ix + d.p) / d.s;
    if (oy1 > OH - 1) oy1 = OH - 1;
    if (ox1 > OW - 1) ox1 = OW - 1;
    float g = beta == 0.0f ? 0.0f : (beta == 1.0f ? yp_ld(dx + e) : beta * yp_ld(dx + e));
    const yp_val *ximg = x + i * H * W * C;
    const int64_t me = iy * W + ix;
    for (int64_t oy = oy0; oy <= oy1; oy++)
        for (int64_t ox = ox0; ox <= ox1; ox++) {
            int64_t arg;
            yp_pool_max(ximg, oy, ox, c, d, &arg);
            if (arg == me)
                g += yp_ld(dy + ((i * OH + oy) * OW + ox) * C + c);
        }
    return g;
}

/* Pixel blocks to channels (yp_s2d_desc, yp_ops.h): the fine pixel offset (sy, sx) of channel
 * block b of a coarse pixel, in d's block order. */
static inline YP_INDEX_HD void yp_s2d_block(const yp_s2d_desc *d, int64_t b, int64_t *sy, int64_t *sx) {
    int64_t hi = b / d->gain, lo = b - hi * d->gain;
    *sy = d->order == YP_S2D_COL_MAJOR ? lo : hi;
    *sx = d->order == YP_S2D_COL_MAJOR ? hi : lo;
}

/* Coarse element o of (n, h/g, w/g, g*g*c): the fine element it holds (space_to_depth copies it
 * there, depth_to_space back). */
static inline YP_INDEX_HD int64_t yp_s2d_source(const yp_s2d_desc *d, int64_t o) {
    const int64_t g = d->gain, C = d->fine.c, CB = g * g * C, oh = d->fine.h / g, ow = d->fine.w / g;
    int64_t cc = o % CB, t = o / CB;
    int64_t b = cc / C, c = cc - b * C;
    int64_t ox = t % ow;
    t /= ow;
    int64_t oy = t % oh, i = t / oh, sy, sx;
    yp_s2d_block(d, b, &sy, &sx);
    return ((i * d->fine.h + oy * g + sy) * d->fine.w + ox * g + sx) * C + c;
}

/* The inverse: the coarse element that fine element e is copied to (exactly one). */
static inline YP_INDEX_HD int64_t yp_s2d_target(const yp_s2d_desc *d, int64_t e) {
    const int64_t g = d->gain, C = d->fine.c, oh = d->fine.h / g, ow = d->fine.w / g;
    int64_t c = e % C, t = e / C;
    int64_t ix = t % d->fine.w;
    t /= d->fine.w;
    int64_t iy = t % d->fine.h, i = t / d->fine.h;
    int64_t sy = iy % g, sx = ix % g;
    int64_t b = d->order == YP_S2D_COL_MAJOR ? sx * g + sy : sy * g + sx;
    return ((i * oh + iy / g) * ow + ix / g) * g * g * C + b * C + c;
}

/* Zero padding (zero_pad): output element o of (n, h + top + bottom, w + left + right, c) copies
 * this input element, or is 0 where it is -1 (the border). */
static inline YP_INDEX_HD int64_t yp_pad_source(const yp_pad_desc *d, int64_t o) {
    const int64_t C = d->in.c, OW = d->in.w + d->left + d->right, OH = d->in.h + d->top + d->bottom;
    int64_t c = o % C, t = o / C;
    int64_t ox = t % OW;
    t /= OW;
    int64_t oy = t % OH, i = t / OH;
    int64_t iy = oy - d->top, ix = ox - d->left;
    if (iy < 0 || iy >= d->in.h || ix < 0 || ix >= d->in.w) return -1;
    return ((i * d->in.h + iy) * d->in.w + ix) * C + c;
}

/* The inverse: the output element input element e is copied to (exactly one; the border's
 * gradient goes nowhere). */
static inline YP_INDEX_HD int64_t yp_pad_target(const yp_pad_desc *d, int64_t e) {
    const int64_t C = d->in.c, OW = d->in.w + d->left + d->right, OH = d->in.h + d->top + d->bottom;
    int64_t c = e % C, t = e / C;
    int64_t ix = t % d->in.w;
    t /= d->in.w;
    int64_t iy = t % d->in.h, i = t / d->in.h;
    return ((i * OH + iy + d->top) * OW + ix + d->left) * C + c;
}

#endif
