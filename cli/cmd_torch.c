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

/* train.py's speed at batch b on the card, for --data's images or COCO's. */
static int speed(const yp_graph *g, const plan_args *a, yp_torch_report *r, int64_t b, yp_err *err) {
    yp_torch_speed *s = &r->speed;
    memset(s, 0, sizeof *s);
    s->gpu = &a->gpu, s->batch = b, s->img = r->opts.img, s->amp = r->opts.amp, s->freeze = r->opts.freeze;
    s->cpus = a->torch_cpus, s->epochs = a->torch_epochs, s->labels_per_image = r->opts.labels_per_image;
    r->speed_coco = !a->has_data;
    s->train_images = a->has_data ? a->n_images : YP_TORCH_COCO_TRAIN_IMAGES;
    s->val_images = a->has_data ? a->n_val_images : YP_TORCH_COCO_VAL_IMAGES;
    if (yp_torch_speed_predict(g, s, err)) return -1;
    r->has_speed = 1;
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
            rc = yp_torch_remedies(g, &r->opts, r->capacity, r->margin, r->rec_batch, r->remedies, &r->n_remedies, &err);
    }
    int64_t sb = r->whatif ? r->opts.batch : r->rec_batch;
    if (!rc && sb > 0) rc = speed(g, a, r, sb, &err);
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
