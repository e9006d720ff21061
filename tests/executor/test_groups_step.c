/* test_groups_step.c - a CPU training step over a graph with grouped and depthwise convs
 * (tests/data/ir/tiny_dw.json: a Conv, DWConvs 5x5 s1 and 3x3 s2, a groups=2 Conv, Detect),
 * planned as the executor plans for the CPU, batch 2 at 32 px, against its dense twin: the same
 * graph with every conv at groups 1 and block-diagonal weights (zero outside each group's block),
 * which computes the same function through the ungrouped convs (test_step.c checks those against
 * PyTorch). The losses agree, and so do the grouped convs' weight gradients with the diagonal
 * blocks of the dense ones, within 1e-4 relative (fp32 sums in other orders and through more
 * zeros: ~1e-6 measured); the dense gradients outside the blocks, which the grouped conv has no
 * weights for, are not compared. Then three SGD updates run on the grouped plan with the loss
 * finite, every gradient finite, and every grouped conv's weights moved. Last, one step of
 * YOLOv5's yolov5s-ghost as the importer builds it. */
#include <math.h>

#include "yp_executor.h"
#include "yp_ir.h"
#include "yp_test.h"
#include "yp_yaml.h"

static yp_backend *cpu;
static yp_gpu gpu;

/* tiny_dw.json, and its text with every "groups" set to 1. */
static char *read_text(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *t = malloc((size_t)n + 1);
    if (t && fread(t, 1, (size_t)n, f) != (size_t)n) free(t), t = NULL;
    if (t) t[n] = 0;
    fclose(f);
    return t;
}

static void ungroup(char *t) {
    for (char *p = strstr(t, "\"groups\": "); p; p = strstr(p + 1, "\"groups\": ")) {
        char *v = p + strlen("\"groups\": ");
        *v = '1'; /* "groups": 8 -> "groups": 1 (one digit in this file) */
        CHECK(v[1] == ',');
    }
}

static int plan_and_init(const yp_graph *g, yp_plan *p, yp_exec *x) {
    yp_err err;
    yp_candidate c = yp_candidate_default();
    c.batch = 2, c.img_w = c.img_h = 32, c.mosaic = 0, c.labels_per_image = 4;
    yp_exec_candidate_for(&c, cpu);
    if (yp_plan_build(g, &c, &gpu, 0, 0, p, &err)) {
        fprintf(stderr, "plan: %s\n", err.msg);
        return -1;
    }
    if (yp_exec_init(x, p, cpu, 0, 7, &err)) {
        fprintf(stderr, "init: %s\n", err.msg);
        yp_plan_free(p);
        return -1;
    }
    return 0;
}

/* Copies every parameter of a (grouped) into b (dense): grouped conv weights into the diagonal
 * blocks of zeros. */
static int copy_params(const yp_exec *a, const yp_graph *ga, yp_exec *b) {
    const yp_schedule *s = a->train.s;
    yp_err err;
    for (int t = 0; t < s->n_tensors; t++) {
        const yp_tensor *tt = &s->tensors[t];
        if (tt->kind != YP_KIND_WEIGHT) continue;
        const float *src = yp_exec_tensor(a, t);
        int64_t n = tt->shape.n * tt->shape.c * tt->shape.h * tt->shape.w;
        float *dense = NULL;
        if (tt->role == YP_ROLE_CONV_WEIGHT && ga->nodes[tt->node].op == YP_OP_CONV2D &&
            ga->nodes[tt->node].a.conv.groups > 1) {
            const yp_conv_attrs *c = &ga->nodes[tt->node].a.conv;
            const int64_t kk = (int64_t)c->kh * c->kw, cig = c->c_in / c->groups, cog = c->c_out / c->groups;
            if (n != c->c_out * cig * kk) return -1;
            n = (int64_t)c->c_out * c->c_in * kk;
            dense = calloc((size_t)n, sizeof *dense);
            for (int64_t o = 0; o < c->c_out; o++)
                for (int64_t i = 0; i < cig; i++)
                    memcpy(dense + (o * c->c_in + o / cog * cig + i) * kk, src + (o * cig + i) * kk,
                           (size_t)kk * sizeof *dense);
        }
        yp_named_tensor nt = {tt->name, dense ? dense : (float *)src, n};
        int rc = yp_exec_load_params(b, &nt, 1, &err);
        free(dense);
        if (rc) {
            fprintf(stderr, "load %s: %s\n", tt->name, err.msg);
            return -1;
        }
    }
    return 0;
}

/* max |grouped - dense block| / max |dense block| over a grouped conv's weight gradient. */
static double block_err(const yp_conv_attrs *c, const float *g, const float *dense) {
    const int64_t kk = (int64_t)c->kh * c->kw, cig = c->c_in / c->groups, cog = c->c_out / c->groups;
    double num = 0, den = 0;
    for (int64_t o = 0; o < c->c_out; o++)
        for (int64_t i = 0; i < cig; i++)
            for (int64_t r = 0; r < kk; r++) {
                double want = dense[(o * c->c_in + o / cog * cig + i) * kk + r], got = g[(o * cig + i) * kk + r];
                if (!isfinite(got)) return INFINITY;
                num = fmax(num, fabs(got - want)), den = fmax(den, fabs(want));
            }
    return num == 0 ? 0 : num / den;
}

