/* results_internal.h - file handling shared by results.c and results_plot.c (internal to
 * reports/): a bounded read that never blocks on a FIFO, and putting a file that PLplot wrote
 * under a temporary name into place (fsync, rename, fsync of the folder). Texts written from
 * memory go through graph/yp_atomic_file.h. */
#ifndef RESULTS_INTERNAL_H
#define RESULTS_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "yp_error.h"

/* Reads all of path (a regular file of at most max bytes; opened O_NONBLOCK so a FIFO cannot
 * hang us) into *buf (malloc'ed, NUL-terminated, the caller frees) and *n. 0; 1 when the file
 * does not exist and missing_ok (nothing allocated); -1 with err set. */
int yp_rs_read_file(const char *path, int64_t max, int missing_ok, char **buf, size_t *n, yp_err *err);

/* Creates an empty temporary file next to path ("<path>.tmp.XXXXXX", mode 0644) and returns
 * its name (malloc'ed), or NULL with err set. */
char *yp_rs_temp_next_to(const char *path, yp_err *err);

/* Flushes tmp to the disk, renames it to path and flushes path's folder. On failure tmp is
 * removed and err says which step failed. 0 or -1. */
int yp_rs_commit(const char *tmp, const char *path, yp_err *err);

#endif
