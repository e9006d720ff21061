// conv.cu - conv2d through cuDNN 9's legacy convolution API, fp32, fp16 and bf16 (contracts in
// kernels/yp_ops.h).
//
// Layouts. Activations are NHWC (CUDNN_TENSOR_NHWC descriptors over the caller's buffers).
// Weights are PyTorch's OIHW (c_out, c_in/groups, kh, kw), the CPU backend's layout. cuDNN's
// NHWC convolutions want the filter NHWC too (KRSC: c_out, kh, kw, c_in/groups), so for kh*kw > 1 the
// weights are reordered into the fixed scratch `wt` before forward and backward-data, and the
// weight gradient is computed there in KRSC and reordered back onto dw (with beta) after
// backward-weights. For a 1x1 the two layouts are the same bytes: no reorder, no fixed scratch.
// Grouped and depthwise convs (groups > 1) go through cudnnSetConvolutionGroupCount with the
// filter c_in/groups deep; the reorder is per output channel, so it needs nothing per group.
//
// Algorithms. For each conv shape and stage the algorithm is the first of those that cuDNN's
// heuristics report (cudnnGetConvolution*Algorithm_v7, ordered by expected speed) that runs
// in plain fp32 (CUDNN_FMA_MATH: no TF32, so the results match the CPU backend's fp32) and whose
// workspace is at most the cap (kernels/yp_cudnn_scratch.h: max(16 MiB, the conv's input + output
// bytes), the rule the planner's "cuda" scratch model grants offline); if none fits, the one with
// the smallest workspace. The rule depends only on the shape and the device, so conv2d_scratch (which reports
// that algorithm's workspace as `per_image`) and the ops agree: the plan grants exactly what the
// chosen algorithm uses. No Find (benchmarking) runs, inside the step or out.
//
// Cache. conv2d_prepare builds the descriptors and the choices of a shape once and keeps them in
// the instance (a small array searched linearly: a model has a few dozen conv shapes; host
// memory); an op on a shape that was not prepared builds it on first use. conv2d_scratch reads the
// cache or builds a throwaway entry, so it never changes the instance's state. The cuDNN handle is
// made with the instance (yp_cuda_conv_init).
//
// Low precision (d->dtype F16 or BF16: AMP). The data, the filter cuDNN reads and the gradient it
// writes are of the data's type, with fp32 accumulation (CUDNN_DATA_FLOAT compute, Tensor Core
// math allowed); the bias, dw and dbias stay fp32 (the masters' and their .grad), and the weights
// are of d->wdtype: the low-precision copy, or the fp32 master of a frozen layer. So the filter is
// staged in the data's type in `wt` (KRSC, converted on the way) unless it is a 1x1 whose weights
// already are of that type, and the weight gradient is always computed into `wt` in the data's
// type and then added onto the fp32 dw, which is what PyTorch's autocast does (cuDNN's fp16 dW,
// then the cast back to the fp32 parameter's gradient). The bias gradient is summed from the
// low-precision dy in fp32. yp_cudnn_scratch.h sizes `wt` for this.
//
// Bias add and the bias gradient are small kernels here (NHWC: channel = index % c).
#include <climits>
#include <cstdlib>
#include <cstring>

#include <cuda_runtime.h>
#include <cudnn.h>

#include "launch.cuh"
#include "yp_cuda.h"
#include "yp_cudnn_scratch.h"
#include "yp_elem_math.h"

using yp_cuda::kBlockSize;
static int grid_size(int64_t n) { return yp_cuda::grid_for(n); }

// ----------------------------------------------------------------------------
// kernels

// wt[o][r][s][i] = w[o][i][r][s] (OIHW -> OHWI), ci = c_in/groups, kk = kh*kw, converted from the
// weights' type S to the data's type T (the same type for fp32: a plain reorder).
template <typename S, typename T>
static __global__ void oihw_to_ohwi_kernel(const S *__restrict__ w, T *__restrict__ wt, int64_t co, int64_t ci,
                                           int64_t kk) {
    int64_t n = co * ci * kk, stride = (int64_t)blockDim.x * gridDim.x;
    for (int64_t j = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; j < n; j += stride) {
        int64_t i = j % ci, rs = j / ci % kk, o = j / (ci * kk);
        yp_st(wt + j, yp_ld(w + (o * ci + i) * kk + rs));
    }
}

