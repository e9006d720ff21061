/* dataset_verify.c - the scan's check of each image (dataset_internal.h), as YOLOv5's
 * verify_image_label checks it before training: the image decodes whole (yp_image_verify: format
 * by content, the decoder's guards, every byte of the coded data), is at least 10 pixels a side,
 * and a JPEG that lacks its end marker (FFD9), which YOLOv5 re-saves ("corrupt JPEG restored and
 * saved"), is kept with a note: it decodes, and the user's file is left as it is. Over several
 * threads (YOLOv5's NUM_THREADS: at most 8), each with its own decoder buffers. */
#define _XOPEN_SOURCE 700 /* pread */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dataset_internal.h"
#include "yp_image.h"

#define MIN_SIDE 10   /* YOLOv5: assert (shape[0] > 9) & (shape[1] > 9) */
#define MAX_THREADS 8 /* YOLOv5's NUM_THREADS = min(8, cpu count) */

/* Whether the file at path starts as a JPEG (FF D8) and does not end with its end marker (FF D9).
 * Opened non-blocking (the decoder already refused anything but a regular file). */
static int jpeg_without_eoi(const char *path) {
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) return 0;
    unsigned char head[2], tail[2];
    struct stat sb;
    int r = fstat(fd, &sb) == 0 && S_ISREG(sb.st_mode) && sb.st_size >= 4 && pread(fd, head, 2, 0) == 2 &&
            pread(fd, tail, 2, sb.st_size - 2) == 2 && head[0] == 0xFF && head[1] == 0xD8 &&
            !(tail[0] == 0xFF && tail[1] == 0xD9);
    close(fd);
    return r;
}

/* The reason of a decoder error "PATH: reason" without the path, which the warning names. */
static const char *reason_of(const char *msg, const char *path) {
    size_t n = strlen(path);
    return strncmp(msg, path, n) == 0 && msg[n] == ':' && msg[n + 1] == ' ' ? msg + n + 2 : msg;
}

int yp_ds_verify_image(const char *path, yp_image_buffers *b, yp_ds_image_check *out) {
    yp_image_limits lim;
    yp_err why;
    char note[600];
    yp_image_limits_default(&lim);
    memset(out, 0, sizeof *out);
    note[0] = '\0';
    if (yp_image_verify(path, &lim, b, &out->w, &out->h, &why)) {
        snprintf(note, sizeof note, "%.590s", reason_of(why.msg, path));
        out->w = out->h = 0;
    } else if (out->w < MIN_SIDE || out->h < MIN_SIDE) {
        snprintf(note, sizeof note, "image size %dx%d is under %d pixels a side (YOLOv5's minimum); enlarge or "
                 "remove it", out->w, out->h, MIN_SIDE);
        out->w = out->h = 0;
    } else {
        out->ok = 1;
        if ((out->no_eoi = jpeg_without_eoi(path)))
            snprintf(note, sizeof note, "the JPEG lacks its end marker (FFD9); kept, as it decodes (YOLOv5 re-saves "
                     "such a file; yoloplan leaves it as it is)");
    }
    if (note[0] && !(out->note = strdup(note))) return -1;
    return 0;
}

typedef struct {
    const yp_ds_paths *images;
    const int64_t *which;
    int64_t n;
    yp_ds_image_check *out;
    atomic_llong next;
    atomic_int oom;
} job;

static void *verify_main(void *arg) {
    job *j = arg;
    yp_image_buffers b = {0};
    for (int64_t k; !atomic_load(&j->oom) && (k = atomic_fetch_add(&j->next, 1)) < j->n;) {
        int64_t i = j->which ? j->which[k] : k;
        if (yp_ds_verify_image(yp_ds_paths_at(j->images, i), &b, &j->out[i])) atomic_store(&j->oom, 1);
    }
    yp_image_buffers_free(&b);
    return NULL;
}

int yp_ds_verify_images(const yp_ds_paths *images, const int64_t *which, int64_t n, yp_ds_image_check *out) {
    job j = {.images = images, .which = which, .n = n, .out = out};
    atomic_init(&j.next, 0);
    atomic_init(&j.oom, 0);
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    int64_t threads = cpus < 1 ? 1 : cpus > MAX_THREADS ? MAX_THREADS : cpus;
    if (threads > n) threads = n;
    pthread_t th[MAX_THREADS];
    int started = 0;
    for (; started < threads - 1; started++) /* this thread is the last one */
        if (pthread_create(&th[started], NULL, verify_main, &j)) break;
    verify_main(&j);
    for (int i = 0; i < started; i++) pthread_join(th[i], NULL);
    return atomic_load(&j.oom) ? -1 : 0;
}
