/* fuzz_exec.h - the executor the checkpoint and .pt fuzz targets load weights into: the tiny test IR
 * (tests/data/ir/tiny.json) planned at batch 1, 64 px, on a one-thread CPU backend, made on first
 * use and kept for the process.
 * Defines: fz_tiny_exec. */
#ifndef FUZZ_EXEC_H
#define FUZZ_EXEC_H

#include "yp_executor.h"

/* The executor; aborts through fz_fail (naming target) when it cannot be made. */
yp_exec *fz_tiny_exec(const char *target);

#endif
