/* dataset_internal.h - what the dataset scan's files share: dataset.c reads data.yaml and adds up
 * the counts, dataset_images.c finds the image files of a split's entry, dataset_labels.c reads
 * one label file, dataset_verify.c checks that an image decodes. Not installed; yp_dataset.h is
 * the interface. label_cache.c (yp_label_cache.h), which the scan goes through, uses them.
 * Defines: yp_ds_paths (+ add/at/sort/free), yp_ds_collect, yp_ds_find_images, yp_ds_label_path,
 * yp_ds_shown, yp_ds_note_bad, yp_ds_scratch, yp_ds_label_file, yp_ds_read_labels,
 * yp_ds_read_image_labels, yp_ds_count_image, yp_ds_check_counts, yp_ds_image_check, yp_ds_verify_image,
 * yp_ds_verify_images. */
#ifndef YP_DATASET_INTERNAL_H
#define YP_DATASET_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "yp_dataset.h"
#include "yp_image.h"

#define YP_DS_PATH_MAX 4096
#define YP_DS_MAX_LIST_BYTES ((int64_t)256 << 20) /* a .txt image list (COCO's train2017.txt: 4.6 MB) */

/* A growing list of NUL-terminated paths kept in one buffer (COCO's 118k image paths are one
 * allocation, not 118k). Zero-initialise; free with yp_ds_paths_free. */
typedef struct {
    char *text;
    size_t len, cap;
    size_t *off; /* start of path i in text */
    int64_t n, cap_n;
} yp_ds_paths;

/* Appends a copy of path. Returns 0, or -1 on OOM (the list is unchanged). */
int yp_ds_paths_add(yp_ds_paths *p, const char *path);
const char *yp_ds_paths_at(const yp_ds_paths *p, int64_t i);
/* Sorts by strcmp, like Python's sorted() on the same strings. */
void yp_ds_paths_sort(yp_ds_paths *p);
void yp_ds_paths_free(yp_ds_paths *p);

/* Adds the images of one entry of a split, an existing folder (searched recursively, symlinks
 * followed, each folder once) or a text file listing image paths. Listed images that do not
 * exist are dropped into st (n_bad_files, first_bad). `where` ("data.yaml:4: val") starts
 * error messages. Returns 0, or -1 with err set (list unreadable, out of memory). */
int yp_ds_collect(const char *entry, const char *where, const char *root, yp_ds_paths *images,
                  yp_dataset_stats *st, yp_err *err);

/* Reads data_yaml and collects the images of split ("train", "val" or "test"), sorted, into
 * images (zero-initialised by the caller, freed by it even on failure); *out gets root and nc and
 * the listed images that do not exist (n_bad_files, first_bad), the other counts 0. Returns 0, or
 * -1 with err set as yp_dataset_scan_split (also for a split name that is not one of the three). */
int yp_ds_find_images(const char *data_yaml, const char *split, yp_dataset_stats *out, yp_ds_paths *images,
                      yp_err *err);

/* YOLOv5's img2label_paths: the last "/images/" becomes "/labels/", the extension ".txt".
 * Returns 0, or -1 when the result does not fit in size. */
int yp_ds_label_path(const char *image, char *out, size_t size);

/* path as messages show it: relative to root when it lies under root, else whole. */
const char *yp_ds_shown(const char *path, const char *root);

/* Counts a dropped file in st and keeps the first problem in st->first_bad. */
void yp_ds_note_bad(yp_dataset_stats *st, const char *problem);

/* Buffers reused from one label file to the next. Zero-initialise; free with yp_ds_scratch_free. */
typedef struct {
    char *text;
    size_t text_cap;
    float *rows;   /* 5 floats per row: class cx cy w h */
    int64_t rows_cap;
    float *fields; /* the numbers of one row */
    int fields_cap;
    float *sorted; /* a sorted copy of rows, to find duplicates */
    int64_t sorted_cap;
} yp_ds_scratch;

void yp_ds_scratch_free(yp_ds_scratch *s);

typedef struct {
    int found;          /* the label file exists (a regular file) */
    int64_t n_rows;     /* rows after duplicate removal */
    int64_t n_dup;      /* duplicate rows removed */
} yp_ds_label_file;

/* Reads and checks the label file at path for nc classes (shown: its name in messages).
 * Returns 0 (out->found is 0 when there is no file: a background image), 1 when the file is bad
 * (problem gets "SHOWN:LINE: problem; fix"), 2 when a class is >= nc, which refuses the whole
 * dataset (problem gets "SHOWN:LINE: Label class C exceeds nc=N"), or -1 on out of memory. On 0, s->rows holds the
 * out->n_rows rows as YOLOv5 keeps them: in file order, or, when there were duplicates, the
 * unique rows sorted (np.unique's order). */
int yp_ds_read_labels(const char *path, const char *shown, int nc, yp_ds_scratch *s,
                      yp_ds_label_file *out, char *problem, size_t size);

/* yp_ds_read_labels on image's label file (st: root and nc); a label path too long is a bad file. */
int yp_ds_read_image_labels(const char *image, const yp_dataset_stats *st, yp_ds_scratch *s, yp_ds_label_file *lf,
                            char *problem, size_t size);

/* Adds one kept image with label file lf to st's counts. */
void yp_ds_count_image(yp_dataset_stats *st, const yp_ds_label_file *lf);

/* The scan's final checks: some image kept, some label file found (files_found > 0). Returns 0,
 * or -1 with err set (file: the data.yaml, for the message). */
int yp_ds_check_counts(const char *file, const yp_ds_paths *images, const yp_dataset_stats *st, int64_t files_found,
                       yp_err *err);

/* What the scan found of one image: ok (it decodes whole and is at least 10 pixels a side) with
 * its size, or not; note, malloc'd (NULL: nothing to say), why it was refused, or for a kept
 * JPEG without its end marker (no_eoi) the warning. */
typedef struct {
    int ok, w, h, no_eoi;
    char *note;
} yp_ds_image_check;

/* Checks the image at path through b's decoder buffers into *out. 0, or -1 on out of memory. */
int yp_ds_verify_image(const char *path, yp_image_buffers *b, yp_ds_image_check *out);

/* yp_ds_verify_image on images which[0..n) (which NULL: images 0..n-1) into out[image], over
 * min(8, CPUs) threads. 0, or -1 on out of memory. */
int yp_ds_verify_images(const yp_ds_paths *images, const int64_t *which, int64_t n, yp_ds_image_check *out);

#endif
