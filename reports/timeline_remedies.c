/* timeline_remedies.c - DIR/remedies.*: the usual out-of-memory decision flow for a what-if's plan,
 * laid out by dot top to bottom: "start" (the plan and what it needs of the card), one node per
 * step users take, in the order they take them (batch, accumulation, image size, smaller model,
 * checkpointing, AMP, freezing, anchors, more GPUs, bigger card), then "fit".
 *
 * Each step shows the what-if's remedy of its kind (planner/yp_whatif.h; of several, the one that
 * fits at the lowest time cost, else the one that saves most): what it changes, what it saves and
 * its time cost for this configuration, and whether it fits alone (green) or not (blue). A step
 * that does not apply (AMP when the plan is AMP already, more GPUs when it fits) is grey, "n/a"
 * with the reason.
 *
 * The cheapest path to a fit is drawn bold red: start -> fit when the plan fits as it is; else
 * through the single step that fits at the lowest time cost; else through the steps of the
 * what-if's cheapest combination, in flow order; else through the fewest GPUs that fit; else
 * through the smallest bigger card (software first: it costs no hardware). No path: nothing fits.
 *
 * For readers of the DOT, every step node carries saves_bytes (the what-if's device bytes of the
 * plan less the remedy's), time_cost (+0.04 = 4 % slower per image), fits, na and on_path (1/0);
 * edges on the path carry on_path=1. */
#include <inttypes.h>
#include <string.h>

#include "timeline_common.h"
#include "yp_report.h"

#define PATH_COLOR "#d62728"

typedef struct {
    const char *id, *title;
    yp_remedy_kind kind; /* YP_REMEDY_KIND_COUNT: the bigger card, which is no remedy of a plan */
} flow_step;

static const flow_step flow[] = {
    {"batch", "batch", YP_REMEDY_BATCH},       {"accumulate", "accumulation", YP_REMEDY_ACCUMULATE},
    {"image", "image size", YP_REMEDY_IMAGE},  {"smaller", "smaller model", YP_REMEDY_SMALLER},
    {"ckpt", "checkpointing", YP_REMEDY_CKPT}, {"amp", "AMP", YP_REMEDY_AMP},
    {"freeze", "freezing", YP_REMEDY_FREEZE},  {"anchors", "fewer anchors", YP_REMEDY_ANCHORS},
    {"gpus", "more GPUs", YP_REMEDY_GPUS},     {"card", "bigger card", YP_REMEDY_KIND_COUNT}};
enum { N_FLOW = sizeof flow / sizeof *flow, N_SOFTWARE = 8, STEP_GPUS = 8, STEP_CARD = 9 };

typedef struct {
    const yp_remedy *r; /* the remedy drawn; NULL for the card step and when n/a */
    int64_t saves;      /* w->base.device_bytes less the remedy's device bytes (with its extra bytes) */
    int fits;
    char na[160];       /* why the step does not apply; "" when it does */
} step_info;

static int64_t total(const yp_remedy *r) { return r->plan.device_bytes + r->extra_bytes; }
static int fits(const yp_remedy *r) { return total(r) <= r->plan.gpu.mem_bytes; }

/* Whether remedy a is the better pick than b: one that fits, then the cheaper in time (the
 * larger saving on a tie); of two that do not fit, the larger saving. */
static int better(const yp_remedy *a, const yp_remedy *b) {
    if (!b) return 1;
    if (fits(a) != fits(b)) return fits(a);
    if (fits(a) && a->time_cost != b->time_cost) return a->time_cost < b->time_cost;
    return total(a) < total(b);
}

static const yp_remedy *pick(const yp_whatif *w, yp_remedy_kind k) {
    const yp_remedy *best = NULL;
    for (int i = 0; i < w->n; i++)
        if (w->r[i].kind == k && w->r[i].has_plan && better(&w->r[i], best)) best = &w->r[i];
    for (int i = 0; i < w->n_notes; i++)
        if (w->notes[i].kind == k && w->notes[i].has_plan && better(&w->notes[i], best)) best = &w->notes[i];
    return best;
}

