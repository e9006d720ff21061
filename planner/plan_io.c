/* plan_io.c - plan.json writer and verifying loader. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "yp_atomic_file.h"
#include "yp_file.h"
#include "yp_ir.h"
#include "yp_json.h"
#include "yp_plan_io.h"
#include "yp_search.h"

static void add_i64(cJSON *o, const char *k, int64_t v) { cJSON_AddNumberToObject(o, k, (double)v); }

cJSON *yp_candidate_json(const yp_graph *g, const yp_candidate *c) {
    cJSON *j = cJSON_CreateObject();
    cJSON_AddStringToObject(j, "model", g->name);
    int img[2] = {(int)c->img_w, (int)c->img_h};
    cJSON_AddItemToObject(j, "img", cJSON_CreateIntArray(img, 2));
    add_i64(j, "batch", c->batch);
    cJSON_AddStringToObject(j, "precision", yp_precision_name(c->precision));
    cJSON *ck = cJSON_AddArrayToObject(j, "checkpoint");
    for (int l = 0; l < 64; l++)
        if (c->ckpt_layers >> l & 1) cJSON_AddItemToArray(ck, cJSON_CreateNumber(l));
    cJSON_AddBoolToObject(j, "mosaic", c->mosaic);
    cJSON_AddStringToObject(j, "optimizer", yp_optimizer_name(c->optimizer));
    cJSON_AddBoolToObject(j, "ema", c->ema);
    cJSON_AddNumberToObject(j, "freeze", c->freeze);
    cJSON_AddStringToObject(j, "policy", yp_save_policy_name(c->policy));
    cJSON_AddNumberToObject(j, "labels_per_image", c->labels_per_image);
    cJSON_AddBoolToObject(j, "multi_scale", c->multi_scale);
    cJSON_AddBoolToObject(j, "val_rect", c->val_rect);
    cJSON_AddStringToObject(j, "conv_scratch", yp_candidate_scratch_name(c));
    add_i64(j, "alignment", c->alignment);
    cJSON *fu = cJSON_AddArrayToObject(j, "fusions");
    for (int f = 0; f < YP_FUSION_COUNT; f++)
        if (c->fusions >> f & 1u) cJSON_AddItemToArray(fu, cJSON_CreateString(yp_fusion_name((yp_fusion)f)));
    cJSON_AddNumberToObject(j, "workers", c->pipe.workers);
    cJSON_AddNumberToObject(j, "prefetch", c->pipe.prefetch);
    cJSON_AddStringToObject(j, "cache", yp_cache_mode_name(c->pipe.cache));
    return j;
}

cJSON *yp_gpu_json(const yp_gpu *g) {
    cJSON *j = cJSON_CreateObject();
    cJSON_AddStringToObject(j, "name", g->name);
    cJSON_AddStringToObject(j, "desc", g->desc);
    add_i64(j, "mem_bytes", g->mem_bytes), add_i64(j, "fixed_bytes", g->fixed_bytes);
    cJSON_AddNumberToObject(j, "fp32_tflops", g->fp32_tflops);
    cJSON_AddNumberToObject(j, "tf32_tflops", g->tf32_tflops);
    cJSON_AddNumberToObject(j, "fp16_tflops", g->fp16_tflops);
    cJSON_AddNumberToObject(j, "bf16_tflops", g->bf16_tflops);
    cJSON_AddNumberToObject(j, "bandwidth_gbs", g->bw_gbs);
    cJSON_AddBoolToObject(j, "from_table", g->from_table);
    return j;
}

static cJSON *tensor_json(const yp_plan *p, int t) {
    const yp_tensor *x = &p->sched->tensors[t];
    cJSON *j = cJSON_CreateObject();
    add_i64(j, "id", t);
    cJSON_AddStringToObject(j, "name", x->name);
    cJSON_AddStringToObject(j, "kind", yp_kind_name(x->kind));
    cJSON_AddStringToObject(j, "dtype", yp_dtype_name(x->dtype));
    int sh[4] = {(int)x->shape.n, (int)x->shape.c, (int)x->shape.h, (int)x->shape.w};
    cJSON_AddItemToObject(j, "shape", cJSON_CreateIntArray(sh, 4));
    add_i64(j, "bytes", x->bytes), add_i64(j, "offset", p->arena.offsets[t]);
    add_i64(j, "first", x->first), add_i64(j, "last", x->last), add_i64(j, "producer", x->producer);
    add_i64(j, "node", x->node);
    return j;
}

static cJSON *step_json(const yp_schedule *s, int i) {
    const yp_step *st = &s->steps[i];
    cJSON *j = cJSON_CreateObject();
    add_i64(j, "id", i);
    cJSON_AddStringToObject(j, "phase", yp_phase_name(st->phase));
    cJSON_AddStringToObject(j, "op", st->op >= 0 ? yp_op_get((yp_op)st->op)->name : st->label);
    add_i64(j, "node", st->node);
    cJSON_AddItemToObject(j, "inputs", cJSON_CreateIntArray(yp_step_inputs(s, st), st->n_in));
    cJSON_AddItemToObject(j, "outputs", cJSON_CreateIntArray(yp_step_outputs(s, st), st->n_out));
    add_i64(j, "flops", st->flops);
    if (st->fused) cJSON_AddStringToObject(j, "fused", yp_fused_name(st->fused));
    return j;
}

/* Validation (yp_val_plan.h): its batch and size, its arena bytes, and per eval tensor where it
 * lies and, for a parameter, the training tensor it aliases by id, name and role. */
