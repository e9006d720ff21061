/* kind_cuda.c - CUDA's row of the kind table (yp_backend_kind.h): specs "cuda", "cuda:N" and
 * train.py's bare device numbers ("0", "0,1"), its instances (yp_backend_cuda_new, which refuses in
 * a build without CUDA), and its conv scratch models: "cuda", the bound of yp_cudnn_scratch.h, and
 * "cuda:CARD", what cuDNN picks on one card. Plain C: it reaches the CUDA library only through
 * yp_backend.h. */
#include <stdio.h>
#include <string.h>

#include "backend_kinds.h"
#include "yp_cudnn_scratch.h"

#define KIND "cuda"
#define DEVICE_NUMBER_MAX 255

/* One device number written plainly ("0", or no leading zero) in 0..DEVICE_NUMBER_MAX, up to the
 * next comma or the end: its length, or 0 when there is none. */
static size_t device_number(const char *p, int *out) {
    size_t n = 0;
    int v = 0;
    while (p[n] >= '0' && p[n] <= '9' && v <= DEVICE_NUMBER_MAX) v = v * 10 + (p[n++] - '0');
    if (n == 0 || v > DEVICE_NUMBER_MAX || (n > 1 && p[0] == '0') || (p[n] && p[n] != ',')) return 0;
    *out = v;
    return n;
}

/* NULL: device 0; else "N" or "N,M,..." (each number once, at most YP_DEVICE_MAX of them). */
static int cuda_parse(const char *arg, yp_device_spec *s, char *why, size_t why_len) {
    s->n_devices = 1, s->devices[0] = 0;
    if (!arg) return 0;
    s->n_devices = 0;
    for (const char *p = arg;; p++) {
        int d = 0, seen = 0;
        size_t n = device_number(p, &d);
        for (int i = 0; i < s->n_devices; i++) seen |= s->devices[i] == d;
        if (!n || seen || s->n_devices == YP_DEVICE_MAX)
            return yp_kind_fail(why, why_len, "expected CUDA device numbers 0..%d, each once, separated by single "
                                "commas (cuda:N, N or N,M, at most %d)", DEVICE_NUMBER_MAX, YP_DEVICE_MAX);
        s->devices[s->n_devices++] = d;
        p += n;
        if (!*p) return 0;
    }
}

static yp_backend *cuda_create(const yp_device_spec *s, char *why, size_t why_len) {
    return yp_backend_cuda_new(s->n_devices > 0 ? s->devices[0] : 0, why, why_len);
}

static int cuda_model_parse(const char *name, yp_scratch_model *m, char *why, size_t why_len) {
    (void)why, (void)why_len;
    if (!strcmp(name, KIND)) m->answer = YP_SCRATCH_BOUND;
    else if (!strncmp(name, KIND ":", strlen(KIND ":"))) m->answer = YP_SCRATCH_BY_CARD;
    else return 1;
    return 0;
}

static void cuda_model_needed(const yp_backend *be, char *buf, size_t n) {
    (void)be;
    snprintf(buf, n, KIND);
}

/* The device's name as a slug: lowercase letters and digits, '-' for each run of anything else,
 * none at either end ("NVIDIA H200" -> "nvidia-h200"). */
static void card_slug(const char *device, char *out, size_t n) {
    size_t k = 0;
    for (const char *p = device; *p && k + 1 < n; p++) {
        char c = *p >= 'A' && *p <= 'Z' ? (char)(*p - 'A' + 'a') : *p;
        int alnum = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
        if (alnum) out[k++] = c;
        else if (k > 0 && out[k - 1] != '-') out[k++] = '-';
    }
    while (k > 0 && out[k - 1] == '-') k--;
    out[k] = 0;
}

/* "cuda:" + the slug, cut to fit a model's name. */
static void cuda_model_card(yp_backend *be, char *buf, size_t n) {
    char name[128], slug[YP_MODEL_NAME_MAX - sizeof KIND]; /* room for "cuda:" and the NUL */
    int64_t total, free_b;
    buf[0] = 0;
    if (!be->device_info || be->device_info(be, name, sizeof name, &total, &free_b)) return;
    card_slug(name, slug, sizeof slug);
    snprintf(buf, n, KIND ":%s", slug);
}

static void cuda_bound(const yp_conv_desc *d, yp_conv_stage stage, int64_t *per_image, int64_t *fixed) {
    yp_cudnn_scratch_bound(d, stage, per_image, fixed);
}

static void cuda_card_refused(const char *here, const char *reason, char *why, size_t why_len) {
    static const char way_out[] = "plan again here, or with --scratch " KIND " for a plan that re-plans anywhere";
    if (!here[0] && reason[0])
        yp_kind_fail(why, why_len, "the conv workspaces cuDNN chose on that card, and this machine has no usable GPU "
                     "(%s); %s", reason, way_out);
    else
        yp_kind_fail(why, why_len, "the conv workspaces cuDNN chose on that card, and this machine's GPU is %s; %s",
                     here[0] ? here + strlen(KIND ":") : "unnamed", way_out);
}

const yp_backend_kind yp_kind_cuda = {
    .name = KIND,
    .label = "CUDA",
    .host_memory = 0,
    .elems = YP_ELEM_BIT(YP_ELEM_F32) | YP_ELEM_BIT(YP_ELEM_F16) | YP_ELEM_BIT(YP_ELEM_BF16),
    .numbers = 1,
    .specs = "cuda:N for CUDA device N, train.py's N or N,M",
    .models = "cuda, cuda:CARD (that card's cuDNN)",
    .parse = cuda_parse,
    .create = cuda_create,
    .ops = yp_backend_cuda_ops,
    .model_parse = cuda_model_parse,
    .model_needed = cuda_model_needed,
    .model_card = cuda_model_card,
    .bound = cuda_bound,
    .card_refused = cuda_card_refused,
};