/* Why step k does not apply, when the what-if offers no remedy of its kind. */
static void why_na(const yp_whatif *w, int k, char *buf, size_t n) {
    const yp_candidate *c = &w->base.cand;
    const char *why = "not offered for this configuration";
    char tmp[96];
    switch (flow[k].kind) {
    case YP_REMEDY_BATCH: why = "batch 1 already"; break;
    case YP_REMEDY_ACCUMULATE:
        if (w->largest_batch == 0) why = "not even batch 1 fits without other remedies";
        else if (w->largest_batch >= c->batch) why = "the batch fits as it is";
        else {
            snprintf(tmp, sizeof tmp, "the largest batch that fits is %lld, the step above",
                     (long long)w->largest_batch);
            why = tmp;
        }
        break;
    case YP_REMEDY_IMAGE: why = "the image is the smallest size already"; break;
    case YP_REMEDY_SMALLER: why = "no smaller bundled model"; break;
    case YP_REMEDY_CKPT:
        why = c->policy != YP_SAVE_YOLOPLAN ? "the pytorch saving policy has no checkpoint sets"
                                            : "every checkpointable layer is checkpointed already";
        break;
    case YP_REMEDY_AMP:
        snprintf(tmp, sizeof tmp, "the plan is %s already", yp_precision_name(c->precision));
        why = c->precision != YP_PREC_FP32 ? tmp : "fp32 only for this scratch model";
        break;
    case YP_REMEDY_FREEZE:
        why = c->freeze >= 10 ? "10 layers or more are frozen already" : "the model is too shallow";
        break;
    case YP_REMEDY_ANCHORS: why = "one anchor per level already, or no copy with fewer"; break;
    case YP_REMEDY_GPUS: why = w->base.fits ? "not needed: the plan fits" : "batch 1 cannot be split"; break;
    default:
        why = w->base.fits ? "not needed: the plan fits" : "no card of the GPU table holds it";
        break;
    }
    snprintf(buf, n, "%s", why);
}

static void steps_of(const yp_whatif *w, step_info *s) {
    memset(s, 0, N_FLOW * sizeof *s);
    for (int k = 0; k < N_FLOW; k++) {
        const yp_remedy *r = NULL;
        if (flow[k].kind == YP_REMEDY_GPUS) r = w->n_gpus ? &w->gpus[w->n_gpus - 1] : NULL; /* the fewest that fit */
        else if (flow[k].kind == YP_REMEDY_AMP && w->base.cand.precision != YP_PREC_FP32) r = NULL; /* AMP already */
        else if (flow[k].kind != YP_REMEDY_KIND_COUNT) r = pick(w, flow[k].kind);
        if (k == STEP_CARD && w->n_cards) s[k].fits = 1;
        else if (!r) why_na(w, k, s[k].na, sizeof s[k].na);
        if (!r) continue;
        s[k].r = r, s[k].fits = fits(r), s[k].saves = w->base.device_bytes - total(r);
    }
}

typedef enum { PATH_NONE, PATH_AS_IS, PATH_SINGLE, PATH_COMBO, PATH_GPUS, PATH_CARD } path_kind;

/* The steps on the cheapest path to a fit (on[k] = 1) and how it reaches the fit. */
static path_kind cheapest_path(const yp_whatif *w, const step_info *s, int *on) {
    memset(on, 0, N_FLOW * sizeof *on);
    if (w->base.fits) return PATH_AS_IS;
    int best = -1;
    for (int k = 0; k < N_SOFTWARE; k++)
        if (s[k].r && s[k].fits && (best < 0 || better(s[k].r, s[best].r))) best = k;
    if (best >= 0) return on[best] = 1, PATH_SINGLE;
    if (w->has_combo) {
        for (int k = 0; k < N_SOFTWARE; k++) on[k] = (int)(w->combo_kinds >> flow[k].kind & 1);
        return PATH_COMBO;
    }
    if (s[STEP_GPUS].r && s[STEP_GPUS].fits) return on[STEP_GPUS] = 1, PATH_GPUS;
    if (w->n_cards) return on[STEP_CARD] = 1, PATH_CARD;
    return PATH_NONE;
}

static void set_i64(void *o, const char *k, int64_t v) {
    char b[32];
    snprintf(b, sizeof b, "%" PRId64, v);
    tl_set(o, k, b);
}

/* "saves 1.20 GiB, time +4 %" (or "costs ..."). */
static void saving_str(int64_t saves, double time_cost, char *buf, size_t n) {
    char b[32];
    yp_fmt_bytes(saves < 0 ? -saves : saves, b, sizeof b);
    double pct = 100.0 * time_cost;
    snprintf(buf, n, "%s %s, time %+.0f %%", saves < 0 ? "costs" : "saves", b, pct > -0.5 && pct < 0.5 ? 0.0 : pct);
}

