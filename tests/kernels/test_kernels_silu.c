/* test_kernels_silu.c - the CPU backend: SiLU forward against the closed form in double, backward
 * against central finite differences of that closed form in double, in-place use, argument errors,
 * the memory entries, and the build description. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "yp_backend.h"
#include "yp_test.h"

static yp_backend *cpu; /* one instance for every test (main) */

static double silu_ref(double x) {
    return x / (1.0 + exp(-x));
}

/* Deterministic uniform numbers in [lo, hi) (xorshift64*). */
static double uniform(uint64_t *state, double lo, double hi) {
    *state ^= *state >> 12;
    *state ^= *state << 25;
    *state ^= *state >> 27;
    uint64_t r = *state * 2685821657736338717ull;
    return lo + (hi - lo) * (double)(r >> 11) / 9007199254740992.0;
}

/* Forward: the float result against the double closed form. fp32 rounding of x/(1+e^-x) with a
 * <=1-ulp expf costs a few ulp (~3e-7 relative); 1e-6 relative leaves margin while a wrong formula
 * (e.g. sigmoid alone) is off by >1e-2. The 1e-30 absolute floor covers results that underflow. */
static void test_forward_closed_form(void) {
    enum { N = 20001 };
    static float x[N], y[N];
    for (int i = 0; i < N; i++)
        x[i] = (float)(-20.0 + 40.0 * i / (N - 1));
    CHECK(cpu->ops->silu_forward(cpu, YP_ELEM_F32, x, y, N) == 0);
    int bad = 0;
    for (int i = 0; i < N; i++) {
        double want = silu_ref(x[i]);
        if (fabs(y[i] - want) > 1e-6 * fabs(want) + 1e-30 && bad++ < 5)
            fprintf(stderr, "  forward x=%.9g: got %.9g want %.9g\n", x[i], y[i], want);
    }
    CHECK_EQ_I64(bad, 0);
}

/* Far tails: expf(-x) overflows for x < -88 and the result must be the limit (0), never NaN. */
static void test_forward_extremes(void) {
    float x[] = {-1000.0f, -100.0f, -88.0f, -1e-30f, 0.0f, 1e-30f, 88.0f, 100.0f, 1e30f};
    enum { N = sizeof x / sizeof x[0] };
    float y[N], dy[N], dx[N];
    for (int i = 0; i < N; i++)
        dy[i] = 1.0f;
    CHECK(cpu->ops->silu_forward(cpu, YP_ELEM_F32, x, y, N) == 0);
    CHECK(cpu->ops->silu_backward(cpu, YP_ELEM_F32, x, dy, dx, N) == 0);
    for (int i = 0; i < N; i++) {
        CHECK(isfinite(y[i]) && isfinite(dx[i]));
        if (x[i] <= -88.0f)
            CHECK(fabsf(y[i]) < 1e-30f && fabsf(dx[i]) < 1e-30f);
        if (x[i] >= 88.0f)
            CHECK(y[i] == x[i] && dx[i] == 1.0f);
    }
    CHECK(y[4] == 0.0f && dx[4] == 0.5f);
}

/* Backward: dx = dy * silu'(x) against dy * (f(x+h) - f(x-h)) / 2h in double with h = 1e-5, whose
 * own error is ~1e-10 (truncation h^2/6 |f'''| plus rounding 1e-16/h). The fp32 kernel's error is a
 * few ulp of its largest intermediate (|1 + x(1-s)| <= ~|x|), so 1e-5 relative plus 1e-6 * |dy|
 * absolute (needed where silu' crosses zero near x = -1.278) is generous but still catches a
 * missing term, which is off by >1e-2 somewhere on [-12, 12]. */
static void test_backward_finite_diff(void) {
    enum { N = 20000 };
    static float x[N], dy[N], dx[N];
    uint64_t st = 0x9e3779b97f4a7c15ull;
    for (int i = 0; i < N; i++) {
        x[i] = (float)uniform(&st, -12.0, 12.0);
        dy[i] = (float)uniform(&st, -2.0, 2.0);
    }
    x[0] = -1.278464543f; /* silu' = 0 here: the absolute term matters */
    x[1] = 0.0f;
    CHECK(cpu->ops->silu_backward(cpu, YP_ELEM_F32, x, dy, dx, N) == 0);
    const double h = 1e-5;
    int bad = 0;
    for (int i = 0; i < N; i++) {
        double xd = x[i];
        double want = dy[i] * (silu_ref(xd + h) - silu_ref(xd - h)) / (2.0 * h);
        double tol = 1e-5 * fabs(want) + 1e-6 * fabs(dy[i]);
        if (fabs(dx[i] - want) > tol && bad++ < 5)
            fprintf(stderr, "  backward x=%.9g dy=%.9g: got %.9g want %.9g\n", x[i], dy[i], dx[i],
                    want);
    }
    CHECK_EQ_I64(bad, 0);
}

