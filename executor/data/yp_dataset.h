/* yp_dataset.h - the dataset scan: counts the images and label rows of one split (train, val or
 * test) of a YOLOv5 dataset, so that the plan can size its label and target-assignment buffers
 * from real data (labels per image) instead of a guess. It goes through the label cache
 * (yp_label_cache.h): every image is decoded once (then cached) and those that do not decode, or
 * are under 10 pixels a side, are dropped like bad label files, so the counts are the images
 * training and validation actually use.
 * Defines: yp_dataset_stats, yp_dataset_scan_split, yp_dataset_scan, yp_dataset_names. */
#ifndef YP_DATASET_H
#define YP_DATASET_H

#include <stdint.h>

#include "yp_error.h"

typedef struct {
    char root[1024];      /* dataset root: data.yaml's `path` (relative: from the yaml's folder;
                             absent: the yaml's folder), symlinks resolved when it exists */
    int nc;               /* classes: `nc`, or the length of `names` */
    int64_t n_images;     /* the split's images kept (found, minus those dropped: n_bad_files) */
    int64_t n_labelled;   /* kept images that have a label file (possibly empty) */
    int64_t n_background; /* kept images with no labels: no label file, or an empty one */
    int64_t n_labels;     /* label rows of the kept images, duplicates removed */
    int64_t max_labels;   /* most label rows in one image */
    double mean_labels;   /* n_labels / n_images */
    int64_t n_duplicates; /* duplicate rows removed (YOLOv5 warns and drops them) */
    int64_t n_bad_files;  /* images dropped: an image that does not decode or is under 10 px a
                             side, a bad label file (unreadable or a bad row), or an image named
                             in a .txt list that does not exist */
    char first_bad[512];  /* the first problem, "" if none: missing listed images in list order,
                             then bad images and label files in sorted image order, e.g.
                             "labels/train/x.txt:3: x centre 1.5 is outside 0..1; ..." or
                             "images/train/y.jpg: truncated JPEG: ..." (paths under root are
                             shown relative to it) */
} yp_dataset_stats;

/* Scans split `split` ("train", "val" or "test") of the Ultralytics data.yaml at data_yaml.
 *
 * Keys: path (dataset root), train, val, test (the one named by split is required, the others
 * are not read), nc and/or names (one is required; if both are given they must agree; names may
 * be a list or a {0: name} mapping); other keys (download scripts, ...) are ignored. Each split
 * is a folder of images (searched recursively, hidden entries skipped, as YOLOv5's glob), a .txt
 * list of image paths ("./x" and other relative lines are taken from the list's folder), or a
 * list of those; a relative entry is joined to the root (with YOLOv5's retry without a leading
 * "../"). Image files: extensions bmp dng jpeg jpg mpo png tif tiff webp pfm (any case).
 *
 * Labels, as YOLOv5's img2label_paths and verify_image_label: the last "/images/" of the image
 * path becomes "/labels/" and the extension ".txt". A row is `class cx cy w h`; if any row of a
 * file has more than 6 numbers, every row of it is a polygon `class x1 y1 x2 y2 ...` taken as its
 * bounding box. Values must be numbers >= 0, coordinates <= 1, the class a whole number. A file
 * with a bad row drops its image (counted in n_bad_files, first_bad says where); a missing label
 * file makes the image background. A class >= nc refuses the split (below). A label file or list
 * may start with a UTF-8 byte order mark.
 *
 * Returns 0 with *out filled, or -1 with err set (file, yaml line, problem, fix; messages name the
 * split's key, e.g. "data.yaml:4: val: DIR does not exist; fix val or path (...)"): a split name
 * other than the three, unreadable or malformed yaml, missing or mistyped key (a missing val:
 * "missing key \"val\"; add val: images/val, or train with --noval"), an entry that does not
 * exist, no images found, no label file found at all (YOLOv5 refuses to train; for val and test
 * it only warns, yoloplan refuses those too: there would be nothing to measure), every image
 * dropped, a label class >= nc ("labels/x.txt:3: Label class 2 exceeds nc=2 in DATA. Possible
 * class labels are 0-1; ...", train.py's check with the file and line), out of memory.
 * It writes the split's label cache (yp_label_cache.h) as a run would. */
int yp_dataset_scan_split(const char *data_yaml, const char *split, yp_dataset_stats *out, yp_err *err);

/* The width and height of up to max_n of split's images (evenly spaced over the sorted list, all
 * of them when there are fewer), from their headers (yp_image_probe: no pixel decoded); an image
 * that does not read is skipped. w and h hold max_n each; *n gets how many were read. As YOLOv5's
 * check_cache_ram, which extrapolates the RAM cache from 30 images. 0, or -1 with err set as
 * yp_dataset_scan_split (max_n < 1 too). */
int yp_dataset_sample_sizes(const char *data_yaml, const char *split, int max_n, int *w, int *h, int *n, yp_err *err);

/* yp_dataset_scan_split(data_yaml, "train", out, err). */
int yp_dataset_scan(const char *data_yaml, yp_dataset_stats *out, yp_err *err);

/* The class names of data_yaml's `names` (a list, or a {0: name} mapping), nc of them, malloc'd
 * into *names (free with yp_dataset_names_free); a class without a name (or a file with nc only)
 * gets "classK", as YOLOv5 names them. 0, or -1 with err set (the file no longer reads). */
int yp_dataset_names(const char *data_yaml, int nc, char ***names, yp_err *err);
void yp_dataset_names_free(char **names, int nc);

#endif
