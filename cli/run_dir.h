/* run_dir.h - run folders of `yoloplan train` and `val` (YOLOv5's increment_path), and finding
 * the checkpoint a bare --resume continues. */
#ifndef YP_RUN_DIR_H
#define YP_RUN_DIR_H

#include <stddef.h>
#include <stdio.h>

#include "yp_error.h"

#define RUN_DIR_PATH 4096

/* project/name, or with exist_ok 0 and that taken, project/name2, name3, ...; creates it (and its
 * weights/ folder with weights_dir). 0, or -1 with err naming --project and the fix. */
int run_dir_make(const char *project, const char *name, int exist_ok, int weights_dir, char *out, size_t n,
                 yp_err *err);

/* The newest (modification time) last.safetensors under dir. 0, or -1 with err set. */
int run_dir_latest(const char *dir, char *out, size_t n, yp_err *err);

/* The run folder of a checkpoint: <run>/weights/last.safetensors -> <run>. */
int run_dir_of_checkpoint(const char *ckpt, char *out, size_t n, yp_err *err);

/* Removes the temporary files of the atomic writer ("FILE.tmp.XXXXXX", yp_atomic_file.h) in the
 * run folder and its weights/ folder: what a run killed inside a write leaves (a partial
 * checkpoint is as large as a whole one). One line on log per file removed. The count removed. */
int run_dir_remove_partials(const char *run, FILE *log);

#endif
