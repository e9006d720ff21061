/* test_timeline.c - the Graphviz pictures of a real plan (yolov5s, batch 8 at 320, checkpoint
 * set {2, 4, 6}, 8 GB): each DOT file read back with agread has the nodes the plan implies,
 * placed where the plan says; the SVG is well-formed XML with those positions; PNG is PNG; a
 * directory under a regular file and an unknown format are errors naming the culprit. */
#include <graphviz/cgraph.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "yp_ir.h"
#include "yp_report.h"
#include "yp_test.h"
#include "yp_timeline.h"

/* Graphviz 2.42 leaks inside its layouts and font handling (tests/lsan.supp says which); under
 * -DYP_SANITIZE=ON LeakSanitizer reads this list at start-up. Keep it equal to tests/lsan.supp. */
const char *__lsan_default_suppressions(void);
const char *__lsan_default_suppressions(void) {
    return "leak:libgvc.so\nleak:libgvplugin_neato_layout.so\nleak:libgvplugin_dot_layout.so\n"
           "leak:libgvplugin_pango.so\nleak:libfontconfig.so\nleak:libpango\nleak:libglib\n";
}

static yp_graph *g;
static yp_plan plan;
static char dir[64] = "/tmp/yp_test_timeline_XXXXXX";

/* The memory categories as the issue defines them (independent of reports/timeline_common.c). */
static int category(yp_kind k) {
    static const int cat[YP_KIND_COUNT] = {[YP_KIND_WEIGHT] = 0, [YP_KIND_EMA] = 0, [YP_KIND_LOWP] = 0,
                                           [YP_KIND_GRAD] = 1, [YP_KIND_OPTSTATE] = 2, [YP_KIND_SAVED] = 3,
                                           [YP_KIND_INPUT] = 3, [YP_KIND_ACT] = 4, [YP_KIND_LOSS] = 4,
                                           [YP_KIND_ACTGRAD] = 5, [YP_KIND_RECOMPUTE] = 6,
                                           [YP_KIND_WORKSPACE] = 7};
    return cat[k];
}
static const char *const cat_ids[8] = {"weights", "grads", "optimizer", "saved",
                                       "transient", "actgrad", "recompute", "workspace"};

static int64_t cat_bytes(int step, int c) {
    int64_t b = 0;
    for (int k = 0; k < YP_KIND_COUNT; k++)
        if (category((yp_kind)k) == c) b += plan.live.by_kind[(size_t)step * YP_KIND_COUNT + k];
    return b;
}

/* An attribute's value, "" when the DOT does not declare it. */
static const char *attr(void *obj, const char *name) {
    const char *v = agget(obj, (char *)name);
    return v ? v : "";
}

static char *read_all(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc((size_t)n + 1);
    if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) free(buf), buf = NULL;
    if (buf) buf[n] = 0, *len = (size_t)n;
    fclose(f);
    return buf;
}

static Agraph_t *read_dot(const char *base) {
    char path[128];
    snprintf(path, sizeof path, "%s/%s.dot", dir, base);
    FILE *f = fopen(path, "r");
    if (!f) return NULL;
    Agraph_t *gr = agread(f, NULL);
    fclose(f);
    return gr;
}

/* Well-formed enough: starts with the XML declaration, every element closes in order, one root
 * <svg>, ends with </svg>. Comments, the declaration and the DOCTYPE are skipped. */
static int svg_well_formed(const char *s) {
    char stack[64][32];
    int depth = 0, roots = 0;
    if (strncmp(s, "<?xml", 5)) return 0;
    for (const char *p = strchr(s, '<'); p; p = strchr(p, '<')) {
        if (!strncmp(p, "<!--", 4)) { p = strstr(p, "-->"); if (!p) return 0; continue; }
        if (p[1] == '?' || p[1] == '!') { p = strchr(p, '>'); if (!p) return 0; continue; }
        const char *e = p + 1;
        char q = 0;
        for (; *e && (q || *e != '>'); e++)
            if (*e == '"' || *e == '\'') q = q == *e ? 0 : q ? q : *e;
        if (!*e) return 0;
        int closing = p[1] == '/', self = e[-1] == '/';
        const char *nm = p + 1 + closing;
        size_t n = strcspn(nm, " \t\r\n/>");
        if (n == 0 || n >= sizeof stack[0]) return 0;
        if (closing) {
            if (depth == 0 || strncmp(stack[depth - 1], nm, n) || stack[depth - 1][n]) return 0;
            depth--;
        } else if (!self) {
            if (depth == 0) roots++;
            if (depth == 64) return 0;
            memcpy(stack[depth], nm, n), stack[depth++][n] = 0;
        }
        p = e;
    }
    size_t len = strlen(s);
    while (len && (s[len - 1] == '\n' || s[len - 1] == ' ')) len--;
    return depth == 0 && roots == 1 && len >= 6 && !strncmp(s + len - 6, "</svg>", 6);
}

