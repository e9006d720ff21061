/* multiscale.c - multi-scale batches inside the plan's arena (yp_executor.h): the training
 * schedule rebuilt at each size train.py's --multi-scale draws, bound with the plan's offsets, and
 * the bilinear resize of the batch. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "yp_executor_internal.h"

int yp_exec_add_size(yp_exec *x, int64_t side, yp_err *err) {
    const yp_plan *p = x->train.plan;
    if (side == x->train.s->opts.h && side == x->train.s->opts.w) return 0;
    if (yp_exec_binding_for(x, side)) return 0;
    yp_exec_size *grown = realloc(x->sizes, (size_t)(x->n_sizes + 1) * sizeof *grown);
    if (!grown) return yp_err_set(err, "out of memory adding size %lld", (long long)side);
    x->sizes = grown;
    yp_exec_size *z = &x->sizes[x->n_sizes];
    memset(z, 0, sizeof *z);
    z->side = side;
    yp_sched_opts o = yp_candidate_train_opts(&p->cand, yp_graph_max_stride(p->g));
    o.h = o.w = side;
    if (!(z->s = yp_schedule_build(p->g, &o, err))) return -1;
    x->n_sizes++; /* from here yp_exec_free releases it */
    if (yp_bind_resized(&z->b, &x->train, z->s, err) || yp_exec_prepare_steps(&z->b, err)) return -1;
    const yp_loss_cfg *t = &x->train.loss; /* the gains are the nominal size's, as train.py's */
    z->b.loss.box = t->box, z->b.loss.obj = t->obj, z->b.loss.cls = t->cls;
    z->b.loss.anchor_t = t->anchor_t, z->b.loss.label_smoothing = t->label_smoothing;
    return 0;
}

const yp_binding *yp_exec_binding_for(const yp_exec *x, int64_t side) {
    if (side == x->train.s->opts.h && side == x->train.s->opts.w) return &x->train;
    for (int i = 0; i < x->n_sizes; i++)
        if (x->sizes[i].side == side) return &x->sizes[i].b;
    return NULL;
}

void yp_exec_sizes_free(yp_exec *x) {
    for (int i = 0; i < x->n_sizes; i++) {
        yp_bind_free(&x->sizes[i].b);
        yp_schedule_free(x->sizes[i].s);
    }
    free(x->sizes);
    x->sizes = NULL, x->n_sizes = 0;
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
