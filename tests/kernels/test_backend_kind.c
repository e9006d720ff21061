/* test_backend_kind.c - the kind table (kernels/yp_backend_kind.h) without a GPU: device specs of
 * each kind parsed ("cpu", "cpu:4", "cuda", "cuda:1", train.py's "0" and "0,1") and junk refused in
 * one line; instances made from specs, several devices refused; host_memory per kind and per
 * instance; the conv scratch models each kind names, parses and answers (by spec, bound or card),
 * their keys, and the spec a model asks for. With a GPU, two CUDA instances' sum_squares each use
 * their own device words. */
#include <stdlib.h>
#include <string.h>

#include "yp_backend_kind.h"
#include "yp_cudnn_scratch.h"
#include "yp_test.h"

static yp_device_spec parsed(const char *text) {
    yp_device_spec s;
    char why[256] = "";
    if (yp_device_spec_parse(text, &s, why, sizeof why)) fprintf(stderr, "  %s: %s\n", text, why);
    return s;
}

/* Each kind's specs: the kind, the thread count, the devices listed (-1: none). */
static void test_spec_parse(void) {
    static const struct {
        const char *text, *kind;
        int threads, n_devices, dev0, dev1;
    } cases[] = {
        {"cpu", "cpu", 0, 0, -1, -1},   {"cpu:4", "cpu", 4, 0, -1, -1},  {"cuda", "cuda", 0, 1, 0, -1},
        {"cuda:1", "cuda", 0, 1, 1, -1}, {"0", "cuda", 0, 1, 0, -1}, /* train.py: CUDA device 0 */
        {"0,1", "cuda", 0, 2, 0, 1},     {"cuda:3,2", "cuda", 0, 2, 3, 2},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        yp_device_spec s = parsed(cases[i].text);
        CHECK(s.kind && !strcmp(s.kind->name, cases[i].kind));
        CHECK_EQ_I64(s.threads, cases[i].threads);
        CHECK_EQ_I64(s.n_devices, cases[i].n_devices);
        if (cases[i].dev0 >= 0) CHECK_EQ_I64(s.devices[0], cases[i].dev0);
        if (cases[i].dev1 >= 0) CHECK_EQ_I64(s.devices[1], cases[i].dev1);
    }
}

