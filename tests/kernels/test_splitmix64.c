/* test_splitmix64.c - the one splitmix64 (kernels/yp_splitmix64.h) gives the reference generator's
 * published outputs (state 0, and state 1234567 as in Wikipedia's example), its step is the mixer
 * of the advanced state, and the counter-based value leaves the state alone. */
#include <stdint.h>

#include "yp_splitmix64.h"
#include "yp_test.h"

static void test_reference_outputs(void) {
    static const uint64_t from0[3] = {0xe220a8397b1dcdafull, 0x6e789e6aa1b965f4ull, 0x06c45d188009454full};
    static const uint64_t from1234567[3] = {6457827717110365317ull, 3203168211198807973ull, 9817491932198370423ull};
    uint64_t a = 0, b = 1234567;
    for (int i = 0; i < 3; i++) {
        CHECK(yp_splitmix64_next(&a) == from0[i]);
        CHECK(yp_splitmix64_next(&b) == from1234567[i]);
    }
    CHECK(a == 3 * YP_SPLITMIX64_GAMMA && b == 1234567 + 3 * YP_SPLITMIX64_GAMMA);
}

static void test_step_and_counter(void) {
    uint64_t s = 42, t = 42;
    uint64_t v = yp_splitmix64_at(s);
    CHECK(s == 42);
    CHECK(v == yp_splitmix64_next(&t) && t == 42 + YP_SPLITMIX64_GAMMA);
    CHECK(v == yp_splitmix64_mix(42 + YP_SPLITMIX64_GAMMA));
    CHECK(yp_splitmix64_mix(0) == 0); /* the mixer alone fixes 0: why the step adds the gamma first */
}

int main(void) {
    YP_RUN(test_reference_outputs);
    YP_RUN(test_step_and_counter);
    return yp_test_summary();
}
