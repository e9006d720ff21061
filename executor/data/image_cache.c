/* image_cache.c - --cache ram (yp_image_cache.h): the split decoded and resized once, on threads
 * that take images from a shared counter. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "yp_augment.h"
#include "yp_host_mem.h"
#include "yp_image.h"
#include "yp_image_cache.h"

int64_t yp_image_cache_bytes(int64_t n, int imgsz) { return yp_host_cache_bytes(n, imgsz); }

typedef struct {
    yp_image_cache *c;
    const yp_labels *labels;
    int imgsz, augment;
    atomic_llong next;
    atomic_llong bytes, failed;
    atomic_int oom;
} fill_job;

/* Image i decoded, resized as load_image, into c->im[i]. 0, or -1 when out of memory (a file
 * that does not decode is warned about and left NULL). */
static int fill_one(fill_job *j, int64_t i, void **ws, size_t *ws_bytes) {
    yp_cached_image *ci = &j->c->im[i];
    yp_image src = {0};
    yp_err err = {{0}};
    const char *path = yp_labels_image(j->labels, i);
    if (yp_image_read(path, NULL, &src, &err)) {
        fprintf(stderr, "cache: skipping %s: %s\n", path, err.msg);
        atomic_fetch_add(&j->failed, 1);
        return 0;
    }
    int w, h;
    yp_interp interp;
    int resize = yp_aug_load_size(src.w, src.h, j->imgsz, j->augment, &w, &h, &interp);
    size_t bytes = 0, need = 0;
    int rc = resize < 0 || yp_image_bytes(w, h, &bytes) ? -2 : 0;
    if (!rc && resize && yp_resize_ws(src.w, src.h, w, h, interp, &need)) rc = -2;
    if (!rc && need > *ws_bytes) { /* grows to the largest image: the fill's own scratch */
        void *p = realloc(*ws, need);
        if (!p) rc = -1;
        else *ws = p, *ws_bytes = need;
    }
    uint8_t *px = rc ? NULL : malloc(bytes);
    if (!rc && !px) rc = -1;
    if (!rc) {
        yp_image dst = {px, w, h};
        if (resize ? yp_resize(&src, &dst, interp, *ws, *ws_bytes) : (memcpy(px, src.rgb, bytes), 0)) rc = -2;
    }
    if (rc == -2) {
        fprintf(stderr, "cache: skipping %s: %dx%d cannot be resized to %d\n", path, src.w, src.h, j->imgsz);
        atomic_fetch_add(&j->failed, 1);
        free(px), px = NULL, rc = 0;
    }
    if (px) {
        *ci = (yp_cached_image){px, w, h, src.w, src.h};
        atomic_fetch_add(&j->bytes, (long long)bytes);
    }
    yp_image_free(&src);
    return rc;
}

static void *fill_main(void *arg) {
    fill_job *j = arg;
    void *ws = NULL;
    size_t ws_bytes = 0;
    for (;;) {
        int64_t i = atomic_fetch_add(&j->next, 1);
        if (i >= j->c->n || atomic_load(&j->oom)) break;
        if (fill_one(j, i, &ws, &ws_bytes)) atomic_store(&j->oom, 1);
    }
    free(ws);
    return NULL;
}

int yp_image_cache_fill(yp_image_cache *c, const yp_labels *labels, int imgsz, int augment, int threads, yp_err *err) {
    memset(c, 0, sizeof *c);
    if (threads < 1 || threads > 256 || imgsz < 2) return yp_err_set(err, "cache: bad thread count or image size");
    c->n = labels->n;
    if (!(c->im = calloc((size_t)(c->n > 0 ? c->n : 1), sizeof *c->im))) return yp_err_set(err, "cache: out of memory");
    fill_job j = {.c = c, .labels = labels, .imgsz = imgsz, .augment = augment};
    pthread_t th[256];
    int started = 0, rc = 0;
    for (; started < threads; started++)
        if (pthread_create(&th[started], NULL, fill_main, &j)) break;
    if (started == 0) fill_main(&j); /* no thread could start: fill on this one */
    for (int k = 0; k < started; k++) pthread_join(th[k], NULL);
    c->bytes = atomic_load(&j.bytes), c->failed = atomic_load(&j.failed);
    if (atomic_load(&j.oom))
        rc = yp_err_set(err, "cache: out of memory after %.2f GB; drop --cache", (double)c->bytes / 1e9);
    return rc;
}

const yp_cached_image *yp_image_cache_get(const yp_image_cache *c, int64_t i) {
    return i >= 0 && i < c->n && c->im[i].rgb ? &c->im[i] : NULL;
}

void yp_image_cache_free(yp_image_cache *c) {
    for (int64_t i = 0; c->im && i < c->n; i++) free(c->im[i].rgb);
    free(c->im);
    memset(c, 0, sizeof *c);
}
