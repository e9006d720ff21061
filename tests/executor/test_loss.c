/* test_loss.c - YOLOv5's loss and its gradient (executor/loss.c driving the CPU backend's
 * loss_level, kernels/cpu/loss.c) against the PyTorch reference (bench/reference/loss.py; fixtures
 * in tests/data/loss written by tests/ref/make_loss_fixtures.py), plus finite differences, target
 * assignment and CIoU on their own, the gain scaling, and the input checks of both sides. */
#include "yp_ciou.h"
#include "yp_loss.h"
#include "yp_test.h"

#include <stdint.h>
#include <stdlib.h>

#define MAXL YP_LOSS_MAX_LEVELS

typedef struct {
    int batch, nc, na, nl, img_w, img_h, nt;
    int strides[MAXL], npos[MAXL];
    int64_t gh[MAXL], gw[MAXL];
    float anchors[MAXL][YP_LOSS_MAX_ANCHORS][2];
    float hyp[3];                     /* box, obj, cls before scaling */
    float gains[3], anchor_t, smooth; /* as applied */
    float balance[MAXL];
    float *targets, *preds[MAXL], *dpreds[MAXL];
    float out[4]; /* lbox, lobj, lcls, total */
    unsigned char *file;
} fixture;

typedef struct {
    const unsigned char *p, *end;
} reader;

static int rd(reader *r, void *dst, size_t n) {
    if ((size_t)(r->end - r->p) < n)
        return -1;
    memcpy(dst, r->p, n);
    r->p += n;
    return 0;
}

/* Reads one fixture; floats point into f->file. Returns 0, or -1 (message printed). */
static int fixture_load(fixture *f, const char *name) {
    char path[512];
    snprintf(path, sizeof path, "%s/loss/%s.bin", YP_TEST_DATA, name);
    memset(f, 0, sizeof *f);
    FILE *fp = fopen(path, "rb");
    if (!fp) {
        fprintf(stderr, "cannot open %s\n", path);
        return -1;
    }
    fseek(fp, 0, SEEK_END);
    long size = ftell(fp);
    fseek(fp, 0, SEEK_SET);
    f->file = malloc((size_t)size);
    if (!f->file || fread(f->file, 1, (size_t)size, fp) != (size_t)size) {
        fclose(fp);
        return -1;
    }
    fclose(fp);
    reader r = {f->file, f->file + size};
    char magic[8];
    int32_t h[7];
    if (rd(&r, magic, 8) || memcmp(magic, "YPLOSS01", 8) || rd(&r, h, sizeof h))
        return -1;
    f->batch = h[0], f->nc = h[1], f->na = h[2], f->nl = h[3], f->img_w = h[4], f->img_h = h[5], f->nt = h[6];
    if (f->nl < 1 || f->nl > MAXL || f->na < 1 || f->na > YP_LOSS_MAX_ANCHORS)
        return -1;
    int32_t v[MAXL];
    int nl = f->nl;
    if (rd(&r, v, 4 * (size_t)nl))
        return -1;
    for (int l = 0; l < nl; l++)
        f->strides[l] = v[l];
    if (rd(&r, v, 4 * (size_t)nl))
        return -1;
    for (int l = 0; l < nl; l++)
        f->gh[l] = v[l];
    if (rd(&r, v, 4 * (size_t)nl))
        return -1;
    for (int l = 0; l < nl; l++)
        f->gw[l] = v[l];
    if (rd(&r, f->npos, 4 * (size_t)nl))
        return -1;
    for (int l = 0; l < nl; l++)
        if (rd(&r, f->anchors[l], 8 * (size_t)f->na))
            return -1;
    float g[5];
    if (rd(&r, f->hyp, sizeof f->hyp) || rd(&r, g, sizeof g) || rd(&r, f->balance, 4 * (size_t)nl))
        return -1;
    memcpy(f->gains, g, sizeof f->gains);
    f->anchor_t = g[3];
    f->smooth = g[4];
    /* the float arrays are 4-byte aligned in the file and malloc's block */
    f->targets = (float *)(void *)r.p;
    r.p += 24 * (size_t)f->nt;
    for (int l = 0; l < nl; l++) {
        f->preds[l] = (float *)(void *)r.p;
        r.p += 4 * (size_t)(f->batch * f->gh[l] * f->gw[l] * f->na * (f->nc + 5));
    }
    if (rd(&r, f->out, sizeof f->out))
        return -1;
    for (int l = 0; l < nl; l++) {
        f->dpreds[l] = (float *)(void *)r.p;
        r.p += 4 * (size_t)(f->batch * f->gh[l] * f->gw[l] * f->na * (f->nc + 5));
    }
    if (r.p != r.end) {
        fprintf(stderr, "%s: %td bytes left over or missing\n", path, r.end - r.p);
        return -1;
    }
    return 0;
}

