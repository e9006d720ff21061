/* plan_card.c - `--load-plan F --gpu G`: "does this saved plan fit that card?" The saved plan is
 * verified as it is (cmd_plan.c), then its candidate is planned again on G: the arena and the
 * validation pass do not depend on the card; the card's fixed cost, the margin (the table's: 5 %
 * of G unless --reserve) and the speed do. A bf16 plan does not run on a card without bf16. */
#include <string.h>

#include "plan_card.h"
#include "yp_report.h"

int plan_card_build(const plan_args *a, const yp_plan *saved, plan_card *out, yp_err *err) {
    memset(out, 0, sizeof *out);
    if (yp_plan_build(saved->g, &saved->cand, &a->gpu, a->reserve, 0, &out->plan, err)) return -1;
    if (out->plan.arena_bytes != saved->arena_bytes) {
        yp_plan_free(&out->plan);
        return yp_err_set(err, "%s: planned on %s its arena takes %lld bytes, not the saved %lld", a->load_plan,
                          a->gpu.desc, (long long)out->plan.arena_bytes, (long long)saved->arena_bytes);
    }
    const yp_plan *p = &out->plan;
    char room[32];
    out->fits = p->fits;
    if (saved->cand.precision == YP_PREC_AMP_BF16 && a->gpu.bf16_tflops <= 0)
        out->fits = 0, snprintf(out->why, sizeof out->why, "%s has no bf16 support: re-plan with --precision amp-fp16",
                                a->gpu.desc);
    else if (!p->fits)
        snprintf(out->why, sizeof out->why, "short by %s", yp_fmt_bytes(p->device_bytes - p->gpu.mem_bytes, room,
                                                                       sizeof room));
    return 0;
}

static int64_t need(const yp_plan *p) { return p->arena_bytes + p->gpu.fixed_bytes; }

void plan_card_print(FILE *f, const plan_card *c, const yp_plan *saved, int margin_pct) {
    const yp_plan *p = &c->plan;
    char needs[32], have[32], margin[32], room[32];
    yp_fmt_bytes(need(p), needs, sizeof needs);
    yp_fmt_bytes(p->gpu.mem_bytes, have, sizeof have);
    yp_fmt_bytes(p->reserve_bytes, margin, sizeof margin);
    yp_fmt_bytes(p->gpu.mem_bytes - p->device_bytes, room, sizeof room);
    fprintf(f, "saved for %s; on %s (%s), keeping %s (%.0f %%) free", saved->gpu.desc, p->gpu.desc, have, margin,
            100.0 * (double)p->reserve_bytes / (double)p->gpu.mem_bytes);
    fprintf(f, margin_pct > 0 ? " by default (--reserve 0 turns it off)" : " (--reserve)");
    fprintf(f, ":\n  %s: needs %s (%.0f%% of the card), ", c->fits ? "FITS" : "DOES NOT FIT", needs,
            100.0 * (double)need(p) / (double)p->gpu.mem_bytes);
    if (c->fits || p->fits) fprintf(f, "room left %s", room);
    else fprintf(f, "short by %s", room + (room[0] == '-'));
    if (c->why[0] && p->fits) fprintf(f, "; but %s", c->why);
    fprintf(f, "\n  predicted %.1f ms per step, %.1f img/s at nominal batch 64 on this card\n", p->time.micro_ms,
            p->time.images_per_s);
}

cJSON *plan_card_json(const plan_card *c, const yp_plan *saved) {
    const yp_plan *p = &c->plan;
    cJSON *j = yp_report_plan_json(p);
    cJSON_ReplaceItemInObject(j, "fits", cJSON_CreateBool(c->fits));
    cJSON_AddItemToObject(j, "gpu", yp_report_gpu_json(&p->gpu, p->reserve_bytes));
    cJSON_AddNumberToObject(j, "room_bytes", (double)(p->gpu.mem_bytes - p->device_bytes));
    if (c->why[0]) cJSON_AddStringToObject(j, "reason", c->why);
    cJSON_AddItemToObject(j, "saved_gpu", yp_report_gpu_json(&saved->gpu, saved->reserve_bytes));
    return j;
}
