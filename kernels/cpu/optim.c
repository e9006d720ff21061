/* optim.c - optimizer steps on one flat parameter tensor (fp32), in PyTorch's semantics: SGD with
 * Nesterov momentum, Adam and AdamW with bias correction, the EMA of the weights, and the sum of
 * squares used for gradient-norm clipping. The hyperparameters come in a yp_optim_hyp; its
 * grad_scale multiplies the raw gradient first (loss scaling, accumulation, clipping folded into one
 * factor). Single pass, on the OpenMP threads for large tensors. */
#include <math.h>
#include <stddef.h>
#include <string.h>

#include "yp_cpu.h"
#include "yp_optim_math.h" /* the per-element formulas, shared with the CUDA backend */

int yp_cpu_sgd_step(yp_backend *be, yp_elem dt, float *w, const float *grad, float *m, int64_t n,
                    const yp_optim_hyp *h) {
    static const char op[] = "sgd_step";
    (void)be;
    if (yp_cpu_check_elem(op, dt)) return -1;
    if (yp_cpu_check_count(op, n) || yp_cpu_check_ptrs(op, 1, (const void *[]){h}) ||
        (n > 0 && yp_cpu_check_ptrs(op, 3, (const void *[]){w, grad, m})))
        return -1;
    const float lr = h->lr, momentum = h->momentum, wd = h->weight_decay, scale = h->grad_scale;
    /* torch.optim.SGD(nesterov=True, dampening=0): d = g + wd*w; buf = momentum*buf + d (buf starts
     * as d, which is what a zero buffer gives); w -= lr*(d + momentum*buf). */
#pragma omp parallel for simd schedule(static) if (n >= YP_PAR_MIN)
    for (int64_t i = 0; i < n; i++)
        w[i] = yp_sgd_elem(w[i], grad[i], &m[i], lr, momentum, wd, scale);
    return 0;
}

int yp_cpu_adam_step(yp_backend *be, yp_elem dt, float *w, const float *grad, float *m, float *v, int64_t n,
                     const yp_optim_hyp *h) {
    static const char op[] = "adam_step";
    (void)be;
    if (yp_cpu_check_elem(op, dt)) return -1;
    if (yp_cpu_check_count(op, n) || yp_cpu_check_ptrs(op, 1, (const void *[]){h}) ||
        (n > 0 && yp_cpu_check_ptrs(op, 4, (const void *[]){w, grad, m, v})))
        return -1;
    const int64_t t = h->step;
    if (t < 1)
        return yp_cpu_fail("%s: step %lld must be >= 1", op, (long long)t);
    /* torch.optim.Adam / AdamW (amsgrad off): AdamW first decays w by (1 - lr*wd), Adam adds wd*w to
     * the gradient; then m = b1*m + (1-b1)*g, v = b2*v + (1-b2)*g^2,
     * w -= (lr / (1 - b1^t)) * m / (sqrt(v) / sqrt(1 - b2^t) + eps). */
    const yp_adam_coef k = yp_adam_coefs(h);
#pragma omp parallel for simd schedule(static) if (n >= YP_PAR_MIN)
    for (int64_t i = 0; i < n; i++)
        w[i] = yp_adam_elem(w[i], grad[i], &m[i], &v[i], k);
    return 0;
}

int yp_cpu_ema_update(yp_backend *be, yp_elem dt, float *ema, const float *w, int64_t n, float d) {
    static const char op[] = "ema_update";
    (void)be;
    if (yp_cpu_check_elem(op, dt)) return -1;
    if (yp_cpu_check_count(op, n) || (n > 0 && yp_cpu_check_ptrs(op, 2, (const void *[]){ema, w})))
        return -1;
    const float one_minus = 1.0f - d;
#pragma omp parallel for simd schedule(static) if (n >= YP_PAR_MIN)
    for (int64_t i = 0; i < n; i++)
        ema[i] = yp_ema_elem(ema[i], w[i], d, one_minus);
    return 0;
}

