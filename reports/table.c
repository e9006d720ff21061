/* table.c - the plan table in text and JSON. */
#include <inttypes.h>
#include <math.h>
#include <string.h>

#include "yp_front.h"
#include "yp_plan_io.h"
#include "yp_report.h"

const char *yp_fmt_bytes(int64_t bytes, char *buf, size_t n) {
    const char *sign = bytes < 0 ? "-" : "";
    double b = fabs((double)bytes);
    if (b >= 1024.0 * 1024 * 1024) snprintf(buf, n, "%s%.2f GiB", sign, b / (1024.0 * 1024 * 1024));
    else if (b >= 1024.0 * 1024) snprintf(buf, n, "%s%.1f MiB", sign, b / (1024.0 * 1024));
    else if (b >= 1024.0) snprintf(buf, n, "%s%.1f KiB", sign, b / 1024.0);
    else snprintf(buf, n, "%s%.0f B", sign, b);
    return buf;
}

static double gib(int64_t b) { return (double)b / (1024.0 * 1024 * 1024); }

void yp_report_candidate_str(const yp_graph *g, const yp_candidate *c, char *buf, size_t n) {
    char ck[160], img[32];
    yp_front_layers_str(c->ckpt_layers, ck, sizeof ck);
    if (c->img_w == c->img_h) snprintf(img, sizeof img, "%" PRId64, c->img_w);
    else snprintf(img, sizeof img, "%" PRId64 "x%" PRId64, c->img_w, c->img_h);
    snprintf(buf, n, "%s img %s batch %" PRId64 " %s ckpt %s mosaic %s%s", g->name, img, c->batch,
             yp_precision_name(c->precision), ck, c->mosaic ? "on" : "off", c->multi_scale ? " multi-scale" : "");
}

void yp_report_table_also(FILE *f, const yp_plan *plans, const char (*also)[YP_REPORT_ALSO_MAX], int n, int chosen) {
    int any = 0, same = n > 0 && also && also[0][0];
    for (int i = 0; also && i < n; i++) any |= also[i][0] != 0, same &= !strcmp(also[i], also[0]);
    if (same) any = 0; /* every row has the same alternatives: one footnote instead of a column */
    int mw = 8; /* the model column: as wide as the longest name (yolov5s-transformer) */
    for (int i = 0; i < n; i++) mw = (int)strlen(plans[i].g->name) > mw ? (int)strlen(plans[i].g->name) : mw;
    fprintf(f, "    %-*s %9s %5s %3s %-8s %-18s %-3s | %8s %5s | %7s %7s %7s %7s %7s | %8s %7s%s\n", mw, "model", "img",
            "batch", "acc", "precision", "checkpoint", "mos", "peak GiB", "%GPU", "weights", "grads", "optim", "activ",
            "wspace", "step ms", "img/s", any ? " | also (the same plan)" : "");
    for (int i = 0; i < n; i++) {
        const yp_plan *p = &plans[i];
        const yp_candidate *c = &p->cand;
        yp_plan_groups g = yp_plan_groups_at_peak(p);
        char ck[160], img[32];
        yp_front_layers_str(c->ckpt_layers, ck, sizeof ck);
        if (strlen(ck) > 18) snprintf(ck + 15, sizeof ck - 15, "...");
        if (c->img_w == c->img_h) snprintf(img, sizeof img, "%" PRId64, c->img_w);
        else snprintf(img, sizeof img, "%" PRId64 "x%" PRId64, c->img_w, c->img_h);
        int64_t peak = p->arena_bytes + p->gpu.fixed_bytes; /* %GPU counts the same bytes: the margin is not used */
        fprintf(f,
                "%c%-2d %-*s %9s %5" PRId64
                " %3d %-8s %-18s %-3s | %8.2f %4.0f%% | %7.2f %7.2f %7.2f %7.2f %7.2f | %8.1f %7.1f",
                i == chosen ? '*' : ' ', i + 1, mw, p->g->name, img, c->batch, p->time.accumulate,
                yp_precision_name(c->precision), ck, c->mosaic ? "on" : "off", gib(peak),
                100.0 * (double)peak / (double)p->gpu.mem_bytes, gib(g.weights + g.ema + g.lowp), gib(g.grads),
                gib(g.optimizer), gib(g.activations), gib(g.workspace), p->time.micro_ms, p->time.images_per_s);
        if (any) fprintf(f, " | %s", also[i][0] ? also[i] : "-");
        fprintf(f, "\n");
    }
    fprintf(f,
            "(peak = arena + fixed device cost, %%GPU = peak / the card; weights include the EMA copy and AMP copies; "
            "memory columns in GiB at the peak step; img/s at nominal batch 64)\n");
    if (same) fprintf(f, "(every row is also the same plan, byte for byte and as fast, with %s)\n", also[0]);
    for (int i = 0; i < n; i++) { /* once per model whose yaml left its anchors to AutoAnchor */
        int first = plans[i].g->anchors_auto;
        for (int j = 0; j < i && first; j++) first = plans[j].g != plans[i].g;
        if (first)
            fprintf(f, "(%s: its yaml gives `anchors: %d`, a count; training fits %d anchors per level to the labels "
                       "(AutoAnchor's k-means), and the plan needs only their count)\n", plans[i].g->name,
                    plans[i].g->na, plans[i].g->na);
    }
}

void yp_report_table(FILE *f, const yp_plan *plans, int n, int chosen) {
    yp_report_table_also(f, plans, NULL, n, chosen);
}

