/* cmd_plan.c - the main command: `yoloplan --gpu 8GB [...]`. Searches the candidates, builds the
 * real plans of the top rows, prints the table (or JSON), and optionally saves the chosen plan
 * or draws its timelines. With --batch (one model, one size) it answers what-if instead. */
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "plan_args.h"
#include "plan_card.h"
#include "plan_table.h"
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

/* remedies.svg for plan p when no what-if was asked for: the what-if of p's candidate. */
static int draw_remedies(const plan_args *a, const yp_plan *p, yp_err *err) {
    yp_graph *smaller = smaller_model(p->g), *anchors = cli_fewer_anchors(p->g);
    yp_whatif_opts wo = {p->g, smaller, anchors, &p->gpu, p->reserve_bytes, a->remedy_prec_mask, a->n_images};
    yp_whatif w;
    int rc = yp_whatif_run(&wo, &p->cand, &w, err);
    if (!rc) {
        rc = yp_timeline_remedies_write(&w, a->timeline, a->format, err);
        yp_whatif_free(&w);
    }
    yp_graph_free(smaller);
    yp_graph_free(anchors);
    return rc;
}

/* Writes what --save-plan and --timeline ask for, for plan p (w: its what-if, or NULL); `what`
 * names it ("row 1", "the what-if's plan"). */
static int outputs(const plan_args *a, const yp_plan *p, const yp_whatif *w, const char *what) {
    yp_err err;
    if (a->save_plan && yp_plan_save(p, a->save_plan, &err)) return cli_fail(&err);
    if (a->timeline && yp_timeline_write(p, a->timeline, a->format, &err)) return cli_fail(&err);
    if (a->timeline && (w ? yp_timeline_remedies_write(w, a->timeline, a->format, &err) : draw_remedies(a, p, &err)))
        return cli_fail(&err);
    if (!a->json && a->save_plan) printf("%s: plan written to %s\n", what, a->save_plan);
    if (!a->json && a->timeline)
        printf("%s: memory, arena, graph and remedies pictures (.dot + .%s) written to %s\n", what, a->format,
               a->timeline);
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
    yp_graph *anchors = cli_fewer_anchors(a->search.models[0]);
    yp_whatif_opts wo = {a->search.models[0], smaller, anchors, &a->gpu, a->reserve, a->remedy_prec_mask, a->n_images};
    int rc = yp_whatif_run(&wo, &c, &w, &err);
    if (rc) {
        yp_graph_free(smaller);
        yp_graph_free(anchors);
        return cli_fail(&err);
    }
    if (a->json) print_json(yp_report_whatif_json(&w));
    else yp_report_whatif(stdout, &w);
    rc = outputs(a, &w.base, &w, "the what-if's plan");
    if (!rc) rc = w.base.fits ? YP_EXIT_OK : YP_EXIT_NOFIT;
    yp_whatif_free(&w);
    yp_graph_free(smaller);
    yp_graph_free(anchors);
    return rc;
}

/* Nothing fits: one line on stderr, and with --json an object on stdout that says so (a JSON
 * consumer always gets JSON). */
static int nothing_fits(const plan_args *a, const yp_search_result *r) {
    char desc[200], need[32], have[32], why[400];
    const yp_row *s = &r->smallest;
    yp_report_candidate_str(a->search.models[s->model], &s->cand, desc, sizeof desc);
    yp_fmt_bytes((int64_t)r->smallest_bytes, need, sizeof need);
    yp_fmt_bytes(a->gpu.mem_bytes, have, sizeof have);
    snprintf(why, sizeof why, "nothing fits on %s (%s): the smallest configuration (%s) needs %s", a->gpu.desc, have,
             desc, need);
    fprintf(stderr, "yoloplan: %s\n", why);
    if (a->json) {
        cJSON *j = cJSON_CreateObject();
        cJSON_AddStringToObject(j, "format", "yoloplan-plans");
        cJSON_AddNumberToObject(j, "version", 1);
        cJSON_AddStringToObject(j, "target", "yoloplan");
        cJSON_AddItemToObject(j, "gpu", yp_report_gpu_json(&a->gpu, a->reserve));
        cJSON_AddNumberToObject(j, "candidates", (double)r->n_candidates);
        cJSON_AddNumberToObject(j, "feasible", 0);
        cJSON_AddArrayToObject(j, "rows");
        cJSON *n = cJSON_AddObjectToObject(j, "nothing_fits");
        cJSON_AddStringToObject(n, "reason", why);
        cJSON_AddItemToObject(n, "smallest", yp_candidate_json(a->search.models[s->model], &s->cand));
        cJSON_AddNumberToObject(n, "smallest_bytes", r->smallest_bytes);
        print_json(j);
    }
    return YP_EXIT_NOFIT;
}

static cJSON *search_json(const plan_args *a, const plan_table *t, int chosen) {
    cJSON *j = cJSON_CreateObject();
    cJSON_AddStringToObject(j, "format", "yoloplan-plans");
    cJSON_AddNumberToObject(j, "version", 1);
    cJSON_AddStringToObject(j, "target", "yoloplan");
    cJSON_AddItemToObject(j, "gpu", yp_report_gpu_json(&a->gpu, a->reserve));
    cJSON_AddNumberToObject(j, "candidates", (double)t->search.n_candidates);
    cJSON_AddNumberToObject(j, "feasible", (double)t->n_configs_fit);
    cJSON_AddNumberToObject(j, "distinct", t->search.n_rows);
    cJSON *rows = cJSON_AddArrayToObject(j, "rows");
    for (int i = 0; i < t->n; i++) {
        cJSON *p = yp_report_plan_json(&t->plans[i]);
        cJSON_AddNumberToObject(p, "rank", i + 1);
        cJSON_AddBoolToObject(p, "chosen", i == chosen);
        cJSON *also = cJSON_AddArrayToObject(p, "also");
        char buf[PLAN_ALSO_MAX];
        snprintf(buf, sizeof buf, "%s", t->also[i]);
        for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save))
            cJSON_AddItemToArray(also, cJSON_CreateString(tok + (*tok == ' ')));
        if (t->largest[i]) cJSON_AddNumberToObject(p, "largest_batch", (double)t->largest[i]);
        cJSON_AddItemToArray(rows, p);
    }
    return j;
}

