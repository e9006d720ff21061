/* test_bad_files.c - hostile inputs through the yoloplan binary, each refused in one line with
 * exit 2 and no hang (every command runs under timeout(1)): FIFOs and /dev/zero where a file is
 * read, graphs past the size caps and with channel or stride sums that would overflow
 * (tests/data/bad/), the command lines that were taken silently, hand-edited plan.json fields,
 * and --save-plan onto a symbolic link or a device. docs/bad-input.md lists them all. */
#include <stdarg.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "yp_test.h"
#include "yp_test_run.h"

static char out[1 << 16], errtxt[1 << 14];
static char dir[64] = "/tmp/yp_test_bad.XXXXXX";

/* Runs `timeout 30 yoloplan args` (a hang fails as exit 124). */
static int run(const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 1, 2)))
#endif
    ;
static int run(const char *fmt, ...) {
    char args[2048], line[2300];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(args, sizeof args, fmt, ap);
    va_end(ap);
    snprintf(line, sizeof line, "30 '%s' %s", YP_BINARY, args);
    yp_test_cmd c = {"timeout", dir, 1, out, errtxt, sizeof out, sizeof errtxt};
    return yp_test_run_cmd(&c, line);
}

/* The command is refused: exit 2, one line on stderr holding want. */
static void refused(const char *args, const char *want) {
    int rc = run("%s", args);
    if (rc != 2 || !strstr(errtxt, want)) fprintf(stderr, "`%s` -> %d: %s", args, rc, errtxt);
    CHECK_EQ_I64(rc, 2);
    CHECK_STR_HAS(errtxt, want);
    CHECK_EQ_I64(yp_test_count_lines(errtxt), 1);
}

static void write_text(const char *name, const char *text) {
    char p[256];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    FILE *f = fopen(p, "wb");
    if (f) fputs(text, f), fclose(f);
}

/* A FIFO with no writer, or /dev/zero, where a file is read: refused before a byte is read. */
static void test_not_regular(void) {
    char p[256];
    snprintf(p, sizeof p, "%s/fifo.json", dir);
    REQUIRE(mkfifo(p, 0600) == 0);
    snprintf(p, sizeof p, "%s/fifo.yaml", dir);
    REQUIRE(mkfifo(p, 0600) == 0);
    snprintf(p, sizeof p, "%s/list.txt", dir);
    REQUIRE(mkfifo(p, 0600) == 0);
    refused("info --model fifo.json", "fifo.json: a FIFO, not an IR file; give a regular file");
    refused("--load-plan fifo.json", "fifo.json: a FIFO, not a plan.json");
    refused("--load-plan /dev/zero", "/dev/zero: a device, not a plan.json");
    refused("info --model fifo.yaml", "fifo.yaml: a FIFO, not a yaml file");
    refused("--gpu 8GB --data fifo.yaml", "fifo.yaml: a FIFO, not a yaml file");
    write_text("list.yaml", "train: list.txt\nval: list.txt\nnc: 1\n");
    refused("--gpu 8GB --data list.yaml", "list.txt: a FIFO, not an image list");
}

