/* torch_speed.c - eager PyTorch's training speed for train.py, op by op (yp_torch_speed.h). */
#include <math.h>
#include <string.h>

#include "torch_internal.h"
#include "yp_cost.h"
#include "yp_torch_host.h"
#include "yp_torch_speed.h"

const char *yp_torch_bound_name(yp_torch_bound b) {
    switch (b) {
    case YP_TORCH_BOUND_HOST: return "host dispatch";
    case YP_TORCH_BOUND_LOADER: return "data loader";
    default: return "GPU kernels";
    }
}

/* The two timelines: the host issues, the GPU runs. gpu_busy sums the kernels alone. */
typedef struct {
    const yp_gpu *gpu;
    yp_precision prec;
    double host, dev, gpu_busy, host_busy;
} timeline;

/* One op: host_s to issue it, then its kernel of dev_s on the GPU. */
static void op(timeline *t, double host_s, double dev_s) {
    t->host += host_s, t->host_busy += host_s;
    double start = t->dev > t->host ? t->dev : t->host;
    t->dev = start + dev_s, t->gpu_busy += dev_s;
}

/* The host waits for the GPU (an .item(), a print of a tensor). */
static void sync(timeline *t) {
    if (t->dev > t->host) t->host = t->dev;
}

/* A bandwidth-bound kernel over bytes (op -1: the roofline's elementwise rate) with one launch. */
static double stream_s(const timeline *t, double bytes) {
    return yp_cost_step_s(t->gpu, t->prec, -1, -1, YP_PHASE_OPTIMIZER, 0, bytes);
}

static double step_bytes(const yp_schedule *s, const yp_step *st) {
    double b = 0;
    for (int k = 0; k < st->n_in; k++) b += (double)s->tensors[yp_step_inputs(s, st)[k]].bytes;
    for (int k = 0; k < st->n_out; k++) b += (double)s->tensors[yp_step_outputs(s, st)[k]].bytes;
    return b;
}

/* Bytes of the step's activations (and their gradients) read (ins) or written: not its
 * parameters, statistics or copies. */
static double act_bytes(const yp_schedule *s, const yp_step *st, int ins) {
    double b = 0;
    int n = ins ? st->n_in : st->n_out;
    const int *ts = ins ? yp_step_inputs(s, st) : yp_step_outputs(s, st);
    for (int k = 0; k < n; k++) {
        const yp_tensor *tt = &s->tensors[ts[k]];
        yp_kind kd = tt->kind;
        if ((kd == YP_KIND_ACT || kd == YP_KIND_SAVED || kd == YP_KIND_ACTGRAD || kd == YP_KIND_INPUT) &&
            tt->role != YP_ROLE_BN_STATS)
            b += (double)tt->bytes;
    }
    return b;
}

/* What eager PyTorch's kernels move beyond the step's tensors read once and written once: an op
 * that runs two passes in training (two_pass_train: BatchNorm's statistics, then normalise; in
 * backward the reduction, then the elementwise pass) reads its activations twice; a conv under
 * AMP on NCHW tensors converts them to and from the NHWC layout of cuDNN's tensor-core kernels
 * (YP_TORCH_NCHW_PASSES). */
static double extra_bytes(const yp_schedule *s, const yp_step *st, int training) {
    const ytr_op_row *row = ytr_op_row_get(st->op);
    if (row->two_pass_train && training) return act_bytes(s, st, 1);
    if (row->cudnn_conv && s->opts.act_dtype != YP_DTYPE_F32)
        return YP_TORCH_NCHW_PASSES * 2 * (act_bytes(s, st, 1) + act_bytes(s, st, 0));
    return 0;
}

/* The kernels of step i: its roofline and launches (yp_cost_step_s), each launch an op of the
 * phase's host cost. */
static void run_step(timeline *t, const yp_schedule *s, int i, int training) {
    const yp_step *st = &s->steps[i];
    int n = yp_cost_launches(st->op, st->phase);
    double host = st->phase == YP_PHASE_BACKWARD ? YP_TORCH_BWD_OP_CPU_S : YP_TORCH_FWD_OP_CPU_S;
    double bytes = step_bytes(s, st) + extra_bytes(s, st, training);
    double dev = yp_cost_step_s(t->gpu, t->prec, st->op, yp_cost_rate_op(s->g, st->op, st->node), st->phase,
                                (double)st->flops, bytes);
    for (int k = 0; k < n; k++) op(t, host, dev / n);
}

