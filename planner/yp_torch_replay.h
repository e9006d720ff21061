/* yp_torch_replay.h - the allocation/free sequence PyTorch eager runs for a pass of a schedule
 * built under the `pytorch` policy (yp_torch_saved.h says why its tensors are what autograd
 * holds), replayed through the caching-allocator model (yp_torch_alloc.h): a training pass
 * (forward, loss, backward), an inference pass (no_grad: validation, thop's count), and
 * AutoBatch's probe made of them. yp_torch_train.h builds train.py's iteration on top.
 *
 * A training pass, step by step in the schedule's order:
 *   - forward: each tensor a step writes first is allocated before it (activations, saved
 *     values, BN statistics, maxpool indices); a weight's low-precision copy before the first
 *     forward step that reads it; Detect writes each level as PyTorch does, the conv's output,
 *     then its permuted contiguous copy (the level's output), then frees the conv's output;
 *   - a tensor is freed after its last reader (a saved value after its last backward reader,
 *     as autograd releases a node's saved tensors once the node has run), except what Python
 *     still holds: the outputs of the layers YOLOv5's forward keeps in its `y` list (the
 *     layers a later layer reads other than the next) live until the forward returns, and the
 *     Detect outputs, with hold_outputs, until the next pass's forward has returned (the
 *     caller's `y = model(x)` or `pred = model(imgs)` rebinds them only then);
 *   - the loss: AutoBatch's sum of the outputs (its backward hands each Detect conv an
 *     expanded gradient, which the conv makes contiguous: the schedule's output gradients), or
 *     train.py's ComputeLoss (below);
 *   - backward: a gradient a step adds to one that exists is first a tensor of its own, freed
 *     after the step (autograd's input buffers add a second contribution); a weight gradient
 *     under autocast is computed for the fp16 copy, cast to fp32, and either becomes .grad
 *     (the first backward after .grad was None) or is added into .grad and freed; Detect's
 *     backward, under ComputeLoss, copies each level's gradient to the conv's layout first.
 * ComputeLoss under autocast (utils/loss.py), with L label rows in the batch: the targets
 * (L x 6 fp32); build_targets with every (label, anchor) pair matched and every positive given
 * both neighbour cells (9 positives per label per level: an upper bound; real batches match
 * fewer), its transients and the indices, boxes and anchors it keeps (64 bytes a positive); per
 * level the fp16 objectness target, the gathered predictions (fp16, 85 a positive) and the fp32
 * casts BCE-with-logits saves (the objectness logits and target, B x na x H x W each; the class
 * logits and targets, nc a positive), three map-sized fp32 transients inside BCE, and ~40 fp32
 * values a positive for the CIoU. Its backward gives each level's output gradient from the two
 * paths that read it (the objectness slice and the gathered positives), the second added into
 * the first. Byte-exact where the shapes say so; the positive counts and the CIoU's small
 * tensors are estimates.
 * cuDNN's workspaces come from the allocator too, in sizes of its own choosing: the forward and
 * input-gradient ones are not modelled (a constant or a per-conv term made the published probes,
 * which compute no weight gradient, fit worse), the weight-gradient one is an option (wgrad_ws).
 * Under cudnn.benchmark a conv's first call at a shape searches cuDNN's algorithms first, in a
 * workspace of cuDNN's choosing, and PyTorch empties the cache after the search: the emptying is
 * in the replay (yp_torch_state.find), the search's workspace is not.
 * Not in the sequence: the parameters, BN statistics, optimizer state
 * and EMA (the caller allocates them), and the tensors of a few bytes (loss scalars, shapes).
 *
 * Ownership: the caller owns the allocator and the state; yp_torch_state_init allocates the
 * state's arrays, yp_torch_state_free frees them (not the blocks they name). */
#ifndef YP_TORCH_REPLAY_H
#define YP_TORCH_REPLAY_H

#include "yp_schedule.h"
#include "yp_torch_alloc.h"

/* What a pass keeps across passes: per tensor of the schedules it serves (same parameters, so
 * the same tensor indices for gradients and copies), and the Detect outputs Python holds. */
