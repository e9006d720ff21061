/* timeline_common.c - categories, colours, pinned boxes and text, axes, and DOT + render output
 * shared by the three timeline pictures. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "timeline_common.h"
#include "yp_report.h"

/* ---------------------------------------------------------------- categories and colours */

static const struct {
    const char *id, *label, *color;
} cats[TL_CAT_COUNT] = {
    {"weights", "weights (fp32 + EMA + AMP copies)", "#4e79a7"},
    {"grads", "weight gradients", "#76b7b2"},
    {"optimizer", "optimizer state", "#b07aa1"},
    {"saved", "saved activations + input batch", "#59a14f"},
    {"transient", "transient activations + loss", "#edc948"},
    {"actgrad", "activation gradients", "#f28e2b"},
    {"recompute", "recompute buffers", "#ff9da7"},
    {"workspace", "workspace (conv scratch)", "#9c9c9c"},
};

static const struct {
    const char *label, *color;
} kinds[YP_KIND_COUNT] = {
    [YP_KIND_WEIGHT] = {"weights (fp32)", "#4e79a7"},
    [YP_KIND_GRAD] = {"weight gradients", "#76b7b2"},
    [YP_KIND_OPTSTATE] = {"optimizer state", "#b07aa1"},
    [YP_KIND_EMA] = {"EMA copy", "#8fb3dc"},
    [YP_KIND_LOWP] = {"AMP weight copies", "#2b4c7e"},
    [YP_KIND_INPUT] = {"input batch", "#2f6b2a"},
    [YP_KIND_ACT] = {"transient activations", "#edc948"},
    [YP_KIND_SAVED] = {"saved activations", "#59a14f"},
    [YP_KIND_ACTGRAD] = {"activation gradients", "#f28e2b"},
    [YP_KIND_RECOMPUTE] = {"recompute buffers", "#ff9da7"},
    [YP_KIND_WORKSPACE] = {"workspace", "#9c9c9c"},
    [YP_KIND_LOSS] = {"loss + targets", "#b8860b"},
};

tl_cat tl_cat_of_kind(yp_kind k) {
    switch (k) {
    case YP_KIND_WEIGHT: case YP_KIND_EMA: case YP_KIND_LOWP: return TL_CAT_WEIGHTS;
    case YP_KIND_GRAD: return TL_CAT_GRADS;
    case YP_KIND_OPTSTATE: return TL_CAT_OPTIMIZER;
    case YP_KIND_SAVED: case YP_KIND_INPUT: return TL_CAT_SAVED;
    case YP_KIND_ACT: case YP_KIND_LOSS: return TL_CAT_TRANSIENT;
    case YP_KIND_ACTGRAD: return TL_CAT_ACTGRAD;
    case YP_KIND_RECOMPUTE: return TL_CAT_RECOMPUTE;
    case YP_KIND_WORKSPACE: return TL_CAT_WORKSPACE;
    default: YP_ASSERT(!"unknown tensor kind"); return TL_CAT_COUNT;
    }
}

const char *tl_cat_id(tl_cat c) { return cats[c].id; }
const char *tl_cat_label(tl_cat c) { return cats[c].label; }
const char *tl_cat_color(tl_cat c) { return cats[c].color; }
const char *tl_kind_color(yp_kind k) { return kinds[k].color; }
const char *tl_kind_label(yp_kind k) { return kinds[k].label; }

const char *tl_step_name(const yp_plan *p, int step) {
    const yp_step *st = &p->sched->steps[step];
    return st->node >= 0 ? p->g->nodes[st->node].name : st->label;
}

/* ---------------------------------------------------------------- canvas */

void tl_set(void *obj, const char *key, const char *val) { agsafeset(obj, (char *)key, (char *)val, ""); }

static Agsym_t *node_default(Agraph_t *g, const char *key, const char *val) {
    return agattr(g, AGNODE, (char *)key, (char *)val);
}

int tl_canvas_open(tl_canvas *c, const char *name, const char *title) {
    memset(c, 0, sizeof *c);
    c->g = agopen((char *)name, Agundirected, NULL);
    if (!c->g) return -1;
    static const char *const graph_attrs[][2] = {
        {"labelloc", "t"}, {"fontname", "Helvetica"}, {"fontsize", "16"}, {"notranslate", "true"},
        {"pad", "0.2"},    {"bgcolor", "white"},
    };
    tl_set(c->g, "label", title);
    for (size_t i = 0; i < sizeof graph_attrs / sizeof graph_attrs[0]; i++)
        tl_set(c->g, graph_attrs[i][0], graph_attrs[i][1]);
    c->shape = node_default(c->g, "shape", "box");
    c->style = node_default(c->g, "style", "filled");
    c->fill = node_default(c->g, "fillcolor", "#cccccc");
    c->penwidth = node_default(c->g, "penwidth", "0");
    c->color = node_default(c->g, "color", "black");
    c->label = node_default(c->g, "label", "");
    c->fontsize = node_default(c->g, "fontsize", "10");
    c->width = node_default(c->g, "width", "0.1");
    c->height = node_default(c->g, "height", "0.1");
    c->pos = node_default(c->g, "pos", "");
    c->tooltip = node_default(c->g, "tooltip", "");
    if (c->label) c->label->print = 1; /* write label="" into the DOT, else a reader draws each name */
    node_default(c->g, "fixedsize", "true");
    node_default(c->g, "fontname", "Helvetica");
    node_default(c->g, "margin", "0");
    if (c->shape && c->style && c->fill && c->penwidth && c->color && c->label && c->fontsize && c->width &&
        c->height && c->pos && c->tooltip)
        return 0;
    agclose(c->g);
    c->g = NULL;
    return -1;
}

