/* timeline_memory.c - DIR/memory.*: live bytes at every step of the training step, stacked by
 * category (timeline_common.h), with the GPU budget, the arena size, the peak step and the
 * forward/backward boundary.
 *
 * Steps are grouped into at most TL_MAX_COLUMNS columns. Group boundaries fall at the loss step,
 * the peak step and the first optimizer step, each of which is a column of its own; a column
 * draws the live set of its step with the most live bytes, so every stack is a real step's live
 * set and the tallest stack is the liveness peak. Data nodes are named "c<col>.<category>" and
 * carry yp_steps="first-last", yp_step (the step drawn) and yp_bytes; the rest start with '_'. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "timeline_common.h"
#include "yp_front.h"
#include "yp_report.h"

#define TL_MAX_COLUMNS 240

typedef struct {
    int s0, s1; /* steps, inclusive */
    int rep;    /* the step drawn: most live bytes in [s0, s1] */
} column;

static int first_optimizer_step(const yp_schedule *s) {
    for (int i = s->loss_step; i < s->n_steps; i++)
        if (s->steps[i].phase == YP_PHASE_OPTIMIZER) return i;
    return s->n_steps;
}

static int cmp_int(const void *a, const void *b) { return *(const int *)a - *(const int *)b; }

/* Splits the steps into columns (cols holds TL_MAX_COLUMNS + 8). Returns the column count. */
static int make_columns(const yp_plan *p, column *cols) {
    const yp_schedule *s = p->sched;
    int n = s->n_steps, pk = p->live.peak_step, ls = s->loss_step;
    int br[] = {0, ls, ls + 1, pk, pk + 1, first_optimizer_step(s), n}, nb = 0;
    int nbr = (int)(sizeof br / sizeof br[0]);
    qsort(br, (size_t)nbr, sizeof br[0], cmp_int);
    for (int i = 0; i < nbr; i++) /* unique breakpoints within [0, n] */
        if (br[i] >= 0 && br[i] <= n && (nb == 0 || br[i] != br[nb - 1])) br[nb++] = br[i];
    int group = 1, nc;
    for (;; group++) {
        nc = 0;
        for (int i = 0; i + 1 < nb; i++) nc += (br[i + 1] - br[i] + group - 1) / group;
        if (nc <= TL_MAX_COLUMNS) break;
    }
    nc = 0;
    for (int i = 0; i + 1 < nb; i++)
        for (int a = br[i]; a < br[i + 1]; a += group) {
            column *c = &cols[nc++];
            c->s0 = a, c->s1 = a + group - 1 < br[i + 1] - 1 ? a + group - 1 : br[i + 1] - 1, c->rep = a;
            for (int t = a; t <= c->s1; t++)
                if (p->live.live[t] > p->live.live[c->rep]) c->rep = t;
        }
    return nc;
}

static int64_t cat_bytes(const yp_plan *p, int step, tl_cat cat) {
    int64_t b = 0;
    for (int k = 0; k < YP_KIND_COUNT; k++)
        if (tl_cat_of_kind((yp_kind)k) == cat) b += p->live.by_kind[(size_t)step * YP_KIND_COUNT + k];
    return b;
}

/* The stacked columns; marks the categories that appear in present[]. */
static void draw_columns(tl_canvas *c, const tl_frame *f, const yp_plan *p, const column *cols, int nc,
                         int present[TL_CAT_COUNT]) {
    char name[48], v[48], tip[256], b[32];
    Agsym_t *steps = agattr(c->g, AGNODE, "yp_steps", ""), *rep = agattr(c->g, AGNODE, "yp_step", ""),
            *bytes = agattr(c->g, AGNODE, "yp_bytes", "");
    for (int i = 0; i < nc; i++) {
        const column *col = &cols[i];
        int64_t y = 0;
        for (int k = 0; k < TL_CAT_COUNT; k++) {
            int64_t n = cat_bytes(p, col->rep, (tl_cat)k);
            if (n <= 0) continue;
            present[k] = 1;
            snprintf(name, sizeof name, "c%d.%s", i, tl_cat_id((tl_cat)k));
            Agnode_t *nd = tl_box(c, name, tl_fx(f, col->s0), tl_fy(f, (double)y), tl_fx(f, col->s1 + 1),
                                  tl_fy(f, (double)(y + n)), tl_cat_color((tl_cat)k));
            if (!nd) return;
            y += n;
            snprintf(v, sizeof v, "%d-%d", col->s0, col->s1);
            agxset(nd, steps, v);
            snprintf(v, sizeof v, "%d", col->rep);
            agxset(nd, rep, v);
            snprintf(v, sizeof v, "%" PRId64, n);
            agxset(nd, bytes, v);
            snprintf(tip, sizeof tip, "step %d (%s, %s): %s %s", col->rep,
                     yp_phase_name(p->sched->steps[col->rep].phase), tl_step_name(p, col->rep),
                     tl_cat_id((tl_cat)k), yp_fmt_bytes(n, b, sizeof b));
            agxset(nd, c->tooltip, tip);
        }
    }
}