/* tests/data/bad/: sums past the caps, and a model that expands past the node cap */
static void test_graph_caps(void) {
    refused("info --model '" YP_TEST_DATA "/bad/concat_channels.json'", "concat of more than 1048576 channels");
    refused("info --model '" YP_TEST_DATA "/bad/stride_overflow.yaml'", "downsample the image 2048 times; at most 1024");
    refused("info --model '" YP_TEST_DATA "/bad/node_explosion.yaml'", "expands to more than 4096 nodes");
    /* 1200 layers of conv + bn + silu: past both caps (written here: 600 kB is no fixture) */
    char p[256];
    snprintf(p, sizeof p, "%s/deep.json", dir);
    FILE *f = fopen(p, "wb");
    REQUIRE(f != NULL);
    fputs("{\"format\": \"yoloplan-ir\", \"version\": 1, \"name\": \"deep\", \"nc\": 1, \"depth_multiple\": 1, "
          "\"width_multiple\": 1, \"input\": {\"channels\": 3}, \"strides\": [1], \"anchors\": [[4, 4]], \"layers\": [",
          f);
    const int L = 1200;
    for (int l = 0; l <= L; l++)
        fprintf(f, "%s{\"index\": %d, \"from\": [%d], \"repeats\": 1, \"module\": \"%s\", \"args\": [], \"output\": %d}",
                l ? ", " : "", l, l ? l - 1 : -1, l < L ? "Conv" : "Detect", l < L ? 3 * l + 2 : 3 * L);
    fputs("], \"nodes\": [", f);
    for (int l = 0; l < L; l++)
        fprintf(f, "%s{\"id\": %d, \"op\": \"conv2d\", \"name\": \"m.%d.c\", \"layer\": %d, \"inputs\": [%d], \"attrs\": "
                   "{\"c_in\": %d, \"c_out\": 4, \"k\": 1, \"s\": 1, \"p\": 0, \"groups\": 1, \"bias\": false}}, "
                   "{\"id\": %d, \"op\": \"batchnorm2d\", \"name\": \"m.%d.b\", \"layer\": %d, \"inputs\": [%d], "
                   "\"attrs\": {\"c\": 4, \"eps\": 0.001, \"momentum\": 0.03}}, {\"id\": %d, \"op\": \"silu\", "
                   "\"name\": \"m.%d.a\", \"layer\": %d, \"inputs\": [%d]}",
                l ? ", " : "", 3 * l, l, l, l ? 3 * l - 1 : -1, l ? 4 : 3, 3 * l + 1, l, l, 3 * l, 3 * l + 2, l, l,
                3 * l + 1);
    fprintf(f, ", {\"id\": %d, \"op\": \"detect\", \"name\": \"m.%d\", \"layer\": %d, \"inputs\": [%d], \"attrs\": "
               "{\"nc\": 1, \"na\": 1, \"nl\": 1, \"c_in\": [4]}}]}\n", 3 * L, L, L, 3 * L - 1);
    fclose(f);
    refused("info --model deep.json", "1201 layers and 3601 nodes; yoloplan takes at most 1024 layers and 4096 nodes");
    /* strides that are not the real downsampling (trained with a loss near 0 before), a key given
     * twice (cJSON reads the first), a 4-channel model for the RGB loader */
    refused("info --model '" YP_TEST_DATA "/bad/stride_wrong.json'", "strides[0]: 8, but detection level 0 sees");
    refused("info --model '" YP_TEST_DATA "/bad/duplicate_key.json'", "nodes[0].attrs: \"k\" appears twice");
    /* on a dataset of its own: train writes a label cache next to the labels */
    CHECK_EQ_I64(run("synth --out ds --images 4 --val 2 --classes 1 --img 64 --seed 1"), 0);
    refused("train --data ds/data.yaml --model '" YP_TEST_DATA "/bad/ch4.json' --img 64",
            "takes 4 input channels, but the loader reads images as RGB (3)");
}

/* control bytes from a label file are not echoed to the terminal */
static void test_control_bytes(void) {
    char cmd[600];
    snprintf(cmd, sizeof cmd, "mkdir -p '%s/ctl/images/train' '%s/ctl/labels/train' && cp '" YP_TEST_DATA
             "/dataset/images/bad/g_good.jpg' '%s/ctl/images/train/a.jpg'", dir, dir, dir);
    REQUIRE(system(cmd) == 0);
    write_text("ctl/labels/train/a.txt", "0 0.5 0.5 0.2 0.2\n\033[31mEVIL\007 0.5 0.5 0.1 0.1\n");
    write_text("ctl/data.yaml", "train: images/train\nval: images/train\nnc: 1\n");
    refused("--gpu 8GB --data ctl/data.yaml", "\"?[31mEVIL?\" is not a number");
    CHECK(strchr(errtxt, 033) == NULL && strchr(errtxt, 007) == NULL);
}

/* what the command line took silently, or blamed on the wrong option */
static void test_command_line(void) {
    refused("--gpu 8GB --model ''", "--model \"\": an empty model name");
    refused("--gpu 8GB --model ,,,", "an empty model name");
    refused("--gpu 100MB", "--gpu 100MB: generic GPU with 100 MiB has 0.10 GiB, no more than the 0.45 GiB");
    refused("--gpu 8GB --gpu 4GB", "--gpu given twice");
    refused("info --model yolov5n --model yolov5s", "--model given twice");
    refused("--gpu 8GB --img 32-8192", "--img 32-8192: 256 sizes (multiples of 32); one search takes at most 64");
    refused("--gpu 8GB --img 330-340", "no multiple of 32 in the range");
    refused("--load-plan p.json --data d.yaml", "--data with --load-plan");
    refused("--gpu 8GB --model yolov5n --ckpt 70", "layer 70 does not exist in yolov5n (layers 0..24)");
}

