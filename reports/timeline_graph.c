/* timeline_graph.c - DIR/graph.*: the model's top-level layers, laid out by dot. Node "L<i>"
 * shows layer i's index, module, output shape at the plan's training size, the bytes its nodes
 * save for backward (SAVED tensors) and the FLOPs recomputed for it in backward (RECOMPUTE
 * steps). Checkpointed layers are filled orange. Edges follow each layer's `from` list; edges
 * that skip ahead (from != index - 1) are dashed blue. Two more nodes: "input" (the image batch)
 * and "legend".
 *
 * The layer chain is folded into two columns, backbone and head: the head starts at the layer
 * before the first nn.Upsample, and only edges into the next layer constrain the ranks. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "timeline_common.h"
#include "yp_report.h"

typedef struct {
    int64_t saved;     /* bytes of SAVED tensors of the layer's nodes */
    int64_t recompute; /* FLOPs of RECOMPUTE steps on the layer's nodes */
} layer_cost;

static void layer_costs(const yp_plan *p, layer_cost *lc) {
    const yp_schedule *s = p->sched;
    for (int t = 0; t < s->n_tensors; t++)
        if (s->tensors[t].kind == YP_KIND_SAVED && s->tensors[t].node >= 0)
            lc[p->g->nodes[s->tensors[t].node].layer].saved += s->tensors[t].bytes;
    for (int i = 0; i < s->n_steps; i++)
        if (s->steps[i].phase == YP_PHASE_RECOMPUTE && s->steps[i].node >= 0)
            lc[p->g->nodes[s->steps[i].node].layer].recompute += s->steps[i].flops;
}

static const char *fmt_flops(int64_t f, char *buf, size_t n) {
    if (f >= 1000000000) snprintf(buf, n, "%.2f GFLOP", (double)f / 1e9);
    else if (f >= 1000000) snprintf(buf, n, "%.1f MFLOP", (double)f / 1e6);
    else snprintf(buf, n, "%" PRId64 " FLOP", f);
    return buf;
}

/* "256x40x40" or, for several outputs, "255x80x80 255x40x40 ...". */
static void shape_str(const yp_node_info *in, char *buf, size_t n) {
    size_t o = 0;
    buf[0] = 0;
    for (int i = 0; i < in->n_out && o < n; i++)
        o += (size_t)snprintf(buf + o, n - o, "%s%" PRId64 "x%" PRId64 "x%" PRId64, i ? "\n" : "", in->out[i].c,
                              in->out[i].h, in->out[i].w);
}

/* The layer where the head starts (the one before the first upsample), or -1. */
static int head_start(const yp_graph *g) {
    for (int l = 2; l < g->n_layers; l++)
        if (!strcmp(g->layers[l].module, "nn.Upsample")) return l - 1;
    return -1;
}

static Agnode_t *layer_node(Agraph_t *sub, const yp_plan *p, int l, const yp_node_info *info, const layer_cost *lc) {
    const yp_layer *ly = &p->g->layers[l];
    char name[16], shape[160], b[32], fl[32], label[512];
    int ck = yp_ckpt_has(p->cand.ckpt_layers, l);
    snprintf(name, sizeof name, "L%d", l);
    shape_str(&info[ly->output], shape, sizeof shape);
    snprintf(label, sizeof label, "%d  %s%s\n%s\nsaved %s\nrecompute %s", l, ly->module,
             ck ? "  (checkpointed)" : "", shape, yp_fmt_bytes(lc[l].saved, b, sizeof b),
             fmt_flops(lc[l].recompute, fl, sizeof fl));
    Agnode_t *n = agnode(sub, name, 1);
    if (!n) return NULL;
    tl_set(n, "label", label);
    if (ck) {
        tl_set(n, "fillcolor", "#f6c47a");
        tl_set(n, "penwidth", "2");
    }
    return n;
}

static int add_edges(Agraph_t *g, Agnode_t **nodes, Agnode_t *input, const yp_graph *gr, int head) {
    for (int l = 0; l < gr->n_layers; l++)
        for (int k = 0; k < gr->layers[l].n_from; k++) {
            int from = gr->layers[l].from[k];
            Agedge_t *e = agedge(g, from == YP_INPUT_IMAGE ? input : nodes[from], nodes[l], NULL, 1);
            if (!e) return -1;
            if (from != YP_INPUT_IMAGE && from != l - 1) {
                tl_set(e, "style", "dashed");
                tl_set(e, "color", "#1f77b4");
                tl_set(e, "penwidth", "1.6");
                tl_set(e, "constraint", "false");
            } else if (l == head) {
                tl_set(e, "constraint", "false");
            }
        }
    return 0;
}

