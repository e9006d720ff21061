/* schedule_forward.c - forward steps, conv scratch and the loss step of the training schedule. */
#include <stdlib.h>
#include <string.h>

#include "schedule_build.h"

/* The backend-neutral conv scratch (yp_schedule.h). */
int yp_conv_scratch_im2col(void *ctx, const yp_conv_query *q, int64_t *per_image, int64_t *fixed, yp_err *err) {
    (void)ctx, (void)err;
    *per_image = *fixed = 0;
    const int64_t taps = (int64_t)q->kh * q->kw;
    if (taps == 1 && q->sh == 1 && q->sw == 1 && !q->ph && !q->pw) return 0; /* a 1x1 conv is a plain GEMM */
    int64_t kk = taps * (q->in.c / q->groups);
    *per_image = q->out.h * q->out.w * kk;
    if (q->sh == 1 && q->sw == 1 && taps > 1 && q->ph <= q->kh - 1 && q->pw <= q->kw - 1) {
        int64_t t = q->in.h * q->in.w * taps * q->out.c;
        *per_image = t > *per_image ? t : *per_image;
    }
    *fixed = taps > 1 ? q->out.c * kk : 0;
    return 0;
}

/* q's sizes at image size H x W instead of the schedule's h x w (every feature map is h / stride by
 * w / stride, so the scaling is exact). 0, or -1 when a size does not scale to a whole number. */
static int scaled_query(const yp_conv_query *q, int64_t h, int64_t w, int64_t H, int64_t W, yp_conv_query *out) {
    const int64_t d[4] = {q->in.h, q->in.w, q->out.h, q->out.w}, from[4] = {h, w, h, w}, to[4] = {H, W, H, W};
    int64_t v[4];
    for (int k = 0; k < 4; k++) {
        if (d[k] * to[k] % from[k]) return -1;
        v[k] = d[k] * to[k] / from[k];
    }
    *out = *q;
    out->in.h = v[0], out->in.w = v[1], out->out.h = v[2], out->out.w = v[3];
    return 0;
}

/* Raises *per_image and *fixed to what the rule asks for q at image size H x W instead of the
 * schedule's (skipped when the sizes do not scale). 0, or -1 when the rule fails. */
static int cover(bld *b, yp_conv_scratch_fn fn, const yp_conv_query *q, int64_t H, int64_t W, int64_t *per_image,
                 int64_t *fixed) {
    const yp_sched_opts *o = &b->s->opts;
    yp_conv_query sq;
    int64_t pi, fx;
    if ((H == o->h && W == o->w) || scaled_query(q, o->h, o->w, H, W, &sq)) return 0;
    if (fn(o->conv_scratch_ctx, &sq, &pi, &fx, &b->rule_err)) return -1;
    if (pi > *per_image) *per_image = pi;
    if (fx > *fixed) *fixed = fx;
    return 0;
}

/* The scratch of one conv under the schedule's rule, the largest over its size, the multi-scale
 * sides and the rect validation shapes; a failure is kept for yp_schedule_build. */
static void conv_scratch(bld *b, const yp_conv_query *q, int64_t *per_image, int64_t *fixed) {
    const yp_sched_opts *o = &b->s->opts;
    yp_conv_scratch_fn fn = o->conv_scratch ? o->conv_scratch : yp_conv_scratch_im2col;
    int failed = fn(o->conv_scratch_ctx, q, per_image, fixed, &b->rule_err);
    for (int k = 0; !failed && k < o->n_scratch_sides && o->h == o->w; k++)
        failed = cover(b, fn, q, o->scratch_sides[k], o->scratch_sides[k], per_image, fixed);
    int64_t S = o->scratch_rect_side, st = o->scratch_rect_stride;
    for (int64_t side = st; !failed && S > 0 && st > 0 && side <= S; side += st)
        failed = cover(b, fn, q, side, S, per_image, fixed) || cover(b, fn, q, S, side, per_image, fixed);
    if (failed) b->rule_failed = 1, *per_image = *fixed = 0;
}

/* Scratch tensors of a conv_like step (conv, Detect): "ws:" per image (grows with the image) and
 * "wt:" fixed (fp32); Detect's levels run one after another and share the largest. Attention's
 * softmax output and scratch (sb_attn_workspace). */
