/* cmd_plan.c - the main command: `yoloplan --gpu 8GB [...]`. Searches the candidates, builds the
 * real plans of the top rows, prints the table (or JSON), and optionally saves the chosen plan
 * or draws its timelines. With --batch (one model, one size) it answers what-if instead. */
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "plan_args.h"
#include "yp_executor.h"
#include "yp_models.h"
#include "yp_plan_io.h"
#include "yp_report.h"
#include "yp_timeline.h"

/* The next smaller bundled model than g (the bundled list is smallest first), or NULL. The caller
 * frees it. */
static yp_graph *smaller_model(const yp_graph *g) {
    int n = 0;
    const yp_model_blob *m = yp_models_list(&n);
    for (int i = 1; i < n; i++)
        if (!strcmp(g->name, m[i].name)) return cli_load_model(m[i - 1].name, g->nc, NULL);
    return NULL;
}

static int print_json(cJSON *j) {
    char *s = cJSON_Print(j);
    if (s) puts(s);
    free(s);
    cJSON_Delete(j);
    return s ? 0 : -1;
}

/* Writes what --save-plan and --timeline ask for, for plan p; `what` names it ("row 1", "the
 * what-if's plan"). */
static int outputs(const plan_args *a, const yp_plan *p, const char *what) {
    yp_err err;
    if (a->save_plan && yp_plan_save(p, a->save_plan, &err)) return cli_fail(&err);
    if (a->timeline && yp_timeline_write(p, a->timeline, a->format, &err)) return cli_fail(&err);
    if (!a->json && a->save_plan) printf("%s: plan written to %s\n", what, a->save_plan);
    if (!a->json && a->timeline)
        printf("%s: memory, arena and graph pictures (.dot + .%s) written to %s\n", what, a->format, a->timeline);
    return YP_EXIT_OK;
}

/* --batch with one model and one size: the candidate the search would choose at that batch
 * (yp_search_choose: the same precision, mosaic and checkpoint defaults as the table), whether it
 * fits and the remedies; --save-plan and --timeline write that plan, they do not change it. */
static int run_whatif(plan_args *a) {
    yp_err err;
    yp_candidate c;
    if (yp_search_choose(&a->search, &a->gpu, a->reserve, &c, &err) < 0) return cli_fail(&err);
    yp_graph *smaller = smaller_model(a->search.models[0]);
    yp_whatif w;
    yp_whatif_opts wo = {a->search.models[0], smaller, &a->gpu, a->reserve, a->remedy_prec_mask};
    int rc = yp_whatif_run(&wo, &c, &w, &err);
    if (rc) {
        yp_graph_free(smaller);
        return cli_fail(&err);
    }
    if (a->json) print_json(yp_report_whatif_json(&w));
    else yp_report_whatif(stdout, &w);
    rc = outputs(a, &w.base, "the what-if's plan");
    if (!rc) rc = w.base.fits ? YP_EXIT_OK : YP_EXIT_NOFIT;
    yp_whatif_free(&w);
    yp_graph_free(smaller);
    return rc;
}

static int nothing_fits(const plan_args *a, const yp_search_result *r) {
    char desc[200], need[32], have[32];
    const yp_row *s = &r->smallest;
    yp_report_candidate_str(a->search.models[s->model], &s->cand, desc, sizeof desc);
    yp_fmt_bytes((int64_t)r->smallest_bytes, need, sizeof need);
    yp_fmt_bytes(a->gpu.mem_bytes, have, sizeof have);
    fprintf(stderr, "yoloplan: nothing fits on %s (%s): the smallest configuration (%s) needs %s\n", a->gpu.desc,
            have, desc, need);
    return YP_EXIT_NOFIT;
}


static cJSON *search_json(const plan_args *a, const yp_search_result *r, const yp_plan *plans, int n) {
    cJSON *j = cJSON_CreateObject();
    cJSON_AddStringToObject(j, "format", "yoloplan-plans");
    cJSON_AddNumberToObject(j, "version", 1);
    cJSON_AddItemToObject(j, "gpu", yp_report_gpu_json(&a->gpu, a->reserve));
    cJSON_AddNumberToObject(j, "candidates", (double)r->n_candidates);
    cJSON_AddNumberToObject(j, "feasible", r->n_rows);
    cJSON *rows = cJSON_AddArrayToObject(j, "rows");
    for (int i = 0; i < n; i++) {
        cJSON *p = yp_report_plan_json(&plans[i]);
        cJSON_AddNumberToObject(p, "rank", i + 1);
        cJSON_AddBoolToObject(p, "chosen", i == 0);
        cJSON_AddItemToArray(rows, p);
    }
    return j;
}

