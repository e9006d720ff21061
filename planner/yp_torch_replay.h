/* yp_torch_replay.h - the allocation/free sequence PyTorch eager runs for one forward and backward
 * of a schedule built under the `pytorch` policy (yp_torch_saved.h says why its tensors are what
 * autograd holds), replayed through the caching-allocator model (yp_torch_alloc.h), and
 * AutoBatch's probe made of such passes.
 *
 * The sequence, step by step in the schedule's order (forward, the loss step, backward):
 *   - before a step: each tensor it writes first is allocated (activations, saved values, BN
 *     statistics, maxpool indices, activation gradients, the loss's buffers when asked for); a
 *     weight's low-precision copy is allocated before the first forward step that reads it; a
 *     weight gradient before the first step that writes it, once (it persists: .grad);
 *   - after a step: each of those tensors whose last reader it is is freed (a saved value at its
 *     last backward reader, as autograd releases saved tensors when their node has run); a weight
 *     copy after its last backward reader, unless the copies stay cached (AutoBatch runs its whole
 *     probe inside one autocast context, whose cache keeps every copy until it exits).
 * Not in the sequence: conv scratch (cuDNN takes its workspace from the allocator too, in sizes
 * of its own choosing; none is modelled), the parameters and BN statistics (allocated before),
 * optimizer state and EMA (no optimizer step here), and the transient tensors of autograd's
 * accumulation and of dtype casts other than the weights' and the image's. */
#ifndef YP_TORCH_REPLAY_H
#define YP_TORCH_REPLAY_H

#include "yp_schedule.h"
#include "yp_torch_alloc.h"

typedef struct {
    int loss;               /* the loss's targets and buffers (train.py); 0: AutoBatch's sum of the outputs */
    int cache_weight_copies; /* the copies stay allocated after the pass (see above) */
} yp_torch_pass_opts;

/* Replays one forward and backward of s (built under the pytorch policy) through a. grads and
 * copies hold one handle per tensor of s (-1: none yet), kept by the caller across passes of
 * schedules with the same parameters: the weight gradients (and, with cache_weight_copies, the
 * weight copies) allocated by one pass are reused by the next. Returns 0; 1 when the allocator
 * ran out of its capacity (the pass stops there, its transient blocks freed); -1 with err set on
 * a schedule of another policy or an evaluation pass, or an allocator error. */
int yp_torch_replay_pass(const yp_schedule *s, yp_torch_alloc *a, const yp_torch_pass_opts *o, int *grads,
                         int *copies, yp_err *err);

/* One row of AutoBatch's probe: torch.cuda.memory_reserved() (and memory_allocated()) after three
 * forward+backward passes at this batch, in bytes, counting only what the probe adds to the
 * memory it started with (add the reserved bytes AutoBatch logs before probing). */
typedef struct {
    int64_t batch, reserved, allocated, peak_allocated;
} yp_torch_probe_row;

/* AutoBatch's probe of g at img x img with activations of act (F16 or BF16 under autocast, F32
 * without), for batches[0..n): per batch an fp32 input that requires grad (torch.empty), three
 * passes (weight gradients allocated by the first and kept, as the input's gradient; the weight
 * copies cached over the whole probe under autocast), the reading, then the input and its
 * gradient dropped and empty_cache. rows[i] gets batch i's reading. 0, or -1 with err set. */
int yp_torch_autobatch_probe(const yp_graph *g, int64_t img, yp_dtype act, const int64_t *batches, int n,
                             yp_torch_probe_row *rows, yp_err *err);

#endif
