/* test_checkpoint.c - checkpoints of a training run (executor/io/yp_checkpoint.h) on the CPU
 * backend, yolov5t at batch 2, 128 px, the step fixture's batch shifted per step:
 *   - resume is bit-identical: N steps in one run against k steps, a save, a load into a fresh
 *     executor (another seed, and a plan with another memory layout: unfused), and the N - k
 *     steps after; every loss, weight, BN statistic, EMA copy and optimizer state agrees bit for
 *     bit, and the hyperparameters and counters come back; the same for Adam with gradient
 *     accumulation, saved with a micro-batch pending (its gradients are in the file);
 *   - resume refuses another optimizer, another nc, another EMA setting and a file that is no
 *     checkpoint, each naming the field, and leaves the executor untouched;
 *   - a save that fails (a full disk, a failing rename) leaves the previous checkpoint intact,
 *     and resuming from it gives the state it was saved with;
 *   - --weights into a model with another nc skips exactly Detect's six tensors (one line each)
 *     and loads every other weight and BN statistic, EMA copies included; F16, BF16 and F64
 *     tensors are converted and a non-float one is skipped;
 *   - stripping (train.py's strip_optimizer) keeps the EMA's (or the weights') values in F16 and
 *     nothing else, epoch -1; --weights and val's loader read it, --resume refuses it. */
#include <dirent.h>
#include <unistd.h>

#include "step_fixture.h"
#include "yp_checkpoint.h"
#include "yp_elem_math.h"
#include "yp_executor.h"
#include "yp_plan_io.h"
#include "yp_test.h"
#include "yp_test_fs.h"
#include "yp_yaml.h"

static fx_file fx;
static yp_graph *graph, *graph_nc5; /* yolov5t as the fixture has it (nc 3), and with nc 5 */
static yp_gpu gpu;
static yp_backend *cpu;
static char dir[64] = "/tmp/yp_test_ckpt.XXXXXX";
static float *images; /* one batch, rewritten per step */

static void path_in(char *buf, size_t n, const char *name) { snprintf(buf, n, "%s/%s", dir, name); }

/* A plan of g at batch 2, 128 px, 4 labels per image, for the CPU backend (unfused: no fusions). */
static int make_plan(yp_plan *p, const yp_graph *g, yp_optimizer opt, int ema, int unfused) {
    yp_err err;
    yp_candidate c = yp_candidate_default();
    c.batch = 2, c.img_w = c.img_h = 128, c.mosaic = 0, c.labels_per_image = 4, c.optimizer = opt, c.ema = ema;
    yp_exec_candidate_for(&c, cpu);
    if (unfused) c.fusions = 0;
    if (yp_plan_build(g, &c, &gpu, 0, 0, p, &err)) {
        fprintf(stderr, "%s\n", err.msg);
        return -1;
    }
    return 0;
}

static int make_exec(yp_exec *x, const yp_plan *p, uint64_t seed) {
    yp_err err;
    if (yp_exec_init(x, p, cpu, 0, seed, &err)) {
        fprintf(stderr, "%s\n", err.msg);
        return -1;
    }
    return 0;
}

/* Micro-batches from..to-1 (batch k: the fixture's images shifted by k), an optimizer update
 * after every accum-th one; each one's loss terms into loss[k]. 0, or -1. */
static int run(yp_exec *x, int from, int to, int accum, double (*loss)[4]) {
    const fx_record *img = fx_get(&fx, "images"), *tg = fx_get(&fx, "targets");
    yp_err err;
    for (int k = from; k < to; k++) {
        for (int64_t i = 0; i < img->numel; i++) images[i] = img->data[(i + 9973 * k) % img->numel];
        if (yp_exec_micro_step(x, images, tg->data, tg->numel / 6, loss[k], &err) ||
            ((k + 1) % accum == 0 && yp_exec_update(x, &err))) {
            fprintf(stderr, "%s\n", err.msg);
            return -1;
        }
    }
    return 0;
}

/* Is t a tensor a checkpoint holds (weights and BN statistics, EMA, optimizer state, gradients)? */
static int is_state(const yp_tensor *t) {
    return t->kind == YP_KIND_WEIGHT || t->kind == YP_KIND_EMA || t->kind == YP_KIND_OPTSTATE || t->kind == YP_KIND_GRAD;
}

