/* cpu_ops_fixture.h - shared by the CPU op tests (test_cpu_conv.c, test_cpu_ops.c): the fixture
 * reader for tests/data/ops (written in float64 by tests/ref/make_op_fixtures.py, stored as
 * float32), random and NaN-filled buffers, and the error measure max|got - want| / max|want|.
 * Unless a check says otherwise the bound is the 1e-4 the issue asks for; the fp32 kernels'
 * actual errors are ~1e-6 (printed with -v). Each test file includes it once. */
#ifndef YP_CPU_OPS_FIXTURE_H
#define YP_CPU_OPS_FIXTURE_H
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "yp_backend.h"
#include "yp_test.h"

static yp_backend *cpu; /* the instance every op test runs on (cpu_ops_setup) */
static const yp_ops *ops; /* its table */

/* The scratch of conv d (with or without bias) for both stages, as the backend asks for it: the
 * per-image part (the larger of the two stages') and the fixed part. -1 if the backend refuses d. */
static inline int conv_scratch_both(const yp_conv_desc *d, int bias, int64_t *per_image, int64_t *fixed) {
    int64_t p0, f0, p1, f1;
    if (ops->conv2d_scratch(cpu, d, bias, YP_CONV_FORWARD, &p0, &f0) ||
        ops->conv2d_scratch(cpu, d, bias, YP_CONV_BACKWARD, &p1, &f1))
        return -1;
    *per_image = p0 > p1 ? p0 : p1, *fixed = f0 > f1 ? f0 : f1;
    *per_image = (*per_image + 15) / 16 * 16; /* keeps the fixed part 64-byte aligned too */
    return 0;
}
/* Floats of one buffer holding both parts (per-image first); at least 1. */
static inline int64_t conv_scratch_floats(const yp_conv_desc *d, int bias) {
    int64_t p, f;
    return conv_scratch_both(d, bias, &p, &f) ? 1 : p + f + 1;
}
/* The two scratch pointers of a conv op carved from that buffer. */
static inline float *ws_per_image(const yp_conv_desc *d, int bias, float *ws) {
    int64_t p, f;
    return conv_scratch_both(d, bias, &p, &f) || !p ? NULL : ws;
}
static inline float *ws_fixed(const yp_conv_desc *d, int bias, float *ws) {
    int64_t p, f;
    return conv_scratch_both(d, bias, &p, &f) || !f ? NULL : ws + p;
}
#define WS_ARGS(d, bias, ws) ws_per_image(d, bias, ws), ws_fixed(d, bias, ws)

static int verbose;

/* ---- fixtures ---- */

enum { MAX_TENSORS = 512 };
static struct {
    char name[64];
    int64_t offset, count;
} fx_index[MAX_TENSORS];
static int fx_count;
static float *fx_data;
static int64_t fx_floats;

/* The fixture file a test reads, tests/data/ops/<stem>.{txt,bin}, and the script writing it: a test
 * file may define both before including this header (test_cpu_conv_groups.c does). */
#ifndef YP_FX_STEM
#define YP_FX_STEM "ops"
#define YP_FX_SCRIPT "make_op_fixtures.py"
#endif

/* Loads <stem>.txt and <stem>.bin once. Returns 0, or -1 with a message. */
static inline int fx_load(void) {
    FILE *ft = fopen(YP_TEST_DATA "/ops/" YP_FX_STEM ".txt", "r");
    FILE *fb = fopen(YP_TEST_DATA "/ops/" YP_FX_STEM ".bin", "rb");
    int rc = -1;
    if (!ft || !fb) {
        fprintf(stderr, "cannot open %s/ops/%s.{txt,bin}\n", YP_TEST_DATA, YP_FX_STEM);
        goto done;
    }
    char line[512];
    while (fgets(line, sizeof line, ft)) {
        if (line[0] == '#' || line[0] == '\n')
            continue;
        long long off, cnt;
        if (fx_count == MAX_TENSORS || sscanf(line, "%63s %lld %lld", fx_index[fx_count].name, &off, &cnt) != 3) {
            fprintf(stderr, YP_FX_STEM ".txt: bad line or too many tensors: %s", line);
            goto done;
        }
        fx_index[fx_count].offset = off;
        fx_index[fx_count].count = cnt;
        if (off + cnt > fx_floats)
            fx_floats = off + cnt;
        fx_count++;
    }
    fx_data = malloc((size_t)fx_floats * sizeof *fx_data + 1);
    if (!fx_data || fread(fx_data, sizeof *fx_data, (size_t)fx_floats, fb) != (size_t)fx_floats) {
        fprintf(stderr, YP_FX_STEM ".bin: short read (want %lld floats)\n", (long long)fx_floats);
        goto done;
    }
    rc = 0;
done:
    if (ft)
        fclose(ft);
    if (fb)
        fclose(fb);
    return rc;
}

/* A fresh malloc'd copy (exact size, so ASan sees overruns) of fixture tensor `name`, which must
 * hold `count` floats; NULL (and a failed check) otherwise. The caller frees it. */
