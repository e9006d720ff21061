/* loss_buffers.c - the sizes of the loss's two work buffers: the one rule the schedule plans them by
 * and the executor's loss (executor/loss_targets.c) checks them by. */
#include "yp_schedule.h"

int64_t yp_loss_assign_floats(int64_t na, int64_t labels) {
    if (na < 1 || labels < 0) return -1;
    int64_t per_label = YP_LOSS_CELLS_PER_LABEL * na * YP_LOSS_POSITIVE_FLOATS;
    return labels > INT64_MAX / per_label ? -1 : labels * per_label;
}

int64_t yp_loss_objmap_floats(int64_t batch, int64_t na, int nl, const int64_t *grid_h, const int64_t *grid_w) {
    if (batch < 0 || na < 1 || nl < 1) return -1;
    int64_t cells = 0; /* the largest grid_h * grid_w */
    for (int l = 0; l < nl; l++) {
        if (grid_h[l] < 0 || grid_w[l] < 0 || (grid_w[l] > 0 && grid_h[l] > INT64_MAX / grid_w[l])) return -1;
        if (grid_h[l] * grid_w[l] > cells) cells = grid_h[l] * grid_w[l];
    }
    if (cells > 0 && (na > INT64_MAX / cells || batch > INT64_MAX / (na * cells))) return -1;
    return batch * na * cells;
}
