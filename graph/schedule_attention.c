/* schedule_attention.c - the tensors attention's steps need beside their operands: its softmax
 * output P, (n, heads, L, L) for the L = h*w pixels of an image, and its backward's scratch.
 * Where the retention row keeps P (attn_probs: PyTorch's autograd saves the softmax result) the
 * forward writes it into a tensor the backward reads, and so it is saved; elsewhere P is the
 * forward's (and a recompute's) workspace and the backward computes it again from q and k.
 * Beside a kept P the forward keeps the two 0-dim tensors torch's multi_head_attention_forward
 * saves (YP_ROLE_ATTN_SCALARS), 16 bytes, so the pytorch row counts what autograd counts. */
#include <string.h>

#include "ops_internal.h"
#include "schedule_build.h"

int64_t yp_attn_probs_floats(int64_t n, int64_t heads, int64_t h, int64_t w) {
    int64_t L;
    if (n < 1 || heads < 1 || h < 1 || w < 1 || __builtin_mul_overflow(h, w, &L)) return -1;
    return yp_mul4(n, heads, L, L);
}

void sb_attn_workspace(bld *b, int i, const char *what) {
    const yp_node *n = &b->g->nodes[i];
    const yp_sched_opts *o = &b->s->opts;
    yp_shape y = b->info[i].out[0];
    /* shape inference has refused sizes whose softmax FLOPs (5 per score) overflow */
    int64_t pf = yp_attn_probs_floats(y.n, n->a.attn.heads, y.h, y.w);
    YP_ASSERT(pf > 0);
    yp_shape ps = {y.n, n->a.attn.heads, y.h * y.w, y.h * y.w};
    if (!strcmp(what, "bwd")) {
        int kept = b->probs_t[i] >= 0; /* the step reads the forward's P */
        tspec sp = {YP_ROLE_ATTN_SCRATCH, YP_KIND_WORKSPACE, YP_SCALE_BATCH_PIXELS2, o->act_dtype,
                    sb_flat(kept ? pf : 2 * pf), i, 0};
        sb_out_as(b, &b->cur.scratch_image, sb_new_tensor(b, sp, "ws:%s:%s", n->name, what));
        return;
    }
    int keep = !strcmp(what, "fwd") && b->rules->attn_probs && b->rg[i] && !o->eval;
    tspec sp = {YP_ROLE_ATTN_PROBS, keep ? YP_KIND_ACT : YP_KIND_WORKSPACE, YP_SCALE_BATCH_PIXELS2, o->act_dtype, ps,
                i, 0};
    int t = keep ? sb_new_tensor(b, sp, "probs:%s%s", n->name, "") : sb_new_tensor(b, sp, "ws:%s:%s", n->name, what);
    sb_out_as(b, &b->cur.probs, t);
    if (!keep) return;
    b->probs_t[i] = t;
    static const char *const fmt[2] = {"scale:%s%s", "heads:%s%s"};
    for (int l = 0; l < 2; l++) { /* created right after P: sb_attn_kept_in finds them there */
        tspec sc = {
            YP_ROLE_ATTN_SCALARS, YP_KIND_ACT, YP_SCALE_CONST, l ? YP_DTYPE_I64 : YP_DTYPE_F64, sb_flat(1), i, l};
        sb_out_as(b, &b->cur.attn_scalars[l], sb_new_tensor(b, sc, fmt[l], n->name, ""));
    }
}

void sb_attn_kept_in(bld *b, int i) {
    int t = b->probs_t[i];
    if (t < 0) return; /* not kept: the backward computes P again */
    sb_in_as(b, &b->cur.probs, t);
    for (int l = 0; l < 2; l++) {
        YP_ASSERT(b->s->tensors[t + 1 + l].role == YP_ROLE_ATTN_SCALARS && b->s->tensors[t + 1 + l].node == i);
        sb_in_as(b, &b->cur.attn_scalars[l], t + 1 + l);
    }
}
