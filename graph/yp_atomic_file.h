/* yp_atomic_file.h - writing a file atomically, for every file a run keeps (checkpoints through
 * yp_safetensors.h, the label cache, the run's hyp.yaml): a temporary file PATH.tmp.XXXXXX in the
 * destination's folder (mode 0644), written, flushed to the disk (fsync), renamed over the
 * destination, and the folder synced so the rename itself survives a crash. A failure before the
 * rename removes the temporary file and leaves an existing destination as it was; the error says
 * which step failed and so. Tests inject failures (yp_af_faults) to prove it.
 * Defines: yp_af_fail_point, yp_af_faults, yp_af_sink, yp_af_write, yp_af_body, yp_af_save,
 * yp_af_sync_folder, yp_af_save_bytes. */
#ifndef YP_ATOMIC_FILE_H
#define YP_ATOMIC_FILE_H

#include <stddef.h>
#include <stdint.h>

#include "yp_error.h"

/* Failures a test injects into yp_af_save (production passes NULL). */
typedef enum {
    YP_AF_FAIL_NONE,
    YP_AF_FAIL_FSYNC,  /* the temporary file's fsync fails (EIO) */
    YP_AF_FAIL_RENAME, /* everything is written and synced, then the rename fails (EIO) */
} yp_af_fail_point;

typedef struct {
    int64_t write_limit;    /* >= 0: writing more bytes than this fails with ENOSPC (a full disk) */
    yp_af_fail_point fail;
} yp_af_faults;

/* The temporary file being written (yp_af_save's; the body only passes it to yp_af_write). */
typedef struct yp_af_sink yp_af_sink;

/* Appends n bytes to the temporary file. 0, or -1 with errno set. */
int yp_af_write(yp_af_sink *k, const void *data, size_t n);

/* Writes the file's contents through yp_af_write. Returns 0; -1 with errno set and *what naming
 * the step ("writing the header"); or -2 with err set (a failure that is not the file's, e.g.
 * reading the data to write) and *what naming the step. */
typedef int (*yp_af_body)(void *ctx, yp_af_sink *k, const char **what, yp_err *err);

/* Writes path atomically (above) with body. 0, or -1 with err naming the file, the step that
 * failed and whether the previous file is intact. */
int yp_af_save(const char *path, yp_af_body body, void *ctx, const yp_af_faults *faults, yp_err *err);

/* fsync of the folder that holds path (where a rename's directory entry lives). 0, or -1 with
 * errno set. */
int yp_af_sync_folder(const char *path);

/* yp_af_save of the n bytes at data. */
int yp_af_save_bytes(const char *path, const void *data, size_t n, yp_err *err);

#endif
