/* yp_backend_kind.h - the backends by kind: one row per kind of backend ("cpu", "cuda") that parses
 * its device specs, makes its instances, says whether their memory is the host's, and names and
 * answers its conv scratch models (the names a plan carries, planner/yp_scratch.h), so that code
 * outside kernels/ never compares the names of devices, backends or models.
 *
 * Defines: yp_backend_kind (a row), yp_device_spec, yp_device_spec_parse, yp_device_spec_adopt,
 * yp_backend_new, yp_backend_new_spec, yp_backend_kind_of, yp_scratch_model, yp_scratch_model_parse,
 * yp_scratch_models_known, yp_scratch_model_of, yp_scratch_model_needed, yp_scratch_model_card,
 * yp_scratch_model_answered_by, yp_scratch_model_instance, yp_scratch_model_ask,
 * yp_scratch_model_key, yp_scratch_model_from_key.
 *
 * Device specs (what --device takes):
 *   "cpu"          a CPU instance with the default thread count (the caller may set .threads)
 *   "cpu:T"        a CPU instance with T threads (1..1024)
 *   "cuda"         CUDA device 0
 *   "cuda:N"       CUDA device N; "cuda:N,M" devices N and M
 *   "N", "N,M"     train.py's spelling: CUDA device N (and M, ...)
 * A list of several devices parses (the spec keeps them, in order, for the caller that can use
 * them), but an instance runs on one device: yp_backend_new_spec refuses a spec of several.
 *
 * Conv scratch models, by kind (how each is answered: yp_scratch_answer):
 *   cpu   "onednn:T"   what oneDNN asks for on T threads: any CPU instance of T threads answers
 *                      (YP_SCRATCH_BY_SPEC: one is made for the question when none is at hand)
 *   cuda  "cuda"       the bound of yp_cudnn_scratch.h, asked of no device, the same on every card
 *                      and without one (YP_SCRATCH_BOUND)
 *         "cuda:CARD"  what cuDNN picks on that card (its device name as a slug, lowercase letters
 *                      and digits with '-' for the rest: "cuda:nvidia-h200"): asked of an instance
 *                      on that card, and refused where there is none (YP_SCRATCH_BY_CARD)
 *
 * Rows are static; every function here is thread-safe (those that make an instance use only it). */
#ifndef YP_BACKEND_KIND_H
#define YP_BACKEND_KIND_H

#include <stddef.h>
#include <stdint.h>

#include "yp_backend.h"

#define YP_DEVICE_MAX 16     /* devices one spec may list */
#define YP_MODEL_NAME_MAX 32 /* a scratch model's name with its NUL (planner's YP_SCRATCH_NAME_MAX) */
#define YP_CPU_THREADS_MAX 1024

typedef struct yp_backend_kind yp_backend_kind;

/* A device spec, parsed. */
typedef struct {
    const yp_backend_kind *kind;
    int threads;                /* the CPU's thread count (cpu:T); 0: not given, the default */
    int n_devices;              /* the CUDA devices listed (1 for "cuda", "cuda:1", "0"; 2 for "0,1"); 0 for cpu */
    int devices[YP_DEVICE_MAX]; /* their numbers, in the order given */
} yp_device_spec;

/* How a scratch model's figures are answered. */
typedef enum {
    YP_SCRATCH_BY_SPEC,  /* by any instance made from the model's spec (cpu's onednn:T: cpu with T threads) */
    YP_SCRATCH_BOUND,    /* by the kind's bound, asked of no instance (cuda's "cuda") */
    YP_SCRATCH_BY_CARD,  /* by an instance on the card the model names (cuda's "cuda:CARD") */
} yp_scratch_answer;

/* A conv scratch model of a backend kind, parsed from its name. */
typedef struct {
    const yp_backend_kind *kind;
    yp_scratch_answer answer;
    yp_device_spec spec;           /* YP_SCRATCH_BY_SPEC: the spec whose instances answer it */
    char name[YP_MODEL_NAME_MAX];  /* as a plan writes it */
} yp_scratch_model;

/* One kind of backend. The fields before `parse` are for reading; call the functions below rather
 * than the entries. */
struct yp_backend_kind {
    const char *name;  /* "cpu", "cuda": a spec's first word and its instances' yp_backend.name */
    const char *label; /* "CPU", "CUDA": the kind in a message */
    int host_memory;   /* 1: its instances' memory is the host's (their yp_backend.host_memory) */
    unsigned elems;    /* the element types its op table runs (YP_ELEM_BIT), known in any build */
    int numbers;       /* 1: a spec of bare device numbers ("0", "0,1") is this kind's (train.py's) */
    const char *specs; /* the specs it takes besides its name, for messages: "cpu:T for T threads" */
    const char *models; /* its scratch models' names, for messages: "onednn:T (T: CPU threads, 1..1024)" */

