/* cost.c - roofline step time and images per second at the nominal batch. */
#include <math.h>
#include <string.h>

#include "yp_cost.h"

int yp_accumulate(int64_t batch) {
    long a = lround((double)YP_NOMINAL_BATCH / (double)batch);
    return a < 1 ? 1 : (int)a;
}

static double conv_rate_tflops(const yp_gpu *gpu, yp_precision p) {
    double r = p == YP_PREC_AMP_FP16 ? gpu->fp16_tflops : p == YP_PREC_AMP_BF16 ? gpu->bf16_tflops : gpu->tf32_tflops;
    return r > 0 ? r : gpu->fp32_tflops; /* no tensor cores for this precision: CUDA cores */
}

int yp_cost_matrix_math(int op) { return op >= 0 && yp_op_get((yp_op)op)->matrix_math; }

int yp_cost_rate_op(const yp_graph *g, int op, int node) {
    if (op < 0 || !yp_op_get((yp_op)op)->conv_like || !g || node < 0 || node >= g->n_nodes) return op;
    yp_conv_geom c;
    yp_op_get((yp_op)op)->conv_geom(&g->nodes[node], 0, &c);
    return c.groups > 1 ? -1 : op; /* a grouped conv: direct kernels, not tensor-core GEMMs */
}

double yp_cost_s_per_flop(const yp_gpu *gpu, yp_precision p, int op) {
    return yp_cost_matrix_math(op) ? 1.0 / (conv_rate_tflops(gpu, p) * 1e12 * YP_CONV_EFFICIENCY)
                                   : 1.0 / (gpu->fp32_tflops * 1e12 * YP_ELTWISE_EFFICIENCY);
}

double yp_cost_s_per_byte(const yp_gpu *gpu) { return 1.0 / (gpu->bw_gbs * 1e9 * YP_BW_EFFICIENCY); }

int yp_cost_launches(int op, yp_phase phase) {
    if (op < 0) return 1; /* loss, optimizer, EMA */
    const yp_op_info *row = yp_op_get((yp_op)op);
    return phase == YP_PHASE_BACKWARD ? row->bwd_launches : row->fwd_launches;
}

double yp_cost_roofline_s(const yp_gpu *gpu, yp_precision p, int rate_op, double flops, double bytes) {
    double compute = flops * yp_cost_s_per_flop(gpu, p, rate_op), memory = bytes * yp_cost_s_per_byte(gpu);
    return compute > memory ? compute : memory;
}

double yp_cost_step_s(const yp_gpu *gpu, yp_precision p, int op, int rate_op, yp_phase phase, double flops,
                      double bytes) {
    return yp_cost_roofline_s(gpu, p, rate_op, flops, bytes) + yp_cost_launches(op, phase) * YP_LAUNCH_S;
}

void yp_timing_add(yp_timing *t, yp_phase phase, double s) {
    double ms = s * 1e3;
    switch (phase) {
    case YP_PHASE_FORWARD: t->forward_ms += ms; break;
    case YP_PHASE_LOSS: t->loss_ms += ms; break;
    case YP_PHASE_RECOMPUTE: t->recompute_ms += ms; break;
    case YP_PHASE_BACKWARD: t->backward_ms += ms; break;
    default: t->optimizer_ms += ms; break;
    }
}

void yp_timing_finish(yp_timing *t, int64_t batch) {
    t->accumulate = yp_accumulate(batch);
    t->micro_ms = t->forward_ms + t->loss_ms + t->recompute_ms + t->backward_ms;
    t->update_ms = t->accumulate * t->micro_ms + t->optimizer_ms;
    t->images_per_s = t->update_ms > 0 ? (double)t->accumulate * (double)batch / (t->update_ms * 1e-3) : 0;
}

void yp_cost_schedule(const yp_schedule *s, const yp_gpu *gpu, yp_precision p, yp_timing *out) {
    memset(out, 0, sizeof *out);
    for (int i = 0; i < s->n_steps; i++) {
        const yp_step *st = &s->steps[i];
        double bytes = 0;
        for (int k = 0; k < st->n_in; k++) bytes += (double)s->tensors[yp_step_inputs(s, st)[k]].bytes;
        for (int k = 0; k < st->n_out; k++) bytes += (double)s->tensors[yp_step_outputs(s, st)[k]].bytes;
        int rate = yp_cost_rate_op(s->g, st->op, st->node);
        yp_timing_add(out, st->phase, yp_cost_step_s(gpu, p, st->op, rate, st->phase, (double)st->flops, bytes));
    }
    yp_timing_finish(out, s->opts.batch);
}