static cJSON *val_tensor_json(const yp_plan *p, int t) {
    const yp_val_plan *v = &p->val;
    const yp_tensor *x = &v->sched->tensors[t];
    cJSON *j = cJSON_CreateObject();
    add_i64(j, "id", t);
    cJSON_AddStringToObject(j, "name", x->name);
    cJSON_AddStringToObject(j, "role", yp_role_name(x->role));
    cJSON_AddStringToObject(j, "kind", yp_kind_name(x->kind));
    cJSON_AddStringToObject(j, "dtype", yp_dtype_name(x->dtype));
    int sh[4] = {(int)x->shape.n, (int)x->shape.c, (int)x->shape.h, (int)x->shape.w};
    cJSON_AddItemToObject(j, "shape", cJSON_CreateIntArray(sh, 4));
    add_i64(j, "bytes", x->bytes), add_i64(j, "offset", v->offsets[t]);
    add_i64(j, "first", x->first), add_i64(j, "last", x->last);
    if (v->alias[t] < 0) {
        cJSON_AddNullToObject(j, "aliases");
    } else {
        const yp_tensor *a = &p->sched->tensors[v->alias[t]];
        cJSON *al = cJSON_AddObjectToObject(j, "aliases");
        add_i64(al, "id", v->alias[t]);
        cJSON_AddStringToObject(al, "name", a->name);
        cJSON_AddStringToObject(al, "role", yp_role_name(a->role));
    }
    return j;
}

static cJSON *val_json(const yp_plan *p) {
    const yp_val_plan *v = &p->val;
    cJSON *j = cJSON_CreateObject();
    add_i64(j, "batch", v->sched->opts.batch);
    int img[2] = {(int)v->sched->opts.w, (int)v->sched->opts.h};
    cJSON_AddItemToObject(j, "img", cJSON_CreateIntArray(img, 2));
    add_i64(j, "arena_bytes", v->bytes), add_i64(j, "base_bytes", v->base);
    cJSON_AddStringToObject(j, "reads", v->reads_ema ? "ema" : "weights");
    add_i64(j, "loss_step", v->sched->loss_step);
    cJSON *ts = cJSON_AddArrayToObject(j, "tensors"), *ss = cJSON_AddArrayToObject(j, "steps");
    for (int t = 0; t < v->sched->n_tensors; t++) cJSON_AddItemToArray(ts, val_tensor_json(p, t));
    for (int i = 0; i < v->sched->n_steps; i++) cJSON_AddItemToArray(ss, step_json(v->sched, i));
    return j;
}

