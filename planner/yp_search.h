/* yp_search.h - the candidate search (docs/architecture.md §7): for each (model, image size, precision,
 * checkpoint-front point, mosaic) the largest batch that fits the GPU, ranked by predicted images
 * per second at the nominal batch of 64.
 *
 * Each structure (model, checkpoint set) is built once at the unit size (yp_family) and scaled;
 * the largest batch comes from the per-step linear bound (exact for the unaligned model), and
 * yp_search_realize then builds the real plan of a row and steps its batch down until the real,
 * aligned arena fits too. Ownership: yp_search fills a result the caller frees with
 * yp_search_free. */
#ifndef YP_SEARCH_H
#define YP_SEARCH_H

#include "yp_front.h"
#include "yp_plan.h"

#define YP_SEARCH_MAX_MODELS 8
#define YP_SEARCH_MAX_SIZES 64
#define YP_MAX_BATCH 1024 /* AutoBatch's ceiling too: the most --max-batch accepts */

typedef struct {
    int n_models;
    const yp_graph *models[YP_SEARCH_MAX_MODELS];
    int n_sizes;
    int64_t size_w[YP_SEARCH_MAX_SIZES], size_h[YP_SEARCH_MAX_SIZES];
    unsigned prec_mask;    /* bit p: precision p is a candidate */
    unsigned mosaic_mask;  /* bit 0: mosaic off, bit 1: mosaic on */
    int ckpt_pinned;       /* 1: only base.ckpt_layers; 0: every point of the front */
    int64_t batch;         /* > 0: pinned batch (rows that do not fit are dropped); 0: largest that fits */
    int64_t max_batch;     /* largest batch searched: the nominal 64 by default, so the recipe's
                            * effective batch is kept (larger batches change the training) */
    yp_candidate base;     /* optimizer, EMA, freeze, policy, labels per image, multi-scale */
} yp_search_opts;

typedef struct {
    int model;             /* index into opts.models */
    yp_candidate cand;
    double peak_bytes;     /* predicted arena peak (unaligned model) */
    yp_timing time;
    unsigned also_prec;    /* yp_search_collapse: precisions (bits) whose row was the same plan, merged here */
    int also_mosaic;       /* yp_search_collapse: 1 when the other mosaic setting's row was merged here */
} yp_row;

typedef struct {
    int n_rows;
    yp_row *rows;          /* feasible candidates, fastest first */
    int64_t n_candidates;  /* configurations evaluated */
    yp_row smallest;       /* the configuration needing the least memory (batch 1), fits or not */
    double smallest_bytes; /* its device bytes (peak + fixed + reserve) */
} yp_search_result;

/* Search options with the defaults: every precision the card supports, mosaic on and off, the
 * whole checkpoint front, largest batch. Models and sizes are left empty. */
yp_search_opts yp_search_opts_default(void);

/* Runs the search for gpu with `reserve` bytes kept free. 0, or -1 with err set. */
int yp_search(const yp_search_opts *o, const yp_gpu *gpu, int64_t reserve, yp_search_result *out, yp_err *err);
void yp_search_free(yp_search_result *r);

/* Builds the real plan of row r; when its aligned arena does not fit and the batch was searched,
 * lowers the batch until it does. 0, or -1 with err set. */
int yp_search_realize(const yp_search_opts *o, const yp_row *r, const yp_gpu *gpu, int64_t reserve,
                      int64_t n_images, yp_plan *out, yp_err *err);

/* Merges rows that are the same plan under another name: the same model, size, batch and
 * checkpoint set, differing only in precision (bf16 and fp16 take the same bytes) or mosaic (the
 * input keeps its size), with peak bytes and images per second equal to 0.1 %. The first row of
 * each such group (fastest, then YOLOv5's defaults) stays and records the others in also_prec and
 * also_mosaic; n_rows becomes the number of distinct plans. */
void yp_search_collapse(yp_search_result *r);

/* The largest batch, up to YP_MAX_BATCH, that fits with row r's configuration (its precision,
 * mosaic and checkpoint set), as yp_search_realize would build it; 0 when not even batch 1 fits.
 * -1 with err set on failure. */
int64_t yp_search_largest_batch(const yp_search_opts *o, const yp_row *r, const yp_gpu *gpu, int64_t reserve,
                                yp_err *err);

/* The candidate the search chooses for one model at one size and a pinned batch (o->batch > 0;
 * o->models[0], o->size_w/h[0]): its fastest row whose real plan fits; when none fits, the row it
 * would rank first on a card with unlimited memory (the same precision, mosaic and checkpoint
 * defaults: AMP where the card runs it faster, mosaic on, no checkpointing). The what-if plans
 * this candidate, so that it and the table give one answer. Returns 1 (fits), 0 (does not fit),
 * or -1 with err set. */
int yp_search_choose(const yp_search_opts *o, const yp_gpu *gpu, int64_t reserve, yp_candidate *out, yp_err *err);

#endif
