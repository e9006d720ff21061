/* test_eval.c - validation on the CPU executor against PyTorch (tests/ref/make_eval_fixture.py:
 * yolov5n, nc 80, 64x64; training batch 2, so validation at 4): the pass the plan maps into the
 * training arena gives model.eval()'s decoded boxes and val.py's loss for a batch smaller than
 * planned; after two SGD updates it reads the EMA copies (PyTorch's ModelEMA, and exactly an
 * executor whose weights are those EMA values, not the trained ones); training continues bit for
 * bit as if it had not run; guard canaries hold around its tensors; it refuses a batch the plan
 * does not hold, a backend without its ops, and a plan whose mapping is corrupt. */
#include <math.h>

#include "step_fixture.h"
#include "yp_executor.h"
#include "yp_test.h"
#include "yp_test_models.h"

/* Tolerances, against what was measured (ours vs the fixture, per field group, max |a - b| /
 * max |b|; the three groups -- box centres, sizes, scores -- are held apart so that an error in
 * the scores cannot hide under box values ~1000x larger), over 1 to 4 OpenMP threads:
 * DECODE_TOL  the initial weights: 2.1e-5 (the scores; centres and sizes 1.2e-5, 1.5e-5): fp32
 *             through ~60 layers in another summation order, then the decode. 1e-4, as the op tests.
 * EMA_TOL     after 2 SGD updates of our own training: 1.1e-3 (the scores); PyTorch's fp32 run
 *             against the same run with the model in fp64 differs by 1.0e-3 there, so this is the
 *             training's fp32 noise. The trained weights instead of the EMA are 0.68 off. 1e-2:
 *             ~9x above ours, ~70x below the wrong weights.
 * LOSS_TOL    the validation loss: 1e-4 relative (the training step's loss tolerance); ours ~2e-7. */
#define DECODE_TOL 1e-4
#define EMA_TOL 1e-2
#define LOSS_TOL 1e-4

static fx_file fx;
static yp_graph *graph;
static yp_gpu gpu;
static yp_backend *cpu;

/* A plan of yolov5n at batch 2, 64 px, fp32, EMA on, room for 4 labels per image. */
static int make_plan(yp_plan *p) {
    yp_err err;
    yp_candidate c = yp_candidate_default();
    c.batch = 2, c.img_w = c.img_h = 64, c.mosaic = 0, c.labels_per_image = 4;
    c.val_rect = 0; /* the fixture's 64 x 64 batches: square validation at the nominal size */
    yp_exec_candidate_for(&c, cpu);
    if (yp_plan_build(graph, &c, &gpu, 0, 0, p, &err)) {
        fprintf(stderr, "%s\n", err.msg);
        return -1;
    }
    return 0;
}

/* Loads every record "<prefix><name>" into x's parameter <name> (and its EMA copy). */
static int load_prefixed(yp_exec *x, const char *prefix) {
    yp_err err;
    size_t n = strlen(prefix);
    int loaded = 0;
    for (int i = 0; i < fx.n; i++) {
        if (strncmp(fx.r[i].name, prefix, n)) continue;
        yp_named_tensor nt = {fx.r[i].name + n, fx.r[i].data, fx.r[i].numel};
        if (yp_exec_load_params(x, &nt, 1, &err)) {
            fprintf(stderr, "%s\n", err.msg);
            return -1;
        }
        loaded++;
    }
    return loaded > 0 ? 0 : -1;
}

/* An executor on p with the fixture's initial weights. */
static int make_exec(yp_exec *x, const yp_plan *p, int64_t guard) {
    yp_err err;
    if (yp_exec_init(x, p, cpu, guard, 1, &err)) {
        fprintf(stderr, "%s\n", err.msg);
        return -1;
    }
    if (load_prefixed(x, "init16/")) {
        yp_exec_free(x);
        return -1;
    }
    return 0;
}

