/* timeline_common.h - what the three timeline pictures share (internal to reports/): the memory
 * categories and kind colours, a "canvas" of pinned boxes and text built with libcgraph, and
 * writing a graph as DOT plus laying it out and rendering it with libgvc.
 *
 * Coordinates on a canvas are Graphviz points (72 per inch) with y growing upwards; every node
 * gets pos="x,y!" (its centre), fixedsize width/height in inches, and the canvas is laid out by
 * the "nop2" engine (neato -n2: positions are used as given, nothing is moved). */
#ifndef TIMELINE_COMMON_H
#define TIMELINE_COMMON_H

#include <graphviz/cgraph.h>
#include <graphviz/gvc.h>

#include "yp_plan.h"
#include "yp_whatif.h"

/* The stacked categories of the memory timeline (docs/architecture.md §6), bottom to top. */
typedef enum {
    TL_CAT_WEIGHTS,   /* WEIGHT + EMA + LOWP */
    TL_CAT_GRADS,     /* GRAD */
    TL_CAT_OPTIMIZER, /* OPTSTATE */
    TL_CAT_SAVED,     /* SAVED + INPUT */
    TL_CAT_TRANSIENT, /* ACT + LOSS */
    TL_CAT_ACTGRAD,   /* ACTGRAD */
    TL_CAT_RECOMPUTE, /* RECOMPUTE */
    TL_CAT_WORKSPACE, /* WORKSPACE */
    TL_CAT_COUNT
} tl_cat;

tl_cat tl_cat_of_kind(yp_kind k);
const char *tl_cat_id(tl_cat c);     /* short id used in node names: "weights", "saved", ... */
const char *tl_cat_label(tl_cat c);  /* legend text */
const char *tl_cat_color(tl_cat c);
const char *tl_kind_color(yp_kind k);
const char *tl_kind_label(yp_kind k);

/* A graph of pinned nodes. The default node is a filled, borderless, fixed-size box without a
 * label; the symbols are cached so that setting thousands of nodes stays cheap. */
typedef struct {
    Agraph_t *g;
    Agsym_t *pos, *width, *height, *fill, *label, *tooltip, *shape, *style, *fontsize, *penwidth, *color;
    int failed; /* set when a node could not be created (out of memory) */
} tl_canvas;

/* Opens an undirected canvas named name with the graph label title. 0, or -1 on OOM. The
 * caller closes c->g with agclose. */
int tl_canvas_open(tl_canvas *c, const char *name, const char *title);

/* A filled box over [x0, x1] x [y0, y1] (points). NULL on OOM. Boxes thinner than Graphviz's
 * minimum node size (0.01 x 0.02 in) are drawn at that size, centred on the true range. */
Agnode_t *tl_box(tl_canvas *c, const char *name, double x0, double y0, double x1, double y1, const char *fill);

/* An unfilled rectangle outline over [x0, x1] x [y0, y1]. */
Agnode_t *tl_outline(tl_canvas *c, const char *name, double x0, double y0, double x1, double y1,
                     const char *color, double penwidth);

/* Text (lines separated by '\n') in a box of width w points whose anchor is (x, y): just 'l'
 * puts the box's left edge at x, 'r' its right edge, 'c' its centre; y is the box's vertical
 * centre. size is the font size in points. */
Agnode_t *tl_text(tl_canvas *c, const char *name, double x, double y, double w, const char *text, char just,
                  double size);

/* The look of the two pictures laid out by dot (graph.svg, remedies.svg): the title on top,
 * ranks top to bottom nodesep/ranksep inches apart, rounded filled boxes, small arrows. */
void tl_flow_style(Agraph_t *g, const char *title, const char *nodesep, const char *ranksep);

/* Sets an attribute by name (declaring it with an empty default when new). */
void tl_set(void *obj, const char *key, const char *val);

/* The process's one Graphviz context, created on first use and freed at exit (NULL if it cannot
 * be created). One context, not one per call: Graphviz 2.42's pango text layout keeps a pointer
 * to the last font name, which lives in the context's font dictionary, and reads it after
 * gvFreeContext when a second context lays out text (a use-after-free that ASan reports). Not
 * thread-safe, like Graphviz itself. */
GVC_t *tl_context(void);

/* Writes g to dir/base.dot, lays it out with engine, renders it to dir/base.format and frees the
 * layout. 0, or -1 with err naming the file that failed. */
int tl_emit(GVC_t *gvc, Agraph_t *g, const char *engine, const char *dir, const char *base, const char *format,
            yp_err *err);

/* A plot frame: steps [0, n_steps) on x over [x0, x0 + w], bytes [0, top] on y over [y0, y0 + h];
 * the step ticks stop at tick_steps when it is > 0 (a chart whose right part is not steps). */
typedef struct {
    double x0, y0, w, h;
    int n_steps;
    int64_t top;
    int tick_steps;
} tl_frame;

static inline double tl_fx(const tl_frame *f, double step) { return f->x0 + step * f->w / f->n_steps; }
static inline double tl_fy(const tl_frame *f, double bytes) { return f->y0 + bytes * f->h / (double)f->top; }

/* Round tick step: the smallest of {1, 2, 5} x 10^k (steps) with at most max_ticks intervals. */
int tl_step_tick(int n, int max_ticks);

/* Draws the axes of f: light horizontal grid lines with byte labels ("_ygrid<i>", "_ylab<i>") at
 * round multiples of one binary unit ("0.5 GiB"), step ticks with labels ("_xtick<i>", "_xlab<i>"),
 * the axis lines ("_xaxis", "_yaxis") and titles ("_xtitle", "_ytitle"). */
void tl_axes(tl_canvas *c, const tl_frame *f, const char *xtitle, const char *ytitle);

/* One legend row at (x, y) (its swatch's lower-left corner): "_key_<id>" and "_keylabel_<id>". */
void tl_legend_row(tl_canvas *c, double x, double y, const char *id, const char *color, const char *label);

/* The name of the graph node a step works on, or its label ("loss", "optimizer", "ema"). */
const char *tl_step_name(const yp_plan *p, int step);

/* The plan's three pictures (timeline_memory.c, timeline_arena.c, timeline_graph.c). */
int tl_memory_write(GVC_t *gvc, const yp_plan *p, const char *dir, const char *format, yp_err *err);
int tl_arena_write(GVC_t *gvc, const yp_plan *p, const char *dir, const char *format, yp_err *err);
int tl_graph_write(GVC_t *gvc, const yp_plan *p, const char *dir, const char *format, yp_err *err);
/* The remedies' decision flow of a what-if (timeline_remedies.c). */
int tl_remedies_write(GVC_t *gvc, const yp_whatif *w, const char *dir, const char *format, yp_err *err);

#endif