/* The box of node n from its DOT attributes (points): centre, width, height. */
static void box_of(Agnode_t *n, double *x, double *y, double *w, double *h) {
    *x = *y = *w = *h = -1;
    sscanf(attr(n, "pos"), "%lf,%lf", x, y);
    *w = atof(attr(n, "width")) * 72, *h = atof(attr(n, "height")) * 72;
}

/* Node name's polygon in the SVG spans its DOT box (y flipped): positions were not moved. */
static int svg_box_matches(const char *svg, Agnode_t *n) {
    char title[80];
    double x, y, w, h, minx = 1e9, maxx = -1e9, miny = 1e9, maxy = -1e9;
    snprintf(title, sizeof title, "<title>%s</title>", agnameof(n));
    const char *at = strstr(svg, title);
    if (!at || !(at = strstr(at, "points=\""))) return 0;
    char pts[512];
    size_t len = strcspn(at + 8, "\"");
    if (len >= sizeof pts) return 0;
    memcpy(pts, at + 8, len), pts[len] = 0;
    for (char *p = strtok(pts, " "); p; p = strtok(NULL, " ")) {
        double px, py;
        if (sscanf(p, "%lf,%lf", &px, &py) != 2) return 0;
        minx = px < minx ? px : minx, maxx = px > maxx ? px : maxx;
        miny = -py < miny ? -py : miny, maxy = -py > maxy ? -py : maxy;
    }
    box_of(n, &x, &y, &w, &h);
    w = w < 0.72 ? 0.72 : w, h = h < 1.44 ? 1.44 : h; /* Graphviz's minimum node size */
    return fabs(minx - (x - w / 2)) < 0.6 && fabs(maxx - (x + w / 2)) < 0.6 && fabs(miny - (y - h / 2)) < 0.6 &&
           fabs(maxy - (y + h / 2)) < 0.6;
}

static int count_prefix(Agraph_t *gr, const char *prefix) {
    int n = 0;
    for (Agnode_t *v = agfstnode(gr); v; v = agnxtnode(gr, v)) n += !strncmp(agnameof(v), prefix, strlen(prefix));
    return n;
}

/* The axes' nodes: a grid line and a label per byte tick, a mark and a label per step tick, two
 * axis lines, two titles. Checks that the byte ticks are evenly spaced, at most 8 intervals, and
 * that the step ticks start at 0 and reach past the middle. */
static int axis_nodes(Agraph_t *gr, int n_steps) {
    int ny = count_prefix(gr, "_ygrid"), nx = count_prefix(gr, "_xtick");
    CHECK_EQ_I64(count_prefix(gr, "_ylab"), ny);
    CHECK_EQ_I64(count_prefix(gr, "_xlab"), nx);
    CHECK(ny >= 2 && ny <= 9 && nx >= 2 && nx <= 13);
    double y0 = 0, y1 = 0, x, w, h, y;
    char name[32];
    for (int i = 0; i < ny; i++) {
        snprintf(name, sizeof name, "_ygrid%d", i);
        Agnode_t *n = agnode(gr, name, 0);
        CHECK(n != NULL);
        if (!n) break;
        box_of(n, &x, &y, &w, &h);
        if (i == 0) y0 = y;
        else if (i == 1) y1 = y;
        else CHECK(fabs(y - (y0 + i * (y1 - y0))) < 0.05);
    }
    Agnode_t *last = agnode(gr, "_xlab0", 0);
    CHECK(last && !strcmp(attr(last, "label"), "0\\n")); /* "\n": a centred line */
    snprintf(name, sizeof name, "_xlab%d", nx - 1);
    last = agnode(gr, name, 0);
    CHECK(last && 2 * atoi(attr(last, "label")) >= n_steps);
    return 2 * ny + 2 * nx + 4;
}