static int64_t level_floats(const fixture *f, int l) { return f->batch * f->gh[l] * f->gw[l] * f->na * (f->nc + 5); }

/* The configuration as yoloplan would build it: defaults, then the fixture's hyp if it differs. */
static void fixture_cfg(const fixture *f, yp_loss_cfg *c) {
    yp_loss_cfg_default(c, f->nc, f->nl, f->na, (const float(*)[YP_LOSS_MAX_ANCHORS][2])f->anchors, f->strides,
                        f->img_w, f->img_h);
    yp_loss_cfg_scale_gains(c, f->hyp[0], f->hyp[1], f->hyp[2], f->img_w, f->img_h);
    c->anchor_t = f->anchor_t;
    c->label_smoothing = f->smooth;
}

static yp_backend *cpu; /* every loss runs on this CPU instance (main) */

typedef struct {
    float *dp[MAXL];
    void *assign, *stage;
    float *objmap;
    int64_t assign_bytes, objmap_bytes;
} buffers;

static void buffers_init(buffers *b, const fixture *f, const yp_loss_cfg *c) {
    for (int l = 0; l < f->nl; l++)
        b->dp[l] = malloc((size_t)level_floats(f, l) * sizeof(float));
    b->assign_bytes = yp_loss_assign_bytes(c, f->nt);
    b->objmap_bytes = yp_loss_objmap_bytes(c, f->batch, f->gh, f->gw);
    b->assign = malloc((size_t)b->assign_bytes + 1);
    b->stage = malloc((size_t)b->assign_bytes + 1);
    b->objmap = malloc((size_t)b->objmap_bytes);
}

static void buffers_free(buffers *b, int nl) {
    for (int l = 0; l < nl; l++)
        free(b->dp[l]);
    free(b->assign);
    free(b->stage);
    free(b->objmap);
}

/* The descriptor of fixture f's loss under configuration c. */
static yp_loss_desc fixture_desc(const fixture *f, const yp_loss_cfg *c) {
    yp_loss_desc d = {.cfg = *c, .batch = f->batch, .dtype = YP_ELEM_F32};
    for (int l = 0; l < f->nl; l++)
        d.grid_h[l] = f->gh[l], d.grid_w[l] = f->gw[l];
    return d;
}

/* yp_loss_compute on the CPU instance with b's buffers, the work buffers claimed to be
 * assign_bytes and objmap_bytes long. */
static int compute(const fixture *f, const yp_loss_cfg *c, const float *const *preds, const buffers *b, int grads,
                   int64_t assign_bytes, int64_t objmap_bytes, double out[4], char *err, size_t err_len) {
    const yp_loss_desc d = fixture_desc(f, c);
    const yp_loss_buffers lb = {preds, grads ? b->dp : NULL, b->assign, assign_bytes, b->objmap, objmap_bytes,
                                b->stage};
    return yp_loss_compute(cpu, &d, f->targets, f->nt, &lb, out, err, err_len);
}

static int run(const fixture *f, const yp_loss_cfg *c, const float *const *preds, buffers *b, double out[4],
               int grads) {
    char err[256] = "";
    int rc = compute(f, c, preds, b, grads, b->assign_bytes, b->objmap_bytes, out, err, sizeof err);
    if (rc)
        fprintf(stderr, "yp_loss_compute: %s\n", err);
    return rc;
}

static double rel(double a, double b) { return fabs(a - b) / fmax(fabs(b), 1e-30); }

