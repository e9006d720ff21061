/* torch_model.c - a model's parameters and buffers on the device (allocated,
 * converted by .half()/.float(), dropped) and the pytorch-policy schedule the replays walk
 * (torch_internal.h). */
#include <stdlib.h>
#include <string.h>

#include "torch_internal.h"

yp_schedule *ytr_schedule(const yp_graph *g, int64_t b, int64_t h, int64_t w, yp_dtype act, int freeze,
                          yp_err *err) {
    yp_sched_opts so = yp_sched_opts_default(b, h, w);
    so.policy = YP_SAVE_PYTORCH;
    so.act_dtype = act;
    so.freeze = freeze;
    so.ema = 0;
    return yp_schedule_build(g, &so, err);
}

int ytr_model_alloc(const yp_schedule *s, yp_torch_alloc *a, int half, ytr_model *m, yp_err *err) {
    m->n = s->n_tensors * 2;
    m->h = malloc((size_t)m->n * sizeof(int));
    if (!m->h) return yp_err_set(err, "PyTorch replay: out of memory");
    for (int i = 0; i < m->n; i++) m->h[i] = -1;
    for (int t = 0; t < s->n_tensors; t++) {
        const yp_tensor *tt = &s->tensors[t];
        if (tt->kind != YP_KIND_WEIGHT) continue;
        int rc = yp_torch_malloc(a, half ? tt->bytes / 2 : tt->bytes, &m->h[t], err);
        if (!rc && tt->role == YP_ROLE_RUNNING_VAR) rc = yp_torch_malloc(a, 8, &m->h[s->n_tensors + t], err);
        if (rc) return rc;
    }
    return 0;
}

int ytr_model_convert(const yp_schedule *s, yp_torch_alloc *a, int to_half, ytr_model *m, yp_err *err) {
    for (int t = 0; t < s->n_tensors; t++) {
        if (m->h[t] < 0) continue;
        int64_t b = s->tensors[t].bytes;
        int nh = -1, rc = yp_torch_malloc(a, to_half ? b / 2 : b, &nh, err);
        if (rc) return rc;
        if (ytr_release(a, &m->h[t], err)) return -1;
        m->h[t] = nh;
    }
    return 0;
}

int ytr_model_drop(ytr_model *m, yp_torch_alloc *a, yp_err *err) {
    int rc = 0;
    for (int i = 0; m->h && i < m->n; i++)
        if (m->h[i] >= 0 && ytr_release(a, &m->h[i], err)) rc = -1;
    free(m->h);
    m->h = NULL;
    return rc;
}
