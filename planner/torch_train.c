/* torch_train.c - train.py's sequence through the caching-allocator model (yp_torch_train.h):
 * setup, training iterations (batch, pass, optimizer step, EMA), validation. */
#include <stdlib.h>
#include <string.h>

#include "torch_internal.h"
#include "yp_torch_train.h"

yp_torch_train_opts yp_torch_train_opts_default(void) {
    yp_torch_train_opts o = {16, 640, 1, YP_OPT_SGD, 0, 4 * 7.3, 7.3, 0, 1, 0};
    return o;
}

const char *yp_torch_at_name(yp_torch_at at) {
    static const char *const names[] = {"setup", "train", "val"};
    return at >= 0 && at <= YP_TORCH_AT_VAL ? names[at] : "?";
}

/* The largest size --multi-scale draws: randrange(int(0.5 img), int(1.5 img) + gs) // gs * gs. */
static int64_t multi_scale_max(int64_t img, int gs) { return (img * 3 / 2 + gs - 1) / gs * gs; }

/* The square validation shape of the rectangular loader: ceil(img / gs + pad) * gs, pad 0.5. */
static int64_t val_size(int64_t img, int gs) { return (2 * img / gs + 1 + 1) / 2 * gs; }

/* Validation's batches: the rectangular loader sorts images by aspect ratio, so its batches
 * come in a spread of shapes, the side img + gs and the other side these fractions of it, the
 * square last (COCO's mix of 4:3 and square images; coco128 validates in four such batches). */
#define VAL_SHAPES 4
static const int val_shape[VAL_SHAPES][2] = {{3, 4}, {4, 5}, {7, 8}, {1, 1}};

typedef struct {
    const yp_graph *g;
    const yp_torch_train_opts *o;
    yp_torch_alloc *a;
    yp_schedule *s, *big, *vs[VAL_SHAPES]; /* training, its multi-scale largest size, validation's shapes */
    int n_vs;
    yp_torch_state st, vst;
    ytr_model model, ema;
    int *mom1, *mom2;          /* optimizer state per parameter tensor */
    int imgs, scaler[2];
    int64_t reading;           /* the highest GPU_mem reading of the epoch so far */
    yp_torch_train_result *r;
    yp_err *err;
} trainer;

static int64_t labels_in(double per_image, int64_t batch) {
    double l = per_image * (double)batch;
    return l < 1 ? 1 : (int64_t)(l + 0.5);
}

/* ---------------------------------------------------------------- the optimizer */

/* smart_optimizer's group of a parameter: 0 biases (no decay), 1 weights (decay), 2 BN weights. */
static int group_of(yp_role r) { return r == YP_ROLE_CONV_WEIGHT ? 1 : r == YP_ROLE_BN_GAMMA ? 2 : 0; }

/* One PyTorch 2.x foreach step of every group (torch.optim's _multi_tensor_sgd/_adam). */
static int optimizer_step(trainer *c) {
    const yp_schedule *s = c->s;
    int n = s->n_tensors, rc = 0, *tmp = malloc((size_t)n * 2 * sizeof(int));
    if (!tmp) return yp_err_set(c->err, "PyTorch replay: out of memory");
    for (int grp = 0; grp < 3 && !rc; grp++) {
        int k = 0;
        for (int t = 0; t < n && !rc; t++) {
            const yp_tensor *gt = &s->tensors[t];
            if (gt->kind != YP_KIND_GRAD || c->st.grads[t] < 0 || gt->param < 0) continue;
            if (group_of(s->tensors[gt->param].role) != grp) continue;
            int decayed_copy = grp == 1 && c->o->optimizer != YP_OPT_ADAMW; /* grad + wd * param */
            tmp[k] = -1;
            if (decayed_copy) rc = yp_torch_malloc(c->a, gt->bytes, &tmp[k], c->err);
            k++;
            if (!rc && c->mom1[t] < 0) rc = yp_torch_malloc(c->a, gt->bytes, &c->mom1[t], c->err);
            if (!rc && c->o->optimizer != YP_OPT_SGD && c->mom2[t] < 0)
                rc = yp_torch_malloc(c->a, gt->bytes, &c->mom2[t], c->err);
        }
        if (!rc && c->o->optimizer != YP_OPT_SGD) { /* exp_avg_sq.sqrt(), the whole group at once */
            for (int t = 0; t < n && !rc; t++) {
                const yp_tensor *gt = &s->tensors[t];
                if (gt->kind != YP_KIND_GRAD || c->st.grads[t] < 0 || gt->param < 0) continue;
                if (group_of(s->tensors[gt->param].role) != grp) continue;
                tmp[k] = -1;
                rc = yp_torch_malloc(c->a, gt->bytes, &tmp[k++], c->err);
            }
        }
        for (int i = 0; i < k; i++)
            if (ytr_release(c->a, &tmp[i], c->err) && !rc) rc = -1;
    }
    free(tmp);
    return rc;
}