/* Bands under the x axis naming the phases: forward, loss, backward (with recompute), optimizer. */
static void draw_phases(tl_canvas *c, const tl_frame *f, const yp_plan *p) {
    static const char *const fill[YP_PHASE_COUNT] = {"#d9e6f2", "#f2d9d9", "#f2e6d9", "#f2e6d9", "#e0d9f2"};
    const yp_schedule *s = p->sched;
    int a = 0, nb = 0;
    char name[32], text[64];
    for (int i = 1; i <= s->n_steps; i++) {
        yp_phase pa = s->steps[a].phase == YP_PHASE_RECOMPUTE ? YP_PHASE_BACKWARD : s->steps[a].phase;
        yp_phase pi = i < s->n_steps && s->steps[i].phase == YP_PHASE_RECOMPUTE ? YP_PHASE_BACKWARD
                      : i < s->n_steps ? s->steps[i].phase : YP_PHASE_COUNT;
        if (pi == pa) continue;
        double x0 = tl_fx(f, a), x1 = tl_fx(f, i), y = f->y0 - 52;
        snprintf(name, sizeof name, "_phase%d", nb++);
        Agnode_t *n = tl_box(c, name, x0, y - 8, x1, y + 8, fill[pa]);
        if (pa == YP_PHASE_BACKWARD) snprintf(text, sizeof text, "backward + recompute (steps %d-%d)", a, i - 1);
        else snprintf(text, sizeof text, "%s (steps %d-%d)", yp_phase_name(pa), a, i - 1);
        if (n) agxset(n, c->tooltip, text);
        if (n && x1 - x0 > 7.0 * (double)strlen(text)) agxset(n, c->label, text);
        else if (n && x1 - x0 > 7.0 * (double)strlen(yp_phase_name(pa))) agxset(n, c->label, (char *)yp_phase_name(pa));
        a = i;
    }
}

/* A labelled horizontal line at bytes; above the frame only the label is drawn, at its top. */
static void hline(tl_canvas *c, const tl_frame *f, const char *id, int64_t bytes, const char *color,
                  const char *text, double label_x, char just) {
    char name[32], off[300];
    double y = tl_fy(f, (double)(bytes < f->top ? bytes : f->top));
    snprintf(name, sizeof name, "_%s", id);
    if (bytes <= f->top) tl_box(c, name, f->x0, y - 0.8, f->x0 + f->w, y + 0.8, color);
    snprintf(off, sizeof off, "%s%s", text, bytes <= f->top ? "" : " (above the chart)");
    snprintf(name, sizeof name, "_%s_label", id);
    Agnode_t *n = tl_text(c, name, label_x, y + 8, 420, off, just, 10);
    if (n) tl_set(n, "fontcolor", color);
}

