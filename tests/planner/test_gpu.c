/* test_gpu.c - the GPU table, --gpu parsing (sizes, card names, bad values) and the matching of
 * CUDA device names for --gpu auto. */
#include <stdint.h>
#include <string.h>

#include "yp_gpu.h"
#include "yp_test.h"

#define MIB ((int64_t)1 << 20)
#define GIB ((int64_t)1 << 30)

/* The table row with this id, or NULL. */
static const yp_gpu *row(const char *name) {
    int n;
    const yp_gpu *t = yp_gpu_table(&n);
    for (int i = 0; i < n; i++)
        if (strcmp(t[i].name, name) == 0) return &t[i];
    return NULL;
}

static int same_gpu(const yp_gpu *a, const yp_gpu *b) {
    return strcmp(a->name, b->name) == 0 && strcmp(a->desc, b->desc) == 0 &&
           a->mem_bytes == b->mem_bytes && a->fp32_tflops == b->fp32_tflops &&
           a->tf32_tflops == b->tf32_tflops && a->fp16_tflops == b->fp16_tflops &&
           a->bf16_tflops == b->bf16_tflops && a->bw_gbs == b->bw_gbs &&
           a->fixed_bytes == b->fixed_bytes && a->from_table == b->from_table;
}

/* Parses spec, expecting success; returns the result (zeroed on failure, with a message). */
static yp_gpu parse_ok(const char *spec) {
    yp_gpu g;
    yp_err err = {{0}};
    memset(&g, 0, sizeof g);
    if (yp_gpu_parse(spec, &g, &err) != 0) {
        fprintf(stderr, "  unexpected error for \"%s\": %s\n", spec, err.msg);
        yp_test_failed_checks++;
        memset(&g, 0, sizeof g);
    }
    return g;
}

/* Parses spec, expecting an error whose message holds fragment, the value, and no newline. */
static void parse_bad(const char *spec, const char *fragment) {
    yp_gpu g;
    memset(&g, 0x5a, sizeof g);
    yp_gpu before = g;
    yp_err err = {{0}};
    int rc = yp_gpu_parse(spec, &g, &err);
    CHECK_EQ_I64(rc, -1);
    CHECK_STR_HAS(err.msg, fragment);
    CHECK_STR_HAS(err.msg, spec);
    CHECK(strchr(err.msg, '\n') == NULL);
    CHECK(memcmp(&g, &before, sizeof g) == 0); /* out untouched on error */
}

static void test_table_is_sane(void) {
    int n = 0;
    const yp_gpu *t = yp_gpu_table(&n);
    CHECK(t != NULL);
    CHECK_EQ_I64(n, 16);
    for (int i = 0; i < n; i++) {
        const yp_gpu *g = &t[i];
        CHECK(g->name[0] != '\0' && g->desc[0] != '\0');
        CHECK_EQ_I64(g->from_table, 1);
        CHECK(g->mem_bytes >= 8 * GIB && g->mem_bytes % GIB == 0);
        CHECK(g->fp32_tflops > 0 && g->bw_gbs > 0);
        /* tensor rates: none, or above FP32; TF32/BF16 only with tensor cores */
        CHECK(g->fp16_tflops == 0 || g->fp16_tflops > g->fp32_tflops);
        CHECK(g->tf32_tflops == 0 || g->fp16_tflops > g->tf32_tflops);
        CHECK(g->bf16_tflops == 0 || g->bf16_tflops == g->fp16_tflops);
        CHECK((g->tf32_tflops > 0) == (g->bf16_tflops > 0));
        /* context + libraries at least ~390 MiB, and never more than a few GiB */
        CHECK(g->fixed_bytes >= 390 * MIB && g->fixed_bytes <= 3 * GIB);
        CHECK(g->fixed_bytes < g->mem_bytes / 4);
        for (int j = 0; j < i; j++) CHECK(strcmp(g->name, t[j].name) != 0);
        /* every id parses back to its own row */
        yp_gpu p = parse_ok(g->name);
        CHECK(same_gpu(&p, g));
    }
    CHECK(yp_gpu_table(NULL) == t);
}

