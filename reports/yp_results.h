/* yp_results.h - a training run's results.csv, written as YOLOv5's train.py writes it, and its
 * curves (results.png + results.svg, the layout of YOLOv5's plot_results) drawn with PLplot.
 *
 * The file format is train.py's (utils/loggers on_fit_epoch_end): a header line of the 14 column
 * names, each right-aligned in %20s, then one line per epoch of the 14 values, each in %20.5g
 * (the epoch too), fields separated by "," alone (the padding is the only space). The header is
 * written only when the file is new (missing or empty). */
#ifndef YP_RESULTS_H
#define YP_RESULTS_H

#include <stdint.h>

#include "yp_error.h"

#define YP_RESULTS_COLS 14
/* The largest results.csv yp_results_read accepts (a run of 1000 epochs is about 300 KB). */
#define YP_RESULTS_MAX_BYTES (64LL << 20)
/* %20.5g keeps 5 significant digits: larger epochs would be written rounded (1.2346e+05). */
#define YP_RESULTS_MAX_EPOCH 99999

/* train.py's column names, in file order: "epoch", "train/box_loss", ..., "x/lr2". */
extern const char *const yp_results_columns[YP_RESULTS_COLS];

/* Indices into yp_results_row.v (column i + 1 of the file). */
enum {
    YP_RES_TRAIN_BOX, /* train/box_loss */
    YP_RES_TRAIN_OBJ, /* train/obj_loss */
    YP_RES_TRAIN_CLS, /* train/cls_loss */
    YP_RES_PRECISION, /* metrics/precision */
    YP_RES_RECALL,    /* metrics/recall */
    YP_RES_MAP50,     /* metrics/mAP_0.5 */
    YP_RES_MAP,       /* metrics/mAP_0.5:0.95 */
    YP_RES_VAL_BOX,   /* val/box_loss */
    YP_RES_VAL_OBJ,   /* val/obj_loss */
    YP_RES_VAL_CLS,   /* val/cls_loss */
    YP_RES_LR0,       /* x/lr0 */
    YP_RES_LR1,       /* x/lr1 */
    YP_RES_LR2        /* x/lr2 */
};

/* One epoch's line. epoch is 0-based, as train.py's. */
typedef struct {
    int64_t epoch;
    double v[YP_RESULTS_COLS - 1];
} yp_results_row;

/* Formats r as the file line train.py writes (no newline) into buf; the length (14 * 21 - 1
 * = 293 bytes for finite values), or -1 when cap is too small. NaN is written "nan" whatever
 * its sign, as Python does. */
int yp_results_format_row(const yp_results_row *r, char *buf, int cap);

/* Appends r to csv_path, creating it (mode 0644) with the header line first when it is missing
 * or empty, and fsyncs it. An existing file must start with the header and end with a newline
 * (a line cut short by a crash is reported, not extended). 0, or -1 with err naming the file
 * and what to do. The epoch must be in 0 .. YP_RESULTS_MAX_EPOCH. */
int yp_results_append(const char *csv_path, const yp_results_row *r, yp_err *err);

/* Reads csv_path back: *rows (malloc'ed, the caller frees; NULL when *n is 0) and *n in file
 * order. Fields may carry any spaces or tabs around them and lines may end in "\r\n"; the header
 * must name the 14 columns in order; an empty file has no rows. Refuses anything but a regular
 * file (a FIFO never blocks it) and files over YP_RESULTS_MAX_BYTES. 0, or -1 with err naming
 * file:line and the field. */
int yp_results_read(const char *csv_path, yp_results_row **rows, int64_t *n, yp_err *err);

/* For resume: keeps the header and the lines whose epoch is <= last_epoch (byte for byte, in
 * their order), dropping the others, by writing a temporary file next to csv_path and renaming
 * it over (a crash leaves the old or the new file, never half of one). A missing file, or one
 * with nothing to drop, is left as it is. 0, or -1 with err set (the file is then untouched). */
int yp_results_truncate(const char *csv_path, int64_t last_epoch, yp_err *err);

/* Reads csv_path and draws <out_stem>.png (1600 x 800 pixels) and <out_stem>.svg: 2 rows of 5
 * panels, as YOLOv5's plot_results: train/box_loss, train/obj_loss, train/cls_loss,
 * metrics/precision, metrics/recall; val/box_loss, val/obj_loss, val/cls_loss, metrics/mAP_0.5,
 * metrics/mAP_0.5:0.95; x is the epoch, each panel has the data (blue, with markers) and its
 * Gaussian smoothing (orange dots, sigma 3 as scipy's gaussian_filter1d). A single row draws as
 * one marker per panel. Each picture is drawn under a temporary name in the same folder and
 * renamed into place. Needs PLplot's cairo driver (pngcairo/svgcairo) at run time. Serialised
 * by a lock; PLplot has one global state, so nothing else in the process may use PLplot at the
 * same time. 0, or -1 with err set (PLplot's fatal errors return here; the process lives on). */
int yp_results_plot(const char *csv_path, const char *out_stem, yp_err *err);

#endif