// dw[o][i][r][s] = beta*dw[o][i][r][s] + t[o][r][s][i] (OHWI of the data's type T -> fp32 OIHW);
// beta 0 never reads dw. For kk = 1 the two layouts are one: an fp32 accumulation of t.
template <typename T>
static __global__ void ohwi_to_oihw_acc_kernel(const T *__restrict__ t, float *__restrict__ dw, int64_t co,
                                               int64_t ci, int64_t kk, float beta) {
    int64_t n = co * ci * kk, stride = (int64_t)blockDim.x * gridDim.x;
    for (int64_t j = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; j < n; j += stride) {
        int64_t rs = j % kk, i = j / kk % ci, o = j / (ci * kk);
        float v = yp_ld(t + (o * kk + rs) * ci + i);
        dw[j] = beta == 0.0f ? v : beta * dw[j] + v;
    }
}

// y[m*c + ch] += bias[ch] over n = rows*c elements (y of the data's type, the bias fp32).
template <typename T>
static __global__ void bias_add_kernel(T *y, const float *__restrict__ bias, int64_t n, int64_t c) {
    int64_t stride = (int64_t)blockDim.x * gridDim.x;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
        yp_st(y + i, yp_ld(y + i) + bias[i % c]);
}

// db[ch] = beta*db[ch] (0 overwrites without reading), before the partial sums land on it.
static __global__ void scale_kernel(float *db, int64_t c, float beta) {
    int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < c)
        db[i] = beta == 0.0f ? 0.0f : beta * db[i];
}

// db[ch] += sum over rows m of dy[m*c + ch]: block (32, 8) covers 32 channels; blockIdx.y splits
// the rows, each block adds its partial sum with one atomic per channel.
template <typename T>
static __global__ void bias_grad_kernel(const T *__restrict__ dy, float *db, int64_t rows, int64_t c) {
    __shared__ float part[8][33];
    int64_t ch = (int64_t)blockIdx.x * 32 + threadIdx.x;
    float s = 0.0f;
    if (ch < c)
        for (int64_t m = (int64_t)blockIdx.y * 8 + threadIdx.y; m < rows; m += (int64_t)gridDim.y * 8)
            s += yp_ld(dy + m * c + ch);
    part[threadIdx.y][threadIdx.x] = s;
    __syncthreads();
    if (threadIdx.y == 0 && ch < c) {
        for (int k = 1; k < 8; k++)
            s += part[k][threadIdx.x];
        atomicAdd(&db[ch], s);
    }
}

// ----------------------------------------------------------------------------
// the per-shape cache

struct conv_entry {
    yp_conv_desc key;  // in, out, kernel, stride, padding, groups, dtype, wdtype (compared field by field)
    cudnnTensorDescriptor_t x, y;
    cudnnFilterDescriptor_t w;
    cudnnConvolutionDescriptor_t conv;
    int have_fwd, have_bwd;
    cudnnConvolutionFwdAlgo_t fwd;
    cudnnConvolutionBwdDataAlgo_t bwd_data;
    cudnnConvolutionBwdFilterAlgo_t bwd_filter;
    size_t fwd_ws, bwd_data_ws, bwd_filter_ws;  // bytes
};

struct yp_cuda_conv_cache {
    conv_entry *v;
    int n, cap;
};

static int same_dims(const yp_dims &a, const yp_dims &b) {
    return a.n == b.n && a.h == b.h && a.w == b.w && a.c == b.c;
}

static int same_key(const yp_conv_desc &a, const yp_conv_desc &b) {
    return same_dims(a.in, b.in) && same_dims(a.out, b.out) && a.kh == b.kh && a.kw == b.kw && a.sh == b.sh &&
           a.sw == b.sw && a.ph == b.ph && a.pw == b.pw && a.groups == b.groups && a.dtype == b.dtype &&
           a.wdtype == b.wdtype;
}

static const char *cudnn_err(cudnnStatus_t s) {
    return cudnnGetErrorString(s);
}

static void entry_destroy(conv_entry *e) {
    if (e->x) cudnnDestroyTensorDescriptor(e->x);
    if (e->y) cudnnDestroyTensorDescriptor(e->y);
    if (e->w) cudnnDestroyFilterDescriptor(e->w);
    if (e->conv) cudnnDestroyConvolutionDescriptor(e->conv);
    memset(e, 0, sizeof *e);
}

// The instance's cuDNN handle, which yp_cuda_conv_init created with the instance.
static int handle_of(const char *op, yp_cuda_backend *cb) {
    return cb->cudnn ? 0 : yp_cuda_fail("%s: the instance has no cuDNN handle", op);
}

