/* timeline_memory.c - DIR/memory.*: the device memory of one training iteration and of the
 * validation pass that follows it, step by step: the fixed device cost (CUDA context and
 * libraries) at the bottom, the live bytes of each step stacked on it by category
 * (timeline_common.h), the card's memory, the budget when --reserve keeps some free, the arena
 * (what the executor allocates, plus the fixed cost: the table's "peak GiB"), the peak step and
 * the forward/backward boundary. The title's figures are the table's.
 *
 * Training steps are grouped into at most TL_MAX_COLUMNS columns. Group boundaries fall at the
 * loss step, the peak step and the first optimizer step, each of which is a column of its own; a
 * column draws the live set of its step with the most live bytes, so every stack is a real step's
 * live set and the tallest stack is the liveness peak. Data nodes are named "c<col>.<category>"
 * and carry yp_steps="first-last", yp_step (the step drawn) and yp_bytes. The validation pass
 * (the plan's evaluation schedule, at 2x batch) follows after a gap in at most TL_MAX_VAL_COLUMNS
 * columns "v<col>.<category>": its own transient tensors by category, on top of training's
 * whole-step tensors, which stay allocated (validation reads the EMA copies in place). The rest
 * of the nodes start with '_'. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "timeline_common.h"
#include "yp_front.h"
#include "yp_report.h"

#define TL_MAX_COLUMNS 240
#define TL_MAX_VAL_COLUMNS 60
#define TL_FIXED_COLOR "#c8c8c8"

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

/* What the picture stacks besides training's live sets: the fixed cost under everything, and for
 * validation training's whole-step bytes (by category) under the evaluation pass's own. */
typedef struct {
    int64_t fixed;                       /* the card's fixed device cost: the y of "0 live bytes" */
    int64_t whole[TL_CAT_COUNT];         /* training's whole-step tensors, by category */
    int64_t alias[YP_KIND_COUNT];        /* eval tensors that are training tensors (its parameters) */
    int n_train, gap, n_val;             /* x: training steps, the gap, validation steps */
} mem_view;

static void view_init(mem_view *v, const yp_plan *p) {
    memset(v, 0, sizeof *v);
    v->fixed = p->gpu.fixed_bytes;
    const yp_schedule *s = p->sched;
    for (int t = 0; t < s->n_tensors; t++)
        if (p->arena.offsets[t] < p->arena.persistent)
            v->whole[tl_cat_of_kind(s->tensors[t].kind)] += yp_align_up(s->tensors[t].bytes, p->arena.align);
    const yp_schedule *e = p->val.sched;
    v->n_train = s->n_steps;
    v->n_val = e ? e->n_steps : 0;
    v->gap = v->n_val ? (v->n_train / 40 > 4 ? v->n_train / 40 : 4) : 0;
    for (int t = 0; e && t < e->n_tensors; t++)
        if (p->val.alias[t] >= 0) v->alias[e->tensors[t].kind] += yp_align_up(e->tensors[t].bytes, p->val.live.align);
}

/* The evaluation pass's own bytes of category cat at its step (its parameters are training's). */
static int64_t val_cat_bytes(const yp_plan *p, const mem_view *v, int step, tl_cat cat) {
    int64_t b = 0;
    for (int k = 0; k < YP_KIND_COUNT; k++) {
        if (tl_cat_of_kind((yp_kind)k) != cat) continue;
        int64_t n = p->val.live.by_kind[(size_t)step * YP_KIND_COUNT + k] - v->alias[k];
        b += n > 0 ? n : 0;
    }
    return b;
}

static int64_t val_live(const yp_plan *p, const mem_view *v, int step) {
    int64_t b = 0;
    for (int k = 0; k < TL_CAT_COUNT; k++) b += v->whole[k] + val_cat_bytes(p, v, step, (tl_cat)k);
    return b;
}

/* The validation columns (cols holds TL_MAX_VAL_COLUMNS): equal groups of eval steps, each drawn
 * at its step with the most bytes. Returns the count. */
