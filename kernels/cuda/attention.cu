// attention.cu - multi-head scaled dot-product attention on the GPU, fp32 (yp_ops.h,
// yp_attn_desc); the same formulas as kernels/cpu/attention.c. Four grid-stride kernels, 64-bit
// indices: per (image, head) score dots of two NHWC operands, the row softmax and its backward,
// and an L x L block applied (or its transpose) to an NHWC operand. Forward: dots(q, k) -> S,
// softmax -> P, apply(P, v) -> y. Backward: dots(dy, v) -> dP, softmax backward -> dS,
// apply(dS, k) -> dq, apply(dS^T, q) -> dk, apply(P^T, dy) -> dv (P computed again first when
// the forward's was not kept).
#include <cuda_runtime.h>
#include <math.h>

#include "launch.cuh"
#include "yp_cuda.h"

namespace {

struct attn_geom {
    int64_t n, L, c, dh, heads;
};

// out[bh, i, j] = alpha * a[b, i, head] . b[b, j, head] for every image b and head of bh.
__global__ void dots_kernel(const float *a, const float *b, float *out, float alpha, attn_geom g) {
    const int64_t total = g.n * g.heads * g.L * g.L, stride = (int64_t)blockDim.x * gridDim.x;
    for (int64_t idx = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; idx < total; idx += stride) {
        const int64_t j = idx % g.L, i = idx / g.L % g.L, bh = idx / (g.L * g.L);
        const int64_t off = bh / g.heads * g.L * g.c + bh % g.heads * g.dh;
        const float *ai = a + off + i * g.c, *bj = b + off + j * g.c;
        float s = 0.0f;
        for (int64_t e = 0; e < g.dh; e++) s += ai[e] * bj[e];
        out[idx] = alpha * s;
    }
}

// Each row of p (rows of L) replaced by its softmax, the maximum subtracted first.
__global__ void softmax_rows_kernel(float *p, int64_t rows, int64_t L) {
    const int64_t stride = (int64_t)blockDim.x * gridDim.x;
    for (int64_t r = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; r < rows; r += stride) {
        float *row = p + r * L, mx = -INFINITY, sum = 0.0f;
        for (int64_t j = 0; j < L; j++) mx = fmaxf(mx, row[j]);
        for (int64_t j = 0; j < L; j++) {
            row[j] = expf(row[j] - mx);
            sum += row[j];
        }
        for (int64_t j = 0; j < L; j++) row[j] /= sum;
    }
}

// ds (holding dP) becomes dS = P * (dP - rowsum(P * dP)), row by row.
__global__ void softmax_backward_rows_kernel(const float *p, float *ds, int64_t rows, int64_t L) {
    const int64_t stride = (int64_t)blockDim.x * gridDim.x;
    for (int64_t r = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; r < rows; r += stride) {
        const float *pr = p + r * L;
        float *dr = ds + r * L, dot = 0.0f;
        for (int64_t j = 0; j < L; j++) dot += pr[j] * dr[j];
        for (int64_t j = 0; j < L; j++) dr[j] = pr[j] * (dr[j] - dot);
    }
}

// out[b, r, ch] = beta * out + alpha * sum_t M[bh, r, t] * x[b, t, ch] (M^T's [r, t] = M[t, r]
// when trans), bh = b * heads + ch / dh. beta 0 never reads out.
__global__ void apply_kernel(const float *m, const float *x, float *out, float alpha, float beta, int trans,
                             attn_geom g) {
    const int64_t total = g.n * g.L * g.c, stride = (int64_t)blockDim.x * gridDim.x;
    for (int64_t idx = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; idx < total; idx += stride) {
        const int64_t ch = idx % g.c, r = idx / g.c % g.L, b = idx / (g.c * g.L);
        const float *mb = m + (b * g.heads + ch / g.dh) * g.L * g.L;
        const float *xb = x + b * g.L * g.c + ch;
        float s = 0.0f;
        for (int64_t t = 0; t < g.L; t++) s += (trans ? mb[t * g.L + r] : mb[r * g.L + t]) * xb[t * g.c];
        out[idx] = beta == 0.0f ? alpha * s : beta * out[idx] + alpha * s;
    }
}

int check_desc(const char *op, const yp_attn_desc *d) {
    if (!d) return yp_cuda_fail("%s: NULL descriptor", op);
    if (yp_cuda::check_f32(op, d->dtype) || yp_cuda::check_dims(op, "input", d->dims)) return -1;
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
int probs_into(yp_cuda_backend *cb, const attn_geom &g, const float *q, const float *k, float *p, const char *op) {
    const int64_t scores = g.n * g.heads * g.L * g.L, rows = g.n * g.heads * g.L;
    dots_kernel<<<grid_for(scores), kBlockSize, 0, cb->stream>>>(q, k, p, 1.0f / sqrtf((float)g.dh), g);
    if (yp_cuda_check_launch(op)) return -1;
    softmax_rows_kernel<<<grid_for(rows), kBlockSize, 0, cb->stream>>>(p, rows, g.L);
    return yp_cuda_check_launch(op);
}

}  // namespace

extern "C" int yp_cuda_attention_forward(yp_backend *be, const yp_attn_desc *d, const float *q, const float *k,
                                         const float *v, float *y, float *probs) {
    yp_cuda_backend *cb = yp_cuda_of(be);
    const void *ptrs[5] = {q, k, v, y, probs};
    if (check_desc("attention_forward", d) || yp_cuda::check_ptrs("attention_forward", 5, ptrs)) return -1;
    if (yp_cuda_use("attention_forward", cb)) return -1;
    const attn_geom g = geom_of(d);
    if (probs_into(cb, g, q, k, probs, "attention_forward")) return -1;
    apply_kernel<<<grid_for(g.n * g.L * g.c), kBlockSize, 0, cb->stream>>>(probs, v, y, 1.0f, 0.0f, 0, g);
    return yp_cuda_check_launch("attention_forward");
}

extern "C" int yp_cuda_attention_backward(yp_backend *be, const yp_attn_desc *d, const float *q, const float *k,
                                          const float *v, const float *probs, const float *dy, float *dq,
                                          float *dk, float *dv, const float *betas, float *ws) {
    yp_cuda_backend *cb = yp_cuda_of(be);
    const void *ptrs[6] = {q, k, v, dy, betas, ws};
    if (check_desc("attention_backward", d) || yp_cuda::check_ptrs("attention_backward", 6, ptrs)) return -1;
    if (yp_cuda_use("attention_backward", cb)) return -1;
    const attn_geom g = geom_of(d);
    const int64_t scores = g.n * g.heads * g.L * g.L, rows = g.n * g.heads * g.L, elems = g.n * g.L * g.c;
    const float scale = 1.0f / sqrtf((float)g.dh);
    float *ds = ws;
    const float *p = probs;
    if (!p) {
        if (probs_into(cb, g, q, k, ws + scores, "attention_backward")) return -1;
        p = ws + scores;
    }
    dots_kernel<<<grid_for(scores), kBlockSize, 0, cb->stream>>>(dy, v, ds, 1.0f, g);
    if (yp_cuda_check_launch("attention_backward")) return -1;
    softmax_backward_rows_kernel<<<grid_for(rows), kBlockSize, 0, cb->stream>>>(p, ds, rows, g.L);
    if (yp_cuda_check_launch("attention_backward")) return -1;
    // in order on the stream, so an aliased later gradient (beta 1) adds to the earlier one
    if (dq) apply_kernel<<<grid_for(elems), kBlockSize, 0, cb->stream>>>(ds, k, dq, scale, betas[0], 0, g);
    if (dk) apply_kernel<<<grid_for(elems), kBlockSize, 0, cb->stream>>>(ds, q, dk, scale, betas[1], 1, g);
    if (dv) apply_kernel<<<grid_for(elems), kBlockSize, 0, cb->stream>>>(p, dy, dv, 1.0f, betas[2], 1, g);
    return yp_cuda_check_launch("attention_backward");
}

extern "C" void yp_cuda_register_attention(yp_ops *o) {
    o->attention_forward = yp_cuda_attention_forward;
    o->attention_backward = yp_cuda_attention_backward;
}