/* Bytes of the step's tensors of one kind, read (ins) or written. */
static double kind_bytes(const yp_schedule *s, const yp_step *st, yp_kind kind, int ins) {
    double b = 0;
    int n = ins ? st->n_in : st->n_out;
    const int *ts = ins ? yp_step_inputs(s, st) : yp_step_outputs(s, st);
    for (int k = 0; k < n; k++)
        if (s->tensors[ts[k]].kind == kind) b += (double)s->tensors[ts[k]].bytes;
    return b;
}

/* The image batch to the GPU (uint8 over PCIe), then .float() / 255 (or .half() / 255). */
static int batch_in(timeline *t, int64_t batch, int64_t img, int out_bytes, yp_err *err) {
    int64_t px;
    if (__builtin_mul_overflow(batch, img, &px) || __builtin_mul_overflow(px, img * 3, &px))
        return yp_err_set(err, "PyTorch speed: batch %lld at %lld overflows", (long long)batch, (long long)img);
    double u8 = (double)px;
    op(t, YP_TORCH_FWD_OP_CPU_S, u8 / (YP_TORCH_H2D_GBS * 1e9));
    op(t, YP_TORCH_FWD_OP_CPU_S, stream_s(t, u8 * (1 + out_bytes)));
    op(t, YP_TORCH_FWD_OP_CPU_S, stream_s(t, u8 * 2 * out_bytes));
    return 0;
}

typedef enum { FWD_TRAIN, FWD_EVAL, FWD_FUSED } fwd_mode;

/* The forward steps of s. Training under autocast casts each conv weight (its fp16 copy, a LOWP
 * input: read fp32, write fp16) and counts BN's num_batches_tracked; eval BN is one kernel; fused
 * drops BN (folded into the conv). */
static void forward(timeline *t, const yp_schedule *s, fwd_mode m) {
    for (int i = 0; i < s->n_steps; i++) {
        const yp_step *st = &s->steps[i];
        if (st->phase != YP_PHASE_FORWARD) continue;
        if (ytr_op_row_get(st->op)->folds_into_conv && m == FWD_FUSED) continue;
        double lowp = kind_bytes(s, st, YP_KIND_LOWP, 1);
        if (m == FWD_TRAIN && lowp > 0) op(t, YP_TORCH_FWD_OP_CPU_S, stream_s(t, 3 * lowp));
        if (m == FWD_TRAIN && ytr_op_row_get(st->op)->counts_batches) op(t, YP_TORCH_FWD_OP_CPU_S, stream_s(t, 16));
        run_step(t, s, i, m == FWD_TRAIN);
    }
}

/* Per level: the output's elements and the objectness map's (B x na x H x W). */
static void detect_sizes(const yp_schedule *s, double out_bytes[YP_MAX_LEVELS], double map[YP_MAX_LEVELS], int *nl) {
    *nl = 0;
    for (int i = 0; i < s->n_steps; i++) {
        const yp_step *st = &s->steps[i];
        if (!ytr_op_row_get(st->op)->detect || st->phase != YP_PHASE_FORWARD) continue;
        for (int l = 0; l < st->n_out && l < YP_MAX_LEVELS; l++) {
            const yp_tensor *y = &s->tensors[yp_step_outputs(s, st)[l]];
            out_bytes[l] = (double)y->bytes;
            map[l] = (double)(y->shape.n * y->shape.h * y->shape.w) * s->g->na;
        }
        *nl = st->n_out < YP_MAX_LEVELS ? st->n_out : YP_MAX_LEVELS;
        return;
    }
}

/* ComputeLoss: forward (with_grad: its backward too, half as many ops). */
static void loss(timeline *t, const yp_schedule *s, int with_grad) {
    double out[YP_MAX_LEVELS] = {0}, map[YP_MAX_LEVELS] = {0};
    int nl;
    detect_sizes(s, out, map, &nl);
    for (int l = 0; l < nl; l++) {
        double passes = with_grad ? YP_TORCH_LOSS_OUTPUT_PASSES : 1;
        double maps = with_grad ? YP_TORCH_LOSS_MAP_PASSES : YP_TORCH_LOSS_MAP_PASSES / 2.0;
        double dev = stream_s(t, passes * out[l] + maps * map[l] * 4);
        int n = YP_TORCH_LOSS_OPS_PER_LEVEL;
        for (int k = 0; k < n; k++) op(t, YP_TORCH_FWD_OP_CPU_S, dev / (with_grad ? 1.5 * n : n));
        for (int k = 0; with_grad && k < n / 2; k++) op(t, YP_TORCH_BWD_OP_CPU_S, dev / (1.5 * n));
    }
}