static cJSON *plan_json(const yp_plan *p) {
    cJSON *j = cJSON_CreateObject();
    cJSON_AddStringToObject(j, "format", YP_PLAN_FORMAT);
    cJSON_AddNumberToObject(j, "version", YP_PLAN_VERSION);
    char *ir = yp_ir_write_string(p->g);
    cJSON_AddItemToObject(j, "model", ir ? cJSON_Parse(ir) : cJSON_CreateNull());
    free(ir);
    cJSON_AddItemToObject(j, "candidate", yp_candidate_json(p->g, &p->cand));
    cJSON_AddItemToObject(j, "gpu", yp_gpu_json(&p->gpu));
    add_i64(j, "reserve_bytes", p->reserve_bytes);
    add_i64(j, "arena_bytes", p->arena_bytes), add_i64(j, "train_arena_bytes", p->arena.size);
    add_i64(j, "val_arena_bytes", p->val_bytes), add_i64(j, "lower_bound_bytes", p->live.peak);
    add_i64(j, "peak_step", p->live.peak_step), add_i64(j, "loss_step", p->sched->loss_step);
    cJSON *ts = cJSON_AddArrayToObject(j, "tensors"), *ss = cJSON_AddArrayToObject(j, "steps");
    for (int t = 0; t < p->sched->n_tensors; t++) cJSON_AddItemToArray(ts, tensor_json(p, t));
    for (int i = 0; i < p->sched->n_steps; i++) cJSON_AddItemToArray(ss, step_json(p->sched, i));
    cJSON_AddItemToObject(j, "validation", val_json(p));
    return j;
}

char *yp_plan_json_text(const yp_plan *p) {
    cJSON *j = plan_json(p);
    char *s = j ? cJSON_PrintUnformatted(j) : NULL;
    cJSON_Delete(j);
    return s;
}

int yp_plan_save(const yp_plan *p, const char *path, yp_err *err) {
    char *s = yp_plan_json_text(p);
    if (!s) return yp_err_set(err, "%s: out of memory serialising the plan", path);
    size_t len = strlen(s);
    s[len] = '\n'; /* the text ends with a newline, as before (its NUL is not written) */
    int rc = yp_af_save_bytes(path, s, len + 1, err);
    free(s);
    return rc;
}

/* ---------------------------------------------------------------- loading */

typedef struct {
    const char *file;
    yp_err *err;
} ctx;

static const cJSON *need(ctx *c, const cJSON *o, const char *path, const char *key) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    if (!v) yp_err_set(c->err, "%s: %s%s%s: missing; this is not a complete plan.json (write one with --save-plan)",
                       c->file, path, *path ? "." : "", key);
    return v;
}

static int num(ctx *c, const cJSON *o, const char *path, const char *key, double *out) {
    const cJSON *v = need(c, o, path, key);
    if (!v) return -1;
    if (!cJSON_IsNumber(v) && !cJSON_IsBool(v))
        return yp_err_set(c->err, "%s: %s.%s: expected a number", c->file, path, key);
    *out = cJSON_IsBool(v) ? (double)cJSON_IsTrue(v) : v->valuedouble;
    return 0;
}

/* A field that must be a number in [lo, hi], and whole when `whole`: a plan.json is input like
 * any other, so a hand-edited value is refused where it is read, naming the field. */
static int num_in(ctx *c, const cJSON *o, const char *path, const char *key, double lo, double hi, int whole,
                  double *out) {
    if (num(c, o, path, key, out)) return -1;
    if (!(*out >= lo && *out <= hi) || (whole && *out != floor(*out)))
        return yp_err_set(c->err, "%s: %s%s%s: %.17g; expected %s in %.17g..%.17g", c->file, path, *path ? "." : "",
                          key, *out, whole ? "a whole number" : "a number", lo, hi);
    return 0;
}

static const char *str(ctx *c, const cJSON *o, const char *path, const char *key) {
    const cJSON *v = need(c, o, path, key);
    if (v && !cJSON_IsString(v)) {
        yp_err_set(c->err, "%s: %s.%s: expected a string", c->file, path, key);
        return NULL;
    }
    return v ? v->valuestring : NULL;
}

