/* ir_json.h - typed getters over cJSON trees with path-naming errors, shared by the IR loader
 * (ir_load.c) and the ops' attrs readers (op_*.c). Graph-internal: yp_graph.h and yp_ir.h do not
 * expose cJSON.
 * Defines: yp_jctx, YP_LIM_CHANNELS, YP_LIM_KERNEL, yp_jtype, yp_jshow, yp_jkeys, yp_jreq, yp_jint,
 * yp_jnum, yp_jbool, yp_jstr, yp_jints. */
#ifndef YP_IR_JSON_H
#define YP_IR_JSON_H

#include <stddef.h>

#include <cjson/cJSON.h>

#include "yp_error.h"

/* What every error needs: the file being read and where the message goes. */
typedef struct {
    const char *file;
    yp_err *err;
} yp_jctx;

#define YP_LIM_CHANNELS (1 << 20)
#define YP_LIM_KERNEL 64

/* "a number", "a string", ..., "nothing" for NULL: the kind of v, for messages. */
const char *yp_jtype(const cJSON *v);
/* Short rendering of a value for messages ("3", "\"3\"", "an array"). */
void yp_jshow(const cJSON *v, char *buf, size_t n);

/* Each getter below reads obj[key] (path names obj in messages; "" for the top level) and returns 0,
 * or -1 with the error set. */

/* Reports the first key of obj that is not in `allowed` (NULL-terminated). */
int yp_jkeys(yp_jctx *c, const cJSON *obj, const char *path, const char *const *allowed);
/* obj[key], or NULL with "missing; add it" set. */
const cJSON *yp_jreq(yp_jctx *c, const cJSON *obj, const char *path, const char *key);
/* An integer in [lo, hi]. */
int yp_jint(yp_jctx *c, const cJSON *obj, const char *path, const char *key, long lo, long hi, int *out);
/* A number in [lo, hi]. */
int yp_jnum(yp_jctx *c, const cJSON *obj, const char *path, const char *key, double lo, double hi, double *out);
/* true or false, as 1 or 0. */
int yp_jbool(yp_jctx *c, const cJSON *obj, const char *path, const char *key, int *out);
/* A non-empty string that fits in n bytes with its NUL. */
int yp_jstr(yp_jctx *c, const cJSON *obj, const char *path, const char *key, char *out, size_t n);
/* An array of 1..max integers in [lo, hi]; *n_out gets its length. */
int yp_jints(yp_jctx *c, const cJSON *obj, const char *path, const char *key, int max, long lo, long hi,
             int *out, int *n_out);

#endif