/* The backward steps; under AMP each weight gradient's cast to fp32 (read fp16, write fp32);
 * on an accumulating iteration AccumulateGrad's add into .grad. */
static void backward(timeline *t, const yp_schedule *s, int amp, double accumulating) {
    op(t, YP_TORCH_FWD_OP_CPU_S, stream_s(t, 8)); /* scaler.scale(loss) */
    for (int i = 0; i < s->n_steps; i++) {
        const yp_step *st = &s->steps[i];
        if (st->phase != YP_PHASE_BACKWARD) continue;
        run_step(t, s, i, 1);
        double g = kind_bytes(s, st, YP_KIND_GRAD, 0);
        if (g <= 0) continue;
        if (amp && ytr_op_row_get(st->op)->cudnn_conv) op(t, YP_TORCH_BWD_OP_CPU_S, stream_s(t, 1.5 * g));
        if (accumulating > 0) op(t, YP_TORCH_BWD_OP_CPU_S * accumulating, stream_s(t, 3 * g) * accumulating);
    }
}

/* The persistent state: tensors, bytes and elements of the trained parameters (with .grad) and
 * of every floating state tensor (the EMA's loop). */
typedef struct {
    int n_params, n_state, n_group[3];
    double param_bytes, state_bytes, group_bytes[3];
} state_size;

/* train.py's parameter groups (smart_optimizer): 0 BN weights (no decay), 1 conv weights
 * (weight decay), 2 biases (no decay). */
static int group_of(yp_role r) { return r == YP_ROLE_BN_GAMMA ? 0 : r == YP_ROLE_CONV_WEIGHT ? 1 : 2; }

static state_size state_of(const yp_schedule *s) {
    state_size z = {0};
    for (int t = 0; t < s->n_tensors; t++) {
        const yp_tensor *tt = &s->tensors[t];
        if (tt->kind != YP_KIND_WEIGHT) continue;
        z.n_state++, z.state_bytes += (double)tt->bytes;
        if (tt->grad < 0) continue;
        int gr = group_of(tt->role);
        z.n_params++, z.param_bytes += (double)tt->bytes;
        z.n_group[gr]++, z.group_bytes[gr] += (double)tt->bytes;
    }
    return z;
}

/* A multi-tensor call over n tensors moving `bytes` (multi_tensor_apply: up to 110 tensors and
 * 320 chunks of 65536 elements a launch). */
static void foreach(timeline *t, int n, double bytes, double elements) {
    int by_tensors = (n + 109) / 110, by_chunks = (int)ceil(elements / (320.0 * 65536.0));
    int launches = by_tensors > by_chunks ? by_tensors : by_chunks;
    if (launches < 1) launches = 1;
    double dev = stream_s(t, bytes);
    op(t, YP_TORCH_FWD_OP_CPU_S + n * YP_TORCH_FOREACH_TENSOR_CPU_S, dev);
    for (int k = 1; k < launches; k++) op(t, 0, yp_cost_step_s(t->gpu, t->prec, -1, -1, YP_PHASE_OPTIMIZER, 0, 0));
}

/* The optimizer step with GradScaler, clip_grad_norm_, SGD (foreach, nesterov, weight decay) and
 * the EMA update. */
