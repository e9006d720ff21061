/* yp_torch_report.h - the PyTorch target's answer in the user's units (`yoloplan --gpu G
 * --target pytorch`): the GPU_mem train.py prints, what nvidia-smi shows, the peak step, the
 * --batch-size to pass, AutoBatch's choice beside it, a what-if with train.py's remedies, the
 * training speed (images/s, an epoch, the run's hours), and AutoBatch's probe (--profile
 * autobatch). Text and JSON (reports/JSON.md). Every figure comes
 * from planner/yp_torch_train.h and planner/yp_torch_speed.h; nothing here recomputes them.
 * Ownership: the JSON builders return a new cJSON tree the caller deletes. */
#ifndef YP_TORCH_REPORT_H
#define YP_TORCH_REPORT_H

#include <stdio.h>

#include <cjson/cJSON.h>

#include "yp_torch_host.h"
#include "yp_torch_speed.h"
#include "yp_torch_train.h"

#define YP_AUTOBATCH_SIZES 5

typedef struct {
    const yp_gpu *gpu;
    const char *model;
    yp_torch_train_opts opts;   /* the configuration (opts.batch: the what-if's, else unused) */
    int64_t capacity, context, reserve; /* what PyTorch may use (after --reserve), what nvidia-smi adds */
    double margin;
    int64_t max_batch;
    /* the recommendation */
    int64_t rec_batch;          /* 0: not even batch 1 fits */
    yp_torch_train_result rec;
    /* AutoBatch */
    int has_autobatch;
    yp_torch_probe_row rows[YP_AUTOBATCH_SIZES];
    int n_rows;
    yp_torch_probe_start start;
    double ab_fraction;         /* 0.8 */
    int64_t ab_batch;           /* its choice; -1 when no row succeeded */
    int ab_anomaly;
    double ab_predicted;        /* the fraction it logs */
    yp_torch_train_result ab;   /* train.py at its choice, on the card */
    /* the what-if (--batch) */
    int whatif;
    yp_torch_train_result need; /* the configuration without a capacity: what it takes */
    yp_torch_train_result base; /* ... on the card */
    yp_torch_remedy remedies[YP_TORCH_MAX_REMEDIES];
    int n_remedies;
    /* the speed (planner/yp_torch_speed.h) at the what-if's batch, else the recommended one */
    int has_speed;
    int speed_coco;             /* the dataset is COCO's, assumed (no --data) */
    yp_torch_speed speed;
    /* the host (planner/yp_torch_host.h) at the speed's batch */
    int has_host;
    yp_torch_host_opts host_opts; /* as train.py runs (a refused --cache ram: no cache) */
    yp_torch_cache cache_asked;   /* --cache as given */
    yp_torch_cache cache;         /* what train.py ends up with */
    int cache_refused_train, cache_refused_val; /* check_cache_ram said no (per split) */
    int host_coco;                /* image sizes assumed (COCO's 640x480): no --data */
    yp_torch_host host;
    int64_t host_mem;             /* available on the training machine (0: unknown) */
    int host_mem_here;            /* host_mem is this machine's MemAvailable (no --mem) */
    yp_torch_host_remedy host_remedies[YP_TORCH_MAX_HOST_REMEDIES];
    int n_host_remedies;
} yp_torch_report;

/* "3.91G": train.py's GPU_mem format (bytes / 1e9, %.3g, "G"). Returns buf. */
const char *yp_fmt_gpu_mem(int64_t bytes, char *buf, size_t n);

void yp_report_torch(FILE *f, const yp_torch_report *r);
cJSON *yp_report_torch_json(const yp_torch_report *r);

/* --profile autobatch: AutoBatch's log lines (text) or one object per probed batch (JSON). */
void yp_report_autobatch(FILE *f, const yp_torch_report *r);
cJSON *yp_report_autobatch_json(const yp_torch_report *r);

#endif