/* The fusions a candidate allows: a file without "fusions" predates the key, when no plan fused. */
static int load_fusions(ctx *c, const cJSON *j, unsigned *out) {
    const cJSON *fu = cJSON_GetObjectItemCaseSensitive(j, "fusions");
    *out = 0;
    if (!fu) return 0;
    for (const cJSON *f = cJSON_IsArray(fu) ? fu->child : NULL; f; f = f->next)
        if (!cJSON_IsString(f)) fu = NULL;
    if (!cJSON_IsArray(fu)) return yp_err_set(c->err, "%s: candidate.fusions: expected a list of names", c->file);
    for (const cJSON *f = fu->child; f; f = f->next) {
        int k = yp_fusion_parse(f->valuestring);
        if (k >= 0) {
            *out |= 1u << k;
            continue;
        }
        char known[128] = "";
        for (int i = 0; i < YP_FUSION_COUNT; i++)
            snprintf(known + strlen(known), sizeof known - strlen(known), "%s%s", i ? ", " : "",
                     yp_fusion_name((yp_fusion)i));
        return yp_err_set(c->err, "%s: candidate.fusions: \"%s\" is not a fusion this planner knows (known: %s)",
                          c->file, f->valuestring, known);
    }
    return 0;
}

/* An optional whole-number key of the candidate in lo..hi: *out keeps its value when the key is
 * missing. */
static int opt_int(ctx *c, const cJSON *j, const char *key, int lo, int hi, int *out) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(j, key);
    if (!v) return 0;
    double d;
    if (num_in(c, j, "candidate", key, lo, hi, 1, &d)) return -1;
    *out = (int)d;
    return 0;
}

/* The data pipeline: a file without "workers", "prefetch" or "cache" predates those keys, when the
 * planner sized the host memory for 8 workers with 2 batches each and no cache (the defaults). */
static int load_pipeline(ctx *c, const cJSON *j, yp_pipeline *p) {
    *p = yp_pipeline_default();
    if (opt_int(c, j, "workers", 1, YP_PIPE_MAX_WORKERS, &p->workers) ||
        opt_int(c, j, "prefetch", 1, YP_PIPE_MAX_PREFETCH, &p->prefetch))
        return -1;
    const cJSON *m = cJSON_GetObjectItemCaseSensitive(j, "cache");
    int mode = m && cJSON_IsString(m) ? yp_cache_mode_parse(m->valuestring) : m ? -1 : YP_CACHE_NONE;
    if (mode < 0) return yp_err_set(c->err, "%s: candidate.cache: expected \"none\" or \"ram\"", c->file);
    p->cache = (yp_cache_mode)mode;
    return 0;
}

/* Reads back what yp_candidate_json wrote; the conv scratch model is resolved through r. A file
 * without "conv_scratch" predates the key, when every saved plan was an im2col one; one without
 * "alignment" predates that key, when every arena was aligned to YP_ALIGN_DEFAULT; one without
 * "val_rect" predates that key, when validation was planned square at the nominal size; the
 * pipeline's keys as load_pipeline says. */
