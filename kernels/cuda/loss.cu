// loss.cu - one Detect level's YOLOv5 loss and its gradient on the GPU (loss_level, contract in
// kernels/yp_ops.h): the CPU backend's computation (kernels/cpu/loss.c) with the same fp32 element
// math (CIoU from the shared kernels/yp_ciou.h) and double sums. pred and dpred are of d->dtype
// (fp32, fp16 or bf16; objmap is fp32): the kernels are templates over that storage type T, read
// pred through yp_ld and write dpred through yp_st (kernels/yp_elem_math.h), and compute in fp32
// in between, so the fp32 path is the same code instantiated for float. Under AMP the gains carry
// the loss scale (yp_loss_compute), so dpred may be large; nothing here depends on its size.
//
// Three kernels on the instance's stream, after dpred and objmap are zeroed:
//  1. claim: each positive k that lies inside the level writes -(k+1) into its objectness slot
//     with atomicMin (objmap's words read as int), so a slot ends up naming its last positive in
//     build_targets order, the one whose CIoU the CPU leaves there. A positive outside the level
//     is recorded (the smallest such k) and skipped by every kernel, so nothing is written out of
//     bounds; the entry then fails with the CPU's message.
//  2. positives: one thread per positive: CIoU, box and class BCE terms and their gradients
//     (added with atomicAdd: several positives may share a cell), and the slot's winner writes
//     its clamped CIoU over the claim. Only the winner writes a slot and it writes a float >= +0
//     (int bits >= 0), so a loser reading the slot concurrently never mistakes it for its own
//     negative claim.
//  3. objectness: BCE over every (image, cell, anchor) against objmap, gradient written.
// Sums are reduced per block in double and added with double atomics into four device words that
// the instance keeps (allocated with the instance), then copied back with the wait the contract
// describes. The order of the double and float additions differs from the CPU's sequential
// order: the terms agree to ~1e-12 relative, the gradients of positives sharing a cell to float
// rounding. In fp16/bf16 a positive's gradient is added to what its slot holds in fp32 and stored
// rounded (grad_add): a slot with one positive holds its gradient rounded once, each further
// positive of the slot rounds the running sum once more.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <new>

#include <cuda_runtime.h>

#include "launch.cuh"  // check_elem, YP_CUDA_BY_ELEM
#include "yp_ciou.h"
#include "yp_cuda.h"

static const int kBlockSize = 256;
static const int64_t kMaxBlocks = 4096;

struct loss_words {
    double box, cls, obj;     // sums of 1 - CIoU, class BCE, objectness BCE
    unsigned long long bad;   // the smallest index of a positive outside the level, or ~0
};

struct yp_cuda_loss_sums {
    loss_words *dev;
};

// What the kernels need of the descriptor and the level, by value.
struct level_args {
    int64_t batch, h, w;
    int na, nc, no;
    float anchors[YP_LOSS_MAX_ANCHORS][2];  // the level's, over its stride (grid units)
    float cp, cn;                            // class targets (label smoothing)
    float gbox, gcls, gobj;                  // gradient factors, as the CPU computes them
};

static __device__ float sigmoidf_dev(float x) {
    return 1.0f / (1.0f + expf(-x));
}

// BCE-with-logits (pos_weight 1) in PyTorch's stable form, and sigmoid(x) from the same exp.
static __device__ float bce_logits_sig(float x, float y, float *sig) {
    float m = x < 0.0f ? -x : 0.0f, e = expf(-fabsf(x));
    *sig = x >= 0.0f ? 1.0f / (1.0f + e) : e / (1.0f + e);
    return (1.0f - y) * x + m + log1pf(e);
}

// dp[0] += v for a positive's gradient (several positives may share a slot, so an atomic add).
// fp32: atomicAdd. fp16/bf16: a compare-and-swap of the 16-bit element that forms old + v in fp32
// and stores it rounded once (the type's own atomicAdd would round v first, then the sum).
static __device__ __forceinline__ void grad_add(float *dp, float v) {
    atomicAdd(dp, v);
}
template <typename T>
static __device__ void grad_add(T *dp, float v) {
    static_assert(sizeof(T) == sizeof(unsigned short), "fp16 and bf16 are 16-bit words");
    unsigned short *word = reinterpret_cast<unsigned short *>(dp);
    unsigned short seen = *word, assumed;
    do {
        assumed = seen;
        T old, sum;
        memcpy(&old, &assumed, sizeof old);
        yp_st(&sum, yp_ld(&old) + v);
        unsigned short bits;
        memcpy(&bits, &sum, sizeof bits);
        seen = atomicCAS(word, assumed, bits);
    } while (seen != assumed);
}

