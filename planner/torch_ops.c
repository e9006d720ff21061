/* torch_ops.c - the PyTorch model's op table (torch_internal.h): one row per yp_op saying what
 * eager PyTorch does with the op beyond reading and writing its steps' tensors. Ops with nothing
 * of their own (the activations, add, concat, the resampling ops, attention) have a row of zeros
 * but for the op. */
#include "torch_internal.h"

static const ytr_op_row rows[YP_OP_COUNT] = {
    [YP_OP_CONV2D] = {.op = YP_OP_CONV2D, .cudnn_conv = 1},
    [YP_OP_BATCHNORM2D] = {.op = YP_OP_BATCHNORM2D, .two_pass_train = 1, .counts_batches = 1, .folds_into_conv = 1},
    [YP_OP_SILU] = {.op = YP_OP_SILU},
    [YP_OP_ADD] = {.op = YP_OP_ADD},
    [YP_OP_CONCAT] = {.op = YP_OP_CONCAT},
    [YP_OP_UPSAMPLE_NEAREST] = {.op = YP_OP_UPSAMPLE_NEAREST},
    [YP_OP_MAXPOOL2D] = {.op = YP_OP_MAXPOOL2D},
    [YP_OP_DETECT] = {.op = YP_OP_DETECT, .cudnn_conv = 1, .detect = 1},
    [YP_OP_SPACE_TO_DEPTH] = {.op = YP_OP_SPACE_TO_DEPTH},
    [YP_OP_ATTENTION] = {.op = YP_OP_ATTENTION},
    [YP_OP_RELU] = {.op = YP_OP_RELU},
    [YP_OP_LEAKY_RELU] = {.op = YP_OP_LEAKY_RELU},
    [YP_OP_HARDSWISH] = {.op = YP_OP_HARDSWISH},
    [YP_OP_ZERO_PAD] = {.op = YP_OP_ZERO_PAD},
    [YP_OP_CONTRACT] = {.op = YP_OP_CONTRACT},
    [YP_OP_EXPAND] = {.op = YP_OP_EXPAND},
};

const ytr_op_row *ytr_op_row_get(int op) {
    static const ytr_op_row none = {.op = (yp_op)-1};
    if (op < 0) return &none;
    YP_ASSERT(op < YP_OP_COUNT);
    return &rows[op];
}