static int run_search(plan_args *a) {
    yp_err err;
    yp_search_result r;
    if (yp_search(&a->search, &a->gpu, a->reserve, &r, &err)) return cli_fail(&err);
    if (r.n_rows == 0) {
        int rc = nothing_fits(a, &r);
        yp_search_free(&r);
        return rc;
    }
    int cap = r.n_rows < a->top_k ? r.n_rows : a->top_k, n = 0, rc = YP_EXIT_OK;
    yp_plan *plans = calloc((size_t)cap, sizeof *plans);
    /* a pinned batch is not lowered: a row whose real (aligned) plan is a little over the card is
     * dropped, as the what-if would say it does not fit */
    for (int i = 0; plans && i < r.n_rows && n < cap && !rc; i++) {
        if (yp_search_realize(&a->search, &r.rows[i], &a->gpu, a->reserve, a->n_images, &plans[n], &err))
            rc = cli_fail(&err);
        else if (plans[n].fits) n++;
        else yp_plan_free(&plans[n]);
    }
    if (!plans) rc = YP_EXIT_USAGE;
    if (!rc && n == 0) rc = nothing_fits(a, &r);
    if (!rc && n) {
        if (a->json) print_json(search_json(a, &r, plans, n));
        else {
            if (a->has_data)
                printf("dataset %s: %lld images, %lld labels (mean %.2f, max %lld per image; %lld label files "
                       "skipped), nc %d: planned for %lld labels per image%s\n", a->data_stats.root,
                       (long long)a->data_stats.n_images, (long long)a->data_stats.n_labels, a->data_stats.mean_labels,
                       (long long)a->data_stats.max_labels, (long long)a->data_stats.n_bad_files, a->data_stats.nc,
                       (long long)a->data_stats.max_labels, a->search.mosaic_mask & 2 ? " (x4 with mosaic)" : "");
            printf("%s: %lld candidates, %d fit; best %d by predicted images/s (* = chosen plan)\n", a->gpu.desc,
                   (long long)r.n_candidates, r.n_rows, n);
            yp_report_table(stdout, plans, n, 0);
        }
        int row = a->row ? a->row - 1 : 0;
        if (row >= n) rc = yp_err_set(&err, "--row %d: only %d rows fit", a->row, n), rc = cli_fail(&err);
        else {
            char what[32];
            snprintf(what, sizeof what, "row %d", row + 1);
            rc = outputs(a, &plans[row], what);
        }
    }
    for (int i = 0; plans && i < n; i++) yp_plan_free(&plans[i]);
    free(plans);
    yp_search_free(&r);
    return rc;
}

/* --load-plan FILE: re-plan from the file, verify it, show it (and draw or re-save it). */
static int run_loaded(plan_args *a) {
    yp_err err;
    yp_plan p;
    yp_graph *g;
    if (yp_plan_load_with(a->load_plan, yp_exec_scratch_resolver(), &p, &g, &err)) return cli_fail(&err);
    if (a->json) print_json(yp_report_plan_json(&p));
    else {
        printf("%s: verified (%d tensors, %d steps, arena %lld bytes)\n", a->load_plan, p.sched->n_tensors,
               p.sched->n_steps, (long long)p.arena_bytes);
        yp_report_table(stdout, &p, 1, 0);
    }
    int rc = outputs(a, &p, a->load_plan);
    yp_plan_free(&p);
    yp_graph_free(g);
    return rc;
}

int cmd_plan(int argc, char **argv) {
    plan_args a;
    yp_err err;
    if (plan_args_parse(argc, argv, &a, &err)) {
        plan_args_free(&a);
        return cli_fail(&err);
    }
    int rc = a.torch ? cmd_plan_torch(&a) : a.load_plan ? run_loaded(&a) : a.whatif ? run_whatif(&a) : run_search(&a);
    plan_args_free(&a);
    return rc;
}