static __device__ bool inside(const level_args &L, const yp_loss_target &t) {
    return t.b >= 0 && t.b < L.batch && t.a >= 0 && t.a < L.na && t.gj >= 0 && t.gj < L.h && t.gi >= 0 &&
           t.gi < L.w && t.cls >= 0 && t.cls < L.nc;
}

static __device__ int64_t slot_of(const level_args &L, const yp_loss_target &t) {
    return (((int64_t)t.b * L.h + t.gj) * L.w + t.gi) * L.na + t.a;
}

// Block-wide sum of v (blockDim.x == kBlockSize), added to *out by thread 0.
static __device__ void block_add(double v, double *out) {
    __shared__ double part[kBlockSize / 32];
    for (int off = 16; off > 0; off >>= 1) v += __shfl_down_sync(0xffffffffu, v, off);
    if ((threadIdx.x & 31) == 0) part[threadIdx.x / 32] = v;
    __syncthreads();
    if (threadIdx.x < 32) {
        v = threadIdx.x < kBlockSize / 32 ? part[threadIdx.x] : 0.0;
        for (int off = 16; off > 0; off >>= 1) v += __shfl_down_sync(0xffffffffu, v, off);
        if (threadIdx.x == 0 && v != 0.0) atomicAdd(out, v);
    }
    __syncthreads();  // part is reused by the caller's next block_add
}

static __global__ void claim_kernel(level_args L, const yp_loss_target *__restrict__ pos, int64_t n, int *slots,
                                    loss_words *res) {
    const int64_t step = (int64_t)blockDim.x * gridDim.x;
    for (int64_t k = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; k < n; k += step) {
        const yp_loss_target t = pos[k];
        if (!inside(L, t))
            atomicMin(&res->bad, (unsigned long long)k);
        else
            atomicMin(&slots[slot_of(L, t)], -(int)(k + 1));
    }
}

template <typename T>
static __global__ void positives_kernel(level_args L, const T *__restrict__ pred,
                                        const yp_loss_target *__restrict__ pos, int64_t n, float *objmap, T *dp,
                                        loss_words *res) {
    const int64_t step = (int64_t)blockDim.x * gridDim.x;
    // Every thread runs the same number of rounds so that block_add's barriers are uniform.
    const int64_t rounds = (n + step - 1) / step;
    for (int64_t r = 0; r < rounds; r++) {
        const int64_t k = r * step + (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
        double box = 0.0, cls = 0.0;
        if (k < n) {
            const yp_loss_target t = pos[k];
            if (inside(L, t)) {
                const int64_t slot = slot_of(L, t), at = slot * L.no;
                const T *p = pred + at;
                const float aw = L.anchors[t.a][0], ah = L.anchors[t.a][1];
                const float s[4] = {sigmoidf_dev(yp_ld(p)), sigmoidf_dev(yp_ld(p + 1)), sigmoidf_dev(yp_ld(p + 2)),
                                    sigmoidf_dev(yp_ld(p + 3))};
                const float pbox[4] = {s[0] * 2 - 0.5f, s[1] * 2 - 0.5f, (s[2] * 2) * (s[2] * 2) * aw,
                                       (s[3] * 2) * (s[3] * 2) * ah};
                float dbox[4];
                const float ciou = yp_ciou_eval(pbox, t.tbox, dp ? dbox : nullptr);
                box = 1.0 - (double)ciou;
                if (*(volatile int *)&objmap[slot] == -(int)(k + 1)) objmap[slot] = ciou > 0.0f ? ciou : 0.0f;
                if (dp) {
                    T *g = dp + at;
                    grad_add(g, -(L.gbox * dbox[0] * 2 * s[0] * (1 - s[0])));
                    grad_add(g + 1, -(L.gbox * dbox[1] * 2 * s[1] * (1 - s[1])));
                    grad_add(g + 2, -(L.gbox * dbox[2] * 8 * s[2] * s[2] * (1 - s[2]) * aw));
                    grad_add(g + 3, -(L.gbox * dbox[3] * 8 * s[3] * s[3] * (1 - s[3]) * ah));
                }
                if (L.nc > 1) {
                    for (int c = 0; c < L.nc; c++) {
                        const float y = c == t.cls ? L.cp : L.cn;
                        float sig;
                        cls += bce_logits_sig(yp_ld(&p[5 + c]), y, &sig);
                        if (dp) grad_add(&dp[at + 5 + c], L.gcls * (sig - y));
                    }
                }
            }
        }
        block_add(box, &res->box);
        block_add(cls, &res->cls);
    }
}

template <typename T>
static __global__ void objectness_kernel(level_args L, const T *__restrict__ pred, const float *__restrict__ tobj,
                                         int64_t count, T *dp, loss_words *res) {
    const int64_t step = (int64_t)blockDim.x * gridDim.x;
    double sum = 0.0;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < count; i += step) {
        const float x = yp_ld(pred + i * L.no + 4);
        float sig;
        sum += bce_logits_sig(x, tobj[i], &sig);
        if (dp) yp_st(dp + i * L.no + 4, L.gobj * (sig - tobj[i]));
    }
    block_add(sum, &res->obj);
}

