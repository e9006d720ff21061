/* test_torch_published.c - every published figure in tests/data/torch_published.tsv (AutoBatch
 * probes and their logs, train.py's GPU_mem in the tutorial notebook, the README's V100-16GB
 * batches, an out-of-memory report) beside what planner/yp_torch_train.h predicts, printed with
 * the error per row. Asserted is what holds today:
 *   - AutoBatch's arithmetic on PR 5092's own rows gives its pick (179), exactly;
 *   - the state train.py v6.0 leaves before AutoBatch is PR 5092's log within 1 %;
 *   - the AutoBatch probes of runs with cudnn.benchmark off (as train.py runs today) within the
 *     issue's goal: every row within 10 %, their median within 5 %;
 *   - PR 5092's probe, which ran with cudnn.benchmark=True (train.py v6.0 seeded 1 + RANK, and
 *     a seed other than 0 turned it on), within 16 %: the replay empties the cache after each
 *     conv's algorithm search as PyTorch does, but does not know the search's workspaces;
 *   - every train.py GPU_mem row within 12 % (the notebook's epoch-0 rows -6 % and -10 %);
 *   - the README's batches train without running out on a V100-16GB, and the recommendation
 *     (10 % kept free) is not below them.
 * Printed, not asserted: the head-era AutoBatch start (check_amp's leftovers differ by run), the
 * benchmark-on probe of issue 9287's report (readings of 2.41, 1.38, 1.38, 0.65, 1.33 GB at
 * batches 1-16: the search workspaces, cached and emptied by turns, dominate them), and
 * the OOM report of issue 2510, which ran with cudnn.benchmark=True (its algorithm search is not
 * modelled): the replay fits there (see the row's note). */
#include <stdlib.h>
#include <string.h>

#include "yp_test.h"
#include "yp_test_published.h"
#include "yp_torch_train.h"

#define MAX_ROWS 64

typedef struct {
    char kind[24], card[24], model[16], setting[24], figure[48], link[160];
    int nc, amp;
    int64_t img, batch;
    double value;
} row;

static int load(row *rows) {
    FILE *f = fopen(YP_TEST_DATA "/torch_published.tsv", "r");
    if (!f) return -1;
    char line[512];
    int n = 0;
    while (n < MAX_ROWS && fgets(line, sizeof line, f)) {
        if (line[0] == '#' || line[0] == '\n') continue;
        row *r = &rows[n];
        long long img, batch;
        if (sscanf(line, "%23[^\t]\t%23[^\t]\t%15[^\t]\t%d\t%lld\t%lld\t%d\t%23[^\t]\t%47[^\t]\t%lf\t%159[^\t\n]",
                   r->kind, r->card, r->model, &r->nc, &img, &batch, &r->amp, r->setting, r->figure, &r->value,
                   r->link) != 11) {
            fprintf(stderr, "torch_published.tsv: bad row: %s", line);
            fclose(f);
            return -1;
        }
        r->img = img, r->batch = batch;
        n++;
    }
    fclose(f);
    return n;
}

static yp_graph *model(const row *r) { return yp_test_model_yaml(r->model, r->nc); }

static row rows[MAX_ROWS];
static int n_rows;

/* Did the run have cudnn.benchmark=True (tests/data/torch_published.tsv's settings)? */
static int benchmark_on(const row *r) { return !strcmp(r->setting, "v6") || strstr(r->setting, "benchmark") != NULL; }

static yp_torch_probe_opts probe_opts(const row *r) {
    yp_torch_probe_opts o = yp_torch_probe_opts_default(!strcmp(r->setting, "v6") ? YP_TORCH_PRIOR_V6 : YP_TORCH_PRIOR_HEAD);
    o.cudnn_benchmark = benchmark_on(r);
    return o;
}

/* Rows of one probe: the same link, setting and model. */
static int same_probe(const row *x, const row *y) {
    return !strcmp(x->link, y->link) && !strcmp(x->setting, y->setting) && !strcmp(x->model, y->model);
}

static void print_stats(const char *what, double *errs, int n) {
    double med = yp_test_median_abs(errs, n);
    printf("  %s: %d, median |error| %.1f%%, max %.1f%%\n", what, n, 100 * med, n ? 100 * fabs(errs[n - 1]) : 0);
}

/* The probe rows of one run (batches in order), predicted once per run. The goal (median <= 5 %,
 * max <= 10 %) is held on the runs with cudnn.benchmark off, as train.py runs today; the others
 * are printed with their own statistics (see the tsv's `setting`). */
