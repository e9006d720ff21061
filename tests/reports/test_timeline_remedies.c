/* test_timeline_remedies.c - remedies.dot, the what-if's decision flow, read back with agread: the
 * ten steps in the usual order after "start" and before "fit", each step's saving the what-if's own
 * number for a remedy of its kind, steps that do not apply marked n/a, and the highlighted path the
 * cheapest way to a fit: nothing when the plan fits, else the cheapest remedy that fits alone, else
 * the what-if's combination. */
#include <graphviz/cgraph.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "yp_ir.h"
#include "yp_report.h"
#include "yp_test.h"
#include "yp_test_models.h"
#include "yp_timeline.h"

/* Graphviz 2.42 leaks inside its layouts and font handling (tests/lsan.supp says which). */
const char *__lsan_default_suppressions(void);
const char *__lsan_default_suppressions(void) {
    return "leak:libgvc.so\nleak:libgvplugin_neato_layout.so\nleak:libgvplugin_dot_layout.so\n"
           "leak:libgvplugin_pango.so\nleak:libfontconfig.so\nleak:libpango\nleak:libglib\n";
}

static char dir[64] = "/tmp/yp_test_remedies_XXXXXX";

/* The flow's steps in order, with the remedy kind each one draws (card: none). */
static const char *const steps[10] = {"batch", "accumulate", "image", "smaller", "ckpt",
                                      "amp",   "freeze",     "anchors", "gpus",  "card"};
static const int kinds[10] = {YP_REMEDY_BATCH, YP_REMEDY_ACCUMULATE, YP_REMEDY_IMAGE, YP_REMEDY_SMALLER,
                              YP_REMEDY_CKPT,  YP_REMEDY_AMP,        YP_REMEDY_FREEZE, YP_REMEDY_ANCHORS,
                              YP_REMEDY_GPUS,  -1};

static const char *attr(void *obj, const char *name) {
    const char *v = agget(obj, (char *)name);
    return v ? v : "";
}

static Agraph_t *read_remedies(void) {
    char path[128];
    snprintf(path, sizeof path, "%s/remedies.dot", dir);
    FILE *f = fopen(path, "r");
    if (!f) return NULL;
    Agraph_t *gr = agread(f, NULL);
    fclose(f);
    return gr;
}

static int64_t total(const yp_remedy *r) { return r->plan.device_bytes + r->extra_bytes; }
static int fits(const yp_remedy *r) { return total(r) <= r->plan.gpu.mem_bytes; }

/* The what-if's remedy of kind k whose saving is `saves` (NULL: none). */
static const yp_remedy *remedy_saving(const yp_whatif *w, int k, int64_t saves) {
    const yp_remedy *all[3 * YP_WHATIF_MAX];
    int n = 0;
    for (int i = 0; i < w->n; i++) all[n++] = &w->r[i];
    for (int i = 0; i < w->n_notes; i++) all[n++] = &w->notes[i];
    for (int i = 0; i < w->n_gpus; i++) all[n++] = &w->gpus[i];
    for (int i = 0; i < n; i++)
        if ((int)all[i]->kind == k && all[i]->has_plan && w->base.device_bytes - total(all[i]) == saves) return all[i];
    return NULL;
}

typedef struct {
    int on_path[10];
    int start_fit;     /* start -> fit is on the path */
    char fit_label[400];
} path_seen;

/* Checks what every picture has: 13 nodes, the chain in flow order, each step's numbers the
 * what-if's; returns the path as drawn. */
