/* schedule.c - the training step (forward, loss, backward with recompute, optimizer, EMA) of a
 * graph: names, options, the builder's driver and queries over a built schedule. The builder's
 * parts live beside it (schedule_build.h lists them). */
#include <stdlib.h>
#include <string.h>

#include "schedule_build.h"

/* ---------------------------------------------------------------- names */

size_t yp_dtype_size(yp_dtype d) {
    static const size_t sz[YP_DTYPE_COUNT] = {4, 2, 2, 8, 8};
    return sz[d];
}

const char *yp_dtype_name(yp_dtype d) {
    static const char *const n[YP_DTYPE_COUNT] = {"f32", "f16", "bf16", "i64", "f64"};
    return n[d];
}

const char *yp_kind_name(yp_kind k) {
    static const char *const n[YP_KIND_COUNT] = {"weight", "grad", "optstate", "ema", "lowp", "input",
                                                 "act", "saved", "actgrad", "recompute", "workspace", "loss"};
    return n[k];
}

const char *yp_role_name(yp_role r) {
    static const char *const n[YP_ROLE_COUNT] = {
        "conv_weight", "conv_bias",     "bn_gamma",      "bn_beta",      "running_mean", "running_var",
        "grad",        "momentum",      "adam_m",        "adam_v",       "ema",          "lowp",
        "images",      "targets",       "value",         "bn_stats",     "pool_indices", "recomputed",
        "value_grad",  "scratch_image", "scratch_fixed", "loss_assign",  "loss_objmap",  "loss_value",
        "decoded",     "bn_sums",       "attn_probs",    "attn_scratch", "attn_scalars", "input_copy"};
    return (unsigned)r < YP_ROLE_COUNT ? n[r] : "?";
}

static const char *const fusion_names[YP_FUSION_COUNT] = {"bn_silu"};

const char *yp_fusion_name(yp_fusion f) { return (unsigned)f < YP_FUSION_COUNT ? fusion_names[f] : "?"; }

int yp_fusion_parse(const char *s) {
    for (int i = 0; s && i < YP_FUSION_COUNT; i++)
        if (!strcmp(s, fusion_names[i])) return i;
    return -1;
}

const char *yp_fused_name(yp_fused f) {
    static const char *const n[YP_FUSED_COUNT] = {"", "bn_stats", "bn+silu", "bn+silu_bwd", "bn_bwd_sums"};
    return (unsigned)f < YP_FUSED_COUNT ? n[f] : "?";
}

const char *yp_phase_name(yp_phase p) {
    static const char *const n[YP_PHASE_COUNT] = {"forward", "loss", "recompute", "backward", "optimizer"};
    return n[p];
}

/* yoloplan keeps conv outputs (pre-BN) and BN statistics and recomputes BN, SiLU and the cheap
 * ops; yoloplan+cat keeps concat outputs too (no concat, nor the branches it joins, is rebuilt);
 * PyTorch's autograd keeps what each op's backward reads, maxpool's indices and attention's
 * softmax output included. */
const yp_retention yp_retention_table[YP_SAVE_COUNT] = {
    [YP_SAVE_YOLOPLAN] = {"yoloplan", 0, 1u << YP_OP_CONV2D, 0, 0, 0},
    [YP_SAVE_PYTORCH] = {"pytorch", 1, 0, 1, 1, 1},
    [YP_SAVE_CONCAT] = {"yoloplan+cat", 0, 1u << YP_OP_CONV2D | 1u << YP_OP_CONCAT, 0, 0, 0},
};

const char *yp_save_policy_name(yp_save_policy p) {
    return (unsigned)p < YP_SAVE_COUNT ? yp_retention_table[p].name : "?";
}

int yp_save_policy_parse(const char *s) {
    for (int i = 0; s && i < YP_SAVE_COUNT; i++)
        if (!strcmp(s, yp_retention_table[i].name)) return i;
    return -1;
}

yp_sched_opts yp_sched_opts_default(int64_t batch, int64_t h, int64_t w) {
    yp_sched_opts o = {0};
    o.batch = batch, o.h = h, o.w = w;
    o.act_dtype = YP_DTYPE_F32;
    o.policy = YP_SAVE_YOLOPLAN;
    o.labels = 8 * batch;
    o.optimizer = YP_OPT_SGD;
    o.ema = 1;
    return o;
}

