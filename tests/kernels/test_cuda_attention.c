/* test_cuda_attention.c - the CUDA backend's attention entries against the CPU backend's (which
 * tests/kernels/test_cpu_attention.c checks against PyTorch) on random q, k, v: the output and P, and
 * dq, dk, dv with the forward's P and with P computed again, overwriting (beta 0 over NaN) and
 * adding (beta 1), on a small map and on yolov5s-transformer's layer-8 map (20x20 at 640).
 * Skips itself (exit 77) without a usable GPU. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "yp_test.h"
#include "yp_test_cuda.h"

static yp_backend *gpu, *cpu;

/* A host buffer and its device copy. */
typedef struct {
    float *h;
    void *d;
    int64_t n;
} buf;

static buf buf_new(int64_t n, uint64_t seed, float fill) {
    buf b = {malloc((size_t)n * sizeof(float)), gpu->mem_alloc(gpu, (size_t)n * sizeof(float)), n};
    if (!b.h || !b.d) { /* out of memory: nothing can be compared */
        fprintf(stderr, "buf_new: cannot allocate %lld floats\n", (long long)n);
        exit(1);
    }
    uint64_t s = seed | 1;
    for (int64_t i = 0; i < n; i++) b.h[i] = seed ? yp_test_uniform(&s, -1.0f, 1.0f) : fill;
    CHECK(gpu->mem_copy(gpu, b.d, b.h, (size_t)n * sizeof(float), YP_COPY_HOST_TO_DEVICE) == 0);
    return b;
}

static void buf_free(buf *b) {
    free(b->h);
    gpu->mem_free(gpu, b->d);
}

/* The device copy against the host one (the CPU's result): max |gpu - cpu| / max |cpu| <= 1e-5. */
static void compare(const char *what, const buf *b) {
    float *got = malloc((size_t)b->n * sizeof(float));
    if (!got) exit(1);
    CHECK(gpu->mem_copy(gpu, got, b->d, (size_t)b->n * sizeof(float), YP_COPY_DEVICE_TO_HOST) == 0);
    double num = 0, den = 0;
    for (int64_t i = 0; i < b->n; i++) {
        double d = fabs((double)got[i] - b->h[i]);
        num = d > num || d != d ? d : num;
        den = fabs(b->h[i]) > den ? fabs(b->h[i]) : den;
    }
    double e = den > 0 ? num / den : num;
    if (!(e <= 1e-5)) printf("    %-22s rel err %.3g\n", what, e);
    CHECK(e <= 1e-5);
    free(got);
}

static void attn_case(yp_dims dims, int heads, uint64_t seed) {
    const yp_attn_desc d = {dims, heads, YP_ELEM_F32};
    const int64_t act = dims.n * dims.h * dims.w * dims.c, L = dims.h * dims.w, P = dims.n * heads * L * L;
    buf q = buf_new(act, seed, 0), k = buf_new(act, seed + 1, 0), v = buf_new(act, seed + 2, 0),
        dy = buf_new(act, seed + 3, 0), y = buf_new(act, 0, NAN), p = buf_new(P, 0, NAN), ws = buf_new(2 * P, 0, NAN);
    float *hws = malloc((size_t)(2 * P) * sizeof(float));
    if (!hws) exit(1);
    CHECK(cpu->ops->attention_forward(cpu, &d, q.h, k.h, v.h, y.h, p.h) == 0);
    CHECK(gpu->ops->attention_forward(gpu, &d, q.d, k.d, v.d, y.d, p.d) == 0);
    compare("y", &y), compare("probs", &p);
    for (int kept = 0; kept < 2; kept++)
        for (int add = 0; add < 2; add++) {
            float betas[3] = {(float)add, (float)add, (float)add}; /* a host array for both backends */
            buf g[3] = {buf_new(act, add ? seed + 4 : 0, NAN), buf_new(act, add ? seed + 5 : 0, NAN),
                        buf_new(act, add ? seed + 6 : 0, NAN)};
            CHECK(cpu->ops->attention_backward(cpu, &d, q.h, k.h, v.h, kept ? p.h : NULL, dy.h, g[0].h, g[1].h, g[2].h,
                                               betas, hws) == 0);
            CHECK(gpu->ops->attention_backward(gpu, &d, q.d, k.d, v.d, kept ? p.d : NULL, dy.d, g[0].d, g[1].d,
                                               g[2].d, betas, ws.d) == 0);
            compare(kept ? "dq (P kept)" : "dq (P again)", &g[0]);
            compare(kept ? "dk (P kept)" : "dk (P again)", &g[1]);
            compare(kept ? "dv (P kept)" : "dv (P again)", &g[2]);
            for (int j = 0; j < 3; j++) buf_free(&g[j]);
        }
    CHECK(gpu->sync(gpu) == 0);
    free(hws);
    buf *all[] = {&q, &k, &v, &dy, &y, &p, &ws};
    for (size_t j = 0; j < sizeof all / sizeof *all; j++) buf_free(all[j]);
}

static void test_small(void) { attn_case((yp_dims){2, 5, 7, 16}, 4, 11); }
static void test_yolov5s_layer8(void) { attn_case((yp_dims){1, 20, 20, 32}, 4, 29); }

int main(void) {
    int rc = yp_test_cuda_open(&gpu, &cpu, 0);
    if (rc) return rc;
    YP_RUN(test_small);
    YP_RUN(test_yolov5s_layer8);
    yp_backend_free(gpu);
    yp_backend_free(cpu);
    return yp_test_summary();
}
