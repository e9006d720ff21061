/* yp_torch_train.h - what Ultralytics YOLOv5's train.py (PyTorch eager, AMP on CUDA by default,
 * SGD, EMA, validation every epoch) takes on the GPU, replayed through the caching-allocator
 * model (yp_torch_alloc.h) with the passes of yp_torch_replay.h; the --batch to pass; what
 * AutoBatch would pick instead; and train.py's own remedies for a given --batch.
 *
 * The sequence (train.py and val.py as of YOLOv5 v7.0 and today's master, PyTorch 2.x):
 *   setup: the model (fp32 parameters and buffers); check_amp's two batch-1 inferences (with
 *     AMP); the EMA's deep copy; model.half().float() (every tensor re-made twice); the
 *     GradScaler's two scalars;
 *   a training iteration: the uint8 batch, its float copy and the /255 result (the previous
 *     iteration's batch freed once the new one exists); with --multi-scale the batch
 *     interpolated to the iteration's size; the training pass under autocast with ComputeLoss
 *     (yp_torch_replay_pass: what autograd saves is yp_torch_saved's, the loss tensors grow with
 *     the label rows); `pred` held into the next iteration; on an optimizer step: unscale_,
 *     clip_grad_norm_'s per-parameter norms, SGD (foreach: the weight-decayed group's
 *     grad + wd * param copies; momentum buffers made at the first step) or Adam/AdamW (two
 *     moments; the sqrt copies), zero_grad (set_to_none: .grad freed; kept between the
 *     iterations of an accumulation), the EMA update (one transient per state tensor);
 *   the iterations replayed: epoch 0: a step, an iteration that accumulates when
 *     accumulate = round(64 / batch) > 1 (else a step), a step; validation; epoch 1: an
 *     accumulating iteration (or a step) and a step (with --multi-scale epoch 0's second
 *     iteration runs at the largest size);
 *   validation (val.run from train.py: the EMA model, batch 2x, half=amp): model.half() on the
 *     EMA; four batches of the rectangular loader, whose largest side is ceil(img / 32 + 0.5) *
 *     32 (its pad 0.5) and whose other side is 3/4, 4/5, 7/8 and 1 of it (an assumption: the
 *     loader sorts images by aspect ratio, so batches come in a spread of shapes, and the
 *     distinct shapes fragment the cache; a dataset of one aspect ratio fragments less); per batch the uint8 images,
 * their fp16 (fp32 without AMP) copy, the inference pass with Detect's decode (the previous batch's raw outputs still
 * held), ComputeLoss without gradients, NMS (its candidates bounded by val.py's own cap: every prediction above conf
 * 0.001 and 30000 (box, class) rows into torchvision's nms, whose mask is n * ceil(n / 64) int64: an upper bound);
 * model.float(). reserved never shrinks unless PyTorch releases its cache to satisfy a request (near the capacity):
 * GPU_mem in epoch 0 is the highest reading after its iterations, from epoch 1 on it also holds what validation added.
 * cuDNN's weight-gradient workspace is an estimate: YP_TORCH_WGRAD_WS x the bytes of each such
 * conv's input and output gradient (one copy of both, as a conversion of the NCHW tensors to the
 * layout of the tensor-core kernels would take). AutoBatch's probes, which compute no weight
 * gradient, match the published ones without it; train.py's published GPU_mem is 14-18 % above
 * the replay without it, and within 10 % with it (tests/planner/test_torch_published.c). Its factor is
 * fitted to those rows, not derived from cuDNN.
 * Not modelled: the other cuDNN workspaces, cuBLAS's (yolov5 runs no cuBLAS op), the DataLoader (host memory), plots
 * and loggers, and the tensors of a few bytes (losses, scalars). What nvidia-smi shows on top of reserved is
 * yp_torch_context_bytes.
 */
#ifndef YP_TORCH_TRAIN_H
#define YP_TORCH_TRAIN_H

#include "yp_gpu.h"
#include "yp_torch_replay.h"

typedef struct {
    int64_t batch, img;          /* train.py --batch-size, --img (a multiple of the model's stride) */
    int amp;                     /* AMP (train.py's default on CUDA when check_amp passes) */
    yp_optimizer optimizer;      /* --optimizer SGD (default), Adam, AdamW */
    int freeze;                  /* --freeze N: layers 0..N-1 get no gradients */
    double labels_per_image;     /* label rows per training image after augmentation (mosaic
                                  * gathers 4 images: about 4x the dataset's mean) */
    double val_labels_per_image; /* per validation image */
    int multi_scale;             /* --multi-scale: one iteration at the largest size, 1.5x img */
    int val;                     /* validate (train.py does every epoch, and with --noval at the end) */
    int64_t capacity;            /* bytes cudaMalloc can give PyTorch (0: no limit) */
} yp_torch_train_opts;

#define YP_TORCH_WGRAD_WS 1.0

/* Defaults: batch 16, img 640, AMP, SGD, no freeze, COCO's 7.3 labels per image (x4 in
 * training for mosaic), validation, no limit. */
yp_torch_train_opts yp_torch_train_opts_default(void);

typedef enum { YP_TORCH_AT_SETUP, YP_TORCH_AT_TRAIN, YP_TORCH_AT_VAL } yp_torch_at;
const char *yp_torch_at_name(yp_torch_at at); /* "setup", "train", "val" */