// ----------------------------------------------------------------------------
// the entry

static int check_level(const char *op, const yp_loss_desc *d, int level) {
    const yp_loss_cfg *c = &d->cfg;
    if (c->nc < 1 || c->na < 1 || c->na > YP_LOSS_MAX_ANCHORS || c->nl < 1 || c->nl > YP_LOSS_MAX_LEVELS ||
        level < 0 || level >= c->nl)
        return yp_cuda_fail("%s: level %d of nc %d, na %d, nl %d out of range (nc >= 1, na 1..%d, nl 1..%d)", op,
                            level, c->nc, c->na, c->nl, YP_LOSS_MAX_ANCHORS, YP_LOSS_MAX_LEVELS);
    if (d->batch < 1 || d->grid_h[level] < 1 || d->grid_w[level] < 1 || c->strides[level] < 1)
        return yp_cuda_fail("%s: batch %lld, level %d grid %lld x %lld, stride %d: all must be >= 1", op,
                            (long long)d->batch, level, (long long)d->grid_h[level], (long long)d->grid_w[level],
                            c->strides[level]);
    return 0;
}

static int cuda_ok(const char *op, cudaError_t e) {
    return e == cudaSuccess ? 0 : yp_cuda_fail("%s: %s", op, cudaGetErrorString(e));
}

static int blocks_for(int64_t n) {
    int64_t b = (n + kBlockSize - 1) / kBlockSize;
    return (int)(b < 1 ? 1 : b < kMaxBlocks ? b : kMaxBlocks);
}

// The instance's four device words (yp_cuda_loss_init made them with the instance).
static loss_words *words_of(const char *op, yp_cuda_backend *cb) {
    if (cb->loss) return cb->loss->dev;
    yp_cuda_fail("%s: the instance has no loss sums", op);
    return nullptr;
}

// Allocated with the instance, so that no loss_level allocates device memory and the bytes are
// part of the instance's measured fixed cost; kept until release.
int yp_cuda_loss_init(yp_cuda_backend *cb) {
    yp_cuda_loss_sums *s = new (std::nothrow) yp_cuda_loss_sums;
    if (!s) return yp_cuda_fail("cuda loss: out of host memory");
    cudaError_t e = cudaMalloc(&s->dev, sizeof(loss_words));
    if (e != cudaSuccess) {
        cudaGetLastError();
        delete s;
        return yp_cuda_fail("cuda loss: cudaMalloc of its %zu-byte sums: %s", sizeof(loss_words),
                            cudaGetErrorString(e));
    }
    cb->loss = s;
    return 0;
}