static void set(Agnode_t *n, Agsym_t *s, const char *v) { agxset(n, s, (char *)v); }

/* A node of size w x h points centred on (x, y), or NULL (c->failed set). */
static Agnode_t *pinned(tl_canvas *c, const char *name, double x, double y, double w, double h) {
    Agnode_t *n = agnode(c->g, (char *)name, 1);
    if (!n) {
        c->failed = 1;
        return NULL;
    }
    char buf[64];
    snprintf(buf, sizeof buf, "%.2f,%.2f!", x, y);
    set(n, c->pos, buf);
    snprintf(buf, sizeof buf, "%.4f", w / 72.0);
    set(n, c->width, buf);
    snprintf(buf, sizeof buf, "%.4f", h / 72.0);
    set(n, c->height, buf);
    return n;
}

Agnode_t *tl_box(tl_canvas *c, const char *name, double x0, double y0, double x1, double y1, const char *fill) {
    Agnode_t *n = pinned(c, name, (x0 + x1) / 2, (y0 + y1) / 2, x1 - x0, y1 - y0);
    if (n) set(n, c->fill, fill);
    return n;
}

Agnode_t *tl_outline(tl_canvas *c, const char *name, double x0, double y0, double x1, double y1,
                     const char *color, double penwidth) {
    Agnode_t *n = pinned(c, name, (x0 + x1) / 2, (y0 + y1) / 2, x1 - x0, y1 - y0);
    if (!n) return NULL;
    char buf[32];
    snprintf(buf, sizeof buf, "%.2f", penwidth);
    set(n, c->style, "solid");
    set(n, c->color, color);
    set(n, c->penwidth, buf);
    return n;
}

Agnode_t *tl_text(tl_canvas *c, const char *name, double x, double y, double w, const char *text, char just,
                  double size) {
    /* Graphviz justifies a line by the escape that ends it: \l left, \r right, \n centred. */
    char label[1024], esc[3] = {'\\', just == 'l' ? 'l' : just == 'r' ? 'r' : 'n', 0};
    int lines = 1;
    size_t o = 0;
    for (const char *s = text; *s && o + 3 < sizeof label; s++) {
        if (*s == '\n') memcpy(label + o, esc, 2), o += 2, lines++;
        else label[o++] = *s;
    }
    memcpy(label + o, esc, 3);
    double h = lines * size * 1.3 + 2, cx = just == 'l' ? x + w / 2 : just == 'r' ? x - w / 2 : x;
    Agnode_t *n = pinned(c, name, cx, y, w, h);
    if (!n) return NULL;
    char fs[16];
    snprintf(fs, sizeof fs, "%g", size);
    set(n, c->shape, "plaintext");
    set(n, c->style, "");
    set(n, c->label, label);
    set(n, c->fontsize, fs);
    return n;
}

/* ---------------------------------------------------------------- axes and legend */

int tl_step_tick(int n, int max_ticks) {
    for (int k = 1;; k *= 10)
        for (int m = 1; m <= 5; m += m == 1 ? 1 : 3)
            if (n / (m * k) <= max_ticks) return m * k;
}

/* Byte ticks in the largest binary unit that fits top: a step of {1, 2, 2.5, 5} x 10^k units with
 * at most max_ticks intervals. Sets *unit (bytes) and *unit_name. Returns the step in units. */