/* zero_grad(set_to_none=True), then ema.update(model): v *= d; v += (1 - d) * model_v. */
static int after_step(trainer *c) {
    for (int t = 0; t < c->st.n; t++)
        if (ytr_release(c->a, &c->st.grads[t], c->err)) return -1;
    for (int t = 0; t < c->s->n_tensors; t++) {
        if (c->ema.h[t] < 0) continue;
        int h = -1, rc = yp_torch_malloc(c->a, c->s->tensors[t].bytes, &h, c->err);
        if (rc) return rc;
        if (ytr_release(c->a, &h, c->err)) return -1;
    }
    return 0;
}

/* ---------------------------------------------------------------- an iteration */

static int iteration(trainer *c, const yp_schedule *s, int step) {
    int64_t b = c->o->batch, px = 3 * c->o->img * c->o->img * b;
    int u8 = -1, f1 = -1, f2 = -1, rc;
    /* imgs.to(device).float() / 255 */
    if ((rc = yp_torch_malloc(c->a, px, &u8, c->err)) || (rc = yp_torch_malloc(c->a, px * 4, &f1, c->err)) ||
        (rc = ytr_release(c->a, &u8, c->err)) || (rc = yp_torch_malloc(c->a, px * 4, &f2, c->err)) ||
        (rc = ytr_release(c->a, &f1, c->err)) || (rc = ytr_release(c->a, &c->imgs, c->err)))
        return rc;
    c->imgs = f2;
    if (s->opts.h != c->o->img) { /* multi-scale: F.interpolate to the iteration's size */
        int n = -1;
        if ((rc = yp_torch_malloc(c->a, 3 * s->opts.h * s->opts.w * b * 4, &n, c->err)) ||
            (rc = ytr_release(c->a, &c->imgs, c->err)))
            return rc;
        c->imgs = n;
    }
    yp_torch_pass_opts po = {YP_TORCH_LOSS_YOLO, labels_in(c->o->labels_per_image, b), 0, 1, YP_TORCH_WGRAD_WS};
    if ((rc = yp_torch_replay_pass(s, c->a, &po, &c->st, c->err))) return rc;
    for (int k = 0; k < 2 && !rc; k++) /* GradScaler's _scale and _growth_tracker, made at its first scale() */
        if (c->scaler[k] < 0) rc = yp_torch_malloc(c->a, 4, &c->scaler[k], c->err);
    if (!rc && step) rc = optimizer_step(c);
    if (!rc && step) rc = after_step(c);
    int64_t now = yp_torch_alloc_stats_get(c->a).reserved; /* the GPU_mem of this iteration's line */
    if (!rc && now > c->reading) c->reading = now;
    return rc;
}

/* ---------------------------------------------------------------- validation */

#define NMS_MAX_ROWS 30000 /* val.py's max_nms: (box, class) rows sorted into torchvision's nms */

/* non_max_suppression on one image of the decoded batch (every image asks the same). */
static int nms(trainer *c, int64_t n_pred, int64_t e) {
    int64_t nc = c->g->nc, k = n_pred * nc < NMS_MAX_ROWS ? n_pred * nc : NMS_MAX_ROWS;
    int64_t blocks = (k + 63) / 64;
    int h[8], rc = 0;
    for (int i = 0; i < 8; i++) h[i] = -1;
    int64_t sizes[] = {
        n_pred * (nc + 5) * e, /* x = x[xc[xi]] */
        n_pred * 4 * e,        /* box */
        k * 2 * 8,             /* nonzero() of the class scores above conf */
        k * 6 * 4,             /* cat((box[i], conf, j.float(), mask[i]), 1) */
        k * 8,                 /* argsort */
        k * 6 * 4,             /* x sorted and cut to max_nms */
        k * 4 * 4,             /* boxes offset by class */
        k * blocks * 8,        /* torchvision nms: the suppression mask */
    };
    for (int i = 0; i < 8 && !rc; i++) {
        if (i == 2) { /* the bool mask nonzero() reads */
            int m = -1;
            rc = yp_torch_malloc(c->a, n_pred * nc, &m, c->err);
            if (ytr_release(c->a, &m, c->err) && !rc) rc = -1;
        }
        if (!rc) rc = yp_torch_malloc(c->a, sizes[i], &h[i], c->err);
    }
    for (int i = 0; i < 8; i++)
        if (ytr_release(c->a, &h[i], c->err) && !rc) rc = -1;
    return rc;
}

