/* whatif_hw.c - other hardware for a candidate that does not fit: the smallest cards of the GPU
 * table that hold its plan, and its batch split over 2, 4 and 8 GPUs (DDP: each GPU trains
 * batch / N and keeps its own copy of everything else). */
#include <stdlib.h>
#include <string.h>

#include "whatif_internal.h"

static int smaller_card(const void *a, const void *b) {
    const yp_whatif_card *x = a, *y = b;
    return (x->mem_bytes > y->mem_bytes) - (x->mem_bytes < y->mem_bytes);
}

/* The plan's arena does not depend on the card; its fixed cost does. A card without bf16 cannot
 * run a bf16 plan. */
static void cards(const yp_whatif_opts *o, yp_whatif *w) {
    int n = 0;
    const yp_gpu *t = yp_gpu_table(&n);
    yp_whatif_card fit[64];
    int k = 0;
    for (int i = 0; i < n && k < 64; i++) {
        if (w->base.cand.precision == YP_PREC_AMP_BF16 && t[i].bf16_tflops <= 0) continue;
        int64_t need = w->base.arena_bytes + t[i].fixed_bytes;
        if (need + o->reserve > t[i].mem_bytes || t[i].mem_bytes <= o->gpu->mem_bytes) continue;
        yp_whatif_card *c = &fit[k++];
        snprintf(c->name, sizeof c->name, "%s", t[i].name);
        snprintf(c->desc, sizeof c->desc, "%s", t[i].desc);
        c->mem_bytes = t[i].mem_bytes, c->need_bytes = need;
    }
    qsort(fit, (size_t)k, sizeof *fit, smaller_card);
    for (int i = 0; i < k && w->n_cards < YP_WHATIF_CARDS; i++) w->cards[w->n_cards++] = fit[i];
}

/* DDP's gradient buckets: about one more copy of the weight gradients on each GPU. */
static int64_t grad_bytes(const yp_plan *p) {
    int64_t b = 0;
    for (int i = 0; i < p->sched->n_tensors; i++)
        if (p->sched->tensors[i].kind == YP_KIND_GRAD) b += p->sched->tensors[i].bytes;
    return b;
}

int yp_whatif_hardware(const yp_whatif_opts *o, yp_whatif *w, yp_err *err) {
    cards(o, w);
    const yp_candidate *c = &w->base.cand;
    for (int n = 2; n <= 8 && w->n_gpus < YP_WHATIF_GPUS; n *= 2) {
        if (c->batch / n < 1) break;
        yp_remedy *r = &w->gpus[w->n_gpus];
        memset(r, 0, sizeof *r);
        yp_candidate k = *c;
        k.batch = c->batch / n;
        if (yp_plan_build(o->g, &k, o->gpu, o->reserve, 0, &r->plan, err)) return -1;
        r->g = o->g, r->has_plan = 1, r->kind = YP_REMEDY_GPUS;
        r->extra_bytes = grad_bytes(&r->plan);
        snprintf(r->what, sizeof r->what, "%d GPUs, batch %lld each", n, (long long)k.batch);
        /* n GPUs train n micro-batches at once (the all-reduce not counted) */
        r->time_cost = yp_whatif_time_cost(&w->base, (double)n * r->plan.time.images_per_s);
        w->n_gpus++;
        if (r->plan.device_bytes + r->extra_bytes <= o->gpu->mem_bytes) break; /* the fewest GPUs that fit */
    }
    return 0;
}
