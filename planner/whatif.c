/* whatif.c - the remedies of a pinned candidate, each as a real plan. */
#include <string.h>

#include "yp_family.h"
#include "yp_front.h"
#include "yp_whatif.h"

static int add(yp_whatif *w, const char *what, const yp_graph *g, const yp_candidate *c, const yp_gpu *gpu,
               int64_t reserve, yp_err *err) {
    if (w->n == YP_WHATIF_MAX) return 0;
    yp_remedy *r = &w->r[w->n];
    snprintf(r->what, sizeof r->what, "%s", what);
    r->g = g;
    if (yp_plan_build(g, c, gpu, reserve, 0, &r->plan, err)) return -1;
    w->n++;
    return 0;
}

/* Checkpoint remedies: the front's middle point and its last (every checkpointable layer). */
static int ckpt_remedies(yp_whatif *w, const yp_graph *g, const yp_candidate *c, const yp_gpu *gpu, int64_t reserve,
                         yp_err *err) {
    yp_front f;
    int s = 2 * yp_graph_max_stride(g), rc = 0;
    if (c->policy != YP_SAVE_YOLOPLAN || yp_front_compute(g, s, s, &f, err)) return c->policy != YP_SAVE_YOLOPLAN ? 0 : -1;
    int picks[2] = {f.n / 2, f.n - 1};
    for (int i = 0; i < 2 && !rc; i++) {
        if (picks[i] <= 0 || (i == 1 && picks[1] == picks[0])) continue;
        yp_candidate k = *c;
        char set[128], what[200];
        k.ckpt_layers = f.p[picks[i]].layers;
        yp_front_layers_str(k.ckpt_layers, set, sizeof set);
        snprintf(what, sizeof what, "checkpoint %s", set);
        if (strlen(what) > 60) snprintf(what, sizeof what, "checkpoint all %d checkpointable layers", __builtin_popcountll(k.ckpt_layers));
        rc = add(w, what, g, &k, gpu, reserve, err);
    }
    yp_front_free(&f);
    return rc;
}

/* The largest batch that fits with this configuration, with accumulation keeping batch 64. */
static int accumulate_remedy(yp_whatif *w, const yp_graph *g, const yp_candidate *c, const yp_gpu *gpu,
                             int64_t reserve, yp_err *err) {
    yp_family f;
    if (yp_family_build(g, c, gpu, &f, err)) return -1;
    int64_t b = yp_family_max_batch(&f, g, c, (double)(gpu->mem_bytes - gpu->fixed_bytes - reserve), c->batch);
    yp_family_free(&f);
    if (b < 1 || b >= c->batch || b == c->batch / 2) return 0; /* nothing new beyond "batch halved" */
    yp_candidate k = *c;
    char what[64];
    k.batch = b;
    snprintf(what, sizeof what, "batch %lld, accumulate %d", (long long)b, yp_accumulate(b));
    return add(w, what, g, &k, gpu, reserve, err);
}

int yp_whatif_run(const yp_graph *g, const yp_graph *smaller, const yp_candidate *c, const yp_gpu *gpu,
                  int64_t reserve, yp_whatif *out, yp_err *err) {
    memset(out, 0, sizeof *out);
    if (yp_plan_build(g, c, gpu, reserve, 0, &out->base, err)) return -1;
    int stride = yp_graph_max_stride(g), rc = 0;
    yp_candidate k;
    char what[120];
#define TRY(label, edit, graph)                                        \
    do {                                                               \
        k = *c;                                                        \
        edit;                                                          \
        if (!rc) rc = add(out, label, graph, &k, gpu, reserve, err);   \
    } while (0)
    if (c->batch > 1) {
        snprintf(what, sizeof what, "batch %lld (accumulate %d)", (long long)(c->batch / 2), yp_accumulate(c->batch / 2));
        TRY(what, k.batch = c->batch / 2, g);
    }
    int64_t w3 = c->img_w * 3 / 4 / stride * stride, h3 = c->img_h * 3 / 4 / stride * stride;
    if (w3 >= stride && h3 >= stride) {
        snprintf(what, sizeof what, "image %lld (-25%%)", (long long)w3);
        TRY(what, (k.img_w = w3, k.img_h = h3), g);
    }
    if (c->precision != YP_PREC_AMP_FP16) TRY("AMP fp16", k.precision = YP_PREC_AMP_FP16, g);
    if (c->precision != YP_PREC_AMP_BF16 && gpu->bf16_tflops > 0) TRY("AMP bf16", k.precision = YP_PREC_AMP_BF16, g);
    if (!rc) rc = ckpt_remedies(out, g, c, gpu, reserve, err);
    if (c->mosaic) TRY("mosaic off", k.mosaic = 0, g);
    if (!rc) rc = accumulate_remedy(out, g, c, gpu, reserve, err);
    if (smaller) {
        snprintf(what, sizeof what, "smaller model %s", smaller->name);
        TRY(what, k.ckpt_layers = 0, smaller);
    }
    if (c->freeze < 10 && g->n_layers > 10) TRY("freeze backbone (10 layers)", k.freeze = 10, g);
    if (c->optimizer == YP_OPT_SGD) TRY("Adam instead of SGD", k.optimizer = YP_OPT_ADAM, g);
    else TRY("SGD instead of Adam", k.optimizer = YP_OPT_SGD, g);
#undef TRY
    if (rc) yp_whatif_free(out);
    return rc;
}

void yp_whatif_free(yp_whatif *w) {
    yp_plan_free(&w->base);
    for (int i = 0; i < w->n; i++) yp_plan_free(&w->r[i].plan);
    w->n = 0;
}
