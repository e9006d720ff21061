/* test_pt2safetensors.c - scripts/pt2safetensors.py with Debian's /usr/bin/python3 and its torch
 * (skipped, saying why, without them), against the C reader and the checkpoint loader:
 *   - a checkpoint the executor wrote -> .pt -> safetensors gives back every tensor (name, dtype,
 *     shape, bytes) and every metadata entry;
 *   - a YOLOv5-like .pt (a dict with "model" a state dict in FP16 with BN's num_batches_tracked,
 *     plus epoch and other entries) converts, and --weights loads every weight from it (the FP16
 *     values, converted exactly), leaving num_batches_tracked unused, with epoch in the metadata;
 *   - a plain state dict .pt (the EMA's) converts and loads bit for bit;
 *   - a .pt that pickles a module converts through stand-ins, with no model code: a bare
 *     nn.Conv2d gives its weight and bias, and tests/data/pt/yolov5t.pt (a YOLOv5 checkpoint whose
 *     pickle names models.yolo.DetectionModel, models.common.Conv, ...) gives the tensors of
 *     tests/data/pt/yolov5t.safetensors, with its epoch in the metadata;
 *   - a .pt whose "model" is a REDUCE of os.system is refused (exit code 2) and nothing runs;
 *   - a stripped checkpoint (yp_ckpt_strip: F16) -> .pt -> safetensors gives it back, and
 *     --weights loads the .pt as it loads the stripped file. */
#include <dirent.h>
#include <unistd.h>

#include "step_fixture.h"
#include "yp_checkpoint.h"
#include "yp_test.h"
#include "yp_test_fs.h"
#include "yp_yaml.h"

#define PYTHON "/usr/bin/python3"

static char dir[64] = "/tmp/yp_test_pt2st.XXXXXX";
static yp_graph *graph;
static yp_gpu gpu;
static yp_backend *cpu;
static yp_plan plan;
static yp_exec src; /* trained one step; its checkpoint is A.safetensors */

static void path_in(char *buf, size_t n, const char *name) { snprintf(buf, n, "%s/%s", dir, name); }

/* Every tensor (and, with meta, metadata entry) of a is in b with the same dtype, shape and bytes /
 * value, and b has nothing else. */
static void same_file(const char *pa, const char *pb, int meta) {
    yp_st_file a, b;
    yp_err err;
    REQUIRE(yp_st_open(&a, pa, &err) == 0);
    if (yp_st_open(&b, pb, &err)) {
        fprintf(stderr, "%s\n", err.msg);
        yp_st_close(&a);
        REQUIRE(0);
    }
    CHECK_EQ_I64(a.n, b.n);
    if (meta) CHECK_EQ_I64(a.n_meta, b.n_meta);
    int bad = 0;
    unsigned char *x = malloc((size_t)a.file_bytes), *y = malloc((size_t)a.file_bytes);
    for (int i = 0; i < a.n && x && y; i++) {
        int j = yp_st_find(&b, a.e[i].name);
        const yp_st_entry *e = &a.e[i], *f = j >= 0 ? &b.e[j] : NULL;
        if (!f || f->dtype != e->dtype || f->ndim != e->ndim || memcmp(f->shape, e->shape, sizeof e->shape) ||
            f->end - f->begin != e->end - e->begin || yp_st_read(&a, i, x, &err) || yp_st_read(&b, j, y, &err) ||
            memcmp(x, y, (size_t)(e->end - e->begin))) {
            if (bad++ < 3) fprintf(stderr, "  tensor %s differs\n", e->name);
        }
    }
    for (int i = 0; i < a.n_meta && meta; i++) {
        const char *v = yp_st_meta(&b, a.meta_key[i]);
        if (!v || strcmp(v, a.meta_value[i])) bad++, fprintf(stderr, "  metadata %s differs\n", a.meta_key[i]);
    }
    CHECK_EQ_I64(bad, 0);
    free(x), free(y);
    yp_st_close(&a), yp_st_close(&b);
}

/* Runs the conversions: A.safetensors -> A.pt with the script's command line, then one Python
 * process (torch loads once) that converts A.pt -> B.safetensors, makes and converts the
 * YOLOv5-like H.pt, the plain state dict E.pt, the module M.pt, the os.system V.pt (which must
 * be refused) and the fixture yolov5t.pt -> Y.safetensors. The exit status. */
