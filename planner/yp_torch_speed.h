/* yp_torch_speed.h - how fast Ultralytics YOLOv5's train.py (PyTorch eager, AMP, SGD, EMA,
 * validation every epoch) trains on a card: images per second, seconds per epoch with its
 * validation, and hours for the run. A per-op model of eager PyTorch over the same pytorch-policy
 * schedule the memory replay walks (yp_torch_replay.h), every kernel timed by the roofline of
 * yoloplan's own cost model (yp_cost.h: convolutions at the card's tensor-core rate under AMP,
 * everything else bandwidth-bound, the per-launch gap) and every op given eager PyTorch's CPU
 * cost of dispatching it.
 *
 * One iteration, in train.py's order:
 *   - the batch: its uint8 copy to the GPU over PCIe (pinned, non_blocking: on the stream),
 *     .float() and / 255;
 *   - the forward under autocast: per step of the schedule its kernels; each conv weight cast to
 *     fp16 (autocast's cache lasts one forward); BatchNorm in training mode also counts
 *     num_batches_tracked += 1;
 *   - ComputeLoss (utils/loss.py): build_targets and the per-level loss are many small ops
 *     (YP_TORCH_LOSS_OPS_PER_LEVEL), on the GPU a few passes over each level's output and its
 *     objectness map;
 *   - the backward: per step its kernels (a conv: input and weight gradients); under AMP each
 *     weight gradient is cast to fp32 (the fp16 copy's ToCopyBackward); AccumulateGrad adds into
 *     .grad on the iterations of an accumulation after the first;
 *   - every accumulate = max(round(64 / batch), 1) iterations, the optimizer step (its cost
 *     amortised over them): GradScaler's unscale_ (foreach), clip_grad_norm_ (foreach norm and
 *     scale), scaler.step (found_inf read on the host: a sync), SGD with nesterov and weight
 *     decay in foreach form (torch 2.x default on CUDA: five multi-tensor calls per parameter
 *     group, three groups), scaler.update, zero_grad (set_to_none, host only), and ModelEMA.update
 *     (a Python loop over the state_dict: three ops per floating tensor, parameters and BN
 *     running statistics);
 *   - train.py's per-iteration bookkeeping (mloss, tqdm's description: a sync).
 * The host and the GPU are two timelines: the host issues each op after the previous one's
 * dispatch cost, the GPU runs it when both the host has issued it and the GPU is free; a sync
 * waits for the GPU. So small models are bound by dispatch (the floor), large ones by kernels.
 * The loader bounds the rate at workers x the images per second one worker delivers, and when
 * the workers and the training process need more cores than the machine has, at cores / (a
 * worker's seconds per item + the host's seconds per image); with no workers (--workers 0) the
 * training process loads each batch between iterations: 1 / (seconds per item + the host's
 * seconds per image).
 *
 * Validation (val.run from train.py, every epoch): the EMA model in fp16 (model.half(), no
 * autocast casts), BN in eval mode, at twice the batch; per batch the copy, the forward, Detect's
 * decode, ComputeLoss without gradients, then NMS and the metrics on the host at
 * YP_TORCH_NMS_S_PER_IMAGE a image (the YOLOv5 README: "NMS times (~1 ms/img)"; val.py's
 * conf 0.001 keeps more boxes than that figure's 0.25: a lower bound). The rectangular batches
 * are taken as img x img (an upper bound on their area).
 *
 * Estimates (global, not fitted per published row; tests/planner/test_torch_speed.c checks the whole
 * against the published figures in tests/data/torch_speed_published.tsv):
 *   YP_TORCH_FWD_OP_CPU_S: host seconds eager PyTorch spends on one forward op: Python, the
 *     nn.Module call, autocast, the dispatcher, autograd's node and the launch. Public
 *     breakdowns put the CPU side of one eager op at 5-25 us ("From PyTorch op to kernel
 *     launch", jiahuanglin.xyz, gpu_kernel_serving lesson 18; the overhead regime of
 *     horace.io/brrr_intro.html); 15 us is the middle.
 *   YP_TORCH_BWD_OP_CPU_S: one backward op, run by autograd's C++ engine (no Python): the
 *     dispatcher and the launch, the low end of the same range.
 *   YP_TORCH_FOREACH_TENSOR_CPU_S: a multi-tensor (foreach) call's host cost per tensor in its
 *     lists (train.py's optimizer builds the lists in Python per step).
 *   YP_TORCH_LOSS_OPS_PER_LEVEL: ComputeLoss's ops per detection level, forward (build_targets'
 *     matching, offsets and gathers, then the CIoU, the BCEs and their casts; counted from
 *     utils/loss.py, rounded); its backward runs half as many.
 *   YP_TORCH_LOSS_MAP_PASSES: fp32 passes over each level's objectness map (B x na x H x W) in
 *     the loss, forward and backward; YP_TORCH_LOSS_OUTPUT_PASSES: passes over each level's
 *     output (one read in forward; in backward the two gradient paths written and added).
 *   YP_TORCH_H2D_GBS: pinned host-to-device copy over PCIe 3.0 x16, GB/s (about 12 of its 15.8).
 *   YP_TORCH_ITER_HOST_S: train.py's loop per iteration outside the model (mloss, tqdm, the
 *     loader's queue), host seconds.
 *   YP_TORCH_DECODE_S_PER_IMAGE / YP_TORCH_MOSAIC_ITEM_S / YP_TORCH_CACHED_ITEM_S /
 *     YP_TORCH_VAL_ITEM_S: one loader worker's seconds per item: a training item with mosaic at
 *     640 from disk is four cv2.imread (6.5 ms each) and 12 ms of mosaic, random_perspective,
 *     HSV and flips, as bench/README.md measured Ultralytics' own loader on one core (a quiet
 *     moment of the project's 2-core machine; a faster core delivers more); --cache ram skips
 *     the reads; a validation item is one read and a letterbox.
 * Not modelled: cudnn.benchmark's first-iteration search, the warm-up epochs' changing
 * learning rate (no cost), checkpoint saving and plots at each epoch's end, multi-scale,
 * DDP, and how fast the machine's cores are (the per-item figures are one machine's). */