/* Validation of the fixture's eval images (with their labels) into decoded (host, n * boxes * fields). */
static int run_eval(yp_exec *x, float *decoded, double loss[4]) {
    const fx_record *img = fx_get(&fx, "eval/images"), *tg = fx_get(&fx, "eval/targets");
    yp_eval_shape e = yp_exec_eval_shape(x);
    yp_eval_batch in = {.images = img->data, .n_images = img->numel / (e.h * e.w * 3), .targets = tg->data, .n_targets = tg->numel / 6};
    yp_eval_out out = {.decoded = decoded, .loss = {0}};
    yp_err err;
    if (yp_exec_eval(x, &in, &out, &err)) {
        fprintf(stderr, "%s\n", err.msg);
        return -1;
    }
    if (loss) memcpy(loss, out.loss, sizeof out.loss);
    return 0;
}

/* One training micro-batch of the fixture and the update. */
static int train_step(yp_exec *x, double loss[4]) {
    const fx_record *img = fx_get(&fx, "train/images"), *tg = fx_get(&fx, "train/targets");
    yp_err err;
    if (yp_exec_micro_step(x, img->data, tg->data, tg->numel / 6, loss, &err) || yp_exec_update(x, &err)) {
        fprintf(stderr, "%s\n", err.msg);
        return -1;
    }
    return 0;
}

/* The worst of max |a - b| / max |b| over the field groups box centre (x, y), size (w, h) and
 * scores, over rows of `fields` floats. */
static double decoded_err(const float *a, const float *b, int64_t rows, int64_t fields) {
    static const int lo[3] = {0, 2, 4}, hi[3] = {2, 4, -1};
    double worst = 0;
    for (int k = 0; k < 3; k++) {
        double num = 0, den = 0;
        int64_t end = hi[k] < 0 ? fields : hi[k];
        for (int64_t r = 0; r < rows; r++)
            for (int64_t f = lo[k]; f < end; f++) {
                double d = fabs((double)a[r * fields + f] - b[r * fields + f]), m = fabs(b[r * fields + f]);
                if (isnan(d)) return INFINITY;
                num = d > num ? d : num, den = m > den ? m : den;
            }
        double e = den > 0 ? num / den : num;
        worst = e > worst ? e : worst;
    }
    return worst;
}

static float *decoded_buf(const yp_exec *x) {
    yp_eval_shape e = yp_exec_eval_shape(x);
    return malloc((size_t)(e.batch * e.boxes * e.fields) * sizeof(float));
}

/* model.eval() of the initial weights: boxes and loss, for 3 images where 4 are planned. */
static void test_eval_matches_pytorch(void) {
    yp_plan p;
    yp_exec x;
    REQUIRE(make_plan(&p) == 0);
    if (make_exec(&x, &p, 0)) {
        CHECK(0);
        yp_plan_free(&p);
        return;
    }
    yp_eval_shape e = yp_exec_eval_shape(&x);
    CHECK_EQ_I64(e.batch, 4);
    CHECK_EQ_I64(e.boxes, 3 * (8 * 8 + 4 * 4 + 2 * 2));
    CHECK_EQ_I64(e.fields, 85);
    CHECK_EQ_I64(x.train.arena_bytes, p.arena_bytes); /* validation allocates nothing of its own */
    const fx_record *want = fx_get(&fx, "eval/decoded"), *wl = fx_get(&fx, "eval/loss");
    REQUIRE(want && wl && want->numel == 3 * e.boxes * e.fields);
    float *got = decoded_buf(&x);
    double loss[4];
    CHECK(run_eval(&x, got, loss) == 0);
    double err = decoded_err(got, want->data, 3 * e.boxes, e.fields);
    printf("  decoded boxes vs model.eval(): worst rel err %.2e over %lld rows\n", err, (long long)(3 * e.boxes));
    CHECK(err <= DECODE_TOL);
    printf("  validation loss %.7f (torch %.7f): box %.7f/%.7f obj %.7f/%.7f cls %.7f/%.7f\n", loss[3], wl->data[3],
           loss[0], wl->data[0], loss[1], wl->data[1], loss[2], wl->data[2]);
    for (int k = 0; k < 4; k++) CHECK(fabs(loss[k] - wl->data[k]) <= LOSS_TOL * fabs(wl->data[k]));
    /* no labels: the boxes alone, the same */
    const fx_record *img = fx_get(&fx, "eval/images");
    yp_eval_batch in = {.images = img->data, .n_images = 3, .targets = NULL, .n_targets = 0};
    yp_eval_out out = {.decoded = got, .loss = {1, 1, 1, 1}};
    yp_err why;
    CHECK(yp_exec_eval(&x, &in, &out, &why) == 0);
    CHECK(decoded_err(got, want->data, 3 * e.boxes, e.fields) == err && out.loss[3] == 0.0);
    free(got);
    yp_exec_free(&x);
    yp_plan_free(&p);
}

