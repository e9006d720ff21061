/* ops_cpu.c - the CPU backend's op table (yp_ops.h), the cast entry, and the small argument
 * checks its op files share. The kernels themselves live in silu.c, act.c, conv.c, bn.c, eltwise.c, pool.c,
 * attention.c, optim.c, loss.c (with ciou.c) and decode.c. */
#include <string.h>

#include "yp_cpu.h"
#include "yp_elem_math.h"

int yp_cpu_check_count(const char *op, int64_t n) {
    if (n < 0)
        return yp_cpu_fail("%s: negative element count %lld", op, (long long)n);
    return 0;
}

int yp_cpu_check_dims(const char *op, const char *what, yp_dims d) {
    if (d.n < 1 || d.h < 1 || d.w < 1 || d.c < 1)
        return yp_cpu_fail("%s: %s dims (n %lld, h %lld, w %lld, c %lld) must all be >= 1", op, what,
                           (long long)d.n, (long long)d.h, (long long)d.w, (long long)d.c);
    return 0;
}

int yp_cpu_check_ptrs(const char *op, int count, const void *const *ptrs) {
    for (int i = 0; i < count; i++)
        if (!ptrs[i])
            return yp_cpu_fail("%s: NULL buffer (argument %d)", op, i + 1);
    return 0;
}

int yp_cpu_elem_fail(const char *op, yp_elem t) {
    return yp_cpu_fail("cpu backend: %s: dtype %s not supported; the CPU runs fp32 plans", op, yp_elem_name(t));
}

void yp_cpu_scale_beta(float *x, int64_t n, float beta) {
    if (beta == 0.0f) {
        memset(x, 0, (size_t)n * sizeof *x);
    } else if (beta != 1.0f) {
        for (int64_t i = 0; i < n; i++)
            x[i] *= beta;
    }
}

/* Any pair of F32, F16, BF16 (the CPU's ops run fp32 only, but converting is plain arithmetic:
 * the executor's and the tests' host-side reference of the device's cast). */
static int cpu_cast(yp_backend *be, yp_elem from, const float *x, yp_elem to, float *y, int64_t n) {
    static const char op[] = "cast";
    (void)be;
    const void *p[] = {x, y};
    if (!yp_elem_size(from) || !yp_elem_size(to))
        return yp_cpu_fail("%s: element types %d -> %d: need f32, f16 or bf16", op, (int)from, (int)to);
    if (yp_cpu_check_count(op, n) || (n > 0 && yp_cpu_check_ptrs(op, 2, p))) return -1;
    if (n > 0 && (const void *)x == (const void *)y) return yp_cpu_fail("%s: x and y are one buffer", op);
    for (int64_t i = 0; i < n; i++) yp_elem_put(to, y, i, yp_elem_get(from, x, i));
    return 0;
}

const yp_ops yp_cpu_ops = {
    .elems = YP_ELEM_BIT(YP_ELEM_F32),
    .cast = cpu_cast,
    .silu_forward = yp_cpu_silu_forward,
    .silu_backward = yp_cpu_silu_backward,
    .relu_forward = yp_cpu_relu_forward,
    .relu_backward = yp_cpu_relu_backward,
    .leaky_relu_forward = yp_cpu_leaky_relu_forward,
    .leaky_relu_backward = yp_cpu_leaky_relu_backward,
    .hardswish_forward = yp_cpu_hardswish_forward,
    .hardswish_backward = yp_cpu_hardswish_backward,
    .conv2d_scratch = yp_cpu_conv2d_scratch,
    .conv2d_prepare = yp_cpu_conv2d_prepare,
    .conv2d_forward = yp_cpu_conv2d_forward,
    .conv2d_backward_data = yp_cpu_conv2d_backward_data,
    .conv2d_backward_weights = yp_cpu_conv2d_backward_weights,
    .conv2d_backward = yp_cpu_conv2d_backward,
    .bn_forward_train = yp_cpu_bn_forward_train,
    .bn_forward_eval = yp_cpu_bn_forward_eval,
    .bn_apply = yp_cpu_bn_apply,
    .bn_backward = yp_cpu_bn_backward,
    .bn_silu_apply = yp_cpu_bn_silu_apply,
    .bn_silu_backward = yp_cpu_bn_silu_backward,
    .add_forward = yp_cpu_add_forward,
    .axpy_grad = yp_cpu_axpy_grad,
    .concat_forward = yp_cpu_concat_forward,
    .concat_backward = yp_cpu_concat_backward,
    .upsample_forward = yp_cpu_upsample_forward,
    .upsample_backward = yp_cpu_upsample_backward,
    .maxpool_forward = yp_cpu_maxpool_forward,
    .maxpool_backward = yp_cpu_maxpool_backward,
    .space_to_depth = yp_cpu_space_to_depth,
    .depth_to_space = yp_cpu_depth_to_space,
    .attention_forward = yp_cpu_attention_forward,
    .attention_backward = yp_cpu_attention_backward,
    .zero_pad_forward = yp_cpu_zero_pad_forward,
    .zero_pad_backward = yp_cpu_zero_pad_backward,
    .sgd_step = yp_cpu_sgd_step,
    .adam_step = yp_cpu_adam_step,
    .ema_update = yp_cpu_ema_update,
    .sgd_ema_step = yp_cpu_sgd_ema_step,
    .optim_multi = yp_cpu_optim_multi,
    .sum_squares = yp_cpu_sum_squares,
    .sum_squares_multi = yp_cpu_sum_squares_multi,
    .loss_level = yp_cpu_loss_level,
    .detect_decode = yp_cpu_detect_decode,
};
