/* yp_device_plan.h - the plan a command runs on one device (train, bench-step, val): the fastest
 * plan the search finds for it, or one candidate as given; and, when that does not fit, the best
 * that does. The backend enters as data: the candidate's conv scratch model, alignment and
 * fusions (the executor's yp_exec_candidate_for), the precisions it runs (prec_mask) and the
 * device's memory (a yp_gpu: a card, or the host's budget for a backend whose memory is the
 * host's, yp_gpu_host).
 *
 * Ownership: yp_device_plan_make fills a result whose plan the caller releases with
 * yp_device_plan_free. */
#ifndef YP_DEVICE_PLAN_H
#define YP_DEVICE_PLAN_H

#include "yp_search.h"

typedef struct {
    /* One model (models[0]) at one size; base: the candidate made for the backend (optimizer, EMA,
     * freeze, labels, ...); batch > 0 pins the batch, 0 lets the search take the largest that fits
     * up to max_batch (also the bound of the search for the best when the pinned batch does not fit). */
    yp_search_opts so;
    int as_given;     /* 1: so.base at so.batch (its checkpoints, precision and mosaic), built whether it
                       * fits or not; 0: the search's fastest plan that fits, over batches, checkpoint
                       * sets, so.prec_mask and so.mosaic_mask */
    int find_best;    /* when it does not fit, find the best that does: as_given, the largest batch
                       * below so.batch with the same candidate; else, with the batch pinned and no
                       * row fitting it, the search's fastest with the batch free */
    int64_t n_images; /* the dataset's images, for the realised plan's host figures (0: unknown) */
} yp_device_plan_opts;

typedef struct {
    yp_plan plan;          /* the plan (as_given: built as given; else the search's first row, realised) */
    int have_plan;         /* 0 when the search found no row that fits: nothing to free */
    yp_candidate best;     /* find_best and not fitting: the best that fits; best.batch 0 when none does */
    yp_candidate smallest; /* the search found no row: its configuration needing the least memory, */
    double smallest_bytes; /* and that memory (peak + fixed + reserve) */
} yp_device_plan;

/* Plans for dev as o says. 0 (have_plan says whether a plan was made; plan.fits whether it fits
 * dev), or -1 with err set (a model that does not plan, out of memory). */
int yp_device_plan_make(const yp_device_plan_opts *o, const yp_gpu *dev, yp_device_plan *out, yp_err *err);
void yp_device_plan_free(yp_device_plan *d);

#endif
