/* fuzz_data_yaml.c - libFuzzer target for data.yaml (executor/data/dataset.c and dataset_images.c
 * through yp_dataset_scan_split for train and val, and yp_dataset_names). The input is written as
 * data.yaml into a small fixed dataset made once in the scratch folder:
 *   images/train/a.jpg b.png sub/e.jpeg   labels/train/a.txt b.txt sub/e.txt
 *   images/val/v.jpg                      labels/val/v.txt
 *   train_list.txt (./images/train/a.jpg, images/train/b.png, a missing one)
 * (16 x 16 grey images: the scan decodes each and drops the bad ones). So that a mutated path cannot
 * send the scan through the whole file system, inputs that could name a path outside that folder
 * are skipped: any "..", any backslash (a yaml escape), any '/' not preceded by a name character
 * (an absolute path), any '~'.
 * Properties checked on every input:
 *   - the scan never crashes, leaks or reads out of bounds (ASan/UBSan);
 *   - a refused input comes with a non-empty message;
 *   - accepted counts add up: images >= labelled, images >= background, labels >= max per image,
 *     every count >= 0, nc >= 1, and the names read for nc classes. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fuzz_temp.h"
#include "yp_dataset.h"
#include "yp_image.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void put(const char *rel, const char *text) {
    fz_temp_write(rel, (const uint8_t *)text, strlen(text));
}

static void make_dir(const char *rel) {
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", fz_temp_dir(), rel);
    if (mkdir(path, 0755) != 0) fz_fail("fuzz_data_yaml", "cannot make", path);
}

/* A real 16 x 16 grey image at rel: a PNG, or a JPEG (by rel's extension). */
static void put_image(const char *rel) {
    yp_image im;
    yp_err err;
    uint8_t *data = NULL;
    size_t size = 0, n = strlen(rel);
    if (yp_image_alloc(&im, 16, 16, &err)) fz_fail("fuzz_data_yaml", "cannot make", rel);
    memset(im.rgb, 114, (size_t)16 * 16 * 3);
    int rc = n > 4 && strcmp(rel + n - 4, ".png") == 0 ? yp_image_encode_png(&im, &data, &size, &err)
                                                       : yp_image_encode_jpeg(&im, 90, &data, &size, &err);
    yp_image_free(&im);
    if (rc) fz_fail("fuzz_data_yaml", "cannot encode", rel);
    fz_temp_write(rel, data, size);
    free(data);
}

static void make_dataset(void) {
    static const char *const dirs[] = {"images", "images/train", "images/train/sub", "images/val",
                                       "labels", "labels/train", "labels/train/sub", "labels/val"};
    for (size_t i = 0; i < sizeof dirs / sizeof *dirs; i++) make_dir(dirs[i]);
    put_image("images/train/a.jpg"), put_image("images/train/b.png"), put_image("images/train/sub/e.jpeg");
    put_image("images/val/v.jpg");
    put("labels/train/a.txt", "0 0.5 0.5 0.2 0.2\n1 0.25 0.25 0.1 0.1\n");
    put("labels/train/b.txt", "");
    put("labels/train/sub/e.txt", "2 0.1 0.1 0.4 0.1 0.4 0.3 0.1 0.3\n");
    put("labels/val/v.txt", "0 0.5 0.5 1 1\n");
    put("train_list.txt", "./images/train/a.jpg\nimages/train/b.png\nimages/train/missing.jpg\n");
}

/* Could the input name a path outside the dataset folder? */
static int may_escape(const uint8_t *data, size_t size) {
    for (size_t i = 0; i < size; i++) {
        if (data[i] == '\\' || data[i] == '~') return 1;
        if (data[i] == '.' && i + 1 < size && data[i + 1] == '.') return 1;
        if (data[i] == '/') {
            uint8_t p = i ? data[i - 1] : ' ';
            int name = (p >= 'a' && p <= 'z') || (p >= 'A' && p <= 'Z') || (p >= '0' && p <= '9') || p == '_' ||
                       p == '-' || p == '.';
            if (!name) return 1;
        }
    }
    return 0;
}

static void check(const yp_dataset_stats *st, const char *split) {
    if (st->nc < 1 || st->n_images < 1 || st->n_labelled < 0 || st->n_background < 0 || st->n_labels < 0 ||
        st->max_labels < 0 || st->n_duplicates < 0 || st->n_bad_files < 0 || st->n_labelled > st->n_images ||
        st->n_background > st->n_images || st->max_labels > st->n_labels)
        fz_fail("fuzz_data_yaml", "accepted counts do not add up", split);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static int made;
    if (!made) make_dataset(), made = 1;
    if (may_escape(data, size)) return 0;
    const char *path = fz_temp_write("data.yaml", data, size);
    static const char *const splits[] = {"train", "val"};
    for (int i = 0; i < 2; i++) {
        yp_dataset_stats st;
        yp_err err;
        memset(err.msg, 0, sizeof err.msg);
        if (yp_dataset_scan_split(path, splits[i], &st, &err)) {
            if (err.msg[0] == '\0') fz_fail("fuzz_data_yaml", "input refused without a message", splits[i]);
            continue;
        }
        check(&st, splits[i]);
        char **names = NULL;
        if (yp_dataset_names(path, st.nc, &names, &err) == 0) {
            for (int k = 0; k < st.nc; k++)
                if (!names[k]) fz_fail("fuzz_data_yaml", "a class without a name", NULL);
            yp_dataset_names_free(names, st.nc);
        }
    }
    return 0;
}
