/* torch_autobatch.c - AutoBatch's probe (utils/autobatch.py, profile() in
 * utils/torch_utils.py) replayed: train.py's state before it, and per batch thop's forward and
 * three forward+backward passes (yp_torch_autobatch_probe). */
#include <stdlib.h>
#include <string.h>

#include "torch_pass.h"

yp_torch_probe_opts yp_torch_probe_opts_default(yp_torch_prior prior) {
    yp_torch_probe_opts o = {prior, 1, 0, 0, 0};
    return o;
}

/* What train.py holds when AutoBatch starts (yp_torch_prior); the blocks go to m[0..2]. */
static int prior_state(const yp_graph *g, const yp_schedule *s, yp_torch_prior prior, yp_torch_alloc *a, ytr_model m[3],
                       yp_err *err) {
    if (prior == YP_TORCH_PRIOR_NONE) return 0;
    int rc = ytr_model_alloc(s, a, 0, &m[0], err);
    if (!rc && prior == YP_TORCH_PRIOR_V6) {
        rc = ytr_model_alloc(s, a, 1, &m[1], err);         /* torch.load(map_location=device): fp16 */
        if (!rc) rc = ytr_model_convert(s, a, 0, &m[1], err); /* ckpt['model'].float() */
    }
    if (!rc && prior == YP_TORCH_PRIOR_HEAD) rc = ytr_check_amp(g, a, err);
    if (!rc) rc = ytr_model_alloc(s, a, 0, &m[2], err); /* AutoBatch's deepcopy(model) */
    return rc;
}

/* One batch of the probe: the input, thop's forward, three passes, the reading, the input and
 * its gradient dropped, empty_cache. */
static int probe_batch(const yp_schedule *s, const yp_torch_probe_opts *po, yp_torch_alloc *a, yp_torch_state *st,
                       yp_torch_probe_row *row, yp_err *err) {
    yp_torch_pass_opts pass_o = {YP_TORCH_LOSS_SUM, 0, s->opts.act_dtype != YP_DTYPE_F32, 1, 0};
    const yp_tensor *im = &s->tensors[s->images_t];
    int64_t in_bytes = yp_shape_numel(im->shape) * 4, lowp = yp_shape_numel(im->shape) * 2;
    int x = -1, xg = -1, dec = -1, rc = yp_torch_malloc(a, in_bytes, &x, err);
    if (po->cudnn_benchmark) st->find = YP_TORCH_FIND_FWD | YP_TORCH_FIND_BWD;
    if (!rc && po->thop) {
        yp_torch_infer_opts io = {s->opts.act_dtype != YP_DTYPE_F32, 1, 0};
        rc = yp_torch_replay_infer(s, a, &io, st, &dec, err);
        if (!rc) rc = ytr_release(a, &dec, err);
        if (!rc && po->cast_fix) st->weights_no_grad = 0;
    }
    for (int it = 0; it < 3 && !rc; it++) {
        rc = yp_torch_replay_pass(s, a, &pass_o, st, err);
        /* the image's gradient: conv 0's (fp16 under autocast), cast to fp32, then x.grad or added to it */
        int g16 = -1, g32 = -1;
        if (!rc && pass_o.cache_weight_copies) rc = yp_torch_malloc(a, lowp, &g16, err);
        if (!rc) rc = yp_torch_malloc(a, in_bytes, &g32, err);
        if (!rc) rc = ytr_release(a, &g16, err);
        if (!rc && xg < 0) xg = g32, g32 = -1;
        if (!rc) rc = ytr_release(a, &g32, err);
    }
    if (rc > 0) { /* out of memory: profile() records None, empty_cache, the next batch */
        *row = (yp_torch_probe_row){s->opts.batch, 0, 0, 0, 1};
        yp_torch_empty_cache(a);
        if (yp_torch_free(a, x, err) || yp_torch_free(a, xg, err)) return -1;
        yp_torch_reset_peaks(a);
        return 0;
    }
    if (rc) return -1;
    yp_torch_alloc_stats ast = yp_torch_alloc_stats_get(a);
    row->batch = s->opts.batch, row->reserved = ast.reserved, row->allocated = ast.allocated;
    row->peak_allocated = ast.peak_allocated, row->failed = 0;
    /* empty_cache runs while x and x.grad are alive: the loop rebinds x only at the next batch */
    yp_torch_empty_cache(a);
    if (yp_torch_free(a, x, err) || yp_torch_free(a, xg, err)) return -1;
    yp_torch_reset_peaks(a);
    return 0;
}

int yp_torch_autobatch_probe(const yp_graph *g, int64_t img, yp_dtype act, const yp_torch_probe_opts *po,
                             const int64_t *batches, int n, yp_torch_probe_row *rows, yp_torch_probe_start *start,
                             yp_err *err) {
    if (n < 1) return yp_err_set(err, "AutoBatch probe: no batch sizes");
    yp_torch_alloc *a = yp_torch_alloc_new(po->capacity, err);
    if (!a) return -1;
    yp_torch_state st = {0};
    ytr_model m[3] = {{NULL, 0}, {NULL, 0}, {NULL, 0}};
    yp_schedule *s = ytr_schedule(g, batches[0], img, img, act, 0, err);
    int rc = s ? yp_torch_state_init(&st, s, err) : -1;
    if (!rc) rc = prior_state(g, s, po->prior, a, m, err);
    if (rc > 0) rc = yp_err_set(err, "AutoBatch probe: the model itself does not fit in the card's memory");
    if (!rc && start) {
        yp_torch_alloc_stats ast = yp_torch_alloc_stats_get(a);
        start->reserved = ast.reserved, start->allocated = ast.allocated;
    }
    if (!rc) yp_torch_reset_peaks(a);
    for (int i = 0; i < n && !rc; i++) {
        if (i > 0) {
            yp_schedule_free(s);
            s = ytr_schedule(g, batches[i], img, img, act, 0, err);
            if (!s) rc = -1;
            else if (s->n_state != st.n) rc = yp_err_set(err, "AutoBatch probe: parameters differ between batches");
        }
        if (!rc) rc = probe_batch(s, po, a, &st, &rows[i], err);
    }
    for (int k = 0; k < 3; k++) ytr_model_drop(&m[k], a, err);
    yp_torch_state_free(&st);
    yp_schedule_free(s);
    yp_torch_alloc_free(a);
    return rc;
}
