/* torch_pass.c - the machinery the PyTorch replays share (torch_pass.h): the
 * state kept across passes, a pass's blocks and transients, the lives of a schedule's tensors as
 * eager PyTorch holds them, and the allocations and frees around each step. */
#include <stdlib.h>
#include <string.h>

#include "torch_pass.h"

/* ---------------------------------------------------------------- state */

int yp_torch_state_init(yp_torch_state *st, const yp_schedule *s, yp_err *err) {
    memset(st, 0, sizeof *st);
    st->n = s->n_state; /* gradients and copies are state tensors */
    st->grads = malloc((size_t)st->n * sizeof(int));
    st->copies = malloc((size_t)st->n * sizeof(int));
    if (!st->grads || !st->copies) {
        yp_torch_state_free(st);
        return yp_err_set(err, "PyTorch replay: out of memory");
    }
    for (int t = 0; t < st->n; t++) st->grads[t] = st->copies[t] = -1;
    return 0;
}

void yp_torch_state_free(yp_torch_state *st) {
    free(st->grads), free(st->copies);
    st->grads = st->copies = NULL;
    st->n = 0;
}

int ytr_release(yp_torch_alloc *a, int *slot, yp_err *err) {
    int h = *slot;
    *slot = -1;
    return yp_torch_free(a, h, err);
}

static int drop_outputs(yp_torch_state *st, yp_torch_alloc *a, yp_err *err) {
    for (int l = 0; l < st->n_outputs; l++)
        if (ytr_release(a, &st->outputs[l], err)) return -1;
    st->n_outputs = 0;
    return 0;
}

int yp_torch_state_drop(yp_torch_state *st, yp_torch_alloc *a, yp_err *err) {
    for (int t = 0; t < st->n; t++)
        if (ytr_release(a, &st->grads[t], err) || ytr_release(a, &st->copies[t], err)) return -1;
    return drop_outputs(st, a, err);
}

/* The state must serve s: same state tensors, its gradients and copies where s has them. */
static int state_fits(const yp_torch_state *st, const yp_schedule *s) {
    if (st->n != s->n_state) return 0;
    for (int t = 0; t < st->n; t++) {
        yp_kind k = s->tensors[t].kind;
        if ((st->grads[t] >= 0 && k != YP_KIND_GRAD) || (st->copies[t] >= 0 && k != YP_KIND_LOWP)) return 0;
    }
    return 1;
}

/* ---------------------------------------------------------------- a pass */

int ytr_take(ytr_pass *p, int64_t bytes, int *slot) { return yp_torch_malloc(p->a, bytes, slot, p->err); }

/* A block outside the schedule's tensors, remembered so that a failed pass frees it. Its index
 * in p->tmp goes to *id. */
int ytr_take_tmp(ytr_pass *p, int64_t bytes, int *id) {
    if (p->n_tmp == p->cap_tmp) {
        int c = p->cap_tmp ? 2 * p->cap_tmp : 64;
        int *n = realloc(p->tmp, (size_t)c * sizeof *n);
        if (!n) return yp_err_set(p->err, "PyTorch replay: out of memory");
        p->tmp = n, p->cap_tmp = c;
    }
    p->tmp[p->n_tmp] = -1;
    int rc = ytr_take(p, bytes, &p->tmp[p->n_tmp]);
    *id = p->n_tmp++;
    return rc;
}

int ytr_drop_tmp(ytr_pass *p, int id) { return id >= 0 && id < p->n_tmp ? ytr_release(p->a, &p->tmp[id], p->err) : 0; }

/* A transient: allocated and freed at once (its only effect is on the cache and the peaks). */
int ytr_blip(ytr_pass *p, int64_t bytes) {
    int h = -1, rc = ytr_take(p, bytes, &h);
    if (rc) return rc;
    return yp_torch_free(p->a, h, p->err);
}

int ytr_pass_setup(ytr_pass *p, const yp_schedule *s, yp_torch_alloc *a, yp_torch_state *st, yp_err *err) {
    memset(p, 0, sizeof *p);
    p->s = s, p->a = a, p->st = st, p->err = err;
    p->detect_fwd = p->detect_bwd = -1;
    if (!state_fits(st, s)) return yp_err_set(err, "PyTorch replay: the state was made for other parameters");
    p->held = malloc((size_t)s->n_tensors * sizeof(int));
    p->from = malloc((size_t)s->n_tensors * sizeof(int));
    p->to = malloc((size_t)s->n_tensors * sizeof(int));
    if (!p->held || !p->from || !p->to) return yp_err_set(err, "PyTorch replay: out of memory");
    for (int t = 0; t < s->n_tensors; t++) p->held[t] = p->from[t] = p->to[t] = -1;
    for (int i = 0; i < s->n_steps; i++)
        if (ytr_op_row_get(s->steps[i].op)->detect) {
            if (s->steps[i].phase == YP_PHASE_FORWARD) p->detect_fwd = i;
            if (s->steps[i].phase == YP_PHASE_BACKWARD) p->detect_bwd = i;
        }
    return 0;
}