static int make_val_columns(const yp_plan *p, const mem_view *v, column *cols) {
    int n = v->n_val, group = (n + TL_MAX_VAL_COLUMNS - 1) / TL_MAX_VAL_COLUMNS, nc = 0;
    for (int a = 0; a < n; a += group) {
        column *c = &cols[nc++];
        c->s0 = a, c->s1 = a + group - 1 < n - 1 ? a + group - 1 : n - 1, c->rep = a;
        for (int t = a; t <= c->s1; t++)
            if (val_live(p, v, t) > val_live(p, v, c->rep)) c->rep = t;
    }
    return nc;
}

/* One stacked column's boxes from y = base, categories bottom to top; x in the frame's units. */
typedef struct {
    const char *prefix; /* "c" or "v" */
    int index;
    double x0, x1;
    const column *col;
    const char *pass;   /* the tooltip's "step N (...)" context */
} stack_at;

static void draw_stack(tl_canvas *c, const tl_frame *f, const stack_at *at, const int64_t bytes[TL_CAT_COUNT],
                       int64_t base, int present[TL_CAT_COUNT]) {
    char name[48], v[48], tip[256], b[32];
    Agsym_t *steps = agattr(c->g, AGNODE, "yp_steps", ""), *rep = agattr(c->g, AGNODE, "yp_step", ""),
            *yb = agattr(c->g, AGNODE, "yp_bytes", "");
    int64_t y = base;
    for (int k = 0; k < TL_CAT_COUNT; k++) {
        int64_t n = bytes[k];
        if (n <= 0) continue;
        present[k] = 1;
        snprintf(name, sizeof name, "%s%d.%s", at->prefix, at->index, tl_cat_id((tl_cat)k));
        Agnode_t *nd = tl_box(c, name, tl_fx(f, at->x0), tl_fy(f, (double)y), tl_fx(f, at->x1),
                              tl_fy(f, (double)(y + n)), tl_cat_color((tl_cat)k));
        if (!nd) return;
        y += n;
        snprintf(v, sizeof v, "%d-%d", at->col->s0, at->col->s1);
        agxset(nd, steps, v);
        snprintf(v, sizeof v, "%d", at->col->rep);
        agxset(nd, rep, v);
        snprintf(v, sizeof v, "%" PRId64, n);
        agxset(nd, yb, v);
        snprintf(tip, sizeof tip, "%s: %s %s", at->pass, tl_cat_id((tl_cat)k), yp_fmt_bytes(n, b, sizeof b));
        agxset(nd, c->tooltip, tip);
    }
}

/* The stacked columns; marks the categories that appear in present[]. */
static void draw_columns(tl_canvas *c, const tl_frame *f, const yp_plan *p, const mem_view *mv, const column *cols,
                         int nc, int present[TL_CAT_COUNT]) {
    char pass[160];
    for (int i = 0; i < nc; i++) {
        const column *col = &cols[i];
        int64_t bytes[TL_CAT_COUNT];
        for (int k = 0; k < TL_CAT_COUNT; k++) bytes[k] = cat_bytes(p, col->rep, (tl_cat)k);
        snprintf(pass, sizeof pass, "step %d (%s, %s)", col->rep, yp_phase_name(p->sched->steps[col->rep].phase),
                 tl_step_name(p, col->rep));
        stack_at at = {"c", i, col->s0, col->s1 + 1, col, pass};
        draw_stack(c, f, &at, bytes, mv->fixed, present);
    }
}

static void draw_val_columns(tl_canvas *c, const tl_frame *f, const yp_plan *p, const mem_view *mv,
                             const column *cols, int nc, int present[TL_CAT_COUNT]) {
    char pass[160];
    double x0 = mv->n_train + mv->gap;
    for (int i = 0; i < nc; i++) {
        const column *col = &cols[i];
        int64_t bytes[TL_CAT_COUNT];
        for (int k = 0; k < TL_CAT_COUNT; k++) bytes[k] = mv->whole[k] + val_cat_bytes(p, mv, col->rep, (tl_cat)k);
        snprintf(pass, sizeof pass, "validation step %d", col->rep);
        stack_at at = {"v", i, x0 + col->s0, x0 + col->s1 + 1, col, pass};
        draw_stack(c, f, &at, bytes, mv->fixed, present);
    }
}