static void test_autobatch(void) {
    double off[MAX_ROWS], on[MAX_ROWS];
    int n_off = 0, n_on = 0;
    printf("  %-18s %-9s %-8s %-14s %5s %9s %9s %8s  link\n", "kind", "card", "model", "setting", "batch", "predicted",
           "published", "error");
    for (int i = 0; i < n_rows; i++) {
        if (strcmp(rows[i].kind, "autobatch-reserved") ||
            (i > 0 && !strcmp(rows[i - 1].kind, "autobatch-reserved") && same_probe(&rows[i - 1], &rows[i])))
            continue;
        int n = 0;
        int64_t b[8];
        while (i + n < n_rows && n < 8 && !strcmp(rows[i + n].kind, "autobatch-reserved") &&
               same_probe(&rows[i + n], &rows[i]))
            b[n] = rows[i + n].batch, n++;
        yp_graph *g = model(&rows[i]);
        REQUIRE(g != NULL);
        yp_torch_probe_opts po = probe_opts(&rows[i]);
        yp_torch_probe_row pr[8];
        yp_torch_probe_start st;
        yp_err err;
        int rc = yp_torch_autobatch_probe(g, rows[i].img, rows[i].amp ? YP_DTYPE_F16 : YP_DTYPE_F32, &po, b, n, pr, &st,
                                          &err);
        CHECK_EQ_I64(rc, 0);
        for (int k = 0; !rc && k < n; k++) {
            const row *r = &rows[i + k];
            double pred = (double)pr[k].reserved / 1e9, e = (pred - r->value) / r->value;
            if (benchmark_on(r)) on[n_on++] = e;
            else off[n_off++] = e;
            printf("  %-18s %-9s %-8s %-14s %5lld %9.3f %9.3f %+7.1f%%  %s\n", r->kind, r->card, r->model, r->setting,
                   (long long)r->batch, pred, r->value, 100 * e, r->link);
            if (!benchmark_on(r)) CHECK(fabs(e) <= 0.10);
            if (!strcmp(r->setting, "v6")) CHECK(fabs(e) <= 0.16); /* PR 5092: what the replay holds there */
        }
        /* the start rows of the same run */
        for (int k = 0; !rc && k < n_rows; k++) {
            const row *r = &rows[k];
            if (strcmp(r->kind, "autobatch-start") || !same_probe(r, &rows[i])) continue;
            int64_t v = strstr(r->figure, "allocated") ? st.allocated : st.reserved;
            double pred = (double)v / 1073741824.0, e = (pred - r->value) / r->value;
            printf("  %-18s %-9s %-8s %-14s %5s %9.4f %9.4f %+7.1f%%  %s (%s, GiB)\n", r->kind, r->card, r->model,
                   r->setting, "-", pred, r->value, 100 * e, r->link, r->figure);
            if (!strcmp(r->setting, "v6")) CHECK(fabs(e) <= 0.01);
        }
        yp_graph_free(g);
    }
    print_stats("AutoBatch probe rows, cudnn.benchmark off (train.py today; goal: median <= 5%, max <= 10%)", off,
                n_off);
    print_stats("AutoBatch probe rows, cudnn.benchmark on (search workspaces not modelled; printed)", on, n_on);
    CHECK(n_off >= 5);
    CHECK(yp_test_median_abs(off, n_off) <= 0.05);
}

/* AutoBatch's own arithmetic on its published rows gives its published choice. */
static void test_autobatch_pick(void) {
    int checked = 0;
    for (int i = 0; i < n_rows; i++) {
        const row *r = &rows[i];
        if (strcmp(r->kind, "autobatch-pick")) continue;
        double fraction = 0, total_mib = 0, res = 0, alloc = 0;
        REQUIRE(sscanf(r->figure, "fraction=%lf,total_mib=%lf", &fraction, &total_mib) == 2);
        yp_torch_probe_row pr[8];
        int n = 0;
        for (int k = 0; k < n_rows && n < 8; k++) {
            if (strcmp(rows[k].link, r->link)) continue;
            if (!strcmp(rows[k].kind, "autobatch-reserved"))
                pr[n++] = (yp_torch_probe_row){rows[k].batch, (int64_t)(rows[k].value * 1e9), 0, 0, 0};
            if (!strcmp(rows[k].kind, "autobatch-start"))
                *(strstr(rows[k].figure, "allocated") ? &alloc : &res) = rows[k].value;
        }
        int anomaly = 1;
        double predicted = 0;
        int64_t b = yp_torch_autobatch_pick((int64_t)(total_mib * 1048576), (int64_t)(res * 1073741824.0),
                                            (int64_t)(alloc * 1073741824.0), pr, n, fraction, &anomaly, &predicted);
        printf("  AutoBatch's choice from its published rows: %lld (published %.0f), %.0f%% of total  %s\n",
               (long long)b, r->value, 100 * predicted, r->link);
        CHECK_EQ_I64(b, (int64_t)r->value);
        CHECK_EQ_I64(anomaly, 0);
        checked++;
    }
    CHECK(checked >= 1);
}

