/* yp_candidate.h - the knobs of one training configuration (docs/architecture.md §7) and how they map to
 * the schedule options of its training step and of its validation pass. */
#ifndef YP_CANDIDATE_H
#define YP_CANDIDATE_H

#include "yp_host_mem.h"
#include "yp_scratch.h"

typedef enum { YP_PREC_FP32, YP_PREC_AMP_FP16, YP_PREC_AMP_BF16, YP_PREC_COUNT } yp_precision;

typedef struct {
    int64_t batch;
    int64_t img_w, img_h;     /* nominal training size (multiple of the largest stride) */
    yp_precision precision;
    uint64_t ckpt_layers;     /* checkpoint set */
    int mosaic;               /* mosaic on: ~4x the labels per training image */
    yp_optimizer optimizer;
    int ema;
    int freeze;               /* first N layers frozen */
    yp_save_policy policy;
    double labels_per_image;  /* mean labels per source image (dataset scan or default) */
    int multi_scale;          /* --multi-scale: training sizes up to 1.5x the nominal size */
    int val_rect;             /* validation in val.py's rectangular batches (pad 0.5), as train.py
                               * and val.py run it: planned at the largest shape, each side
                               * ceil(img / stride + 0.5) * stride (672 for 640), with every conv's
                               * scratch covering each shape a batch can take; 0: square at the
                               * nominal size (plans saved before the key) */
    /* The conv scratch model (yp_scratch.h): its name, which the candidate's JSON carries ("" is
     * "im2col"), and the rule it resolved to, which it does not (a loader resolves the name again).
     * Set both with yp_candidate_set_scratch; the default is im2col. */
    char scratch[YP_SCRATCH_NAME_MAX];
    yp_scratch_rule scratch_rule;
    /* The arena alignment, bytes: every tensor's offset and rounded size is a multiple of it (the
     * liveness, the arena and the executor's guards use it). A power of two in
     * YP_ALIGN_MIN..YP_ALIGN_MAX; YP_ALIGN_DEFAULT unless a backend needs more
     * (yp_exec_candidate_for). The JSON carries it ("alignment"). */
    int64_t alignment;
    /* The schedule fusions the plan allows (bits 1u << yp_fusion, yp_schedule.h), which the
     * candidate's JSON carries ("fusions": their names; a file without the key allows none): only
     * a backend with the fused entries runs them, so the executor turns them on for its backend
     * (yp_exec_candidate_for) and the planner's own sweep leaves them off (the default). */
    unsigned fusions;
    /* The data pipeline the run loads its images with (yp_host_mem.h): loader workers, batch slots
     * per worker, cache mode. It sizes the plan's host memory, not the arena; the JSON carries it
     * ("workers", "prefetch", "cache"; a file without them has the defaults). */
    yp_pipeline pipe;
} yp_candidate;

#define YP_ALIGN_DEFAULT 256 /* the arena alignment of a candidate that names none */
#define YP_ALIGN_MIN 16
#define YP_ALIGN_MAX 4096

/* Defaults of a YOLOv5 training run: batch 16 at 640, fp32, mosaic, SGD, EMA, no freeze,
 * yoloplan policy, COCO's 7.3 labels per image, rectangular validation, im2col scratch, 256-byte
 * arena alignment, no fusions, 8 loader workers with 2 batches each and no image cache. */
yp_candidate yp_candidate_default(void);

/* Makes name (resolved through r, which may be NULL: yp_scratch_resolve) c's conv scratch model.
 * 0, or -1 with err set and c unchanged. */
int yp_candidate_set_scratch(yp_candidate *c, const char *name, const yp_scratch_resolver *r, yp_err *err);

/* c's conv scratch model as the JSON writes it: "im2col" when none was set. */
const char *yp_candidate_scratch_name(const yp_candidate *c);

/* Refuses a candidate whose scratch model names a rule it does not hold (a name copied without
 * yp_candidate_set_scratch): plan builders call it, so that no plan silently falls back to
 * im2col. 0, or -1 with err set. */
int yp_candidate_check_scratch(const yp_candidate *c, yp_err *err);

/* Refuses an arena alignment that is not a power of two in YP_ALIGN_MIN..YP_ALIGN_MAX, with one
 * line naming candidate.alignment. 0, or -1 with err set. */
int yp_candidate_check_alignment(const yp_candidate *c, yp_err *err);

const char *yp_precision_name(yp_precision p);   /* "fp32", "amp-fp16", "amp-bf16" */
int yp_precision_parse(const char *s);           /* -1 if unknown */
const char *yp_optimizer_name(yp_optimizer o);   /* "sgd", "adam", "adamw" */
int yp_optimizer_parse(const char *s);           /* -1 if unknown */
yp_dtype yp_precision_dtype(yp_precision p);

/* Largest training image side multi-scale can draw: 1.5x, rounded up to the stride. */
void yp_candidate_train_size(const yp_candidate *c, int stride, int64_t *w, int64_t *h);

/* Labels in one training batch: batch x labels per image, x4 with mosaic, rounded up. */
int64_t yp_candidate_labels(const yp_candidate *c, int64_t batch);

/* train.py's --multi-scale sides of c (square, nominal img_w; grid `stride`):
 * randrange(int(0.5 img), int(1.5 img) + stride) // stride * stride, the distinct values ascending
 * into out (room for cap). Returns the count, or -1 when cap is too small. */
int yp_candidate_multiscale_sides(const yp_candidate *c, int stride, int64_t *out, int cap);

/* Schedule options of the training step (worst-case size and labels, the candidate's fusions). */
yp_sched_opts yp_candidate_train_opts(const yp_candidate *c, int stride);

/* The largest validation image: the nominal size, or with val_rect each side ceil(side / s + 0.5) * s,
 * s = max(stride, 32) (val.py's stride). */
void yp_candidate_val_size(const yp_candidate *c, int stride, int64_t *w, int64_t *h);

/* Schedule options of validation: batch 2x, yp_candidate_val_size, no gradients (every layer
 * frozen), letterboxed images without mosaic; with val_rect every conv's scratch covers the rect
 * shapes too. */
yp_sched_opts yp_candidate_val_opts(const yp_candidate *c, int stride, int n_layers);

#endif
