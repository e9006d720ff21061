// optim.cu - the optimizer entries on the GPU (fp32, the masters; F16/BF16 refused): SGD (Nesterov),
// Adam / AdamW, the weight EMA, the fused SGD + zeroed gradient + EMA, the multi-tensor update of
// many tensors in a few launches (optim_multi), and sum_squares. The per-element
// formulas are the CPU backend's, from the shared kernels/yp_optim_math.h; results differ from
// the CPU only where nvcc contracts a multiply-add into an fma (a rounding, not a formula).
//
// sum_squares reduces on the device, deterministically (a fixed grid for a given n, a fixed
// tree in each block, then one block over the partial sums), in double, into the instance's own
// device words (yp_cuda_optim_init makes them with the instance, not tensor memory), then copies
// the double to the host and waits for the instance's stream. sum_squares_multi does the same for
// k tensors, each tensor's sum kept on the device in a slot, the slots added in order by one
// thread, and waits once for all of them (not once per tensor). The words are the instance's, used
// from one thread at a time as the instance is (yp_backend.h), so instances never share them; the
// final copy and wait keep both out of a CUDA graph capture.
#include <cstring>

#include <cuda_runtime.h>

#include "launch.cuh"
#include "yp_cuda.h"
#include "yp_optim_math.h"

using yp_cuda::check_count;
using yp_cuda::check_f32;
using yp_cuda::check_ptrs;
using yp_cuda::grid_for;
using yp_cuda::kBlockSize;

// ----------------------------------------------------------------------------
// kernels

static __global__ void sgd_kernel(float *w, const float *grad, float *m, int64_t n, float lr, float momentum,
                                  float wd, float scale) {
    int64_t stride = (int64_t)blockDim.x * gridDim.x;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        float mi = m[i];
        w[i] = yp_sgd_elem(w[i], grad[i], &mi, lr, momentum, wd, scale);
        m[i] = mi;
    }
}

static __global__ void sgd_ema_kernel(float *w, float *grad, float *m, float *ema, int64_t n, float lr,
                                      float momentum, float wd, float scale, float d, float one_minus) {
    int64_t stride = (int64_t)blockDim.x * gridDim.x;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        float mi = m[i];
        float nw = yp_sgd_elem(w[i], grad[i], &mi, lr, momentum, wd, scale);
        m[i] = mi;
        w[i] = nw;
        grad[i] = 0.0f;
        if (ema)
            ema[i] = yp_ema_elem(ema[i], nw, d, one_minus);
    }
}

static __global__ void adam_kernel(float *w, const float *grad, float *m, float *v, int64_t n, yp_adam_coef k) {
    int64_t stride = (int64_t)blockDim.x * gridDim.x;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        float mi = m[i], vi = v[i];
        w[i] = yp_adam_elem(w[i], grad[i], &mi, &vi, k);
        m[i] = mi;
        v[i] = vi;
    }
}

static __global__ void ema_kernel(float *ema, const float *w, int64_t n, float d, float one_minus) {
    int64_t stride = (int64_t)blockDim.x * gridDim.x;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
        ema[i] = yp_ema_elem(ema[i], w[i], d, one_minus);
}

// optim_multi: up to kMultiTensors tensors per launch, their pointers and constants passed by
// value in the kernel's parameters (under CUDA's 4 KB), blockIdx.y the tensor, a grid-stride loop
// over its elements in x. Each element runs exactly sgd_ema_kernel's or adam_kernel's formula,
// then the zeroing and the EMA, so the results are the per-tensor entries'.
static const int kMultiTensors = 36;
struct multi_tensor {
    float *w, *g, *m, *v, *e;
    int64_t n;
    yp_adam_coef k;  // Adam: the tensor's constants; SGD: lr in step_size, wd in wd_grad
};
struct multi_batch {
    multi_tensor t[kMultiTensors];
    float momentum, scale, d, one_minus;
    int adam;
};
static_assert(sizeof(multi_batch) <= 4000, "optim_multi's batch must fit CUDA's kernel parameters");

static __global__ void optim_multi_kernel(const multi_batch b) {
    const multi_tensor &t = b.t[blockIdx.y];
    int64_t stride = (int64_t)blockDim.x * gridDim.x;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < t.n; i += stride) {
        float mi = t.m[i], nw;
        if (b.adam) {
            float vi = t.v[i];
            nw = yp_adam_elem(t.w[i], t.g[i], &mi, &vi, t.k);
            t.v[i] = vi;
        } else {
            nw = yp_sgd_elem(t.w[i], t.g[i], &mi, t.k.step_size, b.momentum, t.k.wd_grad, b.scale);
        }
        t.m[i] = mi;
        t.w[i] = nw;
        t.g[i] = 0.0f;
        if (t.e)
            t.e[i] = yp_ema_elem(t.e[i], nw, b.d, b.one_minus);
    }
}