/* Bands under the x axis naming the phases: forward, loss, backward (with recompute), optimizer. */
static void draw_phases(tl_canvas *c, const tl_frame *f, const yp_plan *p, const mem_view *mv) {
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
    if (mv->n_val > 0) {
        const yp_sched_opts *vo = &p->val.sched->opts;
        double x0 = tl_fx(f, mv->n_train + mv->gap), x1 = tl_fx(f, mv->n_train + mv->gap + mv->n_val),
               y = f->y0 - 52;
        Agnode_t *n = tl_box(c, "_phase_val", x0, y - 8, x1, y + 8, "#dcefdc");
        snprintf(text, sizeof text, "validation, batch %lld at %lldx%lld", (long long)vo->batch, (long long)vo->w,
                 (long long)vo->h);
        if (n) agxset(n, c->tooltip, text);
        if (n && x1 - x0 > 6.0 * (double)strlen(text)) agxset(n, c->label, text);
        else if (n) agxset(n, c->label, "val");
    }
}

/* A labelled horizontal line at bytes; above the frame only the label is drawn, at its top. The
 * label sits above the line, or below it when `below` (a line just above would strike it). */
typedef struct {
    const char *id, *color;
    int64_t bytes;
    char text[300];
    double label_x;
    char just;
    int below;
} tl_hline;

static void hline(tl_canvas *c, const tl_frame *f, const tl_hline *l) {
    char name[32], off[340];
    double y = tl_fy(f, (double)(l->bytes < f->top ? l->bytes : f->top));
    snprintf(name, sizeof name, "_%s", l->id);
    if (l->bytes <= f->top) tl_box(c, name, f->x0, y - 0.8, f->x0 + f->w, y + 0.8, l->color);
    snprintf(off, sizeof off, "%s%s", l->text, l->bytes <= f->top ? "" : " (above the chart)");
    snprintf(name, sizeof name, "_%s_label", l->id);
    Agnode_t *n = tl_text(c, name, l->label_x, y + (l->below ? -8 : 8), 520, off, l->just, 10);
    if (n) tl_set(n, "fontcolor", l->color);
}

/* Lines closer than a label's height: the lower one's label goes under it. Also when a label on
 * the same side would run into the other line's label. */
#define TL_LABEL_H 14.0
static void place_labels(const tl_frame *f, tl_hline *l, int n) {
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++) {
            double yi = tl_fy(f, (double)(l[i].bytes < f->top ? l[i].bytes : f->top));
            double yj = tl_fy(f, (double)(l[j].bytes < f->top ? l[j].bytes : f->top));
            if (i != j && yi <= yj && yj - yi < TL_LABEL_H + 2 && !(yi == yj && i < j)) l[i].below = 1;
        }
}

