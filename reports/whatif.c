/* whatif.c - the what-if report: does the pinned candidate fit, what each remedy saves and costs
 * (cheapest first), the combination and the largest batch when nothing single fits, the remedies
 * that save (almost) nothing on the GPU, and other hardware. "needs" is the plan's arena plus the
 * card's fixed cost, as the table's peak; the margin (--reserve) is kept free on top of it. */
#include "yp_report.h"

static int64_t need(const yp_plan *p) { return p->device_bytes - p->reserve_bytes; }

static void verdict(FILE *f, const yp_whatif *w) {
    const yp_plan *p = &w->base;
    char needs[32], have[32], margin[32], room[32], desc[200];
    yp_report_candidate_str(p->g, &p->cand, desc, sizeof desc);
    yp_fmt_bytes(need(p), needs, sizeof needs);
    yp_fmt_bytes(p->gpu.mem_bytes, have, sizeof have);
    yp_fmt_bytes(p->reserve_bytes, margin, sizeof margin);
    yp_fmt_bytes(p->gpu.mem_bytes - p->device_bytes, room, sizeof room);
    fprintf(f, "%s, for yoloplan's executor\non %s (%s), keeping %s (%.0f %%) free (--reserve):\n", desc, p->gpu.desc,
            have, margin, 100.0 * (double)p->reserve_bytes / (double)p->gpu.mem_bytes);
    fprintf(f, "  %s: needs %s (%.0f%% of the card), %s %s; peak at step %d of %d (%s)\n",
            p->fits ? "FITS" : "DOES NOT FIT", needs, 100.0 * (double)need(p) / (double)p->gpu.mem_bytes,
            p->fits ? "room left" : "short by", room + (room[0] == '-'), p->live.peak_step, p->sched->n_steps,
            yp_phase_name(p->sched->steps[p->live.peak_step].phase));
    fprintf(f, "  predicted %.1f ms per step, %.1f img/s at nominal batch 64\n", p->time.micro_ms,
            p->time.images_per_s);
    if (w->largest_batch > 0)
        fprintf(f, "  largest batch that fits this configuration: %lld (accumulate %d)\n", (long long)w->largest_batch,
                yp_accumulate(w->largest_batch));
    else fprintf(f, "  not even batch 1 fits this configuration\n");
}

static void remedy_row(FILE *f, const yp_plan *base, const yp_remedy *r, const char *label) {
    const yp_plan *p = &r->plan;
    char needs[32], saves[32];
    yp_fmt_bytes(need(p) + r->extra_bytes, needs, sizeof needs);
    yp_fmt_bytes(base->device_bytes - p->device_bytes - r->extra_bytes, saves, sizeof saves);
    fprintf(f, "  %-44.44s %10s %10s %5s %9.1f %+7.0f%%\n", label ? label : r->what, needs, saves,
            p->device_bytes + r->extra_bytes <= p->gpu.mem_bytes ? "yes" : "no", p->time.images_per_s,
            100.0 * r->time_cost);
}

static void notes(FILE *f, const yp_whatif *w) {
    if (!w->n_notes) return;
    fprintf(f, "\n  save (almost) nothing on the GPU:\n");
    for (int i = 0; i < w->n_notes; i++) {
        const yp_remedy *r = &w->notes[i];
        char saves[32];
        if (!r->has_plan) {
            fprintf(f, "    %s: %s\n", r->what, r->why);
            continue;
        }
        int64_t d = w->base.device_bytes - r->plan.device_bytes;
        yp_fmt_bytes(d < 0 ? -d : d, saves, sizeof saves);
        fprintf(f, "    %s: %s %s: %s\n", r->what, d < 0 ? "costs" : "saves", saves, r->why);
    }
}

