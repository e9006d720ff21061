/* multiscale.c - other image sizes inside the plan's arena (yp_executor.h): the training schedule
 * rebuilt at each size train.py's --multi-scale draws and the evaluation schedule at each rect
 * validation shape, bound with the plan's offsets; and the bilinear resize of a training batch. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "yp_executor_internal.h"

/* Appends to *arr (n entries) base's schedule rebuilt with options o (at o's size), bound with
 * base's offsets, prepared, with base's loss gains (train.py's are the nominal size's). */
static int add_resized(yp_exec_size **arr, int *n, const yp_binding *base, const yp_sched_opts *o, yp_err *err) {
    yp_exec_size *grown = realloc(*arr, (size_t)(*n + 1) * sizeof *grown);
    if (!grown) return yp_err_set(err, "out of memory adding size %lldx%lld", (long long)o->w, (long long)o->h);
    *arr = grown;
    yp_exec_size *z = &grown[*n];
    memset(z, 0, sizeof *z);
    z->h = o->h, z->w = o->w;
    if (!(z->s = yp_schedule_build(base->plan->g, o, err))) return -1;
    (*n)++; /* from here yp_exec_free releases it */
    if (yp_bind_resized(&z->b, base, z->s, err) || yp_exec_prepare_steps(&z->b, err)) return -1;
    const yp_loss_cfg *t = &base->loss;
    z->b.loss.box = t->box, z->b.loss.obj = t->obj, z->b.loss.cls = t->cls;
    z->b.loss.anchor_t = t->anchor_t, z->b.loss.label_smoothing = t->label_smoothing;
    return 0;
}

static const yp_binding *find(const yp_exec_size *arr, int n, int64_t h, int64_t w) {
    for (int i = 0; i < n; i++)
        if (arr[i].h == h && arr[i].w == w) return &arr[i].b;
    return NULL;
}

int yp_exec_add_size(yp_exec *x, int64_t side, yp_err *err) {
    const yp_plan *p = x->train.plan;
    if (yp_exec_binding_for(x, side)) return 0;
    yp_sched_opts o = yp_candidate_train_opts(&p->cand, yp_graph_max_stride(p->g));
    o.h = o.w = side; /* the scratch still covers every side: the same tensors as the plan's */
    return add_resized(&x->sizes, &x->n_sizes, &x->train, &o, err);
}

const yp_binding *yp_exec_binding_for(const yp_exec *x, int64_t side) {
    if (side == x->train.s->opts.h && side == x->train.s->opts.w) return &x->train;
    return find(x->sizes, x->n_sizes, side, side);
}

int yp_exec_add_eval_shape(yp_exec *x, int64_t h, int64_t w, yp_err *err) {
    const yp_plan *p = x->train.plan;
    if (!x->eval) return yp_err_set(err, "validation: this executor has no validation pass bound");
    if (yp_exec_eval_binding_for(x, h, w)) return 0;
    yp_sched_opts o = yp_candidate_val_opts(&p->cand, yp_graph_max_stride(p->g), p->g->n_layers);
    if (h < 1 || w < 1 || h > o.h || w > o.w)
        return yp_err_set(err, "validation: a %lldx%lld batch is larger than the planned %lldx%lld", (long long)w,
                          (long long)h, (long long)o.w, (long long)o.h);
    o.h = h, o.w = w; /* the scratch still covers every rect shape: the same tensors as the plan's */
    return add_resized(&x->eval_sizes, &x->n_eval_sizes, x->eval, &o, err);
}

const yp_binding *yp_exec_eval_binding_for(const yp_exec *x, int64_t h, int64_t w) {
    if (!x->eval) return NULL;
    if (h == x->eval->s->opts.h && w == x->eval->s->opts.w) return x->eval;
    return find(x->eval_sizes, x->n_eval_sizes, h, w);
}

static void free_sizes(yp_exec_size **arr, int *n) {
    for (int i = 0; i < *n; i++) {
        yp_bind_free(&(*arr)[i].b);
        yp_schedule_free((*arr)[i].s);
    }
    free(*arr);
    *arr = NULL, *n = 0;
}

void yp_exec_sizes_free(yp_exec *x) {
    free_sizes(&x->sizes, &x->n_sizes);
    free_sizes(&x->eval_sizes, &x->n_eval_sizes);
}

/* PyTorch's area_pixel_compute_source_index for align_corners=False, and the neighbour. */
static void source(int64_t d, float scale, int64_t in, int64_t *i0, int64_t *i1, float *l1) {
    float s = scale * ((float)d + 0.5f) - 0.5f;
    if (s < 0) s = 0;
    *i0 = (int64_t)s;
    *i1 = *i0 < in - 1 ? *i0 + 1 : *i0;
    *l1 = s - (float)*i0;
}

void yp_resize_bilinear_nhwc(const float *src, int64_t n, int64_t in, float *dst, int64_t out) {
    const float scale = (float)in / (float)out;
#pragma omp parallel for schedule(static)
    for (int64_t b = 0; b < n; b++)
        for (int64_t y = 0; y < out; y++) {
            int64_t y0, y1, x0, x1;
            float ly, lx;
            source(y, scale, in, &y0, &y1, &ly);
            const float *r0 = src + (b * in + y0) * in * 3, *r1 = src + (b * in + y1) * in * 3;
            float *o = dst + (b * out + y) * out * 3;
            for (int64_t xx = 0; xx < out; xx++) {
                source(xx, scale, in, &x0, &x1, &lx);
                for (int c = 0; c < 3; c++)
                    o[xx * 3 + c] = (1 - ly) * ((1 - lx) * r0[x0 * 3 + c] + lx * r0[x1 * 3 + c]) +
                                    ly * ((1 - lx) * r1[x0 * 3 + c] + lx * r1[x1 * 3 + c]);
            }
        }
}
