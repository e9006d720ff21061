/* yp_timeline.h - Graphviz pictures of a plan (built with libcgraph, laid out and rendered
 * in-process with libgvc; no DOT strings piped to a shell):
 *   DIR/memory.dot + .svg|.png  live bytes at every step, stacked by category, the GPU limit,
 *                               the peak step and the forward/backward boundary;
 *   DIR/arena.dot  + ...        every tensor as a rectangle: life (x) by byte range (y), pinned
 *                               positions (neato -n2), arena size and lower bound in the title;
 *   DIR/graph.dot  + ...        the top-level layers with output shape, saved bytes and recompute
 *                               cost; checkpointed layers highlighted; skip connections drawn;
 *   DIR/remedies.dot + ...     (yp_timeline_remedies_write) what helps when it does not fit. */
#ifndef YP_TIMELINE_H
#define YP_TIMELINE_H

#include "yp_plan.h"
#include "yp_whatif.h"

/* Writes the three pictures of p into dir (created if missing) as DOT plus `format` ("svg" or
 * "png"). 0, or -1 with err set (naming the file that could not be written). */
int yp_timeline_write(const yp_plan *p, const char *dir, const char *format, yp_err *err);

/* DIR/remedies.dot + .svg|.png: the usual out-of-memory decision flow for w's plan (batch,
 * accumulation, image size, smaller model, checkpointing, AMP, freezing, anchors, more GPUs, bigger
 * card), each step with w's saving and time cost, n/a where it does not apply, and the cheapest
 * path to a fit in bold red (reports/timeline_remedies.c says how it is chosen). 0, or -1 with err
 * set. */
int yp_timeline_remedies_write(const yp_whatif *w, const char *dir, const char *format, yp_err *err);

#endif
