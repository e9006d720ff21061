/* checkpoint.c - checkpoints of a training run (yp_checkpoint.h): the executor's state tensors
 * under their state-dict names and PyTorch shapes, the metadata, saving through the atomic
 * safetensors writer, resuming (everything checked first, then copied) and fine-tuning from a
 * file's weights (mismatched shapes skipped, one line each); stripping a finished run's file to
 * its weights in fp16. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cjson/cJSON.h>

#include "yp_checkpoint.h"
#include "yp_elem_math.h"
#include "yp_plan_io.h"
#include "yp_pt.h"

#define NAME_MAX_LEN 160

/* One state tensor of an executor as the file names it. */
typedef struct {
    int t; /* its tensor in the training schedule */
    char name[NAME_MAX_LEN];
    int ndim;
    int64_t shape[4];
} item;

/* ---------------------------------------------------------------- names and shapes */

/* The PyTorch shape of parameter w (a WEIGHT tensor), as its node's op row gives it: conv (c_out,
 * c_in/groups, kh, kw), a Detect level's (na*(nc+5), c_in, 1, 1), every bias and BN tensor (c).
 * Its rank. */
static int param_shape(const yp_schedule *s, const yp_tensor *w, int64_t shape[4]) {
    yp_param_spec ps[YP_MAX_NODE_PARAMS];
    int k = yp_op_params(&s->g->nodes[w->node], ps), j = 0;
    while (j < k && (ps[j].role != w->role || ps[j].level != w->level)) j++;
    YP_ASSERT(j < k && yp_param_numel(&ps[j]) == w->shape.w);
    for (int d = 0; d < ps[j].ndim; d++) shape[d] = ps[j].shape[d];
    return ps[j].ndim;
}

/* The file's prefix for state tensor d, or NULL when d is not saved (activations, scratch, AMP
 * copies; gradients unless with_grads). */
static const char *prefix_of(const yp_tensor *d, int with_grads) {
    switch (d->kind) {
    case YP_KIND_WEIGHT: return "";
    case YP_KIND_EMA: return "ema.";
    case YP_KIND_GRAD: return with_grads ? "grad." : NULL;
    case YP_KIND_OPTSTATE:
        return d->role == YP_ROLE_MOMENTUM ? "optimizer.momentum_buffer."
               : d->role == YP_ROLE_ADAM_M ? "optimizer.exp_avg."
                                           : "optimizer.exp_avg_sq.";
    default: return NULL;
    }
}

/* x's state tensors (gradients too when micro-batches are pending), malloc'd, their count into
 * *n; NULL when out of memory. */
static item *state_items(const yp_exec *x, int with_grads, int *n) {
    const yp_schedule *s = x->train.s;
    item *it = malloc((size_t)s->n_tensors * sizeof *it + 1);
    *n = 0;
    if (!it) return NULL;
    for (int t = 0; t < s->n_tensors; t++) {
        const yp_tensor *d = &s->tensors[t];
        const char *pre = prefix_of(d, with_grads);
        if (!pre) continue;
        const yp_tensor *w = d->kind == YP_KIND_WEIGHT ? d : &s->tensors[d->param];
        item *i = &it[(*n)++];
        i->t = t;
        snprintf(i->name, sizeof i->name, "%s%s", pre, w->name);
        i->ndim = param_shape(s, w, i->shape);
    }
    return it;
}

static const char *optimizer_of(const yp_exec *x) { return yp_optimizer_name(x->train.s->opts.optimizer); }

/* ---------------------------------------------------------------- saving */

/* The hyperparameters and counters in the metadata, in the order they are written. */
#define N_NUM 14
static const char *const num_keys[N_NUM] = {
    "epoch", "best_fitness", "updates", "micro", "hyp.lr", "hyp.momentum", "hyp.beta2",
    "hyp.eps", "hyp.weight_decay", "hyp.max_grad_norm", "hyp.ema_decay", "hyp.ema_tau", "last_grad_norm",
    "hyp.lr_bias",
};

