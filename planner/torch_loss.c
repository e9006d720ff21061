/* torch_loss.c - ComputeLoss's allocations (utils/loss.py): build_targets, the
 * training loss under autocast with its backward, and val.py's loss without gradients
 * (yp_torch_replay.h describes the tensors). */
#include <stdlib.h>
#include <string.h>

#include "torch_pass.h"

typedef struct {
    int64_t batch, na, nc, nl, labels, elem; /* elem: bytes of an output element */
    int64_t hw[YP_MAX_LEVELS];
} loss_shape;

static loss_shape loss_shape_of(const yp_schedule *s, int detect_fwd, int64_t labels) {
    loss_shape q = {0};
    const yp_graph *g = s->g;
    q.batch = s->opts.batch, q.na = g->na, q.nc = g->nc, q.nl = g->nl, q.labels = labels;
    q.elem = (int64_t)yp_dtype_size(s->opts.act_dtype);
    const yp_step *st = &s->steps[detect_fwd];
    for (int l = 0; l < q.nl && l < st->n_out; l++) {
        yp_shape sh = s->tensors[yp_step_outputs(s, st)[l]].shape;
        q.hw[l] = sh.h * sh.w;
    }
    return q;
}

/* Positives a level gets (every (label, anchor) pair matched, each with both neighbours). */
static int64_t loss_positives(const loss_shape *q) { return 3 * q->na * q->labels; }

#define LOSS_POS_KEPT_BYTES 64  /* b, a, gj, gi as int64 halves of two (n, 2) tensors, tbox, anchors */
#define LOSS_CIOU_TENSORS 10    /* the CIoU's saved tensors, each 4 fp32 a positive (an estimate) */

/* build_targets: its transients; the tensors it returns are pushed to p->tmp (kept[l][0..3]). */
static int build_targets(ytr_pass *p, const loss_shape *q, int kept[YP_MAX_LEVELS][4]) {
    int64_t L = q->labels, na = q->na, m = na * L, n = loss_positives(q);
    int ai, tg, rc;
    if ((rc = ytr_take_tmp(p, na * L * 4, &ai)) || (rc = ytr_blip(p, na * L * 6 * 4)) ||
        (rc = ytr_take_tmp(p, na * L * 7 * 4, &tg)))
        return rc;
    int prev_t = -1, prev_off = -1;
    for (int l = 0; l < q->nl; l++) {
        int t, t2, t3, off;
        if ((rc = ytr_take_tmp(p, na * L * 7 * 4, &t)) || (rc = ytr_drop_tmp(p, prev_t)) ||
            (rc = ytr_drop_tmp(p, prev_off)))
            return rc;
        for (int k = 0; k < 3 && !rc; k++) rc = ytr_blip(p, na * L * 2 * 4); /* r, 1/r, max(r, 1/r) */
        if (rc || (rc = ytr_take_tmp(p, m * 7 * 4, &t2)) || (rc = ytr_drop_tmp(p, t)) ||
            (rc = ytr_blip(p, m * 2 * 4)) || (rc = ytr_blip(p, 5 * m)) || (rc = ytr_blip(p, 5 * m * 7 * 4)) ||
            (rc = ytr_take_tmp(p, n * 7 * 4, &t3)) || (rc = ytr_drop_tmp(p, t2)) || (rc = ytr_blip(p, 5 * m * 2 * 4)) ||
            (rc = ytr_take_tmp(p, n * 2 * 4, &off)))
            return rc;
        /* kept: a (int64), (b, c) (int64 x 2), gij (int64 x 2), tbox (fp32 x 4), anchors (fp32 x 2) */
        if ((rc = ytr_take_tmp(p, n * 8 + n * 16, &kept[l][0])) || (rc = ytr_blip(p, n * 2 * 4)) ||
            (rc = ytr_take_tmp(p, n * 16, &kept[l][1])) || (rc = ytr_take_tmp(p, n * 16, &kept[l][2])) ||
            (rc = ytr_take_tmp(p, n * 8, &kept[l][3])))
            return rc;
        prev_t = t3, prev_off = off;
    }
    if ((rc = ytr_drop_tmp(p, prev_t)) || (rc = ytr_drop_tmp(p, prev_off)) || (rc = ytr_drop_tmp(p, ai)) ||
        (rc = ytr_drop_tmp(p, tg)))
        return rc;
    return 0;
}

/* Per level of the training loss: the blocks autograd keeps for the loss's backward. */
typedef struct {
    int obj32, tobj32;                   /* BCE's saved fp32 objectness logits and targets */
    int cls32, tcls32;                   /* BCE's saved fp32 class logits and targets */
    int ciou[LOSS_CIOU_TENSORS];         /* the box arithmetic's saved tensors */
    int kept[4];                         /* build_targets' results (indices, boxes, anchors) */
} loss_level;

/* ComputeLoss's forward under autocast (or fp32) with gradients, then its backward, which writes
 * the Detect outputs' gradients (the schedule's tensors dy[l] of Detect's backward step). */