/* Copies every parameter of `from` (its EMA copies when ema) into `to` (its weights and EMA). */
static int copy_params(const yp_exec *from, yp_exec *to, int ema) {
    yp_err err;
    for (int t = 0; t < from->train.s->n_tensors; t++) {
        const yp_tensor *w = &from->train.s->tensors[t];
        if (w->kind != YP_KIND_WEIGHT) continue;
        yp_named_tensor nt = {w->name, yp_exec_tensor(from, ema ? from->trainer.ema[t] : t), w->shape.w};
        if (yp_exec_load_params(to, &nt, 1, &err)) {
            fprintf(stderr, "%s\n", err.msg);
            return -1;
        }
    }
    return 0;
}

/* After two SGD updates (ModelEMA resumed at 1000 updates, decay ~0.39) validation reads the EMA:
 * PyTorch's EMA model's boxes, exactly those of an executor holding the EMA values as weights,
 * and not those of one holding the trained weights. */
static void test_eval_reads_ema(void) {
    yp_plan p;
    yp_exec x, y;
    REQUIRE(make_plan(&p) == 0);
    if (make_exec(&x, &p, 0)) {
        CHECK(0);
        yp_plan_free(&p);
        return;
    }
    const fx_record *u0 = fx_get(&fx, "ema/updates0"), *want = fx_get(&fx, "ema/decoded");
    REQUIRE(u0 && want);
    x.trainer.updates = (int64_t)u0->data[0];
    for (int k = 1; k <= 2; k++) {
        double loss[4];
        char name[32];
        CHECK(train_step(&x, loss) == 0);
        snprintf(name, sizeof name, "train/loss/%d", k);
        const fx_record *lr = fx_get(&fx, name);
        CHECK(lr && fabs(loss[3] - lr->data[3]) <= 1e-3 * fabs(lr->data[3]));
    }
    yp_eval_shape e = yp_exec_eval_shape(&x);
    int64_t rows = 3 * e.boxes;
    float *ours = decoded_buf(&x), *ema_w = decoded_buf(&x), *live_w = decoded_buf(&x);
    CHECK(run_eval(&x, ours, NULL) == 0);
    double vs_torch = decoded_err(ours, want->data, rows, e.fields);
    printf("  after 2 updates: boxes vs PyTorch's EMA model: worst rel err %.2e\n", vs_torch);
    CHECK(vs_torch <= EMA_TOL);
    /* an executor whose weights are x's EMA copies gives the same boxes, bit for bit */
    if (make_exec(&y, &p, 0) == 0) {
        CHECK(copy_params(&x, &y, 1) == 0);
        CHECK(run_eval(&y, ema_w, NULL) == 0);
        CHECK(memcmp(ours, ema_w, (size_t)(rows * e.fields) * sizeof(float)) == 0);
        CHECK(copy_params(&x, &y, 0) == 0); /* the trained weights: far from it */
        CHECK(run_eval(&y, live_w, NULL) == 0);
        double off = decoded_err(live_w, want->data, rows, e.fields);
        printf("  the trained weights instead: worst rel err %.2e vs PyTorch's EMA model\n", off);
        CHECK(off > 3 * EMA_TOL);
        yp_exec_free(&y);
    } else {
        CHECK(0);
    }
    free(ours), free(ema_w), free(live_w);
    yp_exec_free(&x);
    yp_plan_free(&p);
}