static void test_write_svg(void) {
    yp_err err;
    CHECK(yp_timeline_write(&plan, dir, "svg", &err) == 0);
    static const char *const bases[] = {"memory", "arena", "graph"};
    for (int i = 0; i < 3; i++) {
        char path[128];
        size_t len = 0;
        snprintf(path, sizeof path, "%s/%s.svg", dir, bases[i]);
        char *svg = read_all(path, &len);
        CHECK(svg && len > 1000);
        CHECK(svg && svg_well_formed(svg));
        free(svg);
        Agraph_t *gr = read_dot(bases[i]);
        CHECK(gr != NULL);
        if (gr) agclose(gr);
    }
}

static void test_arena_nodes(void) {
    const yp_schedule *s = plan.sched;
    Agraph_t *gr = read_dot("arena");
    size_t len = 0;
    char path[128];
    snprintf(path, sizeof path, "%s/arena.svg", dir);
    char *svg = read_all(path, &len);
    CHECK(gr && svg);
    if (!gr || !svg) return;
    int kinds = 0, seen[YP_KIND_COUNT] = {0};
    for (int t = 0; t < s->n_tensors; t++) kinds += !seen[s->tensors[t].kind]++;
    CHECK_EQ_I64(count_prefix(gr, "t"), s->n_tensors);
    CHECK_EQ_I64(count_prefix(gr, "_key_"), kinds);
    /* tensors + axes + 2 per legend row + lower bound line and label, persistent label, boundary and label */
    CHECK_EQ_I64(agnnodes(gr), s->n_tensors + axis_nodes(gr, s->n_steps) + 2 * kinds + 5);
    /* every box is the same affine map of (step, byte offset), fixed by the extreme tensors */
    int xa = 0, xb = 0, ya = 0, yb = 0;
    for (int t = 1; t < s->n_tensors; t++) {
        const int64_t *o = plan.arena.offsets;
        if (s->tensors[t].first < s->tensors[xa].first) xa = t;
        if (s->tensors[t].first > s->tensors[xb].first) xb = t;
        if (o[t] < o[ya]) ya = t;
        if (o[t] > o[yb]) yb = t;
    }
    CHECK(xa != xb && ya != yb);
    char name[32];
    double x0, y0, w0, h0, x1, y1, w1, h1, sx, sy;
    snprintf(name, sizeof name, "t%d", xa);
    box_of(agnode(gr, name, 0), &x0, &y0, &w0, &h0);
    snprintf(name, sizeof name, "t%d", xb);
    box_of(agnode(gr, name, 0), &x1, &y1, &w1, &h1);
    sx = ((x1 - w1 / 2) - (x0 - w0 / 2)) / (s->tensors[xb].first - s->tensors[xa].first);
    double left0 = (x0 - w0 / 2) - sx * s->tensors[xa].first;
    snprintf(name, sizeof name, "t%d", ya);
    box_of(agnode(gr, name, 0), &x0, &y0, &w0, &h0);
    snprintf(name, sizeof name, "t%d", yb);
    box_of(agnode(gr, name, 0), &x1, &y1, &w1, &h1);
    sy = ((y1 - h1 / 2) - (y0 - h0 / 2)) / (double)(plan.arena.offsets[yb] - plan.arena.offsets[ya]);
    double bottom0 = (y0 - h0 / 2) - sy * (double)plan.arena.offsets[ya];
    int bad = 0, svg_bad = 0;
    for (int t = 0; t < s->n_tensors; t++) {
        const yp_tensor *tt = &s->tensors[t];
        double x, y, w, h;
        snprintf(name, sizeof name, "t%d", t);
        Agnode_t *n = agnode(gr, name, 0);
        if (!n) { bad++; continue; }
        box_of(n, &x, &y, &w, &h);
        double left = left0 + sx * tt->first, bottom = bottom0 + sy * (double)plan.arena.offsets[t];
        bad += fabs(x - w / 2 - left) > 0.05 || fabs(w - sx * (tt->last + 1 - tt->first)) > 0.05 ||
               fabs(y - h / 2 - bottom) > 0.05 || fabs(h - sy * (double)yp_align_up(tt->bytes, plan.arena.align)) > 0.05;
        bad += !strcmp(attr(n, "fillcolor"), "");
        bad += agget(n, "label") == NULL || strcmp(attr(n, "label"), "") != 0; /* no name drawn by a reader */
        if (t % 7 == 0) svg_bad += !svg_box_matches(svg, n);
    }
    CHECK_EQ_I64(bad, 0);
    CHECK_EQ_I64(svg_bad, 0);
    char b1[32];
    CHECK_STR_HAS(attr(gr, "label"), yp_fmt_bytes(plan.arena.size, b1, sizeof b1));
    CHECK_STR_HAS(attr(gr, "label"), yp_fmt_bytes(plan.arena.lower_bound, b1, sizeof b1));
    CHECK_STR_HAS(attr(gr, "label"), "ratio 1.0");
    free(svg);
    agclose(gr);
}

