/* test_pt.c - the PyTorch .pt reader (executor/io/yp_pt.h) and --weights from a .pt, on the files of
 * tests/data/pt/ (tests/ref/make_pt_fixtures.py: torch.save's output and the safetensors of the same
 * state dicts, so no torch is needed here):
 *   - every .pt gives the tensors of its safetensors: the same names in the same order (PyTorch's
 *     state_dict() order), dtype, shape and bytes: yolov5t's FP16 DetectionModel checkpoint (349
 *     tensors, num_batches_tracked and anchors included, Detect's non-persistent stride not), a
 *     last.pt with "model" and "ema" (ema. names), a plain state dict, a pickled module in protocol
 *     2 and in protocol 4, views at storage offsets into one shared storage;
 *   - yp_ckpt_load_weights from yolov5t.pt sets every weight of a yolov5t executor bit for bit as from
 *     yolov5t.safetensors, with the same counts; for tiny_last.pt, --weights takes "model" (train.py)
 *     and the eval load takes "ema" (val.py's attempt_load);
 *   - hostile files are refused in one line naming the file, the problem and a fix (truncated zip,
 *     unknown opcode, huge storage, memo slot and string, os.system, non-contiguous, too deep,
 *     legacy format, not a checkpoint, a name twice, 2^40 paths through shared modules), and
 *     os.system is never run;
 *   - the pickle machine on hand-written streams: values, memo cycles, stand-ins, every cap. */
#include <unistd.h>

#include "pt_internal.h"
#include "yp_checkpoint.h"
#include "yp_elem_math.h"
#include "yp_executor.h"
#include "yp_ir.h"
#include "yp_test.h"
#include "yp_yaml.h"

#define PT YP_TEST_DATA "/pt/"

/* a's tensors are b's: the same names in the same order, dtype, shape and bytes. */
static void same_tensors(const char *pt, const char *st) {
    yp_pt_file a;
    yp_st_file b;
    yp_err err;
    if (yp_pt_open(&a, pt, &err)) fprintf(stderr, "%s\n", err.msg);
    REQUIRE(a.path != NULL);
    if (yp_st_open(&b, st, &err)) {
        yp_pt_close(&a);
        REQUIRE(0);
    }
    CHECK_EQ_I64(a.n, b.n);
    int bad = 0;
    for (int i = 0; i < a.n && i < b.n; i++) {
        const yp_st_entry *x = &a.e[i], *y = &b.e[i];
        int64_t bytes = x->end - x->begin;
        unsigned char *p = malloc((size_t)bytes + 1), *q = malloc((size_t)bytes + 1);
        if (strcmp(x->name, y->name) || x->dtype != y->dtype || x->ndim != y->ndim ||
            memcmp(x->shape, y->shape, sizeof x->shape) || bytes != y->end - y->begin || !p || !q ||
            yp_pt_read(&a, i, p, &err) || yp_st_read(&b, i, q, &err) || memcmp(p, q, (size_t)bytes)) {
            if (bad++ < 3) fprintf(stderr, "  %s: tensor %d (%s, %s) differs\n", pt, i, x->name, y->name);
        }
        if (yp_pt_find(&a, x->name) != i) bad++;
        free(p), free(q);
    }
    CHECK_EQ_I64(bad, 0);
    CHECK_EQ_I64(yp_pt_find(&a, "no.such.tensor"), -1);
    yp_pt_close(&a), yp_st_close(&b);
}

static void test_yolov5t_checkpoint(void) {
    same_tensors(PT "yolov5t.pt", PT "yolov5t.safetensors");
    yp_pt_file f;
    yp_err err;
    REQUIRE(yp_pt_open(&f, PT "yolov5t.pt", &err) == 0);
    CHECK_EQ_I64(f.n, 349); /* yolov5s's count: the same 25 layers */
    CHECK_STR_HAS(f.what, "a checkpoint: model models.yolo.DetectionModel (349 tensors), ema None");
    int e = yp_pt_find(&f, "model.0.bn.num_batches_tracked");
    CHECK(e >= 0 && f.e[e].dtype == YP_ST_I64 && f.e[e].ndim == 0);
    e = yp_pt_find(&f, "model.24.anchors");
    CHECK(e >= 0 && f.e[e].dtype == YP_ST_F16 && f.e[e].ndim == 3 && f.e[e].shape[0] == 3);
    CHECK_EQ_I64(yp_pt_find(&f, "model.24.stride"), -1); /* persistent=False */
    yp_pt_close(&f);
}

