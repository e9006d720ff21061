/* validate.c - val.py on the executor (yp_train.h): the letterboxing loader over the split (in
 * val.py's rectangular batches when the plan has val_rect: yp_val_rect.h), the plan's validation
 * pass per batch (yp_exec_eval, at the batch's shape), then per image NMS, the boxes back to
 * original pixels, the matching at ten IoU thresholds, and the metrics over the split. An image
 * that cannot be read is left out (the loader never substitutes in validation) and counted, so
 * the table's Images and Instances are those scored. Every
 * buffer is allocated and every shape's pass prepared in yp_validator_new, the batch buffers for
 * the largest batch the split makes (the plan's, or the whole split when it is smaller, at the
 * largest shape), and yp_validator_host_bytes counts them. */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "yp_clock.h"
#include "yp_train.h"
#include "yp_val_rect.h"

struct yp_validator {
    yp_exec *x;
    const yp_labels *val;
    yp_val_opts o;
    yp_eval_shape e;
    yp_loader *loader;
    yp_val_rect rect;       /* the rect batches (e.rect), else zeroed */
    int64_t bpe;            /* batches per pass */
    float *images;          /* the float batch */
    float *decoded;         /* Detect's decoded rows of the batch */
    void *nms_ws;
    int64_t nms_ws_bytes;
    float *dets;            /* one image's NMS output, max_det rows of 6 */
    float *labels;          /* one image's labels (class, x1, y1, x2, y2) */
    int64_t max_rows;
    int64_t skipped;        /* the loader's skipped count before this pass */
    yp_map map;
};

void yp_validator_free(yp_validator *v) {
    if (!v) return;
    yp_loader_close(v->loader);
    yp_val_rect_free(&v->rect);
    free(v->images), free(v->decoded), free(v->nms_ws), free(v->dets), free(v->labels);
    yp_map_free(&v->map);
    free(v);
}

/* n floats, or NULL (n checked against size_t). */
static float *floats(int64_t n) {
    if (n < 1 || (uint64_t)n > SIZE_MAX / sizeof(float)) return NULL;
    return malloc((size_t)n * sizeof(float));
}

/* The letterboxing loader's options for e and o (yp_validator_new and yp_validator_host_bytes; its
 * rect batches are the validator's). */
static void loader_opts(const yp_eval_shape *e, const yp_val_opts *o, yp_loader_opts *lo) {
    yp_loader_opts_default(lo);
    lo->workers = o->workers, lo->batch = (int)e->batch, lo->imgsz = (int)e->img, lo->validation = 1;
    lo->epochs = o->runs > 0 ? o->runs : 1, lo->cache = o->cache;
}

/* Images in the largest batch: the planned batch, or the whole split when it is smaller. */
static int64_t batch_images(const yp_eval_shape *e, const yp_labels *val) {
    return val->n < e->batch ? val->n : e->batch;
}

int yp_validator_host_bytes(const yp_eval_shape *e, int nc, const yp_labels *val, const yp_val_opts *o,
                            yp_val_host *h, yp_err *err) {
    memset(h, 0, sizeof *h);
    int64_t n = batch_images(e, val), rows = yp_labels_max_rows(val);
    yp_loader_opts lo;
    yp_loader_bytes lb;
    loader_opts(e, o, &lo);
    yp_val_rect sized = {.n_images = val->n, .batch = e->batch, .max_side = e->h}; /* what the ring holds */
    sized.n_batches = (val->n + e->batch - 1) / (e->batch > 0 ? e->batch : 1);
    if (e->rect) lo.rect = &sized;
    if (n < 1 || e->h < 1 || e->w < 1 || e->boxes < 1 || yp_loader_host_bytes(&lo, val->n, rows, &lb, err))
        return n < 1 ? yp_err_set(err, "validation: the split has no images") : -1;
    h->loader = lb.total, h->decoders = lb.decoders;
    h->images = n * e->h * e->w * 3 * (int64_t)sizeof(float);
    h->decoded = n * e->boxes * e->fields * (int64_t)sizeof(float);
    h->nms = yp_nms_workspace_bytes(&o->nms, e->boxes, nc);
    h->map = yp_map_host_bytes(nc, val->n * o->nms.max_det, rows > 0 ? rows : 1);
    if (h->nms < 0 || h->map < 0 || val->n > INT64_MAX / 1024)
        return yp_err_set(err, "validation: the NMS or metric tables' size is out of range");
    h->nms += o->nms.max_det * 6 * (int64_t)sizeof(float) + (rows > 0 ? rows : 1) * 5 * (int64_t)sizeof(float);
    h->total = h->loader + h->images + h->decoded + h->nms + h->map;
    return 0;
}

