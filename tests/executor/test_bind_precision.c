/* test_bind_precision.c - the planner's bytes per precision are the bytes the executor binds:
 * for yolov5n's plans under fp32, amp-fp16 and amp-bf16 (batch 2 at 128 px), the training
 * binding (executor/binding.c) has the plan's arena to the byte and puts every tensor at its
 * planned offset, with exactly the bytes its dtype gives (4 for fp32 masters, gradients, optimizer
 * state and EMA; 2 for AMP's activations and the low-precision weight copies), inside the arena,
 * and no two tensors that are live at one step share a byte; with guards every tensor keeps its
 * canary bytes free. The element type the steps hand the kernels is the tensor's. An executor on
 * the CPU backend refuses the AMP plans in one line, before allocating anything, and the cast that
 * refreshes their low-precision weight copies after an update (yp_exec_refresh_lowp, through the
 * CPU's cast entry) leaves every copy its master rounded to nearest even, as the upload of an fp32
 * host batch leaves the 2-byte images tensor. The AMP plans
 * use the CUDA backend's conv scratch model (the plan `--device cuda` gets). */
#include <stdlib.h>
#include <string.h>

#include "yp_elem_math.h"
#include "yp_executor_internal.h"
#include "yp_test.h"
#include "yp_test_models.h"

static yp_backend *cpu;

/* No two tensors of b live at one step overlap, and each lies inside the arena with `guard`
 * bytes free around it. Returns the violations. */
static int layout_errors(const yp_binding *b, int64_t guard) {
    const yp_schedule *s = b->s;
    int bad = 0;
    for (int t = 0; t < s->n_tensors; t++) {
        const yp_tensor *x = &s->tensors[t];
        if (b->offset[t] < guard || b->offset[t] + x->bytes + guard > b->arena_bytes) bad++;
        for (int u = t + 1; u < s->n_tensors; u++) {
            const yp_tensor *y = &s->tensors[u];
            if (x->bytes == 0 || y->bytes == 0 || x->last < y->first || y->last < x->first) continue;
            if (b->offset[t] < b->offset[u] + y->bytes + guard && b->offset[u] < b->offset[t] + x->bytes + guard) bad++;
        }
    }
    return bad;
}

/* Binds p on the CPU into an arena of its own, gives every master weight values that need
 * rounding in 16 bits (and NaN to every copy), refreshes the copies, and counts the copies whose
 * elements are not their master's rounded to the copy's type. */
static int64_t refresh_errors(const yp_plan *p) {
    yp_binding b;
    yp_err err;
    if (yp_bind_train(&b, p, cpu, 0, &err) || !(b.arena = cpu->mem_alloc(cpu, (size_t)b.arena_bytes))) {
        fprintf(stderr, "  binding for the refresh: %s\n", err.msg);
        yp_bind_free(&b);
        return -1;
    }
    const yp_schedule *s = b.s;
    for (int t = 0; t < s->n_tensors; t++) {
        const yp_tensor *x = &s->tensors[t];
        float *v = yp_bind_tensor(&b, t);
        int64_t n = yp_shape_numel(x->shape);
        if (x->kind == YP_KIND_WEIGHT)
            for (int64_t i = 0; i < n; i++) v[i] = (float)((t * 7919 + i) % 2001 - 1000) * 1.0009765625e-3f;
        if (x->kind == YP_KIND_LOWP) memset(v, 0xff, (size_t)x->bytes);
    }
    CHECK(yp_exec_refresh_lowp(&b, &err) == 0);
    int64_t bad = 0;
    /* the host's fp32 batch lands in the images tensor rounded to its type */
    const yp_tensor *im = &s->tensors[b.images_t];
    const int64_t ni = yp_shape_numel(im->shape);
    float *batch = malloc((size_t)ni * sizeof *batch);
    if (!batch) return -1;
    for (int64_t i = 0; i < ni; i++) batch[i] = (float)((i * 7919) % 1000) / 999.0f;
    CHECK(yp_bind_upload_images(&b, batch, im->shape.n, &err) == 0);
    const yp_elem ie = yp_exec_elem(im->dtype);
    for (int64_t i = 0; i < ni; i++)
        if (yp_elem_get(ie, yp_bind_tensor(&b, b.images_t), i) != yp_elem_round(ie, batch[i])) {
            bad++;
            break;
        }
    free(batch);
    for (int t = 0; t < s->n_tensors; t++) {
        const yp_tensor *c = &s->tensors[t];
        if (c->kind != YP_KIND_LOWP) continue;
        const float *w = yp_bind_tensor(&b, c->param);
        const void *h = yp_bind_tensor(&b, t);
        yp_elem e = yp_exec_elem(c->dtype);
        for (int64_t i = 0; i < yp_shape_numel(c->shape); i++)
            if (yp_elem_get(e, h, i) != yp_elem_round(e, w[i])) {
                bad++;
                break;
            }
    }
    cpu->mem_free(cpu, b.arena);
    b.arena = NULL;
    yp_bind_free(&b);
    return bad;
}

