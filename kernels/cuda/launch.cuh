// launch.cuh - internal to kernels/cuda: what the op files share for their launches: the block
// size and grid of the grid-stride loops (GRID_STRIDE), the fp32-only dtype check, the count, dims and pointer
// checks.
#ifndef YP_CUDA_LAUNCH_CUH
#define YP_CUDA_LAUNCH_CUH

#include <cstdint>

#include "yp_cuda.h"

namespace yp_cuda {

static const int kBlockSize = 256;
// 65536 blocks of 256 threads cover every GPU we target many times over; larger n loops.
static const int64_t kMaxBlocks = 65536;

static inline int grid_for(int64_t n) {
    int64_t blocks = (n + kBlockSize - 1) / kBlockSize;
    return (int)(blocks < kMaxBlocks ? blocks : kMaxBlocks);
}

// The ops of these files run fp32 only: F16/BF16 are refused with the op and the type named.
static inline int check_f32(const char *op, yp_elem dt) {
    if (dt != YP_ELEM_F32)
        return yp_cuda_fail("cuda backend: %s: dtype %s not supported yet; the CUDA ops run fp32", op,
                            yp_elem_name(dt));
    return 0;
}

static inline int check_count(const char *op, int64_t n) {
    if (n < 0)
        return yp_cuda_fail("%s: negative element count %lld", op, (long long)n);
    return 0;
}

static inline int check_dims(const char *op, const char *what, yp_dims d) {
    if (d.n < 1 || d.h < 1 || d.w < 1 || d.c < 1)
        return yp_cuda_fail("%s: %s dims (n %lld, h %lld, w %lld, c %lld) must all be >= 1", op, what,
                            (long long)d.n, (long long)d.h, (long long)d.w, (long long)d.c);
    return 0;
}

// 0 when none of the count pointers is NULL, else -1 naming the first (1-based) that is.
static inline int check_ptrs(const char *op, int count, const void *const *ptrs) {
    for (int i = 0; i < count; i++)
        if (!ptrs[i])
            return yp_cuda_fail("%s: NULL buffer (argument %d)", op, i + 1);
    return 0;
}

}  // namespace yp_cuda

// A grid-stride loop: `i` runs over [0, n) across the whole grid.
#define GRID_STRIDE(i, n)                                                                    \
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x,                         \
                 i##_stride_ = (int64_t)blockDim.x * gridDim.x;                              \
         i < (n); i += i##_stride_)

#endif
