/* whatif_combo.c - when no remedy fits alone: every combination of the remedies that change the
 * configuration (AMP, checkpointing every checkpointable layer, freezing the backbone, image -25 %,
 * the next smaller model), each at the largest batch up to the candidate's that then fits, sized
 * with the family's bound; the cheapest in time is built as a real plan. */
#include <string.h>

#include "whatif_internal.h"
#include "yp_family.h"

enum { KNOB_AMP, KNOB_CKPT, KNOB_FREEZE, KNOB_IMAGE, KNOB_SMALLER, KNOB_COUNT };

typedef struct {
    const yp_whatif_opts *o;
    const yp_candidate *c;
    yp_precision amp;          /* the AMP precision a combination switches to; fp32: none allowed */
    uint64_t ckpt_all[2];      /* every checkpointable layer of [0] the model, [1] the smaller one */
} knobs;

/* Whether knob i changes c at all (a combination with a knob that does nothing is a smaller one). */
static int applies(const knobs *k, int i) {
    const yp_candidate *c = k->c;
    int stride = yp_graph_max_stride(k->o->g);
    switch (i) {
    case KNOB_AMP: return k->amp != YP_PREC_FP32 && c->precision == YP_PREC_FP32;
    case KNOB_CKPT: return k->ckpt_all[0] && k->ckpt_all[0] != c->ckpt_layers;
    case KNOB_FREEZE: return c->freeze < 10 && k->o->g->n_layers > 10;
    case KNOB_IMAGE:
        return c->img_w * 3 / 4 / stride * stride >= stride && c->img_h * 3 / 4 / stride * stride >= stride;
    default: return k->o->smaller != NULL;
    }
}

/* The candidate of combination `set` (bits of knobs), its graph in *g, its name in what. */
static yp_candidate combine(const knobs *k, unsigned set, const yp_graph **g, char *what, size_t n) {
    yp_candidate m = *k->c;
    int stride = yp_graph_max_stride(k->o->g);
    *g = set >> KNOB_SMALLER & 1 ? k->o->smaller : k->o->g;
    what[0] = 0;
    size_t at = 0;
#define NAME(...) (at += (size_t)snprintf(what + at, at < n ? n - at : 0, __VA_ARGS__))
    if (set >> KNOB_AMP & 1) m.precision = k->amp, NAME("AMP %s", k->amp == YP_PREC_AMP_FP16 ? "fp16" : "bf16");
    if (set >> KNOB_SMALLER & 1) m.ckpt_layers = 0, NAME("%s%s", at ? " + " : "", (*g)->name);
    if (set >> KNOB_CKPT & 1) m.ckpt_layers = k->ckpt_all[*g != k->o->g], NAME("%scheckpoint all", at ? " + " : "");
    if (set >> KNOB_FREEZE & 1) m.freeze = 10, NAME("%sfreeze 10", at ? " + " : "");
    if (set >> KNOB_IMAGE & 1) {
        m.img_w = m.img_w * 3 / 4 / stride * stride, m.img_h = m.img_h * 3 / 4 / stride * stride;
        NAME("%simage %lld", at ? " + " : "", (long long)m.img_w);
    }
#undef NAME
    return m;
}

/* The combination's largest batch (family bound) and its images per second there; 0 if none. */
static int64_t size_combo(const knobs *k, const yp_graph *g, yp_candidate *m, double *ips, yp_err *err) {
    const yp_gpu *gpu = k->o->gpu;
    yp_family f;
    if (yp_family_build(g, m, gpu, &f, err)) return -1;
    m->batch = yp_family_max_batch(&f, g, m, (double)(gpu->mem_bytes - gpu->fixed_bytes - k->o->reserve), k->c->batch);
    yp_timing t;
    if (m->batch >= 1) yp_family_timing(&f, g, m, &t), *ips = t.images_per_s;
    yp_family_free(&f);
    return m->batch;
}

int yp_whatif_combo(const yp_whatif_opts *o, const yp_candidate *c, yp_whatif *w, yp_err *err) {
    knobs k = {o, c, YP_PREC_FP32, {0, 0}};
    if (o->prec_mask >> YP_PREC_AMP_FP16 & 1) k.amp = YP_PREC_AMP_FP16;
    else if (o->prec_mask >> YP_PREC_AMP_BF16 & 1 && o->gpu->bf16_tflops > 0) k.amp = YP_PREC_AMP_BF16;
    if (yp_whatif_ckpt_all(o->g, c, &k.ckpt_all[0], err)) return -1;
    if (o->smaller && yp_whatif_ckpt_all(o->smaller, c, &k.ckpt_all[1], err)) return -1;
    unsigned usable = 0;
    for (int i = 0; i < KNOB_COUNT; i++) usable |= (unsigned)applies(&k, i) << i;
    unsigned best = 0;
    double best_cost = 0;
    for (unsigned set = 1; set < 1u << KNOB_COUNT; set++) {
        if (set & ~usable) continue;
        const yp_graph *g;
        char what[128];
        yp_candidate m = combine(&k, set, &g, what, sizeof what);
        double ips = 0;
        int64_t b = size_combo(&k, g, &m, &ips, err);
        if (b < 0) return -1;
        double cost = yp_whatif_time_cost(&w->base, ips);
        if (b >= 1 && (!best || cost < best_cost)) best = set, best_cost = cost;
    }
    if (!best) return 0;
    yp_remedy *r = &w->combo;
    memset(r, 0, sizeof *r);
    char what[128];
    yp_candidate m = combine(&k, best, &r->g, what, sizeof what);
    int64_t b = yp_whatif_fit_batch(r->g, &m, o->gpu, o->reserve, c->batch, &r->plan, err);
    if (b < 0) return -1;
    if (b == 0) return 0; /* the bound fitted, the aligned arena does not: no combination to offer */
    r->has_plan = 1, w->has_combo = 1, r->kind = YP_REMEDY_COMBO;
    static const yp_remedy_kind kinds[KNOB_COUNT] = {YP_REMEDY_AMP, YP_REMEDY_CKPT, YP_REMEDY_FREEZE, YP_REMEDY_IMAGE,
                                                     YP_REMEDY_SMALLER};
    for (int i = 0; i < KNOB_COUNT; i++)
        if (best >> i & 1) w->combo_kinds |= 1u << kinds[i];
    if (b < c->batch) w->combo_kinds |= 1u << YP_REMEDY_ACCUMULATE;
    r->time_cost = yp_whatif_time_cost(&w->base, r->plan.time.images_per_s);
    if (b < c->batch) snprintf(r->what, sizeof r->what, "%s + batch %lld (accumulate %d)", what, (long long)b,
                               yp_accumulate(b));
    else snprintf(r->what, sizeof r->what, "%s", what);
    return 0;
}