static void format_nums(const yp_exec *x, const yp_ckpt_meta *m, char out[N_NUM][40]) {
    const yp_trainer *tr = &x->trainer;
    const yp_hyp *h = &tr->hyp;
    snprintf(out[0], 40, "%lld", (long long)m->epoch);
    snprintf(out[1], 40, "%.17g", m->best_fitness);
    snprintf(out[2], 40, "%lld", (long long)tr->updates);
    snprintf(out[3], 40, "%lld", (long long)tr->micro);
    const double d[10] = {h->lr, h->momentum, h->beta2, h->eps, h->weight_decay, h->max_grad_norm, h->ema_decay,
                          h->ema_tau, tr->last_grad_norm, h->lr_bias};
    for (int i = 0; i < 10; i++) snprintf(out[4 + i], 40, "%.17g", d[i]);
}

typedef struct {
    const yp_exec *x;
    const item *it;
} save_ctx;

/* yp_st_source: tensor i's bytes out of the arena through the backend. */
static int from_arena(void *ctx, int i, void *dst, size_t bytes, yp_err *err) {
    const save_ctx *c = ctx;
    const yp_binding *b = &c->x->train;
    if (b->be->mem_copy(b->be, dst, yp_bind_tensor(b, c->it[i].t), bytes, YP_COPY_DEVICE_TO_HOST))
        return yp_err_set(err, "copying %s out of the arena: %s", c->it[i].name, b->be->last_error(b->be));
    return 0;
}

int yp_ckpt_save(const yp_exec *x, const char *path, const yp_ckpt_meta *m, const yp_st_faults *faults, yp_err *err) {
    int n = 0;
    item *it = state_items(x, x->trainer.micro > 0, &n);
    yp_st_tensor *ts = malloc((size_t)n * sizeof *ts + 1);
    char *plan = yp_plan_json_text(x->train.plan);
    int rc = -1;
    if (!it || !ts || !plan) {
        yp_err_set(err, "%s: out of memory preparing the checkpoint", path);
        goto done;
    }
    for (int i = 0; i < n; i++) {
        const yp_tensor *d = &x->train.s->tensors[it[i].t];
        if (d->dtype != YP_DTYPE_F32) {
            yp_err_set(err, "%s: %s is not fp32; checkpoints hold fp32 state only", path, it[i].name);
            goto done;
        }
        ts[i] = (yp_st_tensor){.name = it[i].name, .dtype = YP_ST_F32, .ndim = it[i].ndim, .data = NULL};
        memcpy(ts[i].shape, it[i].shape, sizeof it[i].shape);
    }
    char nums[N_NUM][40], version[8];
    format_nums(x, m, nums);
    snprintf(version, sizeof version, "%d", YP_CKPT_VERSION);
    const char *keys[N_NUM + 6] = {"format", "version", "optimizer", "ema", "plan", "options"};
    const char *vals[N_NUM + 6] = {YP_CKPT_FORMAT, version, optimizer_of(x), x->train.s->opts.ema ? "1" : "0", plan,
                                   m->options ? m->options : "{}"};
    for (int i = 0; i < N_NUM; i++) keys[6 + i] = num_keys[i], vals[6 + i] = nums[i];
    save_ctx c = {x, it};
    yp_st_desc desc = {ts, n, keys, vals, N_NUM + 6, from_arena, &c};
    rc = yp_st_save(path, &desc, faults, err);
done:
    free(plan), free(ts), free(it);
    return rc;
}

/* ---------------------------------------------------------------- metadata */

static int meta_str(const yp_st_file *f, const char *key, const char **out, yp_err *err) {
    *out = yp_st_meta(f, key);
    if (!*out)
        return yp_err_set(err, "%s: __metadata__.%s: missing; not a checkpoint yoloplan wrote", f->path, key);
    return 0;
}

static int meta_i64(const yp_st_file *f, const char *key, int64_t *out, yp_err *err) {
    const char *s;
    if (meta_str(f, key, &s, err)) return -1;
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (!*s || *end || errno || v < -1)
        return yp_err_set(err, "%s: __metadata__.%s: \"%s\" is not an integer >= -1", f->path, key, s);
    *out = v;
    return 0;
}

static int meta_f64(const yp_st_file *f, const char *key, double *out, yp_err *err) {
    const char *s;
    if (meta_str(f, key, &s, err)) return -1;
    char *end;
    errno = 0;
    *out = strtod(s, &end);
    if (!*s || *end || errno == ERANGE)
        return yp_err_set(err, "%s: __metadata__.%s: \"%s\" is not a number", f->path, key, s);
    return 0;
}

