/* torch_infer.c - the inference pass (no_grad: validation, thop's count,
 * check_amp) with Detect's eval-mode decode (yp_torch_replay_infer). */
#include <stdlib.h>
#include <string.h>

#include "torch_pass.h"

static void infer_lives(ytr_pass *p, const yp_torch_infer_opts *o) {
    const yp_schedule *s = p->s;
    for (int t = 0; t < s->n_tensors; t++) {
        const yp_tensor *tt = &s->tensors[t];
        int first = tt->producer >= 0 && s->steps[tt->producer].phase == YP_PHASE_FORWARD ? tt->producer : -1;
        switch (tt->kind) {
        case YP_KIND_LOWP:
            if (o->autocast) ytr_copy_life(s, tt, &p->from[t], &p->to[t]), p->to[t] = -1;
            continue;
        case YP_KIND_INPUT:
            if (!o->autocast || tt->dtype == YP_DTYPE_F32) continue;
            p->from[t] = tt->first, p->to[t] = ytr_last_forward_reader(s, tt);
            continue;
        case YP_KIND_ACT: case YP_KIND_SAVED:
            if (first < 0 || tt->role == YP_ROLE_BN_STATS) continue; /* eval-mode BN: no batch statistics */
            p->from[t] = first;
            p->to[t] = tt->role == YP_ROLE_POOL_INDICES ? first : ytr_last_forward_reader(s, tt);
            if (p->to[t] < first) p->to[t] = first;
            if (ytr_detect_output(p, t)) p->to[t] = -1; /* returned: freed by the caller's rule */
            continue;
        default: continue;
        }
    }
    ytr_keep_y_list(p);
}

/* Before step i of an inference pass: its tensors (a copy only when none is cached). */
static int infer_before(ytr_pass *p, int i) { return ytr_pass_before(p, i); }

static int infer_after(ytr_pass *p, int i) {
    for (int t = 0; t < p->s->n_tensors; t++)
        if ((i < 0 || p->to[t] == i) && p->held[t] >= 0 && ytr_release(p->a, &p->held[t], p->err)) return -1;
    return 0;
}

/* Detect's eval-mode decode of every level (models/yolo.py Detect.forward), then the concat of
 * the levels; *decoded gets the concat. */
static int decode(ytr_pass *p, int *decoded) {
    const yp_schedule *s = p->s;
    const yp_step *st = &s->steps[p->detect_fwd];
    int64_t e = (int64_t)yp_dtype_size(s->opts.act_dtype), total = 0;
    int z[YP_MAX_LEVELS], sig = -1, rc, nl = st->n_out < YP_MAX_LEVELS ? st->n_out : YP_MAX_LEVELS;
    for (int l = 0; l < nl; l++) {
        const yp_tensor *y = &s->tensors[yp_step_outputs(s, st)[l]];
        int64_t full = y->bytes, xy = yp_shape_numel(y->shape) / (s->g->nc + 5) * 2 * e;
        int ns, a1, a2, w1, w2;
        total += full;
        if ((rc = ytr_take_tmp(p, full, &ns)) || (rc = ytr_drop_tmp(p, sig))) return rc;
        sig = ns;
        /* xy = (xy * 2 + grid) * stride; wh = (wh * 2) ** 2 * anchor_grid: two live at a time */
        if ((rc = ytr_take_tmp(p, xy, &a1)) || (rc = ytr_take_tmp(p, xy, &a2)) || (rc = ytr_drop_tmp(p, a1)) ||
            (rc = ytr_take_tmp(p, xy, &a1)) || (rc = ytr_drop_tmp(p, a2)) || (rc = ytr_take_tmp(p, xy, &w1)) ||
            (rc = ytr_take_tmp(p, xy, &w2)) || (rc = ytr_drop_tmp(p, w1)) || (rc = ytr_take_tmp(p, xy, &w1)) ||
            (rc = ytr_drop_tmp(p, w2)) || (rc = ytr_take_tmp(p, full, &z[l])) || (rc = ytr_drop_tmp(p, a1)) ||
            (rc = ytr_drop_tmp(p, w1)))
            return rc;
    }
    if ((rc = ytr_take(p, total, decoded))) return rc;
    for (int l = 0; l < nl; l++)
        if ((rc = ytr_drop_tmp(p, z[l]))) return rc;
    return ytr_drop_tmp(p, sig);
}