static void draw_marks(tl_canvas *c, const tl_frame *f, const yp_plan *p, const column *cols, int nc) {
    char text[256], b1[32], b2[32], b3[32];
    const yp_schedule *s = p->sched;
    /* the card, the budget under --reserve, the arena on the fixed cost */
    tl_hline l[3];
    int nl = 0;
    memset(l, 0, sizeof l);
    l[nl] = (tl_hline){"card", "#d62728", p->gpu.mem_bytes, "", f->x0 + f->w - 4, 'r', 0};
    snprintf(l[nl++].text, sizeof l[0].text, "the card: %s", yp_fmt_bytes(p->gpu.mem_bytes, b1, sizeof b1));
    if (p->reserve_bytes > 0) {
        l[nl] = (tl_hline){"budget", "#e377c2", p->gpu.mem_bytes - p->reserve_bytes, "", f->x0 + f->w - 4, 'r', 0};
        snprintf(l[nl++].text, sizeof l[0].text, "kept free above: %s (--reserve)",
                 yp_fmt_bytes(p->reserve_bytes, b1, sizeof b1));
    }
    l[nl] = (tl_hline){"arena", "#555555", p->gpu.fixed_bytes + p->arena_bytes, "", f->x0 + 4, 'l', 0};
    snprintf(l[nl++].text, sizeof l[0].text, "arena %s + fixed %s = %s",
             yp_fmt_bytes(p->arena_bytes, b1, sizeof b1), yp_fmt_bytes(p->gpu.fixed_bytes, b2, sizeof b2),
             yp_fmt_bytes(p->gpu.fixed_bytes + p->arena_bytes, b3, sizeof b3));
    place_labels(f, l, nl);
    for (int i = 0; i < nl; i++) hline(c, f, &l[i]);
    /* the fixed cost under every step */
    Agnode_t *fx =
        tl_box(c, "_fixed", f->x0, f->y0, f->x0 + f->w, tl_fy(f, (double)p->gpu.fixed_bytes), TL_FIXED_COLOR);
    snprintf(text, sizeof text, "fixed device cost %s: CUDA context, libraries, the driver's reserve",
             yp_fmt_bytes(p->gpu.fixed_bytes, b1, sizeof b1));
    if (fx) agxset(fx, c->tooltip, text);
    /* forward/backward boundary: the loss step */
    double xl = tl_fx(f, s->loss_step + 0.5), top = f->y0 + f->h;
    tl_box(c, "_boundary", xl - 0.6, f->y0, xl + 0.6, top + 21, "#333333");
    /* labelled on the side away from the peak, whose stem rises through the same row */
    int left = p->live.peak_step >= s->loss_step;
    snprintf(text, sizeof text, left ? "forward | backward: loss at step %d" : "loss at step %d: forward | backward",
             s->loss_step);
    /* a row above the axis title's, so the two never meet */
    tl_text(c, "_boundary_label", xl + (left ? -4 : 4), top + 27, 260, text, left ? 'r' : 'l', 10);
    /* the peak column: outline, a stem up to the label */
    int pk = p->live.peak_step;
    for (int i = 0; i < nc; i++) {
        if (cols[i].s0 > pk || cols[i].s1 < pk) continue;
        double x0 = tl_fx(f, cols[i].s0), x1 = tl_fx(f, cols[i].s1 + 1),
               yp = tl_fy(f, (double)(p->live.peak + p->gpu.fixed_bytes));
        tl_outline(c, "_peak_box", x0 - 1.5, f->y0, x1 + 1.5, yp + 1.5, "black", 1.2);
        tl_box(c, "_peak_stem", (x0 + x1) / 2 - 0.5, yp + 1.5, (x0 + x1) / 2 + 0.5, top + 34, "black");
        int big = 0;
        for (int k = 1; k < TL_CAT_COUNT; k++)
            if (cat_bytes(p, pk, (tl_cat)k) > cat_bytes(p, pk, (tl_cat)big)) big = k;
        snprintf(text, sizeof text, "training's live peak %s (+ fixed) at step %d (%s, %s): %.0f%% %s",
                 yp_fmt_bytes(p->live.peak, b1, sizeof b1), pk, yp_phase_name(s->steps[pk].phase),
                 tl_step_name(p, pk), 100.0 * (double)cat_bytes(p, pk, (tl_cat)big) / (double)p->live.peak,
                 tl_cat_label((tl_cat)big));
        int right = (x0 + x1) / 2 > f->x0 + f->w * 0.6;
        tl_text(c, "_peak_label", (x0 + x1) / 2 + (right ? -4 : 4), top + 40, 620, text, right ? 'r' : 'l', 11);
        break;
    }
}

/* The validation region's label: its peak and what it is made of. */
static void draw_val_mark(tl_canvas *c, const tl_frame *f, const yp_plan *p, const mem_view *mv, const column *vc,
                          int nvc) {
    if (!nvc) return;
    int best = 0;
    for (int i = 1; i < nvc; i++)
        if (val_live(p, mv, vc[i].rep) > val_live(p, mv, vc[best].rep)) best = i;
    int64_t whole = 0, peak = val_live(p, mv, vc[best].rep);
    for (int k = 0; k < TL_CAT_COUNT; k++) whole += mv->whole[k];
    char text[256], b1[32], b2[32];
    snprintf(text, sizeof text, "validation: %s live\n(training's whole-step %s\n+ its own pass) + fixed",
             yp_fmt_bytes(peak, b1, sizeof b1), yp_fmt_bytes(whole, b2, sizeof b2));
    double x = tl_fx(f, mv->n_train + mv->gap), y = tl_fy(f, (double)(peak + mv->fixed));
    tl_text(c, "_val_label", x, y + 24, 200, text, 'l', 9);
}