static inline float *fx(const char *name, int64_t count) {
    for (int i = 0; i < fx_count; i++) {
        if (strcmp(fx_index[i].name, name) != 0)
            continue;
        if (fx_index[i].count != count) {
            fprintf(stderr, "  fixture %s has %lld floats, test expects %lld\n", name,
                    (long long)fx_index[i].count, (long long)count);
            CHECK(fx_index[i].count == count);
            return NULL;
        }
        float *p = malloc((size_t)count * sizeof *p);
        memcpy(p, fx_data + fx_index[i].offset, (size_t)count * sizeof *p);
        return p;
    }
    fprintf(stderr, "  fixture %s missing (rerun tests/ref/" YP_FX_SCRIPT ")\n", name);
    CHECK(!"fixture present");
    return NULL;
}

/* fx() with the name built from "<case>.<tensor>". */
static inline float *fxc(const char *cs, const char *tensor, int64_t count) {
    char name[96];
    snprintf(name, sizeof name, "%s.%s", cs, tensor);
    return fx(name, count);
}

/* malloc'd n floats set to NaN: an op that should overwrite (beta 0) but reads instead leaves NaN. */
/* n NaNs, 64-byte aligned as the executor's arena tensors are (conv scratch must be). */
static inline float *nan_buf(int64_t n) {
    size_t bytes = ((size_t)(n > 0 ? n : 1) * sizeof(float) + 63) / 64 * 64;
    float *p = aligned_alloc(64, bytes);
    for (int64_t i = 0; i < n; i++)
        p[i] = NAN;
    return p;
}

/* Deterministic uniform numbers in [lo, hi) (xorshift64*). */
static inline double uniform(uint64_t *state, double lo, double hi) {
    *state ^= *state >> 12;
    *state ^= *state << 25;
    *state ^= *state >> 27;
    uint64_t r = *state * 2685821657736338717ull;
    return lo + (hi - lo) * (double)(r >> 11) / 9007199254740992.0;
}

static inline float *rand_buf(int64_t n, uint64_t seed, double lo, double hi) {
    float *p = malloc((size_t)(n > 0 ? n : 1) * sizeof *p);
    for (int64_t i = 0; i < n; i++)
        p[i] = (float)uniform(&seed, lo, hi);
    return p;
}

/* max|got - want| / max|want| (0/0 = 0; NaN anywhere gives infinity). */
static inline double rel_err(const float *got, const float *want, int64_t n) {
    double num = 0, den = 0;
    for (int64_t i = 0; i < n; i++) {
        double d = fabs((double)got[i] - (double)want[i]);
        if (isnan(d))
            return INFINITY;
        num = d > num ? d : num;
        den = fabs(want[i]) > den ? fabs(want[i]) : den;
    }
    return num == 0 ? 0 : num / den;
}

static inline double rel_err_d(const float *got, const double *want, int64_t n) {
    double num = 0, den = 0;
    for (int64_t i = 0; i < n; i++) {
        double d = fabs((double)got[i] - want[i]);
        if (isnan(d))
            return INFINITY;
        num = d > num ? d : num;
        den = fabs(want[i]) > den ? fabs(want[i]) : den;
    }
    return num == 0 ? 0 : num / den;
}

#define CHECK_CLOSE(what, got, want, n, tol)                                                       \
    do {                                                                                           \
        double e_ = (got) && (want) ? rel_err((got), (want), (n)) : INFINITY;                      \
        if (verbose || !(e_ <= (tol)))                                                             \
            printf("    %-28s rel err %.3g (tol %.0e)\n", (what), e_, (double)(tol));              \
        CHECK(e_ <= (tol));                                                                        \
    } while (0)

/* want = a + b elementwise into a fresh buffer (what an op with beta 1 should give). */
static inline float *sum_buf(const float *a, const float *b, int64_t n) {
    float *p = malloc((size_t)n * sizeof *p);
    for (int64_t i = 0; i < n; i++)
        p[i] = a[i] + b[i];
    return p;
}

static inline int64_t dims_count(yp_dims d) {
    return d.n * d.h * d.w * d.c;
}


static void cpu_ops_teardown(void) {
    yp_backend_free(cpu);
    cpu = NULL;
}

/* Creates the backend instance (freed at exit) and loads the fixtures; returns 0, 77 (skip) or 1. */
static inline int cpu_ops_setup(int argc, char **argv) {
    verbose = argc > 1 && strcmp(argv[1], "-v") == 0;
    char why[256] = "";
    cpu = yp_backend_cpu_new(NULL, why, sizeof why);
    if (!cpu) {
        fprintf(stderr, "no CPU backend: %s\n", why);
        return 1;
    }
    atexit(cpu_ops_teardown);
    ops = cpu->ops;
    uint32_t probe = 1;
    if (*(unsigned char *)&probe != 1) {
        printf("  SKIP: the fixtures are little-endian float32\n");
        return 77;
    }
    if (!ops || fx_load() != 0) {
        fprintf(stderr, "no op table or no fixtures\n");
        return 1;
    }
    return 0;
}

#endif