static void check_precision(yp_precision prec) {
    yp_graph *g = yp_test_model("yolov5n");
    REQUIRE(g != NULL);
    yp_gpu gpu;
    yp_err err;
    REQUIRE(yp_gpu_parse("a100-40gb", &gpu, &err) == 0);
    yp_candidate c = yp_candidate_default();
    c.batch = 2, c.img_w = c.img_h = 128, c.precision = prec, c.mosaic = 0;
    if (prec == YP_PREC_FP32) /* the CPU's own plan; AMP's as the CUDA executor would get it */
        yp_exec_candidate_for(&c, cpu);
    else
        REQUIRE(yp_candidate_set_scratch(&c, "cuda", yp_exec_scratch_resolver(), &err) == 0);
    yp_plan p;
    int built = yp_plan_build(g, &c, &gpu, 0, 0, &p, &err);
    if (built) fprintf(stderr, "  plan: %s\n", err.msg);
    REQUIRE(built == 0);
    const yp_schedule *s = p.sched;
    const int amp = prec != YP_PREC_FP32;
    int wrong_bytes = 0, wrong_dtype = 0, lowp = 0;
    for (int t = 0; t < s->n_tensors; t++) {
        const yp_tensor *x = &s->tensors[t];
        wrong_bytes += x->bytes != yp_shape_numel(x->shape) * (int64_t)yp_dtype_size(x->dtype);
        int persistent_f32 = x->kind == YP_KIND_WEIGHT || x->kind == YP_KIND_GRAD || x->kind == YP_KIND_OPTSTATE ||
                             x->kind == YP_KIND_EMA;
        if (persistent_f32) wrong_dtype += x->dtype != YP_DTYPE_F32;
        if (x->kind == YP_KIND_LOWP) lowp++, wrong_dtype += yp_dtype_size(x->dtype) != 2;
        if (x->role == YP_ROLE_VALUE || x->role == YP_ROLE_VALUE_GRAD)
            wrong_dtype += x->dtype != (prec == YP_PREC_AMP_FP16 ? YP_DTYPE_F16 : amp ? YP_DTYPE_BF16 : YP_DTYPE_F32);
        yp_elem want = x->dtype == YP_DTYPE_F16 ? YP_ELEM_F16 : x->dtype == YP_DTYPE_BF16 ? YP_ELEM_BF16 : YP_ELEM_F32;
        if (x->dtype == YP_DTYPE_F32 || x->dtype == YP_DTYPE_F16 || x->dtype == YP_DTYPE_BF16)
            wrong_dtype += yp_exec_elem(x->dtype) != want;
    }
    CHECK_EQ_I64(wrong_bytes, 0);
    CHECK_EQ_I64(wrong_dtype, 0);
    CHECK(amp ? lowp > 0 : lowp == 0);
    for (int64_t guard = 0; guard <= 256; guard += 256) {
        yp_binding b;
        REQUIRE(yp_bind_train(&b, &p, cpu, guard, &err) == 0);
        if (!guard) {
            CHECK_EQ_I64(b.arena_bytes, p.arena_bytes);
            int moved = 0;
            for (int t = 0; t < s->n_tensors; t++) moved += b.offset[t] != p.arena.offsets[t];
            CHECK_EQ_I64(moved, 0);
        }
        CHECK_EQ_I64(layout_errors(&b, guard), 0);
        yp_bind_free(&b);
    }
    int trained_convs = 0;
    for (int t = 0; t < s->n_tensors; t++)
        trained_convs += s->tensors[t].role == YP_ROLE_CONV_WEIGHT && s->tensors[t].grad >= 0;
    if (amp) {
        CHECK_EQ_I64(lowp, trained_convs); /* one copy per trained conv (and Detect) weight */
        CHECK_EQ_I64(refresh_errors(&p), 0);
    }
    printf("  %s: arena %.1f MiB, %d low-precision copies\n", yp_precision_name(prec), (double)p.arena_bytes / (1 << 20),
           lowp);
    yp_exec x;
    int rc = yp_exec_init(&x, &p, cpu, 0, 1, &err);
    if (amp) {
        CHECK(rc == -1);
        if (rc) CHECK_STR_HAS(err.msg, "runs fp32 plans; re-plan with --precision fp32");
    } else {
        CHECK(rc == 0);
        if (!rc) {
            CHECK_EQ_I64(x.train.arena_bytes, p.arena_bytes);
            yp_exec_free(&x);
        }
    }
    yp_plan_free(&p);
    yp_graph_free(g);
}

static void test_fp32(void) { check_precision(YP_PREC_FP32); }
static void test_amp_fp16(void) { check_precision(YP_PREC_AMP_FP16); }
static void test_amp_bf16(void) { check_precision(YP_PREC_AMP_BF16); }

int main(void) {
    char why[256];
    cpu = yp_backend_cpu_new(NULL, why, sizeof why);
    if (!cpu) return fprintf(stderr, "no CPU backend: %s\n", why), 1;
    YP_RUN(test_fp32);
    YP_RUN(test_amp_fp16);
    YP_RUN(test_amp_bf16);
    yp_backend_free(cpu);
    return yp_test_summary();
}
