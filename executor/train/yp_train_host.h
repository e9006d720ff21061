/* yp_train_host.h - the host memory of a training run (yp_train_run, `yoloplan train`), term by
 * term: the figure the plan line prints as "host memory" and what a CPU plan's arena budget leaves
 * room for. Every term but two is what the code allocates and touches, computed by the function
 * that sizes the allocation itself (the pipeline's are the planner's, planner/yp_host_mem.h, which
 * the loaders and the caches allocate by):
 *   arena         the plan's arena_bytes when it lives in host memory (the CPU backend; yp_exec_init
 *                 zeroes all of it, so all of it is resident); 0 on a device;
 *   train_loader  yp_loader_host_bytes of the training loader (yp_train_loader_opts): its ring of
 *                 batch slots, the workers' augmentation workspaces, the epoch orders;
 *   train_input   yp_host_input_bytes: the float batch yp_train_run hands the executor, batch x S x
 *                 S x 3 floats, and with --multi-scale the batch resized, batch x M x M x 3 floats at
 *                 the largest size train.py draws, M = (int(1.5 S) + gs - 1) // gs * gs;
 *   val           yp_validator_host_bytes: its loader at 2 x batch (a ring and float batch no larger
 *                 than the split), Detect's decoded rows, the NMS workspace, the mAP tables;
 *   decoders      the loaders' yp_loader_bytes.decoders: per worker of each loader that decodes
 *                 (none reading the --cache ram images), the image it holds decoded and the file's
 *                 bytes while decoding, each taken as S x S x 3 (the label scan does not record image
 *                 sizes: originals larger than S need (w h / S^2) times as much);
 *   cache         with --cache ram the images of both splits at load_image's size: what the filled
 *                 caches hold, or before they are filled yp_host_cache_bytes, n x S x S x 3 each
 *                 (every long side is S).
 * The two measured terms:
 *   baseline      the process's resident bytes before the arena is touched (yp_process_rss_bytes:
 *                 VmRSS from /proc/self/statm): the libraries' pages loaded so far, the model, the
 *                 plan's own tables and the label tables, and oneDNN's primitives with their JIT code
 *                 once yp_exec_init has built them (it measures x->rss_before_arena just before it
 *                 zeroes the arena). Before the executor exists (planning) the caller measures it
 *                 then, which leaves out the primitives (about 12 MiB for yolov5n);
 *   runtime       YP_TRAIN_HOST_RUNTIME: what a run adds after that which is none of the above,
 *                 measured with /proc/self/status around each stage of a yolov5n run at 320 on 2
 *                 threads (bench/host_memory.sh): library code pages first touched by the step and
 *                 validation (about 2.5 MiB), the checkpoint writer's staging (the plan's JSON tree and
 *                 text, the safetensors header: about 6 MiB at its peak, more for a larger plan) and
 *                 PLplot's cairo driver with its fonts for results.png (about 8 MiB).
 * Only touched pages count in RSS, so each term is what is written, not merely reserved.
 * Defines: YP_TRAIN_HOST_RUNTIME, yp_train_host, yp_eval_shape_for, yp_train_host_estimate
 * (yp_process_rss_bytes is yp_executor.h's). */
#ifndef YP_TRAIN_HOST_H
#define YP_TRAIN_HOST_H

#include <stdint.h>

#include "yp_train.h"

#define YP_TRAIN_HOST_RUNTIME (16LL << 20)

typedef struct {
    int64_t arena, baseline;
    int64_t train_loader, train_input;
    yp_val_host val; /* zero without a validation split */
    int64_t decoders;
    int64_t cache;    /* --cache ram: the training and validation images kept decoded */
    int64_t runtime;
    int64_t pipeline; /* train_loader + train_input + val.total + decoders + cache: the data pipeline */
    int64_t total;    /* arena + baseline + pipeline + runtime */
} yp_train_host;

/* The validation pass's shape for graph g trained at batch and square imgsz (what the planner
 * plans validation at: 2 x batch, val.py's largest rect side S = ceil(imgsz / 32 + 0.5) * 32 (the
 * stride 64 for P6 models), boxes na x sum over levels (S / stride)^2, nc + 5 fields):
 * yp_exec_eval_shape of the plan, known before planning. */
yp_eval_shape yp_eval_shape_for(const yp_graph *g, int64_t batch, int64_t imgsz);

/* The estimate for training o on g at batch and square imgsz (multi_scale: --multi-scale) from
 * epoch first_epoch on, with the given host-resident arena bytes (0: none or not yet known) and the
 * measured baseline. 0, or -1 with err set (bad sizes, an empty split). */
int yp_train_host_estimate(const yp_graph *g, const yp_train_opts *o, int64_t batch, int64_t imgsz, int multi_scale,
                           int64_t first_epoch, int64_t arena, int64_t baseline, yp_train_host *h, yp_err *err);

#endif