/* One fixture against the reference: gains, positives per level, losses, every gradient element. */
static void check_fixture(const char *name) {
    fixture f;
    if (fixture_load(&f, name)) {
        CHECK(!"fixture loads");
        free(f.file);
        return;
    }
    yp_loss_cfg c;
    fixture_cfg(&f, &c);
    /* train.py's scaling is done in double and rounded to fp32 in both: equal to an ulp */
    for (int k = 0; k < 3; k++)
        CHECK(rel((&c.box)[k], f.gains[k]) < 1e-6);
    for (int l = 0; l < f.nl; l++)
        CHECK(c.balance[l] == f.balance[l]);

    buffers b;
    buffers_init(&b, &f, &c);
    yp_loss_target *pos = malloc((size_t)(5 * f.na * f.nt) * sizeof *pos + 1);
    for (int l = 0; l < f.nl; l++)
        CHECK_EQ_I64(yp_loss_build_targets(&c, l, f.gh[l], f.gw[l], f.targets, f.nt, pos), f.npos[l]);
    free(pos);

    double out[4], out2[4];
    CHECK(run(&f, &c, (const float *const *)f.preds, &b, out, 1) == 0);
    /* loss parts: fp32 element math on both sides, sums in double here and fp32 in torch; 1e-5 relative */
    for (int k = 0; k < 4; k++) {
        if (f.out[k] == 0.0f)
            CHECK(out[k] == 0.0);
        else if (!(rel(out[k], f.out[k]) < 1e-5)) {
            fprintf(stderr, "  %s out[%d] = %.9g, reference %.9g\n", name, k, out[k], (double)f.out[k]);
            CHECK(rel(out[k], f.out[k]) < 1e-5);
        }
    }
    /* gradients: per level, max|a - b| / max|b| < 1e-4 (fp32 chains of ~20 operations through CIoU,
     * evaluated in a different order than autograd; observed ~1e-6) */
    for (int l = 0; l < f.nl; l++) {
        double max_err = 0, max_ref = 0;
        for (int64_t i = 0; i < level_floats(&f, l); i++) {
            max_err = fmax(max_err, fabs((double)b.dp[l][i] - f.dpreds[l][i]));
            max_ref = fmax(max_ref, fabs((double)f.dpreds[l][i]));
        }
        printf("    %s level %d: %d positives, max|dpred - ref| / max|ref| = %.2e\n", name, l, f.npos[l],
               max_err / max_ref);
        CHECK(max_ref > 0 && max_err / max_ref < 1e-4);
    }
    /* the loss alone (dpreds NULL) is the same number */
    CHECK(run(&f, &c, (const float *const *)f.preds, &b, out2, 0) == 0);
    CHECK(memcmp(out, out2, sizeof out) == 0);
    buffers_free(&b, f.nl);
    free(f.file);
}

static void test_loss_p5_nc3_64(void) { check_fixture("p5_nc3_64"); }
static void test_loss_p5_nc1_96x64(void) { check_fixture("p5_nc1_96x64"); }
static void test_loss_l2_nc4_64_smooth(void) { check_fixture("l2_nc4_64_smooth"); }

/* Central differences of the total through yp_loss_compute, in double, for logits whose gradient is
 * the whole derivative: the objectness of a positive and of a background cell, and a class logit.
 * (Box logits are not checked this way: YOLOv5 detaches the CIoU where it becomes the objectness
 * target and holds alpha constant, so the gradient is deliberately not the derivative of the loss.
 * test_ciou_gradient checks the box derivative with alpha held.) */