static void test_last_sd_module(void) {
    same_tensors(PT "tiny_last.pt", PT "tiny_last.safetensors");
    same_tensors(PT "tiny_sd.pt", PT "tiny_sd.safetensors");
    same_tensors(PT "tiny_module.pt", PT "tiny_sd.safetensors");
    same_tensors(PT "tiny_module_p4.pt", PT "tiny_sd.safetensors");
    same_tensors(PT "views.pt", PT "views.safetensors"); /* storage offsets into one shared storage */
    yp_pt_file f;
    yp_err err;
    REQUIRE(yp_pt_open(&f, PT "tiny_last.pt", &err) == 0);
    CHECK_STR_HAS(f.what, "model models.yolo.DetectionModel (15 tensors), ema models.yolo.DetectionModel (15 tensors)");
    yp_pt_close(&f);
    REQUIRE(yp_pt_open(&f, PT "tiny_module_p4.pt", &err) == 0);
    CHECK_STR_HAS(f.what, "a module: models.yolo.DetectionModel (15 tensors)");
    yp_pt_close(&f);
    REQUIRE(yp_pt_open(&f, PT "tiny_sd.pt", &err) == 0);
    CHECK_STR_HAS(f.what, "a state dict (15 tensors)");
    yp_pt_close(&f);
}

/* ---------------------------------------------------------------- --weights */

static yp_backend *cpu;

/* An executor of the graph at batch 1, 64 px, on the CPU; 0 or -1. */
static int make_exec(yp_graph *g, yp_plan *p, yp_exec *x, uint64_t seed) {
    yp_err err;
    yp_gpu gpu;
    yp_candidate c = yp_candidate_default();
    c.batch = 1, c.img_w = c.img_h = 64, c.mosaic = 0, c.labels_per_image = 2;
    yp_exec_candidate_for(&c, cpu);
    if (yp_gpu_parse("a100-40gb", &gpu, &err) || yp_plan_build(g, &c, &gpu, 0, 0, p, &err)) return -1;
    if (yp_exec_init(x, p, cpu, 0, seed, &err)) return yp_plan_free(p), -1;
    return 0;
}

/* The tiny test IR (tests/data/ir/tiny.json) and its executor; 0, or -1 with nothing left to free. */
static int tiny_exec(yp_graph **g, yp_plan *p, yp_exec *x) {
    yp_err err;
    *g = yp_ir_load_file(YP_TEST_DATA "/ir/tiny.json", &err);
    if (*g && !make_exec(*g, p, x, 1)) return 0;
    yp_graph_free(*g);
    return -1;
}

static void test_load_weights_yolov5t(void) {
    yp_err err;
    yp_graph *g = yp_yaml_import(YP_TEST_DATA "/yaml/good/yolov5t.yaml", 0, &err);
    REQUIRE(g != NULL);
    yp_plan pa, pb;
    yp_exec a, b;
    if (make_exec(g, &pa, &a, 1)) {
        yp_graph_free(g);
        REQUIRE(0);
    }
    if (make_exec(g, &pb, &b, 2)) {
        yp_exec_free(&a), yp_plan_free(&pa), yp_graph_free(g);
        REQUIRE(0);
    }
    yp_ckpt_transfer ra, rb;
    CHECK(yp_ckpt_load_weights(&a, PT "yolov5t.pt", NULL, &ra, &err) == 0);
    CHECK(yp_ckpt_load_weights(&b, PT "yolov5t.safetensors", NULL, &rb, &err) == 0);
    int weights = 0, bad = 0;
    for (int t = 0; t < a.train.s->n_tensors; t++) {
        const yp_tensor *d = &a.train.s->tensors[t];
        if (d->kind != YP_KIND_WEIGHT && d->kind != YP_KIND_EMA) continue;
        weights += d->kind == YP_KIND_WEIGHT;
        bad += memcmp(yp_exec_tensor(&a, t), yp_exec_tensor(&b, t), (size_t)d->bytes) != 0;
    }
    CHECK_EQ_I64(bad, 0);
    CHECK_EQ_I64(ra.loaded, weights);
    CHECK_EQ_I64(ra.loaded, rb.loaded);
    CHECK_EQ_I64(ra.skipped + ra.missing, 0);
    CHECK_EQ_I64(ra.unused, rb.unused);
    CHECK_EQ_I64(ra.unused, 57 + 1); /* BN's num_batches_tracked, Detect's anchors */
    yp_exec_free(&a), yp_exec_free(&b), yp_plan_free(&pa), yp_plan_free(&pb), yp_graph_free(g);
}

