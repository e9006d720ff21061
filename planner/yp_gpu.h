/* yp_gpu.h - the GPU a plan is made for: memory, peak rates and bandwidth from a documented table
 * of common cards (planner/gpu.c cites a source for every row), or a bare memory size.
 *
 * What --gpu accepts (yp_gpu_parse):
 *   - a card name, case-insensitive, with or without '-', '_', spaces and an "NVIDIA"/"GeForce"/
 *     "Tesla" prefix: "rtx3070", "RTX-3070", "3070", "NVIDIA GeForce RTX 3070", "t4", "Tesla T4",
 *     "a100" (= a100-40gb: of two memory sizes the smaller is the safe reading), "a100-80",
 *     "v100" (= v100-16gb), "h100", "h200", "l4", "1080ti". yp_gpu_list_names() lists the ids.
 *   - a memory size: a decimal number, optional spaces, a unit (case-insensitive):
 *       GB, GiB, G  = 2^30 bytes    MB, MiB, M = 2^20 bytes    TB, TiB, T = 2^40 bytes
 *     GB means GiB because that is how cards are sold: a vendor's "8 GB" card has 8192 MiB of
 *     memory chips, and nvidia-smi shows it as 8192MiB. So 8GB == 8GiB == 8192MiB == 8*2^30 bytes
 *     and 7.5G == 7.5*2^30 bytes (rounded to whole bytes). At most 4 TiB. A bare number ("8") is
 *     refused: it would be unclear whether it means GiB or a card ("3070" is a card).
 *   - not "auto": detection needs CUDA, so the command line asks the device for its name and
 *     total memory and calls yp_gpu_from_device(); yp_gpu_parse("auto") is an error.
 *
 * A bare size is read as the card's total, as marketed. Its compute figures are those of the
 * table's RTX 3070 (a mid-range Ampere card: 20.3 TFLOP/s FP32 and TF32, 40.6 FP16/BF16 tensor,
 * 448 GB/s), so step times for a bare size are those of such a card; only the memory is the user's.
 *
 * fixed_bytes is device memory the arena can never use, so the arena budget is
 * mem_bytes - fixed_bytes. It is an estimate (gpu.c, gpu_fixed_bytes, documents each term):
 *   - memory the driver keeps from the marketed size (ECC, page tables, firmware): the marketed
 *     size minus the total that cudaMemGetInfo reports, per table row; 3 % of a bare size;
 *     none for yp_gpu_from_device, whose total already is cudaMemGetInfo's;
 *   - the CUDA context with lazy module loading (CUDA >= 11.7; the default since 12.2): a base
 *     plus the per-thread stack reserved for every resident thread of every SM;
 *   - the cuBLAS workspace (4 MiB; 32 MiB on Hopper) and cuDNN handle + lazily loaded kernels.
 *   Where a GPU exists the command line should measure it instead (cudaMemGetInfo before and after
 *   creating the context and handles) and overwrite fixed_bytes.
 */
#ifndef YP_GPU_H
#define YP_GPU_H

#include <stddef.h>
#include <stdint.h>

#include "yp_error.h"

typedef struct {
    char name[32];       /* canonical id: "rtx3070", "t4", "a100-40gb", "h200", or "8GiB" for a bare size */
    char desc[64];       /* "NVIDIA GeForce RTX 3070" / "generic GPU with 8 GiB" */
    int64_t mem_bytes;   /* total device memory */
    double fp32_tflops;  /* dense FP32 (CUDA cores) */
    double tf32_tflops;  /* dense TF32 tensor-core rate, 0 if none (pre-Ampere) */
    double fp16_tflops;  /* dense FP16 tensor-core rate with FP32 accumulate; 0 if no tensor cores */
    double bf16_tflops;  /* dense BF16 tensor-core rate; 0 if the card has no bf16 support */
    double bw_gbs;       /* memory bandwidth, GB/s (10^9 bytes/s) */
    int64_t fixed_bytes; /* device memory outside the arena: CUDA context + cuDNN/cuBLAS handles and kernels */
    int from_table;      /* 1 when the figures come from the table, 0 for a bare size */
    int64_t cuda_total_bytes; /* what cudaMemGetInfo (and torch.cuda.get_device_properties().
                               * total_memory) report as the total: mem_bytes less the driver's
                               * reserve, the part of fixed_bytes no process sees */
} yp_gpu;

/* The documented table, in a fixed order (older and smaller cards first). Sets *n to its length
 * when n is non-NULL. The table is static and read-only: the caller does not free it. */
const yp_gpu *yp_gpu_table(int *n);

/* Parses a --gpu value (see above) into *out. Returns 0, or -1 with a one-line message in err
 * (naming the value and how to fix it) and *out left unchanged. */
int yp_gpu_parse(const char *spec, yp_gpu *out, yp_err *err);

/* For --gpu auto: matches a CUDA device name ("NVIDIA H200", "Tesla T4", "NVIDIA GeForce RTX 3070",
 * "NVIDIA A100-SXM4-40GB") to the table. total_bytes is cudaMemGetInfo's total; when positive it
 * replaces the table's memory, and fixed_bytes then holds no driver reserve. An unknown name gives
 * a generic entry (bare-size rates) with that memory, its desc naming the device. Returns 1 if
 * matched, 0 if generic. */
int yp_gpu_from_device(const char *device_name, int64_t total_bytes, yp_gpu *out);

/* The host as the device a CPU-backend plan is made for: mem_bytes of host memory (what the machine
 * has available), no fixed device cost, name "host". Its rates are a bare size's: step times
 * predicted for it are a GPU's, not the CPU's, and nothing reads them for a CPU plan. */
void yp_gpu_host(int64_t mem_bytes, yp_gpu *out);

/* Writes the table's ids as "gtx1080ti, rtx2080ti, ..." into buf (always NUL-terminated when
 * n > 0; cut short if n is too small). */
void yp_gpu_list_names(char *buf, size_t n);

#endif