/* a saved plan with one field edited: refused where it is read, naming the field */
static void test_plan_fields(void) {
    CHECK_EQ_I64(run("--gpu 8GB --model yolov5n --img 64 --batch 2 --save-plan p.json"), 0);
    char p[256];
    snprintf(p, sizeof p, "%s/p.json", dir);
    FILE *f = fopen(p, "rb");
    REQUIRE(f != NULL);
    static char text[1 << 20];
    size_t n = fread(text, 1, sizeof text - 1, f);
    fclose(f);
    text[n] = 0;
    static const struct {
        const char *section, *key, *value, *want;
    } cases[] = {
        {"gpu", "mem_bytes", "1000", "gpu: mem_bytes 1000 is no more than fixed_bytes"},
        {"gpu", "mem_bytes", "-5", "gpu.mem_bytes: -5; expected a whole number"},
        {NULL, "reserve_bytes", "1e300", "reserve_bytes: 1.0000000000000001e+300; expected a whole number in 0.."},
        {NULL, "reserve_bytes", "-1", "reserve_bytes: -1"},
        {"gpu", "fp32_tflops", "0", "gpu.fp32_tflops: 0; expected a number in 0.001.."},
        {"gpu", "bandwidth_gbs", "0", "gpu.bandwidth_gbs: 0"},
        {"candidate", "freeze", "-1", "candidate.freeze: -1"},
        {"candidate", "freeze", "500", "candidate.freeze 500: yolov5n has 25 layers"},
        {"candidate", "batch", "2.5", "candidate.batch: 2.5; expected a whole number in 1..1024"},
        {"candidate", "checkpoint", "[70]", "candidate.checkpoint: expected layer indices 0..63"},
        {"candidate", "checkpoint", "[0]", "candidate.checkpoint: layer 0 has nothing to recompute"},
        {"candidate", "checkpoint", "[2, 2]", "candidate.checkpoint: layer 2 listed twice"},
        {"candidate", "mosaic", "5", "candidate.mosaic: 5; expected a whole number in 0..1"},
        {"candidate", "model", "\"yolov5s\"", "candidate.model \"yolov5s\" is not the model the file carries"},
        {"candidate", "img", "[65, 64]", "candidate.img 65x64: yolov5n needs multiples of 32"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        cJSON *j = cJSON_Parse(text);
        REQUIRE(j != NULL);
        cJSON *o = cases[i].section ? cJSON_GetObjectItem(j, cases[i].section) : j;
        cJSON_ReplaceItemInObject(o, cases[i].key, cJSON_Parse(cases[i].value));
        char *s = cJSON_PrintUnformatted(j);
        cJSON_Delete(j);
        write_text("edited.json", s);
        free(s);
        refused("--load-plan edited.json", cases[i].want);
    }
}

/* the host-memory preflight: a benchmark whose arena the host cannot hold (--mem simulates a small
 * machine or cgroup) is refused before the arena is allocated, naming the batch that fits. The
 * arena's figure holds the backend's conv scratch, which depends on the CPU's instruction set
 * (7.29 GiB on one machine, 7.24 on another), so the message is checked in its parts. */
static void test_host_preflight(void) {
    refused("bench-step --model yolov5s --batch 64 --img 640 --mem 4GiB", "--batch 64 at 640x640 needs 7.");
    CHECK_STR_HAS(errtxt, " GiB of arena, the host has 4.00 GiB (--mem); the largest batch that fits is --batch ");
    const char *b = strstr(errtxt, "fits is --batch ");
    long fits = b ? strtol(b + strlen("fits is --batch "), NULL, 10) : 0;
    CHECK(fits >= 30 && fits <= 36); /* about 4 / 7.3 of 64, less the fixed part */
    refused("bench-step --model yolov5s --batch 8 --img 640 --mem 1MiB", "not even --batch 1 fits: lower --img");
}

/* --save-plan replaces a regular file, nothing else */
static void test_save_targets(void) {
    char p[256];
    snprintf(p, sizeof p, "%s/link.json", dir);
    REQUIRE(symlink("elsewhere.json", p) == 0);
    refused("--gpu 8GB --save-plan link.json", "link.json: a symbolic link, not a regular file");
    struct stat st;
    CHECK(lstat(p, &st) == 0 && S_ISLNK(st.st_mode)); /* still the link */
    refused("--gpu 8GB --save-plan /dev/null", "/dev/null: a device, not a regular file");
    refused("import '" YP_MODELS_DIR "/yolov5n.yaml' -o link.json", "a symbolic link, not a regular file");
}

int main(void) {
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        return 1;
    }
    YP_RUN(test_not_regular);
    YP_RUN(test_graph_caps);
    YP_RUN(test_control_bytes);
    YP_RUN(test_command_line);
    YP_RUN(test_plan_fields);
    YP_RUN(test_save_targets);
    YP_RUN(test_host_preflight);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd)) fprintf(stderr, "could not remove %s\n", dir);
    return yp_test_summary();
}
