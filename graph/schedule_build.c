/* schedule_build.c - the schedule builder's plumbing: growing arrays, new tensors, a step's
 * operands (listed and named) and appending the step. */
#include <stdlib.h>
#include <string.h>

#include "schedule_build.h"

void *sb_grow(void *p, int *cap, int need, size_t size, int *oom) {
    if (need <= *cap) return p;
    int c = *cap ? *cap : 64;
    while (c < need) c *= 2;
    void *np = realloc(p, (size_t)c * size);
    if (!np) {
        *oom = 1;
        return p;
    }
    *cap = c;
    return np;
}


int sb_new_tensor(bld *b, tspec sp, const char *fmt, const char *a, const char *c) {
    yp_schedule *s = b->s;
    s->tensors = sb_grow(s->tensors, &s->cap_t, s->n_tensors + 1, sizeof *s->tensors, &b->oom);
    if (b->oom) return 0;
    yp_tensor *t = &s->tensors[s->n_tensors];
    memset(t, 0, sizeof *t);
    snprintf(t->name, sizeof t->name, fmt, a, c);
    t->role = sp.role, t->level = sp.level, t->param = -1;
    t->kind = sp.kind, t->scale = sp.scale, t->dtype = sp.dtype, t->shape = sp.shape, t->node = sp.node;
    t->producer = -1, t->grad = -1;
    t->bytes = yp_shape_numel(sp.shape) * (int64_t)yp_dtype_size(sp.dtype);
    return s->n_tensors++;
}

yp_shape sb_flat(int64_t n) { return (yp_shape){1, 1, 1, n}; }

void sb_op_in(bld *b, int t) {
    b->tin = sb_grow(b->tin, &b->cap_in, b->n_in + 1, sizeof *b->tin, &b->oom);
    if (!b->oom) b->tin[b->n_in++] = t;
}

void sb_op_out(bld *b, int t) {
    b->tout = sb_grow(b->tout, &b->cap_out, b->n_out + 1, sizeof *b->tout, &b->oom);
    if (!b->oom) b->tout[b->n_out++] = t;
}

/* An operand with its name: the slot of b->cur it fills. */
void sb_in_as(bld *b, int *slot, int t) { *slot = t, sb_op_in(b, t); }
void sb_out_as(bld *b, int *slot, int t) { *slot = t, sb_op_out(b, t); }

yp_operands sb_no_operands(void) {
    yp_operands a;
    int *p = (int *)&a;
    for (size_t k = 0; k < sizeof a / sizeof(int); k++) p[k] = -1;
    return a;
}

/* Appends a step with the operands collected by op_in/op_out; returns its index. */
int sb_emit(bld *b, yp_phase ph, int op, int node, const char *label, int64_t flops) {
    yp_schedule *s = b->s;
    s->steps = sb_grow(s->steps, &s->cap_s, s->n_steps + 1, sizeof *s->steps, &b->oom);
    s->refs = sb_grow(s->refs, &s->cap_r, s->n_refs + b->n_in + b->n_out, sizeof *s->refs, &b->oom);
    if (b->oom) return 0;
    yp_step *st = &s->steps[s->n_steps];
    memset(st, 0, sizeof *st);
    st->phase = ph, st->op = op, st->node = node, st->flops = flops, st->a = b->cur;
    st->fused = YP_FUSED_NONE, st->fused_node = -1;
    b->cur = sb_no_operands();
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