typedef struct { int s0, s1, rep; } col;

/* Validation's stacks, worked out here: training's whole-step tensors (the kinds the arena packs
 * first), plus the evaluation pass's own live bytes (its tensors that alias training's aside). */
static int64_t whole[8], val_alias[YP_KIND_COUNT];
static void val_terms(void) {
    memset(whole, 0, sizeof whole), memset(val_alias, 0, sizeof val_alias);
    const yp_schedule *s = plan.sched, *e = plan.val.sched;
    for (int t = 0; t < s->n_tensors; t++) {
        yp_kind k = s->tensors[t].kind;
        if (k == YP_KIND_WEIGHT || k == YP_KIND_EMA || k == YP_KIND_LOWP || k == YP_KIND_GRAD || k == YP_KIND_OPTSTATE)
            whole[category(k)] += yp_align_up(s->tensors[t].bytes, plan.arena.align);
    }
    for (int t = 0; t < e->n_tensors; t++)
        if (plan.val.alias[t] >= 0) val_alias[e->tensors[t].kind] += yp_align_up(e->tensors[t].bytes, plan.val.live.align);
}
static int64_t val_cat(int step, int c) {
    int64_t b = whole[c];
    for (int k = 0; k < YP_KIND_COUNT; k++)
        if (category((yp_kind)k) == c) {
            int64_t n = plan.val.live.by_kind[(size_t)step * YP_KIND_COUNT + k] - val_alias[k];
            b += n > 0 ? n : 0;
        }
    return b;
}

