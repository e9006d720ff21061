/* yp_json.h - what every JSON reader of the project checks beyond cJSON's syntax: cJSON keeps
 * every member of an object and its lookups find the first, so a key given twice would be read
 * as its first value and the second silently ignored.
 * Defines: yp_json_duplicate_key. */
#ifndef YP_JSON_H
#define YP_JSON_H

#include <stddef.h>

#include <cjson/cJSON.h>

/* The first key given twice in one object anywhere in root: 1 with where set to its path and
 * key (e.g. "nodes[3].attrs: \"c\""), or 0 when there is none. Iterative (no recursion), so a
 * deeply nested file cannot exhaust the stack; objects of up to a few hundred keys are compared
 * pairwise. */
int yp_json_duplicate_key(const cJSON *root, char *where, size_t n);

#endif