// The cuDNN handle, bound to the instance's stream: made with the instance so that its device
// memory is part of the instance's measured fixed cost, never taken inside the step loop.
int yp_cuda_conv_init(yp_cuda_backend *cb) {
    cudnnHandle_t h = nullptr;
    cudnnStatus_t s = cudnnCreate(&h);
    if (s != CUDNN_STATUS_SUCCESS)
        return yp_cuda_fail("cudnnCreate: %s", cudnn_err(s));
    s = cudnnSetStream(h, cb->stream);
    if (s != CUDNN_STATUS_SUCCESS) {
        cudnnDestroy(h);
        return yp_cuda_fail("cudnnSetStream: %s", cudnn_err(s));
    }
    cb->cudnn = h;
    return 0;
}

// The descriptor's extents and parameters: every extent >= 1, within cuDNN's int dimensions,
// the output extents those of the conv, channels divisible by groups, the data fp32, fp16 or bf16 and
// the weights of the data's type or fp32.
static int check_desc(const char *op, const yp_conv_desc *d) {
    if (!d)
        return yp_cuda_fail("%s: NULL descriptor", op);
    if (yp_cuda::check_elem(op, d->dtype)) return -1;
    if (d->wdtype != d->dtype && d->wdtype != YP_ELEM_F32)
        return yp_cuda_fail("cuda backend: %s: weights of type %s with %s data (need the data's type or f32)", op,
                            yp_elem_name(d->wdtype), yp_elem_name(d->dtype));
    const yp_dims *ds[2] = {&d->in, &d->out};
    for (int k = 0; k < 2; k++)
        if (ds[k]->n < 1 || ds[k]->h < 1 || ds[k]->w < 1 || ds[k]->c < 1 || ds[k]->n > INT_MAX ||
            ds[k]->h > INT_MAX || ds[k]->w > INT_MAX || ds[k]->c > INT_MAX)
            return yp_cuda_fail("%s: %s extents (%lld, %lld, %lld, %lld) must be in 1..%d", op,
                                k ? "output" : "input", (long long)ds[k]->n, (long long)ds[k]->h,
                                (long long)ds[k]->w, (long long)ds[k]->c, INT_MAX);
    if (d->kh < 1 || d->kw < 1 || d->sh < 1 || d->sw < 1 || d->ph < 0 || d->pw < 0 || d->groups < 1)
        return yp_cuda_fail("%s: k %dx%d, s %dx%d, p %dx%d, groups %d out of range", op, d->kh, d->kw, d->sh, d->sw,
                            d->ph, d->pw, d->groups);
    if (d->in.c % d->groups || d->out.c % d->groups)
        return yp_cuda_fail("%s: channels %lld -> %lld not divisible by groups %d", op, (long long)d->in.c,
                            (long long)d->out.c, d->groups);
    int64_t oh = (d->in.h + 2 * d->ph - d->kh) / d->sh + 1, ow = (d->in.w + 2 * d->pw - d->kw) / d->sw + 1;
    if (d->in.h + 2 * d->ph < d->kh || d->in.w + 2 * d->pw < d->kw || d->out.n != d->in.n || d->out.h != oh ||
        d->out.w != ow)
        return yp_cuda_fail("%s: output (%lld, %lld, %lld) is not that of input (%lld, %lld, %lld) with k %dx%d, "
                            "s %dx%d, p %dx%d", op, (long long)d->out.n, (long long)d->out.h, (long long)d->out.w,
                            (long long)d->in.n, (long long)d->in.h, (long long)d->in.w, d->kh, d->kw, d->sh, d->sw,
                            d->ph, d->pw);
    return 0;
}

// cuDNN's name of element type t.
static cudnnDataType_t cudnn_type(yp_elem t) {
    return t == YP_ELEM_F16 ? CUDNN_DATA_HALF : t == YP_ELEM_BF16 ? CUDNN_DATA_BFLOAT16 : CUDNN_DATA_FLOAT;
}