static const char legend_html[] =
    "<TABLE BORDER=\"0\" CELLBORDER=\"1\" CELLSPACING=\"0\" CELLPADDING=\"5\">"
    "<TR><TD BGCOLOR=\"#dbe9f6\" ALIGN=\"LEFT\">layer: conv outputs saved for backward</TD></TR>"
    "<TR><TD BGCOLOR=\"#f6c47a\" ALIGN=\"LEFT\">checkpointed: inner convs recomputed in backward</TD></TR>"
    "<TR><TD ALIGN=\"LEFT\"><FONT COLOR=\"#1f77b4\">- - - &gt;</FONT> skip connection (from a layer "
    "other than the previous)</TD></TR>"
    "<TR><TD ALIGN=\"LEFT\">saved = bytes kept for backward; recompute = FLOPs redone in backward</TD></TR>"
    "</TABLE>";

/* Builds the graph into g. 0, or -1 on OOM. */
static int build(Agraph_t *g, const yp_plan *p, const yp_node_info *info, const layer_cost *lc, Agnode_t **nodes) {
    const yp_graph *gr = p->g;
    const yp_sched_opts *o = &p->sched->opts;
    char label[96];
    int head = head_start(gr);
    Agraph_t *bb = agsubg(g, head > 0 ? "cluster_backbone" : "layers", 1);
    Agraph_t *hd = head > 0 ? agsubg(g, "cluster_head", 1) : bb;
    if (!bb || !hd) return -1;
    tl_set(bb, "label", "backbone");
    tl_set(hd, "label", "head");
    Agnode_t *in = agnode(bb, "input", 1);
    if (!in) return -1;
    snprintf(label, sizeof label, "images\n%" PRId64 "x%dx%" PRId64 "x%" PRId64, o->batch, gr->in_channels, o->h,
             o->w);
    tl_set(in, "label", label);
    tl_set(in, "fillcolor", "#eeeeee");
    for (int l = 0; l < gr->n_layers; l++)
        if (!(nodes[l] = layer_node(head > 0 && l >= head ? hd : bb, p, l, info, lc))) return -1;
    Agnode_t *lg = agnode(g, "legend", 1);
    if (!lg) return -1;
    char *html = agstrdup_html(g, (char *)legend_html);
    tl_set(lg, "label", html);
    agstrfree(g, html);
    tl_set(lg, "shape", "plaintext");
    tl_set(lg, "style", "");
    return add_edges(g, nodes, in, gr, head);
}

int tl_graph_write(GVC_t *gvc, const yp_plan *p, const char *dir, const char *format, yp_err *err) {
    const yp_graph *gr = p->g;
    const yp_sched_opts *o = &p->sched->opts;
    yp_node_info *info = calloc((size_t)gr->n_nodes, sizeof *info);
    layer_cost *lc = calloc((size_t)gr->n_layers, sizeof *lc);
    Agnode_t **nodes = calloc((size_t)gr->n_layers, sizeof *nodes);
    Agraph_t *g = NULL;
    char cand[256], title[512], b[32], fl[32];
    int rc = -1;
    if (!info || !lc || !nodes) {
        yp_err_set(err, "%s/graph.dot: out of memory", dir);
        goto fail;
    }
    if (yp_graph_infer(gr, o->batch, o->h, o->w, info, err)) goto fail;
    layer_costs(p, lc);
    yp_report_candidate_str(gr, &p->cand, cand, sizeof cand);
    snprintf(title, sizeof title,
             "Layers, for yoloplan's executor: %s\nsaved for backward %s, recomputed in backward %s per step", cand,
             yp_fmt_bytes(p->saved_bytes, b, sizeof b), fmt_flops(p->sched->recompute_flops, fl, sizeof fl));
    g = agopen("graph", Agdirected, NULL);
    if (!g) {
        yp_err_set(err, "%s/graph.dot: out of memory", dir);
        goto fail;
    }
    tl_flow_style(g, title, "0.3", "0.3");
    if (build(g, p, info, lc, nodes)) {
        yp_err_set(err, "%s/graph.dot: out of memory", dir);
        goto fail;
    }
    rc = tl_emit(gvc, g, "dot", dir, "graph", format, err);
fail:
    if (g) agclose(g);
    free(nodes);
    free(lc);
    free(info);
    return rc;
}
