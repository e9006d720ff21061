/* plan_args.h - the options of the planner command (`yoloplan --gpu 8GB ...`), parsed and
 * checked into a search; shared by the table, what-if and timeline outputs. */
#ifndef YP_PLAN_ARGS_H
#define YP_PLAN_ARGS_H

#include "yp_dataset.h"
#include "yp_executor.h"
#include "yp_search.h"
#include "yp_torch_host.h"

/* The margin kept free by default for yoloplan's executor, percent of the card: room for the
 * error of the fixed-cost estimate (CUDA context, library handles, driver reserve: yp_gpu.h).
 * --reserve SIZE replaces it, --reserve 0 turns it off. */
#define YP_DEFAULT_MARGIN_PCT 5

typedef struct {
    yp_search_opts search;
    yp_graph *owned[YP_SEARCH_MAX_MODELS]; /* graphs loaded for --model (freed by plan_args_free) */
    yp_gpu gpu;
    char card_model[YP_SCRATCH_NAME_MAX]; /* --gpu auto: the card's cuDNN scratch model ("" otherwise) */
    yp_backend *card;        /* --gpu auto: the instance on the card, which its model is asked of (owned) */
    yp_exec_models models;   /* the backends' conv scratch models (--scratch, --gpu auto, --load-plan), asked
                              * of `card` where it is theirs; plans made with them must not outlive these */
    int64_t reserve;
    int top_k;               /* rows shown: --top K (per model with several models); 0 with --all: every row */
    int top_given;           /* --top or --all was given */
    int reserve_given;       /* --reserve was given: else yoloplan's target keeps YP_DEFAULT_MARGIN_PCT free */
    int json;
    int whatif;              /* --batch with one model and one size: fits? and remedies */
    unsigned remedy_prec_mask; /* precisions a what-if remedy may switch to: all, fp32 for a CPU scratch model */
    const char *save_plan;   /* --save-plan FILE */
    const char *load_plan;   /* --load-plan FILE */
    int load_on_gpu;         /* --load-plan with --gpu: does the saved plan fit that card (gpu, reserve)? */
    const char *timeline;    /* --timeline DIR */
    const char *format;      /* --format svg|png */
    int row;                 /* --row K (1-based), 0 = the chosen plan */
    int64_t n_images;        /* dataset images (sizes the RAM cache), 0 unknown */
    int data_nc;             /* classes from --data (0: the model's own) */
    int has_data;
    const char *data_path;   /* --data */
    yp_dataset_stats data_stats;
    int torch;               /* --target pytorch: predict Ultralytics train.py (cli/cmd_torch.c) */
    int torch_profile;       /* --profile autobatch: AutoBatch's probe (implies --target pytorch) */
    int torch_amp;           /* train.py's AMP: on unless --precision fp32 */
    int64_t torch_max_batch; /* the largest --batch-size searched (--max-batch; 1024 by default) */
    int torch_epochs;        /* --epochs for the speed prediction (300, train.py's default) */
    int torch_cpus;          /* --cpus: the training machine's CPUs (train.py's workers); 8 by default */
    int64_t n_val_images;    /* --data's validation images (0: none scanned) */
    int torch_workers;       /* --workers: train.py's loader workers at most (8 by default) */
    yp_torch_cache torch_cache; /* --cache [ram|disk] */
    int64_t host_mem;        /* --mem: the training machine's available host memory (default:
                              * this machine's MemAvailable; 0 unknown) */
    int host_mem_given;
} plan_args;

/* Parses argv (argv[0] is the command name or the first option). 0, or -1 with err set; either way
 * plan_args_free releases what it holds. a must not move after it (its models point into it). */
int plan_args_parse(int argc, char **argv, plan_args *a, yp_err *err);
void plan_args_free(plan_args *a);

/* --target pytorch (cli/cmd_torch.c): the report, or AutoBatch's probe with --profile. Exit code. */
int cmd_plan_torch(plan_args *a);

#endif