int ytr_yolo_loss(ytr_pass *p, int64_t labels) {
    const yp_schedule *s = p->s;
    if (p->detect_fwd < 0 || p->detect_bwd < 0) return yp_err_set(p->err, "PyTorch replay: no Detect step");
    loss_shape q = loss_shape_of(s, p->detect_fwd, labels);
    loss_level lv[YP_MAX_LEVELS];
    int kept[YP_MAX_LEVELS][4], rc, targets;
    memset(lv, -1, sizeof lv);
    int64_t n = loss_positives(&q), amp = q.elem != 4, e = q.elem, B = q.batch;
    if ((rc = ytr_take_tmp(p, q.labels * 6 * 4, &targets)) || (rc = build_targets(p, &q, kept))) return rc;
    int tobj = -1, ps = -1, tcls = -1;
    for (int l = 0; l < q.nl; l++) {
        int64_t map = B * q.na * q.hw[l];
        int nt, nps = -1, ntc = -1;
        memcpy(lv[l].kept, kept[l], sizeof kept[l]);
        if ((rc = ytr_take_tmp(p, map * e, &nt)) || (rc = ytr_drop_tmp(p, tobj))) return rc;
        tobj = nt;
        if (n > 0) {
            if ((rc = ytr_take_tmp(p, n * (q.nc + 5) * e, &nps)) || (rc = ytr_drop_tmp(p, ps))) return rc;
            ps = nps;
            for (int k = 0; k < LOSS_CIOU_TENSORS; k++)
                if ((rc = ytr_take_tmp(p, n * 4 * 4, &lv[l].ciou[k]))) return rc;
            if (q.nc > 1) {
                if ((rc = ytr_take_tmp(p, n * q.nc * e, &ntc)) || (rc = ytr_drop_tmp(p, tcls))) return rc;
                tcls = ntc;
                if ((rc = ytr_take_tmp(p, n * q.nc * 4, &lv[l].cls32)) ||
                    (rc = ytr_take_tmp(p, n * q.nc * 4, &lv[l].tcls32)))
                    return rc;
                for (int k = 0; k < 3; k++)
                    if ((rc = ytr_blip(p, n * q.nc * 4))) return rc;
            }
        }
        if ((rc = ytr_take_tmp(p, map * 4, &lv[l].obj32)) || (rc = ytr_take_tmp(p, map * 4, &lv[l].tobj32))) return rc;
        for (int k = 0; k < 3; k++)
            if ((rc = ytr_blip(p, map * 4))) return rc;
    }
    if ((rc = ytr_drop_tmp(p, targets)) || (rc = ytr_drop_tmp(p, tobj)) || (rc = ytr_drop_tmp(p, ps)) ||
        (rc = ytr_drop_tmp(p, tcls)))
        return rc;
    /* backward, the last level first (its nodes were made last) */
    const yp_step *db = &s->steps[p->detect_bwd];
    for (int l = (int)q.nl - 1; l >= 0; l--) {
        int64_t map = B * q.na * q.hw[l];
        int dy = db->a.dy[l], g32, g16 = -1;
        if (dy < 0) return yp_err_set(p->err, "PyTorch replay: Detect level %d has no output gradient", l);
        if ((rc = ytr_take_tmp(p, map * 4, &g32))) return rc;
        if (amp && ((rc = ytr_take_tmp(p, map * e, &g16)) || (rc = ytr_drop_tmp(p, g32)))) return rc;
        if ((rc = ytr_take(p, s->tensors[dy].bytes, &p->held[dy])) || (rc = ytr_drop_tmp(p, amp ? g16 : g32)) ||
            (rc = ytr_drop_tmp(p, lv[l].obj32)) || (rc = ytr_drop_tmp(p, lv[l].tobj32)))
            return rc;
        if (n > 0) {
            if (q.nc > 1) {
                int c32, c16 = -1;
                if ((rc = ytr_take_tmp(p, n * q.nc * 4, &c32))) return rc;
                if (amp && ((rc = ytr_take_tmp(p, n * q.nc * e, &c16)) || (rc = ytr_drop_tmp(p, c32)))) return rc;
                if ((rc = ytr_drop_tmp(p, lv[l].cls32)) || (rc = ytr_drop_tmp(p, lv[l].tcls32)) ||
                    (rc = ytr_blip(p, s->tensors[dy].bytes)) || (rc = ytr_drop_tmp(p, amp ? c16 : c32)))
                    return rc;
            }
            for (int k = 0; k < LOSS_CIOU_TENSORS; k++)
                if ((rc = ytr_blip(p, n * 4 * 4)) || (rc = ytr_drop_tmp(p, lv[l].ciou[k]))) return rc;
            if ((rc = ytr_blip(p, s->tensors[dy].bytes))) return rc; /* the gathered positives' path */
        }
        for (int k = 0; k < 4; k++)
            if ((rc = ytr_drop_tmp(p, lv[l].kept[k]))) return rc;
    }
    return 0;
}

int yp_torch_replay_val_loss(const yp_schedule *s, yp_torch_alloc *a, int64_t labels, yp_err *err) {
    yp_torch_state st;
    if (yp_torch_state_init(&st, s, err)) return -1;
    ytr_pass p;
    int rc = ytr_pass_setup(&p, s, a, &st, err);
    if (!rc && p.detect_fwd < 0) rc = yp_err_set(err, "PyTorch replay: no Detect step");
    loss_shape q = {0};
    if (!rc) q = loss_shape_of(s, p.detect_fwd, labels);
    int64_t n = loss_positives(&q), e = q.elem;
    int kept[YP_MAX_LEVELS][4], targets = -1;
    if (!rc) rc = ytr_take_tmp(&p, q.labels * 6 * 4, &targets);
    if (!rc) rc = build_targets(&p, &q, kept);
    for (int l = 0; !rc && l < q.nl; l++) {
        int64_t map = q.batch * q.na * q.hw[l];
        int tobj;
        if ((rc = ytr_take_tmp(&p, map * e, &tobj))) break;
        if (n > 0 && ((rc = ytr_blip(&p, n * (q.nc + 5) * e)) || (q.nc > 1 && (rc = ytr_blip(&p, 2 * n * q.nc * e)))))
            break;
        for (int k = 0; k < 3 && !rc; k++) rc = ytr_blip(&p, map * e);
        if (!rc) rc = ytr_drop_tmp(&p, tobj);
    }
    rc = ytr_pass_teardown(&p, rc);
    yp_torch_state_free(&st);
    return rc;
}