int yp_torch_replay_infer(const yp_schedule *s, yp_torch_alloc *a, const yp_torch_infer_opts *o, yp_torch_state *st,
                          int *decoded, yp_err *err) {
    if (decoded) *decoded = -1;
    if (s->opts.eval) return yp_err_set(err, "PyTorch replay: an inference pass reads a training schedule's forward");
    ytr_pass p;
    int rc = ytr_pass_setup(&p, s, a, st, err);
    if (!rc && p.detect_fwd < 0) rc = yp_err_set(err, "PyTorch replay: no Detect step");
    if (!rc && o->decode && !decoded) rc = yp_err_set(err, "PyTorch replay: decode needs somewhere to put the boxes");
    if (!rc) infer_lives(&p, o);
    for (int i = 0; !rc && i <= p.detect_fwd; i++) {
        if (s->steps[i].phase != YP_PHASE_FORWARD) continue;
        if (i == p.detect_fwd) rc = ytr_detect_forward(&p, i);
        if (!rc) rc = infer_before(&p, i);
        if (!rc && (st->find & YP_TORCH_FIND_FWD) && ytr_is_conv(&s->steps[i])) yp_torch_empty_cache(a);
        if (!rc && i == p.detect_fwd && o->decode) rc = decode(&p, decoded);
        if (!rc) rc = infer_after(&p, i);
    }
    if (!rc) st->find &= ~YP_TORCH_FIND_FWD;
    if (!rc && o->autocast) st->weights_no_grad = 1;
    if (!rc && o->hold_outputs) rc = ytr_hold(&p);
    if (!rc && infer_after(&p, -1)) rc = -1;
    if (rc && decoded && *decoded >= 0 && ytr_release(a, decoded, err)) rc = -1;
    return ytr_pass_teardown(&p, rc);
}

/* check_amp: AutoShape's batch-1 inference of data/images/bus.jpg (1080 x 810) at its default
 * size=640 whatever --img is: 640 x 480, each side rounded up to a multiple of the model's largest
 * stride (make_divisible), in fp32, then under autocast (its cached copies go when the context
 * exits). The image's orientation does not change the bytes, so it is planned as w x h. */
int ytr_check_amp(const yp_graph *g, yp_torch_alloc *a, yp_err *err) {
    const int64_t gs = yp_graph_max_stride(g), w = (640 + gs - 1) / gs * gs, h = (480 + gs - 1) / gs * gs;
    yp_schedule *f32 = ytr_schedule(g, 1, h, w, YP_DTYPE_F32, 0, err), *f16 = NULL;
    if (!f32) return -1;
    f16 = ytr_schedule(g, 1, h, w, YP_DTYPE_F16, 0, err);
    yp_torch_state s32 = {0}, s16 = {0};
    int rc = f16 ? 0 : -1, dec = -1;
    if (!rc) rc = yp_torch_state_init(&s32, f32, err);
    if (!rc) rc = yp_torch_state_init(&s16, f16, err);
    yp_torch_infer_opts io = {0, 1, 0};
    if (!rc) rc = yp_torch_replay_infer(f32, a, &io, &s32, &dec, err);
    if (!rc) rc = ytr_release(a, &dec, err);
    io.autocast = 1;
    if (!rc) rc = yp_torch_replay_infer(f16, a, &io, &s16, &dec, err);
    if (!rc) rc = ytr_release(a, &dec, err);
    if (!rc) rc = yp_torch_state_drop(&s16, a, err);
    yp_torch_state_free(&s32), yp_torch_state_free(&s16);
    yp_schedule_free(f32), yp_schedule_free(f16);
    return rc;
}
