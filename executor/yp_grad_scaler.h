/* yp_grad_scaler.h - AMP's dynamic loss scale as torch.cuda.amp.GradScaler keeps it (defaults
 * init_scale 2^16, growth_factor 2, backoff_factor 0.5, growth_interval 2000), as a host state
 * machine: the loss is multiplied by the scale before backward, the gradients divided by it before
 * the step; a step whose gradients hold an inf or NaN is skipped and the scale halved; after
 * growth_interval clean steps in a row the scale doubles (unless that overflows fp32). The scale
 * is an fp32 value, as PyTorch's _scale tensor, so the sequence of scales is PyTorch's bit for bit.
 * The update (executor/update.c) asks yp_grad_scaler_update whether to step, for amp-fp16 plans
 * (yp_trainer.scaler_on).
 * Defines: yp_grad_scaler, yp_grad_scaler_init, yp_grad_scaler_update, yp_grad_scaler_inv_scale. */
#ifndef YP_GRAD_SCALER_H
#define YP_GRAD_SCALER_H

#include <stdint.h>

typedef struct {
    float scale;             /* the current loss scale */
    float growth_factor;     /* x this after growth_interval clean steps: 2 */
    float backoff_factor;    /* x this on a step with inf/NaN gradients: 0.5 */
    int64_t growth_interval; /* clean steps in a row before growing: 2000 */
    int64_t growth_tracker;  /* clean steps in a row so far */
    int64_t skipped;         /* steps skipped since init (found inf/NaN) */
} yp_grad_scaler;

/* PyTorch's defaults: scale 65536, growth 2, backoff 0.5, interval 2000, counters 0. */
yp_grad_scaler yp_grad_scaler_init(void);

/* 1 / scale, what the gradients are multiplied by before the step (GradScaler.unscale_). */
float yp_grad_scaler_inv_scale(const yp_grad_scaler *s);

/* After a backward: found_inf is whether any unscaled gradient is inf or NaN. Updates the scale
 * as GradScaler.update (torch._amp_update_scale_). Returns 1 when the optimizer step is to be
 * taken, 0 when it is skipped (found_inf). */
int yp_grad_scaler_update(yp_grad_scaler *s, int found_inf);

#endif