// Builds e's descriptors for d (NHWC data and KRSC filter of the data's type, fp32 accumulation;
// strict fp32 math for fp32 data, Tensor Core math for fp16 and bf16).
static int entry_build(const char *op, const yp_conv_desc *d, conv_entry *e) {
    const cudnnDataType_t dt = cudnn_type(d->dtype);
    memset(e, 0, sizeof *e);
    e->key = *d;
    cudnnStatus_t s = cudnnCreateTensorDescriptor(&e->x);
    if (s == CUDNN_STATUS_SUCCESS) s = cudnnCreateTensorDescriptor(&e->y);
    if (s == CUDNN_STATUS_SUCCESS) s = cudnnCreateFilterDescriptor(&e->w);
    if (s == CUDNN_STATUS_SUCCESS) s = cudnnCreateConvolutionDescriptor(&e->conv);
    if (s == CUDNN_STATUS_SUCCESS)
        s = cudnnSetTensor4dDescriptor(e->x, CUDNN_TENSOR_NHWC, dt, (int)d->in.n, (int)d->in.c,
                                       (int)d->in.h, (int)d->in.w);
    if (s == CUDNN_STATUS_SUCCESS)
        s = cudnnSetTensor4dDescriptor(e->y, CUDNN_TENSOR_NHWC, dt, (int)d->out.n, (int)d->out.c,
                                       (int)d->out.h, (int)d->out.w);
    if (s == CUDNN_STATUS_SUCCESS)
        s = cudnnSetFilter4dDescriptor(e->w, dt, CUDNN_TENSOR_NHWC, (int)d->out.c,
                                       (int)(d->in.c / d->groups), d->kh, d->kw);
    if (s == CUDNN_STATUS_SUCCESS)
        s = cudnnSetConvolution2dDescriptor(e->conv, d->ph, d->pw, d->sh, d->sw, 1, 1, CUDNN_CROSS_CORRELATION,
                                            CUDNN_DATA_FLOAT);
    if (s == CUDNN_STATUS_SUCCESS) s = cudnnSetConvolutionGroupCount(e->conv, d->groups);
    if (s == CUDNN_STATUS_SUCCESS)
        s = cudnnSetConvolutionMathType(e->conv, d->dtype == YP_ELEM_F32 ? CUDNN_FMA_MATH : CUDNN_TENSOR_OP_MATH);
    if (s != CUDNN_STATUS_SUCCESS) {
        entry_destroy(e);
        return yp_cuda_fail("%s: cuDNN descriptors of conv k %dx%d s %dx%d p %dx%d groups %d: %s", op, d->kh, d->kw,
                            d->sh, d->sw, d->ph, d->pw, d->groups, cudnn_err(s));
    }
    int n, c, h, w;
    s = cudnnGetConvolution2dForwardOutputDim(e->conv, e->x, e->w, &n, &c, &h, &w);
    if (s != CUDNN_STATUS_SUCCESS || n != d->out.n || c != d->out.c || h != d->out.h || w != d->out.w) {
        entry_destroy(e);
        return yp_cuda_fail("%s: cuDNN's output of conv k %dx%d s %dx%d p %dx%d disagrees with the descriptor's", op,
                            d->kh, d->kw, d->sh, d->sw, d->ph, d->pw);
    }
    return 0;
}

// The largest workspace an algorithm may take (yp_cudnn_scratch.h): keeps each conv's scratch of
// the order of its activations (the planner's arena holds it for the step) while leaving the fast
// implicit-GEMM family, whose workspaces are small, always eligible.
static size_t workspace_cap(const yp_conv_desc *d) {
    return (size_t)yp_cudnn_workspace_cap(d);
}

// Math types an algorithm of e may use: for fp32 data those that run in plain fp32 (Tensor Core
// math would be TF32), for fp16 and bf16 any (Tensor Cores with fp32 accumulation).
static int math_ok(const conv_entry *e, cudnnMathType_t m) {
    return e->key.dtype != YP_ELEM_F32 || m == CUDNN_FMA_MATH || m == CUDNN_DEFAULT_MATH;
}

