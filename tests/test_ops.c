/* test_ops.c - the op table: every row is complete (a half-added op fails here), and the facts
 * other layers read from the rows (matrix math, launches, elementwise FLOPs, the unknown-op hint)
 * say what those layers assumed before they asked the rows. */
#include <stdio.h>
#include <stdlib.h>

#include "yp_ir.h"
#include "yp_test.h"

static void test_rows_complete(void) {
    for (int op = 0; op < YP_OP_COUNT; op++) {
        const yp_op_info *r = yp_op_get((yp_op)op);
        REQUIRE(r->name != NULL && r->name[0] != '\0');
        CHECK_EQ_I64(r->op, op);
        CHECK_EQ_I64(yp_op_from_name(r->name), op); /* also: no two rows share a name */
        CHECK(r->min_inputs >= 1 && r->min_inputs <= r->max_inputs && r->max_inputs <= YP_MAX_INPUTS);
        CHECK(r->matrix_math == 0 || r->matrix_math == 1);
        CHECK(r->fwd_launches >= 1 && r->bwd_launches >= 1);
        CHECK(r->check != NULL);
        CHECK(r->infer != NULL);
        CHECK(r->eltwise_flops != NULL);
        CHECK(r->load_attrs != NULL);
        CHECK(r->write_attrs != NULL);
    }
}

/* The ops the cost model and the schedule knew by id before they asked the rows (a new op is free
 * to differ). */
static const yp_op k_conv[] = {YP_OP_CONV2D, YP_OP_DETECT};
static const yp_op k_eltwise[] = {YP_OP_BATCHNORM2D, YP_OP_SILU, YP_OP_ADD, YP_OP_CONCAT, YP_OP_UPSAMPLE_NEAREST,
                                  YP_OP_MAXPOOL2D, YP_OP_SPACE_TO_DEPTH};

/* The cost model used to test "conv2d or detect" itself: tensor-core rate, and two backward
 * launches (data and weight gradients); one launch otherwise. */
static void test_matrix_math(void) {
    for (size_t k = 0; k < sizeof k_conv / sizeof *k_conv; k++) {
        const yp_op_info *r = yp_op_get(k_conv[k]);
        CHECK(r->matrix_math == 1 && r->fwd_launches == 1 && r->bwd_launches == 2);
    }
    for (size_t k = 0; k < sizeof k_eltwise / sizeof *k_eltwise; k++) {
        const yp_op_info *r = yp_op_get(k_eltwise[k]);
        CHECK(r->matrix_math == 0 && r->fwd_launches == 1 && r->bwd_launches == 1);
    }
}

/* The schedule's elementwise rule: BN 6 per element, SiLU 5, maxpool k*k, the rest 1. */
static void test_eltwise_flops(void) {
    yp_shape out = {2, 3, 5, 7};
    int64_t numel = 2 * 3 * 5 * 7;
    for (size_t k = 0; k < sizeof k_eltwise / sizeof *k_eltwise; k++) {
        yp_op op = k_eltwise[k];
        yp_node n = {0};
        n.op = op;
        n.a.pool = (yp_pool_attrs){5, 1, 2};
        int64_t per = op == YP_OP_BATCHNORM2D ? 6 : op == YP_OP_SILU ? 5 : op == YP_OP_MAXPOOL2D ? 25 : 1;
        CHECK_EQ_I64(yp_op_get(op)->eltwise_flops(&n, out), per * numel);
    }
}

static char *read_all(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    char *buf = malloc(1 << 16);
    *len = buf ? fread(buf, 1, (1 << 16) - 1, f) : 0;
    fclose(f);
    if (buf) buf[*len] = '\0';
    return buf;
}

/* The loader's hint for an unknown op names every row, in table order. */
/* What each backward reads: the schedule keeps (or recomputes) exactly these for it. */
static void test_bwd_reads(void) {
    CHECK(yp_op_get(YP_OP_CONV2D)->bwd_reads == YP_BWD_INPUT_IF_TRAINS);
    CHECK(yp_op_get(YP_OP_DETECT)->bwd_reads == YP_BWD_INPUT_IF_TRAINS);
    CHECK(yp_op_get(YP_OP_BATCHNORM2D)->bwd_reads == (YP_BWD_INPUT | YP_BWD_STATS));
    CHECK(yp_op_get(YP_OP_SILU)->bwd_reads == YP_BWD_INPUT);
    CHECK(yp_op_get(YP_OP_MAXPOOL2D)->bwd_reads == (YP_BWD_INPUT | YP_BWD_INDICES));
    const yp_op gradient_only[] = {YP_OP_ADD, YP_OP_CONCAT, YP_OP_UPSAMPLE_NEAREST, YP_OP_SPACE_TO_DEPTH};
    for (size_t k = 0; k < sizeof gradient_only / sizeof *gradient_only; k++)
        CHECK(yp_op_get(gradient_only[k])->bwd_reads == 0);
}

static void test_unknown_op_lists_rows(void) {
    size_t len = 0;
    char *buf = read_all(YP_TEST_DATA "/ir/tiny.json", &len);
    REQUIRE(buf != NULL);
    char *silu = strstr(buf, "\"silu\"");
    REQUIRE(silu != NULL);
    memcpy(silu + 1, "gelu", 4);
    yp_err err;
    CHECK(yp_ir_load_buffer(buf, len, "tiny.json", &err) == NULL);
    char expect[256] = "use one of ";
    for (int op = 0; op < YP_OP_COUNT && yp_op_get((yp_op)op)->name; op++) {
        if (op) strncat(expect, ", ", sizeof expect - strlen(expect) - 1);
        strncat(expect, yp_op_get((yp_op)op)->name, sizeof expect - strlen(expect) - 1);
    }
    CHECK_STR_HAS(err.msg, expect);
    free(buf);
}

int main(void) {
    YP_RUN(test_rows_complete);
    YP_RUN(test_matrix_math);
    YP_RUN(test_eltwise_flops);
    YP_RUN(test_bwd_reads);
    YP_RUN(test_unknown_op_lists_rows);
    return yp_test_summary();
}
