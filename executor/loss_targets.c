/* loss_targets.c - the loss configuration (train.py's gain scaling), its buffer sizes, and YOLOv5's
 * target assignment (ComputeLoss.build_targets), reproduced in fp32 so every comparison
 * (anchor ratio, fractional part, truncation) decides as PyTorch's float32 tensors do. */
#include "yp_loss.h"

#include <math.h>
#include <string.h>

#include "yp_schedule.h"

void yp_loss_cfg_scale_gains(yp_loss_cfg *c, double box, double obj, double cls, int64_t img_w, int64_t img_h) {
    double imgsz = (double)(img_w > img_h ? img_w : img_h);
    double levels = 3.0 / (double)c->nl;
    c->box = (float)(box * levels);
    c->cls = (float)(cls * (double)c->nc / 80.0 * levels);
    c->obj = (float)(obj * (imgsz / 640.0) * (imgsz / 640.0) * levels);
}

void yp_loss_cfg_default(yp_loss_cfg *c, int nc, int nl, int na, const float anchors[][YP_LOSS_MAX_ANCHORS][2],
                         const int *strides, int64_t img_w, int64_t img_h) {
    static const float balance3[3] = {4.0f, 1.0f, 0.4f};
    static const float balance_other[YP_LOSS_MAX_LEVELS] = {4.0f, 1.0f, 0.25f, 0.06f, 0.02f};
    memset(c, 0, sizeof *c);
    c->nc = nc;
    c->nl = nl;
    c->na = na;
    for (int l = 0; l < nl && l < YP_LOSS_MAX_LEVELS; l++) {
        c->strides[l] = strides[l];
        c->balance[l] = nl == 3 ? balance3[l] : balance_other[l];
        for (int a = 0; a < na && a < YP_LOSS_MAX_ANCHORS; a++) {
            c->anchors[l][a][0] = anchors[l][a][0];
            c->anchors[l][a][1] = anchors[l][a][1];
        }
    }
    c->anchor_t = 4.0f;
    c->label_smoothing = 0.0f;
    yp_loss_cfg_scale_gains(c, 0.05, 1.0, 0.5, img_w, img_h);
}

/* The buffer rule is the schedule's (yp_schedule.h); these hold it to the loss's own types. */
_Static_assert(sizeof(yp_loss_target) == YP_LOSS_POSITIVE_FLOATS * sizeof(float),
               "yp_loss_target must be the YP_LOSS_POSITIVE_FLOATS floats the schedule plans");
_Static_assert(YP_LOSS_MAX_LEVELS == YP_MAX_LEVELS && YP_LOSS_MAX_ANCHORS == YP_MAX_ANCHORS,
               "the loss's limits must be the graph's");

int64_t yp_loss_assign_bytes(const yp_loss_cfg *c, int64_t n_targets) {
    if (c->na > YP_LOSS_MAX_ANCHORS) return -1;
    int64_t f = yp_loss_assign_floats(c->na, n_targets);
    return f < 0 || f > INT64_MAX / (int64_t)sizeof(float) ? -1 : f * (int64_t)sizeof(float);
}

int64_t yp_loss_objmap_bytes(const yp_loss_cfg *c, int64_t batch, const int64_t *grid_h, const int64_t *grid_w) {
    if (c->na > YP_LOSS_MAX_ANCHORS || c->nl > YP_LOSS_MAX_LEVELS) return -1;
    int64_t f = yp_loss_objmap_floats(batch, c->na, c->nl, grid_h, grid_w);
    return f < 0 || f > INT64_MAX / (int64_t)sizeof(float) ? -1 : f * (int64_t)sizeof(float);
}

/* x mod 1 as torch.remainder(x, 1) computes it for float32 (the sign of the divisor). */
static float frac1(float x) {
    float m = fmodf(x, 1.0f);
    if (m != 0.0f && m < 0.0f)
        m += 1.0f;
    return m;
}

/* The anchor match of one (target, anchor) pair: max(r, 1/r) over w and h below anchor_t, with
 * r = target wh / anchor wh in grid units (a zero w or h gives 1/r = inf: no match). */
static int anchor_matches(float gw, float gh, float aw, float ah, float anchor_t) {
    float rw = gw / aw, rh = gh / ah;
    float iw = 1.0f / rw, ih = 1.0f / rh;
    float mw = rw > iw ? rw : iw, mh = rh > ih ? rh : ih;
    float m = mw > mh ? mw : mh;
    return m < anchor_t;
}

/* Whether offset o (0 centre, 1 left, 2 up, 3 right, 4 down) is used for a target at (gx, gy) on an
 * nx x ny grid: the neighbour on the side of the nearer cell edge, unless that edge is the grid's. */
static int offset_used(int o, float gx, float gy, float nx, float ny) {
    const float g = 0.5f;
    switch (o) {
    case 0: return 1;
    case 1: return frac1(gx) < g && gx > 1.0f;
    case 2: return frac1(gy) < g && gy > 1.0f;
    case 3: return frac1(nx - gx) < g && nx - gx > 1.0f;
    default: return frac1(ny - gy) < g && ny - gy > 1.0f;
    }
}

int64_t yp_loss_build_targets(const yp_loss_cfg *c, int level, int64_t grid_h, int64_t grid_w, const float *targets,
                              int64_t n_targets, yp_loss_target *out) {
    static const float off[5][2] = {{0.0f, 0.0f}, {0.5f, 0.0f}, {0.0f, 0.5f}, {-0.5f, 0.0f}, {0.0f, -0.5f}};
    const float nx = (float)grid_w, ny = (float)grid_h;
    const float stride = (float)c->strides[level];
    int64_t n = 0;
    for (int o = 0; o < 5; o++) {
        for (int a = 0; a < c->na; a++) {
            const float aw = c->anchors[level][a][0] / stride, ah = c->anchors[level][a][1] / stride;
            for (int64_t t = 0; t < n_targets; t++) {
                const float *row = targets + 6 * t;
                float gx = row[2] * nx, gy = row[3] * ny, gw = row[4] * nx, gh = row[5] * ny;
                if (!anchor_matches(gw, gh, aw, ah, c->anchor_t) || !offset_used(o, gx, gy, nx, ny))
                    continue;
                int64_t gi = (int64_t)(gx - off[o][0]), gj = (int64_t)(gy - off[o][1]); /* .long() truncates */
                yp_loss_target *p = &out[n++];
                p->b = (int32_t)row[0];
                p->cls = (int32_t)row[1];
                p->a = a;
                gi = gi < 0 ? 0 : gi > grid_w - 1 ? grid_w - 1 : gi;
                gj = gj < 0 ? 0 : gj > grid_h - 1 ? grid_h - 1 : gj;
                p->gi = (int32_t)gi;
                p->gj = (int32_t)gj;
                /* relative to the clamped cell: YOLOv5 clamps gij in place before computing tbox */
                p->tbox[0] = gx - (float)gi;
                p->tbox[1] = gy - (float)gj;
                p->tbox[2] = gw;
                p->tbox[3] = gh;
            }
        }
    }
    return n;
}
