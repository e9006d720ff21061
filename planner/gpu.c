/* gpu.c - the GPU table, --gpu parsing, and the estimate of device memory outside the arena.
 *
 * Rates are dense (no 2:4 sparsity) peak TFLOP/s; datasheets that print only the sparse figure
 * are halved, and the comment says so. FP16 is the tensor-core rate with FP32 accumulate (what AMP
 * training uses). GeForce Turing/Ampere/Ada cards run FP16-with-FP32-accumulate at half their
 * FP16-accumulate rate, so for them the whitepaper's FP32-accumulate column is used (half of the
 * headline figure); data-center cards run both at full rate. Bandwidth is in GB/s (10^9 B/s).
 *
 * Memory is the marketed size read as GiB (see yp_gpu.h). For the H200, "141 GB" is taken as
 * 141 GiB too: nvidia-smi shows 143771 MiB (= 140.4 GiB) on an H200, which is above 141 * 10^9
 * bytes (131.3 GiB), so the decimal reading would under-state the card, while 141 GiB minus a
 * driver reserve matches what the driver reports, as 80 GiB does for the H100 (81559 MiB).
 */
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "yp_gpu.h"

#define YP_MIB ((int64_t)1 << 20)
#define YP_GIB ((int64_t)1 << 30)
#define YP_TIB ((int64_t)1 << 40)

/* Largest size --gpu accepts: four times the biggest card of today, so a typo ("8TB") is caught. */
#define GPU_MAX_BYTES (4 * YP_TIB)

/* ---- device memory outside the arena ------------------------------------------------------
 *
 * GPU_CTX_BASE_BYTES: the CUDA context with lazy module loading (CUDA >= 11.7, the default on
 *   Linux since 12.2: CUDA C Programming Guide, "Lazy Loading"), apart from the stack term below.
 *   Public measurements of a whole context: 287,047,680 bytes used (cudaMemGetInfo total - free,
 *   one small tensor allocated) with CUDA_MODULE_LOADING=LAZY against 666,632,192 eager
 *   (pytorch/pytorch#86509); "~300MB ... before CUDA 11.7 ... >1000MB" (ptrblck,
 *   pytorch/pytorch#107667); "around 400MB if CUDA >= 11.7 is used and lazy module loading
 *   enabled" (ptrblck, pytorch/pytorch#109888). 256 MiB plus the stack term gives 300-520 MiB
 *   across the table, which brackets those reports.
 * GPU_STACK_BYTES_PER_THREAD: the default per-thread stack (cudaLimitStackSize = 1 KiB); the driver
 *   backs it for every thread that can be resident at once (SMs x max threads per SM), which is
 *   why the context grows with the size of the chip. This split of the context is our model, not
 *   a measured fact; only the totals above are measured.
 * cuBLAS workspace (per row): 4 MiB, 32 MiB on Hopper, as the cuBLAS documentation of
 *   cublasSetWorkspace recommends (quoted in pytorch/pytorch#120925 and NVIDIA/MatX#545).
 * GPU_LIBS_BYTES: the cuDNN handle plus the cuDNN, cuBLAS and yoloplan kernels that lazy loading
 *   brings in as training touches them. A round allowance, not a measurement.
 * The driver reserve (per row): the marketed size minus the total cudaMemGetInfo reports for the
 *   card, from PyTorch out-of-memory messages ("X GiB total capacity" is cudaMemGetInfo's total)
 *   in public issue threads, or from nvidia-smi totals where marked as an estimate. It varies a
 *   little with the driver; the lowest report found is used. Bare sizes get GPU_GENERIC_RESERVED_PCT.
 * Where a GPU exists the command line should measure all of this with cudaMemGetInfo (free memory
 * before and after creating the context, cuBLAS and cuDNN) and replace the estimate.
 */
#define GPU_CTX_BASE_BYTES (256 * YP_MIB)
#define GPU_STACK_BYTES_PER_THREAD ((int64_t)1024)
#define GPU_LIBS_BYTES (128 * YP_MIB)
#define GPU_GENERIC_RESERVED_PCT 3