static void check_common(const yp_whatif *w, path_seen *out) {
    path_seen ps;
    memset(&ps, 0, sizeof ps);
    *out = ps;
    Agraph_t *gr = read_remedies();
    REQUIRE(gr != NULL);
    CHECK_EQ_I64(agnnodes(gr), 13); /* start, ten steps, fit, legend */
    Agnode_t *start = agnode(gr, "start", 0), *fit = agnode(gr, "fit", 0);
    REQUIRE(start && fit);
    char need[32];
    yp_fmt_bytes(w->base.device_bytes - w->base.reserve_bytes, need, sizeof need);
    CHECK_STR_HAS(attr(start, "label"), need);
    Agnode_t *prev = start;
    for (int k = 0; k < 10; k++) {
        Agnode_t *n = agnode(gr, (char *)steps[k], 0);
        CHECK(n != NULL);
        if (!n) continue;
        CHECK(agedge(gr, prev, n, NULL, 0) != NULL); /* the flow: each step after the one before */
        prev = n;
        ps.on_path[k] = !strcmp(attr(n, "on_path"), "1");
        int na = !strcmp(attr(n, "na"), "1");
        if (na) {
            CHECK_STR_HAS(attr(n, "label"), "n/a: ");
            CHECK(!strcmp(attr(n, "fillcolor"), "#eeeeee"));
            continue;
        }
        if (kinds[k] < 0) { /* the card: the smallest of the table that hold the plan */
            CHECK(w->n_cards > 0);
            if (w->n_cards) CHECK_STR_HAS(attr(n, "label"), w->cards[0].name);
            continue;
        }
        int64_t saves = strtoll(attr(n, "saves_bytes"), NULL, 10);
        const yp_remedy *r = remedy_saving(w, kinds[k], saves);
        CHECK(r != NULL);
        if (!r) continue;
        CHECK_STR_HAS(attr(n, "label"), r->what);
        CHECK(!strcmp(attr(n, "fits"), fits(r) ? "1" : "0"));
        CHECK(!strcmp(attr(n, "fillcolor"), fits(r) ? "#d9f2d9" : "#dbe9f6"));
        char b[32];
        CHECK_STR_HAS(attr(n, "label"), yp_fmt_bytes(saves < 0 ? -saves : saves, b, sizeof b));
        CHECK(atof(attr(n, "time_cost")) - r->time_cost < 1e-5 && r->time_cost - atof(attr(n, "time_cost")) < 1e-5);
    }
    CHECK(agedge(gr, prev, fit, NULL, 0) != NULL);
    /* the path's edges: from start through the steps on it to fit, and no other */
    Agnode_t *at = start;
    int edges = 0;
    for (Agnode_t *n = agfstnode(gr); n; n = agnxtnode(gr, n))
        for (Agedge_t *e = agfstout(gr, n); e; e = agnxtout(gr, e)) edges += !strcmp(attr(e, "on_path"), "1");
    int hops = 0;
    while (at != fit && hops < 12) {
        Agedge_t *next = NULL;
        for (Agedge_t *e = agfstout(gr, at); e; e = agnxtout(gr, e))
            if (!strcmp(attr(e, "on_path"), "1")) next = e;
        if (!next) break;
        hops++;
        at = aghead(next);
        if (at == fit) snprintf(ps.fit_label, sizeof ps.fit_label, "%s", attr(next, "label"));
        else CHECK(!strcmp(attr(at, "on_path"), "1"));
    }
    if (edges > 0) CHECK(at == fit);
    CHECK_EQ_I64(edges, hops);
    ps.start_fit = edges == 1 && agedge(gr, start, fit, NULL, 0) && hops == 1;
    agclose(gr);
    *out = ps;
}

static yp_graph *load(const char *name) { return yp_test_model(name); }

/* Runs the what-if of model@img batch b precision p on a card of `card` with the default 5 %
 * margin and draws it. */
static int draw(yp_graph *g, yp_graph *smaller, const char *card, int64_t img, int64_t b, yp_precision p,
                const char *format, yp_whatif *w) {
    yp_gpu gpu;
    yp_err err;
    if (yp_gpu_parse(card, &gpu, &err)) return -1;
    yp_candidate c = yp_candidate_default();
    c.batch = b, c.img_w = c.img_h = img, c.precision = p;
    yp_whatif_opts o = {g, smaller, NULL, &gpu, gpu.mem_bytes * 5 / 100, (1u << YP_PREC_COUNT) - 1, 0};
    if (yp_whatif_run(&o, &c, w, &err)) return fprintf(stderr, "what-if: %s\n", err.msg), -1;
    if (yp_timeline_remedies_write(w, dir, format, &err)) {
        fprintf(stderr, "remedies: %s\n", err.msg);
        yp_whatif_free(w);
        return -1;
    }
    return 0;
}

/* Out of memory, some remedies fit alone: the path runs through the cheapest of them, and AMP is
 * n/a on an AMP plan (fewer anchors too: no copy with fewer anchors was given). */
static void test_single_remedy(void) {
    yp_graph *g = load("yolov5s"), *n = load("yolov5n");
    yp_whatif w;
    REQUIRE(g && n && draw(g, n, "8GB", 640, 160, YP_PREC_AMP_FP16, "svg", &w) == 0);
    CHECK(!w.base.fits);
    path_seen ps;
    check_common(&w, &ps);
    int on = -1, count = 0;
    for (int k = 0; k < 10; k++)
        if (ps.on_path[k]) on = k, count++;
    CHECK_EQ_I64(count, 1);
    /* the cheapest in time of the flow's remedies that fit alone, software first */
    const yp_remedy *best = NULL;
    for (int i = 0; i < w.n; i++) {
        const yp_remedy *r = &w.r[i];
        int in_flow = 0;
        for (int k = 0; k < 8; k++) in_flow |= (int)r->kind == kinds[k];
        if (in_flow && fits(r) && (!best || r->time_cost < best->time_cost)) best = r;
    }
    int n_fit = 0;
    for (int i = 0; i < w.n; i++) n_fit += fits(&w.r[i]);
    CHECK(n_fit >= 3); /* several fit alone: the path picks one */
    REQUIRE(best != NULL && on >= 0);
    CHECK_EQ_I64(kinds[on], (long long)best->kind);
    Agraph_t *gr = read_remedies();
    REQUIRE(gr != NULL);
    Agnode_t *amp = agnode(gr, "amp", 0), *anchors = agnode(gr, "anchors", 0), *node = agnode(gr, (char *)steps[on], 0);
    CHECK(amp && !strcmp(attr(amp, "na"), "1"));
    if (amp) CHECK_STR_HAS(attr(amp, "label"), "n/a: the plan is amp-fp16 already");
    CHECK(anchors && !strcmp(attr(anchors, "na"), "1"));
    CHECK(node && atof(attr(node, "time_cost")) - best->time_cost < 1e-5);
    Agnode_t *gpus = agnode(gr, "gpus", 0);
    CHECK(gpus && !strcmp(attr(gpus, "na"), "0"));
    if (gpus) CHECK_EQ_I64(strtoll(attr(gpus, "saves_bytes"), NULL, 10),
                           w.base.device_bytes - total(&w.gpus[w.n_gpus - 1])); /* the fewest GPUs that fit */
    agclose(gr);
    yp_whatif_free(&w);
    yp_graph_free(g);
    yp_graph_free(n);
}

