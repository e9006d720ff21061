/* conv_dnnl.h - internal to kernels/cpu: the oneDNN primitives behind the conv ops (conv.c runs
 * them, conv_build.c builds them).
 *
 * A conv_prim is one oneDNN convolution (forward, backward-data or backward-weights) with a slot
 * per argument. A slot whose layout differs from the caller's (NHWC activations, OIHW weights,
 * plain bias) goes through the scratch: an input is reordered into it before the primitive runs,
 * an output is reordered out of it after, adding into the caller's tensor when asked (beta != 0).
 * Outputs the caller accumulates into (weight and bias gradients) always go through the scratch.
 * Scratch of one primitive, each part 64-byte aligned: the slots' buffers, then the scratchpad
 * (oneDNN's user-scratchpad mode), which every reorder and the primitive share in turn.
 * Everything here belongs to one CPU instance (struct yp_cpu_conv) and is freed with it. */
#ifndef YP_CONV_DNNL_H
#define YP_CONV_DNNL_H

#include <dnnl.h>
#include <dnnl_debug.h>
#include <stddef.h>

#include "yp_cpu.h"

enum { CONV_MAX_SLOTS = 5 };

typedef struct {
    int arg;             /* DNNL_ARG_* */
    int output;          /* written by the primitive */
    dnnl_memory_t m;     /* the primitive's memory object for it (buffer set per call) */
    dnnl_primitive_t re; /* caller layout -> primitive layout (input) or back (output); NULL: none */
    dnnl_primitive_t re_add; /* output only: the same, adding into the caller's tensor */
    dnnl_memory_t user;  /* the caller's side of the reorder */
    dnnl_memory_t re_sp, re_add_sp; /* the reorders' scratchpads (placed at the primitive's) */
    size_t off;          /* the buffer's offset in the scratch (when via) */
    int via;             /* goes through the scratch (then re, and re_add for outputs, exist once built) */
} conv_slot;

typedef struct {
    dnnl_primitive_t prim;
    conv_slot slot[CONV_MAX_SLOTS];
    int n_slots;
    dnnl_memory_t sp;   /* the primitive's scratchpad (the reorders' share its place) */
    size_t sp_off;      /* where the scratchpad starts */
    size_t bytes;       /* all of this primitive's scratch */
    int winograd;       /* the primitive runs oneDNN's Winograd algorithm */
    int present;        /* this primitive exists for the entry (sized, and built unless dry) */
} conv_prim;

typedef struct {
    yp_conv_desc d;
    int bias;
    int have_fwd, have_bwd;
    int share_dy; /* bwd_data and bwd_weights reorder dy alike into the start of the scratch */
    conv_prim fwd, bwd_data, bwd_weights;
    conv_prim bwd_data_add; /* 1x1 stride-1 convs: backward-data as one matmul adding into dx */
    conv_prim bwd_data1; /* otherwise one image, for accumulating into dx when bwd_data writes it in place */
} conv_entry;

/* An instance's conv state (yp_cpu_backend.conv): its engine and stream, and one entry per
 * distinct conv (descriptor, bias) built for it. Entries are only added by building (an op's
 * first use, conv2d_prepare) and all go with the instance. */
struct yp_cpu_conv {
    dnnl_engine_t engine;
    dnnl_stream_t stream;
    conv_entry **entries;
    int n_entries, cap_entries;
};

/* Builds e's forward (stage YP_CONV_FORWARD) or its backward primitives (bwd_data, bwd_weights
 * and, when bwd_data writes NHWC directly, bwd_data_add for a 1x1 conv or bwd_data1) on `engine`,
 * for the calling thread's OpenMP thread count. dry: only the primitive descriptors, to size
 * the scratch: e gets every conv_prim's `bytes` and `present` and its slots' `via`, and nothing
 * that needs releasing. 0, or -1 with the reason recorded (what a failed build made is released). */
int yp_conv_build(const char *op, dnnl_engine_t engine, conv_entry *e, yp_conv_stage stage, int dry);

/* Destroys everything e's primitives hold (not e itself); e's prims are zero after. */
void yp_conv_entry_release(conv_entry *e);

/* Records "<op>: oneDNN <what>: <status>" as the last error; returns -1. */
int yp_conv_dnnl_fail(const char *op, const char *what, dnnl_status_t st);

#endif