// sum_squares: at most kSumBlocks partial sums, each block's in a fixed shared-memory tree.
static const int kSumBlocks = 1024;
static const int kSumThreads = 256;
static const int kSumSlots = 4096;  // tensors summed before their slots are folded into the result

// The device words of one instance's reductions (cudaMalloc'd by yp_cuda_optim_init).
struct yp_cuda_sum_words {
    double partial[kSumBlocks];
    double slots[kSumSlots];
    double result;
};

// The sum of the kSumThreads values in s (one per thread), in a fixed order; valid in thread 0.
static __device__ double block_sum(double *s, double v) {
    s[threadIdx.x] = v;
    __syncthreads();
    for (int h = kSumThreads / 2; h > 0; h >>= 1) {
        if ((int)threadIdx.x < h)
            s[threadIdx.x] += s[threadIdx.x + h];
        __syncthreads();
    }
    return s[0];
}

static __global__ void sum_squares_partial_kernel(yp_cuda_sum_words *w, const float *x, int64_t n) {
    __shared__ double s[kSumThreads];
    double acc = 0.0;
    int64_t stride = (int64_t)blockDim.x * gridDim.x;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        double v = x[i];
        acc += v * v;
    }
    double t = block_sum(s, acc);
    if (threadIdx.x == 0)
        w->partial[blockIdx.x] = t;
}

// The partial sums' total into w->slots[slot], or w->result for slot < 0.
static __global__ void sum_squares_final_kernel(yp_cuda_sum_words *w, int parts, int slot) {
    __shared__ double s[kSumThreads];
    double acc = 0.0;
    for (int i = threadIdx.x; i < parts; i += kSumThreads)
        acc += w->partial[i];
    double t = block_sum(s, acc);
    if (threadIdx.x == 0) {
        if (slot < 0)
            w->result = t;
        else
            w->slots[slot] = t;
    }
}

// w->result = (keep ? w->result : 0) + slots[0] + ... + slots[count-1], in that order (one
// thread: the same additions as a host loop over the tensors' sums).
static __global__ void sum_squares_fold_kernel(yp_cuda_sum_words *w, int count, int keep) {
    if (blockIdx.x != 0 || threadIdx.x != 0)
        return;
    double acc = keep ? w->result : 0.0;
    for (int i = 0; i < count; i++)
        acc += w->slots[i];
    w->result = acc;
}

// ----------------------------------------------------------------------------
// launchers

static int optim_check(const char *op, yp_elem dt, int64_t n, const yp_optim_hyp *h, int count,
                       const void *const *p) {
    if (check_f32(op, dt) || check_count(op, n))
        return -1;
    if (!h)
        return yp_cuda_fail("%s: NULL hyperparameters", op);
    return n > 0 ? check_ptrs(op, count, p) : 0;
}

extern "C" int yp_cuda_sgd_step(yp_backend *be, yp_elem dt, float *w, const float *grad, float *m, int64_t n,
                                const yp_optim_hyp *h) {
    static const char op[] = "sgd_step";
    yp_cuda_backend *cb = yp_cuda_of(be);
    const void *p[] = {w, grad, m};
    if (optim_check(op, dt, n, h, 3, p))
        return -1;
    if (n == 0)
        return 0;
    if (yp_cuda_use(op, cb))
        return -1;
    sgd_kernel<<<grid_for(n), kBlockSize, 0, cb->stream>>>(w, grad, m, n, h->lr, h->momentum, h->weight_decay,
                                                           h->grad_scale);
    return yp_cuda_check_launch(op);
}

extern "C" int yp_cuda_sgd_ema_step(yp_backend *be, yp_elem dt, float *w, float *grad, float *m, float *ema,
                                    int64_t n, const yp_optim_hyp *h) {
    static const char op[] = "sgd_ema_step";
    yp_cuda_backend *cb = yp_cuda_of(be);
    const void *p[] = {w, grad, m};
    if (optim_check(op, dt, n, h, 3, p))
        return -1;
    if (n == 0)
        return 0;
    if (yp_cuda_use(op, cb))
        return -1;
    const float d = h->ema_decay;
    sgd_ema_kernel<<<grid_for(n), kBlockSize, 0, cb->stream>>>(w, grad, m, ema, n, h->lr, h->momentum,
                                                               h->weight_decay, h->grad_scale, d, 1.0f - d);
    return yp_cuda_check_launch(op);
}

