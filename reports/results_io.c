/* results_io.c - the bounded reader and the atomic replacement that results.c and
 * results_plot.c share (results_internal.h). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "results_internal.h"
#include "yp_atomic_file.h"

static const char *kind_of(mode_t m) {
    if (S_ISDIR(m)) return "a folder";
    if (S_ISFIFO(m)) return "a FIFO";
    if (S_ISCHR(m) || S_ISBLK(m)) return "a device";
    if (S_ISSOCK(m)) return "a socket";
    return "not a regular file";
}

int yp_rs_read_file(const char *path, int64_t max, int missing_ok, char **buf, size_t *n, yp_err *err) {
    *buf = NULL, *n = 0;
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY); /* a FIFO cannot block the open */
    if (fd < 0) {
        if (errno == ENOENT && missing_ok) return 1;
        return yp_err_set(err, "%s: cannot open: %s", path, strerror(errno));
    }
    struct stat st;
    int rc = -1;
    if (fstat(fd, &st)) {
        yp_err_set(err, "%s: cannot stat: %s", path, strerror(errno));
    } else if (!S_ISREG(st.st_mode)) {
        yp_err_set(err, "%s: is %s; a results.csv must be a regular file", path, kind_of(st.st_mode));
    } else if ((int64_t)st.st_size > max) {
        yp_err_set(err, "%s: %lld bytes, above the reader's limit of %lld; is this a results.csv?", path,
                   (long long)st.st_size, (long long)max);
    } else {
        size_t want = (size_t)st.st_size, got = 0;
        char *b = malloc(want + 1);
        if (!b) {
            yp_err_set(err, "%s: out of memory reading %zu bytes", path, want);
        } else {
            ssize_t r = 1;
            while (got < want && r) {
                r = read(fd, b + got, want - got);
                if (r < 0 && errno == EINTR) r = 1;
                else if (r < 0) break;
                else got += (size_t)r; /* r == 0: the file shrank under us; what was read is what there is */
            }
            if (r < 0) {
                yp_err_set(err, "%s: read failed: %s", path, strerror(errno));
                free(b);
            } else {
                b[got] = '\0';
                *buf = b, *n = got, rc = 0;
            }
        }
    }
    close(fd);
    return rc;
}

char *yp_rs_temp_next_to(const char *path, yp_err *err) {
    size_t len = strlen(path) + 16;
    char *tmp = malloc(len);
    if (!tmp) {
        yp_err_set(err, "%s: out of memory", path);
        return NULL;
    }
    snprintf(tmp, len, "%s.tmp.XXXXXX", path);
    int fd = mkstemp(tmp);
    if (fd < 0) {
        yp_err_set(err, "%s: cannot create a temporary file next to it: %s; check that the folder exists and is "
                   "writable", path, strerror(errno));
        free(tmp);
        return NULL;
    }
    int bad = fchmod(fd, 0644) != 0;
    int saved = errno;
    if (close(fd) || bad) {
        yp_err_set(err, "%s: cannot set up the temporary file %s: %s", path, tmp, strerror(bad ? saved : errno));
        unlink(tmp);
        free(tmp);
        return NULL;
    }
    return tmp;
}

int yp_rs_commit(const char *tmp, const char *path, yp_err *err) {
    const char *what = "opening it to flush";
    int fd = open(tmp, O_RDONLY | O_CLOEXEC), rc = -1;
    if (fd >= 0) {
        what = "flushing it to the disk (fsync)";
        rc = fsync(fd);
        int saved = errno;
        close(fd);
        errno = saved;
    }
    if (!rc) {
        what = "renaming it into place";
        rc = rename(tmp, path);
    }
    if (rc) {
        int saved = errno;
        unlink(tmp);
        struct stat st;
        return yp_err_set(err, "%s: %s failed: %s; %s", path, what, strerror(saved),
                          stat(path, &st) == 0 ? "the previous file is intact" : "no file was written");
    }
    if (yp_af_sync_folder(path))
        return yp_err_set(err, "%s: written and renamed into place, but syncing its folder failed: %s; a crash now "
                          "may lose the new file", path, strerror(errno));
    return 0;
}
