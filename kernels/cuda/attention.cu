// attention.cu - multi-head scaled dot-product attention on the GPU (yp_ops.h, yp_attn_desc); the
// same formulas as kernels/cpu/attention.c. Four grid-stride kernels, 64-bit indices: per (image,
// head) score dots of two NHWC operands, the row softmax and its backward, and an L x L block
// applied (or its transpose) to an NHWC operand. Forward: dots(q, k) -> S, softmax -> P,
// apply(P, v) -> y. Backward: dots(dy, v) -> dP, softmax backward -> dS, apply(dS, k) -> dq,
// apply(dS^T, q) -> dk, apply(P^T, dy) -> dv (P computed again first when the forward's was not
// kept).
//
// Element types: F32, F16 and BF16 (d->dtype; anything else refused). q, k, v, y, dy, dq, dk and
// dv are of that type, and so are probs (P) and the backward's ws: the schedule gives the
// attention probabilities (YP_ROLE_ATTN_PROBS, kept or workspace) and the backward's scratch
// (YP_ROLE_ATTN_SCRATCH) the activations' type (yp_sched_opts.act_dtype), so probs holds
// n*heads*L*L elements of d->dtype and ws that many (P kept) or twice that (P computed again into
// its second half), not floats, under F16/BF16. The rule: every L x L block lives in the
// activation type; every dot product, the softmax's maximum and sum, the softmax backward's row
// dot and the beta-scaled accumulation of the gradients run in fp32, and each stored element is
// rounded to the type once. So the rounding points are those of PyTorch's autocast attention,
// whose bmm also hands the softmax its scores in the activation type: S rounded before the
// softmax, P rounded (the stored P, which y, dv and dS read), dP and dS rounded between the
// backward's kernels, the outputs rounded when stored. Under F16/BF16 the softmax reads S three
// times (maximum, sum, then each exp computed again and divided by the sum, rather than read back
// rounded), so P is rounded once. The F32 path is these templates for float: the same arithmetic
// in the same order as before (its softmax keeps each exp in the row, as it did).
#include <cuda_runtime.h>
#include <math.h>

#include <type_traits>

#include "launch.cuh"
#include "yp_cuda.h"