static void test_loss_finite_differences(void) {
    fixture f;
    if (fixture_load(&f, "p5_nc3_64")) {
        CHECK(!"fixture loads");
        free(f.file);
        return;
    }
    yp_loss_cfg c;
    fixture_cfg(&f, &c);
    buffers b;
    buffers_init(&b, &f, &c);
    const int level = 2, no = f.nc + 5;
    yp_loss_target pos[5 * 3 * 32];
    CHECK(5 * f.na * f.nt <= (int)(sizeof pos / sizeof pos[0]));
    int64_t n = yp_loss_build_targets(&c, level, f.gh[level], f.gw[level], f.targets, f.nt, pos);
    CHECK(n > 0);
    const yp_loss_target *t = &pos[0];
    int64_t at = (((int64_t)t->b * f.gh[level] + t->gj) * f.gw[level] + t->gi) * f.na * no + (int64_t)t->a * no;
    int64_t bg = at == 4 ? no + 4 : 4; /* some other objectness element, most likely background */
    int64_t elems[3] = {at + 4, at + 5 + (t->cls + 1) % f.nc, bg};

    float *p = malloc((size_t)level_floats(&f, level) * sizeof(float));
    memcpy(p, f.preds[level], (size_t)level_floats(&f, level) * sizeof(float));
    const float *preds[MAXL];
    for (int l = 0; l < f.nl; l++)
        preds[l] = l == level ? p : f.preds[l];
    double out[4];
    CHECK(run(&f, &c, preds, &b, out, 1) == 0);
    for (int k = 0; k < 3; k++) {
        const float h = 1.0f / 64; /* a power of two: x +- h is exact for |x| < 2^18 */
        const float x0 = p[elems[k]];
        double up[4], down[4];
        p[elems[k]] = x0 + h;
        CHECK(run(&f, &c, preds, &b, up, 0) == 0);
        p[elems[k]] = x0 - h;
        CHECK(run(&f, &c, preds, &b, down, 0) == 0);
        p[elems[k]] = x0;
        double fd = (up[3] - down[3]) / (2.0 * h), an = b.dp[level][elems[k]];
        /* error budget: O(h^2) truncation (~1e-5 relative for a sigmoid-shaped BCE at h = 1/64) plus the
         * fp32 rounding of the one perturbed BCE term (~1e-7 of a term whose change is ~h): 1e-3 relative */
        printf("    d total / d pred[%lld] analytic %.9e finite difference %.9e\n", (long long)elems[k], an, fd);
        CHECK(an != 0.0 && rel(fd, an) < 1e-3);
    }
    free(p);
    buffers_free(&b, f.nl);
    free(f.file);
}

/* CIoU with alpha held constant, in double: the function whose gradient yp_loss_ciou returns. */
static double ciou_fixed_alpha(const double p[4], const float t[4], double alpha) {
    const double eps = 1e-7;
    double b1x1 = p[0] - p[2] / 2, b1x2 = p[0] + p[2] / 2, b1y1 = p[1] - p[3] / 2, b1y2 = p[1] + p[3] / 2;
    double b2x1 = t[0] - t[2] / 2.0, b2x2 = t[0] + t[2] / 2.0, b2y1 = t[1] - t[3] / 2.0, b2y2 = t[1] + t[3] / 2.0;
    double iw = fmax(fmin(b1x2, b2x2) - fmax(b1x1, b2x1), 0), ih = fmax(fmin(b1y2, b2y2) - fmax(b1y1, b2y1), 0);
    double inter = iw * ih, uni = p[2] * p[3] + (double)t[2] * t[3] - inter + eps;
    double cw = fmax(b1x2, b2x2) - fmin(b1x1, b2x1), ch = fmax(b1y2, b2y2) - fmin(b1y1, b2y1);
    double c2 = cw * cw + ch * ch + eps;
    double dx = b2x1 + b2x2 - b1x1 - b1x2, dy = b2y1 + b2y2 - b1y1 - b1y2;
    double d = atan((double)t[2] / t[3]) - atan(p[2] / p[3]);
    double v = 4.0 / (3.14159265358979323846 * 3.14159265358979323846) * d * d;
    return inter / uni - ((dx * dx + dy * dy) / 4 / c2 + v * alpha);
}

/* yp_loss_ciou's gradient against central differences of ciou_fixed_alpha, on overlapping,
 * nested and disjoint pairs; and its value against the double evaluation. */
