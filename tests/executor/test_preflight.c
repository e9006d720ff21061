/* test_preflight.c - the device-memory check before step 1 (executor/yp_preflight.h) with
 * fabricated figures: fits, fits to the byte, one byte short, the fixed cost counted once (it was
 * taken before free was read), unknown on the CPU backend and for negative figures, the figures
 * read from a backend's device_info, a failing device_info, and the refusal's line. */
#include <string.h>

#include "yp_preflight.h"
#include "yp_test.h"

#define MIB ((int64_t)1 << 20)
#define GIB ((int64_t)1 << 30)

static void test_decide(void) {
    yp_preflight p = {10 * GIB, 300 * MIB, 1, 12 * GIB};
    CHECK_EQ_I64(yp_preflight_budget(&p), 12 * GIB + 300 * MIB);
    CHECK(yp_preflight_decide(&p) == YP_PREFLIGHT_FITS);
    p.arena_bytes = 12 * GIB; /* arena + fixed == free + fixed: fits to the byte */
    CHECK(yp_preflight_decide(&p) == YP_PREFLIGHT_FITS);
    p.arena_bytes = 12 * GIB + 1;
    CHECK(yp_preflight_decide(&p) == YP_PREFLIGHT_SHORT);
    p.fixed_bytes = 0; /* a backend without fixed cost: the arena against the free memory alone */
    CHECK(yp_preflight_decide(&p) == YP_PREFLIGHT_SHORT);
    p.arena_bytes = 12 * GIB;
    CHECK(yp_preflight_decide(&p) == YP_PREFLIGHT_FITS);
    yp_preflight unknown = {100 * GIB, 0, 0, -1};
    CHECK_EQ_I64(yp_preflight_budget(&unknown), -1);
    CHECK(yp_preflight_decide(&unknown) == YP_PREFLIGHT_UNKNOWN);
    yp_preflight bad = {GIB, 0, 1, -5};
    CHECK(yp_preflight_decide(&bad) == YP_PREFLIGHT_UNKNOWN);
}

static void test_describe(void) {
    yp_preflight p = {(int64_t)(12.5 * GIB), GIB / 4, 1, 10 * GIB};
    char line[256];
    yp_preflight_describe(&p, line, sizeof line);
    CHECK(yp_preflight_decide(&p) == YP_PREFLIGHT_SHORT);
    CHECK_STR_HAS(line, "arena 12.50 GiB + fixed cost 0.25 GiB = 12.75 GiB");
    CHECK_STR_HAS(line, "the device has 10.25 GiB for them (10.00 GiB free now");
    CHECK(strchr(line, '\n') == NULL);
}

/* A stand-in device: its device_info reports fabricated figures, or fails. */
static int fail_info;
static int fake_info(yp_backend *be, char *name, size_t name_len, int64_t *total, int64_t *free_b) {
    (void)be, (void)name, (void)name_len;
    if (fail_info) return -1;
    *total = 16 * GIB, *free_b = 6 * GIB;
    return 0;
}
static const char *fake_error(yp_backend *be) {
    (void)be;
    return "device lost";
}

static void test_from_backend(void) {
    yp_backend gpu = {.name = "fake", .fixed_bytes = 200 * MIB, .device_info = fake_info, .last_error = fake_error};
    yp_preflight p;
    yp_err err;
    REQUIRE(yp_preflight_of(&gpu, 7 * GIB, &p, &err) == 0);
    CHECK(p.known);
    CHECK_EQ_I64(p.free_bytes, 6 * GIB);
    CHECK_EQ_I64(p.fixed_bytes, 200 * MIB);
    CHECK(yp_preflight_decide(&p) == YP_PREFLIGHT_SHORT);
    REQUIRE(yp_preflight_of(&gpu, 6 * GIB, &p, &err) == 0);
    CHECK(yp_preflight_decide(&p) == YP_PREFLIGHT_FITS);
    fail_info = 1;
    CHECK(yp_preflight_of(&gpu, GIB, &p, &err) == -1);
    CHECK_STR_HAS(err.msg, "device lost");
    fail_info = 0;
    char why[256];
    yp_backend *cpu = yp_backend_cpu_new(NULL, why, sizeof why);
    REQUIRE(cpu != NULL);
    CHECK_EQ_I64(cpu->fixed_bytes, 0);
    CHECK(yp_preflight_of(cpu, 1000 * GIB, &p, &err) == 0);
    CHECK(!p.known);
    CHECK(yp_preflight_decide(&p) == YP_PREFLIGHT_UNKNOWN);
    yp_backend_free(cpu);
}

int main(void) {
    YP_RUN(test_decide);
    YP_RUN(test_describe);
    YP_RUN(test_from_backend);
    return yp_test_summary();
}