typedef struct {
    int oom;                  /* ran out of capacity ... */
    yp_torch_at oom_at;       /* ... there */
    int64_t gpu_mem_epoch0;   /* memory_reserved() as train.py prints it after each iteration of
                               * epoch 0, the highest of its readings (bytes) */
    int64_t gpu_mem_later;    /* ... of epoch 1 (after the first validation) */
    int64_t train_peak_allocated, train_peak_reserved; /* over epoch 0's iterations */
    int64_t val_peak_allocated, val_peak_reserved;     /* over validation */
    int64_t peak_allocated, peak_reserved;             /* over the whole sequence */
    yp_torch_at peak_at;      /* where reserved reached its peak first (train or val) */
    int64_t model_bytes, ema_bytes, grad_bytes, optim_bytes; /* persistent state (rounded) */
    int64_t val_batch, val_img, train_img_max; /* validation's batch and square size; the
                                                * largest training size (multi-scale) */
    int accumulate;           /* train.py's max(round(64 / batch), 1) */
} yp_torch_train_result;

/* Replays train.py for g under o. 0 (r->oom says whether it ran out of capacity), or -1 with
 * err set. */
int yp_torch_train_replay(const yp_graph *g, const yp_torch_train_opts *o, yp_torch_train_result *r, yp_err *err);

/* ---------------------------------------------------------------- the card */

/* What nvidia-smi shows for the process on top of memory_reserved(): the CUDA context (with
 * lazy module loading) and the library handles and kernels, i.e. the card's fixed cost
 * (yp_gpu.h, planner/gpu.c documents each term) without the driver's reserve, which nvidia-smi
 * does not count as used. An estimate per card (its SM count sizes the context's stacks). */
int64_t yp_torch_context_bytes(const yp_gpu *gpu);

/* What cudaMalloc can give PyTorch on the card: cuda_total_bytes less the context. */
int64_t yp_torch_capacity(const yp_gpu *gpu);

/* ---------------------------------------------------------------- AutoBatch */

/* AutoBatch's choice (utils/autobatch.py) from its probe: t, r, a in bytes (total_memory and
 * what was reserved and allocated when it started), rows as yp_torch_autobatch_probe gives them
 * (their reserved bytes read as GB, 1e9, as profile() does), fraction 0.8 today (0.9 until
 * PR 9212). f = t - (r + a) in GiB; a straight line through the rows that did not fail, paired
 * with the first batch sizes (as np.polyfit(batch_sizes[:len(y)], y) does); b =
 * int((f * fraction - intercept) / slope); a failed size at or below b takes the size before
 * the first failure; b outside 1..1024 falls back to 16 (*anomaly set). *predicted gets the
 * fraction it logs ((line(b) + r + a) / t, GB over GiB as it computes it; may be NULL). Returns b,
 * or -1 when no row succeeded (AutoBatch itself would raise in polyfit). */
int64_t yp_torch_autobatch_pick(int64_t t, int64_t r, int64_t a, const yp_torch_probe_row *rows, int n,
                                double fraction, int *anomaly, double *predicted);

/* ---------------------------------------------------------------- the advice */

/* The largest --batch in 1..max_batch that trains and validates (yp_torch_train_replay without
 * running out) when PyTorch may use capacity * (1 - margin): margin is the part of the memory
 * kept free for what the model does not see. Searched by bisection (the need grows with the
 * batch). *batch = 0 when even batch 1 does not fit; *at (may be NULL) the replay at *batch.
 * 0, or -1 with err set. */
int yp_torch_recommend(const yp_graph *g, const yp_torch_train_opts *base, int64_t capacity, double margin,
                       int64_t max_batch, int64_t *batch, yp_torch_train_result *at, yp_err *err);

/* The margin yp_torch_recommend is given by the command line: 10 % of what PyTorch can use,
 * the bound on the error per published figure. */
#define YP_TORCH_MARGIN 0.10

/* One of train.py's own remedies for a configuration (base): its flag, the configuration it
 * gives and what the replay predicts for it. */
typedef struct {
    char flag[48];          /* "--batch-size 24", "--img 512", "--freeze 10", "--optimizer Adam",
                             * "no --multi-scale" */
    yp_torch_train_opts opts;
    yp_torch_train_result r; /* on the card with the margin kept free (GPU_mem, peak, oom) */
    int64_t need;           /* the peak of memory_allocated without a limit: no cache does with less */
    int64_t saves;          /* the base's need - this need (negative: it costs memory) */
    int fits;               /* no out-of-memory with the margin kept free */
} yp_torch_remedy;

#define YP_TORCH_MAX_REMEDIES 8

/* The remedies that apply to base (each alone): rec_batch, the recommended batch (when smaller), the
 * largest --img that fits at this batch (when smaller), --freeze 10 (the backbone; when not
 * frozen already), the other optimizers (SGD's state is the smallest: Adam and AdamW show what
 * they cost), and no --multi-scale (when on). *n gets their count. 0, or -1 with err set. */
int yp_torch_remedies(const yp_graph *g, const yp_torch_train_opts *base, int64_t capacity, double margin,
                      int64_t rec_batch, yp_torch_remedy *out, int *n, yp_err *err);

#endif