static void path_style(void *o) {
    tl_set(o, "color", PATH_COLOR);
    tl_set(o, "penwidth", "3");
    tl_set(o, "on_path", "1");
}

static Agnode_t *step_node(Agraph_t *g, const yp_whatif *w, int k, const step_info *s, int on) {
    Agnode_t *n = agnode(g, (char *)flow[k].id, 1);
    if (!n) return NULL;
    char label[600], sv[96], need[32], b[32];
    if (s->na[0]) {
        snprintf(label, sizeof label, "%d. %s\nn/a: %s", k + 1, flow[k].title, s->na);
        tl_set(n, "fillcolor", "#eeeeee");
        tl_set(n, "fontcolor", "#999999");
        tl_set(n, "style", "rounded,filled,dashed");
    } else if (k == STEP_CARD) {
        size_t at = (size_t)snprintf(label, sizeof label, "%d. %s", k + 1, flow[k].title);
        for (int i = 0; i < w->n_cards && at < sizeof label; i++)
            at += (size_t)snprintf(label + at, sizeof label - at, "\n%s (%s): needs %.0f %%", w->cards[i].name,
                                   yp_fmt_bytes(w->cards[i].mem_bytes, b, sizeof b),
                                   100.0 * (double)w->cards[i].need_bytes / (double)w->cards[i].mem_bytes);
        set_i64(n, "need_bytes", w->n_cards ? w->cards[0].need_bytes : 0);
    } else {
        saving_str(s->saves, s->r->time_cost, sv, sizeof sv);
        yp_fmt_bytes(total(s->r) - s->r->plan.reserve_bytes, need, sizeof need);
        snprintf(label, sizeof label, "%d. %s\n%s\n%s\nneeds %s: %s", k + 1, flow[k].title, s->r->what, sv, need,
                 s->fits ? "fits" : "does not fit");
        set_i64(n, "saves_bytes", s->saves);
        snprintf(b, sizeof b, "%.6f", s->r->time_cost);
        tl_set(n, "time_cost", b);
    }
    if (!s->na[0]) tl_set(n, "fillcolor", s->fits ? "#d9f2d9" : "#dbe9f6");
    tl_set(n, "label", label);
    tl_set(n, "fits", s->fits ? "1" : "0");
    tl_set(n, "na", s->na[0] ? "1" : "0");
    tl_set(n, "on_path", "0");
    if (on) path_style(n);
    return n;
}

static const char legend_html[] =
    "<TABLE BORDER=\"0\" CELLBORDER=\"1\" CELLSPACING=\"0\" CELLPADDING=\"5\">"
    "<TR><TD BGCOLOR=\"#d9f2d9\" ALIGN=\"LEFT\">fits alone on this card</TD></TR>"
    "<TR><TD BGCOLOR=\"#dbe9f6\" ALIGN=\"LEFT\">does not fit alone</TD></TR>"
    "<TR><TD BGCOLOR=\"#eeeeee\" ALIGN=\"LEFT\"><FONT COLOR=\"#999999\">n/a: does not apply here</FONT></TD></TR>"
    "<TR><TD ALIGN=\"LEFT\"><FONT COLOR=\"" PATH_COLOR "\"><B>bold red</B></FONT>: the cheapest path to a fit "
    "(one remedy, else a combination, else GPUs, else a card)</TD></TR>"
    "<TR><TD ALIGN=\"LEFT\">saves = device memory less than the plan; time = change per image</TD></TR>"
    "</TABLE>";

/* The label of the edge into "fit". */
static void fit_edge_label(const yp_whatif *w, const step_info *s, path_kind how, char *buf, size_t n) {
    char sv[96];
    buf[0] = 0;
    if (how == PATH_AS_IS) snprintf(buf, n, "fits as it is");
    else if (how == PATH_CARD) snprintf(buf, n, "on %s", w->cards[0].desc);
    else if (how == PATH_GPUS) snprintf(buf, n, "%s", s[STEP_GPUS].r->what);
    else if (how == PATH_COMBO) {
        saving_str(w->base.device_bytes - total(&w->combo), w->combo.time_cost, sv, sizeof sv);
        snprintf(buf, n, "together: %s\n%s", w->combo.what, sv);
    } else snprintf(buf, n, "the cheapest that fits alone");
}