/* The format and version, the counters and the texts into info (plan and options duplicated). */
static int read_meta(const yp_st_file *f, yp_ckpt_info *info, yp_err *err) {
    const char *fmt, *ver, *opt, *plan, *options;
    memset(info, 0, sizeof *info);
    if (meta_str(f, "format", &fmt, err)) return -1;
    if (strcmp(fmt, YP_CKPT_FORMAT))
        return yp_err_set(err, "%s: __metadata__.format: \"%s\", expected \"%s\"", f->path, fmt, YP_CKPT_FORMAT);
    if (meta_str(f, "version", &ver, err)) return -1;
    if (atoi(ver) != YP_CKPT_VERSION || strspn(ver, "0123456789") != strlen(ver))
        return yp_err_set(err, "%s: __metadata__.version: \"%s\"; this yoloplan reads version %d", f->path, ver,
                          YP_CKPT_VERSION);
    const char *stripped = yp_st_meta(f, "stripped");
    info->stripped = stripped && !strcmp(stripped, "1");
    if (meta_i64(f, "epoch", &info->epoch, err) || meta_str(f, "plan", &plan, err) ||
        meta_str(f, "options", &options, err))
        return -1;
    if (info->stripped && info->epoch != -1) /* train.py's strip_optimizer sets epoch -1 */
        return yp_err_set(err, "%s: __metadata__.epoch: %lld in a stripped checkpoint, which has -1", f->path,
                          (long long)info->epoch);
    if (!info->stripped) { /* the training state's counters: a stripped file has none */
        if (meta_i64(f, "updates", &info->updates, err) || meta_i64(f, "micro", &info->micro, err) ||
            meta_f64(f, "best_fitness", &info->best_fitness, err) || meta_str(f, "optimizer", &opt, err))
            return -1;
        if (yp_optimizer_parse(opt) < 0)
            return yp_err_set(err, "%s: __metadata__.optimizer: unknown optimizer \"%s\"", f->path, opt);
        if (info->updates < 0 || info->micro < 0)
            return yp_err_set(err, "%s: __metadata__.%s: negative", f->path, info->updates < 0 ? "updates" : "micro");
        snprintf(info->optimizer, sizeof info->optimizer, "%s", opt);
    }
    info->plan = strdup(plan), info->options = strdup(options);
    if (!info->plan || !info->options) {
        yp_ckpt_info_free(info);
        return yp_err_set(err, "%s: out of memory", f->path);
    }
    return 0;
}

void yp_ckpt_info_free(yp_ckpt_info *info) {
    free(info->plan), free(info->options);
    memset(info, 0, sizeof *info);
}

int yp_ckpt_read_info(const char *path, yp_ckpt_info *info, yp_err *err) {
    yp_st_file f;
    memset(info, 0, sizeof *info);
    if (yp_st_open(&f, path, err)) return -1;
    int rc = read_meta(&f, info, err);
    yp_st_close(&f);
    return rc;
}

/* ---------------------------------------------------------------- stripping */

/* Whether file tensor `name` is training state a stripped file drops: the EMA copies (which its
 * weights come from), the optimizer's state, pending gradients. */
static int is_train_state(const char *name) {
    return !strncmp(name, "ema.", 4) || !strncmp(name, "optimizer.", 10) || !strncmp(name, "grad.", 5);
}

typedef struct {
    const yp_st_file *f;
    const int *src; /* the file entry each written tensor comes from */
    float *stage;   /* room for the largest F32 source */
} strip_ctx;

/* yp_st_source: written tensor i in F16, from its source entry (F32 rounded to nearest even, as
 * torch's half(); F16 as it is). */
static int strip_source(void *ctx, int i, void *dst, size_t bytes, yp_err *err) {
    const strip_ctx *c = ctx;
    const yp_st_entry *e = &c->f->e[c->src[i]];
    if (e->dtype == YP_ST_F16) return yp_st_read(c->f, c->src[i], dst, err);
    if (yp_st_read(c->f, c->src[i], c->stage, err)) return -1;
    for (size_t k = 0; k < bytes / 2; k++) {
        uint16_t h = yp_f32_to_f16(c->stage[k]);
        memcpy((char *)dst + 2 * k, &h, 2);
    }
    return 0;
}

