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
#include "yp_file.h"

int yp_rs_read_file(const char *path, int64_t max, int missing_ok, char **buf, size_t *n, yp_err *err) {
    *buf = NULL, *n = 0;
    struct stat st;
    if (missing_ok && stat(path, &st) != 0 && errno == ENOENT) return 1;
    return yp_file_read(path, "a results.csv", max, buf, n, err);
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
