/* test_dataset.c - the dataset scan (executor/data/yp_dataset.h) on the fixture in
 * tests/data/dataset/ (its README.md lists what each yaml holds and the expected counts), and
 * the label-file checks one by one (dataset_internal.h). */
#include <stdio.h>
#include <string.h>

#include "dataset_internal.h"
#include "yp_dataset.h"
#include "yp_test.h"

#define DS YP_TEST_DATA "/dataset/"

/* Scans split of DS/name; on failure prints the error. Returns yp_dataset_scan_split's result. */
static int scan_split(const char *name, const char *split, yp_dataset_stats *st, yp_err *err) {
    char path[1024];
    snprintf(path, sizeof path, "%s%s", DS, name);
    memset(err, 0, sizeof *err);
    int rc = yp_dataset_scan_split(path, split, st, err);
    if (rc) printf("    (%s %s: %s)\n", name, split ? split : "(null)", err->msg);
    return rc;
}

/* The train split through the old entry point. */
static int scan(const char *name, yp_dataset_stats *st, yp_err *err) {
    char path[1024];
    snprintf(path, sizeof path, "%s%s", DS, name);
    memset(err, 0, sizeof *err);
    int rc = yp_dataset_scan(path, st, err);
    if (rc) printf("    (%s: %s)\n", name, err->msg);
    return rc;
}

static int ends_with(const char *s, const char *tail) {
    size_t n = strlen(s), m = strlen(tail);
    return n >= m && strcmp(s + n - m, tail) == 0;
}

/* The counts of data.yaml's train split (README.md). */
static void check_train_counts(const yp_dataset_stats *st) {
    CHECK_EQ_I64(st->nc, 3);
    CHECK_EQ_I64(st->n_images, 6);
    CHECK_EQ_I64(st->n_labelled, 5);
    CHECK_EQ_I64(st->n_background, 2);
    CHECK_EQ_I64(st->n_labels, 10);
    CHECK_EQ_I64(st->max_labels, 4);
    CHECK_EQ_I64(st->n_duplicates, 1);
    CHECK_EQ_I64(st->n_bad_files, 0);
    CHECK(fabs(st->mean_labels - 10.0 / 6.0) < 1e-12);
    CHECK(st->first_bad[0] == '\0');
    CHECK(ends_with(st->root, "/tests/data/dataset"));
}

static void test_valid_dataset(void) {
    yp_dataset_stats st;
    yp_err err;
    CHECK(scan("data.yaml", &st, &err) == 0); /* also: unknown keys (download) are ignored */
    check_train_counts(&st);
}

static void test_train_split_by_name(void) {
    yp_dataset_stats st;
    yp_err err;
    CHECK(scan_split("data.yaml", "train", &st, &err) == 0);
    check_train_counts(&st);
}

static void test_val_split(void) {
    yp_dataset_stats st;
    yp_err err;
    CHECK(scan_split("data.yaml", "val", &st, &err) == 0); /* images/val: v.jpg, one row */
    CHECK_EQ_I64(st.nc, 3);
    CHECK_EQ_I64(st.n_images, 1);
    CHECK_EQ_I64(st.n_labelled, 1);
    CHECK_EQ_I64(st.n_background, 0);
    CHECK_EQ_I64(st.n_labels, 1);
    CHECK_EQ_I64(st.max_labels, 1);
    CHECK_EQ_I64(st.n_bad_files, 0);
    CHECK(ends_with(st.root, "/tests/data/dataset"));
    CHECK(scan_split("sub/relative.yaml", "val", &st, &err) == 0); /* relative path, the same images */
    CHECK_EQ_I64(st.n_images, 1);
}