/* The tensors of the stripped file of f into ts[] and their sources into src[] (both f->n long);
 * their count, or -1 with err naming a tensor that cannot be stripped. *most: the largest
 * source's bytes. */
static int strip_plan(const yp_st_file *f, yp_st_tensor *ts, int *src, int64_t *most, yp_err *err) {
    int k = 0;
    *most = 1;
    for (int e = 0; e < f->n; e++) {
        const yp_st_entry *m = &f->e[e];
        if (is_train_state(m->name)) continue;
        char ema[NAME_MAX_LEN + 8];
        int s = snprintf(ema, sizeof ema, "ema.%s", m->name) < (int)sizeof ema ? yp_st_find(f, ema) : -1;
        const yp_st_entry *x = &f->e[s >= 0 ? s : e];
        char a[128], b[128];
        yp_st_shape_str(m->ndim, m->shape, a, sizeof a);
        yp_st_shape_str(x->ndim, x->shape, b, sizeof b);
        if (x->dtype != YP_ST_F32 && x->dtype != YP_ST_F16)
            return yp_err_set(err, "%s: tensor %s is %s; a checkpoint yoloplan wrote has F32 weights", f->path,
                              x->name, yp_st_dtype_name(x->dtype));
        if (strcmp(a, b))
            return yp_err_set(err, "%s: tensor %s is %s, its EMA copy %s; not a checkpoint yoloplan wrote", f->path,
                              m->name, a, b);
        ts[k] = (yp_st_tensor){.name = m->name, .dtype = YP_ST_F16, .ndim = m->ndim, .data = NULL};
        memcpy(ts[k].shape, m->shape, sizeof m->shape);
        src[k++] = s >= 0 ? s : e;
        if (x->end - x->begin > *most) *most = x->end - x->begin;
    }
    return k;
}

/* The plan's text reduced to what a stripped file keeps of it: its format, version, model (the IR
 * `yoloplan val` builds the model from) and candidate (batch, size, precision trained with); the
 * schedule and memory layout are training's. malloc'd; NULL when the text is no JSON object or
 * out of memory. */
static char *plan_model_only(const char *plan) {
    static const char *const keep[4] = {"format", "version", "model", "candidate"};
    cJSON *in = cJSON_Parse(plan), *out = cJSON_CreateObject();
    char *text = NULL;
    int ok = cJSON_IsObject(in) && out;
    for (int k = 0; ok && k < 4; k++) {
        cJSON *v = cJSON_DetachItemFromObjectCaseSensitive(in, keep[k]);
        if (v) ok = cJSON_AddItemToObject(out, keep[k], v);
    }
    if (ok) text = cJSON_PrintUnformatted(out);
    cJSON_Delete(in), cJSON_Delete(out);
    return text;
}

int yp_ckpt_strip(const char *path, yp_ckpt_strip_result *out, yp_err *err) {
    yp_st_file f;
    yp_ckpt_info info;
    memset(out, 0, sizeof *out);
    memset(&info, 0, sizeof info);
    if (yp_st_open(&f, path, err)) return -1;
    out->bytes_before = out->bytes_after = f.file_bytes;
    yp_st_tensor *ts = malloc((size_t)f.n * sizeof *ts + 1);
    int *src = malloc((size_t)f.n * sizeof *src + 1), rc = -1;
    float *stage = NULL;
    char *plan = NULL;
    int64_t most = 1;
    if (read_meta(&f, &info, err)) goto done;
    if (info.stripped) {
        out->already = 1, rc = 0;
        goto done;
    }
    if (!ts || !src) {
        yp_err_set(err, "%s: out of memory stripping the checkpoint", path);
        goto done;
    }
    int n = strip_plan(&f, ts, src, &most, err);
    if (n < 0) goto done;
    if (!(stage = malloc((size_t)most)) || !(plan = plan_model_only(info.plan))) {
        yp_err_set(err, "%s: out of memory stripping the checkpoint", path);
        goto done;
    }
    char version[8];
    snprintf(version, sizeof version, "%d", YP_CKPT_VERSION);
    const char *keys[6] = {"format", "version", "stripped", "epoch", "plan", "options"};
    const char *vals[6] = {YP_CKPT_FORMAT, version, "1", "-1", plan, info.options};
    strip_ctx c = {&f, src, stage};
    yp_st_desc d = {ts, n, keys, vals, 6, strip_source, &c};
    if (yp_st_save(path, &d, NULL, err)) goto done;
    struct stat st;
    out->tensors = n;
    out->bytes_after = stat(path, &st) == 0 ? (int64_t)st.st_size : -1;
    rc = 0;
done:
    free(plan), free(stage), free(src), free(ts);
    yp_ckpt_info_free(&info);
    yp_st_close(&f);
    return rc;
}