static void draw_marks(tl_canvas *c, const tl_frame *f, const yp_plan *p, const column *cols, int nc) {
    char text[256], b1[32], b2[32], b3[32];
    const yp_schedule *s = p->sched;
    /* budget, arena */
    snprintf(text, sizeof text, "GPU budget %s (%s - fixed %s)", yp_fmt_bytes(p->budget_bytes, b1, sizeof b1),
             yp_fmt_bytes(p->gpu.mem_bytes, b2, sizeof b2), yp_fmt_bytes(p->gpu.fixed_bytes + p->reserve_bytes, b3,
                                                                        sizeof b3));
    hline(c, f, "budget", p->budget_bytes, "#d62728", text, f->x0 + f->w - 4, 'r');
    snprintf(text, sizeof text, "arena %s", yp_fmt_bytes(p->arena_bytes, b1, sizeof b1));
    hline(c, f, "arena", p->arena_bytes, "#555555", text, f->x0 + 4, 'l');
    /* forward/backward boundary: the loss step */
    double xl = tl_fx(f, s->loss_step + 0.5), top = f->y0 + f->h;
    tl_box(c, "_boundary", xl - 0.6, f->y0, xl + 0.6, top + 8, "#333333");
    /* labelled on the side away from the peak, whose stem rises through the same row */
    int left = p->live.peak_step >= s->loss_step;
    snprintf(text, sizeof text, left ? "forward | backward: loss at step %d" : "loss at step %d: forward | backward",
             s->loss_step);
    tl_text(c, "_boundary_label", xl + (left ? -4 : 4), top + 14, 260, text, left ? 'r' : 'l', 10);
    /* the peak column: outline, a stem up to the label */
    int pk = p->live.peak_step;
    for (int i = 0; i < nc; i++) {
        if (cols[i].s0 > pk || cols[i].s1 < pk) continue;
        double x0 = tl_fx(f, cols[i].s0), x1 = tl_fx(f, cols[i].s1 + 1), yp = tl_fy(f, (double)p->live.peak);
        tl_outline(c, "_peak_box", x0 - 1.5, f->y0, x1 + 1.5, yp + 1.5, "black", 1.2);
        tl_box(c, "_peak_stem", (x0 + x1) / 2 - 0.5, yp + 1.5, (x0 + x1) / 2 + 0.5, top + 34, "black");
        int big = 0;
        for (int k = 1; k < TL_CAT_COUNT; k++)
            if (cat_bytes(p, pk, (tl_cat)k) > cat_bytes(p, pk, (tl_cat)big)) big = k;
        snprintf(text, sizeof text, "peak %s at step %d (%s, %s): %.0f%% %s",
                 yp_fmt_bytes(p->live.peak, b1, sizeof b1), pk, yp_phase_name(s->steps[pk].phase),
                 tl_step_name(p, pk), 100.0 * (double)cat_bytes(p, pk, (tl_cat)big) / (double)p->live.peak,
                 tl_cat_label((tl_cat)big));
        int right = (x0 + x1) / 2 > f->x0 + f->w * 0.6;
        tl_text(c, "_peak_label", (x0 + x1) / 2 + (right ? -4 : 4), top + 40, 620, text, right ? 'r' : 'l', 11);
        break;
    }
}

int tl_memory_write(GVC_t *gvc, const yp_plan *p, const char *dir, const char *format, yp_err *err) {
    char cand[256], title[512], b[32], b2[32];
    yp_report_candidate_str(p->g, &p->cand, cand, sizeof cand);
    snprintf(title, sizeof title, "Live memory per step: %s\n%s: peak %s = %.0f%% of the arena budget %s", cand,
             p->gpu.desc, yp_fmt_bytes(p->live.peak, b, sizeof b),
             100.0 * (double)p->live.peak / (double)(p->budget_bytes > 0 ? p->budget_bytes : 1),
             yp_fmt_bytes(p->budget_bytes, b2, sizeof b2));
    column *cols = malloc((TL_MAX_COLUMNS + 8) * sizeof *cols);
    tl_canvas c;
    if (!cols || tl_canvas_open(&c, "memory", title)) {
        free(cols);
        return yp_err_set(err, "%s/memory.dot: out of memory", dir);
    }
    int64_t hi = p->arena_bytes > p->live.peak ? p->arena_bytes : p->live.peak;
    /* the budget sets the scale unless it is far above the peak, where it would flatten the stacks */
    int64_t top = p->budget_bytes > hi && p->budget_bytes < 3 * hi ? p->budget_bytes : hi;
    tl_frame f = {80, 90, 900, 440, p->sched->n_steps, top + top / 12};
    tl_axes(&c, &f, "step of the training step", "live bytes");
    int nc = make_columns(p, cols), present[TL_CAT_COUNT] = {0};
    draw_columns(&c, &f, p, cols, nc, present);
    draw_phases(&c, &f, p);
    draw_marks(&c, &f, p, cols, nc);
    double ly = f.y0 + f.h - 12;
    for (int k = TL_CAT_COUNT - 1; k >= 0; k--) /* legend top to bottom, in stacking order */
        if (present[k]) tl_legend_row(&c, f.x0 + f.w + 16, ly, tl_cat_id((tl_cat)k), tl_cat_color((tl_cat)k),
                                      tl_cat_label((tl_cat)k)), ly -= 16;
    int rc = c.failed ? yp_err_set(err, "%s/memory.dot: out of memory", dir)
                      : tl_emit(gvc, c.g, "nop2", dir, "memory", format, err);
    agclose(c.g);
    free(cols);
    return rc;
}