/* The tensor of x's training schedule named `name`, or -1. */
static int tensor_named(const yp_exec *x, const char *name) {
    for (int t = 0; t < x->train.s->n_tensors; t++)
        if (!strcmp(x->train.s->tensors[t].name, name)) return t;
    return -1;
}

/* Every state tensor of a has a namesake in b with the same bytes; their count (-1 on the first
 * difference, printed with verbose). */
static int same_state_v(const yp_exec *a, const yp_exec *b, int verbose) {
    int n = 0;
    for (int t = 0; t < a->train.s->n_tensors; t++) {
        const yp_tensor *d = &a->train.s->tensors[t];
        if (!is_state(d)) continue;
        int u = tensor_named(b, d->name);
        if (u < 0 || b->train.s->tensors[u].bytes != d->bytes ||
            memcmp(yp_exec_tensor(a, t), yp_exec_tensor(b, u), (size_t)d->bytes)) {
            if (verbose) fprintf(stderr, "  state differs: %s\n", d->name);
            return -1;
        }
        n++;
    }
    return n;
}

static int same_state(const yp_exec *a, const yp_exec *b) { return same_state_v(a, b, 1); }

/* a and b differ in some state tensor (quietly). */
static int differ(const yp_exec *a, const yp_exec *b) { return same_state_v(a, b, 0) < 0; }

/* The resume check: `steps` micro-batches (update every accum) uninterrupted on plan p, against
 * k of them, a save, a resume into a fresh executor on plan q (seed 99), and the rest. */
static void resume_matches(const yp_plan *p, const yp_plan *q, int steps, int k, int accum, const char *file) {
    char path[128];
    path_in(path, sizeof path, file);
    double whole[8][4], split[8][4];
    yp_exec a, b, c;
    REQUIRE(steps <= 8 && make_exec(&a, p, 1) == 0);
    a.trainer.hyp.lr = 0.02; /* not the default: the resumed executor must get it from the file */
    CHECK(run(&a, 0, steps, accum, whole) == 0);
    REQUIRE(make_exec(&b, p, 1) == 0);
    b.trainer.hyp.lr = 0.02;
    CHECK(run(&b, 0, k, accum, split) == 0);
    yp_err err;
    const char *opts = "{\"epochs\": 3, \"name\": \"r\\u00e9sum\\u00e9\"}";
    yp_ckpt_meta m = {7, 0.125, opts};
    if (yp_ckpt_save(&b, path, &m, NULL, &err)) fprintf(stderr, "%s\n", err.msg);
    REQUIRE(make_exec(&c, q, 99) == 0);
    CHECK(differ(&b, &c)); /* another seed: the comparison below can fail */
    yp_ckpt_info info;
    int rc = yp_ckpt_resume(&c, path, &info, &err);
    if (rc) fprintf(stderr, "%s\n", err.msg);
    CHECK(rc == 0);
    if (!rc) {
        CHECK_EQ_I64(info.epoch, 7);
        CHECK(info.best_fitness == 0.125);
        CHECK(!strcmp(info.options, opts));
        char *text = yp_plan_json_text(p);
        CHECK(text && !strcmp(info.plan, text));
        free(text);
        CHECK_EQ_I64(info.updates, k / accum);
        CHECK_EQ_I64(info.micro, k % accum);
        yp_ckpt_info_free(&info);
    }
    CHECK_EQ_I64(c.trainer.updates, b.trainer.updates);
    CHECK_EQ_I64(c.trainer.micro, b.trainer.micro);
    CHECK(c.trainer.hyp.lr == 0.02);
    CHECK(memcmp(&c.trainer.last_grad_norm, &b.trainer.last_grad_norm, sizeof(double)) == 0);
    CHECK(same_state(&b, &c) > 0);
    CHECK(run(&c, k, steps, accum, split) == 0);
    for (int s = k; s < steps; s++) {
        printf("  step %d: loss %.9g uninterrupted, %.9g resumed\n", s, whole[s][3], split[s][3]);
        CHECK(memcmp(whole[s], split[s], sizeof whole[s]) == 0);
    }
    int n = same_state(&a, &c);
    printf("  %d state tensors bit for bit after %d steps\n", n, steps);
    CHECK(n > 100);
    CHECK_EQ_I64(c.trainer.updates, a.trainer.updates);
    yp_exec_free(&a), yp_exec_free(&b), yp_exec_free(&c);
}

