/* yp_torch_saved.h - what PyTorch's autograd saves for backward in one training forward, read off
 * a schedule built under a keep_all retention row (the `pytorch` policy), in fp32 or under
 * autocast (yp_sched_opts.act_dtype F16 or BF16).
 *
 * Under fp32 every byte is a tensor of kind SAVED or the input batch backward reads, which is
 * yp_schedule_saved_bytes. Under autocast PyTorch runs the same ops with these dtypes, and the
 * schedule built with the low-precision act_dtype has each of them:
 *   - conv (and each Detect level) casts its input and its weight to the low-precision dtype and
 *     saves both casts. Only the image reaches a conv in fp32; its saved cast is the schedule's
 *     low-precision input batch. Every trainable conv weight's cast is a copy autocast caches for
 *     the forward pass, a new tensor that the conv's backward keeps: the schedule's LOWP copy of
 *     the weight (a backward step reads it). The Detect biases are cast too but not saved.
 *   - BatchNorm runs on the low-precision conv output with its fp32 parameters: it saves that
 *     input (low precision) and its batch mean and inverse std (fp32, 2 * c); its output is low
 *     precision;
 *   - SiLU, LeakyReLU and Hardswish save their low-precision input, ReLU its output (the
 *     result); max-pool its low-precision input and int64 indices; add, concat, upsample,
 *     zero_pad, space_to_depth, contract and expand save nothing.
 * The schedule keeps the LOWP copies for the whole step (yoloplan casts once per update), where
 * PyTorch makes them in forward and frees each at its conv's backward; the bytes are the same.
 * Each distinct tensor counts once; parameters and buffers do not count. */
#ifndef YP_TORCH_SAVED_H
#define YP_TORCH_SAVED_H

#include "yp_schedule.h"

typedef struct {
    int64_t by_dtype[YP_DTYPE_COUNT]; /* every saved byte by its dtype, the weight copies included */
    int64_t weight_copies;            /* autocast's weight copies (part of their dtype's bytes) */
    int64_t total;                    /* the sum of by_dtype */
} yp_torch_saved;

/* Fills out for schedule s. Returns 0, or -1 with err set when s is not built under a keep_all
 * retention row or is an evaluation pass (nothing is saved there), or on overflow. */
int yp_torch_saved_bytes(const yp_schedule *s, yp_torch_saved *out, yp_err *err);

#endif