/* Every weight of x equals the F16 tensor prefix + its name of the safetensors st. The count. */
static int weights_match(const yp_exec *x, const yp_st_file *st, const char *prefix, int *bad) {
    int n = 0;
    for (int t = 0; t < x->train.s->n_tensors; t++) {
        const yp_tensor *d = &x->train.s->tensors[t];
        char name[256];
        if (d->kind != YP_KIND_WEIGHT) continue;
        snprintf(name, sizeof name, "%s%s", prefix, d->name);
        int e = yp_st_find(st, name);
        uint16_t *h = malloc((size_t)d->shape.w * 2 + 1);
        yp_err err;
        if (e < 0 || !h || st->e[e].dtype != YP_ST_F16 || st->e[e].end - st->e[e].begin != d->shape.w * 2 ||
            yp_st_read(st, e, h, &err)) {
            (*bad)++, free(h);
            continue;
        }
        const float *v = yp_exec_tensor(x, t);
        for (int64_t i = 0; i < d->shape.w; i++) *bad += v[i] != yp_f16_to_f32(h[i]);
        free(h), n++;
    }
    return n;
}

static void test_last_model_for_train_ema_for_val(void) {
    yp_err err;
    yp_graph *g;
    yp_plan p;
    yp_exec x;
    yp_st_file st;
    REQUIRE(tiny_exec(&g, &p, &x) == 0);
    yp_ckpt_transfer r;
    int bad = 0, n = 0, log_ok = 0;
    char line[512];
    FILE *log = tmpfile();
    if (!yp_st_open(&st, PT "tiny_last.safetensors", &err)) {
        CHECK(yp_ckpt_load_weights(&x, PT "tiny_last.pt", log, &r, &err) == 0);
        n = weights_match(&x, &st, "", &bad);
        CHECK_EQ_I64(r.loaded, n);
        CHECK_EQ_I64(r.unused, 15 + 2 + 1); /* the EMA's 15, num_batches_tracked twice, anchors */
        CHECK(yp_ckpt_load_eval_weights(&x, PT "tiny_last.pt", NULL, &r, &err) == 0);
        CHECK_EQ_I64(weights_match(&x, &st, "ema.", &bad), n);
        CHECK_EQ_I64(r.loaded, n);
        yp_st_close(&st);
    }
    rewind(log);
    while (log && fgets(line, sizeof line, log))
        log_ok += strstr(line, "tiny_last.pt: a checkpoint: model models.yolo.DetectionModel") != NULL ||
                  strstr(line, "tiny_last.pt: transferred 12/12 model tensors") != NULL;
    if (log) fclose(log);
    CHECK(n == 12);
    CHECK_EQ_I64(bad, 0);
    CHECK_EQ_I64(log_ok, 2);
    yp_exec_free(&x), yp_plan_free(&p), yp_graph_free(g);
}

/* ---------------------------------------------------------------- hostile files */

static void refused(const char *name, const char *why) {
    char path[512];
    yp_pt_file f;
    yp_err err;
    snprintf(path, sizeof path, PT "%s", name);
    err.msg[0] = 0;
    CHECK(yp_pt_open(&f, path, &err) == -1);
    CHECK(f.n == 0 && f.e == NULL && f.path == NULL); /* closed */
    CHECK(strncmp(err.msg, path, strlen(path)) == 0);
    CHECK_STR_HAS(err.msg, why);
    CHECK(strchr(err.msg, '\n') == NULL);
    CHECK(strchr(err.msg, ';') != NULL); /* a fix follows */
}

