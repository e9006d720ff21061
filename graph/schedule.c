/* schedule.c - derivation of the training step (forward, loss, backward with recompute,
 * optimizer, EMA) and of every tensor's kind, size and life from a graph. */
#include <stdlib.h>
#include <string.h>

#include "yp_schedule.h"

/* ---------------------------------------------------------------- names */

size_t yp_dtype_size(yp_dtype d) {
    static const size_t sz[YP_DTYPE_COUNT] = {4, 2, 2, 8};
    return sz[d];
}

const char *yp_dtype_name(yp_dtype d) {
    static const char *const n[YP_DTYPE_COUNT] = {"f32", "f16", "bf16", "i64"};
    return n[d];
}

const char *yp_kind_name(yp_kind k) {
    static const char *const n[YP_KIND_COUNT] = {"weight", "grad", "optstate", "ema", "lowp", "input",
                                                 "act", "saved", "actgrad", "recompute", "workspace", "loss"};
    return n[k];
}

const char *yp_role_name(yp_role r) {
    static const char *const n[YP_ROLE_COUNT] = {
        "conv_weight", "conv_bias", "bn_gamma", "bn_beta", "running_mean", "running_var", "grad", "momentum",
        "adam_m", "adam_v", "ema", "lowp", "images", "targets", "value", "bn_stats", "pool_indices",
        "recomputed", "value_grad", "scratch_image", "scratch_fixed", "loss_assign", "loss_objmap", "loss_value"};
    return (unsigned)r < YP_ROLE_COUNT ? n[r] : "?";
}

const char *yp_phase_name(yp_phase p) {
    static const char *const n[YP_PHASE_COUNT] = {"forward", "loss", "recompute", "backward", "optimizer"};
    return n[p];
}

static const char *const policy_names[YP_SAVE_COUNT] = {"yoloplan", "pytorch", "yoloplan+cat"};

const char *yp_save_policy_name(yp_save_policy p) { return (unsigned)p < YP_SAVE_COUNT ? policy_names[p] : "?"; }

