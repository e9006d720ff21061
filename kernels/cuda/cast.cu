// cast.cu - the cast entry on the GPU (yp_ops.h): n elements from one element type to another
// (any pair of F32, F16, BF16), rounding to nearest even as kernels/yp_elem_math.h does on the
// host. The executor refreshes the low-precision weight copies of an AMP plan with it after each
// update: one launch per copy, over the fp32 master.
#include <cuda_runtime.h>

#include "launch.cuh"
#include "yp_cuda.h"
#include "yp_elem_math.h"

using yp_cuda::check_count;
using yp_cuda::check_elem;
using yp_cuda::grid_for;
using yp_cuda::kBlockSize;

template <typename S, typename T>
static __global__ void cast_kernel(const S *__restrict__ x, T *__restrict__ y, int64_t n) {
    GRID_STRIDE(i, n) yp_st(y + i, yp_ld(x + i));
}

// The launch for source type S: the destination's type by `to`.
template <typename S>
static void launch_to(yp_cuda_backend *cb, const S *x, yp_elem to, float *y, int64_t n) {
    YP_CUDA_BY_ELEM(to, T,
                    cast_kernel<S, T><<<grid_for(n), kBlockSize, 0, cb->stream>>>(x, reinterpret_cast<T *>(y), n));
}

extern "C" int yp_cuda_cast(yp_backend *be, yp_elem from, const float *x, yp_elem to, float *y, int64_t n) {
    static const char op[] = "cast";
    yp_cuda_backend *cb = yp_cuda_of(be);
    if (check_elem(op, from) || check_elem(op, to) || check_count(op, n)) return -1;
    if (n == 0) return 0;
    if (!x || !y) return yp_cuda_fail("%s: NULL x or y", op);
    if ((const void *)x == (const void *)y) return yp_cuda_fail("%s: x and y are one buffer", op);
    if (yp_cuda_use(op, cb)) return -1;
    YP_CUDA_BY_ELEM(from, S, launch_to<S>(cb, reinterpret_cast<const S *>(x), to, y, n));
    return yp_cuda_check_launch(op);
}

extern "C" void yp_cuda_register_cast(yp_ops *o) {
    o->cast = yp_cuda_cast;
}