static void test_ciou_gradient(void) {
    static const float cases[][2][4] = {
        {{0.6f, 0.4f, 1.3f, 0.7f}, {0.5f, 0.5f, 1.0f, 1.0f}},  /* overlapping */
        {{0.2f, 1.1f, 0.5f, 2.4f}, {0.4f, 0.9f, 1.5f, 3.0f}},  /* nested */
        {{-0.3f, 0.2f, 0.4f, 0.3f}, {1.2f, 1.4f, 0.8f, 0.6f}}, /* disjoint: IoU 0, clamp closed */
        {{0.9f, 0.1f, 3.1f, 0.9f}, {0.7f, 0.3f, 2.2f, 1.7f}},  /* wide */
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        const float *p = cases[k][0], *t = cases[k][1];
        float dp[4];
        float ciou = yp_loss_ciou(p, t, dp);
        /* alpha as yp_loss_ciou computed it (from fp32 IoU and v): recompute in double */
        double pd[4] = {p[0], p[1], p[2], p[3]};
        double iou0 = ciou_fixed_alpha(pd, t, 0.0), d = atan((double)t[2] / t[3]) - atan(pd[2] / pd[3]);
        double v = 4.0 / (3.14159265358979323846 * 3.14159265358979323846) * d * d;
        /* iou0 holds iou - rho2/c2; the IoU itself is needed for alpha */
        double b1x1 = pd[0] - pd[2] / 2, b1x2 = pd[0] + pd[2] / 2, b1y1 = pd[1] - pd[3] / 2, b1y2 = pd[1] + pd[3] / 2;
        double iw = fmax(fmin(b1x2, t[0] + t[2] / 2.0) - fmax(b1x1, t[0] - t[2] / 2.0), 0);
        double ih = fmax(fmin(b1y2, t[1] + t[3] / 2.0) - fmax(b1y1, t[1] - t[3] / 2.0), 0);
        double iou = iw * ih / (pd[2] * pd[3] + (double)t[2] * t[3] - iw * ih + 1e-7);
        double alpha = v / (v - iou + 1 + 1e-7);
        CHECK(fabs(ciou - (iou0 - v * alpha)) < 1e-6);
        for (int j = 0; j < 4; j++) {
            const double h = 1e-6;
            double up[4], dn[4];
            memcpy(up, pd, sizeof pd);
            memcpy(dn, pd, sizeof pd);
            up[j] += h;
            dn[j] -= h;
            double fd = (ciou_fixed_alpha(up, t, alpha) - ciou_fixed_alpha(dn, t, alpha)) / (2 * h);
            /* dp is fp32 arithmetic of a dozen terms: 1e-4 relative to the largest component, plus 1e-6 */
            double scale = fmax(fmax(fabs(dp[0]), fabs(dp[1])), fmax(fabs(dp[2]), fabs(dp[3])));
            if (!(fabs(fd - dp[j]) < 1e-4 * scale + 1e-6))
                fprintf(stderr, "  case %zu d/dp[%d]: analytic %.9g, finite difference %.9g\n", k, j, dp[j], fd);
            CHECK(fabs(fd - dp[j]) < 1e-4 * scale + 1e-6);
        }
    }
}

/* No targets: no box or class loss and zero gradients there; objectness against 0 everywhere. */
static void test_loss_no_targets(void) {
    fixture f;
    if (fixture_load(&f, "p5_nc1_96x64")) {
        CHECK(!"fixture loads");
        free(f.file);
        return;
    }
    f.nt = 0;
    yp_loss_cfg c;
    fixture_cfg(&f, &c);
    buffers b;
    buffers_init(&b, &f, &c);
    double out[4];
    CHECK(run(&f, &c, (const float *const *)f.preds, &b, out, 1) == 0);
    double lobj = 0;
    const int no = f.nc + 5;
    for (int l = 0; l < f.nl; l++) {
        int64_t count = level_floats(&f, l) / no;
        double s = 0;
        int box_zero = 1;
        for (int64_t i = 0; i < count; i++) {
            double x = f.preds[l][i * no + 4];
            s += fmax(x, 0) + log1p(exp(-fabs(x))); /* BCE against 0 */
            for (int k = 0; k < no; k++)
                if (k != 4 && b.dp[l][i * no + k] != 0.0f)
                    box_zero = 0;
        }
        lobj += s / (double)count * c.balance[l];
        CHECK(box_zero);
    }
    CHECK(out[0] == 0.0 && out[2] == 0.0);
    CHECK(rel(out[1], lobj * c.obj) < 1e-6);
    CHECK(rel(out[3], out[1] * f.batch) < 1e-12);
    buffers_free(&b, f.nl);
    free(f.file);
}

