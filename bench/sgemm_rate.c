/* sgemm_rate.c - the machine's single-precision GEMM rate through oneDNN's sgemm (the library
 * yoloplan's CPU backend computes with), the yardstick that bench/cpu_vs_pytorch.sh divides
 * yoloplan's training throughput by.
 *
 *   sgemm_rate [--threads 2] [--reps 3] [--json]
 *
 * Times dnnl_sgemm (row-major, no transposes, alpha 1, beta 0) on two shapes, M x N x K:
 *   square  2048 x 2048 x 2048   (the usual peak figure)
 *   conv    6400 x 64 x 576      (a 3x3 convolution of 64 -> 64 channels on an 80x80 map, im2col)
 * with omp_set_num_threads(--threads), one untimed call first, then the best of --reps timed
 * calls; FLOPs = 2 M N K. Also prints the instruction set oneDNN dispatches to
 * (dnnl_get_effective_cpu_isa) and checks 64 entries of each product against double-precision dot
 * products (max relative error).
 * Exit status 0, or 1 when an allocation fails or a checked entry is off by more than 1e-3. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <dnnl.h>
#include <omp.h>

typedef struct {
    const char *name;
    int m, n, k;
    double best_s, gflops, max_rel_err;
} shape;

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static uint64_t next(uint64_t *s) {
    *s = *s * 6364136223846793005ull + 1442695040888963407ull;
    return *s >> 33;
}

/* Uniform in [-1, 1). */
static void fill(float *x, size_t n, uint64_t *s) {
    for (size_t i = 0; i < n; i++) x[i] = (float)((double)next(s) / 2147483648.0 - 1.0);
}

static int run_shape(shape *sh, int reps) {
    size_t m = (size_t)sh->m, n = (size_t)sh->n, k = (size_t)sh->k;
    float *a = malloc(m * k * sizeof *a), *b = malloc(k * n * sizeof *b), *c = malloc(m * n * sizeof *c);
    if (!a || !b || !c) {
        free(a), free(b), free(c);
        fprintf(stderr, "sgemm_rate: out of memory for %s\n", sh->name);
        return -1;
    }
    uint64_t seed = 42;
    fill(a, m * k, &seed);
    fill(b, k * n, &seed);
    memset(c, 0, m * n * sizeof *c);
    sh->best_s = 1e30;
    for (int r = 0; r <= reps; r++) { /* r == 0: warm-up (thread start, page faults) */
        double t0 = now_s();
        if (dnnl_sgemm('N', 'N', sh->m, sh->n, sh->k, 1.0f, a, sh->k, b, sh->n, 0.0f, c, sh->n) != dnnl_success) {
            free(a), free(b), free(c);
            fprintf(stderr, "sgemm_rate: dnnl_sgemm failed on %s\n", sh->name);
            return -1;
        }
        double t = now_s() - t0;
        if (r > 0 && t < sh->best_s) sh->best_s = t;
    }
    sh->gflops = 2.0 * (double)m * (double)n * (double)k / sh->best_s * 1e-9;
    sh->max_rel_err = 0;
    for (int t = 0; t < 64; t++) {
        size_t i = (size_t)next(&seed) % m, j = (size_t)next(&seed) % n;
        double dot = 0, mag = 0;
        for (size_t p = 0; p < k; p++) {
            dot += (double)a[i * k + p] * (double)b[p * n + j];
            mag += fabs((double)a[i * k + p] * (double)b[p * n + j]);
        }
        double err = fabs((double)c[i * n + j] - dot) / (mag > 0 ? mag : 1);
        if (err > sh->max_rel_err || err != err) sh->max_rel_err = err;
    }
    free(a), free(b), free(c);
    return 0;
}

static const char *isa_name(dnnl_cpu_isa_t isa) {
    switch (isa) {
    case dnnl_cpu_isa_sse41: return "sse41";
    case dnnl_cpu_isa_avx: return "avx";
    case dnnl_cpu_isa_avx2: return "avx2";
    case dnnl_cpu_isa_avx512_core: return "avx512_core";
    case dnnl_cpu_isa_avx512_core_vnni: return "avx512_core_vnni";
    case dnnl_cpu_isa_avx512_core_bf16: return "avx512_core_bf16";
    case dnnl_cpu_isa_avx512_core_amx: return "avx512_core_amx";
    default: return "other";
    }
}

static int parse_pos(const char *opt, const char *v, int *out) {
    char *end;
    long x = v ? strtol(v, &end, 10) : 0;
    if (!v || *end || x < 1 || x > 1024) {
        fprintf(stderr, "sgemm_rate: %s needs a whole number 1..1024\n", opt);
        return -1;
    }
    *out = (int)x;
    return 0;
}

int main(int argc, char **argv) {
    int threads = 2, reps = 3, json = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--json")) json = 1;
        else if (!strcmp(argv[i], "--threads")) {
            if (parse_pos("--threads", i + 1 < argc ? argv[++i] : NULL, &threads)) return 2;
        } else if (!strcmp(argv[i], "--reps")) {
            if (parse_pos("--reps", i + 1 < argc ? argv[++i] : NULL, &reps)) return 2;
        } else {
            fprintf(stderr, "usage: sgemm_rate [--threads N] [--reps R] [--json]\n");
            return 2;
        }
    }
    omp_set_num_threads(threads);
    const char *core = isa_name(dnnl_get_effective_cpu_isa());
    shape shapes[2] = {{"square", 2048, 2048, 2048, 0, 0, 0}, {"conv", 6400, 64, 576, 0, 0, 0}};
    int bad = 0;
    for (int s = 0; s < 2; s++) {
        if (run_shape(&shapes[s], reps)) return 1;
        bad |= !(shapes[s].max_rel_err <= 1e-3);
    }
    if (json) {
        printf("{\"isa\": \"%s\", \"threads\": %d, \"reps\": %d,", core, omp_get_max_threads(), reps);
        for (int s = 0; s < 2; s++)
            printf(" \"%s\": {\"m\": %d, \"n\": %d, \"k\": %d, \"best_ms\": %.3f, \"gflops\": %.2f, \"max_rel_err\": %.3g},",
                   shapes[s].name, shapes[s].m, shapes[s].n, shapes[s].k, shapes[s].best_s * 1e3, shapes[s].gflops,
                   shapes[s].max_rel_err);
        printf(" \"ok\": %s}\n", bad ? "false" : "true");
    } else {
        printf("oneDNN sgemm, isa %s, %d threads, best of %d\n", core, omp_get_max_threads(), reps);
        for (int s = 0; s < 2; s++)
            printf("  %-6s %5d x %4d x %4d: %9.2f ms  %8.2f GFLOP/s  (max rel err %.2g)\n", shapes[s].name, shapes[s].m,
                   shapes[s].n, shapes[s].k, shapes[s].best_s * 1e3, shapes[s].gflops, shapes[s].max_rel_err);
    }
    if (bad) fprintf(stderr, "sgemm_rate: a checked entry is off by more than 1e-3: wrong results\n");
    return bad ? 1 : 0;
}
