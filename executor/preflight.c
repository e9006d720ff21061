/* preflight.c - the device-memory check before step 1 (yp_preflight.h). */
#include <stdio.h>

#include "yp_preflight.h"

#define GIB 1073741824.0

int64_t yp_preflight_budget(const yp_preflight *p) {
    if (!p->known || p->free_bytes < 0 || p->fixed_bytes < 0) return -1;
    return p->free_bytes + p->fixed_bytes;
}

yp_preflight_verdict yp_preflight_decide(const yp_preflight *p) {
    int64_t budget = yp_preflight_budget(p);
    if (budget < 0) return YP_PREFLIGHT_UNKNOWN;
    return p->arena_bytes + p->fixed_bytes > budget ? YP_PREFLIGHT_SHORT : YP_PREFLIGHT_FITS;
}

int yp_preflight_of(yp_backend *be, int64_t arena_bytes, yp_preflight *p, yp_err *err) {
    p->arena_bytes = arena_bytes;
    p->fixed_bytes = be->fixed_bytes;
    p->free_bytes = -1;
    int rc = yp_backend_device_free(be, &p->free_bytes);
    if (rc < 0) return yp_err_set(err, "asking the %s device for its free memory: %s", be->name, be->last_error(be));
    p->known = rc == 1;
    return 0;
}

void yp_preflight_describe(const yp_preflight *p, char *buf, size_t n) {
    snprintf(buf, n, "arena %.2f GiB + fixed cost %.2f GiB = %.2f GiB, but the device has %.2f GiB for them (%.2f GiB "
             "free now, after the fixed cost)", (double)p->arena_bytes / GIB, (double)p->fixed_bytes / GIB,
             (double)(p->arena_bytes + p->fixed_bytes) / GIB, (double)yp_preflight_budget(p) / GIB,
             (double)p->free_bytes / GIB);
}