/* The one formula for fixed_bytes; a macro so that the static table can use it too. */
#define GPU_FIXED_BYTES(reserved_bytes, sms, threads_per_sm, cublas_ws_mib)                  \
    ((int64_t)(reserved_bytes) + GPU_CTX_BASE_BYTES +                                        \
     (int64_t)(sms) * (threads_per_sm) * GPU_STACK_BYTES_PER_THREAD +                        \
     (int64_t)(cublas_ws_mib) * YP_MIB + GPU_LIBS_BYTES)

/* ---- the table ----------------------------------------------------------------------------
 * X(id, description, memory GiB, FP32, TF32, FP16 (FP32 acc.), BF16 TFLOP/s, bandwidth GB/s,
 *   SMs, max resident threads per SM, cuBLAS workspace MiB, cudaMemGetInfo total MiB,
 *   aliases: extra spellings after normalisation (lowercase letters and digits only, without an
 *   "nvidia", "geforce" or "tesla" prefix), including the CUDA device names that should match)
 */
#define GPU_ROWS(X)                                                                              \
    /* GTX 1080 Ti (Pascal GP102): NVIDIA GeForce GTX 1080 Ti specifications: 3584 CUDA cores at \
     * 1582 MHz boost = 11.3 TFLOP/s; 11 GB GDDR5X, 352-bit at 11 Gbps = 484 GB/s. No tensor     \
     * cores (FP16 runs at 1/64 rate on GP102), no TF32, no BF16. CUDA total: estimate, 10.91 GiB \
     * (nvidia-smi 11264 MiB less the usual GeForce reserve; no report found). */                 \
    X("gtx1080ti", "NVIDIA GeForce GTX 1080 Ti", 11, 11.3, 0.0, 0.0, 0.0, 484.0, 28, 2048, 4,   \
      11172, "1080ti")                                                                           \
    /* RTX 2080 Ti (Turing TU102): NVIDIA Turing GPU Architecture whitepaper (2018), reference    \
     * board: 13.4 TFLOP/s FP32; FP16 tensor 107.6 with FP16 accumulate, 53.8 with FP32          \
     * accumulate (GeForce half rate; used here); 11 GB GDDR6, 616 GB/s. No TF32/BF16. CUDA total \
     * 10.76 GiB (PyTorch OOM reports, e.g. ispc-lab/TMA#5). */                                  \
    X("rtx2080ti", "NVIDIA GeForce RTX 2080 Ti", 11, 13.4, 0.0, 53.8, 0.0, 616.0, 68, 1024, 4,  \
      11018, "2080ti")                                                                           \
    /* RTX 3060 12 GB (Ampere GA106): NVIDIA GeForce RTX 3060 specifications: 3584 CUDA cores     \
     * (28 SMs) at 1777 MHz boost, 12 GB GDDR6, 192-bit at 15 Gbps = 360 GB/s. Rates computed     \
     * from the GA10x per-SM rates of the NVIDIA Ampere GA102 GPU Architecture whitepaper (256    \
     * FP32 FLOP/clk; 512 dense FP16 FLOP/clk with FP32 accumulate, GeForce half rate; TF32 =     \
     * FP32 rate; BF16 = FP16 rate): 12.7 / 12.7 / 25.5 / 25.5. CUDA total 11.75 GiB             \
     * (Kunhao-Liu/StyleGaussian#12). */                                                         \
    X("rtx3060", "NVIDIA GeForce RTX 3060 12GB", 12, 12.7, 12.7, 25.5, 25.5, 360.0, 28, 1536, 4, \
      12032, "3060 rtx306012gb 306012gb")                                                        \
    /* RTX 3070 (Ampere GA104): NVIDIA Ampere GA102 GPU Architecture whitepaper (2020), RTX 3070  \
     * column: 20.3 FP32; TF32 20.3; FP16 tensor 81.3 FP16-acc / 40.6 FP32-acc (GeForce half      \
     * rate; used); BF16 40.6; 8 GB GDDR6, 448 GB/s. CUDA total 7.76 GiB (sshan-zhao/GASDA#19). */\
    X("rtx3070", "NVIDIA GeForce RTX 3070", 8, 20.3, 20.3, 40.6, 40.6, 448.0, 46, 1536, 4, 7946, \
      "3070")                                                                                    \
    /* RTX 3080 10 GB (Ampere GA102): GA102 whitepaper (2020), RTX 3080 column: 29.8 FP32; TF32   \
     * 29.8; FP16 tensor 119 FP16-acc / 59.5 FP32-acc (GeForce half rate; used); BF16 59.5;      \
     * 10 GB GDDR6X, 760 GB/s. CUDA total 9.78 GiB (zai-org/CogVideo#34). */                     \
    X("rtx3080", "NVIDIA GeForce RTX 3080 10GB", 10, 29.8, 29.8, 59.5, 59.5, 760.0, 68, 1536, 4, \
      10015, "3080 rtx308010gb 308010gb")                                                        \
    /* RTX 3090 (Ampere GA102): GA102 whitepaper (2020), RTX 3090 column: 35.6 FP32; TF32 35.6;   \
     * FP16 tensor 142 FP16-acc / 71 FP32-acc (GeForce half rate; used); BF16 71; 24 GB GDDR6X,   \
     * 936 GB/s. CUDA total 23.69 GiB (PyTorch OOM reports; 23.70 in GaoLii/DSP#10). */          \
    X("rtx3090", "NVIDIA GeForce RTX 3090", 24, 35.6, 35.6, 71.0, 71.0, 936.0, 82, 1536, 4,      \
      24259, "3090")                                                                             \
    /* RTX 4090 (Ada AD102): NVIDIA Ada GPU Architecture whitepaper (2022): 82.6 FP32; TF32 82.6; \
     * FP16 tensor 330.3 FP16-acc / 165.2 FP32-acc (GeForce half rate; used); BF16 165.2; 24 GB   \
     * GDDR6X, 1008 GB/s. CUDA total 23.52-23.68 GiB in reports (lowest: SoulX-FlashTalk#5). */   \
    X("rtx4090", "NVIDIA GeForce RTX 4090", 24, 82.6, 82.6, 165.2, 165.2, 1008.0, 128, 1536, 4,  \
      24084, "4090")                                                                             \
    /* T4 (Turing TU104): NVIDIA T4 Tensor Core GPU datasheet: 8.1 FP32; 65 mixed precision       \
     * FP16/FP32 (full-rate FP32 accumulate on data-center Turing); no TF32/BF16; 16 GB GDDR6,    \
     * 320 GB/s (spec-sheet "320+"). ECC is on by default: nvidia-smi shows 15360 MiB; CUDA total \
     * 14.56-14.76 GiB by driver (lowest: Zheng-Chong/CatVTON#133). */                           \
    X("t4", "NVIDIA Tesla T4", 16, 8.1, 0.0, 65.0, 0.0, 320.0, 40, 1024, 4, 14909, "")            \
    /* V100 16 GB SXM2 (Volta GV100): NVIDIA Tesla V100 GPU Accelerator datasheet (2018), SXM2:    \
     * 15.7 FP32; 125 tensor (FP16 with FP32 accumulate); no TF32/BF16; 16 GB HBM2, 900 GB/s.     \
     * PCIe boards (14 / 112, clocks ~10 % lower) also match, with these figures. CUDA total:     \
     * estimate, nvidia-smi 16160 MiB less 8 MiB (the 32 GB card's gap). */                      \
    X("v100-16gb", "NVIDIA Tesla V100 SXM2 16GB", 16, 15.7, 0.0, 125.0, 0.0, 900.0, 80, 2048, 4, \
      16152, "v100 v10016 v100sxm216gb v100pcie16gb")                                            \
    /* V100 32 GB SXM2: same datasheet and rates, 32 GB HBM2. CUDA total 31.74 GiB                \
     * (haotian-liu/LLaVA#812, V100x8). */                                                        \
    X("v100-32gb", "NVIDIA Tesla V100 SXM2 32GB", 32, 15.7, 0.0, 125.0, 0.0, 900.0, 80, 2048, 4, \
      32502, "v10032 v100sxm232gb v100pcie32gb")                                                 \
    /* A10 (Ampere GA102): NVIDIA A10 Tensor Core GPU datasheet: 31.2 FP32; TF32 62.5 (125        \
     * sparse); BF16 and FP16 125 (250 sparse); 24 GB GDDR6 with ECC, 600 GB/s. CUDA total        \
     * 21.99 GiB (zai-org/CogVLM#236, Lambda A10). Not the AWS A10G, a different board. */       \
    X("a10", "NVIDIA A10", 24, 31.2, 62.5, 125.0, 125.0, 600.0, 72, 1536, 4, 22518, "")           \
    /* A100 40 GB SXM4 (Ampere GA100): NVIDIA A100 Tensor Core GPU datasheet (2021): 19.5 FP32;   \
     * TF32 156 (312 sparse); BF16 and FP16 312 (624 sparse); 40 GB HBM2, 1555 GB/s. PCIe 40 GB   \
     * (same chip and memory) matches too. "a100" alone means this card: of two memory sizes the  \
     * smaller is the safe reading. CUDA total 39.39 GiB (PyTorch OOM reports). */               \
    X("a100-40gb", "NVIDIA A100 SXM4 40GB", 40, 19.5, 156.0, 312.0, 312.0, 1555.0, 108, 2048, 4, \
      40335, "a100 a10040 a100sxm440gb a100pcie40gb")                                            \
    /* A100 80 GB SXM4: same datasheet, 80 GB HBM2e, 2039 GB/s (PCIe 80 GB: 1935 GB/s, matches    \
     * too). CUDA total 79.25-79.35 GiB (levihsu/OOTDiffusion#235, HiDream-ai/VAREdit#6). */      \
    X("a100-80gb", "NVIDIA A100 SXM4 80GB", 80, 19.5, 156.0, 312.0, 312.0, 2039.0, 108, 2048, 4, \
      81152, "a10080 a100sxm480gb a10080gbpcie a100pcie80gb")                                    \
    /* L4 (Ada AD104): NVIDIA L4 Tensor Core GPU datasheet (2023): 30.3 FP32; TF32 120 sparse ->  \
     * 60; FP16 and BF16 242 sparse -> 121 (dense = half of the printed sparse figure); 24 GB     \
     * GDDR6 with ECC, 300 GB/s. CUDA total: estimate, nvidia-smi 23034 MiB less 510 MiB (the A10 \
     * gap between nvidia-smi and cudaMemGetInfo). */                                            \
    X("l4", "NVIDIA L4", 24, 30.3, 60.0, 121.0, 121.0, 300.0, 58, 1536, 4, 22524, "")             \
    /* H100 SXM5 80 GB (Hopper GH100): NVIDIA H100 Tensor Core GPU datasheet, SXM column: 67      \
     * FP32; TF32 989 sparse -> 494.5; BF16 and FP16 1979 sparse -> 989.5; 80 GB HBM3, 3.35 TB/s. \
     * Not the H100 PCIe/NVL (slower). CUDA total 79.11 GiB (vllm-project/vllm#27508). */        \
    X("h100", "NVIDIA H100 SXM5 80GB", 80, 67.0, 494.5, 989.5, 989.5, 3350.0, 132, 2048, 32,     \
      81009, "h10080 h10080gb h100sxm h100sxm5 h10080gbhbm3")                                    \
    /* H200 SXM 141 GB (Hopper GH100): NVIDIA H200 Tensor Core GPU datasheet, SXM column: 67 FP32;\
     * TF32 989 sparse -> 494.5; BF16 and FP16 1979 sparse -> 989.5; 141 GB HBM3e, 4.8 TB/s.     \
     * Not the H200 NVL (lower clocks). CUDA total: estimate, nvidia-smi 143771 MiB less 550 MiB  \
     * (the H100 gap). */                                                                        \
    X("h200", "NVIDIA H200 SXM 141GB", 141, 67.0, 494.5, 989.5, 989.5, 4800.0, 132, 2048, 32,    \
      143221, "h200141gb h200sxm")