/* The batch: deterministic images in [0, 1) and two labels per image (image, class, cx, cy, w, h). */
static void batch(float *img, int64_t n, float *tg) {
    uint64_t st = 12345;
    for (int64_t i = 0; i < n; i++) {
        st ^= st << 13, st ^= st >> 7, st ^= st << 17; /* xorshift64 */
        img[i] = (float)((double)(st >> 11) / 9007199254740992.0);
    }
    const float rows[4][6] = {{0, 0, 0.3f, 0.4f, 0.2f, 0.3f}, {0, 0, 0.7f, 0.6f, 0.4f, 0.2f},
                              {1, 0, 0.5f, 0.5f, 0.3f, 0.3f}, {1, 0, 0.2f, 0.8f, 0.15f, 0.25f}};
    memcpy(tg, rows, sizeof rows);
}

static void test_grouped_vs_dense(void) {
    yp_err err;
    char *text = read_text(YP_TEST_DATA "/ir/tiny_dw.json"), *dtext = text ? strdup(text) : NULL;
    REQUIRE(text && dtext);
    ungroup(dtext);
    yp_graph *g = yp_ir_load_buffer(text, strlen(text), "tiny_dw.json", &err);
    yp_graph *gd = g ? yp_ir_load_buffer(dtext, strlen(dtext), "tiny_dw.json (groups 1)", &err) : NULL;
    if (!gd) fprintf(stderr, "%s\n", err.msg);
    REQUIRE(g && gd);
    int grouped = 0;
    for (int i = 0; i < g->n_nodes; i++) grouped += g->nodes[i].op == YP_OP_CONV2D && g->nodes[i].a.conv.groups > 1;
    CHECK_EQ_I64(grouped, 3);
    yp_plan p, pd;
    yp_exec x, xd;
    REQUIRE(plan_and_init(g, &p, &x) == 0);
    REQUIRE(plan_and_init(gd, &pd, &xd) == 0);
    REQUIRE(copy_params(&x, g, &xd) == 0);

    static float img[2 * 32 * 32 * 3], tg[4 * 6];
    batch(img, 2 * 32 * 32 * 3, tg);
    double loss[4], dloss[4];
    REQUIRE(yp_exec_micro_step(&x, img, tg, 4, loss, &err) == 0);
    REQUIRE(yp_exec_micro_step(&xd, img, tg, 4, dloss, &err) == 0);
    printf("  loss grouped %.7f dense %.7f\n", loss[3], dloss[3]);
    CHECK(isfinite(loss[3]) && loss[3] > 0);
    CHECK(fabs(loss[3] - dloss[3]) <= 1e-5 * fabs(dloss[3]));

    const yp_schedule *s = x.train.s;
    int compared = 0;
    for (int t = 0; t < s->n_tensors; t++) {
        const yp_tensor *tt = &s->tensors[t];
        if (tt->kind != YP_KIND_WEIGHT || tt->grad < 0) continue;
        const yp_node *n = &g->nodes[tt->node];
        int td = yp_exec_find_param(&xd, tt->name);
        REQUIRE(td >= 0 && xd.train.s->tensors[td].grad >= 0);
        const float *ga = yp_exec_tensor(&x, tt->grad), *gb = yp_exec_tensor(&xd, xd.train.s->tensors[td].grad);
        double e;
        if (tt->role == YP_ROLE_CONV_WEIGHT && n->op == YP_OP_CONV2D && n->a.conv.groups > 1) {
            e = block_err(&n->a.conv, ga, gb);
            compared++;
        } else {
            int64_t m = tt->shape.n * tt->shape.c * tt->shape.h * tt->shape.w;
            double num = 0, den = 0;
            for (int64_t i = 0; i < m; i++) num = fmax(num, fabs(ga[i] - gb[i])), den = fmax(den, fabs(gb[i]));
            e = num == 0 ? 0 : num / den;
            if (!isfinite(num)) e = INFINITY;
        }
        if (!(e <= 1e-4)) fprintf(stderr, "  %s gradient: rel err %.3g\n", tt->name, e);
        CHECK(e <= 1e-4);
    }
    CHECK_EQ_I64(compared, 3);
    yp_exec_free(&xd);
    yp_plan_free(&pd);

    /* three updates on the grouped plan: finite losses and gradients, the grouped weights move */
    float *before[3] = {NULL};
    int wt[3], k = 0;
    for (int t = 0; t < s->n_tensors && k < 3; t++) {
        const yp_tensor *tt = &s->tensors[t];
        if (tt->kind == YP_KIND_WEIGHT && tt->role == YP_ROLE_CONV_WEIGHT && g->nodes[tt->node].op == YP_OP_CONV2D &&
            g->nodes[tt->node].a.conv.groups > 1) {
            wt[k] = t;
            before[k] = malloc((size_t)tt->bytes);
            memcpy(before[k++], yp_exec_tensor(&x, t), (size_t)tt->bytes);
        }
    }
    CHECK(yp_exec_update(&x, &err) == 0);
    for (int step = 0; step < 2; step++) {
        CHECK(yp_exec_micro_step(&x, img, tg, 4, loss, &err) == 0);
        CHECK(isfinite(loss[3]));
        CHECK(yp_exec_update(&x, &err) == 0);
    }
    CHECK(isfinite(x.trainer.last_grad_norm) && x.trainer.last_grad_norm > 0);
    for (int i = 0; i < k; i++) {
        const float *now = yp_exec_tensor(&x, wt[i]);
        int64_t n = s->tensors[wt[i]].bytes / (int64_t)sizeof(float), moved = 0;
        for (int64_t j = 0; j < n; j++) moved += now[j] != before[i][j] && isfinite(now[j]);
        CHECK(moved > 0);
        free(before[i]);
    }
    yp_exec_free(&x);
    yp_plan_free(&p);
    yp_graph_free(g), yp_graph_free(gd);
    free(text), free(dtext);
}

