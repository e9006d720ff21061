/* yp_test.h - a tiny test harness: each test file is one executable whose main() calls
 * YP_RUN(test_fn) for each case and returns yp_test_summary(). A failing check prints
 * file:line and the expression, marks the case failed, and the executable exits non-zero. */
#ifndef YP_TEST_H
#define YP_TEST_H

#include <math.h>
#include <stdio.h>
#include <string.h>

static int yp_test_failed_checks;
static int yp_test_cases_failed, yp_test_cases_passed, yp_test_cases_skipped;
static int yp_test_skip_flag;

#define CHECK(cond)                                                                  \
    do {                                                                             \
        if (!(cond)) {                                                               \
            fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
            yp_test_failed_checks++;                                                 \
        }                                                                            \
    } while (0)

#define CHECK_EQ_I64(a, b)                                                              \
    do {                                                                                \
        long long yp_a_ = (long long)(a), yp_b_ = (long long)(b);                       \
        if (yp_a_ != yp_b_) {                                                           \
            fprintf(stderr, "%s:%d: check failed: %s == %s (%lld vs %lld)\n", __FILE__, \
                    __LINE__, #a, #b, yp_a_, yp_b_);                                    \
            yp_test_failed_checks++;                                                    \
        }                                                                               \
    } while (0)

#define CHECK_STR_HAS(hay, needle)                                                          \
    do {                                                                                    \
        const char *yp_h_ = (hay), *yp_n_ = (needle);                                       \
        if (!yp_h_ || !strstr(yp_h_, yp_n_)) {                                              \
            fprintf(stderr, "%s:%d: check failed: \"%s\" does not contain \"%s\"\n", __FILE__, \
                    __LINE__, yp_h_ ? yp_h_ : "(null)", yp_n_);                             \
            yp_test_failed_checks++;                                                        \
        }                                                                                   \
    } while (0)

/* A check the rest of the case depends on (a model that must load): on failure it is counted
 * like CHECK and the case returns at once, so it cannot pass by doing nothing. */
#define REQUIRE(cond)                                                                  \
    do {                                                                               \
        if (!(cond)) {                                                                 \
            fprintf(stderr, "%s:%d: required check failed: %s\n", __FILE__, __LINE__, #cond); \
            yp_test_failed_checks++;                                                   \
            return;                                                                    \
        }                                                                              \
    } while (0)

/* Marks the current case skipped, with the reason printed; use `return` right after. */
#define SKIP(reason)                                 \
    do {                                             \
        printf("  SKIP %s: %s\n", __func__, reason); \
        yp_test_skip_flag = 1;                       \
    } while (0)

#define YP_RUN(fn)                                                   \
    do {                                                             \
        int yp_before_ = yp_test_failed_checks;                      \
        yp_test_skip_flag = 0;                                       \
        fn();                                                        \
        if (yp_test_failed_checks != yp_before_) {                   \
            printf("  FAIL %s\n", #fn);                              \
            yp_test_cases_failed++;                                  \
        } else if (yp_test_skip_flag) {                              \
            yp_test_cases_skipped++;                                 \
        } else {                                                     \
            printf("  ok   %s\n", #fn);                              \
            yp_test_cases_passed++;                                  \
        }                                                            \
    } while (0)

static inline int yp_test_summary(void) {
    printf("%d passed, %d failed, %d skipped\n", yp_test_cases_passed, yp_test_cases_failed,
           yp_test_cases_skipped);
    return yp_test_cases_failed ? 1 : 0;
}

#endif