/* Predictions per image: na * H * W summed over Detect's levels. */
static int64_t predictions(const yp_schedule *s) {
    int64_t n = 0;
    for (int i = 0; i < s->n_steps; i++) {
        const yp_step *st = &s->steps[i];
        if (!ytr_op_row_get(st->op)->detect || st->phase != YP_PHASE_FORWARD) continue;
        for (int l = 0; l < st->n_out; l++) {
            yp_shape sh = s->tensors[yp_step_outputs(s, st)[l]].shape;
            n += s->g->na * sh.h * sh.w;
        }
    }
    return n;
}

static int validate(trainer *c) {
    int im = -1, rc = 0;
    if (c->o->amp && (rc = ytr_model_convert(c->s, c->a, 1, &c->ema, c->err))) return rc;
    for (int vb = 0; vb < c->n_vs && !rc; vb++) {
        const yp_schedule *vs = c->vs[vb];
        int64_t b = vs->opts.batch, px = 3 * vs->opts.h * vs->opts.w * b,
                e = (int64_t)yp_dtype_size(vs->opts.act_dtype);
        int u8 = -1, h = -1, dec = -1;
        if ((rc = ytr_release(c->a, &im, c->err)) || (rc = yp_torch_malloc(c->a, px, &u8, c->err)) ||
            (rc = yp_torch_malloc(c->a, px * e, &h, c->err)) || (rc = ytr_release(c->a, &u8, c->err)))
            break;
        im = h;
        yp_torch_infer_opts io = {0, 1, 1};
        if ((rc = yp_torch_replay_infer(vs, c->a, &io, &c->vst, &dec, c->err))) break;
        if (!rc) rc = yp_torch_replay_val_loss(vs, c->a, labels_in(c->o->val_labels_per_image, b), c->err);
        int xc = -1;
        int64_t rows = predictions(vs);
        if (!rc) rc = yp_torch_malloc(c->a, b * rows, &xc, c->err);
        if (!rc) rc = nms(c, rows, e);
        if (ytr_release(c->a, &xc, c->err) && !rc) rc = -1;
        if (ytr_release(c->a, &dec, c->err) && !rc) rc = -1;
    }
    if (ytr_release(c->a, &im, c->err) && !rc) rc = -1;
    if (yp_torch_state_drop(&c->vst, c->a, c->err) && !rc) rc = -1;
    if (!rc && c->o->amp) rc = ytr_model_convert(c->s, c->a, 0, &c->ema, c->err);
    return rc;
}

/* ---------------------------------------------------------------- the sequence */

static int64_t rounded_kind(const yp_schedule *s, yp_kind k) {
    int64_t sum = 0;
    for (int t = 0; t < s->n_tensors; t++)
        if (s->tensors[t].kind == k) sum += yp_torch_round_size(s->tensors[t].bytes);
    return sum;
}

/* The rounded sizes of the tensors of s that h holds a block for. */
static int64_t rounded_handles(const yp_schedule *s, const int *h) {
    int64_t sum = 0;
    for (int t = 0; t < s->n_tensors; t++)
        if (h[t] >= 0) sum += yp_torch_round_size(s->tensors[t].bytes);
    return sum;
}

/* Peaks of the phase just run, then reset for the next one. */
static void phase_peaks(trainer *c, int64_t *alloc, int64_t *res) {
    yp_torch_alloc_stats st = yp_torch_alloc_stats_get(c->a);
    if (alloc) *alloc = st.peak_allocated;
    if (res) *res = st.peak_reserved;
    if (st.peak_allocated > c->r->peak_allocated) c->r->peak_allocated = st.peak_allocated;
    if (st.peak_reserved > c->r->peak_reserved) c->r->peak_reserved = st.peak_reserved;
    yp_torch_reset_peaks(c->a);
}