static void test_memory_nodes(void) {
    const yp_schedule *s = plan.sched;
    Agraph_t *gr = read_dot("memory");
    CHECK(gr != NULL);
    if (!gr) return;
    val_terms();
    col cols[256], vcols[64];
    int nc = 0, nvc = 0, data = 0, bad = 0, present[8] = {0};
    for (Agnode_t *v = agfstnode(gr); v; v = agnxtnode(gr, v)) {
        int c, s0, s1, rep;
        char kind, id[32];
        if (agnameof(v)[0] == '_') continue;
        data++;
        if (sscanf(agnameof(v), "%c%d.%31s", &kind, &c, id) != 3 || (kind != 'c' && kind != 'v') || c < 0 ||
            c >= (kind == 'c' ? 256 : 64) || sscanf(attr(v, "yp_steps"), "%d-%d", &s0, &s1) != 2 ||
            sscanf(attr(v, "yp_step"), "%d", &rep) != 1) {
            bad++;
            continue;
        }
        int k = 0;
        while (k < 8 && strcmp(cat_ids[k], id)) k++;
        if (kind == 'c') {
            nc = c + 1 > nc ? c + 1 : nc;
            cols[c] = (col){s0, s1, rep};
            bad += k == 8 || atoll(attr(v, "yp_bytes")) != cat_bytes(rep, k);
        } else {
            nvc = c + 1 > nvc ? c + 1 : nvc;
            vcols[c] = (col){s0, s1, rep};
            bad += k == 8 || atoll(attr(v, "yp_bytes")) != val_cat(rep, k);
        }
    }
    CHECK_EQ_I64(bad, 0);
    CHECK(nc > 0 && nc <= 240);
    CHECK(nvc > 0 && nvc <= 60);
    /* the columns partition the steps; the peak and loss steps are columns of their own */
    int expect = 0, next = 0, peak_alone = 0, loss_alone = 0;
    for (int c = 0; c < nc; c++) {
        CHECK_EQ_I64(cols[c].s0, next);
        next = cols[c].s1 + 1;
        for (int t = cols[c].s0; t <= cols[c].s1; t++) CHECK(plan.live.live[t] <= plan.live.live[cols[c].rep]);
        for (int k = 0; k < 8; k++) {
            int has = cat_bytes(cols[c].rep, k) > 0;
            expect += has, present[k] |= has;
        }
        peak_alone |= cols[c].s0 == plan.live.peak_step && cols[c].s1 == plan.live.peak_step;
        loss_alone |= cols[c].s0 == s->loss_step && cols[c].s1 == s->loss_step;
    }
    CHECK_EQ_I64(next, s->n_steps);
    CHECK(peak_alone && loss_alone);
    /* validation's columns partition its pass's steps */
    int64_t val_hi = 0;
    next = 0;
    for (int c = 0; c < nvc; c++) {
        CHECK_EQ_I64(vcols[c].s0, next);
        next = vcols[c].s1 + 1;
        for (int k = 0; k < 8; k++) {
            int has = val_cat(vcols[c].rep, k) > 0;
            expect += has, present[k] |= has;
        }
    }
    CHECK_EQ_I64(next, plan.val.sched->n_steps);
    for (int t = 0; t < plan.val.sched->n_steps; t++) {
        int64_t v = 0;
        for (int k = 0; k < 8; k++) v += val_cat(t, k);
        val_hi = v > val_hi ? v : val_hi;
    }
    CHECK_EQ_I64(data, expect);
    int cats = 0, phases = 2; /* the first training phase and validation's band */
    for (int k = 0; k < 8; k++) cats += present[k];
    for (int i = 1; i < s->n_steps; i++) { /* recompute is drawn inside the backward band */
        yp_phase a = s->steps[i - 1].phase == YP_PHASE_RECOMPUTE ? YP_PHASE_BACKWARD : s->steps[i - 1].phase;
        yp_phase b = s->steps[i].phase == YP_PHASE_RECOMPUTE ? YP_PHASE_BACKWARD : s->steps[i].phase;
        phases += a != b;
    }
    CHECK_EQ_I64(count_prefix(gr, "_key_"), cats + 1); /* and the fixed cost's */
    CHECK_EQ_I64(count_prefix(gr, "_phase"), phases);
    const int64_t fixed = plan.gpu.fixed_bytes;
    int64_t hi = plan.arena_bytes > plan.live.peak ? plan.arena_bytes : plan.live.peak;
    hi = (hi > val_hi ? hi : val_hi) + fixed;
    int64_t top = plan.gpu.mem_bytes > hi && plan.gpu.mem_bytes < 3 * hi ? plan.gpu.mem_bytes : hi;
    top += top / 12;
    /* the card (line unless above the chart, label), the arena on the fixed cost (line + label),
     * the fixed band, the boundary (line + label), the peak's box, stem and label, validation's
     * label; --reserve's line and label when it keeps some free */
    int card_line = plan.gpu.mem_bytes <= top, reserve = plan.reserve_bytes > 0 ? 2 : 0;
    CHECK_EQ_I64(agnnodes(gr), data + axis_nodes(gr, s->n_steps) + 2 * (cats + 1) + phases + 10 + card_line + reserve);
    CHECK((agnode(gr, "_card", 0) != NULL) == card_line);
    static const char *const marks[] = {"_card_label", "_arena", "_arena_label", "_fixed", "_boundary",
                                        "_peak_box", "_peak_label", "_val_label"};
    for (size_t i = 0; i < sizeof marks / sizeof marks[0]; i++) CHECK(agnode(gr, (char *)marks[i], 0) != NULL);
    /* every stack stands on the fixed cost: the first box of column 0 starts at its height, and
     * the arena line is at arena + fixed, the table's figure */
    double x, y, w, h, fx, fy, fw, fh;
    Agnode_t *band = agnode(gr, "_fixed", 0), *arena = agnode(gr, "_arena", 0);
    if (band && arena) {
        box_of(band, &fx, &fy, &fw, &fh);
        const double y0 = fy - fh / 2, scale = 440.0 / (double)top; /* the frame's height in points */
        CHECK(fabs(fh - (double)fixed * scale) < 0.6);
        box_of(arena, &x, &y, &w, &h);
        CHECK(fabs(y - (y0 + (double)(plan.arena_bytes + fixed) * scale)) < 0.6);
        int lowest = 8;
        for (int k = 7; k >= 0; k--)
            if (cat_bytes(cols[0].rep, k) > 0) lowest = k;
        char name[32];
        snprintf(name, sizeof name, "c0.%s", cat_ids[lowest < 8 ? lowest : 0]);
        Agnode_t *c0 = agnode(gr, name, 0);
        CHECK(c0 != NULL);
        if (c0) {
            box_of(c0, &x, &y, &w, &h);
            CHECK(fabs((y - h / 2) - (y0 + fh)) < 0.8);
        }
    }
    Agnode_t *pl = agnode(gr, "_peak_label", 0);
    char b[32], step[32];
    const yp_step *ps = &s->steps[plan.live.peak_step];
    snprintf(step, sizeof step, "step %d ", plan.live.peak_step);
    if (pl) {
        CHECK_STR_HAS(attr(pl, "label"), yp_fmt_bytes(plan.live.peak, b, sizeof b));
        CHECK_STR_HAS(attr(pl, "label"), step);
        CHECK_STR_HAS(attr(pl, "label"), yp_phase_name(ps->phase));
        CHECK_STR_HAS(attr(pl, "label"), ps->node >= 0 ? g->nodes[ps->node].name : ps->label);
    }
    /* the title says what the table says: arena + fixed and its share of the card */
    char pct[16];
    int64_t used = plan.arena_bytes + plan.gpu.fixed_bytes; /* the table's peak GiB: the reserve is not used */
    snprintf(pct, sizeof pct, "%.0f%% of", 100.0 * (double)used / (double)plan.gpu.mem_bytes);
    CHECK_STR_HAS(attr(gr, "label"), yp_fmt_bytes(used, b, sizeof b));
    CHECK_STR_HAS(attr(gr, "label"), pct);
    CHECK_STR_HAS(attr(gr, "label"), "for yoloplan's executor");
    Agnode_t *cl = agnode(gr, "_card_label", 0);
    if (cl) CHECK_STR_HAS(attr(cl, "label"), yp_fmt_bytes(plan.gpu.mem_bytes, b, sizeof b));
    agclose(gr);
}