extern "C" int yp_cuda_loss_level(yp_backend *be, const yp_loss_desc *d, int level, const float *pred,
                                  const yp_loss_target *pos, int64_t n_pos, float *objmap, float *dpred,
                                  yp_loss_terms *terms) {
    static const char op[] = "loss_level";
    yp_cuda_backend *cb = yp_cuda_of(be);
    if (!d) return yp_cuda_fail("%s: NULL descriptor", op);
    if (yp_cuda::check_elem(op, d->dtype) || check_level(op, d, level)) return -1;
    if (n_pos < 0) return yp_cuda_fail("%s: negative count %lld", op, (long long)n_pos);
    if (n_pos >= INT32_MAX) return yp_cuda_fail("%s: %lld positives (at most %d)", op, (long long)n_pos, INT32_MAX - 1);
    if (!pred || !objmap || !terms || (n_pos > 0 && !pos)) return yp_cuda_fail("%s: NULL buffer", op);
    if (yp_cuda_use(op, cb)) return -1;
    loss_words *res = words_of(op, cb);
    if (!res) return -1;

    const yp_loss_cfg *c = &d->cfg;
    level_args L;
    memset(&L, 0, sizeof L);
    L.batch = d->batch, L.h = d->grid_h[level], L.w = d->grid_w[level];
    L.na = c->na, L.nc = c->nc, L.no = c->nc + 5;
    for (int a = 0; a < c->na; a++) {
        L.anchors[a][0] = c->anchors[level][a][0] / (float)c->strides[level];
        L.anchors[a][1] = c->anchors[level][a][1] / (float)c->strides[level];
    }
    L.cp = 1.0f - 0.5f * c->label_smoothing, L.cn = 0.5f * c->label_smoothing;
    const int64_t cells = d->batch * L.h * L.w, count = cells * c->na;
    if (n_pos > 0) {
        L.gbox = (float)((double)d->batch * c->box / (double)n_pos);
        L.gcls = (float)((double)d->batch * c->cls / ((double)n_pos * c->nc));
    }
    L.gobj = (float)((double)d->batch * c->obj * c->balance[level] / (double)count);

    cudaStream_t st = cb->stream;
    if (cuda_ok(op, cudaMemsetAsync(res, 0, offsetof(loss_words, bad), st)) ||
        cuda_ok(op, cudaMemsetAsync(&res->bad, 0xff, sizeof res->bad, st)) ||
        cuda_ok(op, cudaMemsetAsync(objmap, 0, (size_t)count * sizeof(float), st)) ||
        (dpred && cuda_ok(op, cudaMemsetAsync(dpred, 0, (size_t)(count * L.no) * yp_elem_size(d->dtype), st))))
        return -1;
    if (n_pos > 0) {
        claim_kernel<<<blocks_for(n_pos), kBlockSize, 0, st>>>(L, pos, n_pos, reinterpret_cast<int *>(objmap), res);
        if (yp_cuda_check_launch("loss_level claim")) return -1;
        YP_CUDA_BY_ELEM(d->dtype, T,
                        positives_kernel<T><<<blocks_for(n_pos), kBlockSize, 0, st>>>(L, (const T *)pred, pos, n_pos,
                                                                                      objmap, (T *)dpred, res));
        if (yp_cuda_check_launch("loss_level positives")) return -1;
    }
    YP_CUDA_BY_ELEM(d->dtype, T,
                    objectness_kernel<T><<<blocks_for(count), kBlockSize, 0, st>>>(L, (const T *)pred, objmap, count,
                                                                                   (T *)dpred, res));
    if (yp_cuda_check_launch("loss_level objectness")) return -1;

    loss_words h;
    if (cuda_ok(op, cudaMemcpyAsync(&h, res, sizeof h, cudaMemcpyDeviceToHost, st)) ||
        cuda_ok(op, cudaStreamSynchronize(st)))
        return -1;
    if (h.bad != ~0ull) {
        yp_loss_target t;
        memset(&t, 0, sizeof t);
        if (cuda_ok(op, cudaMemcpyAsync(&t, pos + h.bad, sizeof t, cudaMemcpyDeviceToHost, st)) ||
            cuda_ok(op, cudaStreamSynchronize(st)))
            return -1;
        return yp_cuda_fail("%s: positive %lld (image %d, anchor %d, cell %d,%d, class %d) lies outside level %d", op,
                            (long long)h.bad, t.b, t.a, t.gj, t.gi, t.cls, level);
    }
    yp_loss_terms r = {0, 0, 0};
    if (n_pos > 0) {
        r.box = h.box / (double)n_pos;
        r.cls = h.cls / ((double)n_pos * c->nc);
    }
    r.obj = h.obj / (double)count * c->balance[level];
    *terms = r;
    return 0;
}

void yp_cuda_register_loss(yp_ops *o) {
    o->loss_level = yp_cuda_loss_level;
}

void yp_cuda_loss_release(yp_cuda_backend *cb) {
    if (!cb->loss) return;
    cudaFree(cb->loss->dev);
    delete cb->loss;
    cb->loss = nullptr;
}