static int run(trainer *c) {
    const yp_torch_train_opts *o = c->o;
    yp_torch_train_result *r = c->r;
    int rc;
    yp_torch_at at = YP_TORCH_AT_SETUP;
    /* setup */
    if ((rc = ytr_model_alloc(c->s, c->a, 0, &c->model, c->err))) goto out;
    if (o->amp && (rc = ytr_check_amp(c->g, c->a, c->err))) goto out;
    if ((rc = ytr_model_alloc(c->s, c->a, 0, &c->ema, c->err))) goto out;
    if ((rc = ytr_model_convert(c->s, c->a, 1, &c->model, c->err)) ||
        (rc = ytr_model_convert(c->s, c->a, 0, &c->model, c->err)))
        goto out;
    phase_peaks(c, NULL, NULL);
    /* epoch 0 */
    at = YP_TORCH_AT_TRAIN;
    int acc = r->accumulate > 1;
    if ((rc = iteration(c, c->s, 1)) || (rc = iteration(c, c->big ? c->big : c->s, !acc)) ||
        (rc = iteration(c, c->s, 1)))
        goto out;
    r->gpu_mem_epoch0 = c->reading, c->reading = 0;
    r->grad_bytes = rounded_kind(c->s, YP_KIND_GRAD);
    r->optim_bytes = rounded_handles(c->s, c->mom1) + rounded_handles(c->s, c->mom2);
    phase_peaks(c, &r->train_peak_allocated, &r->train_peak_reserved);
    /* validation, then epoch 1 */
    int64_t before_val = yp_torch_alloc_stats_get(c->a).reserved;
    if (o->val) {
        at = YP_TORCH_AT_VAL;
        if ((rc = validate(c))) goto out;
        phase_peaks(c, &r->val_peak_allocated, &r->val_peak_reserved);
    }
    at = YP_TORCH_AT_TRAIN;
    if ((rc = iteration(c, c->s, !acc)) || (rc = iteration(c, c->s, 1))) goto out;
    r->gpu_mem_later = c->reading;
    int64_t later_peak;
    phase_peaks(c, NULL, &later_peak);
    r->peak_at = o->val && r->val_peak_reserved > before_val && r->val_peak_reserved >= later_peak &&
                         r->val_peak_reserved > r->train_peak_reserved
                     ? YP_TORCH_AT_VAL
                     : YP_TORCH_AT_TRAIN;
out:
    if (rc > 0) {
        r->oom = 1, r->oom_at = at, rc = 0;
        phase_peaks(c, NULL, NULL);
        r->peak_at = at;
    }
    return rc;
}

int yp_torch_train_replay(const yp_graph *g, const yp_torch_train_opts *o, yp_torch_train_result *r, yp_err *err) {
    memset(r, 0, sizeof *r);
    int gs = yp_graph_max_stride(g);
    if (o->batch < 1 || o->img < gs || o->img % gs)
        return yp_err_set(err, "PyTorch replay: batch %lld, img %lld: need batch >= 1 and img a multiple of %d",
                          (long long)o->batch, (long long)o->img, gs);
    trainer c;
    memset(&c, 0, sizeof c);
    c.g = g, c.o = o, c.r = r, c.err = err, c.imgs = -1, c.scaler[0] = c.scaler[1] = -1;
    yp_dtype act = o->amp ? YP_DTYPE_F16 : YP_DTYPE_F32;
    r->accumulate = (int)((64 + o->batch / 2) / o->batch);
    if (r->accumulate < 1) r->accumulate = 1;
    r->val_batch = 2 * o->batch, r->val_img = val_size(o->img, gs);
    r->train_img_max = o->multi_scale ? multi_scale_max(o->img, gs) : o->img;
    int rc = 0;
    c.a = yp_torch_alloc_new(o->capacity, err);
    if (!c.a) return -1;
    c.s = ytr_schedule(g, o->batch, o->img, o->img, act, o->freeze, err);
    if (c.s && o->multi_scale)
        c.big = ytr_schedule(g, o->batch, r->train_img_max, r->train_img_max, act, o->freeze, err);
    if (!c.s || (o->multi_scale && !c.big)) rc = -1;
    for (int k = 0; !rc && o->val && k < VAL_SHAPES; k++) {
        int64_t h = (r->val_img * val_shape[k][0] / val_shape[k][1] + gs - 1) / gs * gs;
        c.vs[k] = ytr_schedule(g, r->val_batch, h, r->val_img, act, 0, err);
        if (!c.vs[k]) rc = -1;
        else c.n_vs = k + 1;
    }
    if (!rc) rc = yp_torch_state_init(&c.st, c.s, err);
    if (!rc && c.n_vs) rc = yp_torch_state_init(&c.vst, c.vs[0], err);
    if (!rc) {
        c.mom1 = malloc((size_t)c.s->n_tensors * sizeof(int)), c.mom2 = malloc((size_t)c.s->n_tensors * sizeof(int));
        if (!c.mom1 || !c.mom2) rc = yp_err_set(err, "PyTorch replay: out of memory");
        for (int t = 0; !rc && t < c.s->n_tensors; t++) c.mom1[t] = c.mom2[t] = -1;
    }
    if (!rc) rc = run(&c);
    if (!rc) {
        r->model_bytes = r->ema_bytes = 0;
        for (int t = 0; c.model.h && t < c.model.n; t++)
            if (c.model.h[t] >= 0) {
                int64_t b = t < c.s->n_tensors ? c.s->tensors[t].bytes : 8;
                r->model_bytes += yp_torch_round_size(b);
            }
        r->ema_bytes = r->model_bytes;
    }
    ytr_model_drop(&c.model, c.a, err), ytr_model_drop(&c.ema, c.a, err);
    free(c.mom1), free(c.mom2);
    yp_torch_state_free(&c.st), yp_torch_state_free(&c.vst);
    yp_schedule_free(c.s), yp_schedule_free(c.big);
    for (int k = 0; k < c.n_vs; k++) yp_schedule_free(c.vs[k]);
    yp_torch_alloc_free(c.a);
    return rc;
}