/* yolov5s at 640 (nc 80): train.py's gains, ComputeLoss's balance, and the work buffer sizes. */
static void test_loss_cfg_defaults(void) {
    static const float anchors[3][YP_LOSS_MAX_ANCHORS][2] = {
        {{10, 13}, {16, 30}, {33, 23}}, {{30, 61}, {62, 45}, {59, 119}}, {{116, 90}, {156, 198}, {373, 326}}};
    const int strides[3] = {8, 16, 32};
    yp_loss_cfg c;
    yp_loss_cfg_default(&c, 80, 3, 3, anchors, strides, 640, 640);
    CHECK(c.box == 0.05f && c.obj == 1.0f && c.cls == 0.5f && c.anchor_t == 4.0f && c.label_smoothing == 0.0f);
    CHECK(c.balance[0] == 4.0f && c.balance[1] == 1.0f && c.balance[2] == 0.4f);
    yp_loss_cfg_default(&c, 3, 3, 3, anchors, strides, 320, 256); /* imgsz = the long side, 320 */
    CHECK(c.obj == 0.25f && c.cls == (float)(0.5 * 3 / 80.0));
    static const float anchors6[4][YP_LOSS_MAX_ANCHORS][2] = {{{19, 27}, {44, 40}, {38, 94}},
                                                             {{96, 68}, {86, 152}, {180, 137}},
                                                             {{140, 301}, {303, 264}, {238, 542}},
                                                             {{436, 615}, {739, 380}, {925, 792}}};
    const int strides6[4] = {8, 16, 32, 64};
    yp_loss_cfg_default(&c, 80, 4, 3, anchors6, strides6, 1280, 1280); /* P6: 4 levels */
    CHECK(c.box == (float)(0.05 * 0.75) && c.obj == 3.0f && c.balance[2] == 0.25f && c.balance[3] == 0.06f);

    yp_loss_cfg_default(&c, 80, 3, 3, anchors, strides, 640, 640);
    const int64_t gh[3] = {80, 40, 20}, gw[3] = {80, 40, 20};
    /* 16 images x 20 labels: 5*3*320 positives of 36 bytes; objectness targets of P3: 16*3*6400 floats */
    CHECK_EQ_I64(sizeof(yp_loss_target), 36);
    CHECK_EQ_I64(yp_loss_assign_bytes(&c, 320), 172800);
    CHECK_EQ_I64(yp_loss_assign_bytes(&c, 0), 0);
    CHECK_EQ_I64(yp_loss_assign_bytes(&c, -1), -1);
    CHECK_EQ_I64(yp_loss_objmap_bytes(&c, 16, gh, gw), 1228800);
    CHECK_EQ_I64(yp_loss_objmap_bytes(&c, -1, gh, gw), -1);
}

/* Bad targets and too small work buffers are errors with a message, not crashes. */
static void test_loss_bad_input(void) {
    fixture f;
    if (fixture_load(&f, "p5_nc3_64")) {
        CHECK(!"fixture loads");
        free(f.file);
        return;
    }
    yp_loss_cfg c;
    fixture_cfg(&f, &c);
    buffers b;
    buffers_init(&b, &f, &c);
    double out[4];
    char err[256];
    struct {
        int field;
        float value;
        const char *msg;
    } bad[] = {{0, 2.0f, "image index"}, {0, 0.5f, "image index"}, {1, 3.0f, "class"},
               {1, -1.0f, "class"},      {2, 1.5f, "outside [0, 1]"}, {5, NAN, "outside [0, 1]"}};
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        float keep = f.targets[6 + bad[k].field];
        f.targets[6 + bad[k].field] = bad[k].value;
        err[0] = 0;
        CHECK(compute(&f, &c, (const float *const *)f.preds, &b, 1, b.assign_bytes, b.objmap_bytes, out, err,
                      sizeof err) == -1);
        CHECK_STR_HAS(err, bad[k].msg);
        CHECK_STR_HAS(err, "target 1");
        f.targets[6 + bad[k].field] = keep;
    }
    CHECK(compute(&f, &c, (const float *const *)f.preds, &b, 1, b.assign_bytes - 1, b.objmap_bytes, out, err,
                  sizeof err) == -1);
    CHECK_STR_HAS(err, "assign buffer");
    CHECK(compute(&f, &c, (const float *const *)f.preds, &b, 1, b.assign_bytes, b.objmap_bytes - 4, out, err,
                  sizeof err) == -1);
    CHECK_STR_HAS(err, "objmap buffer");
    yp_loss_cfg c2 = c;
    c2.na = 9;
    CHECK(compute(&f, &c2, (const float *const *)f.preds, &b, 1, b.assign_bytes, b.objmap_bytes, out, err,
                  sizeof err) == -1);
    CHECK_STR_HAS(err, "na 9");
    buffers_free(&b, f.nl);
    free(f.file);
}

