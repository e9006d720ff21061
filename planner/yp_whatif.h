/* yp_whatif.h - "will model M at batch B and size S fit, and if not, what helps?" (docs/architecture.md
 * §1 question 3): the plan of one pinned candidate, then the remedies users try, each built as a
 * real plan so its memory and its time cost are what the planner would promise.
 *
 * The answer has four parts:
 *   - the remedies that save memory (at least 1 % of the need), cheapest in time first (batch with
 *     accumulation, image size, AMP, checkpointing, a smaller model, freezing, fewer anchors);
 *   - when none of them fits alone, the cheapest combination that fits (at the largest batch it
 *     allows), and in any case the largest batch of the candidate's own configuration that fits;
 *   - the ones users try that save (almost) nothing on the GPU, each once, with the reason
 *     (bf16 = fp16 bytes, mosaic off keeps the input's size, Adam adds state, the loader's memory
 *     is host memory);
 *   - other hardware, when the candidate does not fit: the smallest cards of the GPU table that
 *     fit it, and its per-GPU memory on 2, 4, 8 GPUs at the same total batch.
 * Ownership: yp_whatif_free releases every plan. */
#ifndef YP_WHATIF_H
#define YP_WHATIF_H

#include "yp_plan.h"

#define YP_WHATIF_MAX 16
#define YP_WHATIF_CARDS 3
#define YP_WHATIF_GPUS 3 /* 2, 4 and 8 GPUs */

/* What a remedy changes (the steps of the usual out-of-memory flow, and the rest). */
typedef enum {
    YP_REMEDY_OTHER,      /* fewer augmentations, loader workers: notes without a plan */
    YP_REMEDY_BATCH,      /* the batch halved, accumulation keeping the nominal batch */
    YP_REMEDY_ACCUMULATE, /* the largest batch that fits, accumulation keeping the nominal batch */
    YP_REMEDY_IMAGE,      /* image -25 % */
    YP_REMEDY_SMALLER,    /* the next smaller model */
    YP_REMEDY_CKPT,       /* a checkpoint set of the front */
    YP_REMEDY_AMP,        /* AMP fp16 or bf16 */
    YP_REMEDY_FREEZE,     /* the backbone frozen */
    YP_REMEDY_ANCHORS,    /* one anchor fewer per level */
    YP_REMEDY_MOSAIC,     /* mosaic off */
    YP_REMEDY_OPTIMIZER,  /* SGD <-> Adam */
    YP_REMEDY_GPUS,       /* the batch over several GPUs */
    YP_REMEDY_COMBO,      /* the cheapest combination */
    YP_REMEDY_KIND_COUNT
} yp_remedy_kind;

typedef struct {
    yp_remedy_kind kind;
    char what[200];      /* "batch 32 (accumulate 2)", "AMP fp16", ... */
    char why[160];       /* a note's reason (it saves almost nothing on the GPU); "" for a remedy */
    const yp_graph *g;
    int has_plan;        /* 0: a note with no plan of its own (the loader's host memory) */
    yp_plan plan;
    int64_t extra_bytes; /* bytes outside the plan the remedy needs as well (DDP's gradient buckets) */
    double time_cost;    /* change in time per image at the nominal batch: +0.04 = 4 % slower */
} yp_remedy;

typedef struct {
    char name[32], desc[64];
    int64_t mem_bytes;
    int64_t need_bytes;  /* the base plan's arena + this card's fixed cost */
} yp_whatif_card;

typedef struct {
    yp_plan base;
    int n;
    yp_remedy r[YP_WHATIF_MAX];            /* save memory; cheapest in time first */
    int n_notes;
    yp_remedy notes[YP_WHATIF_MAX];        /* save (almost) nothing on the GPU, with the reason */
    int has_combo;
    yp_remedy combo;                       /* when no single remedy fits: the cheapest combination that does */
    unsigned combo_kinds;                  /* the remedies combo combines: bit k for yp_remedy_kind k */
    int64_t largest_batch;                 /* of base's configuration (up to YP_MAX_BATCH), 0: not even 1 */
    int n_gpus;
    yp_remedy gpus[YP_WHATIF_GPUS];        /* base's batch split over 2, 4, 8 GPUs (when it does not fit) */
    int n_cards;
    yp_whatif_card cards[YP_WHATIF_CARDS]; /* the smallest table cards that fit base (when it does not) */
} yp_whatif;

typedef struct {
    const yp_graph *g;
    const yp_graph *smaller; /* the next smaller model, or NULL */
    const yp_graph *fewer_anchors; /* the model with one anchor fewer per level, or NULL */
    const yp_gpu *gpu;
    int64_t reserve;         /* kept free on every card considered */
    unsigned prec_mask;      /* precisions a remedy may switch to (bit p), e.g. fp32 only for a CPU scratch model */
    int64_t n_images;        /* training images: size the base plan's RAM image cache (host memory); 0 unknown */
} yp_whatif_opts;

/* Plans c and its remedies. 0, or -1 with err set. */
int yp_whatif_run(const yp_whatif_opts *o, const yp_candidate *c, yp_whatif *out, yp_err *err);
void yp_whatif_free(yp_whatif *w);

#endif