static void test_split_errors(void) {
    yp_dataset_stats st;
    yp_err err;
    CHECK(scan_split("no_images.yaml", "val", &st, &err) == -1); /* train and nc only */
    CHECK(strcmp(strstr(err.msg, "no_images.yaml:"), "no_images.yaml:1: missing key \"val\"; add val: images/val, "
                 "or train with --noval") == 0);
    CHECK(scan_split("missing_val.yaml", "val", &st, &err) == -1);
    CHECK_STR_HAS(err.msg, "missing_val.yaml:3: val: ");
    CHECK_STR_HAS(err.msg, "/images/nope does not exist; fix val or path (the dataset root, ");
    CHECK(scan_split("missing_val.yaml", "train", &st, &err) == 0); /* a bad val does not stop train */
    CHECK(scan_split("missing_train.yaml", "val", &st, &err) == 0); /* nor a bad train val */
    CHECK_EQ_I64(st.n_images, 1);
    CHECK(scan_split("data.yaml", "test", &st, &err) == -1); /* `test:` with nothing after it */
    CHECK_STR_HAS(err.msg, "data.yaml:5: missing key \"test\"; add test: images/test");
    CHECK(scan_split("data.yaml", "valid", &st, &err) == -1);
    CHECK_STR_HAS(err.msg, "data.yaml: unknown split \"valid\"; use train, val or test");
    CHECK(scan_split("data.yaml", NULL, &st, &err) == -1);
    CHECK_STR_HAS(err.msg, "unknown split");
}

static void test_relative_path(void) {
    yp_dataset_stats st;
    yp_err err;
    CHECK(scan("sub/relative.yaml", &st, &err) == 0); /* path: .. from sub/; names as a mapping */
    check_train_counts(&st);
}

static void test_image_list(void) {
    yp_dataset_stats st;
    yp_err err;
    CHECK(scan("list.yaml", &st, &err) == 0);
    CHECK_EQ_I64(st.n_images, 3); /* a, b, c; readme.md skipped */
    CHECK_EQ_I64(st.n_labels, 4);
    CHECK_EQ_I64(st.n_background, 1);
    CHECK_EQ_I64(st.max_labels, 3);
    CHECK_EQ_I64(st.n_bad_files, 1);
    CHECK_STR_HAS(st.first_bad, "train_list.txt:4: image images/train/missing.jpg does not exist");
}

static void test_several_entries(void) {
    yp_dataset_stats st;
    yp_err err;
    CHECK(scan("several.yaml", &st, &err) == 0);
    CHECK_EQ_I64(st.n_images, 7);
    CHECK_EQ_I64(st.n_labels, 11);
    CHECK_EQ_I64(st.max_labels, 4);
}

static void test_bad_label_files(void) {
    yp_dataset_stats st;
    yp_err err;
    CHECK(scan("bad_labels.yaml", &st, &err) == 0);
    CHECK_EQ_I64(st.n_images, 1);
    CHECK_EQ_I64(st.n_labels, 2);
    CHECK_EQ_I64(st.n_bad_files, 3);
    CHECK_STR_HAS(st.first_bad, "labels/bad/m_coords.txt:2: x centre 1.5 is outside 0..1");
}

/* a class >= nc refuses the split, as train.py's assertion, naming the file and line */
static void test_class_beyond_nc_refused(void) {
    yp_dataset_stats st;
    yp_err err;
    CHECK(scan("bad_class.yaml", &st, &err) == -1);
    CHECK_STR_HAS(err.msg, "labels/badclass/k_class.txt:3: Label class 7 exceeds nc=3 in ");
    CHECK_STR_HAS(err.msg, "bad_class.yaml. Possible class labels are 0-2; fix the label, or nc/names in ");
    CHECK(strchr(err.msg, '\n') == NULL);
}

/* Reads DS/labels/bad/name with nc 3. Returns yp_ds_read_labels's result; problem filled. */
static int read_one(const char *name, yp_ds_label_file *lf, char *problem, size_t size) {
    char path[1024];
    yp_ds_scratch s = {0};
    snprintf(path, sizeof path, "%slabels/%s", DS, name);
    problem[0] = '\0';
    int rc = yp_ds_read_labels(path, name, 3, &s, lf, problem, size);
    yp_ds_scratch_free(&s);
    return rc;
}