#define GPU_PUBLIC_ROW(id, desc, mem_gib, fp32, tf32, fp16, bf16, bw, sms, tps, ws_mib,        \
                       cuda_mib, aliases)                                                       \
    {id,                                                                                        \
     desc,                                                                                      \
     (int64_t)(mem_gib) * YP_GIB,                                                               \
     fp32,                                                                                      \
     tf32,                                                                                      \
     fp16,                                                                                      \
     bf16,                                                                                      \
     bw,                                                                                        \
     GPU_FIXED_BYTES((int64_t)(mem_gib) * YP_GIB - (int64_t)(cuda_mib) * YP_MIB, sms, tps,     \
                     ws_mib),                                                                   \
     1,                                                                                         \
     (int64_t)(cuda_mib) * YP_MIB},

#define GPU_INFO_ROW(id, desc, mem_gib, fp32, tf32, fp16, bf16, bw, sms, tps, ws_mib, cuda_mib, \
                     aliases)                                                                   \
    {sms, tps, ws_mib, aliases},

/* What the runtime paths need besides the public row: the context terms and the aliases. */
typedef struct {
    int sms;
    int threads_per_sm;
    int cublas_ws_mib;
    const char *aliases; /* space-separated, normalised */
} gpu_info;

static const yp_gpu gpu_table[] = {GPU_ROWS(GPU_PUBLIC_ROW)};
static const gpu_info gpu_infos[] = {GPU_ROWS(GPU_INFO_ROW)};