static int load_candidate(ctx *c, const cJSON *j, const yp_scratch_resolver *r, yp_candidate *k) {
    double v[7];
    static const struct {
        const char *key;
        double lo, hi;
        int whole;
    } f[] = {{"batch", 1, YP_MAX_BATCH, 1},   {"mosaic", 0, 1, 1},
             {"ema", 0, 1, 1},                {"freeze", 0, YP_GRAPH_MAX_LAYERS - 1, 1},
             {"labels_per_image", 0, 10000, 0}, {"multi_scale", 0, 1, 1}};
    for (int i = 0; i < 6; i++)
        if (num_in(c, j, "candidate", f[i].key, f[i].lo, f[i].hi, f[i].whole, &v[i])) return -1;
    const char *prec = str(c, j, "candidate", "precision"), *opt = prec ? str(c, j, "candidate", "optimizer") : NULL;
    const char *pol = opt ? str(c, j, "candidate", "policy") : NULL;
    const cJSON *img = pol ? need(c, j, "candidate", "img") : NULL,
                *ck = img ? need(c, j, "candidate", "checkpoint") : NULL;
    if (!ck) return -1;
    int p = yp_precision_parse(prec), o = yp_optimizer_parse(opt), sp = yp_save_policy_parse(pol);
    if (p < 0 || o < 0 || sp < 0)
        return yp_err_set(c->err, "%s: candidate: unknown precision, optimizer or policy", c->file);
    if (cJSON_GetArraySize(img) != 2 || !cJSON_IsArray(ck))
        return yp_err_set(c->err, "%s: candidate.img must be [w, h] and candidate.checkpoint a list", c->file);
    for (int i = 0; i < 2; i++) {
        const cJSON *s = cJSON_GetArrayItem(img, i);
        if (!cJSON_IsNumber(s) || !(s->valuedouble >= 32 && s->valuedouble <= 16384) ||
            s->valuedouble != floor(s->valuedouble))
            return yp_err_set(c->err, "%s: candidate.img[%d]: expected a whole number of pixels in 32..16384", c->file,
                              i);
    }
    *k = yp_candidate_default();
    k->batch = (int64_t)v[0], k->mosaic = (int)v[1], k->ema = (int)v[2], k->freeze = (int)v[3];
    k->labels_per_image = v[4], k->multi_scale = (int)v[5];
    k->img_w = (int64_t)cJSON_GetArrayItem(img, 0)->valuedouble,
    k->img_h = (int64_t)cJSON_GetArrayItem(img, 1)->valuedouble;
    k->precision = (yp_precision)p, k->optimizer = (yp_optimizer)o;
    k->policy = (yp_save_policy)sp;
    k->ckpt_layers = 0;
    for (const cJSON *l = ck->child; l; l = l->next) {
        if (!cJSON_IsNumber(l) || !(l->valuedouble >= 0 && l->valuedouble < YP_CKPT_MAX_LAYERS) ||
            l->valuedouble != floor(l->valuedouble))
            return yp_err_set(c->err, "%s: candidate.checkpoint: expected layer indices 0..%d", c->file,
                              YP_CKPT_MAX_LAYERS - 1);
        if (yp_ckpt_has(k->ckpt_layers, (int)l->valuedouble))
            return yp_err_set(c->err, "%s: candidate.checkpoint: layer %d listed twice", c->file, (int)l->valuedouble);
        k->ckpt_layers |= 1ull << (int)l->valuedouble;
    }
    if (k->batch < 1) return yp_err_set(c->err, "%s: candidate.batch: must be at least 1", c->file);
    if (load_fusions(c, j, &k->fusions) || load_pipeline(c, j, &k->pipe)) return -1;
    const cJSON *sc = cJSON_GetObjectItemCaseSensitive(j, "conv_scratch");
    if (sc && !cJSON_IsString(sc)) return yp_err_set(c->err, "%s: candidate.conv_scratch: expected a string", c->file);
    yp_err why;
    if (yp_candidate_set_scratch(k, sc ? sc->valuestring : YP_SCRATCH_IM2COL, r, &why))
        return yp_err_set(c->err, "%s: candidate.conv_scratch: %s", c->file, why.msg);
    const cJSON *al = cJSON_GetObjectItemCaseSensitive(j, "alignment");
    if (al && (!cJSON_IsNumber(al) || !(fabs(al->valuedouble) <= 1e15) || al->valuedouble != floor(al->valuedouble)))
        return yp_err_set(c->err, "%s: candidate.alignment: expected a whole number of bytes", c->file);
    if (al) k->alignment = (int64_t)al->valuedouble;
    const cJSON *vr = cJSON_GetObjectItemCaseSensitive(j, "val_rect");
    if (vr && !cJSON_IsBool(vr)) return yp_err_set(c->err, "%s: candidate.val_rect: expected true or false", c->file);
    k->val_rect = vr ? cJSON_IsTrue(vr) : 0;
    if (yp_candidate_check_alignment(k, &why)) return yp_err_set(c->err, "%s: %s", c->file, why.msg);
    return 0;
}