/* val.py's rect batches of the split, and the pass prepared at each of their shapes. */
static int prepare_rect(yp_validator *v, yp_err *err) {
    int64_t gs = yp_stride_gs(yp_graph_max_stride(v->x->train.s->g));
    if (yp_val_rect_build(v->val, v->e.batch, v->e.img, gs, &v->rect, err)) return -1;
    if (v->rect.max_side != v->e.h)
        return yp_err_set(err, "validation: rect batches at --img %lld reach %lld px, the plan %lld; re-plan",
                          (long long)v->e.img, (long long)v->rect.max_side, (long long)v->e.h);
    for (int64_t b = 0; b < v->rect.n_batches; b++)
        if (yp_exec_add_eval_shape(v->x, v->rect.h[b], v->rect.w[b], err)) return -1;
    return 0;
}

yp_validator *yp_validator_new(yp_exec *x, const yp_labels *val, const yp_val_opts *o, yp_err *err) {
    yp_eval_shape e = yp_exec_eval_shape(x);
    int nc = x->train.s->g->nc;
    if (e.h != e.w || x->train.plan->cand.img_w != x->train.plan->cand.img_h)
        return yp_err_set(err, "validation: the plan validates %lldx%lld images; letterboxed batches need a "
                          "square --img", (long long)e.w, (long long)e.h), NULL;
    if (val->stats.nc != nc)
        return yp_err_set(err, "validation: the data has nc %d, the model %d; train with the data's nc", val->stats.nc,
                          nc), NULL;
    yp_validator *v = calloc(1, sizeof *v);
    if (!v) return yp_err_set(err, "validation: out of memory"), NULL;
    v->x = x, v->val = val, v->o = *o, v->e = e;
    v->max_rows = yp_labels_max_rows(val);
    int64_t n_img = batch_images(&e, val), pixels = n_img * e.h * e.w * 3, boxes = n_img * e.boxes * e.fields;
    v->nms_ws_bytes = yp_nms_workspace_bytes(&o->nms, e.boxes, nc);
    v->images = floats(pixels), v->decoded = floats(boxes);
    v->dets = floats(o->nms.max_det * 6), v->labels = floats((v->max_rows > 0 ? v->max_rows : 1) * 5);
    v->nms_ws = v->nms_ws_bytes > 0 ? malloc((size_t)v->nms_ws_bytes) : NULL;
    int64_t cap_det;
    if (!v->images || !v->decoded || !v->dets || !v->labels || v->nms_ws_bytes < 0 || !v->nms_ws ||
        __builtin_mul_overflow(val->n, o->nms.max_det, &cap_det)) {
        yp_validator_free(v);
        return yp_err_set(err, "validation: out of memory for the %lld-image buffers", (long long)e.batch), NULL;
    }
    if (yp_map_init(&v->map, nc, cap_det, v->max_rows > 0 ? v->max_rows : 1, err)) {
        yp_validator_free(v);
        return NULL;
    }
    yp_loader_opts lo;
    loader_opts(&e, o, &lo);
    if (e.rect && prepare_rect(v, err)) {
        yp_validator_free(v);
        return NULL;
    }
    lo.rect = e.rect ? &v->rect : NULL;
    if (!(v->loader = yp_loader_open(val, &lo, err))) {
        yp_validator_free(v);
        return NULL;
    }
    v->bpe = yp_loader_batches_per_epoch(v->loader);
    return v;
}

/* The loader batch b's image i: its label rows (class, x1, y1, x2, y2 in original pixels) into
 * v->labels, from row *cursor on (rows are grouped by image, in image order). */
static int64_t image_labels(yp_validator *v, const yp_loader_batch *b, int i, int64_t *cursor) {
    int64_t k = 0, j = *cursor;
    for (; j < b->n_labels && (int)b->labels[6 * j] == i; j++, k++)
        memcpy(v->labels + 5 * k, b->labels + 6 * j + 1, 5 * sizeof(float));
    *cursor = j;
    yp_labels_native(&b->meta[i].rp, b->w, b->h, v->labels, k, v->labels);
    return k;
}