#define GPU_COUNT ((int)(sizeof gpu_table / sizeof gpu_table[0]))

/* The table row whose rates a bare size or an unknown device borrows (see yp_gpu.h). */
#define GPU_GENERIC_ID "rtx3070"

const yp_gpu *yp_gpu_table(int *n) {
    if (n) *n = GPU_COUNT;
    return gpu_table;
}

/* fixed_bytes for row i's chip with the given driver reserve (0 when the total is measured). */
static int64_t gpu_fixed_bytes(int i, int64_t reserved_bytes) {
    const gpu_info *g = &gpu_infos[i];
    return GPU_FIXED_BYTES(reserved_bytes, g->sms, g->threads_per_sm, g->cublas_ws_mib);
}

/* ---- names -------------------------------------------------------------------------------- */

/* Writes s[0..len) in lowercase without the separators ' ', '-' and '_', then drops leading
 * "nvidia", "geforce" and "tesla". Returns 0 if s holds any other character or does not fit in
 * out[n]: such text is no card name. */
static int gpu_normalize(const char *s, size_t len, char *out, size_t n) {
    static const char *const prefixes[] = {"nvidia", "geforce", "tesla"};
    size_t k = 0;
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == ' ' || c == '-' || c == '_') continue;
        if (!isalnum(c)) return 0;
        if (k + 1 >= n) return 0;
        out[k++] = (char)tolower(c);
    }
    out[k] = '\0';
    for (int again = 1; again;) {
        again = 0;
        for (size_t p = 0; p < sizeof prefixes / sizeof prefixes[0]; p++) {
            size_t pl = strlen(prefixes[p]);
            if (strncmp(out, prefixes[p], pl) == 0 && out[pl] != '\0') {
                memmove(out, out + pl, strlen(out + pl) + 1);
                again = 1;
            }
        }
    }
    return 1;
}

