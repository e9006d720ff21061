/* step_fixture.h - reads the records written by tests/ref/make_step_fixture.py and
 * make_eval_fixture.py: per record u32 name length, name, u32 ndim, u32 dims, then the data
 * (little endian): float32, or float16 when bit 31 of ndim is set (weights stored at half the
 * size; the fixture's PyTorch run used exactly those values). Records are read into float. */
#ifndef YP_STEP_FIXTURE_H
#define YP_STEP_FIXTURE_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "yp_elem_math.h"

typedef struct {
    char name[128];
    int64_t numel;
    float *data;
} fx_record;

typedef struct {
    int n;
    fx_record *r;
} fx_file;

/* Reads n values of record data (float16 when half) into out. 0, or -1 on a short read. */
static inline int fx_read_values(FILE *fp, float *out, int64_t n, int half) {
    if (!half) return fread(out, sizeof(float), (size_t)n, fp) == (size_t)n ? 0 : -1;
    uint16_t *h = malloc((size_t)n * sizeof *h + 1);
    int rc = h && fread(h, sizeof *h, (size_t)n, fp) == (size_t)n ? 0 : -1;
    for (int64_t i = 0; i < n && !rc; i++) out[i] = yp_f16_to_f32(h[i]);
    free(h);
    return rc;
}

static inline int fx_load(const char *path, fx_file *f) {
    FILE *fp = fopen(path, "rb");
    memset(f, 0, sizeof *f);
    if (!fp) return -1;
    uint32_t len, ndim, dim;
    while (fread(&len, 4, 1, fp) == 1) {
        fx_record rec = {{0}, 1, NULL};
        if (len >= sizeof rec.name || fread(rec.name, 1, len, fp) != len || fread(&ndim, 4, 1, fp) != 1) break;
        int half = (ndim >> 31) != 0;
        ndim &= 0x7FFFFFFFu;
        for (uint32_t i = 0; i < ndim; i++) {
            if (fread(&dim, 4, 1, fp) != 1) break;
            rec.numel *= dim;
        }
        rec.data = malloc((size_t)rec.numel * sizeof(float));
        if (!rec.data || fx_read_values(fp, rec.data, rec.numel, half)) {
            free(rec.data);
            break;
        }
        fx_record *nr = realloc(f->r, (size_t)(f->n + 1) * sizeof *nr);
        if (!nr) {
            free(rec.data);
            break;
        }
        f->r = nr, f->r[f->n++] = rec;
    }
    fclose(fp);
    return f->n > 0 ? 0 : -1;
}

static inline const fx_record *fx_get(const fx_file *f, const char *name) {
    for (int i = 0; i < f->n; i++)
        if (!strcmp(f->r[i].name, name)) return &f->r[i];
    return NULL;
}

static inline void fx_free(fx_file *f) {
    for (int i = 0; i < f->n; i++) free(f->r[i].data);
    free(f->r);
    memset(f, 0, sizeof *f);
}

/* max |a - b| / max |b| (0 when b is all zero and a equals it). */
static inline double fx_rel_err(const float *a, const float *b, int64_t n) {
    double num = 0, den = 0;
    for (int64_t i = 0; i < n; i++) {
        double d = a[i] - b[i], m = b[i] < 0 ? -b[i] : b[i];
        if (d < 0) d = -d;
        if (d > num) num = d;
        if (m > den) den = m;
    }
    return den > 0 ? num / den : num;
}

/* How far the change a - a0 is from the change b - b0 over n values: *diff = max |(a - a0) - (b - b0)|,
 * *size = max |b - b0|, *mag = max |b| (differences taken in double, so exact for float inputs). */
static inline void fx_change_diff(const float *a, const float *a0, const float *b, const float *b0, int64_t n,
                                  double *diff, double *size, double *mag) {
    double num = 0, den = 0, top = 0;
    for (int64_t i = 0; i < n; i++) {
        double db = (double)b[i] - b0[i], d = ((double)a[i] - a0[i]) - db, m = b[i] < 0 ? -b[i] : b[i];
        if (d < 0) d = -d;
        if (db < 0) db = -db;
        if (d > num) num = d;
        if (db > den) den = db;
        if (m > top) top = m;
    }
    *diff = num, *size = den, *mag = top;
}

#endif