/* What the candidate says about its model must hold for the model the file carries: its name, a
 * freeze that leaves a layer to train, checkpointed layers that exist and have convs inside, an
 * image size the strides divide. */
static int candidate_fits_model(ctx *c, const cJSON *j, const yp_candidate *k, const yp_graph *g) {
    const char *name = str(c, j, "candidate", "model");
    if (!name) return -1;
    if (strcmp(name, g->name))
        return yp_err_set(c->err, "%s: candidate.model \"%s\" is not the model the file carries (\"%s\"); save the "
                          "plan again", c->file, name, g->name);
    if (k->freeze >= g->n_layers)
        return yp_err_set(c->err, "%s: candidate.freeze %d: %s has %d layers; freezing all of them leaves nothing to "
                          "train", c->file, k->freeze, g->name, g->n_layers);
    for (int l = 0; l < YP_CKPT_MAX_LAYERS; l++)
        if (yp_ckpt_has(k->ckpt_layers, l) && (l >= g->n_layers || yp_layer_inner_convs(g, l) == 0))
            return yp_err_set(c->err, "%s: candidate.checkpoint: layer %d %s in %s", c->file, l,
                              l >= g->n_layers ? "does not exist" : "has nothing to recompute", g->name);
    int s = yp_graph_max_stride(g);
    if (k->img_w % s || k->img_h % s)
        return yp_err_set(c->err, "%s: candidate.img %lldx%lld: %s needs multiples of %d", c->file,
                          (long long)k->img_w, (long long)k->img_h, g->name, s);
    return 0;
}

static int load_gpu(ctx *c, const cJSON *j, yp_gpu *g) {
    double v[8];
    /* bytes up to 1 PiB; rates positive where every plan divides by them (fp32, bandwidth) */
    static const struct {
        const char *key;
        double lo, hi;
        int whole;
    } f[] = {{"mem_bytes", 1, 1125899906842624.0, 1}, {"fixed_bytes", 0, 1125899906842624.0, 1},
             {"fp32_tflops", 1e-3, 1e6, 0},        {"tf32_tflops", 0, 1e6, 0},
             {"fp16_tflops", 0, 1e6, 0},           {"bf16_tflops", 0, 1e6, 0},
             {"bandwidth_gbs", 1e-3, 1e7, 0},      {"from_table", 0, 1, 1}};
    const char *name = str(c, j, "gpu", "name"), *desc = name ? str(c, j, "gpu", "desc") : NULL;
    if (!desc) return -1;
    for (int i = 0; i < 8; i++)
        if (num_in(c, j, "gpu", f[i].key, f[i].lo, f[i].hi, f[i].whole, &v[i])) return -1;
    if (v[0] <= v[1])
        return yp_err_set(c->err,
                          "%s: gpu: mem_bytes %.0f is no more than fixed_bytes %.0f; nothing is left for a plan",
                          c->file, v[0], v[1]);
    memset(g, 0, sizeof *g);
    snprintf(g->name, sizeof g->name, "%s", name);
    snprintf(g->desc, sizeof g->desc, "%s", desc);
    g->mem_bytes = (int64_t)v[0], g->fixed_bytes = (int64_t)v[1], g->fp32_tflops = v[2], g->tf32_tflops = v[3];
    g->fp16_tflops = v[4], g->bf16_tflops = v[5], g->bw_gbs = v[6], g->from_table = (int)v[7];
    g->cuda_total_bytes = g->mem_bytes; /* not in plan.json: only the PyTorch target reads it */
    return 0;
}

