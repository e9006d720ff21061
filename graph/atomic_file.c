/* atomic_file.c - yp_af_save (yp_atomic_file.h): temporary file, body, fsync, rename, folder
 * sync, with the injected failures tests use. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "yp_atomic_file.h"
#include "yp_file.h"

struct yp_af_sink {
    int fd;
    int64_t written, limit; /* limit < 0: none */
    int injected;           /* the failure was an injected one */
};

int yp_af_write(yp_af_sink *k, const void *data, size_t n) {
    const char *p = data;
    if (k->limit >= 0 && k->written + (int64_t)n > k->limit) {
        k->injected = 1, errno = ENOSPC;
        return -1;
    }
    while (n) {
        ssize_t w = write(k->fd, p, n);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) {
            if (w == 0) errno = EIO;
            return -1;
        }
        p += w, n -= (size_t)w, k->written += w;
    }
    return 0;
}

/* fsync of the folder holding path (where the rename's directory entry lives). */
int yp_af_sync_folder(const char *path) {
    const char *slash = strrchr(path, '/');
    char *dir = slash ? strndup(path, slash == path ? 1 : (size_t)(slash - path)) : strdup(".");
    if (!dir) return -1;
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    free(dir);
    if (fd < 0) return -1;
    int rc = fsync(fd);
    close(fd);
    return rc;
}

/* The fix for a failure with errno e, for the end of the message ("" when there is none to give). */
static const char *fix_of(int e) {
    switch (e) {
    case ENOSPC:
    case EDQUOT: return "; free space on that disk or write elsewhere";
    case EROFS: return "; its file system is mounted read-only: remount it read-write or write elsewhere";
    case EACCES:
    case EPERM: return "; its folder is not writable: fix the permissions or write elsewhere";
    default: return "";
    }
}

int yp_af_save(const char *path, yp_af_body body, void *ctx, const yp_af_faults *faults, yp_err *err) {
    struct stat st;
    /* a rename replaces whatever the path names: a symlink, a device node or a FIFO there is
     * refused, not replaced by a regular file */
    if (lstat(path, &st) == 0 && !S_ISREG(st.st_mode))
        return yp_err_set(err, "%s: %s, not a regular file; write to a new path or a regular file", path,
                          S_ISLNK(st.st_mode) ? "a symbolic link" : yp_file_kind(st.st_mode));
    const char *intact = stat(path, &st) == 0 ? "the previous file is intact" : "no file was written";
    size_t tn = strlen(path) + 16;
    char *tmp = malloc(tn);
    yp_af_sink k = {-1, 0, faults ? faults->write_limit : -1, 0};
    if (tmp) snprintf(tmp, tn, "%s.tmp.XXXXXX", path), k.fd = mkstemp(tmp);
    if (k.fd < 0) {
        int e = errno;
        yp_err_set(err, "%s: cannot create a temporary file next to it: %s; %s%s", path,
                   tmp ? strerror(e) : "out of memory", intact, tmp ? fix_of(e) : "");
        free(tmp);
        return -1;
    }
    const char *what = "setting the permissions";
    yp_err inner = {{0}};
    int rc = fchmod(k.fd, 0644);
    if (!rc) rc = body(ctx, &k, &what, &inner);
    if (!rc) {
        what = "flushing to the disk (fsync)";
        if (faults && faults->fail == YP_AF_FAIL_FSYNC) k.injected = 1, errno = EIO, rc = -1;
        else rc = fsync(k.fd);
    }
    int saved = errno;
    if (close(k.fd) && !rc) what = "closing", saved = errno, rc = -1;
    if (!rc) {
        what = "renaming it into place";
        if (faults && faults->fail == YP_AF_FAIL_RENAME) k.injected = 1, saved = EIO, rc = -1;
        else if (rename(tmp, path)) saved = errno, rc = -1;
    }
    if (rc) {
        unlink(tmp);
        if (rc == -2)
            yp_err_set(err, "%s: %s failed: %s; %s", path, what, inner.msg, intact);
        else
            yp_err_set(err, "%s: %s failed: %s%s; %s%s", path, what, strerror(saved), k.injected ? " (injected)" : "",
                       intact, fix_of(saved));
    } else if (yp_af_sync_folder(path)) {
        rc = yp_err_set(err, "%s: written and renamed into place, but syncing its folder failed: %s; a crash now may "
                        "lose the new file", path, strerror(errno));
    }
    free(tmp);
    return rc ? -1 : 0;
}

typedef struct {
    const void *data;
    size_t n;
} bytes_ctx;

static int write_bytes(void *ctx, yp_af_sink *k, const char **what, yp_err *err) {
    const bytes_ctx *b = ctx;
    (void)err;
    *what = "writing";
    return yp_af_write(k, b->data, b->n);
}

int yp_af_save_bytes(const char *path, const void *data, size_t n, yp_err *err) {
    bytes_ctx b = {data, n};
    return yp_af_save(path, write_bytes, &b, NULL, err);
}