// One chooser per direction: the heuristics' list, then the first usable algorithm within the cap,
// else the usable one with the smallest workspace. `ws_of` re-asks cuDNN for the workspace of the
// algorithm with these descriptors (the figure the op will need).
#define CHOOSE_ALGO(PerfT, AlgoT, COUNT, GET, WS_OF, what)                                                       \
    do {                                                                                                      \
        PerfT perf[COUNT];                                                                                    \
        int got = 0;                                                                                          \
        cudnnStatus_t s = GET;                                                                                \
        if (s != CUDNN_STATUS_SUCCESS)                                                                        \
            return yp_cuda_fail("%s: cuDNN's %s heuristics: %s", op, what, cudnn_err(s));                     \
        int best = -1, small = -1;                                                                            \
        size_t best_ws = 0, small_ws = 0;                                                                     \
        for (int i = 0; i < got && best < 0; i++) {                                                           \
            if (perf[i].status != CUDNN_STATUS_SUCCESS || !math_ok(e, perf[i].mathType))                      \
                continue;                                                                                     \
            size_t ws = 0;                                                                                    \
            AlgoT algo = perf[i].algo;                                                                        \
            if (WS_OF != CUDNN_STATUS_SUCCESS)                                                                \
                continue;                                                                                     \
            if (ws <= cap)                                                                                    \
                best = i, best_ws = ws;                                                                       \
            else if (small < 0 || ws < small_ws)                                                              \
                small = i, small_ws = ws;                                                                     \
        }                                                                                                     \
        if (best < 0 && small < 0)                                                                            \
            return yp_cuda_fail("%s: cuDNN offers no %s %s algorithm for conv (%lld, %lld, %lld, %lld) k %dx%d "  \
                                "s %dx%d groups %d", op, yp_elem_name(e->key.dtype), what, (long long)e->key.in.n,  \
                                (long long)e->key.in.h,                                                       \
                                (long long)e->key.in.w, (long long)e->key.in.c, e->key.kh, e->key.kw,         \
                                e->key.sh, e->key.sw, e->key.groups);                                         \
        if (best < 0)                                                                                         \
            best = small, best_ws = small_ws;                                                                 \
        *algo_out = perf[best].algo;                                                                          \
        *ws_out = best_ws;                                                                                    \
    } while (0)

static int choose_fwd(const char *op, cudnnHandle_t h, conv_entry *e, cudnnConvolutionFwdAlgo_t *algo_out,
                      size_t *ws_out) {
    const size_t cap = workspace_cap(&e->key);
    CHOOSE_ALGO(cudnnConvolutionFwdAlgoPerf_t, cudnnConvolutionFwdAlgo_t, CUDNN_CONVOLUTION_FWD_ALGO_COUNT,
                cudnnGetConvolutionForwardAlgorithm_v7(h, e->x, e->w, e->conv, e->y,
                                                       CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &got, perf),
                cudnnGetConvolutionForwardWorkspaceSize(h, e->x, e->w, e->conv, e->y, algo, &ws), "forward");
    return 0;
}

static int choose_bwd_data(const char *op, cudnnHandle_t h, conv_entry *e, cudnnConvolutionBwdDataAlgo_t *algo_out,
                           size_t *ws_out) {
    const size_t cap = workspace_cap(&e->key);
    CHOOSE_ALGO(cudnnConvolutionBwdDataAlgoPerf_t, cudnnConvolutionBwdDataAlgo_t,
                CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT,
                cudnnGetConvolutionBackwardDataAlgorithm_v7(h, e->w, e->y, e->conv, e->x,
                                                            CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT, &got, perf),
                cudnnGetConvolutionBackwardDataWorkspaceSize(h, e->w, e->y, e->conv, e->x, algo, &ws),
                "backward-data");
    return 0;
}

static int choose_bwd_filter(const char *op, cudnnHandle_t h, conv_entry *e,
                             cudnnConvolutionBwdFilterAlgo_t *algo_out, size_t *ws_out) {
    const size_t cap = workspace_cap(&e->key);
    CHOOSE_ALGO(cudnnConvolutionBwdFilterAlgoPerf_t, cudnnConvolutionBwdFilterAlgo_t,
                CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT,
                cudnnGetConvolutionBackwardFilterAlgorithm_v7(h, e->x, e->y, e->conv, e->w,
                                                              CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT, &got, perf),
                cudnnGetConvolutionBackwardFilterWorkspaceSize(h, e->x, e->y, e->conv, e->w, algo, &ws),
                "backward-weights");
    return 0;
}

// Fills in the algorithms of `stage` (once per entry and stage).
static int entry_stage(const char *op, cudnnHandle_t h, conv_entry *e, yp_conv_stage stage) {
    if (stage == YP_CONV_FORWARD) {
        if (!e->have_fwd && choose_fwd(op, h, e, &e->fwd, &e->fwd_ws)) return -1;
        e->have_fwd = 1;
    } else {
        if (!e->have_bwd && (choose_bwd_data(op, h, e, &e->bwd_data, &e->bwd_data_ws) ||
                             choose_bwd_filter(op, h, e, &e->bwd_filter, &e->bwd_filter_ws)))
            return -1;
        e->have_bwd = 1;
    }
    return 0;
}

