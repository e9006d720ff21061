/* grad_scaler.c - GradScaler's scale update (yp_grad_scaler.h), torch._amp_update_scale_'s rule. */
#include <math.h>

#include "yp_grad_scaler.h"

yp_grad_scaler yp_grad_scaler_init(void) {
    yp_grad_scaler s = {65536.0f, 2.0f, 0.5f, 2000, 0, 0};
    return s;
}

float yp_grad_scaler_inv_scale(const yp_grad_scaler *s) { return 1.0f / s->scale; }

int yp_grad_scaler_update(yp_grad_scaler *s, int found_inf) {
    if (found_inf) {
        s->scale *= s->backoff_factor, s->growth_tracker = 0, s->skipped++;
        return 0;
    }
    int64_t clean = s->growth_tracker + 1;
    if (clean == s->growth_interval) {
        float grown = s->scale * s->growth_factor;
        if (isfinite(grown)) s->scale = grown; /* PyTorch keeps the scale when growing would overflow */
        s->growth_tracker = 0;
    } else {
        s->growth_tracker = clean;
    }
    return 1;
}
