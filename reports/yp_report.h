/* yp_report.h - what users read: the plan table (text, aligned, human units) and its JSON
 * (reports/JSON.md documents the schema), and the what-if table. Every figure printed comes
 * from the plan (planner/yp_plan.h); nothing here recomputes memory or time.
 * Ownership: JSON builders return a new cJSON tree the caller deletes. */
#ifndef YP_REPORT_H
#define YP_REPORT_H

#include <stdio.h>

#include <cjson/cJSON.h>

#include "yp_plan.h"
#include "yp_whatif.h"

/* "512.0 MiB", "7.42 GiB", "980 B": binary units. Returns buf. */
const char *yp_fmt_bytes(int64_t bytes, char *buf, size_t n);

/* The table of plans, fastest first, `chosen` marked with '*'. */
void yp_report_table(FILE *f, const yp_plan *plans, int n, int chosen);

/* The same with, per row, the alternatives that are the same plan under another name ("amp-bf16,
 * mosaic off"; NULL or "" for none), shown in an "also" column when any row has one. */
#define YP_REPORT_ALSO_MAX 48
void yp_report_table_also(FILE *f, const yp_plan *plans, const char (*also)[YP_REPORT_ALSO_MAX], int n, int chosen);

/* The lines above the table: the target, the card and its budget (fixed cost, margin), and what
 * the rows are. */
typedef struct {
    const yp_gpu *gpu;
    int64_t reserve;        /* kept free */
    int margin_pct;         /* > 0: the reserve is that default share of the card */
    int64_t n_configs;      /* configurations searched */
    int64_t n_configs_fit;  /* of them fit */
    int n_distinct;         /* distinct plans among those */
    int n_shown;
    int64_t max_batch;      /* the largest batch searched */
    int64_t pinned_batch;   /* > 0: --batch */
    int per_model;          /* rows per model with several models (-1: all), 0: one model */
} yp_table_head;
void yp_report_table_head(FILE *f, const yp_table_head *h);

/* One plan as a JSON object (candidate, memory figures in bytes, timing). */
cJSON *yp_report_plan_json(const yp_plan *p);

/* The GPU as a JSON object. */
cJSON *yp_report_gpu_json(const yp_gpu *gpu, int64_t reserve);

/* One line describing a candidate: "yolov5s 640 b16 amp-fp16 ckpt 2,4 mosaic". */
void yp_report_candidate_str(const yp_graph *g, const yp_candidate *c, char *buf, size_t n);

/* The what-if report: the pinned plan (fits or not, peak, margin) and the remedies table. */
void yp_report_whatif(FILE *f, const yp_whatif *w);
cJSON *yp_report_whatif_json(const yp_whatif *w);

#endif
