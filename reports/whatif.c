/* whatif.c - the what-if report: does the pinned candidate fit, and what each remedy saves and
 * costs. */
#include "yp_report.h"

static void verdict(FILE *f, const yp_plan *p) {
    char need[32], have[32], margin[32], desc[200];
    yp_report_candidate_str(p->g, &p->cand, desc, sizeof desc);
    yp_fmt_bytes(p->device_bytes, need, sizeof need);
    yp_fmt_bytes(p->gpu.mem_bytes, have, sizeof have);
    yp_fmt_bytes(p->gpu.mem_bytes - p->device_bytes, margin, sizeof margin);
    fprintf(f, "%s\non %s (%s):\n", desc, p->gpu.desc, have);
    fprintf(f, "  %s: needs %s (%.0f%% of the card), margin %s; peak at step %d of %d (%s)\n",
            p->fits ? "FITS" : "DOES NOT FIT", need, 100.0 * (double)p->device_bytes / (double)p->gpu.mem_bytes,
            margin, p->live.peak_step, p->sched->n_steps, yp_phase_name(p->sched->steps[p->live.peak_step].phase));
    fprintf(f, "  predicted %.1f ms per step, %.1f img/s at nominal batch 64\n", p->time.micro_ms, p->time.images_per_s);
}

void yp_report_whatif(FILE *f, const yp_whatif *w) {
    verdict(f, &w->base);
    fprintf(f, "\n  %-44s %10s %10s %5s %9s %8s\n", "remedy", "needs", "saves", "fits", "img/s", "time");
    double base_ips = w->base.time.images_per_s;
    for (int i = 0; i < w->n; i++) {
        const yp_plan *p = &w->r[i].plan;
        char need[32], saves[32];
        yp_fmt_bytes(p->device_bytes, need, sizeof need);
        yp_fmt_bytes(w->base.device_bytes - p->device_bytes, saves, sizeof saves);
        double cost = base_ips > 0 ? 100.0 * (base_ips / p->time.images_per_s - 1.0) : 0;
        fprintf(f, "  %-44.44s %10s %10s %5s %9.1f %+7.0f%%\n", w->r[i].what, need, saves, p->fits ? "yes" : "no",
                p->time.images_per_s, cost);
    }
    fprintf(f, "  (needs = arena + fixed device cost; time = change in time per image at nominal batch 64)\n");
}

cJSON *yp_report_whatif_json(const yp_whatif *w) {
    cJSON *j = cJSON_CreateObject();
    cJSON_AddItemToObject(j, "plan", yp_report_plan_json(&w->base));
    cJSON *rs = cJSON_AddArrayToObject(j, "remedies");
    for (int i = 0; i < w->n; i++) {
        cJSON *r = yp_report_plan_json(&w->r[i].plan);
        cJSON_AddStringToObject(r, "remedy", w->r[i].what);
        cJSON_AddNumberToObject(r, "saves_bytes", (double)(w->base.device_bytes - w->r[i].plan.device_bytes));
        cJSON_AddItemToArray(rs, r);
    }
    return j;
}