static int run_python(void) {
    char cmd[4096], err_log[128];
    path_in(err_log, sizeof err_log, "python.log");
    snprintf(cmd, sizeof cmd, PYTHON " %s/pt2safetensors.py %s/A.safetensors %s/A.pt > %s 2>&1", YP_SCRIPTS, dir, dir,
             err_log);
    if (system(cmd)) return -1;
    snprintf(cmd, sizeof cmd,
             PYTHON " - >> %s 2>&1 <<'EOF'\n"
             "import sys, torch\n"
             "sys.path.insert(0, '%s')\n"
             "import pt2safetensors as p\n"
             "d = '%s/'\n"
             "assert p.main([d + 'A.pt', d + 'B.safetensors']) == 0\n"
             "c = torch.load(d + 'A.pt', weights_only=True)\n"
             "sd = {}\n"
             "for k, v in c['model'].items():\n"
             "    sd[k] = v.half()\n"
             "    if k.endswith('.running_var'): sd[k[:-len('running_var')] + 'num_batches_tracked'] = torch.tensor(7)\n"
             "torch.save({'epoch': 5, 'best_fitness': 0.5, 'model': sd, 'ema': None, 'optimizer': {'state': {}},\n"
             "            'date': '2024-01-01'}, d + 'H.pt')\n"
             "assert p.main([d + 'H.pt', d + 'H.safetensors']) == 0\n"
             "torch.save(c['ema'], d + 'E.pt')\n"
             "assert p.main([d + 'E.pt', d + 'E.safetensors']) == 0\n"
             "torch.save({'model': torch.nn.Conv2d(1, 1, 1)}, d + 'M.pt')\n"
             "assert p.main([d + 'M.pt', d + 'M.safetensors']) == 0\n"
             "class V:\n"
             "    def __reduce__(self):\n"
             "        import os\n"
             "        return (os.system, ('touch ' + d + 'ran',))\n"
             "torch.save({'model': V()}, d + 'V.pt')\n"
             "assert p.main([d + 'V.pt', d + 'V.safetensors']) == 2\n"
             "assert p.main(['%s/pt/yolov5t.pt', d + 'Y.safetensors']) == 0\n"
             "assert p.main([d + 'S.safetensors', d + 'S.pt']) == 0\n"
             "assert p.main([d + 'S.pt', d + 'S2.safetensors']) == 0\n"
             "EOF",
             err_log, YP_SCRIPTS, dir, YP_TEST_DATA);
    return system(cmd);
}

static void test_round_trip(void) {
    char a[128], b[128];
    path_in(a, sizeof a, "A.safetensors"), path_in(b, sizeof b, "B.safetensors");
    same_file(a, b, 1);
}

/* A stripped checkpoint (F16 weights, its metadata) -> .pt -> safetensors gives it back, and
 * --weights reads the .pt: every weight, the F16 values exactly. */
static void test_stripped_round_trip(void) {
    char s[128], s2[128], pt[128];
    path_in(s, sizeof s, "S.safetensors"), path_in(s2, sizeof s2, "S2.safetensors"), path_in(pt, sizeof pt, "S.pt");
    same_file(s, s2, 1);
    yp_exec x, y;
    yp_err err;
    yp_ckpt_transfer r, q;
    REQUIRE(yp_exec_init(&x, &plan, cpu, 0, 9, &err) == 0);
    REQUIRE(yp_exec_init(&y, &plan, cpu, 0, 9, &err) == 0);
    CHECK(yp_ckpt_load_weights(&x, pt, NULL, &r, &err) == 0);
    CHECK(yp_ckpt_load_weights(&y, s, NULL, &q, &err) == 0);
    int weights = 0, bad = 0;
    for (int t = 0; t < x.train.s->n_tensors; t++) {
        const yp_tensor *d = &x.train.s->tensors[t];
        if (d->kind != YP_KIND_WEIGHT) continue;
        weights++;
        bad += memcmp(yp_exec_tensor(&x, t), yp_exec_tensor(&y, t), (size_t)d->bytes) != 0;
    }
    CHECK_EQ_I64(r.loaded, weights);
    CHECK_EQ_I64(r.skipped + r.missing + r.unused, 0);
    CHECK_EQ_I64(q.loaded, weights);
    CHECK_EQ_I64(bad, 0);
    yp_exec_free(&x), yp_exec_free(&y);
}