/* The backend's entry on its own: called level by level with build_targets' positives and added
 * up as yp_ops.h says (gains, nc == 1, times the batch), it gives yp_loss_compute's numbers to
 * the bit, with or without the gradient; it refuses what would read or write outside its buffers. */
static void test_loss_level_entry(void) {
    fixture f;
    if (fixture_load(&f, "p5_nc3_64")) {
        CHECK(!"fixture loads");
        free(f.file);
        return;
    }
    yp_loss_cfg c;
    fixture_cfg(&f, &c);
    buffers b;
    buffers_init(&b, &f, &c);
    double want[4];
    CHECK(run(&f, &c, (const float *const *)f.preds, &b, want, 1) == 0);
    const yp_loss_desc d = fixture_desc(&f, &c);
    yp_loss_target *pos = b.stage;
    double sum[3] = {0, 0, 0};
    for (int l = 0; l < f.nl; l++) {
        int64_t n = yp_loss_build_targets(&c, l, f.gh[l], f.gw[l], f.targets, f.nt, pos);
        yp_loss_terms t, t2;
        CHECK(cpu->ops->loss_level(cpu, &d, l, f.preds[l], pos, n, b.objmap, b.dp[l], &t) == 0);
        CHECK(cpu->ops->loss_level(cpu, &d, l, f.preds[l], pos, n, b.objmap, NULL, &t2) == 0);
        CHECK(memcmp(&t, &t2, sizeof t) == 0);
        CHECK(t.box > 0 && t.obj > 0 && t.cls > 0);
        sum[0] += t.box, sum[1] += t.obj, sum[2] += t.cls;
    }
    double got[4] = {sum[0] * c.box, sum[1] * c.obj, sum[2] * c.cls, 0};
    got[3] = (got[0] + got[1] + got[2]) * f.batch;
    CHECK(memcmp(got, want, sizeof got) == 0);

    int64_t n = yp_loss_build_targets(&c, 0, f.gh[0], f.gw[0], f.targets, f.nt, pos);
    REQUIRE(n > 0);
    yp_loss_terms t;
    yp_loss_target keep = pos[n - 1];
    pos[n - 1].gi = (int32_t)f.gw[0]; /* one column past the grid */
    CHECK(cpu->ops->loss_level(cpu, &d, 0, f.preds[0], pos, n, b.objmap, b.dp[0], &t) == -1);
    CHECK_STR_HAS(cpu->last_error(cpu), "outside level 0");
    pos[n - 1] = keep;
    pos[n - 1].cls = f.nc;
    CHECK(cpu->ops->loss_level(cpu, &d, 0, f.preds[0], pos, n, b.objmap, b.dp[0], &t) == -1);
    CHECK_STR_HAS(cpu->last_error(cpu), "class 3");
    pos[n - 1] = keep;
    CHECK(cpu->ops->loss_level(cpu, &d, f.nl, f.preds[0], pos, n, b.objmap, b.dp[0], &t) == -1);
    CHECK_STR_HAS(cpu->last_error(cpu), "level 3 of nc 3, na 3, nl 3 out of range");
    CHECK(cpu->ops->loss_level(cpu, &d, 0, f.preds[0], pos, -1, b.objmap, b.dp[0], &t) == -1);
    CHECK(cpu->ops->loss_level(cpu, &d, 0, f.preds[0], pos, n, b.objmap, b.dp[0], NULL) == -1);
    yp_loss_desc d16 = d;
    d16.dtype = YP_ELEM_F16;
    CHECK(cpu->ops->loss_level(cpu, &d16, 0, f.preds[0], pos, n, b.objmap, b.dp[0], &t) == -1);
    CHECK_STR_HAS(cpu->last_error(cpu), "cpu backend: loss_level: dtype f16 not supported");
    CHECK(cpu->ops->loss_level(cpu, &d, 0, f.preds[0], pos, n, b.objmap, b.dp[0], &t) == 0);
    buffers_free(&b, f.nl);
    free(f.file);
}