/* Returns 1 if the space-separated list holds the word w. */
static int gpu_has_word(const char *list, const char *w) {
    size_t wl = strlen(w);
    for (const char *p = list; *p;) {
        while (*p == ' ') p++;
        size_t l = strcspn(p, " ");
        if (l == wl && l > 0 && strncmp(p, w, l) == 0) return 1;
        p += l;
    }
    return 0;
}

/* Returns the row whose id or alias normalises to s[0..len), or -1. */
static int gpu_lookup(const char *s, size_t len) {
    char want[64], id[64];
    if (!gpu_normalize(s, len, want, sizeof want) || want[0] == '\0') return -1;
    for (int i = 0; i < GPU_COUNT; i++) {
        const char *name = gpu_table[i].name;
        if (!gpu_normalize(name, strlen(name), id, sizeof id)) continue;
        if (strcmp(want, id) == 0 || gpu_has_word(gpu_infos[i].aliases, want)) return i;
    }
    return -1;
}

void yp_gpu_list_names(char *buf, size_t n) {
    if (!buf || n == 0) return;
    buf[0] = '\0';
    size_t used = 0;
    for (int i = 0; i < GPU_COUNT; i++) {
        int w = snprintf(buf + used, n - used, "%s%s", i ? ", " : "", gpu_table[i].name);
        if (w < 0 || (size_t)w >= n - used) return; /* cut short, still NUL-terminated */
        used += (size_t)w;
    }
}

/* ---- sizes -------------------------------------------------------------------------------- */