/* ---------------------------------------------------------------- resuming */

/* The hyperparameters and last gradient norm of the metadata, in format_nums' order. */
static int read_hyp(const yp_st_file *f, yp_hyp *h, double *last_norm, yp_err *err) {
    double *const dst[9] = {&h->lr, &h->momentum, &h->beta2, &h->eps, &h->weight_decay, &h->max_grad_norm,
                            &h->ema_decay, &h->ema_tau, last_norm};
    for (int i = 0; i < 9; i++)
        if (meta_f64(f, num_keys[4 + i], dst[i], err)) return -1;
    /* a file written before the bias group had its own rate: the one rate of every group */
    h->lr_bias = h->lr;
    if (yp_st_meta(f, num_keys[13])) return meta_f64(f, num_keys[13], &h->lr_bias, err);
    return 0;
}

/* The file entry of every item (into at[]), each F32 with the item's shape, and no file tensor
 * left over. 0, or -1 with err naming the first tensor that differs. */
static int match_all(const yp_st_file *f, const item *it, int n, int *at, yp_err *err) {
    for (int i = 0; i < n; i++) {
        int e = at[i] = yp_st_find(f, it[i].name);
        char want[128], got[128];
        if (e < 0)
            return yp_err_set(err, "%s: has no tensor %s, which this plan's training state holds; resume with the plan "
                              "the checkpoint was made with (its __metadata__.plan)", f->path, it[i].name);
        const yp_st_entry *x = &f->e[e];
        yp_st_shape_str(it[i].ndim, it[i].shape, want, sizeof want);
        yp_st_shape_str(x->ndim, x->shape, got, sizeof got);
        if (x->dtype != YP_ST_F32 || strcmp(want, got))
            return yp_err_set(err, "%s: tensor %s: %s %s in the file, the plan's is F32 %s; resume with the plan the "
                              "checkpoint was made with", f->path, it[i].name, yp_st_dtype_name(x->dtype), got, want);
    }
    if (f->n == n) return 0;
    for (int e = 0; e < f->n; e++) { /* names are unique on both sides, so some file tensor is extra */
        int used = 0;
        for (int i = 0; i < n && !used; i++) used = at[i] == e;
        if (!used)
            return yp_err_set(err, "%s: tensor %s: not part of this plan's training state (another model, optimizer, "
                              "EMA setting or frozen layers?)", f->path, f->e[e].name);
    }
    return 0;
}

/* Copies entry at[i] of the file into item i's tensor, staged in host (large enough). */
static int copy_in(const yp_exec *x, const yp_st_file *f, const item *it, int e, void *host, yp_err *err) {
    const yp_binding *b = &x->train;
    if (yp_st_read(f, e, host, err)) return -1;
    if (b->be->mem_copy(b->be, yp_bind_tensor(b, it->t), host, (size_t)(f->e[e].end - f->e[e].begin),
                        YP_COPY_HOST_TO_DEVICE))
        return yp_err_set(err, "%s: copying %s into the arena: %s", f->path, it->name, b->be->last_error(b->be));
    return 0;
}

/* Zeroes x's gradients (a checkpoint saved right after an update has none pending). */
static int zero_grads(const yp_exec *x, yp_err *err) {
    const yp_binding *b = &x->train;
    for (int t = 0; t < b->s->n_tensors; t++)
        if (b->s->tensors[t].kind == YP_KIND_GRAD &&
            b->be->mem_set(b->be, yp_bind_tensor(b, t), 0, (size_t)b->s->tensors[t].bytes))
            return yp_err_set(err, "zeroing %s: %s", b->s->tensors[t].name, b->be->last_error(b->be));
    return 0;
}

