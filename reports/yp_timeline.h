/* yp_timeline.h - Graphviz pictures of a plan (built with libcgraph, laid out and rendered
 * in-process with libgvc; no DOT strings piped to a shell):
 *   DIR/memory.dot + .svg|.png  live bytes at every step, stacked by category, the GPU limit,
 *                               the peak step and the forward/backward boundary;
 *   DIR/arena.dot  + ...        every tensor as a rectangle: life (x) by byte range (y), pinned
 *                               positions (neato -n2), arena size and lower bound in the title;
 *   DIR/graph.dot  + ...        the top-level layers with output shape, saved bytes and recompute
 *                               cost; checkpointed layers highlighted; skip connections drawn. */
#ifndef YP_TIMELINE_H
#define YP_TIMELINE_H

#include "yp_plan.h"

/* Writes the three pictures of p into dir (created if missing) as DOT plus `format` ("svg" or
 * "png"). 0, or -1 with err set (naming the file that could not be written). */
int yp_timeline_write(const yp_plan *p, const char *dir, const char *format, yp_err *err);

#endif