/* Formats bytes as "7.5<sep>GiB" (or MiB below 1 GiB) with at most two decimals, no trailing zeros. */
static void gpu_size_text(int64_t bytes, const char *sep, char *out, size_t n) {
    int gib = bytes >= YP_GIB;
    long long hundredths = llround((double)bytes / (double)(gib ? YP_GIB : YP_MIB) * 100.0);
    char num[48];
    snprintf(num, sizeof num, "%lld.%02lld", hundredths / 100, hundredths % 100);
    char *end = num + strlen(num);
    while (end[-1] == '0') *--end = '\0'; /* "7.50" -> "7.5", "8.00" -> "8." */
    if (end[-1] == '.') end[-1] = '\0';  /* "8." -> "8" */
    snprintf(out, n, "%s%s%s", num, sep, gib ? "GiB" : "MiB");
}

/* A generic entry: the reference card's rates with the given memory and driver reserve. */
static void gpu_generic(int64_t bytes, int64_t reserved_bytes, yp_gpu *out) {
    int ref = gpu_lookup(GPU_GENERIC_ID, strlen(GPU_GENERIC_ID));
    YP_ASSERT(ref >= 0);
    char size[32];
    *out = gpu_table[ref];
    gpu_size_text(bytes, "", out->name, sizeof out->name);
    gpu_size_text(bytes, " ", size, sizeof size);
    snprintf(out->desc, sizeof out->desc, "generic GPU with %s", size);
    out->mem_bytes = bytes;
    out->fixed_bytes = gpu_fixed_bytes(ref, reserved_bytes);
    out->from_table = 0;
    out->cuda_total_bytes = bytes - reserved_bytes;
}

/* Bytes per unit for a unit word (case-insensitive), or 0 if unknown. */
static int64_t gpu_unit_bytes(const char *u, size_t len) {
    static const struct {
        const char *word;
        int64_t bytes;
    } units[] = {{"g", YP_GIB}, {"gb", YP_GIB}, {"gib", YP_GIB}, {"m", YP_MIB}, {"mb", YP_MIB},
                 {"mib", YP_MIB}, {"t", YP_TIB}, {"tb", YP_TIB}, {"tib", YP_TIB}};
    for (size_t i = 0; i < sizeof units / sizeof units[0]; i++) {
        if (strlen(units[i].word) != len) continue;
        size_t k = 0;
        while (k < len && tolower((unsigned char)u[k]) == units[i].word[k]) k++;
        if (k == len) return units[i].bytes;
    }
    return 0;
}

/* Returns 1 if s[0..len) starts with word, ignoring case. */
static int gpu_starts_with(const char *s, size_t len, const char *word) {
    size_t wl = strlen(word);
    if (len < wl) return 0;
    for (size_t i = 0; i < wl; i++)
        if (tolower((unsigned char)s[i]) != word[i]) return 0;
    return 1;
}

#define GPU_UNITS_HELP                                                                    \
    "use GB, GiB or G (2^30 bytes: a vendor's \"8 GB\" card has 8192 MiB), MB, MiB or M " \
    "(2^20), TB, TiB or T (2^40)"