static conv_entry *cache_find(yp_cuda_backend *cb, const yp_conv_desc *d) {
    if (!cb->convs) return nullptr;
    for (int i = 0; i < cb->convs->n; i++)
        if (same_key(cb->convs->v[i].key, *d)) return &cb->convs->v[i];
    return nullptr;
}

// The cached entry of d with `stage` chosen, built and added on first use.
static conv_entry *cache_get(const char *op, yp_cuda_backend *cb, const yp_conv_desc *d, yp_conv_stage stage) {
    if (handle_of(op, cb)) return nullptr;
    conv_entry *e = cache_find(cb, d);
    if (!e) {
        if (!cb->convs) {
            cb->convs = static_cast<yp_cuda_conv_cache *>(std::calloc(1, sizeof *cb->convs));
            if (!cb->convs) {
                yp_cuda_fail("%s: out of host memory", op);
                return nullptr;
            }
        }
        yp_cuda_conv_cache *c = cb->convs;
        if (c->n == c->cap) {
            int cap = c->cap ? 2 * c->cap : 16;
            conv_entry *v = static_cast<conv_entry *>(std::realloc(c->v, (size_t)cap * sizeof *v));
            if (!v) {
                yp_cuda_fail("%s: out of host memory", op);
                return nullptr;
            }
            c->v = v, c->cap = cap;
        }
        if (entry_build(op, d, &c->v[c->n])) return nullptr;
        e = &c->v[c->n++];
    }
    return entry_stage(op, cb->cudnn, e, stage) ? nullptr : e;
}

// Elements of a conv's weights (what the KRSC reorders and conversions move).
static int64_t weight_floats(const yp_conv_desc *d) {
    return d->out.c * (d->in.c / d->groups) * yp_conv_taps(d);
}
static int64_t floats_of(size_t bytes) {
    return (int64_t)((bytes + sizeof(float) - 1) / sizeof(float));
}

// ----------------------------------------------------------------------------
// entries

extern "C" int yp_cuda_conv2d_scratch(yp_backend *be, const yp_conv_desc *d, int has_bias, yp_conv_stage stage,
                                      int64_t *per_image, int64_t *fixed) {
    static const char op[] = "conv2d_scratch";
    yp_cuda_backend *cb = yp_cuda_of(be);
    (void)has_bias;  // the bias is a kernel of its own: no scratch
    if (check_desc(op, d)) return -1;
    if (!per_image || !fixed) return yp_cuda_fail("%s: NULL result pointer", op);
    if (stage != YP_CONV_FORWARD && stage != YP_CONV_BACKWARD)
        return yp_cuda_fail("%s: invalid stage %d", op, (int)stage);
    if (yp_cuda_use(op, cb) || handle_of(op, cb)) return -1;
    conv_entry *e = cache_find(cb, d), tmp;
    int own = 0;
    if (!e) {
        if (entry_build(op, d, &tmp)) return -1;
        e = &tmp, own = 1;
    }
    const int had = stage == YP_CONV_FORWARD ? e->have_fwd : e->have_bwd;
    int rc = entry_stage(op, cb->cudnn, e, stage);
    if (rc == 0) {
        size_t ws = stage == YP_CONV_FORWARD ? e->fwd_ws
                    : e->bwd_data_ws > e->bwd_filter_ws ? e->bwd_data_ws : e->bwd_filter_ws;
        *per_image = floats_of(ws);
        *fixed = yp_cudnn_fixed_floats(d, stage);
    }
    if (own)
        entry_destroy(&tmp);
    else if (!had && stage == YP_CONV_FORWARD)  // a pure query: leave the cached entry as it was
        e->have_fwd = 0;
    else if (!had)
        e->have_bwd = 0;
    return rc;
}

extern "C" int yp_cuda_conv2d_prepare(yp_backend *be, const yp_conv_desc *d, int has_bias, yp_conv_stage stage) {
    static const char op[] = "conv2d_prepare";
    yp_cuda_backend *cb = yp_cuda_of(be);
    (void)has_bias;
    if (check_desc(op, d)) return -1;
    if (stage != YP_CONV_FORWARD && stage != YP_CONV_BACKWARD)
        return yp_cuda_fail("%s: invalid stage %d", op, (int)stage);
    if (yp_cuda_use(op, cb)) return -1;
    return cache_get(op, cb, d, stage) ? 0 : -1;
}

