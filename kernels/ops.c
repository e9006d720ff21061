/* ops.c - backend-independent helpers of the op interface (yp_ops.h): the conv workspace size. */
#include "yp_ops.h"

/* The CPU backend's conv scratch: im2col columns for one image of d (out.h*out.w rows of
 * k*k*c_in floats, in (kh, kw, c_in) order so that each row is a few contiguous copies from the
 * NHWC input), then, for k > 1, the weights reordered to (c_out, kh, kw, c_in) so that they
 * match those columns (backward-weights accumulates its result there before writing OIHW).
 * A stride-1 conv with k > 1 and p <= k-1 computes backward-data as the transposed conv of dy,
 * whose columns (in.h*in.w rows of k*k*c_out) may be the larger of the two; the workspace holds
 * whichever is larger (the same for c_in == c_out).
 * A 1x1 stride-1 unpadded conv is one GEMM over the whole batch and needs nothing.
 * Returns 0 for a malformed descriptor (the op itself then reports the error). */
void yp_conv_workspace_split(const yp_conv_desc *d, int64_t *cols_out, int64_t *wt_out) {
    *cols_out = *wt_out = 0;
    if (!d || d->k < 1 || d->s < 1 || d->p < 0 || d->in.c < 1 || d->out.c < 1 || d->out.h < 1 ||
        d->out.w < 1)
        return;
    if (d->k == 1 && d->s == 1 && d->p == 0)
        return;
    int64_t kk = (int64_t)d->k * d->k * d->in.c; /* GEMM K: one column row */
    int64_t cols = d->out.h * d->out.w * kk;
    if (d->s == 1 && d->k > 1 && d->p <= d->k - 1) {
        /* backward-data as the transposed conv: columns of dy over the input's extent */
        int64_t t = d->in.h * d->in.w * (int64_t)d->k * d->k * d->out.c;
        cols = t > cols ? t : cols;
    }
    *cols_out = cols;
    *wt_out = d->k > 1 ? d->out.c * kk : 0;
}

int64_t yp_conv_workspace_floats(const yp_conv_desc *d) {
    int64_t cols, wt;
    yp_conv_workspace_split(d, &cols, &wt);
    return cols + wt;
}