int yp_cpu_sum_squares(yp_backend *be, yp_elem dt, const float *x, int64_t n, double *out) {
    static const char op[] = "sum_squares";
    (void)be;
    if (yp_cpu_check_elem(op, dt)) return -1;
    if (yp_cpu_check_count(op, n) || yp_cpu_check_ptrs(op, 1, (const void *[]){out}) ||
        (n > 0 && yp_cpu_check_ptrs(op, 1, (const void *[]){x})))
        return -1;
    /* Four independent double accumulators: the adds pipeline and vectorise without -ffast-math. */
    double acc[4] = {0, 0, 0, 0};
    int64_t i = 0;
    for (; i + 4 <= n; i += 4)
        for (int j = 0; j < 4; j++)
            acc[j] += (double)x[i + j] * x[i + j];
    for (; i < n; i++)
        acc[0] += (double)x[i] * x[i];
    *out = (acc[0] + acc[1]) + (acc[2] + acc[3]);
    return 0;
}

/* The tensors' sums one after another, added as the executor's loop over sum_squares adds them. */
int yp_cpu_sum_squares_multi(yp_backend *be, yp_elem dt, int k, const float *const *xs, const int64_t *ns,
                             double *out) {
    static const char op[] = "sum_squares_multi";
    if (yp_cpu_check_elem(op, dt)) return -1;
    if (!out || k < 0 || (k > 0 && (!xs || !ns)))
        return yp_cpu_fail("%s: NULL result or arrays, or a negative count %d", op, k);
    double total = 0;
    for (int j = 0; j < k; j++) {
        double s = 0;
        if (yp_cpu_sum_squares(be, dt, xs[j], ns[j], &s)) return -1;
        total += s;
    }
    *out = total;
    return 0;
}

int yp_cpu_sgd_ema_step(yp_backend *be, yp_elem dt, float *w, float *grad, float *m, float *ema, int64_t n,
                        const yp_optim_hyp *h) {
    static const char op[] = "sgd_ema_step";
    (void)be;
    if (yp_cpu_check_elem(op, dt)) return -1;
    if (yp_cpu_check_count(op, n) || yp_cpu_check_ptrs(op, 1, (const void *[]){h}) ||
        (n > 0 && yp_cpu_check_ptrs(op, 3, (const void *[]){w, grad, m})))
        return -1;
    const float lr = h->lr, momentum = h->momentum, wd = h->weight_decay, scale = h->grad_scale, d = h->ema_decay;
    const float one_minus = 1.0f - d;
#pragma omp parallel for simd schedule(static) if (n >= YP_PAR_MIN)
    for (int64_t i = 0; i < n; i++) {
        float nw = yp_sgd_elem(w[i], grad[i], &m[i], lr, momentum, wd, scale);
        w[i] = nw;
        grad[i] = 0.0f;
        if (ema) ema[i] = yp_ema_elem(ema[i], nw, d, one_minus);
    }
    return 0;
}

/* Tensor by tensor, through the entries above: what every backend's optim_multi must equal. */
int yp_cpu_optim_multi(yp_backend *be, yp_elem dt, int adam, int k, const yp_optim_tensor *ts, const yp_optim_hyp *h) {
    static const char op[] = "optim_multi";
    if (yp_cpu_check_elem(op, dt)) return -1;
    if (k < 0 || (k > 0 && (!ts || !h))) return yp_cpu_fail("%s: NULL arrays or a negative count %d", op, k);
    for (int j = 0; j < k; j++) {
        const yp_optim_tensor *t = &ts[j];
        yp_optim_hyp hj = *h;
        hj.lr = t->lr, hj.weight_decay = t->weight_decay;
        if (!adam) {
            if (yp_cpu_sgd_ema_step(be, dt, t->w, t->grad, t->m, t->ema, t->n, &hj)) return -1;
            continue;
        }
        if (yp_cpu_adam_step(be, dt, t->w, t->grad, t->m, t->v, t->n, &hj)) return -1;
        if (t->n > 0) memset(t->grad, 0, (size_t)t->n * sizeof *t->grad);
        if (t->ema && yp_cpu_ema_update(be, dt, t->ema, t->w, t->n, h->ema_decay)) return -1;
    }
    return 0;
}