void sb_conv_workspace(bld *b, int i, const char *what) {
    const yp_node *n = &b->g->nodes[i];
    const yp_op_info *row = yp_op_get(n->op);
    if (yp_op_fwd_writes(n) & YP_FWD_ATTN_PROBS) sb_attn_workspace(b, i, what);
    if (!row->conv_like) return;
    int64_t cols = 0, wt = 0;
    for (int l = 0; l < b->info[i].n_out; l++) { /* one conv per output: Detect's levels */
        int v = n->inputs[l];
        yp_conv_query q = {0};
        yp_conv_geom cg;
        q.in = v == YP_INPUT_IMAGE ? b->s->tensors[b->image_t].shape : b->info[v].out[0];
        q.out = b->info[i].out[l];
        q.backward = !strcmp(what, "bwd");
        q.dtype = b->s->opts.act_dtype;
        q.wdtype = b->trainable[i] ? q.dtype : YP_DTYPE_F32; /* as yp_tensor_amp_copied gives a copy */
        row->conv_geom(n, l, &cg);
        q.kh = cg.kh, q.kw = cg.kw, q.sh = cg.sh, q.sw = cg.sw, q.ph = cg.ph, q.pw = cg.pw;
        q.groups = cg.groups, q.bias = cg.bias;
        int64_t c, w;
        conv_scratch(b, &q, &c, &w);
        cols = c > cols ? c : cols, wt = w > wt ? w : wt;
    }
    yp_dtype dt = b->s->opts.act_dtype;
    tspec ws = {YP_ROLE_SCRATCH_IMAGE, YP_KIND_WORKSPACE, YP_SCALE_PIXELS, dt, sb_flat(cols), i, 0};
    tspec wf = {YP_ROLE_SCRATCH_FIXED, YP_KIND_WORKSPACE, YP_SCALE_CONST, YP_DTYPE_F32, sb_flat(wt), i, 0};
    if (cols) sb_out_as(b, &b->cur.scratch_image, sb_new_tensor(b, ws, "ws:%s:%s", n->name, what));
    if (wt) sb_out_as(b, &b->cur.scratch_fixed, sb_new_tensor(b, wf, "wt:%s:%s", n->name, what));
}

int sb_value_fwd(bld *b, int id, int level) {
    return id == YP_INPUT_IMAGE ? b->image_t : b->out_t[id * YP_MAX_LEVELS + level];
}

int64_t sb_node_flops(const bld *b, int i) {
    const yp_node *n = &b->g->nodes[i];
    return b->info[i].flops ? b->info[i].flops : yp_op_get(n->op)->eltwise_flops(n, b->info[i].out[0]);
}

void sb_forward_node(bld *b, int i) {
    const yp_node *n = &b->g->nodes[i];
    const yp_sched_opts *o = &b->s->opts;
    const yp_node_info *ni = &b->info[i];
    const unsigned writes = yp_op_fwd_writes(n);
    for (int k = 0; k < n->n_inputs; k++) sb_in_as(b, &b->cur.x[k], sb_value_fwd(b, n->inputs[k], 0));
    sb_params_in(b, i, 0);
    for (int l = 0; l < ni->n_out; l++) {
        char lv[16] = "";
        if (yp_op_get(n->op)->head) snprintf(lv, sizeof lv, ".l%d", l); /* one output per detection level */
        tspec sp = {YP_ROLE_VALUE, YP_KIND_ACT, YP_SCALE_BATCH_PIXELS, o->act_dtype, ni->out[l], i, l};
        int t = sb_new_tensor(b, sp, "act:%s%s", n->name, lv);
        b->out_t[i * YP_MAX_LEVELS + l] = t;
        sb_out_as(b, &b->cur.y[l], t);
    }
    if (writes & YP_FWD_STATS && !o->eval) { /* eval: normalises with the running statistics */
        tspec sp = {YP_ROLE_BN_STATS, YP_KIND_ACT, YP_SCALE_CONST, YP_DTYPE_F32, sb_flat(2 * ni->out[0].c), i, 0};
        b->stats_t[i] = sb_new_tensor(b, sp, "stats:%s%s", n->name, "");
        sb_out_as(b, &b->cur.stats, b->stats_t[i]);
    }
    if (writes & YP_FWD_RUNNING && !o->eval) { /* updated in place; eval only reads them */
        sb_op_out(b, b->cur.running_mean);
        sb_op_out(b, b->cur.running_var);
    }
    if (writes & YP_FWD_INPUT_COPY && b->rules->input_copies && o->batch > 1 && b->trainable[i] &&
        !o->eval) { /* the copy is what the weight gradient reads */
        yp_shape x = b->s->tensors[sb_value_fwd(b, n->inputs[0], 0)].shape;
        tspec sp = {YP_ROLE_INPUT_COPY, YP_KIND_ACT, YP_SCALE_BATCH_PIXELS, o->act_dtype, x, i, 0};
        b->copy_t[i] = sb_new_tensor(b, sp, "copy:%s%s", n->name, "");
        sb_out_as(b, &b->cur.in_copy, b->copy_t[i]);
    }
    if (writes & YP_FWD_INDICES && b->rules->pool_indices && b->rg[i]) {
        tspec sp = {YP_ROLE_POOL_INDICES, YP_KIND_ACT, YP_SCALE_BATCH_PIXELS, YP_DTYPE_I64, ni->out[0], i, 0};
        b->idx_t[i] = sb_new_tensor(b, sp, "idx:%s%s", n->name, "");
        sb_out_as(b, &b->cur.indices, b->idx_t[i]);
    }
    sb_conv_workspace(b, i, "fwd");
    sb_emit(b, YP_PHASE_FORWARD, n->op, i, "", sb_node_flops(b, i));
}