static void test_sizes_in_gib(void) {
    const char *eight[] = {"8GB",     "8gb",   "8GiB", "8gib", "8G",     "8g",  "8Gb",
                           "8192MiB", "8192M", "8192mb", "8192MB", " 8 GB ", "+8GB", "8.0G",
                           "0.0078125TB"};
    const yp_gpu *ref = row("rtx3070");
    CHECK(ref != NULL);
    if (!ref) return;
    for (size_t i = 0; i < sizeof eight / sizeof eight[0]; i++) {
        yp_gpu g = parse_ok(eight[i]);
        CHECK_EQ_I64(g.mem_bytes, 8 * GIB);
        CHECK_STR_HAS(g.name, "8GiB");
        CHECK(strcmp(g.name, "8GiB") == 0);
        CHECK(strcmp(g.desc, "generic GPU with 8 GiB") == 0);
        CHECK_EQ_I64(g.from_table, 0);
        /* generic rates are the RTX 3070's */
        CHECK(g.fp32_tflops == ref->fp32_tflops && g.tf32_tflops == ref->tf32_tflops);
        CHECK(g.fp16_tflops == ref->fp16_tflops && g.bf16_tflops == ref->bf16_tflops);
        CHECK(g.bw_gbs == ref->bw_gbs);
        /* 3 % driver reserve plus the context: more than the reserve, well under the size */
        CHECK(g.fixed_bytes > 8 * GIB / 100 * 3 && g.fixed_bytes < 2 * GIB);
    }
    yp_gpu g = parse_ok("7.5G");
    CHECK_EQ_I64(g.mem_bytes, 7 * GIB + GIB / 2);
    CHECK(strcmp(g.name, "7.5GiB") == 0);
    CHECK_STR_HAS(g.desc, "7.5 GiB");
    g = parse_ok("16384MB");
    CHECK_EQ_I64(g.mem_bytes, 16 * GIB);
    CHECK(strcmp(g.name, "16GiB") == 0);
    g = parse_ok("0.5TB");
    CHECK_EQ_I64(g.mem_bytes, 512 * GIB);
    g = parse_ok("4TiB");
    CHECK_EQ_I64(g.mem_bytes, 4096 * GIB);
    g = parse_ok("512MiB");
    CHECK_EQ_I64(g.mem_bytes, 512 * MIB);
    CHECK(strcmp(g.name, "512MiB") == 0);
    g = parse_ok("7.77G"); /* rounded to whole bytes */
    CHECK_EQ_I64(g.mem_bytes, (int64_t)llround(7.77 * (double)GIB));
    CHECK(strcmp(g.name, "7.77GiB") == 0);
    /* a bigger size gets a bigger reserve */
    yp_gpu big = parse_ok("80GB");
    yp_gpu small = parse_ok("8GB");
    CHECK(big.fixed_bytes - small.fixed_bytes == 80 * GIB / 100 * 3 - 8 * GIB / 100 * 3);
}

static void check_rates(const yp_gpu *g, const char *name, int64_t mem_gib, double fp32,
                        double tf32, double fp16, double bf16, double bw) {
    CHECK(strcmp(g->name, name) == 0);
    CHECK_EQ_I64(g->mem_bytes, mem_gib * GIB);
    CHECK(g->fp32_tflops == fp32);
    CHECK(g->tf32_tflops == tf32);
    CHECK(g->fp16_tflops == fp16);
    CHECK(g->bf16_tflops == bf16);
    CHECK(g->bw_gbs == bw);
    CHECK_EQ_I64(g->from_table, 1);
}

static void test_cards(void) {
    yp_gpu g = parse_ok("a100-40gb");
    check_rates(&g, "a100-40gb", 40, 19.5, 156.0, 312.0, 312.0, 1555.0);
    g = parse_ok("t4");
    check_rates(&g, "t4", 16, 8.1, 0.0, 65.0, 0.0, 320.0);
    g = parse_ok("h200");
    check_rates(&g, "h200", 141, 67.0, 494.5, 989.5, 989.5, 4800.0);
    g = parse_ok("rtx3070");
    check_rates(&g, "rtx3070", 8, 20.3, 20.3, 40.6, 40.6, 448.0);
    CHECK_STR_HAS(g.desc, "RTX 3070");
    g = parse_ok("rtx2080ti"); /* GeForce: FP32-accumulate rate, half of 107.6 */
    check_rates(&g, "rtx2080ti", 11, 13.4, 0.0, 53.8, 0.0, 616.0);
    g = parse_ok("rtx4090");
    check_rates(&g, "rtx4090", 24, 82.6, 82.6, 165.2, 165.2, 1008.0);
    g = parse_ok("h100");
    check_rates(&g, "h100", 80, 67.0, 494.5, 989.5, 989.5, 3350.0);
    /* a parsed card is exactly its table row */
    const yp_gpu *r = row("h100");
    CHECK(r != NULL);
    if (r) CHECK(same_gpu(&g, r));
    /* the T4 loses ~1.4 GiB to ECC and the driver: its fixed cost is the largest of the 16 GB cards */
    yp_gpu t4 = parse_ok("t4"), v100 = parse_ok("v100-16gb");
    CHECK(t4.fixed_bytes > GIB && t4.fixed_bytes > v100.fixed_bytes);
}