int yp_save_policy_parse(const char *s) {
    for (int i = 0; s && i < YP_SAVE_COUNT; i++)
        if (!strcmp(s, policy_names[i])) return i;
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

/* ---------------------------------------------------------------- builder state */

typedef struct {
    yp_schedule *s;
    const yp_graph *g;
    yp_node_info *info;
    int oom;
    int *rg;        /* node output requires grad */
    int *trainable; /* node has parameters that get gradients */
    int *out_t;     /* forward tensor per node and level: [node * YP_MAX_LEVELS + level] */
    int *grad_t;    /* activation gradient per node and level, -1 until created */
    int *stats_t;   /* BN batch statistics (mean, inverse std) */
    int *idx_t;     /* maxpool indices (pytorch policy) */
    int *param_t;   /* first parameter tensor of the node, -1 if none */
    int *n_param;   /* parameter tensors of the node (trainable first, then BN running stats) */
    int *rec_t;     /* recomputed value per node, valid while rec_stamp == stamp */
    int *rec_stamp;
    int *boundary;  /* conv whose output (through BN, SiLU) is its layer's output: kept even when checkpointed */
    int *grad_of;   /* per weight tensor: its gradient tensor, or -1 */
    int *lowp_of;   /* per weight tensor: its low-precision copy, or -1 */
    int n_weights;
    int stamp;
    int image_t, targets_t, n_recompute;
    int *tin, *tout; /* operands of the step being built */
    int n_in, n_out, cap_in, cap_out;
    yp_operands cur; /* and their names */
    int rule_failed; /* the conv scratch rule failed: rule_err says why */
    yp_err rule_err;
} bld;

static int *grow(int *p, int *cap, int need, int *oom) {
    if (need <= *cap) return p;
    int c = *cap ? *cap : 64;
    while (c < need) c *= 2;
    int *np = realloc(p, (size_t)c * sizeof *np);
    if (!np) {
        *oom = 1;
        return p;
    }
    *cap = c;
    return np;
}

/* What a new tensor is; its bytes follow from shape and dtype, its param is -1 (derived() sets it). */
typedef struct {
    yp_role role;
    yp_kind kind;
    yp_scale scale;
    yp_dtype dtype;
    yp_shape shape;
    int node, level;
} tspec;

static int new_tensor(bld *b, tspec sp, const char *fmt, const char *a, const char *c) {
    yp_schedule *s = b->s;
    if (s->n_tensors == s->cap_t) {
        int cap = s->cap_t ? s->cap_t * 2 : 256;
        yp_tensor *nt = realloc(s->tensors, (size_t)cap * sizeof *nt);
        if (!nt) {
            b->oom = 1;
            return 0;
        }
        s->tensors = nt, s->cap_t = cap;
    }
    yp_tensor *t = &s->tensors[s->n_tensors];
    memset(t, 0, sizeof *t);
    snprintf(t->name, sizeof t->name, fmt, a, c);
    t->role = sp.role, t->level = sp.level, t->param = -1;
    t->kind = sp.kind, t->scale = sp.scale, t->dtype = sp.dtype, t->shape = sp.shape, t->node = sp.node;
    t->producer = -1, t->grad = -1;
    t->bytes = yp_shape_numel(sp.shape) * (int64_t)yp_dtype_size(sp.dtype);
    return s->n_tensors++;
}

static yp_shape flat(int64_t n) { return (yp_shape){1, 1, 1, n}; }

static void op_in(bld *b, int t) {
    b->tin = grow(b->tin, &b->cap_in, b->n_in + 1, &b->oom);
    if (!b->oom) b->tin[b->n_in++] = t;
}

static void op_out(bld *b, int t) {
    b->tout = grow(b->tout, &b->cap_out, b->n_out + 1, &b->oom);
    if (!b->oom) b->tout[b->n_out++] = t;
}

/* An operand with its name: the slot of b->cur it fills. */
static void in_as(bld *b, int *slot, int t) { *slot = t, op_in(b, t); }
static void out_as(bld *b, int *slot, int t) { *slot = t, op_out(b, t); }

static yp_operands no_operands(void) {
    yp_operands a;
    int *p = (int *)&a;
    for (size_t k = 0; k < sizeof a / sizeof(int); k++) p[k] = -1;
    return a;
}

/* Appends a step with the operands collected by op_in/op_out; returns its index. */
static int emit(bld *b, yp_phase ph, int op, int node, const char *label, int64_t flops) {
    yp_schedule *s = b->s;
    if (s->n_steps == s->cap_s) {
        int cap = s->cap_s ? s->cap_s * 2 : 256;
        yp_step *ns = realloc(s->steps, (size_t)cap * sizeof *ns);
        if (!ns) {
            b->oom = 1;
            return 0;
        }
        s->steps = ns, s->cap_s = cap;
    }
    s->refs = grow(s->refs, &s->cap_r, s->n_refs + b->n_in + b->n_out, &b->oom);
    if (b->oom) return 0;
    yp_step *st = &s->steps[s->n_steps];
    memset(st, 0, sizeof *st);
    st->phase = ph, st->op = op, st->node = node, st->flops = flops, st->a = b->cur;
    b->cur = no_operands();
    snprintf(st->label, sizeof st->label, "%s", label);
    st->in_off = s->n_refs, st->n_in = b->n_in;
    memcpy(s->refs + s->n_refs, b->tin, (size_t)b->n_in * sizeof(int));
    s->n_refs += b->n_in;
    st->out_off = s->n_refs, st->n_out = b->n_out;
    memcpy(s->refs + s->n_refs, b->tout, (size_t)b->n_out * sizeof(int));
    s->n_refs += b->n_out;
    b->n_in = b->n_out = 0;
    return s->n_steps++;
}

/* ---------------------------------------------------------------- parameters */

static void add_param(bld *b, int node, int level, yp_role role, const char *name, const char *suffix, int64_t n) {
    tspec sp = {role, YP_KIND_WEIGHT, YP_SCALE_CONST, YP_DTYPE_F32, flat(n), node, level};
    int t = new_tensor(b, sp, "%s%s", name, suffix);
    if (b->param_t[node] < 0) b->param_t[node] = t;
    b->n_param[node]++;
}

/* Weight tensors of node i, Ultralytics names: model.0.conv.weight, model.0.bn.weight, ... */
static void make_params(bld *b, int i) {
    const yp_node *n = &b->g->nodes[i];
    b->param_t[i] = -1;
    if (n->op == YP_OP_CONV2D) {
        const yp_conv_attrs *a = &n->a.conv;
        add_param(b, i, 0, YP_ROLE_CONV_WEIGHT, n->name, ".weight", (int64_t)a->c_out * (a->c_in / a->groups) * a->k * a->k);
        if (a->bias) add_param(b, i, 0, YP_ROLE_CONV_BIAS, n->name, ".bias", a->c_out);
    } else if (n->op == YP_OP_BATCHNORM2D) {
        add_param(b, i, 0, YP_ROLE_BN_GAMMA, n->name, ".weight", n->a.bn.c);
        add_param(b, i, 0, YP_ROLE_BN_BETA, n->name, ".bias", n->a.bn.c);
        add_param(b, i, 0, YP_ROLE_RUNNING_MEAN, n->name, ".running_mean", n->a.bn.c);
        add_param(b, i, 0, YP_ROLE_RUNNING_VAR, n->name, ".running_var", n->a.bn.c);
    } else if (n->op == YP_OP_DETECT) {
        const yp_detect_attrs *d = &n->a.detect;
        int64_t no = (int64_t)d->na * (d->nc + 5);
        for (int l = 0; l < d->nl; l++) {
            char nm[YP_NAME_LEN + 16];
            snprintf(nm, sizeof nm, "%s.m.%d", n->name, l);
            add_param(b, i, l, YP_ROLE_CONV_WEIGHT, nm, ".weight", no * d->c_in[l]);
            add_param(b, i, l, YP_ROLE_CONV_BIAS, nm, ".bias", no);
        }
    }
}

static int is_buffer(const yp_tensor *t) { return t->role == YP_ROLE_RUNNING_MEAN || t->role == YP_ROLE_RUNNING_VAR; }

/* A tensor derived from parameter w (index t): its gradient, optimizer state, EMA or copy. */
static int derived(bld *b, yp_role role, yp_kind kind, yp_dtype dt, int t, const char *prefix) {
    yp_tensor w = b->s->tensors[t];
    tspec sp = {role, kind, YP_SCALE_CONST, dt, w.shape, w.node, w.level};
    int d = new_tensor(b, sp, "%s%s", prefix, w.name);
    if (!b->oom) b->s->tensors[d].param = t;
    return d;
}

/* Gradient, optimizer state, EMA and low-precision copies of every parameter. */
static void make_param_state(bld *b) {
    const yp_sched_opts *o = &b->s->opts;
    int n_weights = b->n_weights = b->s->n_tensors;
    b->grad_of = malloc((size_t)n_weights * sizeof(int));
    b->lowp_of = malloc((size_t)n_weights * sizeof(int));
    if (!b->grad_of || !b->lowp_of) {
        b->oom = 1;
        return;
    }
    for (int t = 0; t < n_weights; t++) {
        yp_tensor w = b->s->tensors[t];
        b->grad_of[t] = b->lowp_of[t] = -1;
        if (w.kind != YP_KIND_WEIGHT) continue;
        if (o->ema) derived(b, YP_ROLE_EMA, YP_KIND_EMA, YP_DTYPE_F32, t, "ema:");
        if (is_buffer(&w) || !b->trainable[w.node]) continue;
        b->grad_of[t] = derived(b, YP_ROLE_GRAD, YP_KIND_GRAD, YP_DTYPE_F32, t, "grad:");
        if (!b->oom) b->s->tensors[t].grad = b->grad_of[t];
        if (o->optimizer == YP_OPT_SGD) {
            derived(b, YP_ROLE_MOMENTUM, YP_KIND_OPTSTATE, YP_DTYPE_F32, t, "momentum:");
        } else {
            derived(b, YP_ROLE_ADAM_M, YP_KIND_OPTSTATE, YP_DTYPE_F32, t, "adam.m:");
            derived(b, YP_ROLE_ADAM_V, YP_KIND_OPTSTATE, YP_DTYPE_F32, t, "adam.v:");
        }
        char pre[8];
        snprintf(pre, sizeof pre, "%s:", yp_dtype_name(o->act_dtype));
        if (o->act_dtype != YP_DTYPE_F32 && !b->oom && yp_tensor_amp_copied(b->s, &b->s->tensors[t]))
            b->lowp_of[t] = derived(b, YP_ROLE_LOWP, YP_KIND_LOWP, o->act_dtype, t, pre);
    }
}

/* The tensor a conv/detect step multiplies with: the low-precision copy under AMP. */
static int weight_for_math(const bld *b, int t) {
    return b->lowp_of[t] >= 0 ? b->lowp_of[t] : t;
}

/* The operand slot a parameter (or its gradient) fills. */
static int *param_slot(yp_operands *a, const yp_tensor *p, int grad) {
    switch (p->role) {
    case YP_ROLE_CONV_WEIGHT: return grad ? &a->dw[p->level] : &a->w[p->level];
    case YP_ROLE_CONV_BIAS: return grad ? &a->dbias[p->level] : &a->bias[p->level];
    case YP_ROLE_BN_GAMMA: return grad ? &a->dgamma : &a->gamma;
    case YP_ROLE_BN_BETA: return grad ? &a->dbeta : &a->beta;
    case YP_ROLE_RUNNING_MEAN: return &a->running_mean;
    default: return &a->running_var;
    }
}

static void params_in(bld *b, int i, int trainable_only) {
    for (int k = 0; k < b->n_param[i]; k++) {
        int t = b->param_t[i] + k;
        if (trainable_only && is_buffer(&b->s->tensors[t])) continue;
        in_as(b, param_slot(&b->cur, &b->s->tensors[t], 0), weight_for_math(b, t));
    }
}

/* ---------------------------------------------------------------- forward */

/* The backend-neutral conv scratch (yp_schedule.h). */
int yp_conv_scratch_im2col(void *ctx, const yp_conv_query *q, int64_t *per_image, int64_t *fixed, yp_err *err) {
    (void)ctx, (void)err;
    *per_image = *fixed = 0;
    if (q->k == 1 && q->s == 1 && q->p == 0) return 0; /* a 1x1 conv is a plain GEMM */
    int64_t kk = (int64_t)q->k * q->k * (q->in.c / q->groups);
    *per_image = q->out.h * q->out.w * kk;
    if (q->s == 1 && q->k > 1 && q->p <= q->k - 1) {
        int64_t t = q->in.h * q->in.w * (int64_t)q->k * q->k * q->out.c;
        *per_image = t > *per_image ? t : *per_image;
    }
    *fixed = q->k > 1 ? q->out.c * kk : 0;
    return 0;
}

/* The scratch of one conv under the schedule's rule; a failure is kept for yp_schedule_build. */
static void conv_scratch(bld *b, const yp_conv_query *q, int64_t *per_image, int64_t *fixed) {
    const yp_sched_opts *o = &b->s->opts;
    yp_conv_scratch_fn fn = o->conv_scratch ? o->conv_scratch : yp_conv_scratch_im2col;
    if (fn(o->conv_scratch_ctx, q, per_image, fixed, &b->rule_err)) b->rule_failed = 1, *per_image = *fixed = 0;
}

/* Scratch tensors of a conv or Detect step: "ws:" per image (grows with the image) and "wt:"
 * fixed (fp32); Detect's levels run one after another and share the largest. */
static void conv_workspace(bld *b, int i, const char *what) {
    const yp_node *n = &b->g->nodes[i];
    if (n->op != YP_OP_CONV2D && n->op != YP_OP_DETECT) return;
    int64_t cols = 0, wt = 0;
    for (int l = 0; l < (n->op == YP_OP_DETECT ? n->n_inputs : 1); l++) {
        int v = n->inputs[l];
        yp_conv_query q = {0};
        q.in = v == YP_INPUT_IMAGE ? b->s->tensors[b->image_t].shape : b->info[v].out[0];
        q.out = b->info[i].out[l];
        q.backward = !strcmp(what, "bwd");
        if (n->op == YP_OP_CONV2D) {
            const yp_conv_attrs *a = &n->a.conv;
            q.k = a->k, q.s = a->s, q.p = a->p, q.groups = a->groups, q.bias = a->bias;
        } else {
            q.k = q.s = q.groups = q.bias = 1;
        }
        int64_t c, w;
        conv_scratch(b, &q, &c, &w);
        cols = c > cols ? c : cols, wt = w > wt ? w : wt;
    }
    yp_dtype dt = b->s->opts.act_dtype;
    tspec ws = {YP_ROLE_SCRATCH_IMAGE, YP_KIND_WORKSPACE, YP_SCALE_PIXELS, dt, flat(cols), i, 0};
    tspec wf = {YP_ROLE_SCRATCH_FIXED, YP_KIND_WORKSPACE, YP_SCALE_CONST, YP_DTYPE_F32, flat(wt), i, 0};
    if (cols) out_as(b, &b->cur.scratch_image, new_tensor(b, ws, "ws:%s:%s", n->name, what));
    if (wt) out_as(b, &b->cur.scratch_fixed, new_tensor(b, wf, "wt:%s:%s", n->name, what));
}

static int value_fwd(bld *b, int id, int level) {
    return id == YP_INPUT_IMAGE ? b->image_t : b->out_t[id * YP_MAX_LEVELS + level];
}

static int64_t elementwise_flops(const yp_node *n, yp_shape out) {
    int64_t numel = yp_shape_numel(out);
    switch (n->op) {
    case YP_OP_BATCHNORM2D: return 6 * numel; /* statistics + normalise + affine */
    case YP_OP_SILU: return 5 * numel;
    case YP_OP_MAXPOOL2D: return (int64_t)n->a.pool.k * n->a.pool.k * numel;
    default: return numel;
    }
}

static int64_t node_flops(const bld *b, int i) {
    const yp_node *n = &b->g->nodes[i];
    return b->info[i].flops ? b->info[i].flops : elementwise_flops(n, b->info[i].out[0]);
}

static void forward_node(bld *b, int i) {
    const yp_node *n = &b->g->nodes[i];
    const yp_sched_opts *o = &b->s->opts;
    const yp_node_info *ni = &b->info[i];
    for (int k = 0; k < n->n_inputs; k++) in_as(b, &b->cur.x[k], value_fwd(b, n->inputs[k], 0));
    params_in(b, i, 0);
    for (int l = 0; l < ni->n_out; l++) {
        char lv[16] = "";
        if (n->op == YP_OP_DETECT) snprintf(lv, sizeof lv, ".l%d", l);
        tspec sp = {YP_ROLE_VALUE, YP_KIND_ACT, YP_SCALE_BATCH_PIXELS, o->act_dtype, ni->out[l], i, l};
        int t = new_tensor(b, sp, "act:%s%s", n->name, lv);
        b->out_t[i * YP_MAX_LEVELS + l] = t;
        out_as(b, &b->cur.y[l], t);
    }
    if (n->op == YP_OP_BATCHNORM2D) {
        tspec sp = {YP_ROLE_BN_STATS, YP_KIND_ACT, YP_SCALE_CONST, YP_DTYPE_F32, flat(2 * (int64_t)n->a.bn.c), i, 0};
        b->stats_t[i] = new_tensor(b, sp, "stats:%s%s", n->name, "");
        out_as(b, &b->cur.stats, b->stats_t[i]);
        op_out(b, b->cur.running_mean); /* running mean and var are updated */
        op_out(b, b->cur.running_var);
    }
    if (n->op == YP_OP_MAXPOOL2D && o->policy == YP_SAVE_PYTORCH && b->rg[i]) {
        tspec sp = {YP_ROLE_POOL_INDICES, YP_KIND_ACT, YP_SCALE_BATCH_PIXELS, YP_DTYPE_I64, ni->out[0], i, 0};
        b->idx_t[i] = new_tensor(b, sp, "idx:%s%s", n->name, "");
        out_as(b, &b->cur.indices, b->idx_t[i]);
    }
    conv_workspace(b, i, "fwd");
    emit(b, YP_PHASE_FORWARD, n->op, i, "", node_flops(b, i));
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

static void loss_step(bld *b) {
    const yp_graph *g = b->g;
    int det = g->n_nodes - 1;
    for (int l = 0; l < g->nl; l++) in_as(b, &b->cur.x[l], b->out_t[det * YP_MAX_LEVELS + l]);
    in_as(b, &b->cur.targets, b->targets_t);
    int64_t lab = loss_label_floats(b), obj = loss_objmap_floats(b);
    tspec as = {YP_ROLE_LOSS_ASSIGN, YP_KIND_LOSS, YP_SCALE_LABELS, YP_DTYPE_F32, flat(lab), -1, 0};
    tspec om = {YP_ROLE_LOSS_OBJMAP, YP_KIND_LOSS, YP_SCALE_BATCH_PIXELS, YP_DTYPE_F32, flat(obj), -1, 0};
    tspec va = {YP_ROLE_LOSS_VALUE, YP_KIND_LOSS, YP_SCALE_CONST, YP_DTYPE_F32, flat(4), -1, 0};
    out_as(b, &b->cur.loss_assign, new_tensor(b, as, "loss:assign%s%s", "", ""));
    out_as(b, &b->cur.loss_objmap, new_tensor(b, om, "loss:objmap%s%s", "", ""));
    out_as(b, &b->cur.loss_value, new_tensor(b, va, "loss:value%s%s", "", ""));
    for (int l = 0; l < g->nl && b->rg[det]; l++) {
        char nm[16];
        snprintf(nm, sizeof nm, ".l%d", l);
        tspec sp = {YP_ROLE_VALUE_GRAD, YP_KIND_ACTGRAD, YP_SCALE_BATCH_PIXELS, b->s->opts.act_dtype, b->info[det].out[l],
                    det, l};
        int t = new_tensor(b, sp, "dact:%s%s", g->nodes[det].name, nm);
        b->grad_t[det * YP_MAX_LEVELS + l] = t;
        out_as(b, &b->cur.dx[l], t);
    }
    b->s->loss_step = emit(b, YP_PHASE_LOSS, -1, -1, "loss", 20 * (lab + obj));
}

/* ---------------------------------------------------------------- backward */

/* Is node v's output kept from the forward pass (rather than recomputed)? Under the yoloplan
 * policy only conv outputs are; a checkpointed layer drops all but its boundary conv, so its
 * output stays cheap to rebuild for the layers that read it and the cost of checkpointing one
 * layer does not depend on the others (what makes the checkpoint front a simple DP). yoloplan+cat
 * keeps concat outputs too, except in checkpointed layers. */
static int kept(const bld *b, int v) {
    const yp_sched_opts *o = &b->s->opts;
    if (o->policy == YP_SAVE_PYTORCH || !b->rg[v]) return 1;
    const yp_node *n = &b->g->nodes[v];
    int ckpt = (o->ckpt_layers >> n->layer) & 1;
    if (n->op == YP_OP_CONCAT) return o->policy == YP_SAVE_CONCAT && !ckpt;
    return n->op == YP_OP_CONV2D && (!ckpt || b->boundary[v]);
}

static void mark_boundaries(bld *b) {
    for (int l = 0; l < b->g->n_layers; l++) {
        int v = yp_layer_boundary_conv(b->g, l);
        if (v >= 0) b->boundary[v] = 1;
    }
}

static int need_value(bld *b, int v);

/* Emits a recompute step for node v's output; returns the new tensor. */
static int recompute(bld *b, int v) {
    const yp_node *n = &b->g->nodes[v];
    int ins[YP_MAX_INPUTS];
    for (int k = 0; k < n->n_inputs; k++) ins[k] = need_value(b, n->inputs[k]);
    for (int k = 0; k < n->n_inputs; k++) in_as(b, &b->cur.x[k], ins[k]);
    params_in(b, v, 1);
    if (n->op == YP_OP_BATCHNORM2D) in_as(b, &b->cur.stats, b->stats_t[v]); /* BN-apply with the saved statistics */
    char tag[16];
    snprintf(tag, sizeof tag, "#%d", b->n_recompute++);
    tspec sp = {YP_ROLE_RECOMPUTED, YP_KIND_RECOMPUTE, YP_SCALE_BATCH_PIXELS, b->s->opts.act_dtype, b->info[v].out[0], v, 0};
    int t = new_tensor(b, sp, "re:%s%s", n->name, tag);
    out_as(b, &b->cur.y[0], t);
    conv_workspace(b, v, "re");
    int64_t fl = node_flops(b, v);
    emit(b, YP_PHASE_RECOMPUTE, n->op, v, "", fl);
    b->s->recompute_flops += fl;
    b->rec_t[v] = t, b->rec_stamp[v] = b->stamp;
    return t;
}

/* The tensor holding node v's forward output for a backward step (image for YP_INPUT_IMAGE). */
static int need_value(bld *b, int v) {
    if (v == YP_INPUT_IMAGE || kept(b, v)) return value_fwd(b, v, 0);
    if (b->rec_stamp[v] == b->stamp) return b->rec_t[v];
    return recompute(b, v);
}

/* The forward tensors node i's backward reads besides its output gradients (-1: not read). */
typedef struct {
    int x[YP_MAX_INPUTS], stats, indices;
} bwd_needs;

static bwd_needs backward_needs(bld *b, int i) {
    const yp_node *n = &b->g->nodes[i];
    bwd_needs nd = {{-1, -1, -1, -1}, -1, -1};
    switch (n->op) {
    case YP_OP_CONV2D:
    case YP_OP_DETECT: /* the input, for the weight gradient */
        for (int l = 0; l < n->n_inputs && b->trainable[i]; l++) nd.x[l] = need_value(b, n->inputs[l]);
        break;
    case YP_OP_BATCHNORM2D:
        nd.x[0] = need_value(b, n->inputs[0]);
        nd.stats = b->stats_t[i];
        break;
    case YP_OP_SILU: nd.x[0] = need_value(b, n->inputs[0]); break;
    case YP_OP_MAXPOOL2D:
        nd.x[0] = need_value(b, n->inputs[0]);
        if (b->s->opts.policy == YP_SAVE_PYTORCH) nd.indices = b->idx_t[i];
        break;
    default: break; /* add, concat, upsample, space_to_depth need only the gradient */
    }
    return nd;
}

static int act_grad(bld *b, int v, int level) {
    int *slot = &b->grad_t[v * YP_MAX_LEVELS + level];
    if (*slot >= 0) {
        op_in(b, *slot); /* accumulate into the existing gradient */
        return *slot;
    }
    tspec sp = {YP_ROLE_VALUE_GRAD, YP_KIND_ACTGRAD, YP_SCALE_BATCH_PIXELS, b->s->opts.act_dtype, b->info[v].out[level], v,
                level};
    *slot = new_tensor(b, sp, "dact:%s%s", b->g->nodes[v].name, "");
    return *slot;
}

static void backward_node(bld *b, int i) {
    const yp_node *n = &b->g->nodes[i];
    yp_operands *a = &b->cur;
    int has_grad = 0;
    for (int l = 0; l < b->info[i].n_out; l++) has_grad |= b->grad_t[i * YP_MAX_LEVELS + l] >= 0;
    if (!has_grad) return; /* output unused by anything that needs gradients */
    if (b->stamp != n->layer) b->stamp = n->layer; /* recomputed values live within one layer's backward */
    bwd_needs nd = backward_needs(b, i); /* first: it may emit recompute steps */
    for (int l = 0; l < b->info[i].n_out; l++)
        if (b->grad_t[i * YP_MAX_LEVELS + l] >= 0) in_as(b, &a->dy[l], b->grad_t[i * YP_MAX_LEVELS + l]);
    for (int k = 0; k < YP_MAX_INPUTS; k++)
        if (nd.x[k] >= 0) in_as(b, &a->x[k], nd.x[k]);
    if (nd.stats >= 0) in_as(b, &a->stats, nd.stats);
    if (nd.indices >= 0) in_as(b, &a->indices, nd.indices);
    if (n->op == YP_OP_CONV2D || n->op == YP_OP_DETECT || n->op == YP_OP_BATCHNORM2D) params_in(b, i, 1);
    for (int k = 0; k < n->n_inputs; k++) {
        int v = n->inputs[k];
        if (v != YP_INPUT_IMAGE && b->rg[v]) out_as(b, &a->dx[k], act_grad(b, v, 0));
    }
    for (int k = 0; k < b->n_param[i] && b->trainable[i]; k++) {
        int p = b->param_t[i] + k, gt = b->grad_of[p];
        if (gt >= 0) *param_slot(a, &b->s->tensors[p], 1) = gt, op_in(b, gt), op_out(b, gt);
    }
    conv_workspace(b, i, "bwd");
    int64_t fl = node_flops(b, i) * (n->op == YP_OP_CONV2D || n->op == YP_OP_DETECT ? (b->trainable[i] ? 2 : 1) : 2);
    emit(b, YP_PHASE_BACKWARD, n->op, i, "", fl);
}

/* ---------------------------------------------------------------- optimizer */

static void optimizer_steps(bld *b) {
    yp_schedule *s = b->s;
    int64_t n_params = 0;
    for (int t = 0; t < s->n_tensors; t++) {
        yp_kind k = s->tensors[t].kind;
        if (k == YP_KIND_GRAD) op_in(b, t), n_params += s->tensors[t].shape.w;
        if (k == YP_KIND_OPTSTATE || k == YP_KIND_LOWP) op_in(b, t), op_out(b, t);
        if (k == YP_KIND_WEIGHT && !is_buffer(&s->tensors[t]) && b->trainable[s->tensors[t].node])
            op_in(b, t), op_out(b, t);
    }
    emit(b, YP_PHASE_OPTIMIZER, -1, -1, "optimizer", 10 * n_params);
    if (!s->opts.ema) return;
    for (int t = 0; t < s->n_tensors; t++) {
        yp_kind k = s->tensors[t].kind;
        if (k == YP_KIND_WEIGHT) op_in(b, t);
        if (k == YP_KIND_EMA) op_in(b, t), op_out(b, t);
    }
    emit(b, YP_PHASE_OPTIMIZER, -1, -1, "ema", 3 * n_params);
}

/* ---------------------------------------------------------------- lives */

static int persistent(yp_kind k) {
    return k == YP_KIND_WEIGHT || k == YP_KIND_GRAD || k == YP_KIND_OPTSTATE || k == YP_KIND_EMA || k == YP_KIND_LOWP;
}

/* Producer, consumers and live interval of every tensor; ACT read after the loss becomes SAVED. */
static void compute_lives(bld *b) {
    yp_schedule *s = b->s;
    int *count = calloc((size_t)s->n_tensors + 1, sizeof *count);
    if (!count) {
        b->oom = 1;
        return;
    }
    for (int t = 0; t < s->n_tensors; t++) s->tensors[t].first = s->tensors[t].last = -1;
    for (int st = 0; st < s->n_steps; st++) {
        const yp_step *p = &s->steps[st];
        for (int k = 0; k < p->n_out; k++) {
            yp_tensor *t = &s->tensors[s->refs[p->out_off + k]];
            if (t->producer < 0 && !persistent(t->kind)) t->producer = st;
            if (t->first < 0) t->first = st;
            t->last = st;
        }
        for (int k = 0; k < p->n_in; k++) {
            yp_tensor *t = &s->tensors[s->refs[p->in_off + k]];
            count[s->refs[p->in_off + k]]++;
            if (t->first < 0) t->first = st;
            t->last = st;
            if (t->kind == YP_KIND_ACT && st > s->loss_step) t->kind = YP_KIND_SAVED;
        }
    }
    int total = 0;
    for (int t = 0; t < s->n_tensors; t++) total += count[t];
    int *cons = malloc(((size_t)total + 1) * sizeof *cons), off = 0;
    s->refs = grow(s->refs, &s->cap_r, s->n_refs + total, &b->oom);
    if (!cons || b->oom) {
        free(cons), free(count);
        b->oom = 1;
        return;
    }
    for (int t = 0; t < s->n_tensors; t++) s->tensors[t].cons_off = s->n_refs + off, off += count[t], count[t] = 0;
    for (int st = 0; st < s->n_steps; st++) {
        const yp_step *p = &s->steps[st];
        for (int k = 0; k < p->n_in; k++) {
            int id = s->refs[p->in_off + k];
            yp_tensor *t = &s->tensors[id];
            if (t->n_cons && s->refs[t->cons_off + t->n_cons - 1] == st) continue; /* read twice by one step */
            s->refs[t->cons_off + t->n_cons++] = st;
        }
    }
    s->n_refs += total;
    for (int t = 0; t < s->n_tensors; t++) {
        yp_tensor *tt = &s->tensors[t];
        if (persistent(tt->kind)) tt->first = 0, tt->last = s->n_steps - 1;
        if (tt->kind == YP_KIND_INPUT || tt->producer < 0) tt->first = 0; /* loaded before the step starts */
        if (tt->last < 0) tt->last = tt->first;
    }
    free(cons);
    free(count);
}

/* ---------------------------------------------------------------- driver */

static void mark_grads(bld *b) {
    const yp_graph *g = b->g;
    for (int i = 0; i < g->n_nodes; i++) {
        const yp_node *n = &g->nodes[i];
        b->trainable[i] = b->info[i].params > 0 && n->layer >= b->s->opts.freeze;
        b->rg[i] = b->trainable[i];
        for (int k = 0; k < n->n_inputs; k++)
            if (n->inputs[k] != YP_INPUT_IMAGE && b->rg[n->inputs[k]]) b->rg[i] = 1;
    }
}

static int alloc_builder(bld *b, int n) {
    int **arrays[] = {&b->rg,     &b->trainable, &b->stats_t,   &b->idx_t,   &b->param_t,
                       &b->n_param, &b->rec_t,     &b->rec_stamp, &b->boundary};
    for (size_t k = 0; k < sizeof arrays / sizeof *arrays; k++)
        if (!(*arrays[k] = calloc((size_t)n, sizeof(int)))) return -1;
    b->out_t = malloc((size_t)n * YP_MAX_LEVELS * sizeof(int));
    b->grad_t = malloc((size_t)n * YP_MAX_LEVELS * sizeof(int));
    b->info = calloc((size_t)n, sizeof *b->info);
    if (!b->out_t || !b->grad_t || !b->info) return -1;
    for (int i = 0; i < n * YP_MAX_LEVELS; i++) b->out_t[i] = b->grad_t[i] = -1;
    for (int i = 0; i < n; i++) b->rec_stamp[i] = -1, b->idx_t[i] = -1;
    return 0;
}

static void free_builder(bld *b) {
    free(b->rg), free(b->trainable), free(b->stats_t), free(b->idx_t), free(b->param_t), free(b->n_param);
    free(b->rec_t), free(b->rec_stamp), free(b->boundary), free(b->grad_of), free(b->lowp_of), free(b->out_t), free(b->grad_t), free(b->info), free(b->tin), free(b->tout);
}

static void build(bld *b) {
    const yp_graph *g = b->g;
    const yp_sched_opts *o = &b->s->opts;
    mark_grads(b);
    mark_boundaries(b);
    yp_shape img = {o->batch, g->in_channels, o->h, o->w};
    tspec im = {YP_ROLE_IMAGES, YP_KIND_INPUT, YP_SCALE_BATCH_PIXELS, o->act_dtype, img, -1, 0};
    tspec tg = {YP_ROLE_TARGETS, YP_KIND_LOSS, YP_SCALE_LABELS, YP_DTYPE_F32, flat(6 * o->labels), -1, 0};
    b->image_t = b->s->images_t = new_tensor(b, im, "input:images%s%s", "", "");
    b->targets_t = b->s->targets_t = new_tensor(b, tg, "loss:targets%s%s", "", "");
    for (int i = 0; i < g->n_nodes; i++) make_params(b, i);
    make_param_state(b);
    if (b->oom) return;
    for (int i = 0; i < g->n_nodes && !b->oom; i++) forward_node(b, i);
    loss_step(b);
    b->stamp = -1;
    for (int i = g->n_nodes - 1; i >= 0 && !b->oom; i--)
        if (b->rg[i]) backward_node(b, i);
    optimizer_steps(b);
    if (!b->oom) compute_lives(b);
}

yp_schedule *yp_schedule_build(const yp_graph *g, const yp_sched_opts *opts, yp_err *err) {
    if (opts->labels < 0) {
        yp_err_set(err, "labels %lld: must not be negative", (long long)opts->labels);
        return NULL;
    }
    yp_schedule *s = calloc(1, sizeof *s);
    bld b = {0};
    if (!s || alloc_builder(&b, g->n_nodes)) {
        yp_err_set(err, "out of memory building the schedule");
        goto fail;
    }
    s->g = g, s->opts = *opts, b.s = s, b.g = g, b.cur = no_operands();
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
    s->node_trainable = b.trainable, s->node_requires_grad = b.rg; /* the schedule owns them now */
    b.trainable = b.rg = NULL;
    free_builder(&b);
    return s;
fail:
    free_builder(&b);
    yp_schedule_free(s);
    return NULL;
}

void yp_schedule_free(yp_schedule *s) {
    if (!s) return;
    free(s->tensors), free(s->steps), free(s->refs), free(s->node_trainable), free(s->node_requires_grad), free(s);
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
        fprintf(f, "step %4d %-9s %-17s %-28s reads", i, yp_phase_name(st->phase),
                st->op >= 0 ? yp_op_get((yp_op)st->op)->name : "-", what);
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
