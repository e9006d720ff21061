/* yp_yaml.h - import of Ultralytics-style model yaml files (libyaml) into a yp_graph.
 * Ownership: returns a new graph the caller frees with yp_graph_free. */
#ifndef YP_YAML_H
#define YP_YAML_H

#include "yp_graph.h"

/* Imports the model yaml at `path`. nc_override > 0 replaces the file's `nc`.
 * The graph's name is the file's base name without extension. NULL with err set (file, line,
 * problem and fix) on any problem. */
yp_graph *yp_yaml_import(const char *path, int nc_override, yp_err *err);

#endif