static void test_aliases(void) {
    static const struct {
        const char *spec, *name;
    } cases[] = {
        {"RTX3070", "rtx3070"},       {"rtx-3070", "rtx3070"},
        {"3070", "rtx3070"},          {"RTX 3070", "rtx3070"},
        {"NVIDIA GeForce RTX 3070", "rtx3070"},
        {"a100", "a100-40gb"},        {"A100", "a100-40gb"},
        {"a100-40", "a100-40gb"},     {"A100-40GB", "a100-40gb"},
        {"a100-80", "a100-80gb"},     {"a100-80gb", "a100-80gb"},
        {"v100", "v100-16gb"},        {"V100-32", "v100-32gb"},
        {"h100", "h100"},             {"H100-SXM", "h100"},
        {"h200", "h200"},             {"H200", "h200"},
        {"l4", "l4"},                 {"L4", "l4"},
        {"t4", "t4"},                 {"Tesla T4", "t4"},
        {"1080ti", "gtx1080ti"},      {"GTX 1080 Ti", "gtx1080ti"},
        {"gtx_1080_ti", "gtx1080ti"}, {"2080ti", "rtx2080ti"},
        {"3060", "rtx3060"},          {"rtx3060-12gb", "rtx3060"},
        {"3080", "rtx3080"},          {"3090", "rtx3090"},
        {"4090", "rtx4090"},          {"a10", "a10"},
        {" t4 ", "t4"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        yp_gpu g = parse_ok(cases[i].spec);
        if (strcmp(g.name, cases[i].name) != 0) {
            fprintf(stderr, "  \"%s\" gave \"%s\", want \"%s\"\n", cases[i].spec, g.name,
                    cases[i].name);
            yp_test_failed_checks++;
        }
        const yp_gpu *r = row(cases[i].name);
        CHECK(r != NULL);
        if (r) CHECK(same_gpu(&g, r));
    }
}

static void test_bad_values(void) {
    parse_bad("8XB", "unknown unit \"XB\"");
    parse_bad("8XB", "GiB");
    parse_bad("8GB!", "unknown unit");
    parse_bad("8GBx", "unknown unit");
    parse_bad("1.2.3GB", "unknown unit");
    parse_bad("-1", "must be positive");
    parse_bad("-1GB", "must be positive");
    parse_bad("0", "must be positive");
    parse_bad("0GB", "must be positive");
    parse_bad("0.0000000000001M", "must be positive"); /* rounds to 0 bytes */
    parse_bad("", "empty");
    parse_bad("   ", "empty");
    parse_bad("abc", "unknown card");
    parse_bad("abc", "rtx3070");   /* the message lists the known cards */
    parse_bad("abc", "gtx1080ti, rtx2080ti");
    parse_bad("h100?", "unknown card");
    parse_bad("a10g", "unknown card");
    parse_bad("5TB", "4 TiB");
    parse_bad("4097GiB", "4 TiB");
    parse_bad("99999999999999999999999999999999GB", "4 TiB");
    parse_bad("nan", "finite");
    parse_bad("NaNGB", "finite");
    parse_bad("inf", "finite");
    parse_bad("-inf", "finite");
    parse_bad("Infinity", "finite");
    parse_bad("8", "needs a unit");
    parse_bad("8", "8GB");
    parse_bad("auto", "auto");
    parse_bad("AUTO", "command line");
    /* err may be NULL; spec may be NULL */
    yp_gpu g;
    CHECK_EQ_I64(yp_gpu_parse("8XB", &g, NULL), -1);
    yp_err err = {{0}};
    CHECK_EQ_I64(yp_gpu_parse(NULL, &g, &err), -1);
    CHECK_STR_HAS(err.msg, "empty");
}

static void test_from_device(void) {
    yp_gpu g;
    int64_t h200_total = 143221 * MIB;
    CHECK_EQ_I64(yp_gpu_from_device("NVIDIA H200", h200_total, &g), 1);
    CHECK(strcmp(g.name, "h200") == 0);
    CHECK_EQ_I64(g.mem_bytes, h200_total);
    CHECK(g.fp16_tflops == 989.5 && g.bw_gbs == 4800.0);
    CHECK_EQ_I64(g.from_table, 1);
    /* the measured total already excludes the driver reserve: only context and libraries remain */
    const yp_gpu *r = row("h200");
    CHECK(r != NULL);
    if (r) {
        CHECK(g.fixed_bytes < r->fixed_bytes);
        CHECK_EQ_I64(r->fixed_bytes - g.fixed_bytes, r->mem_bytes - h200_total);
    }

    CHECK_EQ_I64(yp_gpu_from_device("Tesla T4", 15101 * MIB, &g), 1);
    CHECK(strcmp(g.name, "t4") == 0);
    CHECK_EQ_I64(g.mem_bytes, 15101 * MIB);
    CHECK(g.fp16_tflops == 65.0);

    /* real CUDA names of other rows */
    static const struct {
        const char *device, *name;
    } cases[] = {
        {"NVIDIA GeForce RTX 3070", "rtx3070"},   {"NVIDIA GeForce GTX 1080 Ti", "gtx1080ti"},
        {"GeForce RTX 2080 Ti", "rtx2080ti"},     {"NVIDIA A100-SXM4-40GB", "a100-40gb"},
        {"NVIDIA A100-SXM4-80GB", "a100-80gb"},   {"NVIDIA A100 80GB PCIe", "a100-80gb"},
        {"Tesla V100-SXM2-16GB", "v100-16gb"},    {"Tesla V100-SXM2-32GB", "v100-32gb"},
        {"NVIDIA H100 80GB HBM3", "h100"},        {"NVIDIA L4", "l4"},
        {"NVIDIA A10", "a10"},                    {"NVIDIA GeForce RTX 4090", "rtx4090"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int m = yp_gpu_from_device(cases[i].device, 10 * GIB, &g);
        CHECK_EQ_I64(m, 1);
        if (strcmp(g.name, cases[i].name) != 0) {
            fprintf(stderr, "  \"%s\" matched \"%s\", want \"%s\"\n", cases[i].device, g.name,
                    cases[i].name);
            yp_test_failed_checks++;
        }
    }

    /* no total: the table's memory and fixed cost stay */
    CHECK_EQ_I64(yp_gpu_from_device("NVIDIA H200", 0, &g), 1);
    if (r) CHECK(same_gpu(&g, r));

    /* unknown devices and look-alikes fall back to a generic entry with the given memory */
    static const char *unknown[] = {"NVIDIA RTX A6000", "NVIDIA A10G", "NVIDIA H100 PCIe",
                                    "NVIDIA H200 NVL", "NVIDIA GeForce RTX 3080 Ti",
                                    "NVIDIA GeForce RTX 3070 Laptop GPU"};
    for (size_t i = 0; i < sizeof unknown / sizeof unknown[0]; i++) {
        CHECK_EQ_I64(yp_gpu_from_device(unknown[i], 48 * GIB, &g), 0);
        CHECK_EQ_I64(g.mem_bytes, 48 * GIB);
        CHECK_EQ_I64(g.from_table, 0);
        CHECK(strcmp(g.name, "48GiB") == 0);
        CHECK_STR_HAS(g.desc, unknown[i]);
        CHECK(g.fp32_tflops == row("rtx3070")->fp32_tflops);
        CHECK(g.fixed_bytes > 0 && g.fixed_bytes < GIB);
    }
    CHECK_EQ_I64(yp_gpu_from_device(NULL, 8 * GIB, &g), 0);
    CHECK(strcmp(g.desc, "generic GPU with 8 GiB") == 0);
}

static void test_list_names(void) {
    char buf[512];
    yp_gpu_list_names(buf, sizeof buf);
    CHECK(strncmp(buf, "gtx1080ti, rtx2080ti, rtx3060, ", 31) == 0);
    CHECK_STR_HAS(buf, "a100-40gb, a100-80gb");
    CHECK_STR_HAS(buf, ", h200");
    CHECK(buf[strlen(buf) - 1] != ' ');
    int n;
    yp_gpu_table(&n);
    int commas = 0;
    for (const char *p = buf; *p; p++) commas += *p == ',';
    CHECK_EQ_I64(commas, n - 1);
    char small[12];
    memset(small, 'x', sizeof small);
    yp_gpu_list_names(small, sizeof small);
    CHECK(strlen(small) < sizeof small);
    char one = 'x';
    yp_gpu_list_names(&one, 0); /* n == 0: nothing written */
    CHECK(one == 'x');
    yp_gpu_list_names(&one, 1);
    CHECK(one == '\0');
}

int main(void) {
    YP_RUN(test_table_is_sane);
    YP_RUN(test_sizes_in_gib);
    YP_RUN(test_cards);
    YP_RUN(test_aliases);
    YP_RUN(test_bad_values);
    YP_RUN(test_from_device);
    YP_RUN(test_list_names);
    return yp_test_summary();
}