static void test_hostile(void) {
    unlink("/tmp/yp_pt_os_system_ran");
    refused("bad_truncated.pt", "not a readable zip archive");
    refused("bad_opcode.pt", "opcode 0xff is not one of those torch.save writes");
    refused("bad_huge_storage.pt", "above the reader's limit");
    refused("bad_huge_memo.pt", "memo slot 4294967280 is above the limit");
    refused("bad_huge_string.pt", "needs 4294967295 more bytes");
    refused("bad_os_system.pt", "'model' is a posix.system, neither a module nor a state dict");
    refused("bad_noncontig.pt", "shape [4, 3] with strides (1, 4) is not contiguous");
    refused("bad_deep.pt", "modules nested deeper than 64");
    refused("bad_legacy.pt", "legacy format");
    refused("bad_not_yolo.pt", "holds a dict (keys 'foo', 'bar')");
    refused("bad_dup_names.pt", "two tensors named ema.w");
    refused("bad_shared.pt", "the module tree takes more than");
    refused("yolov5t.safetensors", "not a zip archive");
    CHECK(access("/tmp/yp_pt_os_system_ran", F_OK) != 0);
    /* the loader says the same */
    yp_err err;
    yp_graph *g;
    yp_plan p;
    yp_exec x;
    yp_ckpt_transfer r;
    REQUIRE(tiny_exec(&g, &p, &x) == 0);
    CHECK(yp_ckpt_load_weights(&x, PT "bad_os_system.pt", NULL, &r, &err) == -1);
    CHECK_STR_HAS(err.msg, "posix.system");
    CHECK(yp_ckpt_load_eval_weights(&x, PT "bad_legacy.pt", NULL, &r, &err) == -1);
    CHECK_STR_HAS(err.msg, "torch.save(torch.load(f), f)");
    yp_exec_free(&x), yp_plan_free(&p), yp_graph_free(g);
}

/* yp_st_sort_names and yp_st_find_in, which the .pt and safetensors tables share. */
static void test_sorted_names(void) {
    yp_st_entry e[3] = {{.name = "model.1"}, {.name = "ema.model.1"}, {.name = "model.0"}};
    int by[3], dup = -1;
    CHECK_EQ_I64(yp_st_sort_names(e, 3, by, &dup), 0);
    CHECK(by[0] == 1 && by[1] == 2 && by[2] == 0);
    CHECK_EQ_I64(yp_st_find_in(e, by, 3, "model.0"), 2);
    CHECK_EQ_I64(yp_st_find_in(e, by, 3, "ema.model.1"), 1);
    CHECK_EQ_I64(yp_st_find_in(e, by, 3, "model.2"), -1);
    CHECK_EQ_I64(yp_st_find_in(e, by, 0, "model.0"), -1);
    e[1].name = "model.0";
    CHECK_EQ_I64(yp_st_sort_names(e, 3, by, &dup), 1);
    CHECK(dup == 1 || dup == 2);
}

/* yp_pt_sniff: zips and legacy files are .pt; a safetensors file whose header length starts with
 * byte 0x80 (as a pickle does) is not. */
static void test_sniff(void) {
    CHECK(yp_pt_sniff(PT "tiny_sd.pt"));
    CHECK(yp_pt_sniff(PT "bad_legacy.pt"));
    CHECK(yp_pt_sniff(PT "bad_truncated.pt"));
    CHECK(!yp_pt_sniff(PT "yolov5t.safetensors"));
    CHECK(!yp_pt_sniff(PT "no_such_file.pt"));
    char path[] = "/tmp/yp_test_pt_sniff.XXXXXX", text[129];
    int fd = mkstemp(path);
    REQUIRE(fd >= 0);
    snprintf(text, sizeof text, "%-128s", "{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}");
    const unsigned char len[8] = {0x80, 0, 0, 0, 0, 0, 0, 0}; /* 128 */
    const float one = 1.0f;
    int ok = write(fd, len, 8) == 8 && write(fd, text, 128) == 128 && write(fd, &one, 4) == 4;
    close(fd);
    yp_st_file f;
    yp_err err;
    CHECK(ok);
    CHECK(!yp_pt_sniff(path));
    CHECK(yp_st_open(&f, path, &err) == 0);
    yp_st_close(&f);
    unlink(path);
}

/* ---------------------------------------------------------------- the pickle machine */

/* Runs the n-byte pickle p; 0 or -1, err's message into msg. */
static int run(pt_vm *vm, const char *p, size_t n, char *msg) {
    yp_err err;
    err.msg[0] = 0;
    int rc = pt_vm_run(vm, "t.pkl", (const unsigned char *)p, n, &err);
    snprintf(msg, 1024, "%s", err.msg);
    return rc;
}