/* YOLOv5's own ghost model (models/hub/yolov5s-ghost.yaml: GhostConv, C3Ghost, their DWConvs)
 * through the importer: one micro-step on the CPU at batch 1, 64 px, gives a finite loss and
 * finite gradients for every grouped conv. */
static void test_yolov5s_ghost_step(void) {
    yp_err err;
    yp_graph *g = yp_yaml_import(YP_TEST_DATA "/zoo/hub/yolov5s-ghost.yaml", 0, &err);
    if (!g) fprintf(stderr, "%s\n", err.msg);
    REQUIRE(g != NULL);
    int grouped = 0;
    for (int i = 0; i < g->n_nodes; i++) grouped += g->nodes[i].op == YP_OP_CONV2D && g->nodes[i].a.conv.groups > 1;
    CHECK(grouped > 10);
    yp_plan p;
    yp_exec x;
    yp_candidate c = yp_candidate_default();
    c.batch = 1, c.img_w = c.img_h = 64, c.mosaic = 0, c.labels_per_image = 2;
    yp_exec_candidate_for(&c, cpu);
    int rc = yp_plan_build(g, &c, &gpu, 0, 0, &p, &err);
    if (rc) fprintf(stderr, "plan: %s\n", err.msg);
    REQUIRE(rc == 0);
    rc = yp_exec_init(&x, &p, cpu, 0, 3, &err);
    if (rc) fprintf(stderr, "init: %s\n", err.msg), yp_plan_free(&p);
    REQUIRE(rc == 0);
    static float img[64 * 64 * 3], tg[4 * 6];
    batch(img, 64 * 64 * 3, tg);
    double loss[4];
    CHECK(yp_exec_micro_step(&x, img, tg, 2, loss, &err) == 0);
    printf("  yolov5s-ghost: %d grouped convs, loss %.6f\n", grouped, loss[3]);
    CHECK(isfinite(loss[3]) && loss[3] > 0);
    const yp_schedule *s = x.train.s;
    int checked = 0;
    for (int t = 0; t < s->n_tensors; t++) {
        const yp_tensor *tt = &s->tensors[t];
        if (tt->kind != YP_KIND_WEIGHT || tt->grad < 0 || tt->role != YP_ROLE_CONV_WEIGHT) continue;
        if (g->nodes[tt->node].op != YP_OP_CONV2D || g->nodes[tt->node].a.conv.groups == 1) continue;
        const float *gr = yp_exec_tensor(&x, tt->grad);
        int64_t n = s->tensors[tt->grad].bytes / (int64_t)sizeof(float), finite = 0;
        for (int64_t i = 0; i < n; i++) finite += isfinite(gr[i]) != 0;
        CHECK_EQ_I64(finite, n);
        checked++;
    }
    CHECK_EQ_I64(checked, grouped);
    yp_exec_free(&x);
    yp_plan_free(&p);
    yp_graph_free(g);
}

int main(void) {
    yp_err err;
    char why[256] = "";
    if (yp_gpu_parse("a100-40gb", &gpu, &err)) {
        fprintf(stderr, "%s\n", err.msg);
        return 1;
    }
    cpu = yp_backend_cpu_new(NULL, why, sizeof why);
    if (!cpu) {
        fprintf(stderr, "no CPU backend: %s\n", why);
        return 1;
    }
    YP_RUN(test_grouped_vs_dense);
    YP_RUN(test_yolov5s_ghost_step);
    yp_backend_free(cpu);
    return yp_test_summary();
}
