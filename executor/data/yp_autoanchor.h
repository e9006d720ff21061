/* yp_autoanchor.h - YOLOv5's AutoAnchor (utils/autoanchor.py): anchors fitted to a dataset's
 * label sizes by k-means on whitened box sizes, refined by a genetic search on the best-ratio
 * fitness, and the "best possible recall" (BPR) that says how well a set of anchors covers the
 * labels. Used by `train` for a yaml that gives `anchors: N` (a count), as YOLOv5 does.
 *
 * Box sizes are in pixels of the training size: a label's normalised (w, h) times
 * img_size * (image w, h) / max(image w, h), as check_anchors and kmean_anchors compute them.
 * Every random draw comes from a yp_rng seeded by the caller: the same seed gives the same anchors.
 * Defines: yp_anchor_fit, yp_anchor_metric, yp_anchor_kmeans, yp_autoanchor_graph. */
#ifndef YP_AUTOANCHOR_H
#define YP_AUTOANCHOR_H

#include <stdint.h>

#include "yp_augment.h"
#include "yp_error.h"
#include "yp_graph.h"
#include "yp_label_cache.h"

#define YP_ANCHOR_THR 4.0 /* hyp anchor_t: a label matches an anchor within a 4x ratio */

/* How well k anchors (w, h pairs) cover n box sizes: BPR (the share of boxes whose best anchor is
 * within the ratio threshold), anchors above threshold per box, and the fitness kmean_anchors
 * maximises (the mean best ratio of the boxes above threshold). */
typedef struct {
    double bpr, aat, fitness;
} yp_anchor_metric;

yp_anchor_metric yp_anchor_measure(const float *wh, int64_t n, const float *k, int n_k);

/* kmean_anchors(n=n_k, img_size, thr=4, gen): k-means with 30 restarts on the boxes of at least 2
 * pixels (whitened by their standard deviations), or sorted random sizes when there are fewer
 * boxes than anchors; then `gen` generations of mutation (probability 0.9, sigma 0.1, factors
 * clipped to [0.3, 3], anchors to >= 2 px) keeping any improvement of the fitness. Writes n_k
 * anchors to k, sorted by area. Returns 0, or -1 with err set (no boxes, out of memory). */
typedef struct {
    int64_t n_boxes; /* boxes given */
    int64_t n_small; /* of them under 3 px in a side (YOLOv5 warns) */
    int64_t n_used;  /* of at least 2 px in a side: those fitted */
    int kmeans;      /* 1: from k-means; 0: too few boxes, random start */
    yp_anchor_metric before, after; /* of the evolution's start and of the result, over all boxes */
} yp_anchor_fit;

int yp_anchor_kmeans(const float *wh, int64_t n, int n_k, int img_size, int gen, yp_rng *rng, float *k,
                     yp_anchor_fit *fit, yp_err *err);

/* For a graph whose yaml gave `anchors: N` (g->anchors_auto): the box sizes of the split's labels
 * (image sizes read from their headers; images that do not read are skipped), kmean_anchors with
 * nl x na anchors and 1000 generations, assigned smallest first to the levels in stride order;
 * g->anchors takes them and g->anchors_auto becomes 0 (the plan then carries the fitted ones).
 * Writes what happened to *fit. Returns 0, or -1 with err set. */
int yp_autoanchor_graph(yp_graph *g, const yp_labels *labels, int img_size, uint64_t seed, yp_anchor_fit *fit,
                        yp_err *err);

#endif