static void hardware(FILE *f, const yp_whatif *w) {
    if (!w->n_cards && !w->n_gpus) return;
    fprintf(f, "\n  other hardware:\n");
    if (w->n_cards) {
        fprintf(f, "    a bigger card (the smallest of the GPU table that fit):");
        for (int i = 0; i < w->n_cards; i++) {
            char mem[32];
            const yp_whatif_card *c = &w->cards[i];
            fprintf(f, "%s %s (%s, %.0f%%)", i ? "," : "", c->name, yp_fmt_bytes(c->mem_bytes, mem, sizeof mem),
                    100.0 * (double)c->need_bytes / (double)c->mem_bytes);
        }
        fprintf(f, "\n");
    } else fprintf(f, "    no card of the GPU table holds this configuration\n");
    for (int i = 0; i < w->n_gpus; i++) {
        const yp_remedy *r = &w->gpus[i];
        char needs[32], extra[32];
        yp_fmt_bytes(need(&r->plan) + r->extra_bytes, needs, sizeof needs);
        yp_fmt_bytes(r->extra_bytes, extra, sizeof extra);
        fprintf(f, "    %s: %s per GPU (with DDP's gradient buckets, %s): %s\n", r->what, needs, extra,
                r->plan.device_bytes + r->extra_bytes <= r->plan.gpu.mem_bytes ? "fits" : "does not fit");
    }
    if (w->n_gpus) fprintf(f, "    (several GPUs train with PyTorch DDP; yoloplan's executor trains on one)\n");
}

void yp_report_whatif(FILE *f, const yp_whatif *w) {
    verdict(f, w);
    fprintf(f, "\n  %-44s %10s %10s %5s %9s %8s\n", "remedy (cheapest in time first)", "needs", "saves", "fits",
            "img/s", "time");
    for (int i = 0; i < w->n; i++) remedy_row(f, &w->base, &w->r[i], NULL);
    int any = 0;
    for (int i = 0; i < w->n; i++) any |= w->r[i].plan.fits;
    if (!any && !w->base.fits) {
        if (w->has_combo) {
            fprintf(f, "  no single remedy fits; the cheapest combination that does:\n    %s\n", w->combo.what);
            remedy_row(f, &w->base, &w->combo, "  (the combination)");
        } else fprintf(f, "  no single remedy fits, and no combination of them does\n");
    }
    fprintf(f, "  (needs = arena + fixed device cost; time = change in time per image at nominal batch 64)\n");
    notes(f, w);
    hardware(f, w);
}

static cJSON *remedy_json(const yp_plan *base, const yp_remedy *r) {
    cJSON *j = r->has_plan ? yp_report_plan_json(&r->plan) : cJSON_CreateObject();
    cJSON_AddStringToObject(j, "remedy", r->what);
    if (r->has_plan) {
        cJSON_AddNumberToObject(j, "saves_bytes", (double)(base->device_bytes - r->plan.device_bytes - r->extra_bytes));
        cJSON_AddNumberToObject(j, "time_cost", r->time_cost);
    }
    if (r->why[0]) cJSON_AddStringToObject(j, "reason", r->why);
    if (r->extra_bytes) cJSON_AddNumberToObject(j, "extra_bytes", (double)r->extra_bytes);
    return j;
}

cJSON *yp_report_whatif_json(const yp_whatif *w) {
    cJSON *j = cJSON_CreateObject();
    cJSON_AddStringToObject(j, "target", "yoloplan");
    cJSON_AddItemToObject(j, "plan", yp_report_plan_json(&w->base));
    cJSON_AddNumberToObject(j, "largest_batch", (double)w->largest_batch);
    cJSON *rs = cJSON_AddArrayToObject(j, "remedies");
    for (int i = 0; i < w->n; i++) cJSON_AddItemToArray(rs, remedy_json(&w->base, &w->r[i]));
    if (w->has_combo) cJSON_AddItemToObject(j, "combination", remedy_json(&w->base, &w->combo));
    else cJSON_AddNullToObject(j, "combination");
    cJSON *ns = cJSON_AddArrayToObject(j, "notes");
    for (int i = 0; i < w->n_notes; i++) cJSON_AddItemToArray(ns, remedy_json(&w->base, &w->notes[i]));
    cJSON *cs = cJSON_AddArrayToObject(j, "bigger_cards");
    for (int i = 0; i < w->n_cards; i++) {
        cJSON *c = cJSON_CreateObject();
        cJSON_AddStringToObject(c, "name", w->cards[i].name);
        cJSON_AddNumberToObject(c, "mem_bytes", (double)w->cards[i].mem_bytes);
        cJSON_AddNumberToObject(c, "need_bytes", (double)w->cards[i].need_bytes);
        cJSON_AddItemToArray(cs, c);
    }
    cJSON *gs = cJSON_AddArrayToObject(j, "gpus");
    for (int i = 0; i < w->n_gpus; i++) cJSON_AddItemToArray(gs, remedy_json(&w->base, &w->gpus[i]));
    return j;
}