static void test_pickle_values(void) {
    pt_vm vm;
    char msg[1024];
    /* (1, -2, 3.5, 2^64 (a 9-byte LONG1), 'ab', b'c', 65535, -1), protocol 2 */
    static const char p1[] = "\x80\x02(K\x01\x8a\x01\xfeG\x40\x0c\x00\x00\x00\x00\x00\x00"
                             "\x8a\x09\x00\x00\x00\x00\x00\x00\x00\x00\x01X\x02\x00\x00\x00"
                             "ab"
                             "C\x01"
                             "cM\xff\xffJ\xff\xff\xff\xfft.";
    REQUIRE(run(&vm, p1, sizeof p1 - 1, msg) == 0);
    const pt_value *t = &vm.v[vm.root];
    REQUIRE(t->kind == PT_TUPLE && t->n == 8);
    CHECK(vm.v[t->items[0]].kind == PT_INT && vm.v[t->items[0]].i == 1);
    CHECK(vm.v[t->items[1]].i == -2);
    CHECK(vm.v[t->items[2]].kind == PT_FLOAT && vm.v[t->items[2]].f == 3.5);
    CHECK(vm.v[t->items[3]].kind == PT_BIGINT);
    CHECK(vm.v[t->items[4]].kind == PT_STR && vm.v[t->items[4]].len == 2 && !memcmp(vm.v[t->items[4]].s, "ab", 2));
    CHECK(vm.v[t->items[5]].kind == PT_BYTES && vm.v[t->items[5]].len == 1);
    CHECK(vm.v[t->items[6]].i == 65535 && vm.v[t->items[7]].i == -1);
    pt_vm_free(&vm);

    /* a list holding itself through the memo; DUP, POP, POP_MARK; {'k': ...} with SETITEMS */
    static const char p2[] = "\x80\x02]q\x00h\x00"
                             "a2"
                             "0(NN1}(X\x01\x00\x00\x00kh\x00u.";
    REQUIRE(run(&vm, p2, sizeof p2 - 1, msg) == 0);
    const pt_value *d = &vm.v[vm.root];
    REQUIRE(d->kind == PT_DICT && d->n == 2);
    int l = pt_get(&vm, vm.root, "k");
    CHECK(l >= 0 && vm.v[l].kind == PT_LIST && vm.v[l].n == 1 && vm.v[l].items[0] == l);
    CHECK(pt_get(&vm, vm.root, "x") == -1);
    pt_vm_free(&vm);

    /* protocol 4: FRAME, STACK_GLOBAL os.system called (a stand-in, not run), MEMOIZE, NEWOBJ_EX, sets */
    static const char p3[] = "\x80\x04\x95\x10\x00\x00\x00\x00\x00\x00\x00(\x8c\x02os\x94\x8c\x06system\x94\x93\x94"
                             "\x8c\x04true\x85R\x94h\x02)}\x92\x8f(K\x01\x90(K\x02\x91t.";
    REQUIRE(run(&vm, p3, sizeof p3 - 1, msg) == 0);
    t = &vm.v[vm.root];
    REQUIRE(t->kind == PT_TUPLE && t->n == 4);
    char desc[160];
    pt_describe(&vm, t->items[0], desc, sizeof desc);
    CHECK(!strcmp(desc, "a os.system"));
    const pt_value *args = &vm.v[vm.v[t->items[0]].b];
    CHECK(args->kind == PT_TUPLE && args->n == 1 && vm.v[args->items[0]].len == 4);
    CHECK(vm.v[t->items[1]].kind == PT_OBJECT && pt_is_global(&vm, vm.v[t->items[1]].a, "os", "system"));
    CHECK(vm.v[t->items[2]].kind == PT_SET && vm.v[t->items[2]].n == 1);
    CHECK(vm.v[t->items[3]].kind == PT_SET && vm.v[t->items[3]].n == 1); /* the FROZENSET */
    pt_vm_free(&vm);
}

