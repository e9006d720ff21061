/* yp_binding.h - one schedule bound onto the executor's arena: its tensors' offsets, so a tensor
 * index gives an address; the backend instance every step of it runs with; what every step of the
 * schedule needs besides its tensors (the loss's configuration and the host buffer its target
 * assignment is staged in); and its debug guards. The step interpreter (yp_executor_internal.h)
 * runs steps of a binding and needs nothing else.
 *
 * An executor has two: the training schedule's (binding.c: the plan's offsets) and, when the plan
 * has one, its validation pass's (eval.c: through the plan's mapping), both over the one arena.
 * A binding owns its tables, never the arena: yp_exec_init allocates it into the training binding,
 * the validation binding points at the same bytes, and yp_exec_free releases it. */
#ifndef YP_BINDING_H
#define YP_BINDING_H

#include "yp_backend.h"
#include "yp_loss.h"
#include "yp_plan.h"

typedef struct yp_binding {
    const yp_plan *plan;     /* the plan the schedule is from (its candidate names the scratch model) */
    const yp_schedule *s;    /* the schedule bound: the plan's training one, or its validation pass's */
    yp_backend *be;          /* the instance every op and memory entry is called with */
    const yp_ops *ops;       /* be->ops */
    unsigned char *arena;    /* the one allocation (not the binding's: see above) */
    int64_t arena_bytes;     /* the arena's size: == plan->arena_bytes unless guards are on */
    int64_t *offset;         /* per tensor of s, in the arena (planned, or spread apart for guards) */
    int64_t guard;           /* canary bytes before and after each tensor (0: off) */
    int *fwd_t;              /* per graph node: its forward output tensor in s (level 0) */
    int images_t, targets_t; /* the schedule's input tensors */
    yp_loss_cfg loss;        /* the loss of s's loss step (the model's gains, s's image size) */
    void *loss_stage;        /* host staging of the loss's positives (loss:assign's bytes) */
    void *image_stage;       /* host staging of the images in their tensor's 2-byte type (AMP), or NULL */
} yp_binding;

/* The address of tensor t of b->s inside the arena. */
void *yp_bind_tensor(const yp_binding *b, int t);

/* Binds p's training schedule for backend be: the plan's offsets, or with guard_bytes > 0 the
 * same layout spread apart so every tensor has guard_bytes of canary before and after it (the
 * mapping keeps every pair of tensors live together apart; arena_bytes grows by the guards);
 * each node's forward output; the loss's configuration and staging. The arena is not allocated
 * (b->arena NULL). 0, or -1 with err set (out of memory); free with yp_bind_free either way. */
int yp_bind_train(yp_binding *b, const yp_plan *p, yp_backend *be, int64_t guard_bytes, yp_err *err);

/* b's loss configuration for its schedule's loss step (YOLOv5's defaults for the graph, at the
 * schedule's image size) and its host staging: the loss's positives, as large as that step's
 * loss:assign, and, when the images tensor is not fp32, the images in its type. 0, or -1 when out
 * of memory. */
int yp_bind_loss(yp_binding *b);

/* The first n_images images of a host batch (fp32, the tensor's layout) into b's images tensor:
 * copied as they are for an fp32 tensor, else rounded to its type in b->image_stage first (an AMP
 * plan's 2-byte input). 0, or -1 with err set. */
int yp_bind_upload_images(const yp_binding *b, const float *images, int64_t n_images, yp_err *err);

/* Binds s, the plan's training schedule built again at another image size (multi-scale batches),
 * onto train's arena with train's offsets: "offsets kept", which is safe because s has the same
 * steps and tensors with the same lives and none is larger than its planned slot (checked; s
 * must outlive b). Without guards only. 0, or -1 with err set; free with yp_bind_free either way. */
int yp_bind_resized(yp_binding *b, const yp_binding *train, const yp_schedule *s, yp_err *err);

/* Writes the canaries of the tensors of b that come to life at `step` (a no-op without guards).
 * 0, or -1 with err. */
int yp_bind_guard_arm(const yp_binding *b, int step, yp_err *err);

/* Checks the canaries of every tensor of b live at `step` (a no-op without guards). 0, or -1 with
 * err naming the tensor whose bytes were overwritten. */
int yp_bind_check_guards(const yp_binding *b, int step, yp_err *err);

/* Frees b's tables (never the arena) and zeroes it; a zeroed binding is a no-op. */
void yp_bind_free(yp_binding *b);

#endif
