// launch.cuh - internal to kernels/cuda: what the op files share for their launches: the block
// size and grid of the grid-stride loops (GRID_STRIDE), the element types (check_elem, and YP_CUDA_BY_ELEM,
// which runs a launch with the storage type of a yp_elem), the count, dims and pointer checks.
#ifndef YP_CUDA_LAUNCH_CUH
#define YP_CUDA_LAUNCH_CUH

#include <cstdint>

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "yp_cuda.h"
#include "yp_elem_math.h"

namespace yp_cuda {

static const int kBlockSize = 256;
// 65536 blocks of 256 threads cover every GPU we target many times over; larger n loops.
static const int64_t kMaxBlocks = 65536;

static inline int grid_for(int64_t n) {
    int64_t blocks = (n + kBlockSize - 1) / kBlockSize;
    return (int)(blocks < kMaxBlocks ? blocks : kMaxBlocks);
}

// The ops that run fp32 only (the optimizer's: AMP keeps fp32 master weights and their state):
// any other type is refused with the op and the type named.
static inline int check_f32(const char *op, yp_elem dt) {
    if (dt != YP_ELEM_F32)
        return yp_cuda_fail("cuda backend: %s: dtype %s not supported; it runs on the fp32 master tensors", op,
                            yp_elem_name(dt));
    return 0;
}

// The element types of the activation ops: F32, F16, BF16 (stored as such, computed in fp32);
// anything else is refused with the op and the value named.
static inline int check_elem(const char *op, yp_elem dt) {
    if (dt != YP_ELEM_F32 && dt != YP_ELEM_F16 && dt != YP_ELEM_BF16)
        return yp_cuda_fail("cuda backend: %s: element type %d is not f32, f16 or bf16", op, (int)dt);
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

// Runs the statements that follow `T` with T the storage type of element type dt (float, __half,
// __nv_bfloat16); dt must have passed check_elem. The statements are compiled once per type, so
// they typically end in a return (the LAUNCH of a file).
#define YP_CUDA_BY_ELEM(dt, T, ...)      \
    if ((dt) == YP_ELEM_F16) {           \
        typedef __half T;                \
        __VA_ARGS__;                     \
    } else if ((dt) == YP_ELEM_BF16) {   \
        typedef __nv_bfloat16 T;         \
        __VA_ARGS__;                     \
    } else {                             \
        typedef float T;                 \
        __VA_ARGS__;                     \
    }

// A grid-stride loop: `i` runs over [0, n) across the whole grid.
#define GRID_STRIDE(i, n)                                                                    \
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x,                         \
                 i##_stride_ = (int64_t)blockDim.x * gridDim.x;                              \
         i < (n); i += i##_stride_)

#endif
