// detect.cu - Detect's evaluation decode on the GPU (detect_decode, contract in kernels/yp_ops.h):
// each level's raw NHWC output into boxes in pixels and scores, rows in PyTorch's order. The
// arithmetic is the CPU backend's (kernels/cpu/decode.c) term for term, in fp32:
// xy = (2s + (cell - 0.5)) * stride, wh = (2s)^2 * anchor, s = 1 / (1 + e^-raw).
// x is of d->dtype (fp32, fp16 or bf16: the kernel is a template over its storage type and reads
// it through yp_ld, so the fp32 path is the same code instantiated for float); y is fp32 whatever
// x is (box coordinates in pixels, which fp16 could hold only to whole pixels past 1024).
// One thread per output float, one launch per level; x is a host array of device pointers.
#include <cstring>

#include <cuda_runtime.h>

#include "launch.cuh"  // check_elem, YP_CUDA_BY_ELEM
#include "yp_cuda.h"

static const int kBlockSize = 256;
static const int64_t kMaxBlocks = 65536;

// One level's anchors, passed by value (kernel parameters are indexable).
struct level_anchors {
    float a[YP_DECODE_MAX_ANCHORS][2];
};

static __device__ float sigmoid(float v) {
    return 1.0f / (1.0f + expf(-v));
}

// Level l: out index j of n*na*h*w*no covers image i, anchor a, row gy, column gx, field f in
// that order (the output's order within the level); `first` is the level's first row of R.
template <typename T>
static __global__ void decode_kernel(const T *__restrict__ x, float *__restrict__ y, int64_t n, int na, int no,
                                     int64_t h, int64_t w, int64_t rows, int64_t first, float stride,
                                     level_anchors anc) {
    const int64_t cells = h * w, total = n * na * cells * no, step = (int64_t)blockDim.x * gridDim.x;
    for (int64_t j = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; j < total; j += step) {
        const int f = (int)(j % no);
        const int64_t r = j / no, cell = r % cells, gx = cell % w, gy = cell / w;
        const int a = (int)(r / cells % na);
        const int64_t i = r / (cells * na);
        const float s = sigmoid(yp_ld(&x[(i * cells + cell) * na * no + (int64_t)a * no + f]));
        float v;
        if (f == 0) {
            v = (s * 2.0f + ((float)gx - 0.5f)) * stride;
        } else if (f == 1) {
            v = (s * 2.0f + ((float)gy - 0.5f)) * stride;
        } else if (f == 2) {
            float sw = s * 2.0f;
            v = sw * sw * anc.a[a][0];
        } else if (f == 3) {
            float sh = s * 2.0f;
            v = sh * sh * anc.a[a][1];
        } else {
            v = s;
        }
        y[(i * rows + first + ((int64_t)a * h + gy) * w + gx) * no + f] = v;
    }
}

static int decode_check(const char *op, const yp_decode_desc *d, const float *const *x, const float *y) {
    if (!d) return yp_cuda_fail("%s: NULL descriptor", op);
    if (yp_cuda::check_elem(op, d->dtype)) return -1;
    if (d->n < 1 || d->nl < 1 || d->nl > YP_DECODE_MAX_LEVELS || d->na < 1 || d->na > YP_DECODE_MAX_ANCHORS ||
        d->nc < 0)
        return yp_cuda_fail("%s: %lld images, %d levels (1..%d), %d anchors (1..%d), %d classes: out of range", op,
                            (long long)d->n, d->nl, YP_DECODE_MAX_LEVELS, d->na, YP_DECODE_MAX_ANCHORS, d->nc);
    if (!x || !y) return yp_cuda_fail("%s: NULL buffer", op);
    for (int l = 0; l < d->nl; l++) {
        if (d->h[l] < 1 || d->w[l] < 1 || !(d->stride[l] > 0.0f))
            return yp_cuda_fail("%s: level %d: grid %lldx%lld, stride %g: must be positive", op, l,
                                (long long)d->h[l], (long long)d->w[l], (double)d->stride[l]);
        if (!x[l]) return yp_cuda_fail("%s: NULL input of level %d", op, l);
    }
    return 0;
}

extern "C" int yp_cuda_detect_decode(yp_backend *be, const yp_decode_desc *d, const float *const *x, float *y) {
    static const char op[] = "detect_decode";
    yp_cuda_backend *cb = yp_cuda_of(be);
    if (decode_check(op, d, x, y)) return -1;
    if (yp_cuda_use(op, cb)) return -1;
    const int no = d->nc + 5;
    int64_t rows = 0, first[YP_DECODE_MAX_LEVELS];
    for (int l = 0; l < d->nl; l++) first[l] = rows, rows += (int64_t)d->na * d->h[l] * d->w[l];
    for (int l = 0; l < d->nl; l++) {
        level_anchors an;
        memcpy(an.a, d->anchors[l], sizeof an.a);
        const int64_t total = d->n * d->na * d->h[l] * d->w[l] * no;
        int64_t blocks = (total + kBlockSize - 1) / kBlockSize;
        const unsigned grid = (unsigned)(blocks < kMaxBlocks ? blocks : kMaxBlocks);
        YP_CUDA_BY_ELEM(d->dtype, T,
                        decode_kernel<T><<<grid, kBlockSize, 0, cb->stream>>>((const T *)x[l], y, d->n, d->na, no,
                                                                              d->h[l], d->w[l], rows, first[l],
                                                                              d->stride[l], an));
        if (yp_cuda_check_launch(op)) return -1;
    }
    return 0;
}

void yp_cuda_register_detect(yp_ops *o) {
    o->detect_decode = yp_cuda_detect_decode;
}
