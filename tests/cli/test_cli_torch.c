/* test_cli_torch.c - the yoloplan binary's PyTorch target end to end: --target pytorch (the
 * verdict, the what-if and its remedies, --json), --profile autobatch, train.py's host memory,
 * and the README's commands for them. */
#include <math.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "yp_test.h"
#include "yp_test_cli.h"

/* --target pytorch: the text names GPU_mem, nvidia-smi, the peak and the --batch-size; its JSON
 * has the documented keys (reports/JSON.md); a what-if exits 1 when it does not fit and lists
 * train.py's remedies; --profile autobatch gives one object per probed batch. */
static void test_torch_target(void) {
    CHECK_EQ_I64(run("--gpu rtx3070 --target pytorch --model yolov5n --img 320"), 0);
    CHECK_STR_HAS(out, "pass --batch-size ");
    CHECK_STR_HAS(out, "GPU_mem train.py prints: ");
    CHECK_STR_HAS(out, "nvidia-smi: about ");
    CHECK_STR_HAS(out, "peak: ");
    CHECK_STR_HAS(out, "AutoBatch (--batch-size -1) would pick ");
    CHECK_STR_HAS(out, "images/s (bound: ");
    CHECK_STR_HAS(out, "(COCO's train2017/val2017, assumed: no --data); 300 epochs: ");
    CHECK_EQ_I64(run("--gpu rtx3070 --target pytorch --model yolov5n --img 320 --json --epochs 10 --cpus 2"), 0);
    cJSON *j = cJSON_Parse(out);
    REQUIRE(j != NULL);
    CHECK_STR_HAS(cJSON_GetStringValue(cJSON_GetObjectItem(j, "format")), "yoloplan-pytorch");
    const cJSON *rec = cJSON_GetObjectItem(j, "recommended"), *ab = cJSON_GetObjectItem(j, "autobatch");
    const cJSON *pred = cJSON_GetObjectItem(rec, "prediction");
    CHECK(cJSON_GetObjectItem(rec, "batch")->valuedouble >= 1);
    CHECK(cJSON_IsNumber(cJSON_GetObjectItem(pred, "gpu_mem_gb")) && cJSON_IsString(cJSON_GetObjectItem(pred, "gpu_mem_text")));
    CHECK(cJSON_IsNumber(cJSON_GetObjectItem(pred, "nvidia_smi_mib")) && cJSON_IsString(cJSON_GetObjectItem(pred, "peak_at")));
    CHECK(cJSON_IsBool(cJSON_GetObjectItem(ab, "runs_out_of_memory")));
    CHECK_EQ_I64(cJSON_GetArraySize(cJSON_GetObjectItem(ab, "probe")), 5);
    CHECK(cJSON_IsNumber(cJSON_GetObjectItem(cJSON_GetObjectItem(j, "gpu"), "context_bytes")));
    CHECK(cJSON_GetObjectItem(j, "whatif") == NULL);
    const cJSON *sp = cJSON_GetObjectItem(j, "speed");
    CHECK(cJSON_GetObjectItem(sp, "images_per_s")->valuedouble > 0);
    CHECK(cJSON_GetObjectItem(sp, "epoch_s")->valuedouble > cJSON_GetObjectItem(sp, "val_epoch_s")->valuedouble);
    CHECK_EQ_I64(cJSON_GetObjectItem(sp, "epochs")->valuedouble, 10);
    CHECK_EQ_I64(cJSON_GetObjectItem(sp, "workers")->valuedouble, 2);
    CHECK_EQ_I64(cJSON_GetObjectItem(sp, "train_images")->valuedouble, 118287);
    CHECK_EQ_I64(cJSON_GetObjectItem(sp, "batch")->valuedouble, cJSON_GetObjectItem(rec, "batch")->valuedouble);
    cJSON_Delete(j);
    CHECK_EQ_I64(run("--gpu rtx3070 --target pytorch --model yolov5n --img 320 --batch 2048"), 2); /* over 1024 */
    CHECK_EQ_I64(run("--gpu 4GB --target pytorch --model yolov5s --img 640 --batch 64"), 1);
    CHECK_STR_HAS(out, "DOES NOT FIT");
    CHECK_STR_HAS(out, "--batch-size ");
    CHECK_STR_HAS(out, "--freeze 10");
    CHECK_EQ_I64(run("--gpu 4GB --target pytorch --model yolov5n --img 320 --batch 8 --json"), 0);
    j = cJSON_Parse(out);
    REQUIRE(j != NULL);
    const cJSON *w = cJSON_GetObjectItem(j, "whatif");
    CHECK(cJSON_IsTrue(cJSON_GetObjectItem(w, "fits")));
    CHECK(cJSON_GetArraySize(cJSON_GetObjectItem(w, "remedies")) >= 2);
    cJSON_Delete(j);
    CHECK_EQ_I64(run("--gpu t4 --profile autobatch --model yolov5n --img 320 --json"), 0);
    j = cJSON_Parse(out);
    REQUIRE(j != NULL);
    const cJSON *rows = cJSON_GetObjectItem(j, "rows");
    CHECK_EQ_I64(cJSON_GetArraySize(rows), 5);
    double prev = 0;
    for (int i = 0; i < cJSON_GetArraySize(rows); i++) {
        const cJSON *r = cJSON_GetArrayItem(rows, i);
        CHECK_EQ_I64((long long)cJSON_GetObjectItem(r, "batch")->valuedouble, 1LL << i);
        double gb = cJSON_GetObjectItem(r, "reserved_gb")->valuedouble;
        /* batch 1's reading still holds check_amp's cached blocks (its inference at AutoShape's
         * 640, twice --img here: nothing empties the cache before the probe); from batch 2 on the
         * probe's own */
        CHECK(gb > 0 && (i < 2 || gb > prev));
        prev = gb;
    }
    cJSON_Delete(j);
    /* models whose schedules differ between batches beyond their state (a TransformerBlock's input
     * copies exist at batch > 1 only), and a stride-64 model, whose check_amp image is 640 x 512 */
    CHECK_EQ_I64(run("--gpu 8GB --target pytorch --model %s/zoo/hub/yolov5s-transformer.yaml --img 320 --batch 4",
                     YP_TEST_DATA), 0);
    CHECK_STR_HAS(out, "FITS");
    CHECK_EQ_I64(run("--gpu 8GB --target pytorch --model %s/zoo/hub/yolov5n6.yaml --img 320 --batch 4", YP_TEST_DATA), 0);
    CHECK_STR_HAS(out, "FITS");
    CHECK_EQ_I64(run("--gpu t4 --profile autobatch --model yolov5n --img 320"), 0);
    CHECK_STR_HAS(out, "AutoBatch: Using batch-size ");
    static const char *bad[][2] = {
        {"--gpu 8GB --target tensorflow", "--target tensorflow"},
        {"--gpu 8GB --target pytorch --model yolov5n,yolov5s", "one model"},
        {"--gpu 8GB --target pytorch --img 640x480", "one square size"},
        {"--gpu 8GB --target pytorch --precision amp-bf16", "fp16"},
        {"--gpu 8GB --target pytorch --ckpt 2", "--ckpt"},
        {"--gpu 8GB --target pytorch --no-ema", "always keeps an EMA"},
        {"--gpu 8GB --profile autobatch --batch 8", "drop --batch 8"},
        {"--gpu 8GB --profile other", "expected autobatch"},
        {"--gpu 8GB --target yoloplan --profile autobatch", "--target pytorch"},
        {"--gpu 8GB --epochs 3", "use them with --target pytorch"},
        {"--gpu 8GB --target pytorch --cpus 0", "--cpus"},
        {"--gpu 8GB --workers 2", "use them with --target pytorch"},
        {"--gpu 8GB --cache", "use them with --target pytorch"},
        {"--gpu 8GB --target pytorch --workers -1", "--workers"},
        {"--gpu 8GB --target pytorch --mem lots", "--mem"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        int rc = run("%s", bad[i][0]);
        if (rc != 2) fprintf(stderr, "`%s` exited %d\n", bad[i][0], rc);
        CHECK_EQ_I64(rc, 2);
        CHECK_STR_HAS(errtxt, bad[i][1]);
        CHECK_EQ_I64(yp_test_count_lines(errtxt), 1);
    }
}

/* --target pytorch's host half: --workers and --cache change the host RAM and the loader (its
 * JSON's host object and the what-if's host remedies); check_cache_ram's refusal on a machine
 * with too little memory (--mem) is reported and leaves train.py uncached; --data's images size
 * the cache from their headers. */
static void test_torch_host(void) {
    CHECK_EQ_I64(run("--gpu 8GB --target pytorch --model yolov5n --img 320 --batch 8 --workers 2 --cache --mem 500GB "
                     "--json"), 0);
    cJSON *j = cJSON_Parse(out);
    REQUIRE(j != NULL);
    const cJSON *h = cJSON_GetObjectItem(j, "host");
    CHECK_EQ_I64(cJSON_GetObjectItem(h, "workers")->valuedouble, 2);
    CHECK_EQ_I64(cJSON_GetObjectItem(h, "val_workers")->valuedouble, 4);
    CHECK_STR_HAS(cJSON_GetStringValue(cJSON_GetObjectItem(h, "cache")), "--cache ram");
    CHECK(cJSON_GetObjectItem(h, "cache_bytes")->valuedouble > 2e10); /* COCO at 320: ~28 GB */
    CHECK_STR_HAS(cJSON_GetStringValue(cJSON_GetObjectItem(h, "available_from")), "--mem");
    CHECK(cJSON_IsTrue(cJSON_GetObjectItem(h, "fits")));
    CHECK_EQ_I64(cJSON_GetObjectItem(cJSON_GetObjectItem(j, "speed"), "workers")->valuedouble, 2);
    const cJSON *hr = cJSON_GetObjectItem(cJSON_GetObjectItem(j, "whatif"), "host_remedies");
    REQUIRE(cJSON_GetArraySize(hr) == 4);
    static const char *const flags[] = {"--workers 1", "--workers 0", "no --cache", "--cache disk"};
    for (int i = 0; i < 4; i++)
        CHECK_STR_HAS(cJSON_GetStringValue(cJSON_GetObjectItem(cJSON_GetArrayItem(hr, i), "flag")), flags[i]);
    CHECK(cJSON_GetObjectItem(cJSON_GetArrayItem(hr, 2), "saves_bytes")->valuedouble > 2e10);
    cJSON_Delete(j);
    /* 16 GB cannot hold COCO's training images (28 GB at 320): train.py warns and trains without
     * them, and caches the validation images (1.2 GB) */
    CHECK_EQ_I64(run("--gpu 8GB --target pytorch --model yolov5n --img 320 --cache ram --mem 16GB"), 0);
    CHECK_STR_HAS(out, "check_cache_ram refuses to cache the training images");
    CHECK_STR_HAS(out, "--cache ram, the validation images only)");
    CHECK_EQ_I64(run("--gpu 8GB --target pytorch --model yolov5n --img 320 --batch 4 --json --data '" YP_TEST_DATA
                     "/dataset/data.yaml'"), 0);
    j = cJSON_Parse(out);
    REQUIRE(j != NULL);
    h = cJSON_GetObjectItem(j, "host");
    CHECK(cJSON_IsFalse(cJSON_GetObjectItem(h, "image_sizes_assumed")));
    CHECK(cJSON_GetObjectItem(h, "train_image_bytes")->valuedouble > 0);
    cJSON_Delete(j);
}

/* Every `yoloplan` command of the README's Commands block for the PyTorch target runs (exit 0,
 * or 1 for a what-if that does not fit), so the README never shows a command that is refused. */
static void test_readme_torch_commands(void) {
    static char readme[1 << 16];
    FILE *f = fopen(YP_README, "rb");
    REQUIRE(f != NULL);
    size_t n = fread(readme, 1, sizeof readme - 1, f);
    fclose(f);
    readme[n] = 0;
    char *start = strstr(readme, "## Commands");
    REQUIRE(start != NULL);
    char *end = strstr(start + 4, "\n## ");
    if (end) *end = 0;
    int seen = 0;
    for (char *line = strtok(start, "\n"); line; line = strtok(NULL, "\n")) {
        if (strncmp(line, "yoloplan ", 9) || (!strstr(line, "--target pytorch") && !strstr(line, "--profile autobatch")))
            continue;
        char cmd[512];
        snprintf(cmd, sizeof cmd, "%s", line + 9);
        char *hash = strstr(cmd, "  #");
        if (hash) *hash = 0;
        int rc = run("%s", cmd);
        if (rc != 0 && rc != 1) fprintf(stderr, "README command `yoloplan %s` exited %d: %s", cmd, rc, errtxt);
        CHECK(rc == 0 || rc == 1);
        seen++;
    }
    CHECK(seen >= 3);
}

int main(void) {
    if (yp_test_cli_setup()) return 1;
    YP_RUN(test_torch_target);
    YP_RUN(test_torch_host);
    YP_RUN(test_readme_torch_commands);
    rmdir(dir);
    return yp_test_summary();
}