int tl_memory_write(GVC_t *gvc, const yp_plan *p, const char *dir, const char *format, yp_err *err) {
    char cand[256], title[640], b[32], b2[32], b3[32], b4[32], res[64] = "";
    yp_report_candidate_str(p->g, &p->cand, cand, sizeof cand);
    /* the table's peak GiB and %GPU: arena + fixed (the reserve is kept free, not used) */
    int64_t used = p->arena_bytes + p->gpu.fixed_bytes;
    if (p->reserve_bytes > 0)
        snprintf(res, sizeof res, "; %s kept free (--reserve)", yp_fmt_bytes(p->reserve_bytes, b4, sizeof b4));
    snprintf(title, sizeof title,
             "Device memory per step, for yoloplan's executor: %s\n%s: needs %s (arena %s + fixed %s) = %.0f%% of "
             "the card's %s%s",
             cand, p->gpu.desc, yp_fmt_bytes(used, b, sizeof b), yp_fmt_bytes(p->arena_bytes, b2, sizeof b2),
             yp_fmt_bytes(p->gpu.fixed_bytes, b3, sizeof b3),
             100.0 * (double)used / (double)(p->gpu.mem_bytes > 0 ? p->gpu.mem_bytes : 1),
             yp_fmt_bytes(p->gpu.mem_bytes, b4, sizeof b4), res);
    column *cols = malloc((TL_MAX_COLUMNS + 8 + TL_MAX_VAL_COLUMNS) * sizeof *cols);
    tl_canvas c;
    if (!cols || tl_canvas_open(&c, "memory", title)) {
        free(cols);
        return yp_err_set(err, "%s/memory.dot: out of memory", dir);
    }
    mem_view mv;
    view_init(&mv, p);
    int64_t val_hi = 0;
    for (int t = 0; t < mv.n_val; t++) {
        int64_t v = val_live(p, &mv, t);
        val_hi = v > val_hi ? v : val_hi;
    }
    int64_t hi = p->arena_bytes > p->live.peak ? p->arena_bytes : p->live.peak;
    hi = (hi > val_hi ? hi : val_hi) + mv.fixed;
    /* the card sets the scale unless it is far above the peak, where it would flatten the stacks */
    int64_t top = p->gpu.mem_bytes > hi && p->gpu.mem_bytes < 3 * hi ? p->gpu.mem_bytes : hi;
    tl_frame f = {80, 90, 900, 440, mv.n_train + mv.gap + mv.n_val, top + top / 12, mv.n_train};
    tl_axes(&c, &f, "step of one training iteration (forward, loss, backward, optimizer), then the validation pass",
            "device memory");
    int nc = make_columns(p, cols), present[TL_CAT_COUNT] = {0};
    column *vcols = cols + TL_MAX_COLUMNS + 8;
    int nvc = mv.n_val ? make_val_columns(p, &mv, vcols) : 0;
    draw_columns(&c, &f, p, &mv, cols, nc, present);
    draw_val_columns(&c, &f, p, &mv, vcols, nvc, present);
    draw_phases(&c, &f, p, &mv);
    draw_marks(&c, &f, p, cols, nc);
    draw_val_mark(&c, &f, p, &mv, vcols, nvc);
    double ly = f.y0 + f.h - 12;
    for (int k = TL_CAT_COUNT - 1; k >= 0; k--) /* legend top to bottom, in stacking order */
        if (present[k]) tl_legend_row(&c, f.x0 + f.w + 16, ly, tl_cat_id((tl_cat)k), tl_cat_color((tl_cat)k),
                                      tl_cat_label((tl_cat)k)), ly -= 16;
    tl_legend_row(&c, f.x0 + f.w + 16, ly, "fixed", TL_FIXED_COLOR, "fixed cost (CUDA context, libraries)");
    int rc = c.failed ? yp_err_set(err, "%s/memory.dot: out of memory", dir)
                      : tl_emit(gvc, c.g, "nop2", dir, "memory", format, err);
    agclose(c.g);
    free(cols);
    return rc;
}