/* The re-planned plan must equal the file, tensor by tensor. */
static int verify(ctx *c, const cJSON *j, const yp_plan *p) {
    const cJSON *ts = need(c, j, "", "tensors"), *ss = ts ? need(c, j, "", "steps") : NULL;
    double arena;
    if (!ss || num(c, j, "", "arena_bytes", &arena)) return -1;
    if (cJSON_GetArraySize(ts) != p->sched->n_tensors || cJSON_GetArraySize(ss) != p->sched->n_steps)
        return yp_err_set(c->err, "%s: %d tensors and %d steps, but re-planning gives %d and %d; the file comes "
                          "from another yoloplan version: save the plan again", c->file, cJSON_GetArraySize(ts),
                          cJSON_GetArraySize(ss), p->sched->n_tensors, p->sched->n_steps);
    if (arena != (double)p->arena_bytes) /* compared as doubles: casting a file's huge value is undefined */
        return yp_err_set(c->err, "%s: arena_bytes %.0f, but re-planning gives %lld; save the plan again", c->file,
                          arena, (long long)p->arena_bytes);
    int t = 0;
    for (const cJSON *x = ts->child; x; x = x->next, t++) {
        char path[32];
        double off, bytes, first, last;
        snprintf(path, sizeof path, "tensors[%d]", t);
        const char *name = str(c, x, path, "name");
        if (!name || num(c, x, path, "offset", &off) || num(c, x, path, "bytes", &bytes) ||
            num(c, x, path, "first", &first) || num(c, x, path, "last", &last))
            return -1;
        const yp_tensor *y = &p->sched->tensors[t];
        if (strcmp(name, y->name) || off != (double)p->arena.offsets[t] || bytes != (double)y->bytes ||
            first != y->first || last != y->last)
            return yp_err_set(c->err, "%s: %s (%s): differs from the re-planned tensor (%s at offset %lld, %lld bytes, "
                              "steps %d..%d); save the plan again", c->file, path, name, y->name,
                              (long long)p->arena.offsets[t], (long long)y->bytes, y->first, y->last);
    }
    return 0;
}

/* A number of the validation section equal to the re-planned one. */
static int val_num_is(ctx *c, const cJSON *o, const char *path, const char *key, int64_t want) {
    double v = 0;
    if (num(c, o, path, key, &v)) return -1;
    if (v != (double)want)
        return yp_err_set(c->err, "%s: %s.%s: %.0f, but re-planning gives %lld; save the plan again", c->file, path,
                          key, v, (long long)want);
    return 0;
}

/* validation.tensors[t]: where it lies and what it aliases, as re-planned. */
static int verify_val_tensor(ctx *c, const cJSON *x, int t, const yp_plan *p) {
    const yp_val_plan *v = &p->val;
    const yp_tensor *y = &v->sched->tensors[t];
    char path[48];
    snprintf(path, sizeof path, "validation.tensors[%d]", t);
    const char *name = str(c, x, path, "name");
    const cJSON *al = name ? need(c, x, path, "aliases") : NULL;
    if (!al) return -1;
    if (strcmp(name, y->name))
        return yp_err_set(c->err, "%s: %s.name: \"%s\", but re-planning gives \"%s\"; save the plan again", c->file,
                          path, name, y->name);
    if (val_num_is(c, x, path, "offset", v->offsets[t]) || val_num_is(c, x, path, "bytes", y->bytes)) return -1;
    int a = v->alias[t];
    if (cJSON_IsNull(al) != (a < 0))
        return yp_err_set(c->err, "%s: %s (%s).aliases: %s, but re-planning %s; save the plan again", c->file, path,
                          name, cJSON_IsNull(al) ? "null" : "a training tensor",
                          a < 0 ? "gives it bytes of its own" : "maps it onto a training tensor");
    if (a < 0) return 0;
    char apath[64];
    snprintf(apath, sizeof apath, "%s.aliases", path);
    const char *an = str(c, al, apath, "name");
    if (!an || val_num_is(c, al, apath, "id", a)) return -1;
    if (strcmp(an, p->sched->tensors[a].name))
        return yp_err_set(c->err, "%s: %s.name: \"%s\", but re-planning maps %s onto \"%s\"; save the plan again",
                          c->file, apath, an, name, p->sched->tensors[a].name);
    return 0;
}