/* Counts the lines of the Python log holding s. */
static int log_has(const char *s) {
    char p[128], line[1024];
    path_in(p, sizeof p, "python.log");
    FILE *f = fopen(p, "r");
    int n = 0;
    while (f && fgets(line, sizeof line, f)) n += strstr(line, s) != NULL;
    if (f) fclose(f);
    return n;
}

static void test_yolov5_like_pt(void) {
    char h[128];
    path_in(h, sizeof h, "H.safetensors");
    yp_exec x;
    yp_err err;
    REQUIRE(yp_exec_init(&x, &plan, cpu, 0, 9, &err) == 0);
    yp_ckpt_transfer r;
    CHECK(yp_ckpt_load_weights(&x, h, NULL, &r, &err) == 0);
    int weights = 0, bn = 0;
    for (int t = 0; t < x.train.s->n_tensors; t++) {
        weights += x.train.s->tensors[t].kind == YP_KIND_WEIGHT;
        bn += x.train.s->tensors[t].role == YP_ROLE_RUNNING_VAR;
    }
    CHECK_EQ_I64(r.loaded, weights);
    CHECK_EQ_I64(r.skipped + r.missing, 0);
    CHECK_EQ_I64(r.unused, bn); /* num_batches_tracked */
    yp_st_file f;
    REQUIRE(yp_st_open(&f, h, &err) == 0);
    CHECK(yp_st_meta(&f, "epoch") && !strcmp(yp_st_meta(&f, "epoch"), "5"));
    CHECK(yp_st_meta(&f, "date") && !strcmp(yp_st_meta(&f, "date"), "2024-01-01"));
    int e = yp_st_find(&f, "model.0.bn.num_batches_tracked");
    CHECK(e >= 0 && f.e[e].dtype == YP_ST_I64 && f.e[e].ndim == 0);
    int bad = 0, checked = 0;
    uint16_t *half = malloc((size_t)f.file_bytes);
    for (int t = 0; t < x.train.s->n_tensors && half; t++) {
        const yp_tensor *d = &x.train.s->tensors[t];
        int i = d->kind == YP_KIND_WEIGHT ? yp_st_find(&f, d->name) : -2;
        if (i == -2) continue;
        if (i < 0 || f.e[i].dtype != YP_ST_F16 || yp_st_read(&f, i, half, &err)) {
            bad++;
            continue;
        }
        const float *got = yp_exec_tensor(&x, t), *orig = yp_exec_tensor(&src, t);
        for (int64_t k = 0; k < d->shape.w; k++) {
            float v = yp_f16_to_f32(half[k]);
            double tol = 1e-3 * fabs(orig[k]) + 6e-8; /* FP16 rounding of the original */
            bad += memcmp(&got[k], &v, 4) != 0 || fabs((double)v - orig[k]) > tol;
        }
        checked++;
    }
    CHECK_EQ_I64(bad, 0);
    CHECK_EQ_I64(checked, weights);
    free(half);
    yp_st_close(&f);
    yp_exec_free(&x);
}

static void test_plain_state_dict(void) {
    char e[128];
    path_in(e, sizeof e, "E.safetensors");
    yp_exec x;
    yp_err err;
    REQUIRE(yp_exec_init(&x, &plan, cpu, 0, 9, &err) == 0);
    yp_ckpt_transfer r;
    CHECK(yp_ckpt_load_weights(&x, e, NULL, &r, &err) == 0);
    CHECK_EQ_I64(r.unused + r.skipped + r.missing, 0);
    int bad = 0;
    for (int t = 0; t < x.train.s->n_tensors; t++) {
        const yp_tensor *d = &x.train.s->tensors[t];
        if (d->kind != YP_KIND_WEIGHT) continue;
        bad += memcmp(yp_exec_tensor(&x, t), yp_exec_tensor(&src, src.trainer.ema[t]), (size_t)d->bytes) != 0;
    }
    CHECK(r.loaded > 100);
    CHECK_EQ_I64(bad, 0);
    yp_exec_free(&x);
}