static int build(Agraph_t *g, const yp_whatif *w) {
    step_info s[N_FLOW];
    int on[N_FLOW];
    steps_of(w, s);
    path_kind how = cheapest_path(w, s, on);
    const yp_plan *p = &w->base;
    char label[600], desc[200], needs[32], have[32], room[32];
    yp_report_candidate_str(p->g, &p->cand, desc, sizeof desc);
    yp_fmt_bytes(p->device_bytes - p->reserve_bytes, needs, sizeof needs);
    yp_fmt_bytes(p->gpu.mem_bytes, have, sizeof have);
    yp_fmt_bytes(p->gpu.mem_bytes - p->device_bytes, room, sizeof room);
    Agnode_t *start = agnode(g, "start", 1), *fit = agnode(g, "fit", 1), *lg = agnode(g, "legend", 1);
    if (!start || !fit || !lg) return -1;
    snprintf(label, sizeof label, "%s\nneeds %s of %s\n%s: %s %s", desc, needs, have,
             p->fits ? "FITS" : "OUT OF MEMORY", p->fits ? "room left" : "short by", room + (room[0] == '-'));
    tl_set(start, "label", label);
    tl_set(start, "fillcolor", p->fits ? "#d9f2d9" : "#f8d0d0");
    set_i64(start, "need_bytes", p->device_bytes - p->reserve_bytes);
    tl_set(start, "fits", p->fits ? "1" : "0");
    tl_set(start, "on_path", "0");
    snprintf(label, sizeof label, how == PATH_NONE ? "no remedy here reaches a fit" : "fits on %s",
             how == PATH_CARD ? w->cards[0].desc : p->gpu.desc);
    tl_set(fit, "label", label);
    tl_set(fit, "shape", "doubleoctagon");
    tl_set(fit, "fillcolor", how == PATH_NONE ? "#eeeeee" : "#d9f2d9");
    tl_set(fit, "on_path", "0");
    if (how != PATH_NONE) path_style(start), path_style(fit);
    Agnode_t *prev = start, *nodes[N_FLOW];
    for (int k = 0; k < N_FLOW; k++) {
        if (!(nodes[k] = step_node(g, w, k, &s[k], on[k]))) return -1;
        Agedge_t *e = agedge(g, prev, nodes[k], NULL, 1);
        if (!e) return -1;
        tl_set(e, "color", "#999999");
        prev = nodes[k];
    }
    Agedge_t *last = agedge(g, prev, fit, NULL, 1); /* keeps "fit" at the bottom; drawn when on the path */
    if (!last) return -1;
    tl_set(last, "style", "invis");
    /* the path: start, the steps on it in flow order, fit; an edge that skips steps is drawn anew */
    prev = how == PATH_NONE ? NULL : start;
    for (int k = 0; k <= N_FLOW && prev; k++) {
        if (k < N_FLOW && !on[k]) continue;
        Agnode_t *to = k < N_FLOW ? nodes[k] : fit;
        Agedge_t *e = agedge(g, prev, to, NULL, 0);
        int chain = e != NULL;
        if (!e && !(e = agedge(g, prev, to, NULL, 1))) return -1;
        if (!chain) tl_set(e, "constraint", "false");
        tl_set(e, "style", "bold");
        path_style(e);
        if (k == N_FLOW) {
            fit_edge_label(w, s, how, label, sizeof label);
            tl_set(e, "label", label);
            tl_set(e, "fontcolor", PATH_COLOR);
        }
        prev = to;
    }
    char *html = agstrdup_html(g, (char *)legend_html);
    tl_set(lg, "label", html);
    agstrfree(g, html);
    tl_set(lg, "shape", "plaintext");
    tl_set(lg, "style", "");
    return 0;
}

int tl_remedies_write(GVC_t *gvc, const yp_whatif *w, const char *dir, const char *format, yp_err *err) {
    const yp_plan *p = &w->base;
    char desc[200], title[400];
    yp_report_candidate_str(p->g, &p->cand, desc, sizeof desc);
    snprintf(title, sizeof title, "Out of memory? The usual remedies, for %s on %s (yoloplan's executor)", desc,
             p->gpu.desc);
    Agraph_t *g = agopen("remedies", Agdirected, NULL);
    if (!g) return yp_err_set(err, "%s/remedies.dot: out of memory", dir);
    tl_flow_style(g, title, "0.4", "0.35");
    agattr(g, AGEDGE, "fontname", "Helvetica");
    agattr(g, AGEDGE, "fontsize", "10");
    int rc = build(g, w) ? yp_err_set(err, "%s/remedies.dot: out of memory", dir)
                         : tl_emit(gvc, g, "dot", dir, "remedies", format, err);
    agclose(g);
    return rc;
}