static void test_resume_sgd(void) {
    yp_plan p, q;
    REQUIRE(make_plan(&p, graph, YP_OPT_SGD, 1, 0) == 0);
    if (make_plan(&q, graph, YP_OPT_SGD, 1, 1)) {
        yp_plan_free(&p);
        REQUIRE(0);
    }
    CHECK(p.sched->n_tensors != q.sched->n_tensors); /* the resumed run has other tensors at other offsets */
    resume_matches(&p, &q, 4, 2, 1, "sgd.safetensors");
    yp_plan_free(&q), yp_plan_free(&p);
}

static void test_resume_adam_mid_accumulation(void) {
    yp_plan p;
    REQUIRE(make_plan(&p, graph, YP_OPT_ADAM, 1, 0) == 0);
    resume_matches(&p, &p, 6, 3, 2, "adam.safetensors"); /* saved after 3 micro-batches: 1 update, 1 pending */
    yp_st_file f;
    yp_err err;
    char path[128];
    path_in(path, sizeof path, "adam.safetensors");
    if (yp_st_open(&f, path, &err) == 0) {
        CHECK(yp_st_find(&f, "grad.model.0.conv.weight") >= 0);
        CHECK(yp_st_find(&f, "optimizer.exp_avg_sq.model.24.m.2.bias") >= 0);
        CHECK(yp_st_find(&f, "ema.model.0.bn.running_var") >= 0);
        yp_st_close(&f);
    } else {
        CHECK(!err.msg[0]);
    }
    yp_plan_free(&p);
}

/* Resuming `file` into an executor on plan p fails with `want` and changes none of its state. */
static void resume_refused(const yp_plan *p, const char *path, const char *want) {
    yp_exec x, ref;
    REQUIRE(make_exec(&x, p, 3) == 0);
    if (make_exec(&ref, p, 3)) {
        yp_exec_free(&x);
        REQUIRE(0);
    }
    yp_err err = {{0}};
    CHECK(yp_ckpt_resume(&x, path, NULL, &err) == -1);
    CHECK_STR_HAS(err.msg, path);
    CHECK_STR_HAS(err.msg, want);
    CHECK(same_state(&ref, &x) > 0);
    CHECK_EQ_I64(x.trainer.updates, 0);
    yp_exec_free(&x), yp_exec_free(&ref);
}

static void test_resume_refuses(void) {
    yp_plan sgd, adam, nc5, no_ema;
    REQUIRE(make_plan(&sgd, graph, YP_OPT_SGD, 1, 0) == 0);
    REQUIRE(make_plan(&adam, graph, YP_OPT_ADAM, 1, 0) == 0);
    REQUIRE(make_plan(&nc5, graph_nc5, YP_OPT_SGD, 1, 0) == 0);
    REQUIRE(make_plan(&no_ema, graph, YP_OPT_SGD, 0, 0) == 0);
    char path[128], plain[128];
    path_in(path, sizeof path, "refuse.safetensors");
    yp_exec x;
    double loss[1][4];
    yp_err err;
    yp_ckpt_meta m = {0, 0, NULL};
    if (make_exec(&x, &sgd, 1) == 0) {
        CHECK(run(&x, 0, 1, 1, loss) == 0);
        CHECK(yp_ckpt_save(&x, path, &m, NULL, &err) == 0);
        yp_exec_free(&x);
    }
    resume_refused(&adam, path, "__metadata__.optimizer: the run was trained with sgd, this plan uses adam");
    resume_refused(&nc5, path, "tensor model.24.m.0.weight: F32 [24, ");
    resume_refused(&no_ema, path, "tensor ema.");
    /* a safetensors file without a checkpoint's metadata */
    path_in(plain, sizeof plain, "plain.safetensors");
    float v = 1;
    yp_st_tensor t = {.name = "model.0.bn.weight", .dtype = YP_ST_F32, .ndim = 1, .shape = {1}, .data = &v};
    yp_st_desc d = {&t, 1, NULL, NULL, 0, NULL, NULL};
    CHECK(yp_st_save(plain, &d, NULL, &err) == 0);
    resume_refused(&sgd, plain, "__metadata__.format: missing");
    yp_ckpt_info info;
    CHECK(yp_ckpt_read_info(plain, &info, &err) == -1);
    CHECK_STR_HAS(err.msg, "__metadata__.format");
    yp_plan_free(&sgd), yp_plan_free(&adam), yp_plan_free(&nc5), yp_plan_free(&no_ema);
}