/* ---------------------------------------------------------------- driver */

static void mark_grads(bld *b) {
    const yp_graph *g = b->g;
    for (int i = 0; i < g->n_nodes; i++) {
        const yp_node *n = &g->nodes[i];
        b->trainable[i] = b->info[i].params > 0 && n->layer >= b->s->opts.freeze && !b->s->opts.eval;
        b->rg[i] = b->trainable[i];
        for (int k = 0; k < n->n_inputs; k++)
            if (n->inputs[k] != YP_INPUT_IMAGE && b->rg[n->inputs[k]]) b->rg[i] = 1;
    }
}

static int alloc_builder(bld *b, int n) {
    int **arrays[] = {&b->rg,      &b->trainable, &b->stats_t,   &b->idx_t,    &b->param_t,  &b->n_param,
                       &b->rec_t,   &b->rec_stamp, &b->boundary, &b->pending, &b->probs_t, &b->copy_t};
    for (size_t k = 0; k < sizeof arrays / sizeof *arrays; k++)
        if (!(*arrays[k] = calloc((size_t)n, sizeof(int)))) return -1;
    b->out_t = malloc((size_t)n * YP_MAX_LEVELS * sizeof(int));
    b->grad_t = malloc((size_t)n * YP_MAX_LEVELS * sizeof(int));
    b->info = calloc((size_t)n, sizeof *b->info);
    if (!b->out_t || !b->grad_t || !b->info) return -1;
    for (int i = 0; i < n * YP_MAX_LEVELS; i++) b->out_t[i] = b->grad_t[i] = -1;
    for (int i = 0; i < n; i++) b->rec_stamp[i] = -1, b->idx_t[i] = b->probs_t[i] = b->copy_t[i] = -1;
    return 0;
}

static void free_builder(bld *b) {
    free(b->rg), free(b->trainable), free(b->stats_t), free(b->idx_t), free(b->param_t), free(b->n_param);
    free(b->rec_t), free(b->rec_stamp), free(b->boundary), free(b->pending), free(b->grad_of), free(b->lowp_of),
        free(b->out_t), free(b->grad_t), free(b->info), free(b->tin), free(b->tout), free(b->probs_t);
    free(b->copy_t);
}

static void build(bld *b) {
    const yp_graph *g = b->g;
    const yp_sched_opts *o = &b->s->opts;
    mark_grads(b);
    sb_mark_boundaries(b);
    yp_shape img = {o->batch, g->in_channels, o->h, o->w};
    tspec im = {YP_ROLE_IMAGES, YP_KIND_INPUT, YP_SCALE_BATCH_PIXELS, o->act_dtype, img, -1, 0};
    tspec tg = {YP_ROLE_TARGETS, YP_KIND_LOSS, YP_SCALE_LABELS, YP_DTYPE_F32, sb_flat(6 * o->labels), -1, 0};
    b->image_t = b->s->images_t = sb_new_tensor(b, im, "input:images%s%s", "", "");
    b->targets_t = b->s->targets_t = sb_new_tensor(b, tg, "loss:targets%s%s", "", "");
    for (int i = 0; i < g->n_nodes; i++) sb_make_params(b, i);
    sb_make_param_state(b);
    if (b->oom) return;
    b->s->n_state = b->s->n_tensors;
    for (int i = 0; i < g->n_nodes && !b->oom; i++) sb_forward_node(b, i);
    sb_loss_step(b);
    if (o->eval) {
        sb_decode_step(b);
    } else {
        b->stamp = -1;
        for (int i = g->n_nodes - 1; i >= 0 && !b->oom; i--)
            if (b->rg[i]) sb_backward_node(b, i);
        sb_optimizer_steps(b);
    }
    if (!b->oom) sb_compute_lives(b);
    if (!b->oom && o->fusions) sb_fuse(b);
    for (int t = b->s->n_state; t < b->s->n_tensors && !b->oom; t++) { /* n_state's promise */
        yp_kind k = b->s->tensors[t].kind;
        YP_ASSERT(k != YP_KIND_WEIGHT && k != YP_KIND_GRAD && k != YP_KIND_OPTSTATE && k != YP_KIND_EMA &&
                  k != YP_KIND_LOWP);
    }
}