/* ---------------------------------------------------------------- loss */

/* The loss's buffers at the schedule's label count and the Detect output's grids. */
static int64_t loss_label_floats(const bld *b) { return yp_loss_assign_floats(b->g->na, b->s->opts.labels); }

static int64_t loss_objmap_floats(const bld *b) {
    const yp_node_info *d = &b->info[b->g->n_nodes - 1];
    int64_t gh[YP_MAX_LEVELS], gw[YP_MAX_LEVELS];
    for (int l = 0; l < b->g->nl; l++) gh[l] = d->out[l].h, gw[l] = d->out[l].w;
    return yp_loss_objmap_floats(d->out[0].n, b->g->na, b->g->nl, gh, gw);
}

void sb_loss_step(bld *b) {
    const yp_graph *g = b->g;
    int det = g->n_nodes - 1;
    for (int l = 0; l < g->nl; l++) sb_in_as(b, &b->cur.x[l], b->out_t[det * YP_MAX_LEVELS + l]);
    sb_in_as(b, &b->cur.targets, b->targets_t);
    int64_t lab = loss_label_floats(b), obj = loss_objmap_floats(b);
    tspec as = {YP_ROLE_LOSS_ASSIGN, YP_KIND_LOSS, YP_SCALE_LABELS, YP_DTYPE_F32, sb_flat(lab), -1, 0};
    tspec om = {YP_ROLE_LOSS_OBJMAP, YP_KIND_LOSS, YP_SCALE_BATCH_PIXELS, YP_DTYPE_F32, sb_flat(obj), -1, 0};
    tspec va = {YP_ROLE_LOSS_VALUE, YP_KIND_LOSS, YP_SCALE_CONST, YP_DTYPE_F32, sb_flat(4), -1, 0};
    sb_out_as(b, &b->cur.loss_assign, sb_new_tensor(b, as, "loss:assign%s%s", "", ""));
    sb_out_as(b, &b->cur.loss_objmap, sb_new_tensor(b, om, "loss:objmap%s%s", "", ""));
    sb_out_as(b, &b->cur.loss_value, sb_new_tensor(b, va, "loss:value%s%s", "", ""));
    for (int l = 0; l < g->nl && b->rg[det]; l++) {
        char nm[16];
        snprintf(nm, sizeof nm, ".l%d", l);
        tspec sp = {YP_ROLE_VALUE_GRAD,
                    YP_KIND_ACTGRAD,
                    YP_SCALE_BATCH_PIXELS,
                    b->s->opts.act_dtype,
                    b->info[det].out[l],
                    det,
                    l};
        int t = sb_new_tensor(b, sp, "dact:%s%s", g->nodes[det].name, nm);
        b->grad_t[det * YP_MAX_LEVELS + l] = t;
        sb_out_as(b, &b->cur.dx[l], t);
    }
    b->s->loss_step = sb_emit(b, YP_PHASE_LOSS, -1, -1, "loss", 20 * (lab + obj));
}

/* Evaluation: Detect's outputs decoded (sigmoid, grid and anchor offsets) into one list of
 * (batch, na*sum(H*W), nc+5) boxes, what YOLOv5's Detect returns in eval mode beside its raw
 * outputs and NMS reads. */
void sb_decode_step(bld *b) {
    const yp_graph *g = b->g;
    int det = g->n_nodes - 1;
    int64_t cells = 0;
    for (int l = 0; l < g->nl; l++) {
        const yp_shape *y = &b->info[det].out[l];
        cells += y->h * y->w;
        sb_in_as(b, &b->cur.x[l], b->out_t[det * YP_MAX_LEVELS + l]);
    }
    yp_shape out = {b->s->opts.batch, 1, g->na * cells, g->nc + 5};
    tspec sp = {YP_ROLE_DECODED, YP_KIND_ACT, YP_SCALE_BATCH_PIXELS, YP_DTYPE_F32, out, det, 0};
    sb_out_as(b, &b->cur.decoded, sb_new_tensor(b, sp, "decoded:%s%s", g->nodes[det].name, ""));
    sb_emit(b, YP_PHASE_FORWARD, -1, -1, "decode", 8 * yp_shape_numel(out));
}
