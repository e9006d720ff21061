/* binding.c - a schedule bound onto the arena (yp_binding.h): the training schedule's layout (the
 * plan's offsets, spread apart under guards), tensor addresses, guard canaries, each node's
 * forward output, the loss's configuration and staging. The validation binding is made in eval.c
 * with the same pieces. Guards are written and read through the backend's memory entries, so the
 * same code serves a host arena and a device one. */
#include <stdlib.h>
#include <string.h>

#include "yp_binding.h"
#include "yp_elem_math.h"
#include "yp_executor.h"

#define YP_GUARD_BYTE 0xA5

void *yp_bind_tensor(const yp_binding *b, int t) { return b->arena + b->offset[t]; }

static int by_offset(const void *a, const void *b) {
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* Without guards: the plan's offsets. With guards g: offset + 2g*rank + g, rank = number of
 * distinct planned offsets below it, which keeps g bytes free before and after every tensor
 * against every tensor whose planned range is disjoint from it. */
static int layout(yp_binding *b, yp_err *err) {
    const yp_plan *p = b->plan;
    int n = b->s->n_tensors;
    b->offset = malloc((size_t)n * sizeof *b->offset);
    if (!b->offset) return yp_err_set(err, "out of memory binding the arena");
    memcpy(b->offset, p->arena.offsets, (size_t)n * sizeof *b->offset);
    b->arena_bytes = p->arena_bytes;
    if (!b->guard) return 0;
    int64_t *sorted = malloc((size_t)n * sizeof *sorted);
    if (!sorted) return yp_err_set(err, "out of memory binding the arena");
    memcpy(sorted, b->offset, (size_t)n * sizeof *sorted);
    qsort(sorted, (size_t)n, sizeof *sorted, by_offset);
    int m = 0;
    for (int i = 0; i < n; i++)
        if (!m || sorted[m - 1] != sorted[i]) sorted[m++] = sorted[i];
    for (int t = 0; t < n; t++) {
        int lo = 0, hi = m; /* rank: distinct offsets strictly below */
        while (lo < hi) {
            int mid = (lo + hi) / 2;
            if (sorted[mid] < b->offset[t]) lo = mid + 1;
            else hi = mid;
        }
        b->offset[t] += 2 * b->guard * lo + b->guard;
    }
    b->arena_bytes = p->arena_bytes + 2 * b->guard * m + b->guard;
    free(sorted);
    return 0;
}

/* Each node's forward output (-1 for a BN whose output a fusion left out). */
static void mark_nodes(yp_binding *b) {
    const yp_schedule *s = b->s;
    for (int i = 0; i < s->n_steps; i++)
        if (s->steps[i].phase == YP_PHASE_FORWARD && s->steps[i].node >= 0)
            b->fwd_t[s->steps[i].node] = s->steps[i].a.y[0];
}

int yp_bind_loss(yp_binding *b) {
    const yp_schedule *s = b->s;
    const yp_graph *g = s->g;
    float anchors[YP_LOSS_MAX_LEVELS][YP_LOSS_MAX_ANCHORS][2];
    memcpy(anchors, g->anchors, sizeof anchors);
    yp_loss_cfg_default(&b->loss, g->nc, g->nl, g->na, (const float(*)[YP_LOSS_MAX_ANCHORS][2])anchors, g->strides,
                        s->opts.w, s->opts.h);
    int assign = s->loss_step >= 0 ? s->steps[s->loss_step].a.loss_assign : -1;
    b->loss_stage = malloc((size_t)(assign >= 0 ? s->tensors[assign].bytes : 0) + 1);
    const yp_tensor *img = b->images_t >= 0 ? &s->tensors[b->images_t] : NULL;
    if (img && img->dtype != YP_DTYPE_F32) b->image_stage = malloc((size_t)img->bytes + 1);
    return b->loss_stage && (!img || img->dtype == YP_DTYPE_F32 || b->image_stage) ? 0 : -1;
}

int yp_bind_upload_images(const yp_binding *b, const float *images, int64_t n_images, yp_err *err) {
    const yp_tensor *img = &b->s->tensors[b->images_t];
    const int64_t n = n_images * (yp_shape_numel(img->shape) / img->shape.n);
    const yp_elem t = yp_exec_elem(img->dtype);
    const void *src = images;
    if (t != YP_ELEM_F32) { /* AMP's 2-byte input: rounded on the host, as autocast's cast of the batch */
        void *stage = b->image_stage;
#pragma omp parallel for schedule(static) if (n >= 65536)
        for (int64_t i = 0; i < n; i++) yp_elem_put(t, stage, i, images[i]);
        src = stage;
    }
    if (n > 0 && b->be->mem_copy(b->be, yp_bind_tensor(b, b->images_t), src, (size_t)n * yp_elem_size(t),
                                 YP_COPY_HOST_TO_DEVICE))
        return yp_err_set(err, "uploading the batch's images: %s", b->be->last_error(b->be));
    return 0;
}

int yp_bind_train(yp_binding *b, const yp_plan *p, yp_backend *be, int64_t guard_bytes, yp_err *err) {
    memset(b, 0, sizeof *b);
    b->plan = p, b->s = p->sched, b->be = be, b->ops = be->ops, b->guard = guard_bytes;
    b->images_t = b->s->images_t, b->targets_t = b->s->targets_t;
    b->fwd_t = calloc((size_t)b->s->g->n_nodes, sizeof(int));
    if (!b->fwd_t) return yp_err_set(err, "out of memory binding the arena");
    if (layout(b, err)) return -1;
    mark_nodes(b);
    return yp_bind_loss(b) ? yp_err_set(err, "out of memory staging the loss's target assignment") : 0;
}

/* s has p's schedule's structure and fits in its layout: the same steps (phase, op, node) and
 * tensors (kind, role, dtype, lives), none larger than the planned one. */
static int same_structure(const yp_schedule *plan, const yp_schedule *s, yp_err *err) {
    if (s->n_tensors != plan->n_tensors || s->n_steps != plan->n_steps)
        return yp_err_set(err, "the %lldx%lld schedule has %d tensors and %d steps, the plan's %d and %d",
                          (long long)s->opts.w, (long long)s->opts.h, s->n_tensors, s->n_steps, plan->n_tensors,
                          plan->n_steps);
    for (int i = 0; i < s->n_steps; i++) {
        const yp_step *a = &plan->steps[i], *b = &s->steps[i];
        if (a->phase != b->phase || a->op != b->op || a->node != b->node || a->fused != b->fused)
            return yp_err_set(err, "step %d of the %lldx%lld schedule (%s) is not the plan's (%s)", i,
                              (long long)s->opts.w, (long long)s->opts.h, b->label, a->label);
    }
    for (int t = 0; t < s->n_tensors; t++) {
        const yp_tensor *a = &plan->tensors[t], *b = &s->tensors[t];
        if (a->kind != b->kind || a->role != b->role || a->dtype != b->dtype || a->first != b->first ||
            a->last != b->last)
            return yp_err_set(err, "tensor %s of the %lldx%lld schedule is not the plan's %s", b->name,
                              (long long)s->opts.w, (long long)s->opts.h, a->name);
        if (b->bytes > a->bytes)
            return yp_err_set(err,
                              "tensor %s needs %lld bytes at %lldx%lld, more than the plan's %lld: the plan was not "
                              "made for this size",
                              b->name, (long long)b->bytes, (long long)s->opts.w, (long long)s->opts.h,
                              (long long)a->bytes);
    }
    return 0;
}

int yp_bind_resized(yp_binding *b, const yp_binding *train, const yp_schedule *s, yp_err *err) {
    memset(b, 0, sizeof *b);
    if (train->guard) return yp_err_set(err, "other batch sizes run without guards");
    if (same_structure(train->s, s, err)) return -1;
    b->plan = train->plan, b->s = s, b->be = train->be, b->ops = train->ops, b->arena = train->arena;
    b->arena_bytes = train->arena_bytes;
    b->images_t = s->images_t, b->targets_t = s->targets_t;
    b->fwd_t = calloc((size_t)s->g->n_nodes, sizeof(int));
    b->offset = malloc((size_t)s->n_tensors * sizeof *b->offset);
    if (!b->fwd_t || !b->offset) return yp_err_set(err, "out of memory binding the arena");
    memcpy(b->offset, train->offset, (size_t)s->n_tensors * sizeof *b->offset);
    mark_nodes(b);
    return yp_bind_loss(b) ? yp_err_set(err, "out of memory staging the loss's target assignment") : 0;
}

int yp_bind_guard_arm(const yp_binding *b, int step, yp_err *err) {
    yp_backend *be = b->be;
    for (int t = 0; t < b->s->n_tensors && b->guard; t++) {
        const yp_tensor *tt = &b->s->tensors[t];
        if (tt->first != step) continue;
        if (be->mem_set(be, b->arena + b->offset[t] - b->guard, YP_GUARD_BYTE, (size_t)b->guard) ||
            be->mem_set(be, b->arena + b->offset[t] + tt->bytes, YP_GUARD_BYTE, (size_t)b->guard))
            return yp_err_set(err, "writing the guards of %s: %s", tt->name, be->last_error(be));
    }
    return 0;
}

/* The guard bytes before (side 0) or after (1) tensor t are intact; -1 when they cannot be read. */
static int guard_intact(const yp_binding *b, int t, int side, unsigned char *host) {
    const unsigned char *at = b->arena + b->offset[t] + (side ? b->s->tensors[t].bytes : -b->guard);
    if (b->be->mem_copy(b->be, host, at, (size_t)b->guard, YP_COPY_DEVICE_TO_HOST)) return -1;
    for (int64_t k = 0; k < b->guard; k++)
        if (host[k] != YP_GUARD_BYTE) return 0;
    return 1;
}

int yp_bind_check_guards(const yp_binding *b, int step, yp_err *err) {
    if (!b->guard) return 0;
    unsigned char *host = malloc((size_t)b->guard);
    if (!host) return yp_err_set(err, "out of memory checking guards");
    int rc = 0;
    for (int t = 0; t < b->s->n_tensors && !rc; t++) {
        const yp_tensor *tt = &b->s->tensors[t];
        if (step < tt->first || step > tt->last) continue;
        for (int side = 0; side < 2 && !rc; side++) {
            int ok = guard_intact(b, t, side, host);
            if (ok < 0) rc = yp_err_set(err, "reading the guards of %s: %s", tt->name, b->be->last_error(b->be));
            else if (!ok)
                rc = yp_err_set(err, "guard bytes of %s %s after step %d: an op wrote outside its tensor", tt->name,
                                side ? "(after)" : "(before)", step);
        }
    }
    free(host);
    return rc;
}

void yp_bind_free(yp_binding *b) {
    free(b->offset), free(b->fwd_t), free(b->loss_stage), free(b->image_stage);
    memset(b, 0, sizeof *b);
}