static int card(const char *name, yp_gpu *gpu) {
    yp_err err;
    return yp_gpu_parse(name, gpu, &err);
}

static yp_torch_train_opts train_opts(const row *r) {
    yp_torch_train_opts o = yp_torch_train_opts_default();
    o.batch = r->batch, o.img = r->img, o.amp = r->amp;
    return o;
}

static void test_gpu_mem(void) {
    double errs[MAX_ROWS];
    int ne = 0;
    for (int i = 0; i < n_rows; i++) {
        const row *r = &rows[i];
        if (strcmp(r->kind, "gpu_mem")) continue;
        yp_graph *g = model(r);
        yp_gpu gpu;
        REQUIRE(g && !card(r->card, &gpu));
        yp_torch_train_opts o = train_opts(r);
        o.labels_per_image = 4 * 929.0 / 128, o.val_labels_per_image = 929.0 / 128; /* coco128 */
        o.capacity = yp_torch_capacity(&gpu);
        yp_torch_train_result tr;
        yp_err err;
        CHECK_EQ_I64(yp_torch_train_replay(g, &o, &tr, &err), 0);
        CHECK(!tr.oom);
        double pred = (double)(strcmp(r->figure, "epoch0") ? tr.gpu_mem_later : tr.gpu_mem_epoch0) / 1e9;
        double e = (pred - r->value) / r->value;
        errs[ne++] = e;
        printf("  gpu_mem %-6s %-4s %s b%lld %lld %-13s %6.3gG %6.3gG %+6.1f%%  %s\n", r->figure, r->card, r->model,
               (long long)r->batch, (long long)r->img, r->setting, pred, r->value, 100 * e, r->link);
        CHECK(fabs(e) <= 0.12);
        yp_graph_free(g);
    }
    double med = yp_test_median_abs(errs, ne);
    printf("  train.py GPU_mem rows: %d, median |error| %.1f%%, max %.1f%%\n", ne, 100 * med,
           ne ? 100 * fabs(errs[ne - 1]) : 0);
    CHECK(ne >= 4);
}

static void test_fits_and_oom(void) {
    for (int i = 0; i < n_rows; i++) {
        const row *r = &rows[i];
        int is_fit = !strcmp(r->kind, "fits"), is_oom = !strcmp(r->kind, "oom");
        if (!is_fit && !is_oom) continue;
        yp_graph *g = model(r);
        yp_gpu gpu;
        REQUIRE(g && !card(r->card, &gpu));
        yp_torch_train_opts o = train_opts(r);
        o.capacity = is_oom ? (int64_t)(r->value * 1073741824.0) : yp_torch_capacity(&gpu);
        yp_torch_train_result tr;
        yp_err err;
        CHECK_EQ_I64(yp_torch_train_replay(g, &o, &tr, &err), 0);
        int64_t rec = 0;
        yp_torch_train_opts base = train_opts(r);
        CHECK_EQ_I64(yp_torch_recommend(g, &base, yp_torch_capacity(&gpu), YP_TORCH_MARGIN, 1024, &rec, NULL, &err), 0);
        printf("  %-4s %-9s %s %lld b%-4lld (%s): the replay %s (peak allocated %.2f GB); recommended on the card: "
               "%lld  %s\n", r->kind, r->card, r->model, (long long)r->img, (long long)r->batch, r->setting,
               tr.oom ? "runs out" : "fits", (double)tr.peak_allocated / 1e9, (long long)rec, r->link);
        if (is_fit) {
            CHECK(!tr.oom);
            CHECK(rec >= r->batch);
        } else if (!tr.oom || rec >= r->batch) {
            printf("    NOTE: a miss, not asserted: that run had cudnn.benchmark=True (YOLOv5 v4.0), whose algorithm "
                   "search the replay does not model, and %.2f GiB of the card outside PyTorch\n",
                   (double)gpu.cuda_total_bytes / 1073741824.0 - r->value);
        }
        yp_graph_free(g);
    }
}

int main(void) {
    n_rows = load(rows);
    if (n_rows <= 0) {
        fprintf(stderr, "cannot read " YP_TEST_DATA "/torch_published.tsv\n");
        return 1;
    }
    YP_RUN(test_autobatch);
    YP_RUN(test_autobatch_pick);
    YP_RUN(test_gpu_mem);
    YP_RUN(test_fits_and_oom);
    return yp_test_summary();
}
