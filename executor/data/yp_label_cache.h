/* yp_label_cache.h - the labels of one split (train, val or test), parsed once and kept in a
 * cache file beside them, as YOLOv5's label cache: what the loader reads (image paths and their
 * label rows) and the counts yp_dataset_scan_split gives, without re-reading every label file or
 * decoding every image on every run.
 *
 * The scan, as YOLOv5's verify_image_label: every image is decoded whole once (yp_image_verify,
 * over min(8, CPUs) threads) and must be at least 10 pixels a side; an image that fails, or whose
 * label file is bad, is dropped (counted as corrupt, its reason kept); a JPEG without its end
 * marker (FFD9) decodes and is kept, with a warning (YOLOv5 re-saves it; yoloplan does not write
 * the user's file). A label class >= nc refuses the split (train.py's "Label class C exceeds nc=N
 * in DATA. Possible class labels are 0-(N-1)", here with the file and line), unless that image is
 * itself dropped. Label files and image lists may start with a UTF-8 byte order mark.
 *
 * The cache is named after the folder F of the split's first label file (in sorted image order):
 * F.cache when F's name starts with the split's name (labels/train/x.txt -> labels/train.cache,
 * labels/val2017/x.txt -> labels/val2017.cache) or, for train, with neither "val" nor "test"
 * (images/x.jpg -> F = labels -> labels.cache); otherwise F.SPLIT.cache (val: images/train2017,
 * as coco128.yaml has it -> labels/train2017.val.cache; train and val .txt lists of images in
 * one folder -> labels.cache and labels.val.cache). So splits whose labels share a folder never
 * share a cache file, and each split's cache stays valid while another is loaded. (YOLOv5 names
 * a .txt list's cache after the list; yoloplan keeps the label folder's rule for lists too.)
 * Nothing in the cache depends on the split: the key and the checks below are the images' own,
 * so even a shared file (folders named F and F.val) would only be rebuilt, never misread.
 * It is reused only when its version, its key and the image list all match and it passes every
 * check below; otherwise it is rebuilt from the label files and rewritten atomically (a
 * temporary file in the same folder, fsync, rename). A folder that cannot be written is not an
 * error: the labels are read and a note says the cache was not saved.
 *
 * Key: FNV-1a 64 over nc and, per image in sorted order, its path, size and modification time
 * (ns), and its label file's existence, size and modification time (YOLOv5 hashes paths and
 * sizes; the times also catch an edit that keeps the size).
 *
 * Format (version 2, host byte order, checked by a byte-order mark; version 1 had no image
 * checks, so a version 1 cache is rebuilt, which decodes the images once):
 *   header, 640 bytes:
 *     0  char[8]  "YPLABEL\0"           8  u32  version (2)       12 u32 0x01020304
 *     16 u64 key                         24 u64 FNV-1a 64 of every byte after the header
 *     32 i64 n_images (all collected, dropped ones included)  40 i64 n_rows (all entries)
 *     48 i64 path_bytes (sum of path lengths + 1 each)        56 i32 nc   60 i32 0
 *     64 i64[5] found, missing, empty, corrupt, duplicates (label files; YOLOv5's results)
 *     (corrupt: bad label files and images that do not decode, both dropped)
 *     104 char[512] the first dropped image's problem, NUL-terminated ("" if none)
 *     616 i64 note_bytes (sum of note lengths + 1 each)   624 zero to 640
 *   n_images entries of 40 bytes: i64 n_rows, i64 n_dup, i32 status (0 labelled, 1 no label
 *     file, 2 bad label file, 3 image that does not decode or is under 10 pixels a side; 2 and 3
 *     are dropped), i32 path length, i32 w, i32 h (the decoded size; 0 for status 3), i32 note
 *     length (at most 1024), i32 flags (1: a JPEG without its end marker, kept)
 *   the image paths, each NUL-terminated, in entry order
 *   n_rows rows of 5 float32 (class cx cy w h), entry after entry
 *   the notes, each NUL-terminated, in entry order: why a dropped image was dropped (its
 *     decoder's or its label file's problem), a kept image's warning, else ""
 * On read everything is checked: sizes with checked arithmetic against the file's length, the
 * checksum, each entry (status, rows only when labelled, sizes >= 10 unless dropped for its
 * image, a note for every dropped image, lengths and NULs, the path equal to the image collected
 * now), each row (a whole class < nc, coordinates in [0, 1]) and the counts against the entries.
 * A cache that fails is rebuilt, with a note saying why.
 * Defines: yp_labels, yp_labels_load_split, yp_labels_load, yp_labels_free, yp_labels_image,
 * yp_labels_rows, yp_labels_size, yp_labels_max_rows, YP_LABELS_WARNINGS_SHOWN. */