static void optimizer_step(timeline *t, const state_size *z) {
    double P = z->param_bytes, e = P / 4;
    int n = z->n_params;
    foreach(t, n, 2 * P, e);                              /* unscale_: read and write each grad */
    foreach(t, n, P, e);                                  /* clip_grad_norm_: _foreach_norm */
    for (int k = 0; k < 3; k++) op(t, YP_TORCH_FWD_OP_CPU_S, stream_s(t, 64)); /* stack, norm, clip coef */
    foreach(t, n, 2 * P, e);                              /* _foreach_mul_ by the coef */
    sync(t);                                              /* scaler.step: found_inf.item() */
    for (int g = 0; g < 3; g++) {
        int ng = z->n_group[g];
        double Pg = z->group_bytes[g], eg = Pg / 4;
        if (ng == 0) continue;
        if (g == 1) foreach(t, ng, 3 * Pg, eg);           /* grad + weight_decay * param */
        foreach(t, ng, 2 * Pg, eg);                       /* buf *= momentum */
        foreach(t, ng, 3 * Pg, eg);                       /* buf += grad */
        foreach(t, ng, 3 * Pg, eg);                       /* nesterov: grad += momentum * buf */
        foreach(t, ng, 3 * Pg, eg);                       /* param -= lr * grad */
    }
    for (int k = 0; k < 4; k++) op(t, YP_TORCH_FWD_OP_CPU_S, stream_s(t, 64)); /* scaler.update */
    for (int k = 0; k < z->n_state; k++) {                /* ModelEMA.update: v *= d; v += (1 - d) * w */
        double b = z->state_bytes / z->n_state;
        op(t, YP_TORCH_FWD_OP_CPU_S, stream_s(t, 2 * b));
        op(t, YP_TORCH_FWD_OP_CPU_S, stream_s(t, 2 * b));
        op(t, YP_TORCH_FWD_OP_CPU_S, stream_s(t, 3 * b));
    }
}

static int rate_ok(const yp_torch_speed *sp, yp_err *err) {
    if (!sp->gpu || sp->batch < 1 || sp->img < 32 || sp->epochs < 0 || sp->train_images < 0 || sp->val_images < 0 ||
        sp->cpus < 0 || sp->workers_opt < 0)
        return yp_err_set(err, "PyTorch speed: bad inputs (batch %lld, img %lld)", (long long)sp->batch,
                          (long long)sp->img);
    return 0;
}

/* One validation batch of vb images on s (an fp16 or fp32 schedule at that batch). */
static int val_batch(const yp_schedule *s, const yp_gpu *gpu, int half, int64_t vb, int64_t img, double *sec,
                     yp_err *err) {
    timeline t = {gpu, half ? YP_PREC_AMP_FP16 : YP_PREC_FP32, 0, 0, 0, 0};
    if (batch_in(&t, vb, img, half ? 2 : 4, err)) return -1;
    forward(&t, s, FWD_EVAL);
    double out[YP_MAX_LEVELS] = {0}, map[YP_MAX_LEVELS] = {0};
    int nl;
    detect_sizes(s, out, map, &nl);
    for (int l = 0; l < nl; l++) /* Detect's decode: sigmoid, xy, wh, cat */
        for (int k = 0; k < 8; k++) op(&t, YP_TORCH_FWD_OP_CPU_S, stream_s(&t, out[l] * 2 / 8 * 2));
    loss(&t, s, 0);
    sync(&t);
    *sec = t.host + (double)vb * YP_TORCH_NMS_S_PER_IMAGE;
    return 0;
}