/* The contract allows y == x and dx == dy; results must equal the out-of-place ones exactly. */
static void test_in_place(void) {
    enum { N = 1000 };
    float x[N], y[N], buf[N], dy[N], dx[N];
    uint64_t st = 42;
    for (int i = 0; i < N; i++) {
        x[i] = (float)uniform(&st, -8.0, 8.0);
        dy[i] = (float)uniform(&st, -1.0, 1.0);
    }
    CHECK(cpu->ops->silu_forward(cpu, YP_ELEM_F32, x, y, N) == 0);
    memcpy(buf, x, sizeof buf);
    CHECK(cpu->ops->silu_forward(cpu, YP_ELEM_F32, buf, buf, N) == 0);
    CHECK(memcmp(buf, y, sizeof buf) == 0);
    CHECK(cpu->ops->silu_backward(cpu, YP_ELEM_F32, x, dy, dx, N) == 0);
    memcpy(buf, dy, sizeof buf);
    CHECK(cpu->ops->silu_backward(cpu, YP_ELEM_F32, x, buf, buf, N) == 0);
    CHECK(memcmp(buf, dx, sizeof buf) == 0);
}

static void test_counts(void) {
    float x = 1.0f, y = 7.0f;
    CHECK(cpu->ops->silu_forward(cpu, YP_ELEM_F32, &x, &y, 0) == 0);
    CHECK(y == 7.0f);
    CHECK(cpu->ops->silu_forward(cpu, YP_ELEM_F32, NULL, NULL, 0) == 0);
    CHECK(cpu->ops->silu_forward(cpu, YP_ELEM_F32, &x, &y, -1) == -1);
    CHECK_STR_HAS(cpu->last_error(cpu), "negative");
    CHECK(cpu->ops->silu_backward(cpu, YP_ELEM_F32, &x, NULL, &y, 1) == -1);
    CHECK_STR_HAS(cpu->last_error(cpu), "NULL");
}

static void test_memory(void) {
    CHECK(strcmp(cpu->name, "cpu") == 0);
    CHECK(cpu->host_memory == 1);
    CHECK(cpu->alignment >= 16 && (cpu->alignment & (cpu->alignment - 1)) == 0);
    size_t sizes[] = {0, 1, 63, 64, 65, 1000003};
    for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
        unsigned char *p = cpu->mem_alloc(cpu, sizes[k]);
        CHECK(p != NULL);
        if (!p)
            continue;
        CHECK((uintptr_t)p % cpu->alignment == 0);
        CHECK(cpu->mem_set(cpu, p, 0xab, sizes[k]) == 0);
        unsigned char *q = malloc(sizes[k] + 1);
        CHECK(cpu->mem_copy(cpu, q, p, sizes[k], YP_COPY_DEVICE_TO_HOST) == 0);
        for (size_t i = 0; i < sizes[k]; i++)
            if (q[i] != 0xab) {
                CHECK(q[i] == 0xab);
                break;
            }
        free(q);
        cpu->mem_free(cpu, p);
    }
    cpu->mem_free(cpu, NULL);
    CHECK(cpu->sync(cpu) == 0);
    CHECK(cpu->mem_alloc(cpu, SIZE_MAX) == NULL);
    CHECK_STR_HAS(cpu->last_error(cpu), "too large");
}

/* Either build: the description names both backends, and yp_backend_cuda_new answers an instance
 * or a reason, the same answer every time. */
static void test_build_info(void) {
    const char *info = yp_kernels_build_info();
    printf("  build: %s\n", info);
    CHECK(strncmp(info, "cpu; cuda: ", 11) == 0);
    char why[256] = "";
    yp_backend *cuda = yp_backend_cuda_new(0, why, sizeof why);
    if (cuda)
        CHECK(strcmp(cuda->name, "cuda") == 0);
    else
        CHECK(why[0] != '\0');
    yp_backend *again = yp_backend_cuda_new(0, NULL, 0);
    CHECK((again != NULL) == (cuda != NULL));
    yp_backend_free(again);
    yp_backend_free(cuda);
}

int main(void) {
    char why[256] = "";
    cpu = yp_backend_cpu_new(NULL, why, sizeof why);
    if (!cpu) {
        fprintf(stderr, "no CPU backend: %s\n", why);
        return 1;
    }
    YP_RUN(test_forward_closed_form);
    YP_RUN(test_forward_extremes);
    YP_RUN(test_backward_finite_diff);
    YP_RUN(test_in_place);
    YP_RUN(test_counts);
    YP_RUN(test_memory);
    YP_RUN(test_build_info);
    yp_backend_free(cpu);
    return yp_test_summary();
}