/* Every whole-step tensor of training (weights, gradients, optimizer state, EMA) of a and b equal. */
static int same_state(const yp_exec *a, const yp_exec *b) {
    for (int t = 0; t < a->train.s->n_tensors; t++) {
        const yp_tensor *w = &a->train.s->tensors[t];
        if (w->first == 0 && w->last == a->train.s->n_steps - 1 &&
            memcmp(yp_exec_tensor(a, t), yp_exec_tensor(b, t), (size_t)w->bytes)) {
            fprintf(stderr, "  %s differs\n", w->name);
            return 0;
        }
    }
    return 1;
}

/* Steps, validation, steps: bit for bit the same as the steps alone (validation writes only
 * above the whole-step region, and every training step writes its transient tensors before
 * reading them). Also between micro-batches of an accumulation. */
static void test_eval_leaves_training(void) {
    yp_plan p;
    yp_exec a, b;
    REQUIRE(make_plan(&p) == 0);
    if (make_exec(&a, &p, 0) || make_exec(&b, &p, 0)) {
        CHECK(0);
        yp_plan_free(&p);
        return;
    }
    const fx_record *img = fx_get(&fx, "train/images"), *tg = fx_get(&fx, "train/targets");
    float *boxes = decoded_buf(&a);
    double la[4], lb[4];
    yp_err err;
    int same_loss = 1;
    for (int k = 0; k < 4; k++) {
        CHECK(train_step(&a, la) == 0 && train_step(&b, lb) == 0);
        same_loss &= !memcmp(la, lb, sizeof la);
        if (k == 1) CHECK(run_eval(&a, boxes, NULL) == 0); /* between updates */
        /* and between the micro-batches of one update */
        CHECK(yp_exec_micro_step(&a, img->data, tg->data, tg->numel / 6, la, &err) == 0);
        CHECK(yp_exec_micro_step(&b, img->data, tg->data, tg->numel / 6, lb, &err) == 0);
        if (k == 2) CHECK(run_eval(&a, boxes, NULL) == 0);
        same_loss &= !memcmp(la, lb, sizeof la);
    }
    CHECK(yp_exec_update(&a, &err) == 0 && yp_exec_update(&b, &err) == 0);
    CHECK(same_loss);
    CHECK(same_state(&a, &b));
    /* not vacuous: the steps moved the weights */
    int w = yp_exec_find_param(&a, "model.0.conv.weight");
    const fx_record *w0 = fx_get(&fx, "init16/model.0.conv.weight");
    CHECK(w >= 0 && w0 && memcmp(yp_exec_tensor(&a, w), w0->data, (size_t)a.train.s->tensors[w].bytes) != 0);
    free(boxes);
    yp_exec_free(&a);
    yp_exec_free(&b);
    yp_plan_free(&p);
}

/* With guard canaries around every tensor, validation keeps them intact, gives the same boxes,
 * and training still runs after it; a write past a validation tensor is caught. */
static void test_eval_guards(void) {
    yp_plan p;
    yp_exec x, y;
    REQUIRE(make_plan(&p) == 0);
    if (make_exec(&x, &p, 256) || make_exec(&y, &p, 0)) {
        CHECK(0);
        yp_plan_free(&p);
        return;
    }
    CHECK(x.train.arena_bytes > p.arena_bytes);
    float *a = decoded_buf(&x), *b = decoded_buf(&x);
    double la[4], lb[4];
    CHECK(run_eval(&x, a, la) == 0);
    CHECK(run_eval(&y, b, lb) == 0);
    yp_eval_shape e = yp_exec_eval_shape(&x);
    CHECK(memcmp(a, b, (size_t)(3 * e.boxes * e.fields) * sizeof(float)) == 0 && la[3] == lb[3]);
    CHECK(train_step(&x, la) == 0 && train_step(&y, lb) == 0);
    CHECK(la[3] == lb[3]);
    CHECK(run_eval(&x, a, NULL) == 0);
    const yp_binding *v = x.eval;
    int last = v->s->n_steps - 1, t = v->s->steps[last].a.decoded;
    REQUIRE(t >= 0);
    ((unsigned char *)yp_bind_tensor(v, t))[v->s->tensors[t].bytes] = 0;
    yp_err err;
    CHECK(yp_bind_check_guards(v, last, &err) == -1);
    CHECK_STR_HAS(err.msg, "decoded:");
    free(a), free(b);
    yp_exec_free(&x);
    yp_exec_free(&y);
    yp_plan_free(&p);
}

