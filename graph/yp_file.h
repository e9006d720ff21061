/* yp_file.h - opening and reading an input file the way every reader of the project must: only
 * a regular file (a FIFO, a device such as /dev/zero, a folder or a socket is refused before a
 * byte is read, so an input can neither hang the program nor feed it without end), opened
 * without blocking (O_NONBLOCK: a FIFO without a writer would block the open itself), and no
 * longer than the reader's cap (checked against the size at open and again while reading, for a
 * file that grows). Every failure is one line naming the file, the problem and the fix:
 *   "x.json: a FIFO, not an IR file; give a regular file"
 *   "x.json: 70000000 bytes, more than the 67108864 an IR file may have"
 * `what` names the kind of file in those lines ("an IR file", "a plan", "a yaml file", ...).
 * Defines: yp_file_kind, yp_file_open, yp_file_fopen, yp_file_read. */
#ifndef YP_FILE_H
#define YP_FILE_H

#include <stdint.h>
#include <stdio.h>
#include <sys/stat.h>

#include "yp_error.h"

/* "a folder", "a FIFO", "a device", "a socket", "not a regular file" for a mode that is not a
 * regular file's; NULL for a regular file. */
const char *yp_file_kind(mode_t mode);

/* Opens path read-only if it is a regular file of at most max_bytes (max_bytes < 0: no cap); the
 * descriptor is blocking again once open. Returns it (*size gets the file's size; size may be
 * NULL), or -1 with err set. */
int yp_file_open(const char *path, const char *what, int64_t max_bytes, int64_t *size, yp_err *err);

/* yp_file_open as a stdio stream ("rb"). NULL with err set. */
FILE *yp_file_fopen(const char *path, const char *what, int64_t max_bytes, yp_err *err);

/* Reads the whole file into a malloc'd buffer with a NUL after its len bytes (the caller frees
 * *buf). A file that grows past max_bytes while being read is refused too. 0, or -1 with err set
 * (and *buf NULL). */
int yp_file_read(const char *path, const char *what, int64_t max_bytes, char **buf, size_t *len, yp_err *err);

#endif
