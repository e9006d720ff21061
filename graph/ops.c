/* ops.c - the op table: one row per primitive op of the IR. */
#include <string.h>

#include "yp_graph.h"

static const yp_op_info yp_op_table[YP_OP_COUNT] = {
    [YP_OP_CONV2D] = {YP_OP_CONV2D, "conv2d", 1, 1},
    [YP_OP_BATCHNORM2D] = {YP_OP_BATCHNORM2D, "batchnorm2d", 1, 1},
    [YP_OP_SILU] = {YP_OP_SILU, "silu", 1, 1},
    [YP_OP_ADD] = {YP_OP_ADD, "add", 2, 2},
    [YP_OP_CONCAT] = {YP_OP_CONCAT, "concat", 2, YP_MAX_INPUTS},
    [YP_OP_UPSAMPLE_NEAREST] = {YP_OP_UPSAMPLE_NEAREST, "upsample_nearest", 1, 1},
    [YP_OP_MAXPOOL2D] = {YP_OP_MAXPOOL2D, "maxpool2d", 1, 1},
    [YP_OP_DETECT] = {YP_OP_DETECT, "detect", 1, YP_MAX_LEVELS},
    [YP_OP_SPACE_TO_DEPTH] = {YP_OP_SPACE_TO_DEPTH, "space_to_depth", 1, 1},
};

const yp_op_info *yp_op_get(yp_op op) {
    YP_ASSERT(op >= 0 && op < YP_OP_COUNT);
    return &yp_op_table[op];
}

int yp_op_from_name(const char *name) {
    for (int i = 0; i < YP_OP_COUNT; i++)
        if (strcmp(yp_op_table[i].name, name) == 0) return i;
    return -1;
}