#ifndef YP_TORCH_SPEED_H
#define YP_TORCH_SPEED_H

#include "yp_gpu.h"
#include "yp_schedule.h"

#define YP_TORCH_FWD_OP_CPU_S 15e-6
#define YP_TORCH_BWD_OP_CPU_S 8e-6
#define YP_TORCH_FOREACH_TENSOR_CPU_S 0.3e-6
#define YP_TORCH_LOSS_OPS_PER_LEVEL 80
#define YP_TORCH_LOSS_MAP_PASSES 12
#define YP_TORCH_LOSS_OUTPUT_PASSES 4
#define YP_TORCH_NCHW_PASSES 1.0
#define YP_TORCH_H2D_GBS 12.0
#define YP_TORCH_ITER_HOST_S 1e-3
#define YP_TORCH_NMS_S_PER_IMAGE 1e-3
#define YP_TORCH_DECODE_S_PER_IMAGE 6.5e-3
#define YP_TORCH_AUGMENT_ITEM_S 12e-3
#define YP_TORCH_MOSAIC_ITEM_S (4 * YP_TORCH_DECODE_S_PER_IMAGE + YP_TORCH_AUGMENT_ITEM_S)
#define YP_TORCH_CACHED_ITEM_S YP_TORCH_AUGMENT_ITEM_S
#define YP_TORCH_VAL_ITEM_S (YP_TORCH_DECODE_S_PER_IMAGE + 1.5e-3)

/* COCO (train2017 / val2017): the dataset assumed without --data. */
#define YP_TORCH_COCO_TRAIN_IMAGES 118287
#define YP_TORCH_COCO_VAL_IMAGES 5000

typedef enum { YP_TORCH_BOUND_GPU, YP_TORCH_BOUND_HOST, YP_TORCH_BOUND_LOADER } yp_torch_bound;
const char *yp_torch_bound_name(yp_torch_bound b); /* "GPU kernels", "host dispatch", "data loader" */

typedef struct {
    /* in */
    const yp_gpu *gpu;
    int64_t batch, img;
    int amp;                   /* autocast fp16 (train.py's default on CUDA) */
    int freeze;                /* --freeze N */
    int cpus;                  /* the machine's CPUs: train.py's workers = min(cpus, batch,
                                * --workers), validation's min(cpus, 2 x batch, 2 x --workers)
                                * (yp_torch_host.h); 0: unknown, the loader is no bound */
    int workers_opt;           /* train.py's --workers (YP_TORCH_DEFAULT_WORKERS, 8, by default;
                                * 0: the training process loads each batch itself) */
    int cores;                 /* the physical cores behind those CPUs (0: as many as cpus; a
                                * vCPU that is a hyperthread shares its core): the workers and
                                * the training process share them */
    int cache;                 /* --cache ram: the loader decodes no image */
    int64_t train_images, val_images; /* per epoch (val 0: --noval) */
    int epochs;
    double labels_per_image;   /* label rows per training image after mosaic */
    /* out */
    int accumulate, workers, val_workers;
    double fwd_s, loss_s, bwd_s;   /* GPU seconds of one iteration's forward, loss, backward */
    double step_s;                 /* GPU seconds of one optimizer step with the EMA update */
    double host_s;                 /* host seconds of one iteration (the step's share included) */
    double iter_s;                 /* one iteration, the two timelines together (step's share) */
    double gpu_images_per_s;       /* what the GPU and the host sustain, the loader aside */
    double loader_images_per_s;    /* 0 when unknown (cpus 0) */
    double train_images_per_s;     /* the smaller of the two */
    yp_torch_bound bound;
    double val_batch_s;            /* one validation batch (forward, decode, loss, NMS; or what
                                    * its loader takes to deliver it, when longer) */
    double val_s, train_s, epoch_s;/* per epoch */
    double hours;                  /* epochs x epoch_s */
} yp_torch_speed;

/* Fills the outputs of sp from its inputs for g. 0, or -1 with err set. */
int yp_torch_speed_predict(const yp_graph *g, yp_torch_speed *sp, yp_err *err);

/* Seconds of one inference forward of g (no_grad, fp16 weights and images when half, BN folded
 * into the convs when fused, as val.py --task speed runs it) at batch x img x img, without NMS.
 * 0, or -1 with err set. */
int yp_torch_speed_infer(const yp_graph *g, const yp_gpu *gpu, int64_t batch, int64_t img, int half, int fused,
                         double *seconds, yp_err *err);

#endif
