/* schedule_lives.c - producers, consumers and live intervals of a schedule's tensors. */
#include <stdlib.h>
#include <string.h>

#include "schedule_build.h"

static int persistent(yp_kind k) {
    return k == YP_KIND_WEIGHT || k == YP_KIND_GRAD || k == YP_KIND_OPTSTATE || k == YP_KIND_EMA || k == YP_KIND_LOWP;
}

/* Producer, consumers and live interval of every tensor; ACT read after the loss becomes SAVED. */
void sb_compute_lives(bld *b) {
    yp_schedule *s = b->s;
    int *count = calloc((size_t)s->n_tensors + 1, sizeof *count);
    if (!count) {
        b->oom = 1;
        return;
    }
    for (int t = 0; t < s->n_tensors; t++) s->tensors[t].first = s->tensors[t].last = -1;
    for (int st = 0; st < s->n_steps; st++) {
        const yp_step *p = &s->steps[st];
        for (int k = 0; k < p->n_out; k++) {
            yp_tensor *t = &s->tensors[s->refs[p->out_off + k]];
            if (t->producer < 0 && !persistent(t->kind)) t->producer = st;
            if (t->first < 0) t->first = st;
            t->last = st;
        }
        for (int k = 0; k < p->n_in; k++) {
            yp_tensor *t = &s->tensors[s->refs[p->in_off + k]];
            count[s->refs[p->in_off + k]]++;
            if (t->first < 0) t->first = st;
            t->last = st;
            if (t->kind == YP_KIND_ACT && st > s->loss_step) t->kind = YP_KIND_SAVED;
        }
    }
    int total = 0;
    for (int t = 0; t < s->n_tensors; t++) total += count[t];
    int *cons = malloc(((size_t)total + 1) * sizeof *cons), off = 0;
    s->refs = sb_grow(s->refs, &s->cap_r, s->n_refs + total, sizeof *s->refs, &b->oom);
    if (!cons || b->oom) {
        free(cons), free(count);
        b->oom = 1;
        return;
    }
    for (int t = 0; t < s->n_tensors; t++) s->tensors[t].cons_off = s->n_refs + off, off += count[t], count[t] = 0;
    for (int st = 0; st < s->n_steps; st++) {
        const yp_step *p = &s->steps[st];
        for (int k = 0; k < p->n_in; k++) {
            int id = s->refs[p->in_off + k];
            yp_tensor *t = &s->tensors[id];
            if (t->n_cons && s->refs[t->cons_off + t->n_cons - 1] == st) continue; /* read twice by one step */
            s->refs[t->cons_off + t->n_cons++] = st;
        }
    }
    s->n_refs += total;
    for (int t = 0; t < s->n_tensors; t++) {
        yp_tensor *tt = &s->tensors[t];
        if (persistent(tt->kind)) tt->first = 0, tt->last = s->n_steps - 1;
        if (tt->kind == YP_KIND_INPUT || tt->producer < 0) tt->first = 0; /* loaded before the step starts */
        if (tt->last < 0) tt->last = tt->first;
    }
    free(cons);
    free(count);
}