static double byte_tick(int64_t top, int max_ticks, double *unit, const char **unit_name) {
    static const char *const names[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    int u = 0;
    while (u < 4 && (double)top >= 1024.0 * (double)((int64_t)1 << (10 * u))) u++;
    *unit = (double)((int64_t)1 << (10 * u)), *unit_name = names[u];
    double raw = (double)top / *unit / max_ticks;
    for (double k = 1e-3;; k *= 10)
        for (int m = 0; m < 4; m++) {
            static const double mult[] = {1, 2, 2.5, 5};
            if (mult[m] * k >= raw) return mult[m] * k;
        }
}

void tl_axes(tl_canvas *c, const tl_frame *f, const char *xtitle, const char *ytitle) {
    char name[32], text[32];
    const char *unit_name;
    double unit, ys = byte_tick(f->top, 8, &unit, &unit_name);
    for (int i = 0; i * ys * unit <= (double)f->top; i++) {
        double y = tl_fy(f, i * ys * unit);
        snprintf(name, sizeof name, "_ygrid%d", i);
        tl_box(c, name, f->x0, y - 0.3, f->x0 + f->w, y + 0.3, "#e4e4e4");
        snprintf(name, sizeof name, "_ylab%d", i);
        snprintf(text, sizeof text, "%g %s", i * ys, unit_name);
        tl_text(c, name, f->x0 - 6, y, 70, text, 'r', 9);
    }
    int ticked = f->tick_steps > 0 && f->tick_steps < f->n_steps ? f->tick_steps : f->n_steps;
    int xs = tl_step_tick(ticked, 12);
    for (int i = 0; i * xs <= ticked; i++) {
        double x = tl_fx(f, i * xs);
        snprintf(name, sizeof name, "_xtick%d", i);
        tl_box(c, name, x - 0.5, f->y0 - 5, x + 0.5, f->y0, "black");
        snprintf(name, sizeof name, "_xlab%d", i);
        snprintf(text, sizeof text, "%d", i * xs);
        tl_text(c, name, x, f->y0 - 13, 40, text, 'c', 9);
    }
    tl_box(c, "_xaxis", f->x0, f->y0 - 0.5, f->x0 + f->w, f->y0 + 0.5, "black");
    tl_box(c, "_yaxis", f->x0 - 0.5, f->y0, f->x0 + 0.5, f->y0 + f->h, "black");
    tl_text(c, "_xtitle", f->x0 + f->w / 2, f->y0 - 30, f->w, xtitle, 'c', 11);
    tl_text(c, "_ytitle", f->x0 - 6, f->y0 + f->h + 14, 200, ytitle, 'l', 11);
}

void tl_flow_style(Agraph_t *g, const char *title, const char *nodesep, const char *ranksep) {
    const char *const attrs[][2] = {{"label", title},    {"labelloc", "t"},     {"fontname", "Helvetica"},
                                    {"fontsize", "16"},  {"rankdir", "TB"},     {"nodesep", nodesep},
                                    {"ranksep", ranksep}, {"bgcolor", "white"}};
    for (size_t i = 0; i < sizeof attrs / sizeof attrs[0]; i++) tl_set(g, attrs[i][0], attrs[i][1]);
    agattr(g, AGNODE, "shape", "box");
    agattr(g, AGNODE, "style", "rounded,filled");
    agattr(g, AGNODE, "fillcolor", "#dbe9f6");
    agattr(g, AGNODE, "fontname", "Helvetica");
    agattr(g, AGNODE, "fontsize", "10");
    agattr(g, AGEDGE, "arrowsize", "0.7");
}

void tl_legend_row(tl_canvas *c, double x, double y, const char *id, const char *color, const char *label) {
    char name[64];
    snprintf(name, sizeof name, "_key_%s", id);
    tl_box(c, name, x, y, x + 14, y + 10, color);
    snprintf(name, sizeof name, "_keylabel_%s", id);
    tl_text(c, name, x + 19, y + 5, 190, label, 'l', 10);
}

/* ---------------------------------------------------------------- output */

static GVC_t *context;

static void free_context(void) {
    gvFreeContext(context);
    context = NULL;
}

GVC_t *tl_context(void) {
    if (!context && (context = gvContext()) != NULL) atexit(free_context);
    return context;
}

/* Opens dir/base.ext into *f, the path in path. 0, or -1 with err set. */
static int open_out(const char *dir, const char *base, const char *ext, char *path, size_t n, FILE **f,
                    yp_err *err) {
    if (snprintf(path, n, "%s/%s.%s", dir, base, ext) >= (int)n)
        return yp_err_set(err, "%s/%s.%s: path too long", dir, base, ext);
    *f = fopen(path, "wb");
    return *f ? 0 : yp_err_set(err, "%s: cannot open for writing: %s", path, strerror(errno));
}

/* Closes f, reporting a failed write of path. */
static int close_out(FILE *f, const char *path, yp_err *err) {
    int bad = ferror(f);
    if (fclose(f) || bad) return yp_err_set(err, "%s: write failed: %s", path, strerror(errno));
    return 0;
}

int tl_emit(GVC_t *gvc, Agraph_t *g, const char *engine, const char *dir, const char *base, const char *format,
            yp_err *err) {
    char path[4096];
    FILE *f;
    if (open_out(dir, base, "dot", path, sizeof path, &f, err)) return -1;
    int bad = agwrite(g, f) != 0;
    if (close_out(f, path, err)) return -1;
    if (bad) return yp_err_set(err, "%s: write failed", path);
    if (open_out(dir, base, format, path, sizeof path, &f, err)) return -1;
    if (gvLayout(gvc, g, engine)) {
        fclose(f);
        return yp_err_set(err, "%s: Graphviz layout \"%s\" failed", path, engine);
    }
    bad = gvRender(gvc, g, format, f) != 0;
    gvFreeLayout(gvc, g);
    if (close_out(f, path, err)) return -1;
    return bad ? yp_err_set(err, "%s: Graphviz could not render %s (is its plugin installed?)", path, format) : 0;
}
