/* whatif.c - the remedies of a pinned candidate, each as a real plan; those that save memory are
 * ranked by their time cost, those that save (almost) nothing are kept apart with the reason. */
#include <stdlib.h>
#include <string.h>

#include "whatif_internal.h"
#include "yp_family.h"
#include "yp_front.h"
#include "yp_search.h"

/* A remedy saving less than this fraction of the need is a note, not a remedy. */
#define WHATIF_NOTE_FRACTION 0.01

double yp_whatif_time_cost(const yp_plan *base, double images_per_s) {
    return images_per_s > 0 && base->time.images_per_s > 0 ? base->time.images_per_s / images_per_s - 1.0 : 0;
}

int64_t yp_whatif_fit_batch(const yp_graph *g, const yp_candidate *c, const yp_gpu *gpu, int64_t reserve, int64_t cap,
                            yp_plan *out, yp_err *err) {
    yp_family f;
    if (yp_family_build(g, c, gpu, &f, err)) return -1;
    yp_candidate k = *c;
    k.batch = yp_family_max_batch(&f, g, c, (double)(gpu->mem_bytes - gpu->fixed_bytes - reserve), cap);
    yp_family_free(&f);
    while (k.batch >= 1) {
        if (yp_plan_build(g, &k, gpu, reserve, 0, out, err)) return -1;
        if (out->fits) return k.batch;
        /* the aligned arena is a little larger than the family's bound: shrink in proportion, then by one */
        int64_t next = (int64_t)((double)k.batch * (double)out->budget_bytes / (double)out->arena_bytes);
        k.batch = next < k.batch ? next : k.batch - 1;
        yp_plan_free(out);
    }
    return 0;
}

int yp_whatif_ckpt_all(const yp_graph *g, const yp_candidate *c, uint64_t *layers, yp_err *err) {
    *layers = 0;
    if (c->policy != YP_SAVE_YOLOPLAN) return 0;
    yp_front f;
    int s = 2 * yp_graph_max_stride(g);
    if (yp_front_compute(g, s, s, &f, err)) return -1;
    if (f.n > 0) *layers = f.p[f.n - 1].layers;
    yp_front_free(&f);
    return 0;
}

typedef struct {
    const yp_whatif_opts *o;
    yp_whatif *w;
} ctx;

/* Plans remedy `what` (candidate k on graph g); `why` is the reason it is a note when it saves
 * under WHATIF_NOTE_FRACTION of the need (NULL: the generic one). */
static int add(ctx *x, yp_remedy_kind kind, const char *what, const char *why, const yp_graph *g, const yp_candidate *k,
               yp_err *err) {
    yp_whatif *w = x->w;
    yp_remedy r;
    memset(&r, 0, sizeof r);
    snprintf(r.what, sizeof r.what, "%s", what);
    r.kind = kind, r.g = g, r.has_plan = 1;
    if (yp_plan_build(g, k, x->o->gpu, x->o->reserve, 0, &r.plan, err)) return -1;
    r.time_cost = yp_whatif_time_cost(&w->base, r.plan.time.images_per_s);
    int64_t need = w->base.device_bytes - w->base.reserve_bytes;
    int note = (double)(w->base.device_bytes - r.plan.device_bytes) < WHATIF_NOTE_FRACTION * (double)need;
    if (note) snprintf(r.why, sizeof r.why, "%s", why ? why : "saves under 1 % of the need");
    int *n = note ? &w->n_notes : &w->n;
    yp_remedy *into = note ? w->notes : w->r;
    if (*n == YP_WHATIF_MAX) {
        yp_plan_free(&r.plan);
        return 0;
    }
    into[(*n)++] = r;
    return 0;
}

/* A note with no plan of its own. */
static void note(yp_whatif *w, yp_remedy_kind kind, const char *what, const char *why) {
    if (w->n_notes == YP_WHATIF_MAX) return;
    yp_remedy *r = &w->notes[w->n_notes++];
    memset(r, 0, sizeof *r);
    r->kind = kind;
    snprintf(r->what, sizeof r->what, "%s", what);
    snprintf(r->why, sizeof r->why, "%s", why);
}