#ifndef YP_LABEL_CACHE_H
#define YP_LABEL_CACHE_H

#include <stdint.h>

#include "yp_dataset.h"
#include "yp_error.h"

#define YP_LABEL_CACHE_VERSION 2
#define YP_LABELS_WARNINGS_SHOWN 5 /* per-file warnings listed; the rest are counted */

typedef struct {
    yp_dataset_stats stats; /* as yp_dataset_scan_split (mean_labels included) */
    int64_t n;              /* kept images: stats.n_images */
    /* private to label_cache.c */
    char *paths;            /* every collected image path, NUL-terminated */
    int64_t *path_off;      /* kept image i's path */
    int64_t *row_off;       /* kept image i's rows: row_off[i] .. row_off[i+1] */
    float *rows;            /* 5 floats per row */
    int32_t *wh;            /* kept image i's decoded width and height: wh[2i], wh[2i+1] */
    /* how this load went */
    char cache_path[4096];
    int reused;             /* 1: read from the cache, no label file opened */
    int64_t label_reads;    /* label files read this time */
    int64_t image_checks;   /* images decoded this time (0 when the cache was reused) */
    char note[640];         /* why the cache was rebuilt or not saved ("" when reused) */
    char *warnings;         /* YOLOv5's per-file warnings, one line each (NULL: none), the first
                             * YP_LABELS_WARNINGS_SHOWN, then "... and N more warnings like these":
                             * "IMAGE: ignoring corrupt image/label: reason" (the decoder's reason, or
                             * "LABELFILE:LINE: problem"), "IMAGE: N duplicate labels removed",
                             * "IMAGE: the JPEG lacks its end marker (FFD9); kept, ..." */
    int64_t n_warnings;     /* all of them, listed or not (the summary line not counted) */
} yp_labels;

/* Loads split ("train", "val" or "test") of data_yaml (yp_dataset_scan_split's rules) through
 * its cache. Returns 0, or -1 with err set (yp_dataset_scan_split's errors, a label class >= nc:
 * "labels/x.txt:3: Label class 2 exceeds nc=2 in data.yaml. Possible class labels are 0-1; ...",
 * out of memory).
 * Zero-initialise out; free it with yp_labels_free, also after a failure. */
int yp_labels_load_split(const char *data_yaml, const char *split, yp_labels *out, yp_err *err);

/* yp_labels_load_split(data_yaml, "train", out, err). */
int yp_labels_load(const char *data_yaml, yp_labels *out, yp_err *err);
void yp_labels_free(yp_labels *l);

/* Kept image i (0 <= i < l->n): its path, and its *n rows (class cx cy w h, normalised). */
const char *yp_labels_image(const yp_labels *l, int64_t i);
const float *yp_labels_rows(const yp_labels *l, int64_t i, int64_t *n);

/* Kept image i's decoded size (EXIF orientation applied), as the scan found it. */
void yp_labels_size(const yp_labels *l, int64_t i, int *w, int *h);

/* The most rows any kept image has (0 for an empty or all-background split). */
int64_t yp_labels_max_rows(const yp_labels *l);

#endif