void yp_report_table_head(FILE *f, const yp_table_head *h) {
    char mem[32], fixed[32], margin[32], budget[32];
    yp_fmt_bytes(h->gpu->mem_bytes, mem, sizeof mem);
    yp_fmt_bytes(h->gpu->fixed_bytes, fixed, sizeof fixed);
    yp_fmt_bytes(h->reserve, margin, sizeof margin);
    yp_fmt_bytes(h->gpu->mem_bytes - h->gpu->fixed_bytes - h->reserve, budget, sizeof budget);
    fprintf(f, "for yoloplan's executor on %s: %s for the arena = %s - %s fixed cost - %s margin", h->gpu->desc, budget,
            mem, fixed, margin);
    if (h->margin_pct > 0) fprintf(f, " (%d %% kept free by default; --reserve 0 turns it off)", h->margin_pct);
    else fprintf(f, " (--reserve)");
    fprintf(f, "\n%lld of %lld configurations fit, %d distinct plans", (long long)h->n_configs_fit,
            (long long)h->n_configs, h->n_distinct);
    if (h->pinned_batch) fprintf(f, " at batch %lld", (long long)h->pinned_batch);
    else fprintf(f, " (batch up to %lld: --max-batch)", (long long)h->max_batch);
    if (h->per_model) fprintf(f, "; per model its %s by predicted images/s", h->per_model == 1 ? "best" : "best rows");
    else fprintf(f, "; the best %d by predicted images/s", h->n_shown);
    fprintf(f, " (* = the chosen plan; --row K picks another, --top K or --all shows more)\n");
}

static void add_i64(cJSON *o, const char *k, int64_t v) { cJSON_AddNumberToObject(o, k, (double)v); }

/* The candidate (planner's form) plus the accumulation its batch implies. */
static cJSON *candidate_json(const yp_plan *p) {
    cJSON *j = yp_candidate_json(p->g, &p->cand);
    cJSON_AddNumberToObject(j, "accumulate", p->time.accumulate);
    return j;
}

cJSON *yp_report_plan_json(const yp_plan *p) {
    cJSON *j = cJSON_CreateObject();
    cJSON_AddItemToObject(j, "candidate", candidate_json(p));
    cJSON_AddBoolToObject(j, "fits", p->fits);
    add_i64(j, "peak_bytes", p->arena_bytes + p->gpu.fixed_bytes + p->reserve_bytes);
    add_i64(j, "used_bytes", p->arena_bytes + p->gpu.fixed_bytes);
    cJSON_AddNumberToObject(j, "used_fraction",
                            (double)(p->arena_bytes + p->gpu.fixed_bytes) / (double)p->gpu.mem_bytes);
    add_i64(j, "arena_bytes", p->arena_bytes);
    add_i64(j, "train_arena_bytes", p->arena.size);
    add_i64(j, "val_arena_bytes", p->val_bytes);
    add_i64(j, "lower_bound_bytes", p->live.peak);
    add_i64(j, "saved_bytes", p->saved_bytes);
    add_i64(j, "fixed_bytes", p->gpu.fixed_bytes);
    add_i64(j, "reserve_bytes", p->reserve_bytes);
    add_i64(j, "gpu_bytes", p->gpu.mem_bytes);
    cJSON_AddNumberToObject(j, "gpu_fraction", (double)p->device_bytes / (double)p->gpu.mem_bytes);
    cJSON_AddNumberToObject(j, "peak_step", p->live.peak_step);
    yp_plan_groups g = yp_plan_groups_at_peak(p);
    cJSON *m = cJSON_AddObjectToObject(j, "at_peak");
    add_i64(m, "weights", g.weights), add_i64(m, "ema", g.ema), add_i64(m, "lowp_weights", g.lowp);
    add_i64(m, "grads", g.grads), add_i64(m, "optimizer", g.optimizer);
    add_i64(m, "activations", g.activations), add_i64(m, "workspace", g.workspace);
    cJSON *k = cJSON_AddObjectToObject(j, "at_peak_by_kind");
    for (int i = 0; i < YP_KIND_COUNT; i++) add_i64(k, yp_kind_name((yp_kind)i), p->live.at_peak[i]);
    cJSON *t = cJSON_AddObjectToObject(j, "time");
    cJSON_AddNumberToObject(t, "forward_ms", p->time.forward_ms);
    cJSON_AddNumberToObject(t, "loss_ms", p->time.loss_ms);
    cJSON_AddNumberToObject(t, "recompute_ms", p->time.recompute_ms);
    cJSON_AddNumberToObject(t, "backward_ms", p->time.backward_ms);
    cJSON_AddNumberToObject(t, "optimizer_ms", p->time.optimizer_ms);
    cJSON_AddNumberToObject(t, "step_ms", p->time.micro_ms);
    cJSON_AddNumberToObject(t, "update_ms", p->time.update_ms);
    cJSON_AddNumberToObject(t, "images_per_s", p->time.images_per_s);
    cJSON *h = cJSON_AddObjectToObject(j, "host");
    add_i64(h, "loader_workers", p->host.loader_workers);
    add_i64(h, "mosaic_canvases", p->host.mosaic_canvases), add_i64(h, "workspaces", p->host.workspaces);
    add_i64(h, "decoded_images", p->host.decoded_images), add_i64(h, "prefetch", p->host.prefetch);
    add_i64(h, "ring_labels", p->host.ring_labels), add_i64(h, "orders", p->host.orders);
    add_i64(h, "pinned_batch", p->host.pinned_batch);
    add_i64(h, "image_cache", p->host.image_cache), add_i64(h, "total", p->host.total);
    return j;
}

cJSON *yp_report_gpu_json(const yp_gpu *gpu, int64_t reserve) {
    cJSON *j = yp_gpu_json(gpu);
    add_i64(j, "reserve_bytes", reserve);
    add_i64(j, "budget_bytes", gpu->mem_bytes - gpu->fixed_bytes - reserve);
    return j;
}