static void test_graph_nodes(void) {
    Agraph_t *gr = read_dot("graph");
    CHECK(gr != NULL);
    if (!gr) return;
    CHECK_EQ_I64(agnnodes(gr), g->n_layers + 2); /* + input + legend */
    int edges = 0, skips = 0;
    for (int l = 0; l < g->n_layers; l++) edges += g->layers[l].n_from;
    CHECK_EQ_I64(agnedges(gr), edges);
    yp_node_info *info = calloc((size_t)g->n_nodes, sizeof *info);
    yp_err err;
    CHECK(info && yp_graph_infer(g, plan.sched->opts.batch, plan.sched->opts.h, plan.sched->opts.w, info, &err) == 0);
    for (int l = 0; info && l < g->n_layers; l++) {
        char name[16], shape[64], b[32];
        snprintf(name, sizeof name, "L%d", l);
        Agnode_t *n = agnode(gr, name, 0);
        CHECK(n != NULL);
        if (!n) continue;
        yp_shape o = info[g->layers[l].output].out[0];
        snprintf(shape, sizeof shape, "%lldx%lldx%lld", (long long)o.c, (long long)o.h, (long long)o.w);
        CHECK_STR_HAS(attr(n, "label"), shape);
        int64_t saved = 0;
        for (int t = 0; t < plan.sched->n_tensors; t++) {
            const yp_tensor *tt = &plan.sched->tensors[t];
            if (tt->kind == YP_KIND_SAVED && tt->node >= 0 && g->nodes[tt->node].layer == l) saved += tt->bytes;
        }
        CHECK_STR_HAS(attr(n, "label"), yp_fmt_bytes(saved, b, sizeof b));
        int ck = (int)(plan.cand.ckpt_layers >> l & 1);
        CHECK(!strcmp(attr(n, "fillcolor"), ck ? "#f6c47a" : "#dbe9f6"));
        for (Agedge_t *e = agfstin(gr, n); e; e = agnxtin(gr, e)) {
            const char *from = agnameof(agtail(e));
            int skip = from[0] == 'L' && atoi(from + 1) != l - 1;
            skips += skip;
            CHECK(!strcmp(attr(e, "style"), skip ? "dashed" : ""));
        }
    }
    free(info);
    static const int pairs[4][2] = {{4, 16}, {6, 12}, {10, 22}, {14, 19}};
    for (int i = 0; i < 4; i++) {
        char a[16], h[16];
        snprintf(a, sizeof a, "L%d", pairs[i][0]), snprintf(h, sizeof h, "L%d", pairs[i][1]);
        Agnode_t *na = agnode(gr, a, 0), *nh = agnode(gr, h, 0);
        Agedge_t *e = na && nh ? agedge(gr, na, nh, NULL, 0) : NULL;
        CHECK(e && !strcmp(attr(e, "style"), "dashed"));
    }
    CHECK(skips >= 6); /* the four above plus Detect's inputs from 17 and 20 */
    agclose(gr);
}

