/* torch_pass.h - the machinery the PyTorch replays share (torch_pass.c): a pass over a
 * pytorch-policy schedule, its own blocks and transients, the lives of the schedule's tensors as
 * eager PyTorch holds them, and the allocations and frees around each step. The training pass
 * (torch_replay.c), ComputeLoss (torch_loss.c) and the inference pass (torch_infer.c) are built
 * on it. Not a public interface. */
#ifndef YP_TORCH_PASS_H
#define YP_TORCH_PASS_H

#include "torch_internal.h"

typedef struct {
    const yp_schedule *s;
    yp_torch_alloc *a;
    yp_torch_state *st;
    int *held;                  /* the pass's own block per tensor */
    int *from, *to;             /* per tensor: the step before which it is allocated, after which freed */
    int detect_fwd, detect_bwd; /* Detect's forward and backward steps (-1: none) */
    int *tmp, n_tmp, cap_tmp;   /* blocks the pass holds outside the schedule's tensors (loss, copies) */
    yp_err *err;
} ytr_pass;

/* Starts a pass of s with state st (which must serve s): 0, or -1 with err set. */
int ytr_pass_setup(ytr_pass *p, const yp_schedule *s, yp_torch_alloc *a, yp_torch_state *st, yp_err *err);
/* Frees what the pass still holds; returns rc, or -1 if a free failed. */
int ytr_pass_teardown(ytr_pass *p, int rc);

/* A block for tensor slot *slot. 0, 1 out of capacity, -1 err (as yp_torch_malloc). */
int ytr_take(ytr_pass *p, int64_t bytes, int *slot);
/* A block outside the schedule's tensors, remembered so that a failed pass frees it. Its index
 * in p->tmp goes to *id. */
int ytr_take_tmp(ytr_pass *p, int64_t bytes, int *id);
/* Frees the p->tmp block id (an id < 0 is a no-op). */
int ytr_drop_tmp(ytr_pass *p, int id);
/* A transient: allocated and freed at once (its only effect is on the cache and the peaks). */
int ytr_blip(ytr_pass *p, int64_t bytes);

/* Does step st run cuDNN convolutions (a conv, or Detect's per-level convs)? */
static inline int ytr_is_conv(const yp_step *st) { return ytr_op_row_get(st->op)->cudnn_conv; }
/* Is t a Detect output (a raw level of the forward's result)? */
int ytr_detect_output(const ytr_pass *p, int t);
/* The last forward step reading t (-1 when none). */
int ytr_last_forward_reader(const yp_schedule *s, const yp_tensor *t);
/* The first forward step reading t and the last backward step reading it (-1 when none). */
void ytr_copy_life(const yp_schedule *s, const yp_tensor *t, int *first, int *last);
/* The outputs of the layers kept in YOLOv5's `y` list live at least until the forward returns
 * (Detect). */
void ytr_keep_y_list(ytr_pass *p);

/* Allocations before step i: the pass's tensors starting there (a weight copy only when none is
 * cached). */
int ytr_pass_before(ytr_pass *p, int i);
/* Frees after step i (with i = -1, every block the pass still holds). */
int ytr_pass_after(ytr_pass *p, int i);
/* Detect's forward, level by level: the conv's output, its contiguous permuted copy (the
 * output), the conv's output freed. */
int ytr_detect_forward(ytr_pass *p, int i);
/* After the forward has returned: the previous held outputs go, this pass's stay. */
int ytr_hold(ytr_pass *p);

/* ComputeLoss's forward with gradients, then its backward, which writes the Detect outputs'
 * gradients (torch_loss.c). */
int ytr_yolo_loss(ytr_pass *p, int64_t labels);

#endif