/* The checks and the copy of yp_ckpt_resume on an open file. */
static int resume_open(yp_exec *x, const yp_st_file *f, yp_ckpt_info *info, yp_err *err) {
    yp_hyp h = x->trainer.hyp;
    double last_norm = 0;
    if (read_meta(f, info, err)) return -1;
    if (info->stripped)
        return yp_err_set(err, "%s: a stripped checkpoint (the weights of a finished run, fp16, no optimizer): "
                          "nothing to resume; train from it with --weights", f->path);
    if (read_hyp(f, &h, &last_norm, err)) return -1;
    if (strcmp(info->optimizer, optimizer_of(x)))
        return yp_err_set(err, "%s: __metadata__.optimizer: the run was trained with %s, this plan uses %s", f->path,
                          info->optimizer, optimizer_of(x));
    int n = 0, rc = -1;
    item *it = state_items(x, info->micro > 0, &n);
    int *at = malloc((size_t)n * sizeof *at + 1);
    int64_t most = 1;
    for (int i = 0; it && i < n; i++)
        if (x->train.s->tensors[it[i].t].bytes > most) most = x->train.s->tensors[it[i].t].bytes;
    void *host = malloc((size_t)most);
    if (!it || !at || !host) yp_err_set(err, "%s: out of memory", f->path);
    else if (!match_all(f, it, n, at, err) && !(info->micro == 0 && zero_grads(x, err))) {
        rc = 0;
        for (int i = 0; i < n && !rc; i++) rc = copy_in(x, f, &it[i], at[i], host, err);
    }
    if (!rc) {
        yp_trainer *tr = &x->trainer;
        tr->hyp = h, tr->last_grad_norm = last_norm, tr->updates = info->updates, tr->micro = info->micro;
        /* the file keeps ModelEMA's count only, as train.py's does; Adam's t resumes from it (they
         * differ by the loss scaler's skipped steps, and the scaler restarts at its initial scale,
         * as a resumed train.py's GradScaler does) */
        tr->opt_steps = info->updates;
        tr->lowp_stale = 1; /* new masters: the AMP weight copies follow them */
    }
    free(host), free(at), free(it);
    return rc;
}

int yp_ckpt_resume(yp_exec *x, const char *path, yp_ckpt_info *info, yp_err *err) {
    yp_st_file f;
    yp_ckpt_info local;
    yp_ckpt_info *in = info ? info : &local;
    memset(in, 0, sizeof *in);
    if (yp_st_open(&f, path, err)) return -1;
    int rc = resume_open(x, &f, in, err);
    yp_st_close(&f);
    if (rc || !info) yp_ckpt_info_free(in);
    return rc;
}

/* ---------------------------------------------------------------- fine-tuning */

/* The n values of raw (dtype d, a float type) as floats into out, in place-safe order (out may
 * be raw: wider sources are read front to back, narrower back to front). */
static void to_f32(yp_st_dtype d, const void *raw, float *out, int64_t n) {
    if (d == YP_ST_F64) {
        for (int64_t i = 0; i < n; i++) {
            double v;
            memcpy(&v, (const char *)raw + 8 * i, 8);
            out[i] = (float)v;
        }
    } else if (d == YP_ST_F16 || d == YP_ST_BF16) {
        for (int64_t i = n - 1; i >= 0; i--) {
            uint16_t h;
            memcpy(&h, (const char *)raw + 2 * i, 2);
            out[i] = d == YP_ST_F16 ? yp_f16_to_f32(h) : yp_bf16_to_f32(h);
        }
    } else if ((const void *)out != raw) {
        memcpy(out, raw, (size_t)n * 4);
    }
}

/* The rank of shape[0..ndim) without its trailing 1s: an nn.Linear's (out, in) weight and the
 * (out, in, 1, 1) of the 1x1 conv2d yoloplan runs it as are the same bytes. */
static int rank_of(int ndim, const int64_t *shape) {
    while (ndim > 1 && shape[ndim - 1] == 1) ndim--;
    return ndim;
}