/* Parses the size s[0..len) (already trimmed; spec is the original text, for messages). */
static int gpu_parse_size(const char *spec, const char *s, size_t len, yp_gpu *out, yp_err *err) {
    size_t i = 0;
    int neg = 0, digits = 0, frac_digits = 0;
    double ipart = 0.0, fpart = 0.0, fscale = 1.0;
    if (i < len && (s[i] == '+' || s[i] == '-')) neg = s[i++] == '-';
    for (; i < len && isdigit((unsigned char)s[i]); i++, digits++) ipart = ipart * 10.0 + (s[i] - '0');
    if (i < len && s[i] == '.') {
        for (i++; i < len && isdigit((unsigned char)s[i]); i++, digits++) {
            if (frac_digits >= 15) continue; /* beyond double precision */
            fpart = fpart * 10.0 + (s[i] - '0');
            fscale *= 10.0;
            frac_digits++;
        }
    }
    size_t num_len = i;
    if (digits == 0) {
        size_t sign = (len > 0 && (s[0] == '+' || s[0] == '-')) ? 1 : 0;
        if (gpu_starts_with(s + sign, len - sign, "nan") || gpu_starts_with(s + sign, len - sign, "inf"))
            return yp_err_set(err, "--gpu \"%.64s\": not a finite number; give a size such as 8GB "
                                   "or a card name such as rtx3070", spec);
        char names[512];
        yp_gpu_list_names(names, sizeof names);
        return yp_err_set(err, "--gpu \"%.64s\": unknown card and not a size; give a size with a "
                               "unit (8GB, 7.5G, 8192MiB) or one of: %s", spec, names);
    }
    while (i < len && isspace((unsigned char)s[i])) i++;
    const char *unit = s + i;
    size_t unit_len = len - i;
    int64_t unit_bytes = unit_len ? gpu_unit_bytes(unit, unit_len) : 0;
    if (unit_len && !unit_bytes)
        return yp_err_set(err, "--gpu \"%.64s\": unknown unit \"%.*s\"; " GPU_UNITS_HELP, spec,
                          (int)(unit_len > 16 ? 16 : unit_len), unit);
    double value = ipart + fpart / fscale;
    if (neg || value == 0.0)
        return yp_err_set(err, "--gpu \"%.64s\": a memory size must be positive; give e.g. 8GB "
                               "or a card name such as rtx3070", spec);
    if (!unit_len)
        return yp_err_set(err, "--gpu \"%.64s\": a size needs a unit; write %.*sGB (GB means "
                               "GiB here) or give a card name such as rtx3070", spec,
                          (int)num_len, s);
    double bytes = value * (double)unit_bytes;
    if (!isfinite(bytes) || bytes > (double)GPU_MAX_BYTES)
        return yp_err_set(err, "--gpu \"%.64s\": more memory than any GPU has (at most 4 TiB); "
                               "check the number and the unit", spec);
    int64_t b = (int64_t)llround(bytes);
    if (b < 1)
        return yp_err_set(err, "--gpu \"%.64s\": a memory size must be positive; give e.g. 8GB",
                          spec);
    gpu_generic(b, b / 100 * GPU_GENERIC_RESERVED_PCT, out);
    return 0;
}

int yp_gpu_parse(const char *spec, yp_gpu *out, yp_err *err) {
    YP_ASSERT(out);
    if (!spec) spec = "";
    const char *s = spec;
    while (isspace((unsigned char)*s)) s++;
    size_t len = strlen(s);
    while (len > 0 && isspace((unsigned char)s[len - 1])) len--;
    if (len == 0)
        return yp_err_set(err, "--gpu \"%.64s\": empty value; give a size such as 8GB, 7.5G or "
                               "8192MiB, or a card name such as rtx3070 or t4", spec);
    if (len == 4 && gpu_starts_with(s, len, "auto"))
        return yp_err_set(err, "--gpu \"%.64s\": not handled by the planner (the command line "
                               "asks CUDA for the device); give a size such as 8GB or a card name "
                               "such as rtx3070", spec);
    int row = gpu_lookup(s, len);
    if (row >= 0) {
        *out = gpu_table[row];
        return 0;
    }
    yp_gpu tmp;
    if (gpu_parse_size(spec, s, len, &tmp, err) != 0) return -1;
    *out = tmp;
    return 0;
}

int yp_gpu_from_device(const char *device_name, int64_t total_bytes, yp_gpu *out) {
    YP_ASSERT(out);
    YP_ASSERT(total_bytes >= 0);
    const char *name = device_name ? device_name : "";
    int row = gpu_lookup(name, strlen(name));
    if (row >= 0) {
        *out = gpu_table[row];
        if (total_bytes > 0) {
            out->mem_bytes = out->cuda_total_bytes = total_bytes;
            out->fixed_bytes = gpu_fixed_bytes(row, 0);
        }
        return 1;
    }
    gpu_generic(total_bytes, 0, out);
    if (name[0]) snprintf(out->desc, sizeof out->desc, "%s (generic rates)", name);
    return 0;
}

void yp_gpu_host(int64_t mem_bytes, yp_gpu *out) {
    YP_ASSERT(out && mem_bytes > 0);
    char size[32];
    gpu_generic(mem_bytes, 0, out);
    gpu_size_text(mem_bytes, " ", size, sizeof size);
    snprintf(out->name, sizeof out->name, "host");
    snprintf(out->desc, sizeof out->desc, "host memory (%s available)", size);
    out->fixed_bytes = 0;
    out->cuda_total_bytes = mem_bytes;
}
