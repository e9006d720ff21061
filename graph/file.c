/* file.c - the one safe way to open and read an input file (yp_file.h). */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "yp_file.h"

const char *yp_file_kind(mode_t m) {
    if (S_ISREG(m)) return NULL;
    if (S_ISDIR(m)) return "a folder";
    if (S_ISFIFO(m)) return "a FIFO";
    if (S_ISCHR(m) || S_ISBLK(m)) return "a device";
    if (S_ISSOCK(m)) return "a socket";
    return "not a regular file";
}

int yp_file_open(const char *path, const char *what, int64_t max_bytes, int64_t *size, yp_err *err) {
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
    if (fd < 0) {
        yp_err_set(err, "%s: cannot open: %s; check the path", path, strerror(errno));
        return -1;
    }
    struct stat st;
    const char *problem = NULL;
    if (fstat(fd, &st)) problem = strerror(errno);
    else problem = yp_file_kind(st.st_mode);
    if (problem) {
        yp_err_set(err, "%s: %s, not %s; give a regular file", path, problem, what);
        close(fd);
        return -1;
    }
    if (max_bytes >= 0 && (int64_t)st.st_size > max_bytes) {
        yp_err_set(err, "%s: %lld bytes, more than the %lld %s may have", path, (long long)st.st_size,
                   (long long)max_bytes, what);
        close(fd);
        return -1;
    }
    int fl = fcntl(fd, F_GETFL);
    if (fl != -1) fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
    if (size) *size = (int64_t)st.st_size;
    return fd;
}

FILE *yp_file_fopen(const char *path, const char *what, int64_t max_bytes, yp_err *err) {
    int fd = yp_file_open(path, what, max_bytes, NULL, err);
    if (fd < 0) return NULL;
    FILE *f = fdopen(fd, "rb");
    if (!f) {
        yp_err_set(err, "%s: cannot open: %s", path, strerror(errno));
        close(fd);
    }
    return f;
}

int yp_file_read(const char *path, const char *what, int64_t max_bytes, char **buf, size_t *len, yp_err *err) {
    *buf = NULL, *len = 0;
    int64_t size;
    int fd = yp_file_open(path, what, max_bytes, &size, err);
    if (fd < 0) return -1;
    size_t cap = (size_t)size + 1, n = 0; /* + 1: room for the NUL, and to see a file that grew */
    char *b = malloc(cap + 1);
    int rc = b ? 0 : yp_err_set(err, "%s: out of memory reading %lld bytes", path, (long long)size);
    while (!rc) {
        if (n == cap) {
            if (max_bytes >= 0 && (int64_t)n > max_bytes) {
                rc = yp_err_set(err, "%s: grew past the %lld bytes %s may have while being read", path,
                                (long long)max_bytes, what);
                break;
            }
            size_t nc = cap * 2;
            char *nb = realloc(b, nc + 1);
            if (!nb) {
                rc = yp_err_set(err, "%s: out of memory", path);
                break;
            }
            b = nb, cap = nc;
        }
        ssize_t got = read(fd, b + n, cap - n);
        if (got < 0 && errno == EINTR) continue;
        if (got < 0) rc = yp_err_set(err, "%s: read error: %s", path, strerror(errno));
        if (got <= 0) break;
        n += (size_t)got;
    }
    if (!rc && max_bytes >= 0 && (int64_t)n > max_bytes)
        rc = yp_err_set(err, "%s: grew past the %lld bytes %s may have while being read", path, (long long)max_bytes,
                        what);
    close(fd);
    if (rc) {
        free(b);
        return -1;
    }
    b[n] = 0;
    *buf = b, *len = n;
    return 0;
}