/* Checkpoint remedies: the front's middle point and its last (every checkpointable layer). */
static int ckpt_remedies(ctx *x, const yp_graph *g, const yp_candidate *c, yp_err *err) {
    yp_front f;
    int s = 2 * yp_graph_max_stride(g), rc = 0;
    if (c->policy != YP_SAVE_YOLOPLAN) return 0;
    if (yp_front_compute(g, s, s, &f, err)) return -1;
    int picks[2] = {f.n / 2, f.n - 1};
    for (int i = 0; i < 2 && !rc; i++) {
        if (picks[i] <= 0 || (i == 1 && picks[1] == picks[0]) || f.p[picks[i]].layers == c->ckpt_layers) continue;
        yp_candidate k = *c;
        char set[128], what[200];
        k.ckpt_layers = f.p[picks[i]].layers;
        yp_front_layers_str(k.ckpt_layers, set, sizeof set);
        snprintf(what, sizeof what, "checkpoint %s", set);
        if (strlen(what) > 60)
            snprintf(what, sizeof what, "checkpoint all %d checkpointable layers", __builtin_popcountll(k.ckpt_layers));
        rc = add(x, YP_REMEDY_CKPT, what, c->ckpt_layers ? "the plan already checkpoints layers of its own" : NULL, g,
                 &k, err);
    }
    yp_front_free(&f);
    return rc;
}

/* The largest batch that fits with this configuration, accumulation keeping the nominal batch;
 * also records it as the what-if's largest batch (searched up to YP_MAX_BATCH). */
static int batch_remedies(ctx *x, const yp_graph *g, const yp_candidate *c, yp_err *err) {
    yp_plan p;
    int64_t b = yp_whatif_fit_batch(g, c, x->o->gpu, x->o->reserve, YP_MAX_BATCH, &p, err);
    if (b < 0) return -1;
    if (b > 0) yp_plan_free(&p);
    x->w->largest_batch = b;
    char what[64];
    yp_candidate k = *c;
    if (c->batch > 1) {
        k.batch = c->batch / 2;
        snprintf(what, sizeof what, "batch %lld (accumulate %d)", (long long)k.batch, yp_accumulate(k.batch));
        if (add(x, YP_REMEDY_BATCH, what, NULL, g, &k, err)) return -1;
    }
    if (b < 1 || b >= c->batch || b == c->batch / 2) return 0; /* nothing new beyond "batch halved" */
    k.batch = b;
    snprintf(what, sizeof what, "batch %lld, accumulate %d", (long long)b, yp_accumulate(b));
    return add(x, YP_REMEDY_ACCUMULATE, what, NULL, g, &k, err);
}

/* Precision remedies: AMP where the plan may use it; bf16 takes the bytes of fp16. */
static int precision_remedies(ctx *x, const yp_graph *g, const yp_candidate *c, yp_err *err) {
    unsigned ok = x->o->prec_mask & ((x->o->gpu->bf16_tflops > 0 ? 1u << YP_PREC_AMP_BF16 : 0u) | 3u);
    yp_candidate k = *c;
    if (c->precision != YP_PREC_AMP_FP16 && (ok >> YP_PREC_AMP_FP16 & 1)) {
        k.precision = YP_PREC_AMP_FP16;
        if (add(x, YP_REMEDY_AMP, "AMP fp16", "the bytes of amp-bf16 (both are 2-byte types)", g, &k, err)) return -1;
    }
    if (c->precision == YP_PREC_AMP_BF16 || !(ok >> YP_PREC_AMP_BF16 & 1)) return 0;
    if (c->precision == YP_PREC_FP32 && (ok >> YP_PREC_AMP_FP16 & 1)) {
        note(x->w, YP_REMEDY_AMP, "AMP bf16", "saves what AMP fp16 saves: both are 2-byte types");
        return 0;
    }
    k.precision = YP_PREC_AMP_BF16;
    return add(x, YP_REMEDY_AMP, "AMP bf16", "the bytes of amp-fp16 (both are 2-byte types)", g, &k, err);
}

/* Ranked remedies: cheapest in time first, then the larger saving. */
static int cheaper_first(const void *a, const void *b) {
    const yp_remedy *x = a, *y = b;
    if (x->time_cost != y->time_cost) return x->time_cost < y->time_cost ? -1 : 1;
    return (x->plan.device_bytes > y->plan.device_bytes) - (x->plan.device_bytes < y->plan.device_bytes);
}

/* "825 MiB", "114.44 GiB". Returns buf. */
static const char *host_str(int64_t h, char *buf, size_t n) {
    int64_t mb = h >> 20;
    snprintf(buf, n, mb >= 1024 ? "%.2f GiB" : "%.0f MiB", mb >= 1024 ? (double)h / 1073741824.0 : (double)mb);
    return buf;
}

