/* torch_saved.c - autograd's saved bytes by dtype under the `pytorch` policy (yp_torch_saved.h). */
#include <string.h>

#include "yp_torch_saved.h"

/* Does a backward step read tensor t? */
static int read_in_backward(const yp_schedule *s, int t) {
    const yp_tensor *tt = &s->tensors[t];
    for (int k = 0; k < tt->n_cons; k++)
        if (s->steps[yp_tensor_consumers(s, tt)[k]].phase == YP_PHASE_BACKWARD) return 1;
    return 0;
}

/* Is t something autograd keeps: a saved value, the input batch backward reads, or a weight copy
 * a conv's backward reads (*copy set)? */
static int torch_saves(const yp_schedule *s, int t, int *copy) {
    const yp_tensor *tt = &s->tensors[t];
    *copy = tt->kind == YP_KIND_LOWP && read_in_backward(s, t);
    return *copy || tt->kind == YP_KIND_SAVED || (tt->kind == YP_KIND_INPUT && tt->last > s->loss_step);
}

int yp_torch_saved_bytes(const yp_schedule *s, yp_torch_saved *out, yp_err *err) {
    const yp_retention *r = s->opts.retention ? s->opts.retention : &yp_retention_table[s->opts.policy];
    memset(out, 0, sizeof *out);
    if (!r->keep_all)
        return yp_err_set(err, "saved bytes of PyTorch: the schedule follows the %s policy, not pytorch", r->name);
    if (s->opts.eval) return yp_err_set(err, "saved bytes of PyTorch: an evaluation pass saves nothing for backward");
    for (int t = 0; t < s->n_tensors; t++) {
        const yp_tensor *tt = &s->tensors[t];
        int copy;
        if (!torch_saves(s, t, &copy)) continue;
        if (__builtin_add_overflow(out->by_dtype[tt->dtype], tt->bytes, &out->by_dtype[tt->dtype]) ||
            __builtin_add_overflow(out->total, tt->bytes, &out->total) ||
            (copy && __builtin_add_overflow(out->weight_copies, tt->bytes, &out->weight_copies)))
            return yp_err_set(err, "saved bytes of PyTorch: over 2^63 bytes");
    }
    return 0;
}