/* Whether a file tensor of shape fs[0..fn), `parts` model tensors stacked along its first axis
 * (nn.MultiheadAttention's packed in_proj: 3), holds model tensor w. */
static int same_shape(int fn, const int64_t *fs, int parts, const item *w) {
    int a = rank_of(fn, fs), b = rank_of(w->ndim, w->shape);
    if (a != b || fs[0] != parts * w->shape[0]) return 0;
    for (int i = 1; i < a; i++)
        if (fs[i] != w->shape[i]) return 0;
    return 1;
}

/* Where a PyTorch state dict keeps model tensor w when not under w's own name: one of the three
 * chunks of nn.MultiheadAttention's packed in_proj ("<ma>.in_proj.k.weight" is the second third of
 * "<ma>.in_proj_weight"; graph/IR.md). Writes the packed name into buf and returns the chunk's
 * index, or -1 for any other tensor. */
static int packed_source(const char *name, char *buf, size_t size) {
    static const char *const kinds[] = {"weight", "bias"};
    static const char qkv[] = "qkv";
    const char *dot = strrchr(name, '.');
    const size_t stem = dot ? (size_t)(dot - name) : 0; /* name[0..stem) is "<ma>.in_proj.q" */
    const char *part = stem >= 10 ? strchr(qkv, name[stem - 1]) : NULL;
    if (!part || strncmp(name + stem - 10, ".in_proj.", 9)) return -1;
    for (int k = 0; k < 2; k++) {
        if (strcmp(dot + 1, kinds[k])) continue;
        if (buf && snprintf(buf, size, "%.*s_%s", (int)(stem - 2), name, kinds[k]) >= (int)size) return -1;
        return (int)(part - qkv);
    }
    return -1;
}

/* The tensors --weights reads: a safetensors file's or a PyTorch .pt's (yp_pt.h), under the same
 * names (a .pt checkpoint's "ema" with "ema." in front, as in a safetensors checkpoint). */
typedef struct {
    const char *path;
    int n;
    const yp_st_entry *e; /* n entries: name, dtype, shape; end - begin bytes */
    yp_st_file st;
    yp_pt_file pt;
    int is_pt;
} weights_file;

/* Opens path as a .pt when it starts as one (a zip, or a legacy pickle yp_pt_open explains), else as
 * safetensors; on a .pt, one line on log (may be NULL) saying what it holds. 0, or -1 with err set. */
static int weights_open(weights_file *w, const char *path, FILE *log, yp_err *err) {
    memset(w, 0, sizeof *w);
    w->is_pt = yp_pt_sniff(path);
    if (w->is_pt ? yp_pt_open(&w->pt, path, err) : yp_st_open(&w->st, path, err)) return -1;
    w->path = w->is_pt ? w->pt.path : w->st.path;
    w->n = w->is_pt ? w->pt.n : w->st.n;
    w->e = w->is_pt ? w->pt.e : w->st.e;
    if (w->is_pt && log) fprintf(log, "%s: %s\n", path, w->pt.what);
    return 0;
}

static void weights_close(weights_file *w) {
    if (w->is_pt)
        yp_pt_close(&w->pt);
    else
        yp_st_close(&w->st);
}

static int weights_find(const weights_file *w, const char *name) {
    return w->is_pt ? yp_pt_find(&w->pt, name) : yp_st_find(&w->st, name);
}

static int weights_read(const weights_file *w, int i, void *dst, yp_err *err) {
    return w->is_pt ? yp_pt_read(&w->pt, i, dst, err) : yp_st_read(&w->st, i, dst, err);
}

/* Whether file entry e (chunk `part` of a packed one when part >= 0) can set model tensor item w;
 * when not, one line on log. */
static int transferable(const weights_file *f, const yp_st_entry *e, int part, const item *w, FILE *log) {
    char want[128], got[128];
    yp_st_shape_str(w->ndim, w->shape, want, sizeof want);
    yp_st_shape_str(e->ndim, e->shape, got, sizeof got);
    if (e->ndim < 1 || !same_shape(e->ndim, e->shape, part >= 0 ? 3 : 1, w)) {
        if (log) fprintf(log, "%s: %s: shape %s in the file, %s in the model; skipped\n", f->path, w->name, got, want);
        return 0;
    }
    if (e->dtype != YP_ST_F32 && e->dtype != YP_ST_F16 && e->dtype != YP_ST_BF16 && e->dtype != YP_ST_F64) {
        if (log)
            fprintf(log, "%s: %s: dtype %s is not a float type; skipped\n", f->path, w->name,
                    yp_st_dtype_name(e->dtype));
        return 0;
    }
    return 1;
}

