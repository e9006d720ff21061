/* test_cpu_attention.c - the CPU backend's attention entries (yp_ops.h, yp_attn_desc) against
 * PyTorch's F.multi_head_attention_forward with identity projections, i.e. the core alone
 * (tests/data/attention/attention.txt, from tests/ref/make_attention_fixtures.py): the output and
 * the softmax weights, and dq, dk, dv with the forward's P and with P computed again, overwriting
 * (beta 0 over NaN) and adding (beta 1); two inputs sharing one gradient buffer; bad arguments. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "yp_backend.h"
#include "yp_test.h"

enum { N = 2, C = 8, HEADS = 2, H = 3, W = 3, L = H * W, ACT = N * L * C, PROBS = N * HEADS * L * L };
static const char *const names[] = {"q", "k", "v", "y", "probs", "dy", "dq", "dk", "dv"};
enum { Q, K, V, Y, P, DY, DQ, DK, DV, COUNT };
static float fx[COUNT][PROBS]; /* PROBS is the largest */

/* Reads the fixture: one line per tensor, "name count values...", in `names` order. */
static int load(void) {
    FILE *f = fopen(YP_TEST_DATA "/attention/attention.txt", "r");
    if (!f) return fprintf(stderr, "cannot open %s/attention/attention.txt\n", YP_TEST_DATA), -1;
    char name[32];
    int t = 0, rc = 0;
    for (int ch; (ch = fgetc(f)) == '#';)
        while ((ch = fgetc(f)) != '\n' && ch != EOF) {}
    fseek(f, -1, SEEK_CUR);
    for (long cnt; t < COUNT && fscanf(f, "%31s %ld", name, &cnt) == 2; t++) {
        long want = t == P ? PROBS : ACT;
        if (strcmp(name, names[t]) || cnt != want) {
            fprintf(stderr, "attention.txt: tensor %d is %s of %ld floats, expected %s of %ld\n", t, name, cnt,
                    names[t], want);
            rc = -1;
            break;
        }
        for (long i = 0; i < cnt; i++)
            if (fscanf(f, "%f", &fx[t][i]) != 1) rc = -1;
    }
    fclose(f);
    return rc || t != COUNT ? -1 : 0;
}

static double rel_err(const float *got, const float *want, int64_t n) {
    double num = 0, den = 0;
    for (int64_t i = 0; i < n; i++) {
        double d = fabs((double)got[i] - want[i]);
        num = d > num || d != d ? d : num;
        den = fabs(want[i]) > den ? fabs(want[i]) : den;
    }
    return den > 0 ? num / den : num;
}

#define CHECK_CLOSE(what, got, want, n)                                                   \
    do {                                                                                  \
        double e_ = rel_err((got), (want), (n));                                          \
        if (!(e_ <= 1e-5)) printf("    %-24s rel err %.3g (tol 1e-5)\n", (what), e_);     \
        CHECK(e_ <= 1e-5);                                                                \
    } while (0)

static yp_backend *cpu;
static const yp_attn_desc desc = {{N, H, W, C}, HEADS, YP_ELEM_F32};

static void fill(float *p, int64_t n, float v) {
    for (int64_t i = 0; i < n; i++) p[i] = v;
}

static void test_forward(void) {
    float y[ACT], probs[PROBS];
    fill(y, ACT, NAN), fill(probs, PROBS, NAN);
    REQUIRE(cpu->ops->attention_forward(cpu, &desc, fx[Q], fx[K], fx[V], y, probs) == 0);
    CHECK_CLOSE("y", y, fx[Y], ACT);
    CHECK_CLOSE("probs", probs, fx[P], PROBS);
}

/* The backward with the forward's P (kept) or without (computed again into the scratch). */
static void backward_case(int kept) {
    static float ws[2 * PROBS];
    float dq[ACT], dk[ACT], dv[ACT], betas[3] = {0, 0, 0};
    fill(dq, ACT, NAN), fill(dk, ACT, NAN), fill(dv, ACT, NAN), fill(ws, 2 * PROBS, NAN);
    REQUIRE(cpu->ops->attention_backward(cpu, &desc, fx[Q], fx[K], fx[V], kept ? fx[P] : NULL, fx[DY], dq, dk, dv,
                                         betas, ws) == 0);
    CHECK_CLOSE(kept ? "dq (P kept)" : "dq (P again)", dq, fx[DQ], ACT);
    CHECK_CLOSE(kept ? "dk (P kept)" : "dk (P again)", dk, fx[DK], ACT);
    CHECK_CLOSE(kept ? "dv (P kept)" : "dv (P again)", dv, fx[DV], ACT);
    /* beta 1 adds: a second pass doubles each gradient; a NULL gradient is skipped */
    float two[ACT], ones[3] = {1, 1, 1};
    REQUIRE(cpu->ops->attention_backward(cpu, &desc, fx[Q], fx[K], fx[V], kept ? fx[P] : NULL, fx[DY], dq, NULL, dv,
                                         ones, ws) == 0);
    for (int i = 0; i < ACT; i++) two[i] = 2 * fx[DQ][i];
    CHECK_CLOSE("dq twice", dq, two, ACT);
    CHECK_CLOSE("dk untouched", dk, fx[DK], ACT);
    for (int i = 0; i < ACT; i++) two[i] = 2 * fx[DV][i];
    CHECK_CLOSE("dv twice", dv, two, ACT);
}

static void test_backward_kept(void) { backward_case(1); }
static void test_backward_recomputed(void) { backward_case(0); }

/* k and v one value (one gradient buffer): the executor passes beta 0 then 1; the sum comes out. */
static void test_shared_gradient(void) {
    static float ws[PROBS];
    float dkv[ACT], want[ACT], betas[3] = {0, 0, 1};
    fill(dkv, ACT, NAN);
    REQUIRE(cpu->ops->attention_backward(cpu, &desc, fx[Q], fx[K], fx[V], fx[P], fx[DY], NULL, dkv, dkv, betas, ws) == 0);
    for (int i = 0; i < ACT; i++) want[i] = fx[DK][i] + fx[DV][i];
    CHECK_CLOSE("dk + dv", dkv, want, ACT);
}

static void test_bad_arguments(void) {
    float y[ACT], probs[PROBS];
    yp_attn_desc bad = desc;
    bad.heads = 3; /* does not divide 8 */
    CHECK(cpu->ops->attention_forward(cpu, &bad, fx[Q], fx[K], fx[V], y, probs) == -1);
    CHECK_STR_HAS(cpu->last_error(cpu), "3 heads must divide the 8 channels");
    CHECK(cpu->ops->attention_forward(cpu, &desc, fx[Q], fx[K], fx[V], y, NULL) == -1);
    CHECK_STR_HAS(cpu->last_error(cpu), "NULL buffer");
    bad = desc, bad.dtype = YP_ELEM_F16;
    CHECK(cpu->ops->attention_forward(cpu, &bad, fx[Q], fx[K], fx[V], y, probs) == -1);
    CHECK_STR_HAS(cpu->last_error(cpu), "f16");
}

int main(void) {
    char why[256] = "";
    cpu = yp_backend_cpu_new(NULL, why, sizeof why);
    if (!cpu) return fprintf(stderr, "no CPU backend: %s\n", why), 1;
    if (load()) return 1;
    YP_RUN(test_forward);
    YP_RUN(test_backward_kept);
    YP_RUN(test_backward_recomputed);
    YP_RUN(test_shared_gradient);
    YP_RUN(test_bad_arguments);
    yp_backend_free(cpu);
    return yp_test_summary();
}
