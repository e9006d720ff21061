/* train_sched.c - train.py's learning-rate, momentum and accumulation schedule (yp_train.h). */
#include <math.h>

#include "yp_train.h"

/* Python's round() and numpy's: half to even (the default rounding mode of rint). */
static double round_even(double v) { return rint(v); }

void yp_train_sched_init(yp_train_sched *s, const yp_hyp_file *h, int cos_lr, int sgd, int64_t epochs, int64_t batch,
                         int64_t nb) {
    s->lr0 = h->lr0, s->lrf = h->lrf, s->momentum = h->momentum;
    s->warmup_momentum = h->warmup_momentum, s->warmup_bias_lr = h->warmup_bias_lr;
    s->cos_lr = cos_lr, s->sgd = sgd, s->epochs = epochs, s->batch = batch;
    double nw = round_even(h->warmup_epochs * (double)nb);
    s->nw = nw > 100 ? (int64_t)nw : 100;
    double acc = round_even((double)YP_NBS / (double)batch);
    s->accumulate = acc > 1 ? (int)acc : 1;
}

double yp_train_lf(const yp_train_sched *s, int64_t epoch) {
    double x = (double)epoch, n = (double)s->epochs;
    const double pi = 3.14159265358979323846;
    if (s->cos_lr) return ((1.0 - cos(x * pi / n)) / 2.0) * (s->lrf - 1.0) + 1.0;
    return (1.0 - x / n) * (1.0 - s->lrf) + s->lrf;
}

/* np.interp(x, [0, x1], [y0, y1]) for 0 <= x <= x1. */
static double interp(double x, double x1, double y0, double y1) {
    if (x >= x1) return y1;
    return y0 + (y1 - y0) * (x / x1);
}

void yp_train_knobs_at(const yp_train_sched *s, int64_t epoch, int64_t ni, yp_train_knobs *out) {
    const double target = s->lr0 * yp_train_lf(s, epoch);
    if (ni <= s->nw) {
        double x = (double)ni, nw = (double)s->nw;
        double acc = round_even(interp(x, nw, 1.0, (double)YP_NBS / (double)s->batch));
        out->accumulate = acc > 1 ? (int)acc : 1;
        out->lr[0] = interp(x, nw, s->warmup_bias_lr, target);
        out->lr[1] = out->lr[2] = interp(x, nw, 0.0, target);
        out->momentum = s->sgd ? interp(x, nw, s->warmup_momentum, s->momentum) : s->momentum;
        return;
    }
    out->accumulate = s->accumulate;
    out->lr[0] = out->lr[1] = out->lr[2] = target;
    out->momentum = s->momentum;
}