static void test_pickle_refused(void) {
    static const struct {
        const char *p;
        size_t n;
        const char *why;
    } cases[] = {
#define P(s) s, sizeof s - 1
        {P(""), "byte 0: needs 1 more bytes"},
        {P("\x80\x02N"), "needs 1 more bytes"}, /* no STOP */
        {P("\x80\x06N."), "pickle protocol 6"},
        {P("\x80\x02."), "pops from an empty stack"},
        {P("\x80\x02(."), "pops from an empty stack"}, /* below the MARK */
        {P("\x80\x02]NNs."), "adds items to a list"},
        {P("\x80\x02h\x05."), "memo slot 5 was never set"},
        {P("\x80\x02K\x01K\x02\x93."), "STACK_GLOBAL of non-strings"},
        {P("\x80\x02t."), "closes a MARK that was never opened"},
        {P("\x80\x02NNQ."), "a persistent id that is not torch.save's"},
        {P("\x80\x02\x86."), "TUPLE2 with 0 values"},
        {P("\x80\x02}(Nu."), "SETITEMS with an odd number of values"},
        {P("\x80\x02NNR."), "a call with None as its arguments"},
        {P("\x80\x02"
           "ctorch._utils\n_rebuild_tensor_v2\n)R."),
         "a tensor record (_rebuild_tensor_v2) without"},
        {P("\x80\x02"
           "cos\nsystem"),
         "GLOBAL's name has no end of line"},
        {P("\x80\x02\x97."), "opcode 0x97"}, /* NEXT_BUFFER: out-of-band data torch.save never writes */
#undef P
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        pt_vm vm;
        char msg[1024];
        CHECK(run(&vm, cases[i].p, cases[i].n, msg) == -1);
        CHECK_STR_HAS(msg, cases[i].why);
        CHECK_STR_HAS(msg, "t.pkl: data.pkl byte ");
        pt_vm_free(&vm);
    }
}

/* A pickle of `count` repetitions of `unit` between PROTO 2 and STOP. */
static char *repeated(const char *unit, size_t len, size_t count, size_t *n) {
    char *p = malloc(len * count + 4);
    if (!p) return NULL;
    memcpy(p, "\x80\x02", 2);
    for (size_t i = 0; i < count; i++) memcpy(p + 2 + i * len, unit, len);
    p[2 + len * count] = '.';
    *n = len * count + 3;
    return p;
}

static void test_pickle_caps(void) {
    static const struct {
        const char *unit;
        size_t len, count;
        const char *why;
    } cases[] = {
        {"N", 1, YP_PT_MAX_STACK + 1, "the stack holds more than"},
        {"(", 1, YP_PT_MAX_MARKS + 1, "open MARKs"},
        {")0", 2, YP_PT_MAX_VALUES, "values"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        size_t n;
        char *p = repeated(cases[i].unit, cases[i].len, cases[i].count, &n), msg[1024];
        pt_vm vm;
        REQUIRE(p != NULL);
        CHECK(run(&vm, p, n, msg) == -1);
        CHECK_STR_HAS(msg, cases[i].why);
        pt_vm_free(&vm);
        free(p);
    }
    /* items in containers: APPENDs of one value into a list, memo'd */
    size_t n;
    char *p = repeated("h\x00"
                       "a",
                       3, YP_PT_MAX_ITEMS + 2, &n),
         msg[1024];
    REQUIRE(p != NULL);
    memcpy(p, "\x80\x02]q\x00", 5); /* the list instead of the first unit: YP_PT_MAX_ITEMS + 1 APPENDs */
    pt_vm vm;
    CHECK(run(&vm, p, n, msg) == -1);
    CHECK_STR_HAS(msg, "items in containers");
    pt_vm_free(&vm);
    free(p);
}

int main(void) {
    char why[256] = "";
    cpu = yp_backend_cpu_new(NULL, why, sizeof why);
    if (!cpu) {
        fprintf(stderr, "test_pt: no CPU backend: %s\n", why);
        return 1;
    }
    YP_RUN(test_yolov5t_checkpoint);
    YP_RUN(test_last_sd_module);
    YP_RUN(test_load_weights_yolov5t);
    YP_RUN(test_last_model_for_train_ema_for_val);
    YP_RUN(test_hostile);
    YP_RUN(test_sniff);
    YP_RUN(test_sorted_names);
    YP_RUN(test_pickle_values);
    YP_RUN(test_pickle_refused);
    YP_RUN(test_pickle_caps);
    yp_backend_free(cpu);
    return yp_test_summary();
}