extern "C" int yp_cuda_adam_step(yp_backend *be, yp_elem dt, float *w, const float *grad, float *m, float *v,
                                 int64_t n, const yp_optim_hyp *h) {
    static const char op[] = "adam_step";
    yp_cuda_backend *cb = yp_cuda_of(be);
    const void *p[] = {w, grad, m, v};
    if (optim_check(op, dt, n, h, 4, p))
        return -1;
    if (h->step < 1)
        return yp_cuda_fail("%s: step %lld must be >= 1", op, (long long)h->step);
    if (n == 0)
        return 0;
    if (yp_cuda_use(op, cb))
        return -1;
    adam_kernel<<<grid_for(n), kBlockSize, 0, cb->stream>>>(w, grad, m, v, n, yp_adam_coefs(h));
    return yp_cuda_check_launch(op);
}

extern "C" int yp_cuda_ema_update(yp_backend *be, yp_elem dt, float *ema, const float *w, int64_t n, float d) {
    static const char op[] = "ema_update";
    yp_cuda_backend *cb = yp_cuda_of(be);
    const void *p[] = {ema, w};
    if (check_f32(op, dt) || check_count(op, n) || (n > 0 && check_ptrs(op, 2, p)))
        return -1;
    if (n == 0)
        return 0;
    if (yp_cuda_use(op, cb))
        return -1;
    ema_kernel<<<grid_for(n), kBlockSize, 0, cb->stream>>>(ema, w, n, d, 1.0f - d);
    return yp_cuda_check_launch(op);
}

// Allocated with the instance, so that no sum_squares allocates device memory and the bytes are
// part of the instance's measured fixed cost; kept until release.
int yp_cuda_optim_init(yp_cuda_backend *cb) {
    cudaError_t e = cudaMalloc(&cb->sums, sizeof(yp_cuda_sum_words));
    if (e != cudaSuccess) {
        cudaGetLastError();
        cb->sums = nullptr;
        return yp_cuda_fail("cuda sum_squares: cudaMalloc of its %zu-byte sums: %s", sizeof(yp_cuda_sum_words),
                            cudaGetErrorString(e));
    }
    return 0;
}

void yp_cuda_optim_release(yp_cuda_backend *cb) {
    cudaFree(cb->sums);
    cb->sums = nullptr;
}

// The instance's words, or NULL with the reason recorded.
static yp_cuda_sum_words *sums_of(const char *op, yp_cuda_backend *cb) {
    if (!cb->sums) yp_cuda_fail("%s: the instance has no sum words", op);
    return cb->sums;
}

// Queues the reduction of x (n > 0) into w->slots[slot] (w->result for slot < 0): 8 elements per
// thread before a block is added, up to kSumBlocks blocks, fixed by n alone. The caller has made
// the device current.
static int queue_sum(const char *op, yp_cuda_backend *cb, yp_cuda_sum_words *w, const float *x, int64_t n,
                     int slot) {
    int64_t blocks = (n + (int64_t)kSumThreads * 8 - 1) / ((int64_t)kSumThreads * 8);
    const int parts = blocks < 1 ? 1 : (int)(blocks < kSumBlocks ? blocks : kSumBlocks);  // n == 0: one block of 0
    sum_squares_partial_kernel<<<parts, kSumThreads, 0, cb->stream>>>(w, x, n);
    if (yp_cuda_check_launch(op))
        return -1;
    sum_squares_final_kernel<<<1, kSumThreads, 0, cb->stream>>>(w, parts, slot);
    return yp_cuda_check_launch(op);
}

// w->result to the host, after the stream's work.
static int read_result(const char *op, yp_cuda_backend *cb, yp_cuda_sum_words *w, double *out) {
    double result = 0.0;
    cudaError_t e = cudaMemcpyAsync(&result, &w->result, sizeof result, cudaMemcpyDeviceToHost, cb->stream);
    if (e == cudaSuccess)
        e = cudaStreamSynchronize(cb->stream);
    if (e != cudaSuccess)
        return yp_cuda_fail("%s: copying the result: %s (%s)", op, cudaGetErrorString(e), cudaGetErrorName(e));
    *out = result;
    return 0;
}

extern "C" int yp_cuda_sum_squares(yp_backend *be, yp_elem dt, const float *x, int64_t n, double *out) {
    static const char op[] = "sum_squares";
    yp_cuda_backend *cb = yp_cuda_of(be);
    if (check_f32(op, dt) || check_count(op, n))
        return -1;
    if (!out)
        return yp_cuda_fail("%s: NULL result pointer", op);
    if (n > 0 && !x)
        return yp_cuda_fail("%s: NULL buffer with %lld elements", op, (long long)n);
    if (n == 0) {
        *out = 0.0;
        return 0;
    }
    yp_cuda_sum_words *w = sums_of(op, cb);
    if (!w || yp_cuda_use(op, cb) || queue_sum(op, cb, w, x, n, -1))
        return -1;
    return read_result(op, cb, w, out);
}