typedef struct {
    int n;       /* tensors of the schedule it was made for */
    int *grads;  /* .grad of each gradient tensor (-1: None) */
    int *copies; /* autocast's cached copy of each LOWP tensor (-1: none cached) */
    int outputs[YP_MAX_LEVELS], n_outputs; /* the last held Detect outputs (raw, per level) */
    int weights_no_grad; /* the cached copies carry no grad_fn (cast under no_grad): the convs
                          * compute no weight gradient (AutoBatch after thop; see the probe) */
    int find;            /* cudnn.benchmark: the convs of the next passes meet shapes the
                          * benchmark cache lacks (YP_TORCH_FIND_*), so each conv searches its
                          * algorithms first and PyTorch empties the cache after the search;
                          * a pass clears the bits it served */
} yp_torch_state;

enum { YP_TORCH_FIND_FWD = 1, YP_TORCH_FIND_BWD = 2 };

int yp_torch_state_init(yp_torch_state *st, const yp_schedule *s, yp_err *err);
void yp_torch_state_free(yp_torch_state *st);
/* Frees every block the state names (gradients, copies, held outputs) and forgets them. */
int yp_torch_state_drop(yp_torch_state *st, yp_torch_alloc *a, yp_err *err);

typedef enum {
    YP_TORCH_LOSS_SUM,  /* AutoBatch: backward of the sum of every output */
    YP_TORCH_LOSS_YOLO, /* train.py: ComputeLoss on `labels` label rows */
} yp_torch_loss;

typedef struct {
    yp_torch_loss loss;
    int64_t labels;          /* label rows in the batch (YOLO) */
    int cache_weight_copies; /* the copies stay allocated after the pass, in st->copies (one
                              * autocast context over several passes, as AutoBatch's) */
    int hold_outputs;        /* the Detect outputs stay allocated (st->outputs) until the next
                              * pass's forward has returned */
    double wgrad_ws;         /* cuDNN's workspace in a backward conv step that computes its
                              * weight gradient: wgrad_ws x the bytes of the step's input and
                              * output gradient, allocated and freed inside the step (0: none;
                              * yp_torch_train.h says what it uses and why) */
} yp_torch_pass_opts;

/* Replays one forward and backward of s (a training schedule of the pytorch policy) through a.
 * Returns 0; 1 when the allocator ran out of its capacity (the pass stops there, its own
 * blocks freed); -1 with err set on a schedule of another policy or an evaluation pass, a
 * state made for other parameters, or an allocator error. */
int yp_torch_replay_pass(const yp_schedule *s, yp_torch_alloc *a, const yp_torch_pass_opts *o, yp_torch_state *st,
                         yp_err *err);

/* An inference pass (no_grad) over the forward steps of a training schedule s:
 *   autocast: under autocast: the image's low-precision cast is allocated before the first
 *             conv and freed after it, and each weight copy is cast (and cached in st->copies,
 *             where it stays: a no_grad cast has no grad_fn, so the state's weights_no_grad is
 *             set); without it the weights and the image are the dtype s was built for (the
 *             caller made them so: validation's model.half() and im.half());
 *   decode:   Detect in eval mode decodes each level (sigmoid, grid arithmetic, cat) and
 *             returns the boxes of every level concatenated (*decoded, the caller frees it)
 *             beside the raw outputs;
 *   hold_outputs: the raw outputs stay in st->outputs (the previous ones are freed once this
 *             forward has returned); else they are freed when it returns.
 * BatchNorm runs in eval mode (running statistics: validation's model and thop's model.eval()).
 * Activations are freed after their last forward reader, the `y` list's at the end. Returns as
 * yp_torch_replay_pass. */
typedef struct {
    int autocast, decode, hold_outputs;
} yp_torch_infer_opts;

int yp_torch_replay_infer(const yp_schedule *s, yp_torch_alloc *a, const yp_torch_infer_opts *o, yp_torch_state *st,
                          int *decoded, yp_err *err);

