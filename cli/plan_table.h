/* plan_table.h - the rows the planner's table shows (cli/plan_table.c): the search's rows with the
 * same plan under another name merged, the best --top per model, each built as a real plan, and
 * for each model's best row the largest batch its configuration fits. */
#ifndef YP_PLAN_TABLE_H
#define YP_PLAN_TABLE_H

#include "plan_args.h"
#include "yp_report.h"

#define PLAN_ALSO_MAX YP_REPORT_ALSO_MAX

typedef struct {
    yp_search_result search;    /* collapsed: n_rows = distinct plans that fit */
    int64_t n_configs_fit;      /* rows that fit before merging */
    int n;                      /* rows shown */
    yp_plan *plans;
    char (*also)[PLAN_ALSO_MAX];/* per row: the equivalent alternatives, "amp-bf16, mosaic off" or "" */
    int64_t *largest;           /* per row: its configuration's largest batch when above the row's
                                 * (the search keeps to --max-batch); 0 when not computed or not larger */
    int per_model;              /* rows per model (several models), 0 for one model */
} plan_table;

/* Runs the search of a and builds the rows. 0 (n may be 0: nothing fits), or -1 with err set. */
int plan_table_build(const plan_args *a, plan_table *t, yp_err *err);
void plan_table_free(plan_table *t);

#endif
