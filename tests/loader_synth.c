/* loader_synth.c - writes test_loader's synthetic dataset. Apart from test_loader.c because
 * yp_synth.h brings the decoder's yp_image and yp_loader.h the augmentation's. */
#include "yp_synth.h"

int yp_test_loader_synth(const char *dir, int n, int nc, int w, int h, uint64_t seed, yp_err *err);

int yp_test_loader_synth(const char *dir, int n, int nc, int w, int h, uint64_t seed, yp_err *err) {
    yp_synth_opts so = {.n_train = n, .n_val = 0, .nc = nc, .w = w, .h = h, .seed = seed};
    return yp_synth_write(dir, &so, NULL, err);
}