// The weights as cuDNN reads them: w itself for a 1x1 whose weights are of the data's type, else
// reordered to KRSC (and converted to the data's type) into wt.
static const void *filter_of(const char *op, yp_cuda_backend *cb, const yp_conv_desc *d, const float *w, float *wt) {
    if (yp_conv_taps(d) == 1 && d->wdtype == d->dtype) return w;
    if (!wt) {
        yp_cuda_fail("%s: NULL fixed scratch (the staged weights of a %dx%d conv)", op, d->kh, d->kw);
        return nullptr;
    }
    const int64_t n = weight_floats(d), co = d->out.c, ci = d->in.c / d->groups, kk = yp_conv_taps(d);
    if (d->wdtype == YP_ELEM_F32) {
        YP_CUDA_BY_ELEM(d->dtype, T,
                        oihw_to_ohwi_kernel<float, T><<<grid_size(n), kBlockSize, 0, cb->stream>>>(
                            w, reinterpret_cast<T *>(wt), co, ci, kk));
    } else {
        YP_CUDA_BY_ELEM(d->dtype, T,
                        oihw_to_ohwi_kernel<T, T><<<grid_size(n), kBlockSize, 0, cb->stream>>>(
                            reinterpret_cast<const T *>(w), reinterpret_cast<T *>(wt), co, ci, kk));
    }
    return yp_cuda_check_launch(op) ? nullptr : wt;
}

static int need_ws(const char *op, size_t bytes, const float *ws) {
    if (bytes > 0 && !ws)
        return yp_cuda_fail("%s: NULL per-image scratch (the algorithm needs %zu bytes)", op, bytes);
    return 0;
}

static int cudnn_ok(const char *op, cudnnStatus_t s) {
    return s == CUDNN_STATUS_SUCCESS ? 0 : yp_cuda_fail("%s: cuDNN: %s", op, cudnn_err(s));
}

extern "C" int yp_cuda_conv2d_forward(yp_backend *be, const yp_conv_desc *d, const float *x, const float *w,
                                      const float *bias, float *y, float *ws, float *wt) {
    static const char op[] = "conv2d_forward";
    yp_cuda_backend *cb = yp_cuda_of(be);
    if (check_desc(op, d)) return -1;
    if (!x || !w || !y) return yp_cuda_fail("%s: NULL x, w or y", op);
    if (yp_cuda_use(op, cb)) return -1;
    conv_entry *e = cache_get(op, cb, d, YP_CONV_FORWARD);
    if (!e || need_ws(op, e->fwd_ws, ws)) return -1;
    const void *f = filter_of(op, cb, d, w, wt);
    if (!f) return -1;
    const float one = 1.0f, zero = 0.0f;
    if (cudnn_ok(op, cudnnConvolutionForward(cb->cudnn, &one, e->x, x, e->w, f, e->conv, e->fwd, ws, e->fwd_ws,
                                             &zero, e->y, y)))
        return -1;
    if (bias) {
        int64_t n = d->out.n * d->out.h * d->out.w * d->out.c;
        YP_CUDA_BY_ELEM(d->dtype, T,
                        bias_add_kernel<T><<<grid_size(n), kBlockSize, 0, cb->stream>>>(reinterpret_cast<T *>(y),
                                                                                          bias, n, d->out.c));
        return yp_cuda_check_launch("conv2d_forward bias");
    }
    return 0;
}

extern "C" int yp_cuda_conv2d_backward_data(yp_backend *be, const yp_conv_desc *d, const float *dy, const float *w,
                                            float *dx, float beta, float *ws, float *wt) {
    static const char op[] = "conv2d_backward_data";
    yp_cuda_backend *cb = yp_cuda_of(be);
    if (check_desc(op, d)) return -1;
    if (!dy || !w || !dx) return yp_cuda_fail("%s: NULL dy, w or dx", op);
    if (yp_cuda_use(op, cb)) return -1;
    conv_entry *e = cache_get(op, cb, d, YP_CONV_BACKWARD);
    if (!e || need_ws(op, e->bwd_data_ws, ws)) return -1;
    const void *f = filter_of(op, cb, d, w, wt);
    if (!f) return -1;
    const float one = 1.0f;
    return cudnn_ok(op, cudnnConvolutionBackwardData(cb->cudnn, &one, e->w, f, e->y, dy, e->conv, e->bwd_data, ws,
                                                     e->bwd_data_ws, &beta, e->x, dx));
}