/* One batch: the pass, then per image NMS, rescaling, matching. */
static int run_batch(yp_validator *v, const yp_loader_batch *b, yp_coco_json *json, yp_val_result *out,
                     double *t_inf, double *t_nms, yp_err *err) {
    int nc = v->x->train.s->g->nc;
    if (yp_loader_to_float(b, v->images, batch_images(&v->e, v->val) * v->e.h * v->e.w * 3) < 0)
        return yp_err_set(err, "validation: a batch of %d images does not fit the plan's %lld", b->n,
                          (long long)v->e.batch);
    double t0 = yp_now_s();
    yp_eval_batch in = {.images = v->images, .n_images = b->n, .targets = v->o.loss ? b->labels : NULL,
                        .n_targets = b->n_labels, .h = b->h, .w = b->w};
    yp_eval_out res = {.decoded = v->decoded, .loss = {0, 0, 0, 0}};
    if (yp_exec_eval(v->x, &in, &res, err)) return -1;
    double t1 = yp_now_s();
    for (int k = 0; k < 3; k++) out->loss[k] += res.loss[k];
    int64_t cursor = 0;
    for (int i = 0; i < b->n; i++) {
        const float *pred = v->decoded + (int64_t)i * res.boxes * v->e.fields;
        int64_t nd = yp_nms(&v->o.nms, pred, res.boxes, nc, v->nms_ws, v->nms_ws_bytes, v->dets, err);
        if (nd < 0) return -1;
        yp_scale_boxes(&b->meta[i].rp, v->dets, nd, 6);
        int64_t nl = image_labels(v, b, i, &cursor);
        if (yp_map_add(&v->map, v->dets, nd, v->labels, nl, err)) return -1;
        out->instances += nl;
        if (json && yp_coco_json_add(json, yp_labels_image(v->val, b->meta[i].index), v->dets, nd, NULL, 0, err))
            return -1;
    }
    *t_inf += t1 - t0, *t_nms += yp_now_s() - t1;
    return 0;
}

int yp_validator_run(yp_validator *v, yp_coco_json *json, yp_val_result *out, yp_err *err) {
    memset(out, 0, sizeof *out);
    yp_map_reset(&v->map);
    double t0 = yp_now_s(), t_inf = 0, t_nms = 0;
    int64_t evaluated = 0;
    for (int64_t k = 0; k < v->bpe; k++) {
        yp_loader_batch b;
        int rc = yp_loader_next(v->loader, &b, err);
        if (rc == 0)
            return yp_err_set(err, "validation: the loader has no more passes prepared (%lld)", (long long)v->o.runs);
        if (rc < 0) return -1;
        if (b.n == 0) continue; /* every image of the batch failed: nothing to score */
        if (run_batch(v, &b, json, out, &t_inf, &t_nms, err)) return -1;
        evaluated++;
    }
    yp_loader_stats ls;
    yp_loader_get_stats(v->loader, &ls);
    out->skipped = ls.skipped - v->skipped, v->skipped = ls.skipped;
    yp_map_compute(&v->map);
    out->images = v->map.seen;
    out->mp = v->map.mp, out->mr = v->map.mr, out->map50 = v->map.map50, out->map = v->map.map;
    out->fitness = v->map.fitness;
    for (int k = 0; k < 3; k++) /* val.py: the mean over the batches */
        out->loss[k] /= (double)(evaluated > 0 ? evaluated : 1);
    out->seconds = yp_now_s() - t0;
    if (out->images > 0)
        out->ms_inference = t_inf * 1e3 / (double)out->images, out->ms_nms = t_nms * 1e3 / (double)out->images;
    return 0;
}

void yp_validator_print(const yp_validator *v, const yp_val_result *r, int per_class, char *const *names, FILE *f) {
    const yp_map *m = &v->map;
    fprintf(f, "%22s%11s%11s%11s%11s%11s%11s\n", "Class", "Images", "Instances", "P", "R", "mAP50", "mAP50-95");
    fprintf(f, "%22s%11lld%11lld%11.3g%11.3g%11.3g%11.3g\n", "all", (long long)r->images, (long long)r->instances,
            r->mp, r->mr, r->map50, r->map);
    if (r->skipped > 0)
        fprintf(f, "WARNING: %lld validation images could not be read and were left out; Images and Instances count "
                "the %lld scored\n", (long long)r->skipped, (long long)r->images);
    if (r->instances == 0)
        fprintf(f, "WARNING: no labels found in the validation set, can not compute metrics without labels\n");
    if (per_class && m->nc > 1 && m->best >= 0)
        for (int c = 0; c < m->nc; c++) {
            if (m->nt[c] <= 0) continue;
            char idx[24];
            snprintf(idx, sizeof idx, "%d", c);
            fprintf(f, "%22s%11lld%11lld%11.3g%11.3g%11.3g%11.3g\n", names && names[c] ? names[c] : idx,
                    (long long)r->images, (long long)m->nt[c], m->p[c], m->r[c], m->ap50[c], m->ap[c]);
        }
    fprintf(f, "Speed: %.1fms inference, %.1fms NMS per image at shape (%lld, 3, %lld, %lld)\n", r->ms_inference,
            r->ms_nms, (long long)v->e.batch, (long long)v->e.img,
            (long long)v->e.img); /* val.py's: the nominal size */
}