/* ComputeLoss without gradients (val.py computes it on the raw outputs under no_grad, in the
 * outputs' dtype): its tensors allocated and freed in order. Returns as yp_torch_replay_pass. */
int yp_torch_replay_val_loss(const yp_schedule *s, yp_torch_alloc *a, int64_t labels, yp_err *err);

/* ---------------------------------------------------------------- AutoBatch's probe */

/* What is on the device when AutoBatch starts, as train.py leaves it (each term allocated in
 * this order through the same allocator, so the probe reuses what it left cached):
 *   NONE:  nothing (the probe alone: its readings are what it adds);
 *   V6:    train.py of YOLOv5 v6.0 (October 2021, PR 5092's run, with cudnn.benchmark on:
 *          opts.cudnn_benchmark): the model; the checkpoint
 *          loaded onto the GPU (map_location=device: its fp16 tensors), converted to fp32 by
 *          ckpt['model'].float() (each fp16 tensor freed as its fp32 one is made), kept until
 *          after AutoBatch (del ckpt, csd comes later); AutoBatch's deep copy;
 *   HEAD:  train.py today: the model (the checkpoint is loaded on the CPU); check_amp's two
 *          batch-1 inferences on a 640x480 image (fp32, then under autocast, whose copies go
 *          when the context exits); AutoBatch's deep copy.
 * Parameters and buffers are one block each (BN's num_batches_tracked included), in module
 * order. */
typedef enum { YP_TORCH_PRIOR_NONE, YP_TORCH_PRIOR_V6, YP_TORCH_PRIOR_HEAD } yp_torch_prior;

typedef struct {
    yp_torch_prior prior;
    int thop;          /* thop is installed: profile() counts FLOPs with an eval-mode no_grad
                        * forward of the model first, at every batch */
    int cast_fix;      /* PyTorch with pytorch/pytorch#165068 (merged December 2025): a cast
                        * cached under no_grad keeps its autograd history, so the passes after
                        * thop's compute weight gradients; before it (every published probe)
                        * they compute none (pytorch/pytorch#65766, #112583) */
    int64_t capacity;  /* what cudaMalloc can give (0: no limit); a batch that does not fit is a
                        * failed row, as profile() records None for it */
    int cudnn_benchmark; /* torch.backends.cudnn.benchmark=True (train.py up to v6.2 set it:
                          * init_seeds(1 + RANK)); each batch's new shapes make every conv
                          * search its algorithms once per direction (yp_torch_state.find) */
} yp_torch_probe_opts;

/* AutoBatch's defaults for a prior: thop on (YOLOv5's requirements install it), the fix off,
 * no capacity. */
yp_torch_probe_opts yp_torch_probe_opts_default(yp_torch_prior prior);

/* One row of the probe: torch.cuda.memory_reserved() (and memory_allocated()) after three
 * forward+backward passes at this batch, in bytes, and the peak of memory_allocated. */
typedef struct {
    int64_t batch, reserved, allocated, peak_allocated;
    int failed; /* out of memory (the other fields are 0) */
} yp_torch_probe_row;

/* What AutoBatch logs before it probes (bytes). */
typedef struct {
    int64_t reserved, allocated;
} yp_torch_probe_start;

/* AutoBatch's probe (utils/autobatch.py, utils/torch_utils.py profile) of g at img x img with
 * activations of act (F16 under autocast, F32 without), for batches[0..n): after the prior,
 * per batch an fp32 input that requires grad, thop's forward (opts->thop), three
 * forward+backward passes of the sum of the outputs (y held from one pass into the next and
 * across batches, as profile's loop keeps it), the reading, the input dropped and empty_cache.
 * The weight copies stay cached over the whole probe (one autocast context). rows[i] gets batch
 * i's reading; *start (may be NULL) what AutoBatch logs first. 0 (failed rows included), or -1
 * with err set (also when the prior itself does not fit). */
int yp_torch_autobatch_probe(const yp_graph *g, int64_t img, yp_dtype act, const yp_torch_probe_opts *po,
                             const int64_t *batches, int n, yp_torch_probe_row *rows, yp_torch_probe_start *start,
                             yp_err *err);

#endif