/* Files in the scratch folder whose name holds ".tmp.". */
static int temp_files(void) {
    DIR *d = opendir(dir);
    int n = 0;
    for (struct dirent *e; d && (e = readdir(d));) n += strstr(e->d_name, ".tmp.") != NULL;
    if (d) closedir(d);
    return n;
}

static void test_failed_save_keeps_old(void) {
    yp_plan p;
    REQUIRE(make_plan(&p, graph, YP_OPT_SGD, 1, 0) == 0);
    char path[128];
    path_in(path, sizeof path, "last.safetensors");
    yp_exec x, snap, back;
    double loss[2][4];
    yp_err err;
    REQUIRE(make_exec(&x, &p, 1) == 0);
    CHECK(run(&x, 0, 1, 1, loss) == 0);
    yp_ckpt_meta m = {0, 0.5, "{}"};
    CHECK(yp_ckpt_save(&x, path, &m, NULL, &err) == 0);
    REQUIRE(make_exec(&snap, &p, 1) == 0); /* the state saved, kept aside */
    CHECK(yp_ckpt_resume(&snap, path, NULL, &err) == 0);
    CHECK(run(&x, 1, 2, 1, loss) == 0);
    m.epoch = 1;
    const yp_st_faults faults[2] = {{4096, YP_ST_FAIL_NONE}, {-1, YP_ST_FAIL_RENAME}};
    for (int k = 0; k < 2; k++) {
        CHECK(yp_ckpt_save(&x, path, &m, &faults[k], &err) == -1);
        CHECK_STR_HAS(err.msg, k ? "renaming it into place failed" : "No space left on device (injected)");
        CHECK_STR_HAS(err.msg, "the previous file is intact");
        CHECK_EQ_I64(temp_files(), 0);
    }
    REQUIRE(make_exec(&back, &p, 5) == 0);
    yp_ckpt_info info;
    CHECK(yp_ckpt_resume(&back, path, &info, &err) == 0);
    CHECK_EQ_I64(info.epoch, 0);
    CHECK_EQ_I64(back.trainer.updates, 1);
    CHECK(same_state(&snap, &back) > 0);
    CHECK(differ(&x, &back)); /* x moved on by a step the failed saves did not keep */
    yp_ckpt_info_free(&info);
    yp_exec_free(&x), yp_exec_free(&snap), yp_exec_free(&back);
    yp_plan_free(&p);
}

/* The lines of f (rewound) into *lines; how many contain `needle`. */
static int count_lines(FILE *f, const char *needle, int *lines) {
    char buf[512];
    int n = 0;
    *lines = 0;
    rewind(f);
    while (fgets(buf, sizeof buf, f)) {
        (*lines)++;
        n += strstr(buf, needle) != NULL;
    }
    return n;
}