yp_schedule *yp_schedule_build(const yp_graph *g, const yp_sched_opts *opts, yp_err *err) {
    if (opts->labels < 0) {
        yp_err_set(err, "labels %lld: must not be negative", (long long)opts->labels);
        return NULL;
    }
    if (!opts->retention && (unsigned)opts->policy >= YP_SAVE_COUNT) {
        yp_err_set(err, "saving policy %d: unknown (yoloplan, pytorch or yoloplan+cat)", (int)opts->policy);
        return NULL;
    }
    yp_schedule *s = calloc(1, sizeof *s);
    bld b = {0};
    if (!s || alloc_builder(&b, g->n_nodes)) {
        yp_err_set(err, "out of memory building the schedule");
        goto fail;
    }
    s->g = g, s->opts = *opts, b.s = s, b.g = g, b.cur = sb_no_operands();
    b.rules = opts->retention ? opts->retention : &yp_retention_table[opts->policy];
    if (yp_graph_infer(g, opts->batch, opts->h, opts->w, b.info, err)) goto fail;
    build(&b);
    if (b.oom) {
        yp_err_set(err, "out of memory building the schedule");
        goto fail;
    }
    if (b.rule_failed) {
        yp_err_set(err, "conv scratch: %s", b.rule_err.msg);
        goto fail;
    }
    free_builder(&b);
    return s;
fail:
    free_builder(&b);
    yp_schedule_free(s);
    return NULL;
}

void yp_schedule_free(yp_schedule *s) {
    if (!s) return;
    free(s->tensors), free(s->steps), free(s->refs), free(s);
}

int yp_tensor_amp_copied(const yp_schedule *s, const yp_tensor *t) {
    (void)s;
    return t->role == YP_ROLE_CONV_WEIGHT && t->grad >= 0;
}

int yp_schedule_find(const yp_schedule *s, const char *name) {
    for (int t = s->n_tensors - 1; t >= 0; t--)
        if (strcmp(s->tensors[t].name, name) == 0) return t;
    return -1;
}

int64_t yp_schedule_saved_bytes(const yp_schedule *s) {
    int64_t total = 0;
    for (int t = 0; t < s->n_tensors; t++) {
        const yp_tensor *tt = &s->tensors[t];
        if (tt->kind == YP_KIND_SAVED || (tt->kind == YP_KIND_INPUT && tt->last > s->loss_step)) total += tt->bytes;
    }
    return total;
}

void yp_schedule_print(const yp_schedule *s, FILE *f) {
    fprintf(f, "# %d steps, %d tensors (loss at step %d)\n", s->n_steps, s->n_tensors, s->loss_step);
    for (int i = 0; i < s->n_steps; i++) {
        const yp_step *st = &s->steps[i];
        const char *what = st->node >= 0 ? s->g->nodes[st->node].name : st->label;
        char op[32];
        snprintf(op, sizeof op, "%s%s%s", st->op >= 0 ? yp_op_get((yp_op)st->op)->name : "-", st->fused ? "/" : "",
                 yp_fused_name(st->fused));
        fprintf(f, "step %4d %-9s %-17s %-28s reads", i, yp_phase_name(st->phase), op, what);
        for (int k = 0; k < st->n_in && k < 8; k++) fprintf(f, " %s", s->tensors[yp_step_inputs(s, st)[k]].name);
        if (st->n_in > 8) fprintf(f, " ... (%d)", st->n_in);
        fprintf(f, " writes");
        for (int k = 0; k < st->n_out && k < 8; k++) fprintf(f, " %s", s->tensors[yp_step_outputs(s, st)[k]].name);
        if (st->n_out > 8) fprintf(f, " ... (%d)", st->n_out);
        fputc('\n', f);
    }
    for (int t = 0; t < s->n_tensors; t++) {
        const yp_tensor *tt = &s->tensors[t];
        fprintf(f, "tensor %5d %-10s %-4s %12lld B  steps %4d..%-4d  %s\n", t, yp_kind_name(tt->kind),
                yp_dtype_name(tt->dtype), (long long)tt->bytes, tt->first, tt->last, tt->name);
    }
}