/* Frees what the pass still holds; returns rc, or -1 if a free failed. */
int ytr_pass_teardown(ytr_pass *p, int rc) {
    for (int t = 0; p->held && t < p->s->n_tensors; t++)
        if (p->held[t] >= 0 && ytr_release(p->a, &p->held[t], p->err) && !rc) rc = -1;
    for (int i = 0; i < p->n_tmp; i++)
        if (ytr_drop_tmp(p, i) && !rc) rc = -1;
    free(p->held), free(p->from), free(p->to), free(p->tmp);
    return rc;
}

/* Is t a Detect output (a raw level of the forward's result)? */
int ytr_detect_output(const ytr_pass *p, int t) {
    if (p->detect_fwd < 0) return 0;
    const yp_step *st = &p->s->steps[p->detect_fwd];
    for (int k = 0; k < st->n_out; k++)
        if (yp_step_outputs(p->s, st)[k] == t) return 1;
    return 0;
}

/* Does YOLOv5's forward keep layer l's output in its `y` list (a layer other than the next
 * reads it: the model's save list)? */
static int kept_by_forward(const yp_graph *g, int l) {
    for (int j = 0; j < g->n_layers; j++)
        for (int k = 0; k < g->layers[j].n_from; k++)
            if (g->layers[j].from[k] == l && l != j - 1) return 1;
    return 0;
}

/* The last forward step reading t (-1 when none). */
int ytr_last_forward_reader(const yp_schedule *s, const yp_tensor *t) {
    int last = -1;
    for (int k = 0; k < t->n_cons; k++) {
        int st = yp_tensor_consumers(s, t)[k];
        if (s->steps[st].phase == YP_PHASE_FORWARD && st > last) last = st;
    }
    return last;
}

/* The first forward step reading t and the last backward step reading it (-1 when none). */
void ytr_copy_life(const yp_schedule *s, const yp_tensor *t, int *first, int *last) {
    *first = *last = -1;
    for (int k = 0; k < t->n_cons; k++) {
        int st = yp_tensor_consumers(s, t)[k];
        yp_phase ph = s->steps[st].phase;
        if (ph == YP_PHASE_FORWARD && (*first < 0 || st < *first)) *first = st;
        if (ph == YP_PHASE_BACKWARD && st > *last) *last = st;
    }
}

/* The outputs of the layers kept in `y` live at least until the forward returns (Detect). */
void ytr_keep_y_list(ytr_pass *p) {
    const yp_schedule *s = p->s;
    if (p->detect_fwd < 0) return;
    for (int l = 0; l < s->g->n_layers; l++) {
        if (!kept_by_forward(s->g, l)) continue;
        int node = s->g->layers[l].output;
        for (int t = 0; t < s->n_tensors; t++) {
            const yp_tensor *tt = &s->tensors[t];
            if (tt->node == node && tt->role == YP_ROLE_VALUE && p->from[t] >= 0 && p->to[t] >= 0 &&
                p->to[t] < p->detect_fwd)
                p->to[t] = p->detect_fwd;
        }
    }
}

/* Allocations before step i: the pass's tensors starting there (a copy only when none is cached). */
int ytr_pass_before(ytr_pass *p, int i) {
    const yp_schedule *s = p->s;
    for (int t = 0; t < s->n_tensors; t++) {
        if (p->from[t] != i) continue;
        int *slot = s->tensors[t].kind == YP_KIND_LOWP ? &p->st->copies[t] : &p->held[t];
        int rc = *slot < 0 ? ytr_take(p, s->tensors[t].bytes, slot) : 0;
        if (rc) return rc;
    }
    return 0;
}

/* Frees after step i (with i = -1, every block the pass still holds). */
int ytr_pass_after(ytr_pass *p, int i) {
    for (int t = 0; t < p->s->n_tensors; t++) {
        int last = i < 0 || p->to[t] == i;
        if (last && p->held[t] >= 0 && ytr_release(p->a, &p->held[t], p->err)) return -1;
        if (last && p->to[t] >= 0 && p->s->tensors[t].kind == YP_KIND_LOWP && p->st->copies[t] >= 0 &&
            ytr_release(p->a, &p->st->copies[t], p->err))
            return -1;
    }
    return 0;
}

/* Detect's forward, level by level: the conv's output, its contiguous permuted copy (the
 * output), the conv's output freed. */
int ytr_detect_forward(ytr_pass *p, int i) {
    const yp_step *st = &p->s->steps[i];
    for (int l = 0; l < st->n_out; l++) {
        int t = yp_step_outputs(p->s, st)[l], rc;
        int64_t bytes = p->s->tensors[t].bytes;
        int conv = -1;
        if ((rc = ytr_take_tmp(p, bytes, &conv))) return rc;
        if (p->from[t] == i && p->held[t] < 0 && (rc = ytr_take(p, bytes, &p->held[t]))) return rc;
        if ((rc = ytr_drop_tmp(p, conv))) return rc;
    }
    return 0;
}

/* After the forward has returned: the previous held outputs go, this pass's stay. */
int ytr_hold(ytr_pass *p) {
    const yp_step *st = &p->s->steps[p->detect_fwd];
    if (drop_outputs(p->st, p->a, p->err)) return -1;
    for (int l = 0; l < st->n_out && l < YP_MAX_LEVELS; l++) {
        int t = yp_step_outputs(p->s, st)[l];
        p->st->outputs[l] = p->held[t], p->held[t] = -1;
    }
    p->st->n_outputs = st->n_out < YP_MAX_LEVELS ? st->n_out : YP_MAX_LEVELS;
    return 0;
}