static void test_weights_other_nc(void) {
    yp_plan p3, p5;
    REQUIRE(make_plan(&p3, graph, YP_OPT_SGD, 1, 0) == 0);
    REQUIRE(make_plan(&p5, graph_nc5, YP_OPT_SGD, 1, 0) == 0);
    char path[128];
    path_in(path, sizeof path, "nc3.safetensors");
    yp_exec a, b, fresh;
    double loss[1][4];
    yp_err err;
    yp_ckpt_meta m = {0, 0, NULL};
    REQUIRE(make_exec(&a, &p3, 1) == 0);
    CHECK(run(&a, 0, 1, 1, loss) == 0);
    CHECK(yp_ckpt_save(&a, path, &m, NULL, &err) == 0);
    REQUIRE(make_exec(&b, &p5, 5) == 0);
    REQUIRE(make_exec(&fresh, &p5, 5) == 0);
    FILE *log = tmpfile();
    yp_ckpt_transfer r;
    CHECK(yp_ckpt_load_weights(&b, path, log, &r, &err) == 0);
    int weights = 0, lines = 0;
    for (int t = 0; t < b.train.s->n_tensors; t++) weights += b.train.s->tensors[t].kind == YP_KIND_WEIGHT;
    printf("  %d loaded, %d skipped, %d missing, %d unused of %d weights\n", r.loaded, r.skipped, r.missing, r.unused, weights);
    CHECK_EQ_I64(r.skipped, 6);
    CHECK_EQ_I64(r.loaded, weights - 6);
    CHECK_EQ_I64(r.missing, 0);
    CHECK(r.unused > weights); /* EMA copies and momentum */
    CHECK_EQ_I64(count_lines(log, "model.24.m.", &lines), 6);
    CHECK_EQ_I64(count_lines(log, "skipped", &lines), 7); /* six lines and the closing count */
    CHECK_EQ_I64(lines, 7);
    CHECK_EQ_I64(count_lines(log, "shape [24", &lines), 6);
    CHECK_EQ_I64(count_lines(log, "transferred", &lines), 1);
    fclose(log);
    for (int t = 0; t < b.train.s->n_tensors; t++) {
        const yp_tensor *d = &b.train.s->tensors[t];
        if (d->kind != YP_KIND_WEIGHT) continue;
        int ema = b.trainer.ema[t], head = !strncmp(d->name, "model.24.", 9);
        const yp_exec *src = head ? &fresh : &a; /* Detect's as initialised, the rest from the file */
        int u = head ? t : tensor_named(&a, d->name);
        CHECK(u >= 0);
        if (u < 0) continue;
        CHECK(memcmp(yp_exec_tensor(&b, t), yp_exec_tensor(src, u), (size_t)d->bytes) == 0);
        CHECK(ema >= 0 && memcmp(yp_exec_tensor(&b, ema), yp_exec_tensor(src, head ? ema : u), (size_t)d->bytes) == 0);
    }
    yp_exec_free(&a), yp_exec_free(&b), yp_exec_free(&fresh);
    yp_plan_free(&p3), yp_plan_free(&p5);
}

static void test_weights_dtypes(void) {
    yp_plan p;
    REQUIRE(make_plan(&p, graph, YP_OPT_SGD, 1, 0) == 0);
    yp_exec x, ref;
    REQUIRE(make_exec(&x, &p, 1) == 0);
    REQUIRE(make_exec(&ref, &p, 1) == 0);
    int t_w = yp_exec_find_param(&x, "model.0.conv.weight"), t_g = yp_exec_find_param(&x, "model.0.bn.weight");
    int t_m = yp_exec_find_param(&x, "model.0.bn.running_mean"), t_b = yp_exec_find_param(&x, "model.0.bn.bias");
    REQUIRE(t_w >= 0 && t_g >= 0 && t_m >= 0 && t_b >= 0);
    int64_t nw = x.train.s->tensors[t_w].shape.w, nc = x.train.s->tensors[t_g].shape.w;
    REQUIRE(nw == 8 * 3 * 6 * 6 && nc == 8);
    uint16_t *h = malloc((size_t)nw * 2), bf[8];
    double f64[8];
    int64_t i64[8] = {0};
    for (int64_t i = 0; i < nw; i++) h[i] = (uint16_t)(0x3C00 + (i % 7)); /* 1 + k/1024 */
    for (int i = 0; i < 8; i++) bf[i] = (uint16_t)(0x3F80 + i), f64[i] = 0.25 * i - 1; /* bf16: 1 + i/128 */
    yp_st_tensor ts[4] = {
        {.name = "model.0.conv.weight", .dtype = YP_ST_F16, .ndim = 4, .shape = {8, 3, 6, 6}, .data = h},
        {.name = "model.0.bn.weight", .dtype = YP_ST_BF16, .ndim = 1, .shape = {8}, .data = bf},
        {.name = "model.0.bn.running_mean", .dtype = YP_ST_F64, .ndim = 1, .shape = {8}, .data = f64},
        {.name = "model.0.bn.bias", .dtype = YP_ST_I64, .ndim = 1, .shape = {8}, .data = i64},
    };
    char path[128];
    path_in(path, sizeof path, "dtypes.safetensors");
    yp_st_desc d = {ts, 4, NULL, NULL, 0, NULL, NULL};
    yp_err err;
    yp_ckpt_transfer r;
    CHECK(yp_st_save(path, &d, NULL, &err) == 0);
    CHECK(yp_ckpt_load_weights(&x, path, NULL, &r, &err) == 0);
    CHECK_EQ_I64(r.loaded, 3);
    CHECK_EQ_I64(r.skipped, 1);
    CHECK_EQ_I64(r.unused, 0);
    const float *w = yp_exec_tensor(&x, t_w), *g = yp_exec_tensor(&x, t_g), *mu = yp_exec_tensor(&x, t_m);
    int bad = 0;
    for (int64_t i = 0; i < nw; i++) bad += w[i] != 1.0f + (float)(i % 7) / 1024.0f;
    for (int i = 0; i < 8; i++) bad += g[i] != 1.0f + (float)i / 128.0f, bad += mu[i] != (float)(0.25 * i - 1);
    CHECK_EQ_I64(bad, 0);
    CHECK(memcmp(yp_exec_tensor(&x, t_b), yp_exec_tensor(&ref, t_b), 8 * sizeof(float)) == 0); /* I64: skipped */
    free(h);
    yp_exec_free(&x), yp_exec_free(&ref);
    yp_plan_free(&p);
}

