/* attention.c - multi-head scaled dot-product attention on the CPU (NHWC, fp32), forward and
 * backward (yp_ops.h, yp_attn_desc): careful loops, one (image, head) pair per OpenMP iteration,
 * so the pairs write disjoint channel slices and L x L blocks of P and the scratch.
 * Forward: S = q k^T * scale, P = softmax(S) row by row (max subtracted), y = P v.
 * Backward: dP = dy v^T, dv = P^T dy, dS = P * (dP - rowsum(P * dP)), dq = dS k * scale,
 * dk = dS^T q * scale; P is the forward's or computed again the forward's way. */
#include <math.h>
#include <stddef.h>
#include <stdint.h>

#include "yp_cpu.h"

static int attn_check(const char *op, const yp_attn_desc *d) {
    if (!d)
        return yp_cpu_fail("%s: NULL descriptor", op);
    if (yp_cpu_check_elem(op, d->dtype) || yp_cpu_check_dims(op, "input", d->dims))
        return -1;
    if (d->heads < 1 || d->dims.c % d->heads)
        return yp_cpu_fail("%s: %d heads must divide the %lld channels", op, d->heads, (long long)d->dims.c);
    return 0;
}

/* Row i of P for image b, head h: softmax over j of scale * q[i] . k[j] into p (L floats). */
static void probs_row(const float *q, const float *k, int64_t L, int64_t c, int64_t dh, float scale, float *p) {
    float mx = -INFINITY;
    for (int64_t j = 0; j < L; j++) {
        const float *kj = k + j * c;
        float s = 0.0f;
        for (int64_t e = 0; e < dh; e++)
            s += q[e] * kj[e];
        p[j] = s * scale;
        mx = p[j] > mx ? p[j] : mx;
    }
    float sum = 0.0f;
    for (int64_t j = 0; j < L; j++) {
        p[j] = expf(p[j] - mx);
        sum += p[j];
    }
    for (int64_t j = 0; j < L; j++)
        p[j] /= sum;
}

/* P of one (image, head): rows of q and k start at the head's channel offset. */
static void probs_block(const float *q, const float *k, int64_t L, int64_t c, int64_t dh, float scale, float *p) {
    for (int64_t i = 0; i < L; i++)
        probs_row(q + i * c, k, L, c, dh, scale, p + i * L);
}

int yp_cpu_attention_forward(yp_backend *be, const yp_attn_desc *d, const float *q, const float *k, const float *v,
                             float *y, float *probs) {
    (void)be;
    const void *ptrs[5] = {q, k, v, y, probs};
    if (attn_check("attention_forward", d) || yp_cpu_check_ptrs("attention_forward", 5, ptrs))
        return -1;
    const int64_t c = d->dims.c, L = d->dims.h * d->dims.w, H = d->heads, dh = c / H, pairs = d->dims.n * H;
    const float scale = 1.0f / sqrtf((float)dh);
#pragma omp parallel for schedule(static) if (pairs * L * L * dh >= YP_PAR_MIN)
    for (int64_t bh = 0; bh < pairs; bh++) {
        const int64_t b = bh / H, off = b * L * c + (bh % H) * dh;
        float *p = probs + bh * L * L;
        probs_block(q + off, k + off, L, c, dh, scale, p);
        for (int64_t i = 0; i < L; i++) {
            float *yi = y + off + i * c;
            for (int64_t e = 0; e < dh; e++)
                yi[e] = 0.0f;
            for (int64_t j = 0; j < L; j++) {
                const float pij = p[i * L + j], *vj = v + off + j * c;
                for (int64_t e = 0; e < dh; e++)
                    yi[e] += pij * vj[e];
            }
        }
    }
    return 0;
}

/* x[i, head slice] *= beta for every row of one (image, head): the part of an input gradient
 * this pair owns. */
static void scale_slice(float *x, int64_t L, int64_t c, int64_t dh, float beta) {
    for (int64_t i = 0; i < L; i++)
        for (int64_t e = 0; e < dh; e++)
            x[i * c + e] = beta == 0.0f ? 0.0f : x[i * c + e] * beta;
}

/* One (image, head) of the backward; operands start at the pair's channel offset, p and ds are
 * its L x L blocks. */
static void backward_pair(const float *q, const float *k, const float *v, const float *p, const float *dy,
                          float *dq, float *dk, float *dv, float *ds, int64_t L, int64_t c, int64_t dh, float scale) {
    for (int64_t i = 0; i < L; i++) { /* dS row i = P_i * (dP_i - P_i . dP_i), dP_ij = dy_i . v_j */
        const float *dyi = dy + i * c, *pi = p + i * L;
        float *dsi = ds + i * L, dot = 0.0f;
        for (int64_t j = 0; j < L; j++) {
            const float *vj = v + j * c;
            float s = 0.0f;
            for (int64_t e = 0; e < dh; e++)
                s += dyi[e] * vj[e];
            dsi[j] = s;
            dot += s * pi[j];
        }
        for (int64_t j = 0; j < L; j++)
            dsi[j] = pi[j] * (dsi[j] - dot);
    }
    for (int64_t i = 0; i < L; i++)
        for (int64_t j = 0; j < L; j++) {
            const float pij = p[i * L + j], dsij = ds[i * L + j] * scale;
            for (int64_t e = 0; e < dh; e++) {
                if (dv) dv[j * c + e] += pij * dy[i * c + e];
                if (dq) dq[i * c + e] += dsij * k[j * c + e];
                if (dk) dk[j * c + e] += dsij * q[i * c + e];
            }
        }
}

int yp_cpu_attention_backward(yp_backend *be, const yp_attn_desc *d, const float *q, const float *k, const float *v,
                              const float *probs, const float *dy, float *dq, float *dk, float *dv,
                              const float *betas, float *ws) {
    (void)be;
    const void *ptrs[6] = {q, k, v, dy, betas, ws};
    if (attn_check("attention_backward", d) || yp_cpu_check_ptrs("attention_backward", 6, ptrs))
        return -1;
    const int64_t c = d->dims.c, L = d->dims.h * d->dims.w, H = d->heads, dh = c / H, pairs = d->dims.n * H;
    const float scale = 1.0f / sqrtf((float)dh);
    float *const grads[3] = {dq, dk, dv};
#pragma omp parallel for schedule(static) if (pairs * L * L * dh >= YP_PAR_MIN)
    for (int64_t bh = 0; bh < pairs; bh++) {
        const int64_t b = bh / H, off = b * L * c + (bh % H) * dh;
        float *ds = ws + bh * L * L;
        const float *p = probs ? probs + bh * L * L : NULL;
        if (!p) { /* P again, into the second half of the scratch */
            float *pw = ws + (pairs + bh) * L * L;
            probs_block(q + off, k + off, L, c, dh, scale, pw);
            p = pw;
        }
        for (int g = 0; g < 3; g++) /* in order, so an aliased later gradient with beta 1 keeps the first's */
            if (grads[g] && betas[g] != 1.0f)
                scale_slice(grads[g] + off, L, c, dh, betas[g]);
        backward_pair(q + off, k + off, v + off, p, dy + off, dq ? dq + off : NULL, dk ? dk + off : NULL,
                      dv ? dv + off : NULL, ds, L, c, dh, scale);
    }
    return 0;
}
