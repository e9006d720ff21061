/* cli.h - shared pieces of the yoloplan command line: model resolution, number parsing,
 * and the subcommand entry points. Exit codes: 0 ok, 1 no plan fits, 2 bad input. */
#ifndef YP_CLI_H
#define YP_CLI_H

#include <stdint.h>
#include <stdio.h>

#include "yp_graph.h"

#define YP_EXIT_OK 0
#define YP_EXIT_NOFIT 1
#define YP_EXIT_USAGE 2

/* Loads a model given as a bundled name ("yolov5s"), an IR file (.json) or a model yaml. A yaml
 * path that does not exist names the bundled model of its file name, as train.py's --cfg finds
 * yolov5n.yaml (or models/yolov5n.yaml) among its own models. nc > 0 overrides the class count.
 * NULL with err set; the caller frees the graph. */
yp_graph *cli_load_model(const char *spec, int nc, yp_err *err);

/* The commands that read images (train, val) feed a model RGB: 0, or -1 with err naming the model
 * and its input channels. */
int cli_check_rgb(const yp_graph *g, const char *spec, yp_err *err);

/* A copy of g with one anchor fewer per level (the first na - 1 of each; a smaller Detect head
 * and loss), for the what-if's remedy; NULL when g has one anchor per level or on failure. The
 * caller frees it. */
yp_graph *cli_fewer_anchors(const yp_graph *g);

/* Parses "640" or "640x480" (width x height). 0, or -1 with err set. */
int cli_parse_img(const char *s, int64_t *w, int64_t *h, yp_err *err);

/* train.py's check_img_size, for every command that takes --img: size rounded up to a multiple
 * of gs (yp_stride_gs of the model's largest stride), at least floor; when that changes it, one
 * line "WARNING: --img-size S must be multiple of max stride GS, updating to N" on warn (may be
 * NULL). Returns the size to use. */
int64_t cli_check_img_size(int64_t size, int64_t gs, int64_t floor, FILE *warn);

/* Parses a positive integer option value in [lo, hi]. 0, or -1 with err set. */
int cli_parse_int(const char *opt, const char *s, long lo, long hi, long *out, yp_err *err);

/* Parses a size (512MiB, 1GiB, 7.5G, or 0) for option opt. 0, or -1 with err set. */
int cli_parse_size(const char *opt, const char *v, int64_t *out, yp_err *err);

/* Prints "yoloplan: <msg>" to stderr and returns YP_EXIT_USAGE. */
int cli_fail(const yp_err *err);

/* Host memory available to a new process now (MemAvailable of /proc/meminfo, else the free
 * pages), bytes; 0 if neither can be read. */
int64_t cli_host_available_bytes(void);

int cmd_info(int argc, char **argv);
int cmd_import(int argc, char **argv);
int cmd_schedule(int argc, char **argv);
int cmd_plan(int argc, char **argv);
int cmd_bench_step(int argc, char **argv);
int cmd_synth(int argc, char **argv);
int cmd_train(int argc, char **argv);
int cmd_val(int argc, char **argv);

#endif