/* The recorded validation section must equal the re-planned one. */
static int verify_val(ctx *c, const cJSON *j, const yp_plan *p) {
    const yp_val_plan *v = &p->val;
    const cJSON *val = need(c, j, "", "validation");
    const cJSON *ts = val ? need(c, val, "validation", "tensors") : NULL;
    const cJSON *ss = ts ? need(c, val, "validation", "steps") : NULL;
    const char *reads = ss ? str(c, val, "validation", "reads") : NULL;
    if (!reads || val_num_is(c, val, "validation", "batch", v->sched->opts.batch) ||
        val_num_is(c, val, "validation", "arena_bytes", v->bytes) ||
        val_num_is(c, val, "validation", "base_bytes", v->base))
        return -1;
    if (strcmp(reads, v->reads_ema ? "ema" : "weights"))
        return yp_err_set(c->err, "%s: validation.reads: \"%s\", but re-planning reads \"%s\"; save the plan again",
                          c->file, reads, v->reads_ema ? "ema" : "weights");
    if (cJSON_GetArraySize(ts) != v->sched->n_tensors || cJSON_GetArraySize(ss) != v->sched->n_steps)
        return yp_err_set(c->err, "%s: validation: %d tensors and %d steps, but re-planning gives %d and %d; save the "
                          "plan again", c->file, cJSON_GetArraySize(ts), cJSON_GetArraySize(ss), v->sched->n_tensors,
                          v->sched->n_steps);
    int t = 0;
    for (const cJSON *x = ts->child; x; x = x->next, t++)
        if (verify_val_tensor(c, x, t, p)) return -1;
    return 0;
}

/* plan.json: every tensor of both schedules, a few MB for the largest models */
#define YP_PLAN_MAX_BYTES ((int64_t)256 << 20)

static char *slurp(const char *path, yp_err *err) {
    char *buf;
    size_t len;
    return yp_file_read(path, "a plan.json", YP_PLAN_MAX_BYTES, &buf, &len, err) ? NULL : buf;
}

int yp_plan_load(const char *path, yp_plan *out, yp_graph **graph, yp_err *err) {
    return yp_plan_load_with(path, NULL, out, graph, err);
}

int yp_plan_load_with(const char *path, const yp_scratch_resolver *r, yp_plan *out, yp_graph **graph, yp_err *err) {
    ctx c = {path, err};
    *graph = NULL;
    memset(out, 0, sizeof *out);
    char *text = slurp(path, err);
    if (!text) return -1;
    cJSON *j = cJSON_Parse(text);
    free(text);
    if (!j) return yp_err_set(err, "%s: malformed JSON; not a plan.json written by --save-plan", path);
    char dup[320];
    if (yp_json_duplicate_key(j, dup, sizeof dup)) {
        cJSON_Delete(j);
        return yp_err_set(err, "%s: %s appears twice in one object; keep one (a JSON reader takes either)", path, dup);
    }
    int rc = -1;
    yp_candidate cand;
    yp_gpu gpu;
    double reserve = 0; /* set by num_in before use; GCC -O2 cannot see it through the || chain */
    const char *fmt = str(&c, j, "", "format");
    const cJSON *model = fmt ? need(&c, j, "", "model") : NULL;
    if (fmt && strcmp(fmt, YP_PLAN_FORMAT)) {
        yp_err_set(err, "%s: format \"%s\" is not \"%s\"", path, fmt, YP_PLAN_FORMAT);
        goto done;
    }
    if (!model || load_candidate(&c, need(&c, j, "", "candidate"), r, &cand) ||
        load_gpu(&c, need(&c, j, "", "gpu"), &gpu) ||
        num_in(&c, j, "", "reserve_bytes", 0, (double)(gpu.mem_bytes - gpu.fixed_bytes - 1), 1, &reserve))
        goto done;
    char *ir = cJSON_PrintUnformatted(model);
    *graph = ir ? yp_ir_load_buffer(ir, strlen(ir), path, err) : NULL;
    free(ir);
    if (!*graph || candidate_fits_model(&c, need(&c, j, "", "candidate"), &cand, *graph) ||
        yp_plan_build(*graph, &cand, &gpu, (int64_t)reserve, 0, out, err))
        goto done;
    rc = verify(&c, j, out) || verify_val(&c, j, out) ? -1 : 0;
done:
    cJSON_Delete(j);
    if (rc) {
        yp_plan_free(out);
        yp_graph_free(*graph);
        *graph = NULL;
    }
    return rc;
}
