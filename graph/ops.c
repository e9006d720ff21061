/* ops.c - the op table: one row per primitive op of the IR, and the defaults rows share (ops
 * that keep their input's channels or shape, cost one FLOP per output element, have no attrs).
 * The per-op functions live by family in op_*.c (ops_internal.h). */
#include <string.h>

#include "ops_internal.h"

static const yp_op_info yp_op_table[YP_OP_COUNT] = {
    [YP_OP_CONV2D] = {.op = YP_OP_CONV2D, .name = "conv2d",
        .min_inputs = 1, .max_inputs = 1, .matrix_math = 1, .fwd_launches = 1, .bwd_launches = 2, .bwd_reads = YP_BWD_INPUT_IF_TRAINS,
        .check = yp_conv2d_check, .infer = yp_conv2d_infer, .eltwise_flops = yp_op_numel_flops,
        .load_attrs = yp_conv2d_load, .write_attrs = yp_conv2d_write, .resample = yp_conv2d_resample,
        .conv_like = 1, .conv_geom = yp_conv2d_geom, .params = yp_conv2d_params, .fwd_writes = yp_conv2d_fwd_writes},
    [YP_OP_BATCHNORM2D] = {.op = YP_OP_BATCHNORM2D, .name = "batchnorm2d",
        .min_inputs = 1, .max_inputs = 1, .matrix_math = 0, .fwd_launches = 1, .bwd_launches = 1, .bwd_reads = YP_BWD_INPUT | YP_BWD_STATS,
        .check = yp_bn_check, .infer = yp_bn_infer, .eltwise_flops = yp_bn_flops,
        .load_attrs = yp_bn_load, .write_attrs = yp_bn_write,
        .norm = 1, .bn_silu = YP_BN_SILU_NORM, .params = yp_bn_params, .fwd_writes = yp_bn_fwd_writes},
    [YP_OP_SILU] = {.op = YP_OP_SILU, .name = "silu",
        .min_inputs = 1, .max_inputs = 1, .matrix_math = 0, .fwd_launches = 1, .bwd_launches = 1, .bwd_reads = YP_BWD_INPUT,
        .activation = 1, .bn_silu = YP_BN_SILU_ACT,
        .check = yp_op_same_channels, .infer = yp_op_same_shape, .eltwise_flops = yp_silu_flops,
        .load_attrs = yp_op_no_attrs, .write_attrs = yp_op_write_no_attrs},
    [YP_OP_ADD] = {.op = YP_OP_ADD, .name = "add",
        .min_inputs = 2, .max_inputs = 2, .matrix_math = 0, .fwd_launches = 1, .bwd_launches = 1, .bwd_reads = 0,
        .check = yp_add_check, .infer = yp_add_infer, .eltwise_flops = yp_op_numel_flops,
        .load_attrs = yp_op_no_attrs, .write_attrs = yp_op_write_no_attrs},
    [YP_OP_CONCAT] = {.op = YP_OP_CONCAT, .name = "concat",
        .min_inputs = 2, .max_inputs = YP_MAX_INPUTS, .matrix_math = 0, .fwd_launches = 1, .bwd_launches = 1, .bwd_reads = 0,
        .check = yp_concat_check, .infer = yp_concat_infer, .eltwise_flops = yp_op_numel_flops,
        .load_attrs = yp_concat_load, .write_attrs = yp_concat_write},
    [YP_OP_UPSAMPLE_NEAREST] = {.op = YP_OP_UPSAMPLE_NEAREST, .name = "upsample_nearest",
        .min_inputs = 1, .max_inputs = 1, .matrix_math = 0, .fwd_launches = 1, .bwd_launches = 1, .bwd_reads = 0,
        .check = yp_op_same_channels, .infer = yp_upsample_infer, .eltwise_flops = yp_op_numel_flops,
        .load_attrs = yp_upsample_load, .write_attrs = yp_upsample_write, .resample = yp_upsample_resample},
    [YP_OP_MAXPOOL2D] = {.op = YP_OP_MAXPOOL2D, .name = "maxpool2d",
        .min_inputs = 1, .max_inputs = 1, .matrix_math = 0, .fwd_launches = 1, .bwd_launches = 1, .bwd_reads = YP_BWD_INPUT | YP_BWD_INDICES,
        .check = yp_op_same_channels, .infer = yp_maxpool_infer, .eltwise_flops = yp_maxpool_flops,
        .load_attrs = yp_maxpool_load, .write_attrs = yp_maxpool_write, .resample = yp_maxpool_resample,
        .fwd_writes = yp_maxpool_fwd_writes},
    [YP_OP_DETECT] = {.op = YP_OP_DETECT, .name = "detect",
        .min_inputs = 1, .max_inputs = YP_MAX_LEVELS, .matrix_math = 1, .fwd_launches = 1, .bwd_launches = 2, .bwd_reads = YP_BWD_INPUT_IF_TRAINS,
        .check = yp_detect_check, .infer = yp_detect_infer, .eltwise_flops = yp_op_numel_flops,
        .load_attrs = yp_detect_load, .write_attrs = yp_detect_write,
        .conv_like = 1, .head = 1, .conv_geom = yp_detect_geom, .params = yp_detect_params},
    [YP_OP_SPACE_TO_DEPTH] = {.op = YP_OP_SPACE_TO_DEPTH, .name = "space_to_depth",
        .min_inputs = 1, .max_inputs = 1, .matrix_math = 0, .fwd_launches = 1, .bwd_launches = 1, .bwd_reads = 0,
        .check = yp_s2d_check, .infer = yp_s2d_infer, .eltwise_flops = yp_op_numel_flops,
        .load_attrs = yp_op_no_attrs, .write_attrs = yp_op_write_no_attrs, .resample = yp_s2d_resample},
    /* forward: scores, softmax, P v; backward: dP and dv, softmax backward, dq and dk */
    [YP_OP_ATTENTION] = {.op = YP_OP_ATTENTION, .name = "attention",
        .min_inputs = 3, .max_inputs = 3, .matrix_math = 1, .fwd_launches = 3, .bwd_launches = 5, .bwd_reads = YP_BWD_INPUT | YP_BWD_ATTN_PROBS,
        .check = yp_attn_check, .infer = yp_attn_infer, .eltwise_flops = yp_attn_flops,
        .load_attrs = yp_attn_load, .write_attrs = yp_attn_write, .fwd_writes = yp_attn_fwd_writes},
    [YP_OP_RELU] = {.op = YP_OP_RELU, .name = "relu",
        .min_inputs = 1, .max_inputs = 1, .matrix_math = 0, .fwd_launches = 1, .bwd_launches = 1, .bwd_reads = YP_BWD_OUTPUT,
        .activation = 1,
        .check = yp_op_same_channels, .infer = yp_op_same_shape, .eltwise_flops = yp_op_numel_flops,
        .load_attrs = yp_op_no_attrs, .write_attrs = yp_op_write_no_attrs},
    [YP_OP_LEAKY_RELU] = {.op = YP_OP_LEAKY_RELU, .name = "leaky_relu",
        .min_inputs = 1, .max_inputs = 1, .matrix_math = 0, .fwd_launches = 1, .bwd_launches = 1, .bwd_reads = YP_BWD_INPUT,
        .activation = 1,
        .check = yp_op_same_channels, .infer = yp_op_same_shape, .eltwise_flops = yp_leaky_flops,
        .load_attrs = yp_leaky_load, .write_attrs = yp_leaky_write},
    [YP_OP_HARDSWISH] = {.op = YP_OP_HARDSWISH, .name = "hardswish",
        .min_inputs = 1, .max_inputs = 1, .matrix_math = 0, .fwd_launches = 1, .bwd_launches = 1, .bwd_reads = YP_BWD_INPUT,
        .activation = 1,
        .check = yp_op_same_channels, .infer = yp_op_same_shape, .eltwise_flops = yp_hardswish_flops,
        .load_attrs = yp_op_no_attrs, .write_attrs = yp_op_write_no_attrs},
    [YP_OP_ZERO_PAD] = {.op = YP_OP_ZERO_PAD, .name = "zero_pad",
        .min_inputs = 1, .max_inputs = 1, .matrix_math = 0, .fwd_launches = 1, .bwd_launches = 1, .bwd_reads = 0,
        .check = yp_op_same_channels, .infer = yp_zero_pad_infer, .eltwise_flops = yp_op_numel_flops,
        .load_attrs = yp_zero_pad_load, .write_attrs = yp_zero_pad_write},
    [YP_OP_CONTRACT] = {.op = YP_OP_CONTRACT, .name = "contract",
        .min_inputs = 1, .max_inputs = 1, .matrix_math = 0, .fwd_launches = 1, .bwd_launches = 1, .bwd_reads = 0,
        .check = yp_contract_check, .infer = yp_contract_infer, .eltwise_flops = yp_op_numel_flops,
        .load_attrs = yp_s2d_gain_load, .write_attrs = yp_s2d_gain_write, .resample = yp_contract_resample},
    [YP_OP_EXPAND] = {.op = YP_OP_EXPAND, .name = "expand",
        .min_inputs = 1, .max_inputs = 1, .matrix_math = 0, .fwd_launches = 1, .bwd_launches = 1, .bwd_reads = 0,
        .check = yp_expand_check, .infer = yp_expand_infer, .eltwise_flops = yp_op_numel_flops,
        .load_attrs = yp_s2d_gain_load, .write_attrs = yp_s2d_gain_write, .resample = yp_expand_resample},
};

