/* yp_test_move_cases.h - the data-movement ops' cases that the host index-math test
 * (test_kernels_index) and the CUDA tests in fp32 (test_cuda_ops) and fp16/bf16 (test_cuda_lowp)
 * share: odd extents, channel counts that are no multiple of a block, and every block order.
 * Defines: yp_test_upsample_case, YP_TEST_UPSAMPLE_CASES, YP_TEST_S2D_CASES, YP_TEST_PAD_CASES
 * (initialisers of arrays: each test keeps its own table and may add to it). */
#ifndef YP_TEST_MOVE_CASES_H
#define YP_TEST_MOVE_CASES_H

#include "yp_ops.h"

typedef struct {
    yp_dims in;
    int s; /* the scale */
} yp_test_upsample_case;

/* nearest upsampling by 2 and 3 */
#define YP_TEST_UPSAMPLE_CASES {{2, 7, 9, 33}, 2}, {{1, 5, 4, 17}, 3}
/* Focus's order at gain 2, Contract's at gains 2 and 3 */
#define YP_TEST_S2D_CASES \
    {{2, 16, 22, 3}, 2, YP_S2D_COL_MAJOR}, {{2, 6, 10, 5}, 2, YP_S2D_ROW_MAJOR}, {{2, 9, 12, 7}, 3, YP_S2D_ROW_MAJOR}
/* nn.ZeroPad2d((0, 1, 0, 1)) as YOLOv5's hub models use it, and an uneven one */
#define YP_TEST_PAD_CASES {{2, 13, 13, 5}, 0, 1, 0, 1, YP_ELEM_F32}, {{1, 4, 7, 3}, 2, 1, 3, 0, YP_ELEM_F32}

#endif
