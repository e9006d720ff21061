/* replay.c - the training step's device-only runs, recorded once and replayed (yp_executor.h's
 * "recorded runs"; the backend's graph entries, yp_backend.h: CUDA graphs on the GPU). A run is
 * recorded by calling its steps between graph_begin and graph_end, which on a recording backend
 * queues nothing, then launched; a failed recording ran nothing, so its steps run again plainly. */
#include <stdio.h>
#include <stdlib.h>

#include "exec_ops.h"

/* A step whose adapter only queues device work with arguments fixed by the binding: a node's
 * forward, recompute or backward step of an op without host I/O. */
static int device_only(const yp_step *st) {
    if (st->op < 0 || st->op >= YP_OP_COUNT) return 0;
    if (st->phase != YP_PHASE_FORWARD && st->phase != YP_PHASE_RECOMPUTE && st->phase != YP_PHASE_BACKWARD) return 0;
    return !yp_exec_op_row_get((yp_op)st->op)->host_io && yp_exec_step_adapter(st) != NULL;
}

int yp_exec_run_end(const yp_schedule *s, int first) {
    int end = first;
    while (end < s->n_steps && device_only(&s->steps[end])) end++;
    return end;
}

int yp_exec_replaying(const yp_exec *x, const yp_binding *b) {
    const yp_backend *be = b->be;
    return !x->graphs.off && be->graph_begin && be->graph_end && be->graph_launch && be->graph_free && !b->guard &&
           !x->prof.s;
}

void yp_exec_graphs_free(yp_exec *x) {
    for (int i = 0; i < x->graphs.n; i++) {
        const yp_binding *b = x->graphs.v[i].binding;
        b->be->graph_free(b->be, x->graphs.v[i].graph);
    }
    free(x->graphs.v);
    x->graphs.v = NULL, x->graphs.n = x->graphs.cap = 0;
}

void yp_exec_graphs_off(yp_exec *x) {
    yp_exec_graphs_free(x);
    x->graphs.off = 1;
}

static yp_exec_graph *find(yp_exec *x, const yp_binding *b, int first) {
    for (int i = 0; i < x->graphs.n; i++)
        if (x->graphs.v[i].binding == b && x->graphs.v[i].first == first) return &x->graphs.v[i];
    return NULL;
}

static int run_plain(const yp_binding *b, int first, int end, const yp_step_batch *in, double sum[4], yp_err *err) {
    for (int i = first; i < end; i++)
        if (yp_exec_run_step(b, i, in, sum, err)) return -1;
    return 0;
}

/* Records steps [first, end) of b into a new entry. 0 with the entry made, or -1 with why set
 * (nothing ran: the caller runs the steps plainly). */
static int record(yp_exec *x, const yp_binding *b, int first, int end, const yp_step_batch *in, double sum[4],
                  char *why, size_t why_len) {
    yp_backend *be = b->be;
    if (x->graphs.n == x->graphs.cap) {
        int cap = x->graphs.cap ? 2 * x->graphs.cap : 8;
        yp_exec_graph *v = realloc(x->graphs.v, (size_t)cap * sizeof *v);
        if (!v) return snprintf(why, why_len, "out of memory"), -1;
        x->graphs.v = v, x->graphs.cap = cap;
    }
    if (be->graph_begin(be)) return snprintf(why, why_len, "%.200s", be->last_error(be)), -1;
    yp_err step_err;
    int rc = run_plain(b, first, end, in, sum, &step_err);
    void *g = NULL;
    int ended = be->graph_end(be, &g); /* always: it stops the recording */
    if (rc || ended || !g) {
        snprintf(why, why_len, "%.200s", rc ? step_err.msg : be->last_error(be));
        if (g) be->graph_free(be, g);
        return -1;
    }
    x->graphs.v[x->graphs.n++] = (yp_exec_graph){b, first, end, g};
    return 0;
}

int yp_exec_replay_run(yp_exec *x, const yp_binding *b, int first, int end, const yp_step_batch *in, double sum[4],
                       yp_err *err) {
    yp_exec_graph *g = find(x, b, first);
    char why[208];
    why[0] = 0;
    if (!g && record(x, b, first, end, in, sum, why, sizeof why) == 0) g = &x->graphs.v[x->graphs.n - 1];
    if (!g && !why[0]) snprintf(why, sizeof why, "the backend gave no reason");
    if (!g) { /* the recording failed and ran nothing: plain calls from now on */
        snprintf(x->graphs.why, sizeof x->graphs.why, "recording steps %d..%d failed: %.200s", first, end - 1, why);
        fprintf(stderr, "executor: %s; running plain launches\n", x->graphs.why);
        yp_exec_graphs_off(x);
        return run_plain(b, first, end, in, sum, err);
    }
    if (b->be->graph_launch(b->be, g->graph))
        return yp_err_set(err, "launching the recording of steps %d..%d: %s", first, end - 1, b->be->last_error(b->be));
    return 0;
}