static void test_png(void) {
    yp_err err;
    char sub[96];
    snprintf(sub, sizeof sub, "%s/png/nested", dir); /* created with its parent */
    CHECK(yp_timeline_write(&plan, sub, "png", &err) == 0);
    static const char *const bases[] = {"memory", "arena", "graph"};
    for (int i = 0; i < 3; i++) {
        char path[160];
        size_t len = 0;
        snprintf(path, sizeof path, "%s/%s.png", sub, bases[i]);
        char *png = read_all(path, &len);
        CHECK(png && len > 1000 && !memcmp(png, "\x89PNG\r\n\x1a\n", 8));
        free(png);
    }
}

static void test_errors(void) {
    yp_err err;
    char file[96], bad[128];
    snprintf(file, sizeof file, "%s/regular_file", dir);
    FILE *f = fopen(file, "w");
    CHECK(f != NULL);
    if (f) fclose(f);
    snprintf(bad, sizeof bad, "%s/sub", file);
    err.msg[0] = 0;
    CHECK(yp_timeline_write(&plan, bad, "svg", &err) == -1);
    CHECK_STR_HAS(err.msg, file);
    CHECK(strchr(err.msg, '\n') == NULL);
    CHECK(yp_timeline_write(&plan, dir, "jpg", &err) == -1);
    CHECK_STR_HAS(err.msg, "jpg");
}

/* Removes what the cases wrote (and nothing else: unknown files make the last rmdir fail). */
static void remove_outputs(void) {
    static const char *const files[] = {"memory.dot", "memory.svg", "arena.dot", "arena.svg", "graph.dot",
                                        "graph.svg", "png/nested/memory.dot", "png/nested/memory.png",
                                        "png/nested/arena.dot", "png/nested/arena.png", "png/nested/graph.dot",
                                        "png/nested/graph.png", "regular_file", "png/nested", "png", ""};
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        char path[128];
        snprintf(path, sizeof path, "%s/%s", dir, files[i]);
        remove(path);
    }
}

int main(void) {
    yp_err err;
    yp_gpu gpu;
    g = yp_ir_load_file(YP_MODELS_DIR "/yolov5s.json", &err);
    yp_candidate c = yp_candidate_default();
    c.batch = 8, c.img_w = c.img_h = 320;
    c.ckpt_layers = 1u << 2 | 1u << 4 | 1u << 6;
    if (!g || yp_gpu_parse("8GB", &gpu, &err) || yp_plan_build(g, &c, &gpu, 0, 0, &plan, &err) || !mkdtemp(dir)) {
        fprintf(stderr, "test_timeline: setup failed: %s\n", err.msg);
        return 1;
    }
    YP_RUN(test_write_svg);
    YP_RUN(test_arena_nodes);
    YP_RUN(test_memory_nodes);
    YP_RUN(test_graph_nodes);
    YP_RUN(test_png);
    YP_RUN(test_errors);
    int rc = yp_test_summary();
    if (rc == 0) remove_outputs(); /* the pictures of a failed run are kept for a look */
    else printf("pictures kept in %s\n", dir);
    yp_plan_free(&plan);
    yp_graph_free(g);
    return rc;
}