    /* Parses what follows "name:" (NULL for the bare name; the whole spec for bare numbers) into s
     * (kind set by the caller). 0, or -1 with why. */
    int (*parse)(const char *arg, yp_device_spec *s, char *why, size_t why_len);
    /* A new instance of spec s (one device at most), or NULL with why. */
    yp_backend *(*create)(const yp_device_spec *s, char *why, size_t why_len);
    /* The kind's op table, readable without an instance (NULL where the library was built without it). */
    const yp_ops *(*ops)(void);
    /* Parses a scratch model's name: 0 with *m (kind set by the caller), 1 when it is not one of this
     * kind's, -1 with why when it is but cannot be used (a thread count out of range). */
    int (*model_parse)(const char *name, yp_scratch_model *m, char *why, size_t why_len);
    /* The model instance be needs at least, asked of no device (cpu: onednn:T; cuda: "cuda"). */
    void (*model_needed)(const yp_backend *be, char *buf, size_t n);
    /* The model only instance be's device answers ("cuda:CARD"), or "" (NULL entry: none). */
    void (*model_card)(yp_backend *be, char *buf, size_t n);
    /* 1 when instance be was made from a spec like s (the CPU: the same thread count); NULL: never. */
    int (*spec_matches)(const yp_backend *be, const yp_device_spec *s);
    /* The bound of a YP_SCRATCH_BOUND model for conv d (NULL: the kind has none). */
    void (*bound)(const yp_conv_desc *d, yp_conv_stage stage, int64_t *per_image, int64_t *fixed);
    /* A card model's refusal: no instance on that card (here: the card model of the instance found,
     * "" when none could be made, reason then says why), into why. */
    void (*card_refused)(const char *here, const char *reason, char *why, size_t why_len);
};

#ifdef __cplusplus
extern "C" {
#endif
/* Parses a device spec (the forms above). 0, or -1 with a one-line reason in why (truncated to
 * why_len; why may be NULL), e.g. for "tpu": "expected cpu or cuda (or cpu:T for T threads, ...)". */
int yp_device_spec_parse(const char *text, yp_device_spec *s, char *why, size_t why_len);

/* When model m is answered by instances of a spec of s's kind (cpu's onednn:T), makes s that spec
 * (its thread count) and returns 1 if that changed s; 0 otherwise (another kind's model, or one
 * any instance of the kind runs). */
int yp_device_spec_adopt(yp_device_spec *s, const yp_scratch_model *m);

/* A new instance from a spec (text, or parsed), or NULL with a one-line reason in why: a bad spec,
 * several devices (not supported yet), or the kind's own refusal (yp_backend_cpu_new,
 * yp_backend_cuda_new: e.g. no GPU, or a build without CUDA). Free it with yp_backend_free. */
yp_backend *yp_backend_new(const char *spec, char *why, size_t why_len);
yp_backend *yp_backend_new_spec(const yp_device_spec *s, char *why, size_t why_len);

/* The kind of instance be (by its name, so a stand-in table names its kind too); NULL for none. */
const yp_backend_kind *yp_backend_kind_of(const yp_backend *be);

/* Parses a scratch model's name: 0 with *m, 1 when no kind has it (e.g. "im2col", the planner's
 * own), -1 with why when a kind has it but it cannot be used ("onednn:0"). */
int yp_scratch_model_parse(const char *name, yp_scratch_model *m, char *why, size_t why_len);

/* Every kind's model names, for messages: "onednn:T (T: CPU threads, 1..1024), cuda, cuda:CARD (that
 * card's cuDNN)". Static. */
const char *yp_scratch_models_known(void);

/* The model plans for instance be are made with: its card's (YP_SCRATCH_BY_CARD) where be's device
 * names one, else the one it needs (yp_scratch_model_needed). 0, or -1 when be's kind is unknown. */
int yp_scratch_model_of(yp_backend *be, yp_scratch_model *m);

/* The name of the model be needs at least (cpu: "onednn:T"; cuda: "cuda"), asked of no device;
 * be's name for a backend of no kind. */
void yp_scratch_model_needed(const yp_backend *be, char *buf, size_t n);

/* The name of the model only be's device answers ("cuda:nvidia-h200"), or "" when be's device cannot
 * be named (no device_info, or asking fails) or its kind has no card models. */
void yp_scratch_model_card(yp_backend *be, char *buf, size_t n);

/* 1 when instance be's own conv2d_scratch gives model m's figures (an instance of m's spec, or on
 * m's card); 0 otherwise (always for a bound). */
int yp_scratch_model_answered_by(const yp_scratch_model *m, yp_backend *be);

/* An instance that answers card model m, made on its kind's first device (the caller frees it), or
 * NULL with a one-line reason: none can be made there (no GPU) or it is another card. */
yp_backend *yp_scratch_model_instance(const yp_scratch_model *m, char *why, size_t why_len);

/* Model m's scratch for conv d at stage st, in floats: asked of be when it answers m
 * (yp_scratch_model_answered_by), else the bound, else an instance made from m's spec for the
 * question and freed after it. 0, or -1 with why (a card model with no instance of its card). */
int yp_scratch_model_ask(const yp_scratch_model *m, yp_backend *be, const yp_conv_desc *d, int has_bias,
                         yp_conv_stage st, int64_t *per_image, int64_t *fixed, char *why, size_t why_len);

/* A model answered without an instance (by spec or bound) as one word that fits a pointer, so that
 * a rule can carry it without storage (0 for a card model); yp_scratch_model_from_key gives it back
 * (0, or -1 for a word that is no key). */
uintptr_t yp_scratch_model_key(const yp_scratch_model *m);
int yp_scratch_model_from_key(uintptr_t key, yp_scratch_model *m);
#ifdef __cplusplus
}
#endif

#endif