extern "C" int yp_cuda_sum_squares_multi(yp_backend *be, yp_elem dt, int k, const float *const *xs,
                                         const int64_t *ns, double *out) {
    static const char op[] = "sum_squares_multi";
    yp_cuda_backend *cb = yp_cuda_of(be);
    if (check_f32(op, dt))
        return -1;
    if (!out || k < 0 || (k > 0 && (!xs || !ns)))
        return yp_cuda_fail("%s: NULL result or arrays, or a negative count %d", op, k);
    for (int j = 0; j < k; j++) {
        if (check_count(op, ns[j]))
            return -1;
        if (ns[j] > 0 && !xs[j])
            return yp_cuda_fail("%s: tensor %d: NULL buffer with %lld elements", op, j, (long long)ns[j]);
    }
    yp_cuda_sum_words *w = sums_of(op, cb);
    if (!w || yp_cuda_use(op, cb))
        return -1;
    // Each chunk of up to kSumSlots tensors: their sums into the slots (an empty tensor's slot
    // gets 0 from a reduction over nothing), then folded onto the result in order; k == 0 folds
    // nothing onto 0.
    int first = 0;
    do {
        const int count = k - first < kSumSlots ? k - first : kSumSlots;
        for (int j = 0; j < count; j++)
            if (queue_sum(op, cb, w, xs[first + j], ns[first + j], j))
                return -1;
        sum_squares_fold_kernel<<<1, 1, 0, cb->stream>>>(w, count, first > 0);
        if (yp_cuda_check_launch(op))
            return -1;
        first += count;
    } while (first < k);
    return read_result(op, cb, w, out);
}

extern "C" int yp_cuda_optim_multi(yp_backend *be, yp_elem dt, int adam, int k, const yp_optim_tensor *ts,
                                   const yp_optim_hyp *h) {
    static const char op[] = "optim_multi";
    yp_cuda_backend *cb = yp_cuda_of(be);
    if (check_f32(op, dt)) return -1;
    if (k < 0 || (k > 0 && (!ts || !h))) return yp_cuda_fail("%s: NULL arrays or a negative count %d", op, k);
    if (adam && k > 0 && h->step < 1) return yp_cuda_fail("%s: step %lld must be >= 1", op, (long long)h->step);
    if (k == 0) return 0;
    if (yp_cuda_use(op, cb)) return -1;
    multi_batch b;
    b.momentum = h->momentum, b.scale = h->grad_scale, b.d = h->ema_decay, b.one_minus = 1.0f - h->ema_decay;
    b.adam = adam;
    for (int j0 = 0; j0 < k; j0 += kMultiTensors) {
        const int count = k - j0 < kMultiTensors ? k - j0 : kMultiTensors;
        int64_t most = 0;
        for (int j = 0; j < count; j++) {
            const yp_optim_tensor *t = &ts[j0 + j];
            if (t->n < 0 || (t->n > 0 && (!t->w || !t->grad || !t->m || (adam && !t->v))))
                return yp_cuda_fail("%s: tensor %d: NULL buffer or a negative count", op, j0 + j);
            yp_optim_hyp hj = *h;
            hj.lr = t->lr, hj.weight_decay = t->weight_decay;
            multi_tensor &m = b.t[j];
            m.w = t->w, m.g = t->grad, m.m = t->m, m.v = t->v, m.e = t->ema, m.n = t->n;
            if (adam) {
                m.k = yp_adam_coefs(&hj);
            } else {
                memset(&m.k, 0, sizeof m.k);
                m.k.step_size = t->lr, m.k.wd_grad = t->weight_decay;
            }
            most = t->n > most ? t->n : most;
        }
        if (most == 0) continue;
        optim_multi_kernel<<<dim3((unsigned)grid_for(most), (unsigned)count), kBlockSize, 0, cb->stream>>>(b);
        if (yp_cuda_check_launch(op)) return -1;
    }
    return 0;
}

extern "C" void yp_cuda_register_optim(yp_ops *o) {
    o->optim_multi = yp_cuda_optim_multi;
    o->sgd_step = yp_cuda_sgd_step;
    o->adam_step = yp_cuda_adam_step;
    o->ema_update = yp_cuda_ema_update;
    o->sgd_ema_step = yp_cuda_sgd_ema_step;
    o->sum_squares = yp_cuda_sum_squares;
    o->sum_squares_multi = yp_cuda_sum_squares_multi;
}
