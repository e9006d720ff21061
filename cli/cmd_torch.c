/* cmd_torch.c - `yoloplan --gpu G --target pytorch ...`: what Ultralytics train.py takes on the
 * card and the --batch-size to pass (planner/yp_torch_train.h), AutoBatch's choice beside it, a
 * what-if with train.py's remedies for --batch, the training speed (planner/yp_torch_speed.h),
 * and AutoBatch's probe (--profile autobatch). */
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "plan_args.h"
#include "yp_torch_report.h"

static int print_json(cJSON *j) {
    char *s = cJSON_Print(j);
    if (s) puts(s);
    free(s);
    cJSON_Delete(j);
    return s ? 0 : -1;
}

/* AutoBatch as train.py runs it today: after check_amp, on AutoBatch's deep copy, thop
 * installed, 80 % of free; then train.py at its choice on the card. */
static int autobatch(const yp_graph *g, yp_torch_report *r, yp_err *err) {
    static const int64_t sizes[YP_AUTOBATCH_SIZES] = {1, 2, 4, 8, 16};
    yp_torch_probe_opts po = yp_torch_probe_opts_default(YP_TORCH_PRIOR_HEAD);
    po.capacity = r->capacity;
    r->n_rows = YP_AUTOBATCH_SIZES;
    if (yp_torch_autobatch_probe(g, r->opts.img, r->opts.amp ? YP_DTYPE_F16 : YP_DTYPE_F32, &po, sizes,
                                 YP_AUTOBATCH_SIZES, r->rows, &r->start, err))
        return -1;
    r->has_autobatch = 1, r->ab_fraction = 0.8;
    r->ab_batch = yp_torch_autobatch_pick(r->gpu->cuda_total_bytes, r->start.reserved, r->start.allocated, r->rows,
                                          r->n_rows, r->ab_fraction, &r->ab_anomaly, &r->ab_predicted);
    if (r->ab_batch > 0) {
        yp_torch_train_opts o = r->opts;
        o.batch = r->ab_batch, o.capacity = r->capacity;
        if (yp_torch_train_replay(g, &o, &r->ab, err)) return -1;
    }
    return 0;
}

/* The mean bytes of a split's images resized to img on the long side: 30 of them, as
 * check_cache_ram samples (0 when none reads: the caller assumes COCO's). */
static double split_image_bytes(const char *data, const char *split, int64_t img) {
    enum { SAMPLE = 30 };
    int w[SAMPLE], h[SAMPLE], n = 0;
    yp_err why;
    if (yp_dataset_sample_sizes(data, split, SAMPLE, w, h, &n, &why) || n == 0) return 0;
    double sum = 0;
    for (int i = 0; i < n; i++) sum += yp_torch_resized_bytes(w[i], h[i], img);
    return sum / n;
}

/* The run's images: --data's (or --images N), else COCO's, and their mean size at --img. */
static void run_images(const plan_args *a, yp_torch_report *r, yp_torch_host_opts *o) {
    r->speed_coco = !a->has_data && !a->n_images;
    o->train_images = a->has_data || a->n_images ? a->n_images : YP_TORCH_COCO_TRAIN_IMAGES;
    o->val_images = a->has_data ? a->n_val_images : a->n_images ? 0 : YP_TORCH_COCO_VAL_IMAGES;
    o->train_labels = o->val_labels = a->has_data ? a->data_stats.mean_labels : 7.3; /* COCO's mean */
    o->train_image_bytes = o->val_image_bytes = yp_torch_resized_bytes(0, 0, o->img);
    r->host_coco = 1;
    if (a->has_data) {
        double t = split_image_bytes(a->data_path, "train", o->img), v = split_image_bytes(a->data_path, "val", o->img);
        if (t > 0) o->train_image_bytes = t, r->host_coco = 0;
        if (v > 0) o->val_image_bytes = v;
    }
}

/* train.py at batch b: the --cache it ends with (check_cache_ram's decision on this machine's
 * memory), then its speed and its host memory with that cache, and in a what-if the host-side
 * remedies. */