int yp_torch_speed_predict(const yp_graph *g, yp_torch_speed *sp, yp_err *err) {
    if (rate_ok(sp, err)) return -1;
    int64_t B = sp->batch, S = sp->img;
    sp->accumulate = yp_accumulate(B);
    yp_schedule *s = ytr_schedule(g, B, S, S, sp->amp ? YP_DTYPE_F16 : YP_DTYPE_F32, sp->freeze, err);
    if (!s) return -1;
    timeline t = {sp->gpu, sp->amp ? YP_PREC_AMP_FP16 : YP_PREC_FP32, 0, 0, 0, 0};
    int rc = batch_in(&t, B, S, 4, err);
    double mark = t.gpu_busy;
    if (!rc) forward(&t, s, FWD_TRAIN);
    sp->fwd_s = t.gpu_busy - mark, mark = t.gpu_busy;
    loss(&t, s, 1);
    sp->loss_s = t.gpu_busy - mark, mark = t.gpu_busy;
    backward(&t, s, sp->amp, (double)(sp->accumulate - 1) / sp->accumulate);
    sp->bwd_s = t.gpu_busy - mark;
    /* the optimizer step on a timeline of its own, its share added to the iteration */
    state_size z = state_of(s);
    timeline o = {sp->gpu, t.prec, 0, 0, 0, 0};
    optimizer_step(&o, &z);
    sync(&o);
    sp->step_s = o.gpu_busy;
    t.host += YP_TORCH_ITER_HOST_S, t.host_busy += YP_TORCH_ITER_HOST_S;
    sync(&t);
    sp->iter_s = t.host + o.host / sp->accumulate;
    sp->host_s = t.host_busy + o.host_busy / sp->accumulate;
    double gpu_only = t.gpu_busy + o.gpu_busy / sp->accumulate;
    sp->gpu_images_per_s = (double)B / sp->iter_s;
    sp->workers = sp->cpus > 0 ? yp_torch_train_workers(sp->cpus, B, sp->workers_opt) : 0;
    double item = sp->cache ? YP_TORCH_CACHED_ITEM_S : YP_TORCH_MOSAIC_ITEM_S;
    int cores = sp->cores > 0 && sp->cores < sp->cpus ? sp->cores : sp->cpus;
    sp->loader_images_per_s = sp->workers > 0 ? (sp->workers < cores ? sp->workers : cores) / item : 0;
    if (sp->cpus > 0 && sp->workers == 0) /* the training process loads between iterations */
        sp->loader_images_per_s = 1.0 / (item + sp->host_s / (double)B);
    if (sp->workers > 0 && sp->workers + 1 > cores) { /* the training process shares the cores */
        double shared = cores / (item + sp->host_s / (double)B);
        if (shared < sp->loader_images_per_s) sp->loader_images_per_s = shared;
    }
    sp->train_images_per_s = sp->gpu_images_per_s;
    sp->bound = sp->host_s > gpu_only ? YP_TORCH_BOUND_HOST : YP_TORCH_BOUND_GPU;
    if (sp->loader_images_per_s > 0 && sp->loader_images_per_s < sp->gpu_images_per_s)
        sp->train_images_per_s = sp->loader_images_per_s, sp->bound = YP_TORCH_BOUND_LOADER;
    yp_schedule_free(s);
    if (rc) return -1;
    /* validation: the EMA in fp16 (half=amp) at twice the batch */
    int64_t vb = 2 * B;
    sp->val_batch_s = sp->val_s = 0;
    sp->val_workers = sp->cpus > 0 ? yp_torch_val_workers(sp->cpus, B, sp->workers_opt) : 0;
    if (sp->val_images > 0) {
        if (vb > sp->val_images) vb = sp->val_images;
        yp_schedule *v = ytr_schedule(g, vb, S, S, sp->amp ? YP_DTYPE_F16 : YP_DTYPE_F32, 0, err);
        if (!v || val_batch(v, sp->gpu, sp->amp, vb, S, &sp->val_batch_s, err)) {
            yp_schedule_free(v);
            return -1;
        }
        yp_schedule_free(v);
        double per_image = sp->val_batch_s / (double)vb;
        double vitem = sp->cache ? YP_TORCH_VAL_ITEM_S - YP_TORCH_DECODE_S_PER_IMAGE : YP_TORCH_VAL_ITEM_S;
        int vw = sp->val_workers < cores ? sp->val_workers : cores;
        if (vw > 0 && vitem / vw > per_image) per_image = vitem / vw; /* the loader bounds validation */
        if (sp->cpus > 0 && vw == 0) per_image += vitem;              /* loaded in the process */
        sp->val_batch_s = per_image * (double)vb;
        sp->val_s = (double)sp->val_images * per_image;
    }
    sp->train_s = (double)sp->train_images / sp->train_images_per_s;
    sp->epoch_s = sp->train_s + sp->val_s;
    sp->hours = sp->epochs * sp->epoch_s / 3600.0;
    return 0;
}

int yp_torch_speed_infer(const yp_graph *g, const yp_gpu *gpu, int64_t batch, int64_t img, int half, int fused,
                         double *seconds, yp_err *err) {
    if (!gpu || batch < 1 || img < 32) return yp_err_set(err, "PyTorch speed: bad inputs");
    yp_schedule *s = ytr_schedule(g, batch, img, img, half ? YP_DTYPE_F16 : YP_DTYPE_F32, 0, err);
    if (!s) return -1;
    timeline t = {gpu, half ? YP_PREC_AMP_FP16 : YP_PREC_FP32, 0, 0, 0, 0};
    int rc = batch_in(&t, batch, img, half ? 2 : 4, err);
    if (!rc) forward(&t, s, fused ? FWD_FUSED : FWD_EVAL);
    sync(&t);
    *seconds = t.host;
    yp_schedule_free(s);
    return rc;
}