/* yp_ckpt_strip on a checkpoint of a run with EMA (or without): every weight and BN statistic from
 * its EMA copy (or the weights), each the F16 of its fp32 value rounded to nearest even, nothing
 * else (the data is 2 bytes a value, the size of the file about params x 2), epoch -1 and the
 * marker, the plan kept as its model; read_info, --weights and val's loader take it, --resume
 * refuses it and leaves the executor untouched; a second strip leaves it as it is. */
static void strip_case(int ema) {
    yp_plan p;
    REQUIRE(make_plan(&p, graph, YP_OPT_SGD, ema, 0) == 0);
    char path[128];
    path_in(path, sizeof path, ema ? "strip_ema.safetensors" : "strip.safetensors");
    yp_exec a, b, c;
    double loss[2][4];
    yp_err err;
    REQUIRE(make_exec(&a, &p, 1) == 0);
    CHECK(run(&a, 0, 2, 1, loss) == 0); /* two updates: the EMA differs from the weights */
    yp_ckpt_meta m = {4, 0.5, "{\"k\": 1}"};
    CHECK(yp_ckpt_save(&a, path, &m, NULL, &err) == 0);
    yp_ckpt_strip_result r;
    int rc = yp_ckpt_strip(path, &r, &err);
    if (rc) fprintf(stderr, "%s\n", err.msg);
    CHECK(rc == 0 && !r.already);
    yp_st_file f;
    REQUIRE(yp_st_open(&f, path, &err) == 0);
    int weights = 0, bad = 0, from_ema = 0;
    int64_t numel = 0;
    for (int t = 0; t < a.train.s->n_tensors; t++) {
        const yp_tensor *d = &a.train.s->tensors[t];
        if (d->kind != YP_KIND_WEIGHT) continue;
        weights++;
        int e = yp_st_find(&f, d->name), src = ema ? a.trainer.ema[t] : t;
        from_ema += src != t && memcmp(yp_exec_tensor(&a, src), yp_exec_tensor(&a, t), (size_t)d->bytes) != 0;
        if (e < 0 || f.e[e].dtype != YP_ST_F16 || f.e[e].end - f.e[e].begin != 2 * d->shape.w) {
            if (bad++ < 3) fprintf(stderr, "  %s: missing or not F16 of %lld values\n", d->name, (long long)d->shape.w);
            continue;
        }
        uint16_t *h = malloc((size_t)d->bytes);
        const float *v = yp_exec_tensor(&a, src);
        CHECK(h && yp_st_read(&f, e, h, &err) == 0);
        for (int64_t i = 0; h && i < d->shape.w; i++) bad += h[i] != yp_f32_to_f16(v[i]);
        free(h);
        numel += d->shape.w;
    }
    CHECK_EQ_I64(bad, 0);
    CHECK_EQ_I64(r.tensors, weights);
    CHECK_EQ_I64(f.n, weights); /* no ema.*, optimizer.*, grad.* */
    if (ema) CHECK(from_ema > weights / 2); /* the comparison above tells the EMA from the weights */
    CHECK_EQ_I64(f.file_bytes - f.data_start, 2 * numel);
    CHECK_EQ_I64(r.bytes_after, f.file_bytes);
    CHECK(r.bytes_before > (ema ? 4 : 2) * r.bytes_after);
    printf("  %s: %lld values, %lld bytes before, %lld after (%lld of header)\n", ema ? "EMA" : "no EMA",
           (long long)numel, (long long)r.bytes_before, (long long)r.bytes_after, (long long)f.data_start);
    CHECK_EQ_I64(f.n_meta, 6);
    const char *st = yp_st_meta(&f, "stripped"), *ep = yp_st_meta(&f, "epoch"), *op = yp_st_meta(&f, "options");
    const char *pl = yp_st_meta(&f, "plan");
    CHECK(st && !strcmp(st, "1") && ep && !strcmp(ep, "-1") && op && !strcmp(op, m.options));
    CHECK(pl && strstr(pl, "\"model\":") && !strstr(pl, "\"tensors\":"));
    yp_st_close(&f);
    yp_ckpt_info info;
    CHECK(yp_ckpt_read_info(path, &info, &err) == 0);
    CHECK(info.stripped == 1 && info.epoch == -1 && !info.optimizer[0]);
    yp_ckpt_info_free(&info);
    resume_refused(&p, path, "a stripped checkpoint");
    /* --weights and val's loader: each value the F16 one, back in F32 */
    REQUIRE(make_exec(&b, &p, 7) == 0);
    REQUIRE(make_exec(&c, &p, 7) == 0);
    yp_ckpt_transfer tw, te;
    CHECK(yp_ckpt_load_weights(&b, path, NULL, &tw, &err) == 0);
    CHECK(yp_ckpt_load_eval_weights(&c, path, NULL, &te, &err) == 0);
    CHECK_EQ_I64(tw.loaded, weights);
    CHECK_EQ_I64(te.loaded, weights);
    CHECK_EQ_I64(tw.skipped + tw.missing + tw.unused, 0);
    bad = 0;
    for (int t = 0; t < a.train.s->n_tensors; t++) {
        const yp_tensor *d = &a.train.s->tensors[t];
        if (d->kind != YP_KIND_WEIGHT) continue;
        const float *v = yp_exec_tensor(&a, ema ? a.trainer.ema[t] : t), *w = yp_exec_tensor(&b, t);
        const float *x = yp_exec_tensor(&c, t);
        for (int64_t i = 0; i < d->shape.w; i++) {
            float want = yp_f16_to_f32(yp_f32_to_f16(v[i]));
            bad += memcmp(&w[i], &want, 4) != 0 || memcmp(&x[i], &want, 4) != 0;
        }
    }
    CHECK_EQ_I64(bad, 0);
    /* stripping a stripped file leaves it */
    CHECK(yp_ckpt_strip(path, &r, &err) == 0);
    CHECK(r.already && r.bytes_before == r.bytes_after);
    yp_exec_free(&a), yp_exec_free(&b), yp_exec_free(&c);
    yp_plan_free(&p);
}