namespace {

struct attn_geom {
    int64_t n, L, c, dh, heads;
};

// out[bh, i, j] = alpha * a[b, i, head] . b[b, j, head] for every image b and head of bh.
template <typename T>
__global__ void dots_kernel(const T *a, const T *b, T *out, float alpha, attn_geom g) {
    const int64_t total = g.n * g.heads * g.L * g.L;
    GRID_STRIDE(idx, total) {
        const int64_t j = idx % g.L, i = idx / g.L % g.L, bh = idx / (g.L * g.L);
        const int64_t off = bh / g.heads * g.L * g.c + bh % g.heads * g.dh;
        const T *ai = a + off + i * g.c, *bj = b + off + j * g.c;
        float s = 0.0f;
        for (int64_t e = 0; e < g.dh; e++) s += yp_ld(ai + e) * yp_ld(bj + e);
        yp_st(out + idx, alpha * s);
    }
}

// Each row of p (rows of L) replaced by its softmax, the maximum subtracted first. Where T holds
// an fp32 value exactly (float) the row keeps each exp for the division; else the division
// computes the exp again from the score, so that P is rounded to T once, not twice.
template <typename T>
__global__ void softmax_rows_kernel(T *p, int64_t rows, int64_t L) {
    const bool keep = std::is_same<T, float>::value;
    GRID_STRIDE(r, rows) {
        T *row = p + r * L;
        float mx = -INFINITY, sum = 0.0f;
        for (int64_t j = 0; j < L; j++) mx = fmaxf(mx, yp_ld(row + j));
        for (int64_t j = 0; j < L; j++) {
            const float e = expf(yp_ld(row + j) - mx);
            if (keep) yp_st(row + j, e);
            sum += e;
        }
        for (int64_t j = 0; j < L; j++) yp_st(row + j, (keep ? yp_ld(row + j) : expf(yp_ld(row + j) - mx)) / sum);
    }
}

// ds (holding dP) becomes dS = P * (dP - rowsum(P * dP)), row by row.
template <typename T>
__global__ void softmax_backward_rows_kernel(const T *p, T *ds, int64_t rows, int64_t L) {
    GRID_STRIDE(r, rows) {
        const T *pr = p + r * L;
        T *dr = ds + r * L;
        float dot = 0.0f;
        for (int64_t j = 0; j < L; j++) dot += yp_ld(pr + j) * yp_ld(dr + j);
        for (int64_t j = 0; j < L; j++) yp_st(dr + j, yp_ld(pr + j) * (yp_ld(dr + j) - dot));
    }
}

// out[b, r, ch] = beta * out + alpha * sum_t M[bh, r, t] * x[b, t, ch] (M^T's [r, t] = M[t, r]
// when trans), bh = b * heads + ch / dh. beta 0 never reads out.
template <typename T>
__global__ void apply_kernel(const T *m, const T *x, T *out, float alpha, float beta, int trans, attn_geom g) {
    const int64_t total = g.n * g.L * g.c;
    GRID_STRIDE(idx, total) {
        const int64_t ch = idx % g.c, r = idx / g.c % g.L, b = idx / (g.c * g.L);
        const T *mb = m + (b * g.heads + ch / g.dh) * g.L * g.L;
        const T *xb = x + b * g.L * g.c + ch;
        float s = 0.0f;
        for (int64_t t = 0; t < g.L; t++)
            s += (trans ? yp_ld(mb + t * g.L + r) : yp_ld(mb + r * g.L + t)) * yp_ld(xb + t * g.c);
        yp_st(out + idx, beta == 0.0f ? alpha * s : beta * yp_ld(out + idx) + alpha * s);
    }
}

int check_desc(const char *op, const yp_attn_desc *d) {
    if (!d) return yp_cuda_fail("%s: NULL descriptor", op);
    if (yp_cuda::check_elem(op, d->dtype) || yp_cuda::check_dims(op, "input", d->dims)) return -1;
    if (d->heads < 1 || d->dims.c % d->heads)
        return yp_cuda_fail("%s: %d heads must divide the %lld channels", op, d->heads, (long long)d->dims.c);
    return 0;
}

attn_geom geom_of(const yp_attn_desc *d) {
    attn_geom g = {d->dims.n, d->dims.h * d->dims.w, d->dims.c, d->dims.c / d->heads, d->heads};
    return g;
}

using yp_cuda::grid_for;
using yp_cuda::kBlockSize;

// S = q k^T * scale, then its row softmax, into p.
template <typename T>
int probs_into(yp_cuda_backend *cb, const attn_geom &g, const T *q, const T *k, T *p, const char *op) {
    const int64_t scores = g.n * g.heads * g.L * g.L, rows = g.n * g.heads * g.L;
    dots_kernel<T><<<grid_for(scores), kBlockSize, 0, cb->stream>>>(q, k, p, 1.0f / sqrtf((float)g.dh), g);
    if (yp_cuda_check_launch(op)) return -1;
    softmax_rows_kernel<T><<<grid_for(rows), kBlockSize, 0, cb->stream>>>(p, rows, g.L);
    return yp_cuda_check_launch(op);
}

template <typename T>
int forward(yp_cuda_backend *cb, const attn_geom &g, const T *q, const T *k, const T *v, T *y, T *probs) {
    if (probs_into(cb, g, q, k, probs, "attention_forward")) return -1;
    apply_kernel<T><<<grid_for(g.n * g.L * g.c), kBlockSize, 0, cb->stream>>>(probs, v, y, 1.0f, 0.0f, 0, g);
    return yp_cuda_check_launch("attention_forward");
}

// ws: elements of T, scores of them for dP/dS, then (probs NULL) scores more for P.
template <typename T>
int backward(yp_cuda_backend *cb, const attn_geom &g, const T *q, const T *k, const T *v, const T *probs,
             const T *dy, T *dq, T *dk, T *dv, const float *betas, T *ws) {
    const int64_t scores = g.n * g.heads * g.L * g.L, rows = g.n * g.heads * g.L, elems = g.n * g.L * g.c;
    const float scale = 1.0f / sqrtf((float)g.dh);
    T *ds = ws;
    const T *p = probs;
    if (!p) {
        if (probs_into(cb, g, q, k, ws + scores, "attention_backward")) return -1;
        p = ws + scores;
    }
    dots_kernel<T><<<grid_for(scores), kBlockSize, 0, cb->stream>>>(dy, v, ds, 1.0f, g);
    if (yp_cuda_check_launch("attention_backward")) return -1;
    softmax_backward_rows_kernel<T><<<grid_for(rows), kBlockSize, 0, cb->stream>>>(p, ds, rows, g.L);
    if (yp_cuda_check_launch("attention_backward")) return -1;
    // in order on the stream, so an aliased later gradient (beta 1) adds to the earlier one
    if (dq) apply_kernel<T><<<grid_for(elems), kBlockSize, 0, cb->stream>>>(ds, k, dq, scale, betas[0], 0, g);
    if (dk) apply_kernel<T><<<grid_for(elems), kBlockSize, 0, cb->stream>>>(ds, q, dk, scale, betas[1], 1, g);
    if (dv) apply_kernel<T><<<grid_for(elems), kBlockSize, 0, cb->stream>>>(p, dy, dv, 1.0f, betas[2], 1, g);
    return yp_cuda_check_launch("attention_backward");
}

}  // namespace

extern "C" int yp_cuda_attention_forward(yp_backend *be, const yp_attn_desc *d, const float *q, const float *k,
                                         const float *v, float *y, float *probs) {
    yp_cuda_backend *cb = yp_cuda_of(be);
    const void *ptrs[5] = {q, k, v, y, probs};
    if (check_desc("attention_forward", d) || yp_cuda::check_ptrs("attention_forward", 5, ptrs)) return -1;
    if (yp_cuda_use("attention_forward", cb)) return -1;
    const attn_geom g = geom_of(d);
    YP_CUDA_BY_ELEM(d->dtype, T,
                    return forward<T>(cb, g, (const T *)q, (const T *)k, (const T *)v, (T *)y, (T *)probs));
}

extern "C" int yp_cuda_attention_backward(yp_backend *be, const yp_attn_desc *d, const float *q, const float *k,
                                          const float *v, const float *probs, const float *dy, float *dq,
                                          float *dk, float *dv, const float *betas, float *ws) {
    yp_cuda_backend *cb = yp_cuda_of(be);
    const void *ptrs[6] = {q, k, v, dy, betas, ws};
    if (check_desc("attention_backward", d) || yp_cuda::check_ptrs("attention_backward", 6, ptrs)) return -1;
    if (yp_cuda_use("attention_backward", cb)) return -1;
    const attn_geom g = geom_of(d);
    YP_CUDA_BY_ELEM(d->dtype, T,
                    return backward<T>(cb, g, (const T *)q, (const T *)k, (const T *)v, (const T *)probs,
                                       (const T *)dy, (T *)dq, (T *)dk, (T *)dv, betas, (T *)ws));
}

extern "C" void yp_cuda_register_attention(yp_ops *o) {
    o->attention_forward = yp_cuda_attention_forward;
    o->attention_backward = yp_cuda_attention_backward;
}