static int speed_and_host(const yp_graph *g, const plan_args *a, yp_torch_report *r, int64_t b, yp_err *err) {
    yp_torch_host_opts *o = &r->host_opts;
    memset(o, 0, sizeof *o);
    o->batch = b, o->img = r->opts.img, o->workers_opt = a->torch_workers, o->cpus = a->torch_cpus;
    run_images(a, r, o);
    r->host_mem = a->host_mem, r->host_mem_here = !a->host_mem_given;
    r->cache_asked = r->cache = a->torch_cache;
    if (r->cache == YP_TORCH_CACHE_RAM) {
        yp_torch_check_cache_ram(o, r->host_mem);
        r->cache_refused_train = !o->cache_train, r->cache_refused_val = o->val_images > 0 && !o->cache_val;
        if (!o->cache_train) r->cache = YP_TORCH_CACHE_NONE; /* the loader decodes every image */
    }
    yp_torch_speed *s = &r->speed;
    memset(s, 0, sizeof *s);
    s->gpu = &a->gpu, s->batch = b, s->img = r->opts.img, s->amp = r->opts.amp, s->freeze = r->opts.freeze;
    s->cpus = a->torch_cpus, s->epochs = a->torch_epochs, s->labels_per_image = r->opts.labels_per_image;
    s->workers_opt = a->torch_workers, s->cache = r->cache != YP_TORCH_CACHE_NONE;
    s->train_images = o->train_images, s->val_images = o->val_images;
    if (yp_torch_speed_predict(g, s, err) || yp_torch_host_predict(o, &r->host, err)) return -1;
    r->has_speed = r->has_host = 1;
    if (r->whatif && yp_torch_host_remedies(g, o, r->cache_asked, s, r->host_remedies, &r->n_host_remedies, err))
        return -1;
    return 0;
}

int cmd_plan_torch(plan_args *a) {
    yp_err err;
    const yp_graph *g = a->search.models[0];
    yp_torch_report *r = calloc(1, sizeof *r);
    if (!r) return YP_EXIT_USAGE;
    r->gpu = &a->gpu, r->model = g->name, r->margin = YP_TORCH_MARGIN, r->max_batch = a->torch_max_batch;
    r->reserve = a->reserve, r->context = yp_torch_context_bytes(&a->gpu);
    r->capacity = yp_torch_capacity(&a->gpu) - a->reserve;
    r->opts = yp_torch_train_opts_default();
    r->opts.img = a->search.size_w[0], r->opts.amp = a->torch_amp;
    r->opts.optimizer = a->search.base.optimizer, r->opts.freeze = a->search.base.freeze;
    r->opts.multi_scale = a->search.base.multi_scale;
    r->opts.val_labels_per_image = a->search.base.labels_per_image;
    r->opts.labels_per_image = 4 * a->search.base.labels_per_image; /* mosaic: four images' labels */
    int rc = 0;
    if (a->torch_profile) {
        rc = autobatch(g, r, &err);
        if (!rc) rc = a->json ? print_json(yp_report_autobatch_json(r)) : (yp_report_autobatch(stdout, r), 0);
        rc = rc ? cli_fail(&err) : YP_EXIT_OK;
        free(r);
        return rc;
    }
    rc = yp_torch_recommend(g, &r->opts, r->capacity, r->margin, r->max_batch, &r->rec_batch, &r->rec, &err);
    if (!rc) rc = autobatch(g, r, &err);
    if (!rc && a->search.batch > 0) {
        r->whatif = 1, r->opts.batch = a->search.batch;
        yp_torch_train_opts o = r->opts;
        o.capacity = 0;
        rc = yp_torch_train_replay(g, &o, &r->need, &err);
        o.capacity = r->capacity;
        if (!rc) rc = yp_torch_train_replay(g, &o, &r->base, &err);
        if (!rc)
            rc =
                yp_torch_remedies(g, &r->opts, r->capacity, r->margin, r->rec_batch, r->remedies, &r->n_remedies, &err);
    }
    int64_t sb = r->whatif ? r->opts.batch : r->rec_batch;
    if (!rc && sb > 0) rc = speed_and_host(g, a, r, sb, &err);
    if (rc) {
        free(r);
        return cli_fail(&err);
    }
    if (a->json) print_json(yp_report_torch_json(r));
    else yp_report_torch(stdout, r);
    rc = r->whatif ? (r->base.oom ? YP_EXIT_NOFIT : YP_EXIT_OK) : (r->rec_batch > 0 ? YP_EXIT_OK : YP_EXIT_NOFIT);
    free(r);
    return rc;
}
