/* timeline_arena.c - DIR/arena.*: the planner's packing. Every tensor of the training schedule
 * is one box, named "t<index>", over its life [first, last + 1) on x and its arena bytes
 * [offset, offset + aligned bytes) on y, coloured by kind. Tensors alive for the whole step
 * (weights, gradients, optimizer state, EMA, AMP copies) sit in the region at the bottom; each
 * is still its own node, at its own offset, though most are thinner than a pixel and together
 * read as one band. Every other node starts with '_' (axes, legend, marks). */
#include <inttypes.h>
#include <string.h>

#include "timeline_common.h"
#include "yp_report.h"

static int persistent_kind(yp_kind k) {
    return k == YP_KIND_WEIGHT || k == YP_KIND_GRAD || k == YP_KIND_OPTSTATE || k == YP_KIND_EMA ||
           k == YP_KIND_LOWP;
}

/* One box per tensor; marks the kinds that appear in present[]. */
static void draw_tensors(tl_canvas *c, const tl_frame *f, const yp_plan *p, int present[YP_KIND_COUNT]) {
    const yp_schedule *s = p->sched;
    char name[32], tip[256], b[32];
    Agsym_t *off = agattr(c->g, AGNODE, "yp_offset", "");
    for (int t = 0; t < s->n_tensors; t++) {
        const yp_tensor *tt = &s->tensors[t];
        int64_t o = p->arena.offsets[t], n = yp_align_up(tt->bytes, p->arena.align);
        present[tt->kind] = 1;
        snprintf(name, sizeof name, "t%d", t);
        Agnode_t *nd = tl_box(c, name, tl_fx(f, tt->first), tl_fy(f, (double)o), tl_fx(f, tt->last + 1),
                              tl_fy(f, (double)(o + n)), tl_kind_color(tt->kind));
        if (!nd) return;
        if (!persistent_kind(tt->kind)) { /* a hairline so that neighbours of one kind stay apart */
            agxset(nd, c->penwidth, "0.25");
            agxset(nd, c->color, "white");
        }
        snprintf(tip, sizeof tip, "%s (%s): %s at offset %" PRId64 ", steps %d-%d", tt->name,
                 yp_kind_name(tt->kind), yp_fmt_bytes(tt->bytes, b, sizeof b), o, tt->first, tt->last);
        agxset(nd, c->tooltip, tip);
        snprintf(tip, sizeof tip, "%" PRId64, o);
        agxset(nd, off, tip);
    }
}

/* Horizontal lines: the lower bound (peak live bytes) and the top of the whole-step region. */
static void draw_marks(tl_canvas *c, const tl_frame *f, const yp_plan *p) {
    char text[256], b[32];
    double y = tl_fy(f, (double)p->arena.lower_bound), x1 = f->x0 + f->w;
    tl_box(c, "_lower_bound", f->x0, y - 0.6, x1, y + 0.6, "#d62728");
    snprintf(text, sizeof text, "lower bound %s (peak live bytes, step %d)",
             yp_fmt_bytes(p->arena.lower_bound, b, sizeof b), p->live.peak_step);
    Agnode_t *n = tl_text(c, "_lower_bound_label", x1 + 6, y, 300, text, 'l', 10);
    if (n) tl_set(n, "fontcolor", "#d62728");
    y = tl_fy(f, (double)p->arena.persistent);
    snprintf(text, sizeof text, "whole-step tensors below: %s",
             yp_fmt_bytes(p->arena.persistent, b, sizeof b));
    tl_text(c, "_persistent_label", x1 + 6, y + 6, 300, text, 'l', 10);
    double xl = tl_fx(f, p->sched->loss_step + 0.5), top = f->y0 + f->h;
    tl_box(c, "_boundary", xl - 0.6, f->y0, xl + 0.6, top + 8, "#333333");
    snprintf(text, sizeof text, "forward | backward (loss = step %d)", p->sched->loss_step);
    tl_text(c, "_boundary_label", xl, top + 14, 260, text, 'c', 10);
}

int tl_arena_write(GVC_t *gvc, const yp_plan *p, const char *dir, const char *format, yp_err *err) {
    char cand[256], title[768], b1[32], b2[32], b3[32];
    const yp_arena *a = &p->arena;
    yp_report_candidate_str(p->g, &p->cand, cand, sizeof cand);
    int n =
        snprintf(title, sizeof title,
                 "Arena map, for yoloplan's executor: %s\narena %s, lower bound %s, ratio %.4f (order: %s); %d tensors",
                 cand, yp_fmt_bytes(a->size, b1, sizeof b1), yp_fmt_bytes(a->lower_bound, b2, sizeof b2),
                 a->lower_bound > 0 ? (double)a->size / (double)a->lower_bound : 0.0, a->order ? a->order : "-",
                 p->sched->n_tensors);
    if (p->arena_bytes > a->size && n > 0 && (size_t)n < sizeof title)
        snprintf(title + n, sizeof title - (size_t)n, "; validation needs %s",
                 yp_fmt_bytes(p->arena_bytes, b3, sizeof b3));
    tl_canvas c;
    if (tl_canvas_open(&c, "arena", title)) return yp_err_set(err, "%s/arena.dot: out of memory", dir);
    tl_frame f = {80, 60, 900, 480, p->sched->n_steps, a->size > 0 ? a->size : 1, 0};
    tl_axes(&c, &f, "step of the training step (x: a tensor's life)", "arena offset (y: a tensor's bytes)");
    int present[YP_KIND_COUNT] = {0};
    draw_tensors(&c, &f, p, present);
    draw_marks(&c, &f, p);
    double ly = f.y0 + f.h - 40; /* below the lower-bound label */
    for (int k = 0; k < YP_KIND_COUNT; k++)
        if (present[k]) tl_legend_row(&c, f.x0 + f.w + 16, ly, yp_kind_name((yp_kind)k), tl_kind_color((yp_kind)k),
                                      tl_kind_label((yp_kind)k)), ly -= 16;
    int rc = c.failed ? yp_err_set(err, "%s/arena.dot: out of memory", dir)
                      : tl_emit(gvc, c.g, "nop2", dir, "arena", format, err);
    agclose(c.g);
    return rc;
}