/* The host reaches the assignment buffer only through mem_copy: one upload per level with
 * positives, of exactly their bytes, host to device. */
static int copies, copy_bad;
static int64_t copied;
static int (*real_copy)(yp_backend *, void *, const void *, size_t, yp_copy);
static int counting_copy(yp_backend *be, void *dst, const void *src, size_t bytes, yp_copy dir) {
    copies++, copied += (int64_t)bytes;
    copy_bad |= dir != YP_COPY_HOST_TO_DEVICE || bytes % sizeof(yp_loss_target) != 0;
    return real_copy(be, dst, src, bytes, dir);
}

static void test_loss_uploads(void) {
    fixture f;
    if (fixture_load(&f, "l2_nc4_64_smooth")) {
        CHECK(!"fixture loads");
        free(f.file);
        return;
    }
    yp_loss_cfg c;
    fixture_cfg(&f, &c);
    buffers b;
    buffers_init(&b, &f, &c);
    int64_t want = 0;
    int levels = 0;
    for (int l = 0; l < f.nl; l++) {
        want += f.npos[l] * (int64_t)sizeof(yp_loss_target);
        levels += f.npos[l] > 0;
    }
    real_copy = cpu->mem_copy, cpu->mem_copy = counting_copy;
    double out[4];
    CHECK(run(&f, &c, (const float *const *)f.preds, &b, out, 1) == 0);
    cpu->mem_copy = real_copy;
    CHECK(levels > 0);
    CHECK_EQ_I64(copies, levels);
    CHECK_EQ_I64(copied, want);
    CHECK(!copy_bad);
    buffers_free(&b, f.nl);
    free(f.file);
}

/* A backend whose table lacks loss_level is refused by name, before any buffer is touched. */
static void test_loss_without_entry(void) {
    fixture f;
    if (fixture_load(&f, "p5_nc1_96x64")) {
        CHECK(!"fixture loads");
        free(f.file);
        return;
    }
    yp_loss_cfg c;
    fixture_cfg(&f, &c);
    buffers b;
    buffers_init(&b, &f, &c);
    const yp_ops *keep = cpu->ops;
    yp_ops lacking = *keep;
    lacking.loss_level = NULL;
    cpu->ops = &lacking;
    double out[4];
    char err[256] = "";
    CHECK(compute(&f, &c, (const float *const *)f.preds, &b, 1, b.assign_bytes, b.objmap_bytes, out, err,
                  sizeof err) == -1);
    cpu->ops = keep;
    CHECK_STR_HAS(err, "backend cpu has no loss_level op");
    buffers_free(&b, f.nl);
    free(f.file);
}

int main(void) {
    char why[256] = "";
    cpu = yp_backend_cpu_new(NULL, why, sizeof why);
    if (!cpu) {
        fprintf(stderr, "no CPU backend: %s\n", why);
        return 1;
    }
    cpu->thread_init(cpu); /* as the executor does before each micro-step */
    YP_RUN(test_loss_p5_nc3_64);
    YP_RUN(test_loss_p5_nc1_96x64);
    YP_RUN(test_loss_l2_nc4_64_smooth);
    YP_RUN(test_loss_finite_differences);
    YP_RUN(test_ciou_gradient);
    YP_RUN(test_loss_no_targets);
    YP_RUN(test_loss_cfg_defaults);
    YP_RUN(test_loss_bad_input);
    YP_RUN(test_loss_level_entry);
    YP_RUN(test_loss_uploads);
    YP_RUN(test_loss_without_entry);
    yp_backend_free(cpu);
    return yp_test_summary();
}