static void test_strip_ema(void) { strip_case(1); }
static void test_strip_no_ema(void) { strip_case(0); }

int main(void) {
    yp_err err;
    if (!mkdtemp(dir) || fx_load(YP_TEST_DATA "/step/step.bin", &fx)) {
        fprintf(stderr, "test_checkpoint: no scratch folder or no %s\n", YP_TEST_DATA "/step/step.bin");
        return 1;
    }
    graph = yp_yaml_import(YP_TEST_DATA "/yaml/good/yolov5t.yaml", 0, &err);
    graph_nc5 = graph ? yp_yaml_import(YP_TEST_DATA "/yaml/good/yolov5t.yaml", 5, &err) : NULL;
    const fx_record *img = fx_get(&fx, "images");
    if (!graph_nc5 || !img || yp_gpu_parse("a100-40gb", &gpu, &err)) {
        fprintf(stderr, "%s\n", err.msg);
        return 1;
    }
    images = malloc((size_t)img->numel * sizeof *images);
    char why[256] = "";
    cpu = yp_backend_cpu_new(NULL, why, sizeof why);
    if (!cpu || !images) {
        fprintf(stderr, "no CPU backend: %s\n", why);
        return 1;
    }
    YP_RUN(test_resume_sgd);
    YP_RUN(test_resume_adam_mid_accumulation);
    YP_RUN(test_resume_refuses);
    YP_RUN(test_failed_save_keeps_old);
    YP_RUN(test_weights_other_nc);
    YP_RUN(test_weights_dtypes);
    YP_RUN(test_strip_ema);
    YP_RUN(test_strip_no_ema);
    yp_test_remove_tree(dir);
    free(images);
    yp_backend_free(cpu);
    yp_graph_free(graph_nc5), yp_graph_free(graph);
    fx_free(&fx);
    return yp_test_summary();
}
