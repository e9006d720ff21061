/* yp_ir.h - the JSON IR (graph/IR.md): load + validate with cJSON, write back.
 * Ownership: loaders return a new yp_graph the caller frees with yp_graph_free; writers return
 * a malloc'd string the caller frees. */
#ifndef YP_IR_H
#define YP_IR_H

#include "yp_graph.h"

#define YP_IR_MAX_BYTES (64u << 20) /* larger files are refused before parsing */

/* Parses and validates an IR held in memory (len bytes, need not be NUL-terminated).
 * `file` only names the source in error messages. NULL with err set on any problem. */
yp_graph *yp_ir_load_buffer(const char *buf, size_t len, const char *file, yp_err *err);

/* Reads `path` and loads it as above. */
yp_graph *yp_ir_load_file(const char *path, yp_err *err);

/* Serialises g as IR JSON (stable key order, one node per line). NULL on OOM. */
char *yp_ir_write_string(const yp_graph *g);

/* Writes g to path atomically (temp file + rename). 0, or -1 with err set. */
int yp_ir_write_file(const yp_graph *g, const char *path, yp_err *err);

#endif
