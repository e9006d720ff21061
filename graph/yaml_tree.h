/* yaml_tree.h - a YAML file read (libyaml) into a small tree of nodes that keep their line, so
 * that every error about the file can name FILE:LINE; and accessors for plain scalars.
 * Used by the model import (yaml_import.c) and the dataset scan (executor/data/dataset.c).
 * Defines: yp_ynode, yp_yn_read, yp_yn_free, yp_yn_is_null, yp_yn_long, yp_yn_double, yp_yn_bool,
 * yp_yn_describe, yp_yn_map_get. */
#ifndef YP_YAML_TREE_H
#define YP_YAML_TREE_H

#include <stddef.h>

#include "yp_error.h"

typedef enum { YP_YN_SCALAR, YP_YN_SEQ, YP_YN_MAP } yp_yn_kind;

typedef struct yp_ynode yp_ynode;
struct yp_ynode {
    yp_yn_kind kind;
    int line;     /* 1-based line where the node starts */
    int plain;    /* scalar written without quotes: only these can be numbers, booleans, null */
    char *text;   /* scalar text; NULL for lists and mappings */
    int n, cap;   /* children: sequence items, or mapping key0, value0, key1, value1, ... */
    yp_ynode **kids;
};

#define YP_YN_MAX_DEPTH 64 /* deeper nesting is an error, so walking the tree recursively is safe */
#define YP_YN_MAX_FILE (16 << 20) /* bytes; model, data and hyp yamls are a few kB */

/* Parses the single-document yaml file at path. Returns the root (free with yp_yn_free); an empty
 * file (or one with only comments) gives a null scalar at line 1. NULL with err set (FILE:LINE
 * and a fix): file not readable, not a regular file (a FIFO, a device, a folder: refused without
 * blocking, so /dev/zero or a FIFO cannot hang or fill memory), longer than YP_YN_MAX_FILE (also
 * when it grows while being read), syntax error, alias, non-scalar mapping key, nesting deeper
 * than YP_YN_MAX_DEPTH, several documents. Mapping keys are always scalars. */
yp_ynode *yp_yn_read(const char *path, yp_err *err);

/* Frees n and its children; NULL is fine. */
void yp_yn_free(yp_ynode *n);

/* Plain scalar "", "~", "null", "Null", "NULL" or "None" (Python's spelling). */
int yp_yn_is_null(const yp_ynode *n);

/* Plain scalar that is a whole decimal number. Returns 0 and sets *out, or -1. */
int yp_yn_long(const yp_ynode *n, long *out);

/* Plain scalar that is a finite number. Returns 0 and sets *out, or -1. */
int yp_yn_double(const yp_ynode *n, double *out);

/* Plain True/False (YAML or Python spelling). Returns 0 and sets *out, or -1. */
int yp_yn_bool(const yp_ynode *n, int *out);

/* Describes what n is, for "expected X, got Y" messages ("a list", "the string \"abc\"").
 * Returns buf. */
const char *yp_yn_describe(const yp_ynode *n, char *buf, size_t size);

/* The value of the first key `key` in mapping map, or NULL (absent, or map is not a mapping). */
const yp_ynode *yp_yn_map_get(const yp_ynode *map, const char *key);

#endif