/* Junk: one line each, naming what is expected. */
static void test_spec_junk(void) {
    static const char *const bad[][2] = {
        {"tpu", "expected cpu or cuda (or cpu:T for T threads"}, {"", "expected cpu or cuda"},
        {"CPU", "expected cpu or cuda"}, {"cpu:0", "1..1024"}, {"cpu:", "1..1024"}, {"cpu:2x", "1..1024"},
        {"cpu:1025", "1..1024"}, {"cpu:04", "1..1024"}, {"cuda:", "CUDA device numbers"},
        {"cuda:x", "CUDA device numbers"}, {"0,,1", "CUDA device numbers"}, {"0,", "CUDA device numbers"},
        {"0,0", "each once"}, {"01", "CUDA device numbers"}, {"-1", "expected cpu or cuda"},
        {"cuda:256", "0..255"}, {"1,a", "CUDA device numbers"}, {"cudax", "expected cpu or cuda"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        yp_device_spec s;
        char why[256] = "";
        CHECK(yp_device_spec_parse(bad[i][0], &s, why, sizeof why) == -1);
        CHECK_STR_HAS(why, bad[i][1]);
        CHECK(!strchr(why, '\n'));
    }
    yp_device_spec s;
    CHECK(yp_device_spec_parse(NULL, &s, NULL, 0) == -1);
}

/* host_memory: the CPU's memory is the host's, CUDA's is not, for the row and for its instances;
 * each row's element types are its op table's where the build has it. */
static void test_host_memory(void) {
    yp_device_spec cpu = parsed("cpu:2"), cuda = parsed("cuda");
    REQUIRE(cpu.kind && cuda.kind);
    CHECK_EQ_I64(cpu.kind->host_memory, 1);
    CHECK_EQ_I64(cuda.kind->host_memory, 0);
    CHECK(!strcmp(cpu.kind->label, "CPU") && !strcmp(cuda.kind->label, "CUDA"));
    char why[256] = "";
    yp_backend *be = yp_backend_new("cpu:2", why, sizeof why);
    REQUIRE(be != NULL);
    CHECK_EQ_I64(be->host_memory, 1);
    CHECK(yp_backend_kind_of(be) == cpu.kind);
    CHECK_EQ_I64(yp_backend_cpu_threads(be), 2);
    CHECK_EQ_I64(be->ops->elems, cpu.kind->elems);
    CHECK(cpu.kind->ops() == be->ops);
    yp_backend_free(be);
    /* "cuda" is a spec with or without a GPU; making it fails here with yp_backend_cuda_new's reason */
    char want[256] = "";
    yp_backend *direct = yp_backend_cuda_new(0, want, sizeof want);
    be = yp_backend_new("cuda", why, sizeof why);
    CHECK((be != NULL) == (direct != NULL));
    if (be) {
        CHECK_EQ_I64(be->host_memory, 0);
        CHECK(yp_backend_kind_of(be) == cuda.kind);
    } else {
        CHECK(!strcmp(why, want));
    }
    yp_backend_free(be);
    yp_backend_free(direct);
    if (cuda.kind->ops()) CHECK_EQ_I64(cuda.kind->ops()->elems, cuda.kind->elems);
    else CHECK(yp_backend_cuda_ops() == NULL);
    yp_backend stand_in = {.name = "tpu"};
    CHECK(yp_backend_kind_of(&stand_in) == NULL);
}

/* A spec of several devices parses but makes no instance yet: one line saying so. */
static void test_several_devices(void) {
    char why[256] = "";
    CHECK(yp_backend_new("0,1", why, sizeof why) == NULL);
    CHECK_STR_HAS(why, "several devices are not supported yet");
    CHECK_STR_HAS(why, "(0,1)");
    CHECK(yp_backend_new("tpu", why, sizeof why) == NULL);
    CHECK_STR_HAS(why, "expected cpu or cuda");
}

static yp_conv_desc conv3x3(void) {
    return (yp_conv_desc){.in = {2, 16, 16, 8}, .out = {2, 16, 16, 16}, .kh = 3, .kw = 3, .sh = 1, .sw = 1, .ph = 1,
                          .pw = 1, .groups = 1, .dtype = YP_ELEM_F32, .wdtype = YP_ELEM_F32};
}

/* The models by kind: parsed, answered (a fresh instance of the spec answers as one at hand, the
 * bound is arithmetic, a card needs its instance), carried as keys, and the spec they ask for. */
static void test_models(void) {
    yp_scratch_model m;
    char why[256] = "";
    CHECK_STR_HAS(yp_scratch_models_known(), "onednn:T (T: CPU threads, 1..1024), cuda, cuda:CARD (that card's cuDNN)");
    REQUIRE(yp_scratch_model_parse("onednn:2", &m, why, sizeof why) == 0);
    CHECK(!strcmp(m.kind->name, "cpu"));
    CHECK(m.answer == YP_SCRATCH_BY_SPEC);
    CHECK_EQ_I64(m.spec.threads, 2);
    CHECK(!strcmp(m.name, "onednn:2"));
    CHECK(yp_scratch_model_parse("onednn:0", &m, why, sizeof why) == -1);
    CHECK_STR_HAS(why, "1..1024");
    CHECK(yp_scratch_model_parse("onednn", &m, why, sizeof why) == -1);
    CHECK(yp_scratch_model_parse("im2col", &m, why, sizeof why) == 1);
    CHECK(yp_scratch_model_parse("cudnn", &m, why, sizeof why) == 1);
    REQUIRE(yp_scratch_model_parse("cuda", &m, why, sizeof why) == 0);
    CHECK(!strcmp(m.kind->name, "cuda") && m.answer == YP_SCRATCH_BOUND);
    REQUIRE(yp_scratch_model_parse("cuda:nvidia-h200", &m, why, sizeof why) == 0);
    CHECK(m.answer == YP_SCRATCH_BY_CARD);
    CHECK_EQ_I64(yp_scratch_model_key(&m), 0);

    /* a CPU instance: its model, which it answers, and a fresh instance of the spec answers the same */
    yp_backend *two = yp_backend_new("cpu:2", why, sizeof why), *three = yp_backend_new("cpu:3", why, sizeof why);
    REQUIRE(two && three);
    char name[YP_MODEL_NAME_MAX];
    yp_scratch_model_needed(two, name, sizeof name);
    CHECK(!strcmp(name, "onednn:2"));
    yp_scratch_model_card(two, name, sizeof name);
    CHECK(name[0] == 0);
    REQUIRE(yp_scratch_model_of(two, &m) == 0);
    CHECK(!strcmp(m.name, "onednn:2"));
    CHECK(yp_scratch_model_answered_by(&m, two));
    CHECK(!yp_scratch_model_answered_by(&m, three));
    yp_conv_desc d = conv3x3();
    int64_t pi = -1, fx = -1, pi2 = -2, fx2 = -2;
    CHECK(yp_scratch_model_ask(&m, two, &d, 0, YP_CONV_BACKWARD, &pi, &fx, why, sizeof why) == 0);
    yp_scratch_model back;
    REQUIRE(yp_scratch_model_from_key(yp_scratch_model_key(&m), &back) == 0);
    CHECK(back.kind == m.kind && back.answer == YP_SCRATCH_BY_SPEC && back.spec.threads == 2);
    CHECK(yp_scratch_model_ask(&back, NULL, &d, 0, YP_CONV_BACKWARD, &pi2, &fx2, why, sizeof why) == 0);
    CHECK_EQ_I64(pi2, pi);
    CHECK_EQ_I64(fx2, fx);
    CHECK(yp_scratch_model_from_key(0, &back) == -1);

    /* the spec a model asks for: a CPU spec takes onednn:T's thread count; another kind's is untouched */
    yp_device_spec s = parsed("cpu"), c = parsed("cuda:1");
    CHECK_EQ_I64(yp_device_spec_adopt(&s, &m), 1);
    CHECK_EQ_I64(s.threads, 2);
    CHECK_EQ_I64(yp_device_spec_adopt(&s, &m), 0);
    CHECK_EQ_I64(yp_device_spec_adopt(&c, &m), 0);
    CHECK_EQ_I64(c.devices[0], 1);

    /* the bound, asked of no device, through its key too */
    REQUIRE(yp_scratch_model_parse("cuda", &m, why, sizeof why) == 0);
    CHECK(!yp_scratch_model_answered_by(&m, two));
    REQUIRE(yp_scratch_model_from_key(yp_scratch_model_key(&m), &back) == 0);
    CHECK(back.answer == YP_SCRATCH_BOUND && back.kind == m.kind);
    int64_t want_pi, want_fx;
    yp_cudnn_scratch_bound(&d, YP_CONV_FORWARD, &want_pi, &want_fx);
    CHECK(yp_scratch_model_ask(&back, NULL, &d, 0, YP_CONV_FORWARD, &pi, &fx, why, sizeof why) == 0);
    CHECK_EQ_I64(pi, want_pi);
    CHECK_EQ_I64(fx, want_fx);
    CHECK(yp_device_spec_adopt(&c, &m) == 0);

    /* a card's model without an instance of that card: refused, naming the way out */
    REQUIRE(yp_scratch_model_parse("cuda:no-such-card", &m, why, sizeof why) == 0);
    CHECK(yp_scratch_model_ask(&m, two, &d, 0, YP_CONV_FORWARD, &pi, &fx, why, sizeof why) == -1);
    why[0] = 0;
    CHECK(yp_scratch_model_instance(&m, why, sizeof why) == NULL);
    CHECK_STR_HAS(why, "the conv workspaces cuDNN chose on that card");
    CHECK_STR_HAS(why, "--scratch cuda");
    yp_backend_free(two);
    yp_backend_free(three);
}

/* With a GPU: two instances reduce into their own words, so interleaved sums stay each one's. */
static void test_two_instances_sum_squares(void) {
    char why[256] = "";
    yp_backend *a = yp_backend_new("cuda", why, sizeof why), *b = yp_backend_new("cuda", why, sizeof why);
    if (!a || !b || !a->ops->sum_squares) {
        yp_backend_free(a), yp_backend_free(b);
        SKIP(why[0] ? why : "no CUDA sum_squares");
        return;
    }
    enum { N = 5000 };
    float host[N];
    for (int i = 0; i < N; i++) host[i] = (float)(i % 7) - 3.0f;
    float *xa = a->mem_alloc(a, sizeof host), *xb = b->mem_alloc(b, sizeof host);
    REQUIRE(xa && xb);
    CHECK(a->mem_copy(a, xa, host, sizeof host, YP_COPY_HOST_TO_DEVICE) == 0);
    CHECK(b->mem_copy(b, xb, host, N / 2 * sizeof(float), YP_COPY_HOST_TO_DEVICE) == 0);
    double sa = 0, sb = 0, want_a = 0, want_b = 0;
    for (int i = 0; i < N; i++) {
        double sq = (double)host[i] * host[i];
        want_a += sq, want_b += i < N / 2 ? sq : 0.0;
    }
    CHECK(a->ops->sum_squares(a, YP_ELEM_F32, xa, N, &sa) == 0);
    CHECK(b->ops->sum_squares(b, YP_ELEM_F32, xb, N / 2, &sb) == 0);
    CHECK(a->ops->sum_squares(a, YP_ELEM_F32, xa, N, &sa) == 0);
    CHECK(sa == want_a);
    CHECK(sb == want_b);
    a->mem_free(a, xa), b->mem_free(b, xb);
    yp_backend_free(a), yp_backend_free(b);
}

int main(void) {
    YP_RUN(test_spec_parse);
    YP_RUN(test_spec_junk);
    YP_RUN(test_host_memory);
    YP_RUN(test_several_devices);
    YP_RUN(test_models);
    YP_RUN(test_two_instances_sum_squares);
    return yp_test_summary();
}