const yp_op_info *yp_op_get(yp_op op) {
    YP_ASSERT(op >= 0 && op < YP_OP_COUNT);
    return &yp_op_table[op];
}

unsigned yp_op_fwd_writes(const yp_node *n) {
    const yp_op_info *r = yp_op_get(n->op);
    return r->fwd_writes ? r->fwd_writes(n) : 0u;
}

int yp_op_params(const yp_node *n, yp_param_spec *out) {
    const yp_op_info *r = yp_op_get(n->op);
    return r->params ? r->params(n, out) : 0;
}

int yp_op_from_name(const char *name) {
    for (int i = 0; i < YP_OP_COUNT; i++)
        if (strcmp(yp_op_table[i].name, name) == 0) return i;
    return -1;
}

/* ---------------------------------------------------------------- shared defaults */

int yp_op_same_channels(const yp_check_ctx *c, const yp_node *n, int *c_out) {
    *c_out = yp_check_channels(c, n->inputs[0]);
    return 0;
}

int yp_op_same_shape(const yp_infer_ctx *c, const yp_node *n, yp_node_info *o) {
    (void)c, (void)n, (void)o; /* out[0] already holds the input's shape */
    return 0;
}

int64_t yp_op_numel_flops(const yp_node *n, yp_shape out) {
    (void)n;
    return yp_shape_numel(out);
}

int yp_op_no_attrs(const yp_attrs_in *in, yp_node *n) {
    static const char *const none[] = {NULL};
    (void)n;
    return yp_attr_keys(in, none) ? -1 : 0;
}

void yp_op_write_no_attrs(const yp_node *n, yp_attrs_out *out) { (void)n, (void)out; }
