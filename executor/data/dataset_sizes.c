/* dataset_sizes.c - the pixel sizes of a sample of a split's images, read from their headers
 * (yp_dataset_sample_sizes in yp_dataset.h). */
#include "dataset_internal.h"
#include "yp_image.h"

int yp_dataset_sample_sizes(const char *data_yaml, const char *split, int max_n, int *w, int *h, int *n, yp_err *err) {
    yp_dataset_stats st;
    yp_ds_paths images = {0};
    *n = 0;
    if (max_n < 1) {
        yp_err_set(err, "yp_dataset_sample_sizes: max_n must be >= 1");
        return -1;
    }
    int rc = yp_ds_find_images(data_yaml, split, &st, &images, err);
    yp_image_limits lim;
    yp_image_limits_default(&lim);
    int64_t take = images.n < max_n ? images.n : max_n;
    for (int64_t k = 0; rc == 0 && k < take; k++) {
        /* evenly spaced over the sorted list, so the sample does not depend on a random seed */
        int64_t i = take > 1 ? k * (images.n - 1) / (take - 1) : 0;
        yp_err why;
        if (yp_image_probe(yp_ds_paths_at(&images, i), &lim, &w[*n], &h[*n], &why) == 0) (*n)++;
    }
    yp_ds_paths_free(&images);
    return rc;
}