/* File entry `name` (its EMA's first when ema), or -1. */
static int find_entry(const weights_file *f, const char *name, int ema) {
    char ema_name[256];
    int e = -1;
    if (ema && snprintf(ema_name, sizeof ema_name, "ema.%s", name) < (int)sizeof ema_name)
        e = weights_find(f, ema_name);
    return e >= 0 ? e : weights_find(f, name);
}

/* Transfers every model weight of it[0..n) that the file has, under its own name or packed
 * (packed_source), staging in host (8 bytes a value of the largest tensor, packed ones whole). */
static int transfer(yp_exec *x, const weights_file *f, const item *it, int n, int ema, void *host, FILE *log,
                    yp_ckpt_transfer *r, yp_err *err) {
    unsigned char *used = calloc((size_t)f->n + 1, 1); /* the file's entries some model tensor read */
    if (!used) return yp_err_set(err, "%s: out of memory", f->path);
    for (int i = 0; i < n; i++) {
        char packed[NAME_MAX_LEN + 8];
        int e = find_entry(f, it[i].name, ema), part = -1;
        if (e < 0 && (part = packed_source(it[i].name, packed, sizeof packed)) >= 0) e = find_entry(f, packed, ema);
        if (e < 0) {
            r->missing++;
            continue;
        }
        used[e] = 1;
        if (!transferable(f, &f->e[e], part, &it[i], log)) {
            r->skipped++;
            continue;
        }
        int64_t numel = x->train.s->tensors[it[i].t].shape.w;
        if (weights_read(f, e, host, err)) return free(used), -1;
        to_f32(f->e[e].dtype, host, host, numel * (part >= 0 ? 3 : 1));
        float *v = (float *)host + (part >= 0 ? part * numel : 0); /* the chunk: contiguous rows */
        yp_named_tensor nt = {it[i].name, v, numel};
        if (yp_exec_load_params(x, &nt, 1, err)) return free(used), -1;
        r->loaded++;
    }
    r->unused = f->n;
    for (int e = 0; e < f->n; e++) r->unused -= used[e];
    free(used);
    return 0;
}

static int load_weights(yp_exec *x, const char *path, int ema, FILE *log, yp_ckpt_transfer *out, yp_err *err) {
    weights_file f;
    memset(out, 0, sizeof *out);
    if (weights_open(&f, path, log, err)) return -1;
    int n = 0, k = 0, rc = -1;
    item *it = state_items(x, 0, &n);
    int64_t most = 1;
    for (int i = 0; it && i < n; i++) {
        if (x->train.s->tensors[it[i].t].kind != YP_KIND_WEIGHT) continue;
        it[k++] = it[i]; /* the weights only, in schedule order */
        int64_t w = x->train.s->tensors[it[i].t].shape.w * (packed_source(it[i].name, NULL, 0) >= 0 ? 3 : 1);
        if (w > most) most = w;
    }
    void *host = malloc((size_t)most * 8);
    if (!it || !host) yp_err_set(err, "%s: out of memory", path);
    else rc = transfer(x, &f, it, k, ema, host, log, out, err);
    if (!rc) {
        if (log)
            fprintf(log, "%s: transferred %d/%d model tensors (%d skipped, %d not in the file; %d tensors of the file "
                    "unused)\n", path, out->loaded, k, out->skipped, out->missing, out->unused);
    }
    free(host), free(it);
    weights_close(&f);
    return rc;
}

int yp_ckpt_load_weights(yp_exec *x, const char *path, FILE *log, yp_ckpt_transfer *out, yp_err *err) {
    return load_weights(x, path, 0, log, out, err);
}

int yp_ckpt_load_eval_weights(yp_exec *x, const char *path, FILE *log, yp_ckpt_transfer *out, yp_err *err) {
    return load_weights(x, path, 1, log, out, err);
}