static void test_modules_stand_in(void) {
    char m[128], v[128], ran[128], y[128];
    path_in(m, sizeof m, "M.safetensors"), path_in(v, sizeof v, "V.safetensors");
    path_in(ran, sizeof ran, "ran"), path_in(y, sizeof y, "Y.safetensors");
    yp_st_file f;
    yp_err err;
    REQUIRE(yp_st_open(&f, m, &err) == 0);
    CHECK_EQ_I64(f.n, 2);
    CHECK(yp_st_find(&f, "weight") >= 0 && yp_st_find(&f, "bias") >= 0);
    yp_st_close(&f);
    CHECK(access(v, F_OK) != 0);
    CHECK(access(ran, F_OK) != 0); /* os.system was never called */
    CHECK_EQ_I64(log_has("'model' is a posix.system, neither a module nor a state dict"), 1);
    same_file(YP_TEST_DATA "/pt/yolov5t.safetensors", y, 0);
    REQUIRE(yp_st_open(&f, y, &err) == 0);
    CHECK(yp_st_meta(&f, "epoch") && !strcmp(yp_st_meta(&f, "epoch"), "-1"));
    yp_st_close(&f);
}

int main(void) {
    if (system(PYTHON " -c 'import torch, numpy' > /dev/null 2>&1")) {
        printf("  SKIP test_pt2safetensors: " PYTHON " with torch and numpy is not installed (Debian: python3-torch)\n");
        return 77;
    }
    yp_err err;
    char why[256] = "", a[128];
    graph = yp_yaml_import(YP_TEST_DATA "/yaml/good/yolov5t.yaml", 0, &err);
    cpu = yp_backend_cpu_new(NULL, why, sizeof why);
    if (!graph || !cpu || yp_gpu_parse("a100-40gb", &gpu, &err) || !mkdtemp(dir)) {
        fprintf(stderr, "test_pt2safetensors: setup failed: %s %s\n", err.msg, why);
        return 1;
    }
    yp_candidate c = yp_candidate_default();
    c.batch = 1, c.img_w = c.img_h = 64, c.mosaic = 0, c.labels_per_image = 2;
    yp_exec_candidate_for(&c, cpu);
    float *img = NULL, tg[6] = {0, 1, 0.5f, 0.5f, 0.3f, 0.2f};
    double loss[4];
    int rc = yp_plan_build(graph, &c, &gpu, 0, 0, &plan, &err) || yp_exec_init(&src, &plan, cpu, 0, 1, &err);
    if (!rc) { /* one step, so the EMA, the momentum and the weights all differ */
        img = calloc((size_t)(64 * 64 * 3), sizeof *img);
        for (int i = 0; img && i < 64 * 64 * 3; i++) img[i] = (float)(i % 17) / 17.0f;
        path_in(a, sizeof a, "A.safetensors");
        yp_ckpt_meta m = {2, 0.25, "{\"note\": \"\\u00fcber\"}"};
        rc = !img || yp_exec_micro_step(&src, img, tg, 1, loss, &err) || yp_exec_update(&src, &err) ||
             yp_ckpt_save(&src, a, &m, NULL, &err);
        yp_ckpt_strip_result sr; /* S: the same checkpoint stripped (F16 weights, epoch -1) */
        path_in(a, sizeof a, "S.safetensors");
        rc = rc || yp_ckpt_save(&src, a, &m, NULL, &err) || yp_ckpt_strip(a, &sr, &err);
    }
    if (rc) {
        fprintf(stderr, "test_pt2safetensors: %s\n", err.msg);
        return 1;
    }
    int py = run_python();
    if (py) fprintf(stderr, "test_pt2safetensors: the Python conversions failed (%d); see %s/python.log\n", py, dir);
    else {
        YP_RUN(test_round_trip);
        YP_RUN(test_yolov5_like_pt);
        YP_RUN(test_plain_state_dict);
        YP_RUN(test_modules_stand_in);
        YP_RUN(test_stripped_round_trip);
        yp_test_remove_tree(dir);
    }
    free(img);
    yp_exec_free(&src);
    yp_plan_free(&plan);
    yp_backend_free(cpu);
    yp_graph_free(graph);
    return py ? 1 : yp_test_summary();
}