/* The plan fits: start -> fit is the path, more GPUs and a bigger card are not needed. */
static void test_fits_as_is(void) {
    yp_graph *g = load("yolov5s"), *n = load("yolov5n");
    yp_whatif w;
    REQUIRE(g && n && draw(g, n, "8GB", 320, 8, YP_PREC_FP32, "png", &w) == 0);
    CHECK(w.base.fits);
    path_seen ps;
    check_common(&w, &ps);
    CHECK(ps.start_fit);
    CHECK_STR_HAS(ps.fit_label, "fits as it is");
    for (int k = 0; k < 10; k++) CHECK(!ps.on_path[k]);
    Agraph_t *gr = read_remedies();
    REQUIRE(gr != NULL);
    static const char *const needless[] = {"gpus", "card"};
    for (int i = 0; i < 2; i++) {
        Agnode_t *s = agnode(gr, (char *)needless[i], 0);
        CHECK(s && !strcmp(attr(s, "na"), "1"));
        if (s) CHECK_STR_HAS(attr(s, "label"), "not needed: the plan fits");
    }
    Agnode_t *amp = agnode(gr, "amp", 0); /* an fp32 plan: AMP applies */
    CHECK(amp && !strcmp(attr(amp, "na"), "0"));
    agclose(gr);
    char png[128];
    snprintf(png, sizeof png, "%s/remedies.png", dir);
    FILE *f = fopen(png, "rb");
    unsigned char sig[8] = {0};
    CHECK(f && fread(sig, 1, 8, f) == 8 && !memcmp(sig, "\x89PNG\r\n\x1a\n", 8));
    if (f) fclose(f);
    yp_whatif_free(&w);
    yp_graph_free(g);
    yp_graph_free(n);
}

/* Nothing fits alone: the path runs through the steps of the what-if's combination, and the edge
 * into "fit" names it with its saving. */
static void test_combination(void) {
    yp_graph *g = load("yolov5l"), *m = load("yolov5m");
    yp_whatif w;
    REQUIRE(g && m && draw(g, m, "2GB", 1280, 16, YP_PREC_FP32, "svg", &w) == 0);
    REQUIRE(w.has_combo);
    path_seen ps;
    check_common(&w, &ps);
    int count = 0;
    for (int k = 0; k < 8; k++) {
        CHECK_EQ_I64(ps.on_path[k], (long long)(w.combo_kinds >> kinds[k] & 1));
        count += ps.on_path[k];
    }
    CHECK(count >= 2);
    CHECK(!ps.on_path[8] && !ps.on_path[9]); /* software before hardware */
    CHECK_STR_HAS(ps.fit_label, "together: ");
    CHECK_STR_HAS(ps.fit_label, w.combo.what);
    yp_whatif_free(&w);
    yp_graph_free(g);
    yp_graph_free(m);
}

static void test_errors(void) {
    yp_whatif w;
    yp_err err;
    memset(&w, 0, sizeof w);
    CHECK(yp_timeline_remedies_write(&w, dir, "svg", &err) == -1);
    CHECK_STR_HAS(err.msg, "no what-if");
    CHECK(yp_timeline_remedies_write(&w, dir, "jpg", &err) == -1);
    CHECK_STR_HAS(err.msg, "jpg");
}

int main(void) {
    if (!mkdtemp(dir)) return 1;
    YP_RUN(test_single_remedy);
    YP_RUN(test_fits_as_is);
    YP_RUN(test_combination);
    YP_RUN(test_errors);
    int rc = yp_test_summary();
    if (rc == 0) {
        static const char *const files[] = {"remedies.dot", "remedies.svg", "remedies.png", ""};
        for (size_t i = 0; i < sizeof files / sizeof *files; i++) {
            char path[128];
            snprintf(path, sizeof path, "%s/%s", dir, files[i]);
            remove(path);
        }
    } else printf("pictures kept in %s\n", dir);
    return rc;
}