static void test_each_label_problem(void) {
    yp_ds_label_file lf;
    char p[512];
    CHECK(read_one("badclass/k_class.txt", &lf, p, sizeof p) == 2); /* refuses the dataset */
    CHECK_STR_HAS(p, "badclass/k_class.txt:3: Label class 7 exceeds nc=3");
    CHECK(read_one("bad/m_coords.txt", &lf, p, sizeof p) == 1);
    CHECK_STR_HAS(p, "bad/m_coords.txt:2: x centre 1.5 is outside 0..1");
    CHECK(read_one("bad/n_fields.txt", &lf, p, sizeof p) == 1);
    CHECK_STR_HAS(p, "bad/n_fields.txt:1: 4 numbers; a row is `class cx cy w h`");
    CHECK(read_one("bad/q_notnum.txt", &lf, p, sizeof p) == 1);
    CHECK_STR_HAS(p, "bad/q_notnum.txt:3: \"abc\" is not a number");
    CHECK(lf.found == 1);
    CHECK(read_one("train/f.txt", &lf, p, sizeof p) == 0); /* polygon rows -> boxes */
    CHECK_EQ_I64(lf.n_rows, 2);
    CHECK(read_one("train/sub/e.txt", &lf, p, sizeof p) == 0); /* CRLF, a blank line, a duplicate */
    CHECK_EQ_I64(lf.n_rows, 4);
    CHECK_EQ_I64(lf.n_dup, 1);
    CHECK(read_one("train/c.txt", &lf, p, sizeof p) == 0); /* no file: background */
    CHECK(lf.found == 0 && lf.n_rows == 0);
}

static void test_label_paths(void) {
    char out[256];
    CHECK(yp_ds_label_path("/d/images/x/images/train/a.b.jpg", out, sizeof out) == 0);
    CHECK(strcmp(out, "/d/images/x/labels/train/a.b.txt") == 0);
    CHECK(yp_ds_label_path("/d/img/a.png", out, sizeof out) == 0);
    CHECK(strcmp(out, "/d/img/a.txt") == 0);
    CHECK(yp_ds_label_path("/d/images/a.jpg", out, 10) == -1);
}

static void test_missing_train(void) {
    yp_dataset_stats st;
    yp_err err;
    CHECK(scan("missing_train.yaml", &st, &err) == -1);
    CHECK_STR_HAS(err.msg, "missing_train.yaml:3: train: ");
    CHECK_STR_HAS(err.msg, "/images/nope does not exist; fix train or path");
}

static void test_malformed_yaml(void) {
    yp_dataset_stats st;
    yp_err err;
    CHECK(scan("malformed.yaml", &st, &err) == -1);
    CHECK_STR_HAS(err.msg, "malformed.yaml:4:");
    CHECK_STR_HAS(err.msg, "syntax error");
}

static void test_other_errors(void) {
    yp_dataset_stats st;
    yp_err err;
    CHECK(scan("no_images.yaml", &st, &err) == -1);
    CHECK_STR_HAS(err.msg, "no_images.yaml:1: train: no images found");
    CHECK(scan("no_labels.yaml", &st, &err) == -1);
    CHECK_STR_HAS(err.msg, "no label file found for any of the 1 images");
    CHECK_STR_HAS(err.msg, "/labels/nolabels/x.txt");
    CHECK(scan("no_train.yaml", &st, &err) == -1);
    CHECK_STR_HAS(err.msg, "no_train.yaml:1: missing key \"train\"");
    CHECK(scan("nc_mismatch.yaml", &st, &err) == -1);
    CHECK_STR_HAS(err.msg, "nc_mismatch.yaml:2: nc is 3 but names lists 2 classes (line 3); make them agree");
    CHECK(scan("absent.yaml", &st, &err) == -1);
    CHECK_STR_HAS(err.msg, "absent.yaml: cannot open");
}

int main(void) {
    YP_RUN(test_valid_dataset);
    YP_RUN(test_train_split_by_name);
    YP_RUN(test_val_split);
    YP_RUN(test_split_errors);
    YP_RUN(test_relative_path);
    YP_RUN(test_image_list);
    YP_RUN(test_several_entries);
    YP_RUN(test_bad_label_files);
    YP_RUN(test_class_beyond_nc_refused);
    YP_RUN(test_each_label_problem);
    YP_RUN(test_label_paths);
    YP_RUN(test_missing_train);
    YP_RUN(test_malformed_yaml);
    YP_RUN(test_other_errors);
    return yp_test_summary();
}
