/* device.c - the command line's device (device.h). */
#include <stdio.h>

#include "device.h"
#include "preflight.h"
#include "yp_candidate.h"

int cli_device_spec(const char *opt, const char *v, long threads, yp_device_spec *s, yp_err *err) {
    char why[256];
    if (yp_device_spec_parse(v, s, why, sizeof why)) return yp_err_set(err, "%s %s: %s", opt, v, why);
    if (s->n_devices > 1)
        return yp_err_set(err, "%s %s: multi-GPU training (DDP) is not available yet; pass one device, e.g. %s %d",
                          opt, v, opt, s->devices[0]);
    if (!s->threads && threads > 0) s->threads = threads > YP_CPU_THREADS_MAX ? YP_CPU_THREADS_MAX : (int)threads;
    return 0;
}

int cli_device_check(const char *opt, const char *v, yp_err *err) {
    yp_device_spec s;
    return cli_device_spec(opt, v, 0, &s, err);
}

yp_backend *cli_device_open(const yp_device_spec *s, const char *what, yp_err *err) {
    char why[256];
    yp_backend *be = yp_backend_new_spec(s, why, sizeof why);
    if (!be) yp_err_set(err, "%s: %s", what, why);
    return be;
}

int cli_device_budget(yp_backend *be, int64_t host_budget, const char *gpu, yp_gpu *dev, yp_err *err) {
    if (be->host_memory) {
        yp_gpu_host(host_budget, dev);
        return 0;
    }
    if (gpu && gpu[0]) return yp_gpu_parse(gpu, dev, err);
    return cli_gpu_of_backend(be, dev, err);
}

int cli_device_spec_of_plan(yp_device_spec *s, const yp_plan *p) {
    yp_scratch_model m;
    if (yp_scratch_model_parse(yp_candidate_scratch_name(&p->cand), &m, NULL, 0)) return 0;
    return yp_device_spec_adopt(s, &m);
}
