/* train_host.c - the host memory of a training run, term by term (yp_train_host.h): the planner's
 * pipeline figures (yp_host_mem.h) for the run's loaders, plus validation's buffers and the process. */
#include <string.h>

#include "yp_host_mem.h"
#include "yp_image_cache.h"
#include "yp_train_host.h"
#include "yp_val_rect.h"

yp_eval_shape yp_eval_shape_for(const yp_graph *g, int64_t batch, int64_t imgsz) {
    int64_t v = yp_val_rect_side(imgsz, yp_stride_gs(yp_graph_max_stride(g)), YP_VAL_RECT_PAD);
    yp_eval_shape e = {2 * batch, v, v, 0, g->nc + 5, imgsz, 1};
    for (int l = 0; l < g->nl; l++) {
        int64_t side = g->strides[l] > 0 ? v / g->strides[l] : 0;
        e.boxes += (int64_t)g->na * side * side;
    }
    return e;
}

int yp_train_host_estimate(const yp_graph *g, const yp_train_opts *o, int64_t batch, int64_t imgsz, int multi_scale,
                           int64_t first_epoch, int64_t arena, int64_t baseline, yp_train_host *h, yp_err *err) {
    memset(h, 0, sizeof *h);
    if (batch < 1 || imgsz < 32 || imgsz > 16384 || batch > (1LL << 24) || arena < 0 || baseline < 0 || o->workers < 1)
        return yp_err_set(err, "host memory: bad sizes (batch %lld, img %lld, %d workers)", (long long)batch,
                          (long long)imgsz, o->workers);
    yp_loader_opts lo;
    yp_loader_bytes lb;
    yp_train_loader_opts(o, batch, imgsz, first_epoch, &lo);
    if (yp_loader_host_bytes(&lo, o->train->n, yp_labels_max_rows(o->train), &lb, err)) return -1;
    h->arena = arena, h->baseline = baseline;
    h->train_loader = lb.total, h->decoders = lb.decoders;
    h->train_input = yp_host_input_bytes(batch, imgsz, multi_scale, yp_graph_max_stride(g));
    if (h->train_input < 0) return yp_err_set(err, "host memory: the float batch's size overflows");
    if (o->val) {
        yp_val_opts vo;
        yp_train_val_opts(o, first_epoch, &vo);
        yp_eval_shape e = yp_eval_shape_for(g, batch, imgsz);
        if (yp_validator_host_bytes(&e, g->nc, o->val, &vo, &h->val, err)) return -1;
        h->decoders += h->val.decoders;
    }
    h->runtime = YP_TRAIN_HOST_RUNTIME;
    if (o->cache_ram) {
        const yp_image_cache *tc = o->train_cache, *vc = o->val_cache;
        int64_t t = tc ? tc->bytes : yp_host_cache_bytes(o->train->n, imgsz);
        int64_t v = vc ? vc->bytes : o->val ? yp_host_cache_bytes(o->val->n, imgsz) : 0;
        if (t < 0 || v < 0) return yp_err_set(err, "host memory: the image cache's size overflows");
        h->cache = t + v;
    }
    h->pipeline = h->train_loader + h->train_input + h->val.total + h->decoders + h->cache;
    h->total = h->arena + h->baseline + h->pipeline + h->runtime;
    return 0;
}
