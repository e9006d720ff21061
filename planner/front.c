/* front.c - checkpoint-set Pareto front: DP over layers, and brute force for tests. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "yp_front.h"

/* Saved bytes and recompute FLOPs of one schedule at batch 1. */
static int measure(const yp_graph *g, int64_t h, int64_t w, uint64_t layers, int64_t *saved, int64_t *flops,
                   yp_err *err) {
    yp_sched_opts o = yp_sched_opts_default(1, h, w);
    o.ckpt_layers = layers;
    yp_schedule *s = yp_schedule_build(g, &o, err);
    if (!s) return -1;
    *saved = yp_schedule_saved_bytes(s);
    *flops = s->recompute_flops;
    yp_schedule_free(s);
    return 0;
}

static int by_saved_desc(const void *a, const void *b) {
    const yp_front_point *x = a, *y = b;
    if (x->saved_bytes != y->saved_bytes) return x->saved_bytes < y->saved_bytes ? 1 : -1;
    return (x->recompute_flops > y->recompute_flops) - (x->recompute_flops < y->recompute_flops);
}

static int by_saved_asc(const void *a, const void *b) { return by_saved_desc(b, a); }

/* Keeps the Pareto-optimal points (fewer saved bytes and fewer recompute FLOPs are both better);
 * returns their count, sorted by saved bytes descending. */
static int prune(yp_front_point *p, int n) {
    /* ascending in saved bytes (ties: most FLOPs first), a point survives only if it recomputes
     * strictly less than every point that saves no more than it */
    qsort(p, (size_t)n, sizeof *p, by_saved_asc);
    int m = 0;
    int64_t best = INT64_MAX;
    for (int i = 0; i < n; i++) {
        if (i + 1 < n && p[i + 1].saved_bytes == p[i].saved_bytes) continue; /* a cheaper twin follows */
        if (p[i].recompute_flops < best) best = p[i].recompute_flops, p[m++] = p[i];
    }
    qsort(p, (size_t)m, sizeof *p, by_saved_desc);
    return m;
}

int yp_front_compute(const yp_graph *g, int64_t h, int64_t w, yp_front *out, yp_err *err) {
    int64_t base_saved, base_flops;
    memset(out, 0, sizeof *out);
    if (measure(g, h, w, 0, &base_saved, &base_flops, err)) return -1;
    int cap = 1;
    yp_front_point *p = malloc(sizeof *p);
    if (!p) return yp_err_set(err, "out of memory");
    p[0] = (yp_front_point){0, base_saved, base_flops};
    int n = 1;
    /* a checkpoint set is a 64-bit layer mask: a deeper model is offered sets of its first 64
     * layers (the backbone, where the large activations are) */
    for (int l = 0; l < g->n_layers && l < YP_CKPT_MAX_LAYERS; l++) {
        if (yp_layer_inner_convs(g, l) == 0) continue; /* checkpointing it changes nothing */
        int64_t s1, f1;
        if (measure(g, h, w, 1ull << l, &s1, &f1, err)) goto fail;
        int64_t dsaved = base_saved - s1, dflops = f1 - base_flops;
        if (n * 2 > cap) {
            cap = n * 2;
            yp_front_point *np = realloc(p, (size_t)cap * sizeof *np);
            if (!np) {
                yp_err_set(err, "out of memory");
                goto fail;
            }
            p = np;
        }
        for (int i = 0; i < n; i++)
            p[n + i] =
                (yp_front_point){p[i].layers | 1ull << l, p[i].saved_bytes - dsaved, p[i].recompute_flops + dflops};
        n = prune(p, 2 * n);
    }
    out->n = n, out->p = p;
    return 0;
fail:
    free(p);
    return -1;
}

int yp_front_brute(const yp_graph *g, int64_t h, int64_t w, int max_layers, yp_front *out, yp_err *err) {
    int idx[64], k = 0;
    memset(out, 0, sizeof *out);
    for (int l = 0; l < g->n_layers && l < 64; l++)
        if (yp_layer_inner_convs(g, l) > 0) idx[k++] = l;
    if (k > max_layers)
        return yp_err_set(err, "brute force over %d checkpointable layers refused (max %d)", k, max_layers);
    int n = 1 << k;
    yp_front_point *p = malloc((size_t)n * sizeof *p);
    if (!p) return yp_err_set(err, "out of memory");
    for (int m = 0; m < n; m++) {
        uint64_t set = 0;
        for (int j = 0; j < k; j++)
            if (m >> j & 1) set |= 1ull << idx[j];
        p[m].layers = set;
        if (measure(g, h, w, set, &p[m].saved_bytes, &p[m].recompute_flops, err)) {
            free(p);
            return -1;
        }
    }
    out->n = prune(p, n), out->p = p;
    return 0;
}

const char *yp_front_layers_str(uint64_t layers, char *buf, size_t n) {
    if (!layers) {
        snprintf(buf, n, "none");
        return buf;
    }
    buf[0] = 0;
    for (int l = 0; l < 64; l++) {
        if (!(layers >> l & 1)) continue;
        char one[8];
        snprintf(one, sizeof one, "%s%d", buf[0] ? "," : "", l);
        strncat(buf, one, n - strlen(buf) - 1);
    }
    return buf;
}

int yp_front_parse_layers(const yp_graph *g, const char *s, uint64_t *out, yp_err *err) {
    *out = 0;
    if (!s || !*s || !strcmp(s, "none")) return 0;
    const char *p = s;
    while (*p) {
        char *end;
        errno = 0;
        long l = strtol(p, &end, 10);
        if (end == p || errno || (*end && *end != ','))
            return yp_err_set(err, "--ckpt %s: expected \"none\" or a comma list of layer indices like 2,4,6", s);
        if (l < 0 || l >= g->n_layers)
            return yp_err_set(err, "--ckpt %s: layer %ld does not exist in %s (layers 0..%d)", s, l, g->name,
                              g->n_layers - 1);
        if (l >= YP_CKPT_MAX_LAYERS)
            return yp_err_set(err,
                              "--ckpt %s: layer %ld is past the %d layers a checkpoint set can name; choose layers "
                              "0..%d",
                              s, l, YP_CKPT_MAX_LAYERS, YP_CKPT_MAX_LAYERS - 1);
        if (yp_layer_inner_convs(g, (int)l) == 0)
            return yp_err_set(err, "--ckpt %s: layer %ld (%s) has nothing to recompute; checkpointable layers are "
                              "those with inner convs (C3, SPPF)", s, l, g->layers[l].module);
        *out |= 1ull << l;
        p = *end ? end + 1 : end;
    }
    return 0;
}

void yp_front_free(yp_front *f) {
    free(f->p);
    f->p = NULL;
    f->n = 0;
}