static void print_table(const plan_args *a, const plan_table *t, int chosen) {
    if (a->has_data)
        printf("dataset %s: %lld images, %lld labels (mean %.2f, max %lld per image; %lld label files skipped), nc %d: "
               "planned for %lld labels per image%s\n", a->data_stats.root, (long long)a->data_stats.n_images,
               (long long)a->data_stats.n_labels, a->data_stats.mean_labels, (long long)a->data_stats.max_labels,
               (long long)a->data_stats.n_bad_files, a->data_stats.nc, (long long)a->data_stats.max_labels,
               a->search.mosaic_mask & 2 ? " (x4 with mosaic)" : "");
    if (a->has_data && a->data_stats.n_bad_files > 0) /* the first reason, so that the file can be fixed */
        printf("  the first skipped: %s\n", a->data_stats.first_bad);
    yp_table_head h = {&a->gpu, a->reserve, a->reserve_given ? 0 : YP_DEFAULT_MARGIN_PCT, t->search.n_candidates,
                       t->n_configs_fit, t->search.n_rows, t->n, a->search.max_batch, a->search.batch, t->per_model};
    yp_report_table_head(stdout, &h);
    yp_report_table_also(stdout, t->plans, (const char(*)[YP_REPORT_ALSO_MAX])t->also, t->n, chosen);
    if (a->n_images > 0) { /* what --images (or --data's image count) changes: the host estimate's image cache */
        const yp_plan *p = &t->plans[chosen];
        char total[32], cache[32];
        printf("host RAM of row %d's data pipeline: %s, of it %s for the image cache (%lld images at %lldx%lld)\n",
               chosen + 1, yp_fmt_bytes(p->host.total, total, sizeof total),
               yp_fmt_bytes(p->host.image_cache, cache, sizeof cache), (long long)a->n_images,
               (long long)p->cand.img_w, (long long)p->cand.img_h);
    }
    for (int i = 0; i < t->n; i++)
        if (t->largest[i])
            printf(
                "row %d: its configuration fits up to batch %lld (accumulate %d); the table keeps to --max-batch %lld, "
                "the recipe's nominal batch: add --max-batch %lld to plan it\n",
                i + 1, (long long)t->largest[i], yp_accumulate(t->largest[i]), (long long)a->search.max_batch,
                (long long)t->largest[i]);
}

static int run_search(plan_args *a) {
    yp_err err;
    plan_table t;
    if (plan_table_build(a, &t, &err)) {
        plan_table_free(&t);
        return cli_fail(&err);
    }
    int rc = YP_EXIT_OK, chosen = a->row ? a->row - 1 : 0;
    if (t.n == 0) rc = nothing_fits(a, &t.search);
    else if (chosen >= t.n) rc = yp_err_set(&err, "--row %d: only %d rows fit", a->row, t.n), rc = cli_fail(&err);
    else {
        if (a->json) print_json(search_json(a, &t, chosen));
        else print_table(a, &t, chosen);
        char what[32];
        snprintf(what, sizeof what, "row %d", chosen + 1);
        rc = outputs(a, &t.plans[chosen], NULL, what);
    }
    plan_table_free(&t);
    return rc;
}

/* --load-plan FILE --gpu G: the verified plan planned on G; exit 0 if it fits there, 1 if not
 * (like a what-if). --save-plan and --timeline write it as planned on G. */
static int run_on_card(plan_args *a, const yp_plan *saved) {
    yp_err err;
    plan_card c;
    if (plan_card_build(a, saved, &c, &err)) return cli_fail(&err);
    if (a->json) print_json(plan_card_json(&c, saved));
    else {
        printf("%s: verified (%d tensors, %d steps, arena %lld bytes)\n", a->load_plan, saved->sched->n_tensors,
               saved->sched->n_steps, (long long)saved->arena_bytes);
        plan_card_print(stdout, &c, saved, a->reserve_given ? 0 : YP_DEFAULT_MARGIN_PCT);
        yp_report_table(stdout, &c.plan, 1, 0);
    }
    char what[200];
    snprintf(what, sizeof what, "%s on %s", a->load_plan, a->gpu.name);
    int rc = outputs(a, &c.plan, NULL, what);
    if (!rc) rc = c.fits ? YP_EXIT_OK : YP_EXIT_NOFIT;
    yp_plan_free(&c.plan);
    return rc;
}

/* --load-plan FILE: re-plan from the file, verify it, show it (and draw or re-save it); with
 * --gpu, whether it fits that card. */
static int run_loaded(plan_args *a) {
    yp_err err;
    yp_plan p;
    yp_graph *g;
    if (yp_plan_load_with(a->load_plan, &a->models.r, &p, &g, &err)) return cli_fail(&err);
    if (a->load_on_gpu) {
        int rc = run_on_card(a, &p);
        yp_plan_free(&p);
        yp_graph_free(g);
        return rc;
    }
    if (a->json) print_json(yp_report_plan_json(&p));
    else {
        printf("%s: verified (%d tensors, %d steps, arena %lld bytes)\n", a->load_plan, p.sched->n_tensors,
               p.sched->n_steps, (long long)p.arena_bytes);
        yp_report_table(stdout, &p, 1, 0);
    }
    int rc = outputs(a, &p, NULL, a->load_plan);
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
