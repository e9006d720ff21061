/* fuzz_labels.c - libFuzzer target for one label file (executor/data/dataset_labels.c,
 * yp_ds_read_labels: the reader the dataset scan and the label cache share). The input is
 * written to a scratch file and read twice, for 80 classes and for 1 (the class check), with one
 * scratch reused as the scan reuses it.
 * Properties checked on every input:
 *   - the reader never crashes, leaks or reads out of bounds (ASan/UBSan);
 *   - a bad file comes with a non-empty problem; a good one's rows are what the scan promises:
 *     a whole class in [0, nc), finite values >= 0. */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "dataset_internal.h"
#include "fuzz_temp.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void read_with(const char *path, int nc, yp_ds_scratch *s) {
    yp_ds_label_file lf;
    char problem[512];
    memset(&lf, 0, sizeof lf);
    problem[0] = '\0';
    int rc = yp_ds_read_labels(path, "labels/x.txt", nc, s, &lf, problem, sizeof problem);
    if ((rc == 1 || rc == 2) && problem[0] == '\0') fz_fail("fuzz_labels", "bad file without a problem", NULL);
    if (rc != 0 || !lf.found) return;
    if (lf.n_rows < 0 || lf.n_dup < 0) fz_fail("fuzz_labels", "negative counts", NULL);
    for (int64_t r = 0; r < lf.n_rows; r++) {
        const float *row = s->rows + 5 * r;
        if (!(row[0] >= 0 && row[0] < nc && row[0] == floorf(row[0])))
            fz_fail("fuzz_labels", "kept a row whose class is not a whole number in [0, nc)", NULL);
        for (int k = 1; k < 5; k++)
            if (!isfinite(row[k]) || row[k] < 0) fz_fail("fuzz_labels", "kept a negative or non-finite value", NULL);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const char *path = fz_temp_write("x.txt", data, size);
    yp_ds_scratch s;
    memset(&s, 0, sizeof s);
    read_with(path, 80, &s);
    read_with(path, 1, &s);
    yp_ds_scratch_free(&s);
    return 0;
}