extern "C" int yp_cuda_conv2d_backward_weights(yp_backend *be, const yp_conv_desc *d, const float *x, const float *dy,
                                               float *dw, float *dbias, float beta, float *ws, float *wt) {
    static const char op[] = "conv2d_backward_weights";
    yp_cuda_backend *cb = yp_cuda_of(be);
    if (check_desc(op, d)) return -1;
    if (!x || !dy || !dw) return yp_cuda_fail("%s: NULL x, dy or dw", op);
    // fp32 1x1: cuDNN's KRSC is OIHW and it accumulates onto dw with beta itself; otherwise the
    // gradient goes into wt (KRSC, the data's type) and is added onto dw after.
    const int direct = yp_conv_taps(d) == 1 && d->dtype == YP_ELEM_F32;
    if (!direct && !wt)
        return yp_cuda_fail("%s: NULL fixed scratch (the staged gradient of a %dx%d conv)", op, d->kh, d->kw);
    if (yp_cuda_use(op, cb)) return -1;
    conv_entry *e = cache_get(op, cb, d, YP_CONV_BACKWARD);
    if (!e || need_ws(op, e->bwd_filter_ws, ws)) return -1;
    const float one = 1.0f, zero = 0.0f;
    if (cudnn_ok(op, cudnnConvolutionBackwardFilter(cb->cudnn, &one, e->x, x, e->y, dy, e->conv, e->bwd_filter, ws,
                                                    e->bwd_filter_ws, direct ? &beta : &zero, e->w,
                                                    direct ? dw : wt)))
        return -1;
    if (!direct) {
        const int64_t n = weight_floats(d), co = d->out.c, ci = d->in.c / d->groups, kk = yp_conv_taps(d);
        YP_CUDA_BY_ELEM(d->dtype, T,
                        ohwi_to_oihw_acc_kernel<T><<<grid_size(n), kBlockSize, 0, cb->stream>>>(
                            reinterpret_cast<const T *>(wt), dw, co, ci, kk, beta));
        if (yp_cuda_check_launch(op)) return -1;
    }
    if (dbias) {
        const int64_t c = d->out.c, rows = d->out.n * d->out.h * d->out.w;
        scale_kernel<<<(unsigned)((c + kBlockSize - 1) / kBlockSize), kBlockSize, 0, cb->stream>>>(dbias, c, beta);
        if (yp_cuda_check_launch("conv2d_backward_weights bias")) return -1;
        int64_t splits = (rows + 8 * 64 - 1) / (8 * 64);  // >= 64 rows per thread, at most 1024 splits
        dim3 grid((unsigned)((c + 31) / 32), (unsigned)(splits < 1024 ? splits : 1024));
        YP_CUDA_BY_ELEM(d->dtype, T,
                        bias_grad_kernel<T><<<grid, dim3(32, 8), 0, cb->stream>>>(reinterpret_cast<const T *>(dy),
                                                                                   dbias, rows, c));
        return yp_cuda_check_launch("conv2d_backward_weights bias");
    }
    return 0;
}

// Both passes, one after the other on the stream (they share ws and wt in turn).
extern "C" int yp_cuda_conv2d_backward(yp_backend *be, const yp_conv_desc *d, const float *x, const float *dy,
                                       const float *w, float *dx, float *dw, float *dbias, yp_betas beta, float *ws,
                                       float *wt) {
    if (dx && yp_cuda_conv2d_backward_data(be, d, dy, w, dx, beta.dx, ws, wt)) return -1;
    if (dw && yp_cuda_conv2d_backward_weights(be, d, x, dy, dw, dbias, beta.w, ws, wt)) return -1;
    return 0;
}

void yp_cuda_register_conv(yp_ops *o) {
    o->conv2d_scratch = yp_cuda_conv2d_scratch;
    o->conv2d_prepare = yp_cuda_conv2d_prepare;
    o->conv2d_forward = yp_cuda_conv2d_forward;
    o->conv2d_backward_data = yp_cuda_conv2d_backward_data;
    o->conv2d_backward_weights = yp_cuda_conv2d_backward_weights;
    o->conv2d_backward = yp_cuda_conv2d_backward;
}

void yp_cuda_conv_release(yp_cuda_backend *cb) {
    if (cb->convs) {
        for (int i = 0; i < cb->convs->n; i++) entry_destroy(&cb->convs->v[i]);
        std::free(cb->convs->v);
        std::free(cb->convs);
        cb->convs = nullptr;
    }
    if (cb->cudnn) {
        cudnnDestroy(cb->cudnn);
        cb->cudnn = nullptr;
    }
}