static int single_remedies(ctx *x, const yp_graph *smaller, const yp_candidate *c, yp_err *err) {
    const yp_graph *g = x->o->g;
    int stride = yp_graph_max_stride(g);
    yp_candidate k = *c;
    char what[120];
    if (batch_remedies(x, g, c, err)) return -1;
    int64_t w3 = c->img_w * 3 / 4 / stride * stride, h3 = c->img_h * 3 / 4 / stride * stride;
    if (w3 >= stride && h3 >= stride) {
        snprintf(what, sizeof what, "image %lld (-25%%)", (long long)w3);
        k.img_w = w3, k.img_h = h3;
        if (add(x, YP_REMEDY_IMAGE, what, NULL, g, &k, err)) return -1;
        k = *c;
    }
    if (precision_remedies(x, g, c, err) || ckpt_remedies(x, g, c, err)) return -1;
    if (smaller) {
        snprintf(what, sizeof what, "smaller model %s", smaller->name);
        k.ckpt_layers = 0;
        if (add(x, YP_REMEDY_SMALLER, what, NULL, smaller, &k, err)) return -1;
        k = *c;
    }
    if (c->freeze < 10 && g->n_layers > 10) {
        k.freeze = 10;
        if (add(x, YP_REMEDY_FREEZE, "freeze backbone (10 layers)", NULL, g, &k, err)) return -1;
        k = *c;
    }
    if (x->o->fewer_anchors) {
        snprintf(what, sizeof what, "%d anchors per level (of %d)", x->o->fewer_anchors->na, g->na);
        if (add(x, YP_REMEDY_ANCHORS, what,
                "the Detect head and the loss's per-anchor buffers are a small part of the need", x->o->fewer_anchors,
                c, err))
            return -1;
    }
    if (c->mosaic) {
        k.mosaic = 0;
        if (add(x, YP_REMEDY_MOSAIC, "mosaic off", "the input keeps its size; only the label buffers shrink", g, &k,
                err))
            return -1;
        k = *c;
    }
    k.optimizer = c->optimizer == YP_OPT_SGD ? YP_OPT_ADAM : YP_OPT_SGD;
    if (add(x, YP_REMEDY_OPTIMIZER, c->optimizer == YP_OPT_SGD ? "Adam instead of SGD" : "SGD instead of Adam",
            c->optimizer == YP_OPT_SGD ? "Adam keeps two moments per weight, SGD one" : NULL, g, &k, err))
        return -1;
    note(x->w, YP_REMEDY_OTHER, "fewer augmentations", "they run on the host; the GPU sees the same batch");
    char host[32], cache[32], why[160];
    const yp_host_memory *hm = &x->w->base.host;
    host_str(hm->total, host, sizeof host);
    if (hm->image_cache > 0)
        snprintf(why, sizeof why, "host memory (this plan's data pipeline takes %s of host RAM, %s of it the image "
                 "cache), not the GPU's", host, host_str(hm->image_cache, cache, sizeof cache));
    else snprintf(why, sizeof why, "host memory (this plan's data pipeline takes %s of host RAM), not the GPU's", host);
    note(x->w, YP_REMEDY_OTHER, "fewer loader workers, no pinned memory", why);
    qsort(x->w->r, (size_t)x->w->n, sizeof *x->w->r, cheaper_first);
    return 0;
}

int yp_whatif_run(const yp_whatif_opts *o, const yp_candidate *c, yp_whatif *out, yp_err *err) {
    memset(out, 0, sizeof *out);
    if (yp_plan_build(o->g, c, o->gpu, o->reserve, o->n_images, &out->base, err)) return -1;
    ctx x = {o, out};
    int rc = single_remedies(&x, o->smaller, c, err);
    int any = 0;
    for (int i = 0; i < out->n; i++) any |= out->r[i].plan.fits;
    if (!rc && !any && !out->base.fits) rc = yp_whatif_combo(o, c, out, err);
    if (!rc && !out->base.fits) rc = yp_whatif_hardware(o, out, err);
    if (rc) yp_whatif_free(out);
    return rc;
}

static void free_remedy(yp_remedy *r) {
    if (r->has_plan) yp_plan_free(&r->plan);
    r->has_plan = 0;
}

void yp_whatif_free(yp_whatif *w) {
    yp_plan_free(&w->base);
    for (int i = 0; i < w->n; i++) free_remedy(&w->r[i]);
    for (int i = 0; i < w->n_notes; i++) free_remedy(&w->notes[i]);
    for (int i = 0; i < w->n_gpus; i++) free_remedy(&w->gpus[i]);
    if (w->has_combo) free_remedy(&w->combo);
    w->n = w->n_notes = w->n_gpus = w->has_combo = 0;
}