/* What validation refuses, with one line each. */
static void test_eval_refuses(void) {
    yp_plan p;
    yp_exec x;
    yp_err err;
    REQUIRE(make_plan(&p) == 0);
    if (make_exec(&x, &p, 0)) {
        CHECK(0);
        yp_plan_free(&p);
        return;
    }
    const fx_record *img = fx_get(&fx, "eval/images"), *tg = fx_get(&fx, "eval/targets");
    yp_eval_out out = {.decoded = NULL, .loss = {0}};
    yp_eval_batch in = {.images = img->data, .n_images = 5, .targets = NULL, .n_targets = 0}; /* more than the planned 4 */
    CHECK(yp_exec_eval(&x, &in, &out, &err) == -1);
    CHECK_STR_HAS(err.msg, "validates 1..4 per call");
    in.n_images = 0;
    CHECK(yp_exec_eval(&x, &in, &out, &err) == -1);
    in.n_images = 3, in.targets = tg->data, in.n_targets = 1000;
    CHECK(yp_exec_eval(&x, &in, &out, &err) == -1);
    CHECK_STR_HAS(err.msg, "labels; the plan holds at most");
    in.n_targets = tg->numel / 6;
    CHECK(yp_exec_eval(&x, &in, &out, &err) == 0);
    /* a backend without the decode */
    yp_ops no_decode = *x.eval->ops;
    no_decode.detect_decode = NULL;
    const yp_ops *ops = x.eval->ops;
    x.eval->ops = &no_decode;
    CHECK(yp_exec_eval(&x, &in, &out, &err) == -1);
    CHECK_STR_HAS(err.msg, "has no detect_decode op yet, which validation needs");
    x.eval->ops = ops;
    yp_exec_free(&x);
    /* a corrupt mapping: the plan is refused before anything is allocated */
    int w = -1;
    for (int t = 0; t < p.val.sched->n_tensors && w < 0; t++)
        if (p.val.sched->tensors[t].role == YP_ROLE_RUNNING_VAR) w = t;
    REQUIRE(w >= 0);
    int saved = p.val.alias[w];
    p.val.alias[w] = p.sched->tensors[saved].param; /* the live running variance, not its EMA */
    p.val.offsets[w] = p.arena.offsets[p.val.alias[w]];
    CHECK(yp_exec_init(&x, &p, cpu, 0, 1, &err) == -1);
    CHECK_STR_HAS(err.msg, "validation pass cannot be bound");
    CHECK_STR_HAS(err.msg, "running_var");
    p.val.alias[w] = saved, p.val.offsets[w] = p.arena.offsets[saved];
    CHECK(yp_exec_init(&x, &p, cpu, 0, 1, &err) == 0);
    yp_exec_free(&x);
    yp_plan_free(&p);
}

int main(void) {
    yp_err err;
    if (fx_load(YP_TEST_DATA "/eval/eval.bin", &fx)) {
        fprintf(stderr, "cannot read %s\n", YP_TEST_DATA "/eval/eval.bin");
        return 1;
    }
    graph = yp_test_model("yolov5n");
    if (!graph || yp_gpu_parse("a100-40gb", &gpu, &err)) {
        fprintf(stderr, "%s\n", graph ? err.msg : "no yolov5n");
        return 1;
    }
    char why[256] = "";
    cpu = yp_backend_cpu_new(NULL, why, sizeof why);
    if (!cpu) {
        fprintf(stderr, "no CPU backend: %s\n", why);
        return 1;
    }
    YP_RUN(test_eval_matches_pytorch);
    YP_RUN(test_eval_reads_ema);
    YP_RUN(test_eval_leaves_training);
    YP_RUN(test_eval_guards);
    YP_RUN(test_eval_refuses);
    yp_backend_free(cpu);
    yp_graph_free(graph);
    fx_free(&fx);
    return yp_test_summary();
}
