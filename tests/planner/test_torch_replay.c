/* test_torch_replay.c - PyTorch eager's allocation sequence of a pytorch-policy schedule through
 * the caching-allocator model (planner/yp_torch_replay.h): what one pass leaves behind (the
 * weight gradients, and the weight copies when cached), that its peak holds every saved byte,
 * that a second pass reuses the cache, held outputs, refusal of another policy, cudnn.benchmark's
 * emptying after each search; and AutoBatch's
 * probe (its prior, thop's effect, failed rows; tests/planner/test_torch_published.c compares it with
 * the published probes); the PyTorch model's op table. */
#include <stdlib.h>

#include "torch_internal.h" /* the PyTorch model's op table */
#include "yp_ir.h"
#include "yp_test.h"
#include "yp_torch_replay.h"
#include "yp_torch_saved.h"

static yp_schedule *build(const yp_graph *g, int64_t b, int64_t img, yp_dtype act, yp_save_policy pol) {
    yp_err err;
    yp_sched_opts o = yp_sched_opts_default(b, img, img);
    o.policy = pol, o.act_dtype = act, o.ema = 0;
    yp_schedule *s = yp_schedule_build(g, &o, &err);
    if (!s) fprintf(stderr, "schedule: %s\n", err.msg);
    return s;
}

/* Sum of the rounded sizes of the tensors of kind k (what stays allocated for them). */
static int64_t rounded_bytes(const yp_schedule *s, yp_kind k) {
    int64_t sum = 0;
    for (int t = 0; t < s->n_tensors; t++)
        if (s->tensors[t].kind == k) sum += yp_torch_round_size(s->tensors[t].bytes);
    return sum;
}

/* yolov5n at 2 x 320 under autocast: its pytorch-policy schedule, an allocator without a limit
 * and a state for them. 0, or -1 (a check failed) with what was made left for close_n320. */
static int open_n320(yp_graph **g, yp_schedule **s, yp_torch_alloc **a, yp_torch_state *st) {
    yp_err err;
    *s = NULL, *a = NULL;
    *g = yp_ir_load_file(YP_MODELS_DIR "/yolov5n.json", &err);
    if (*g) *s = build(*g, 2, 320, YP_DTYPE_F16, YP_SAVE_PYTORCH);
    if (*s) *a = yp_torch_alloc_new(0, &err);
    if (*a && !yp_torch_state_init(st, *s, &err)) return 0;
    CHECK(0);
    return -1;
}

static void close_n320(yp_graph *g, yp_schedule *s, yp_torch_alloc *a, yp_torch_state *st) {
    yp_err err;
    if (a) yp_torch_state_drop(st, a, &err);
    yp_torch_state_free(st);
    yp_torch_alloc_free(a);
    yp_schedule_free(s);
    yp_graph_free(g);
}

static void test_pass(void) {
    yp_err err;
    yp_graph *g;
    yp_schedule *s;
    yp_torch_alloc *a;
    yp_torch_state st = {0};
    if (open_n320(&g, &s, &a, &st)) goto done;
    yp_torch_pass_opts po = {YP_TORCH_LOSS_SUM, 0, 0, 0, 0};
    CHECK_EQ_I64(yp_torch_replay_pass(s, a, &po, &st, &err), 0);
    yp_torch_alloc_stats one = yp_torch_alloc_stats_get(a);
    CHECK_EQ_I64(one.allocated, rounded_bytes(s, YP_KIND_GRAD)); /* only .grad stays */
    yp_torch_saved sv;
    CHECK_EQ_I64(yp_torch_saved_bytes(s, &sv, &err), 0);
    CHECK(one.peak_allocated >= sv.total + rounded_bytes(s, YP_KIND_GRAD) / 2); /* all saved at once at the loss */
    CHECK(one.peak_reserved >= one.peak_allocated);
    CHECK_EQ_I64(yp_torch_replay_pass(s, a, &po, &st, &err), 0);
    yp_torch_alloc_stats two = yp_torch_alloc_stats_get(a);
    CHECK_EQ_I64(two.allocated, one.allocated);
    printf("  pass 1: %lld segments, pass 2: %lld\n", (long long)one.n_segment_allocs, (long long)two.n_segment_allocs);
    CHECK_EQ_I64(yp_torch_replay_pass(s, a, &po, &st, &err), 0);
    yp_torch_alloc_stats three = yp_torch_alloc_stats_get(a);
    printf("  pass 3: %lld\n", (long long)three.n_segment_allocs);
    CHECK_EQ_I64(three.reserved, two.reserved); /* from the second pass on, the cache serves the sequence */
    CHECK_EQ_I64(three.n_segment_allocs, two.n_segment_allocs);
    po.cache_weight_copies = 1;
    CHECK_EQ_I64(yp_torch_replay_pass(s, a, &po, &st, &err), 0);
    CHECK_EQ_I64(yp_torch_alloc_stats_get(a).allocated, rounded_bytes(s, YP_KIND_GRAD) + rounded_bytes(s, YP_KIND_LOWP));
    /* held outputs: the Detect outputs stay until the next pass's forward has returned */
    po.hold_outputs = 1;
    CHECK_EQ_I64(yp_torch_replay_pass(s, a, &po, &st, &err), 0);
    int64_t outs = 0;
    for (int t = 0; t < s->n_tensors; t++)
        if (s->tensors[t].role == YP_ROLE_VALUE && s->tensors[t].node == s->g->n_nodes - 1)
            outs += yp_torch_round_size(s->tensors[t].bytes);
    CHECK_EQ_I64(st.n_outputs, s->g->nl);
    CHECK_EQ_I64(yp_torch_alloc_stats_get(a).allocated,
                 rounded_bytes(s, YP_KIND_GRAD) + rounded_bytes(s, YP_KIND_LOWP) + outs);
    CHECK_EQ_I64(yp_torch_replay_pass(s, a, &po, &st, &err), 0); /* frees the previous ones, holds its own */
    CHECK_EQ_I64(yp_torch_alloc_stats_get(a).allocated,
                 rounded_bytes(s, YP_KIND_GRAD) + rounded_bytes(s, YP_KIND_LOWP) + outs);
    CHECK_EQ_I64(yp_torch_state_drop(&st, a, &err), 0);
    CHECK_EQ_I64(yp_torch_alloc_stats_get(a).allocated, 0);
    yp_schedule *y = build(g, 2, 320, YP_DTYPE_F16, YP_SAVE_YOLOPLAN);
    CHECK(y != NULL);
    if (y) CHECK_EQ_I64(yp_torch_replay_pass(y, a, &po, &st, &err), -1);
    yp_schedule_free(y);
done:
    close_n320(g, s, a, &st);
}

/* cudnn.benchmark: a pass whose convs meet new shapes empties the cache after each conv's
 * algorithm search, and clears the bits it served; without the bits nothing is released. */
static void test_benchmark_search(void) {
    yp_err err;
    yp_graph *g;
    yp_schedule *s;
    yp_torch_alloc *a;
    yp_torch_state st = {0};
    if (open_n320(&g, &s, &a, &st)) goto done;
    yp_torch_pass_opts po = {YP_TORCH_LOSS_SUM, 0, 0, 0, 0};
    CHECK_EQ_I64(yp_torch_replay_pass(s, a, &po, &st, &err), 0);
    yp_torch_alloc_stats warm = yp_torch_alloc_stats_get(a);
    CHECK_EQ_I64(warm.n_segment_frees, 0);
    CHECK(warm.reserved > warm.allocated); /* the pass's activations are cached, free */
    st.find = YP_TORCH_FIND_FWD | YP_TORCH_FIND_BWD;
    CHECK_EQ_I64(yp_torch_replay_pass(s, a, &po, &st, &err), 0);
    yp_torch_alloc_stats searched = yp_torch_alloc_stats_get(a);
    CHECK(searched.n_segment_frees > 0); /* the first conv's search released the cached segments */
    CHECK_EQ_I64(st.find, 0);
    CHECK_EQ_I64(searched.allocated, warm.allocated);
    CHECK_EQ_I64(yp_torch_replay_pass(s, a, &po, &st, &err), 0);
    CHECK_EQ_I64(yp_torch_alloc_stats_get(a).n_segment_frees, searched.n_segment_frees);
done:
    close_n320(g, s, a, &st);
}

/* AutoBatch's probe for yolov5s at 640 under autocast: readings grow with the batch, each holds
 * at least the saved bytes of its batch at its peak, the prior is what it starts from, thop's
 * no_grad casts leave the passes without weight gradients, and a capacity makes failed rows
 * (tests/planner/test_torch_published.c compares the readings with the published ones). */
static void test_autobatch_probe(void) {
    yp_err err;
    yp_graph *g = yp_ir_load_file(YP_MODELS_DIR "/yolov5s.json", &err);
    REQUIRE(g != NULL);
    int64_t batches[5] = {1, 2, 4, 8, 16};
    yp_torch_probe_row rows[5], bare[5], fixed[5];
    yp_torch_probe_start st, st0;
    yp_torch_probe_opts po = yp_torch_probe_opts_default(YP_TORCH_PRIOR_V6);
    CHECK_EQ_I64(yp_torch_autobatch_probe(g, 640, YP_DTYPE_F16, &po, batches, 5, rows, &st, &err), 0);
    yp_torch_probe_opts none = yp_torch_probe_opts_default(YP_TORCH_PRIOR_NONE);
    CHECK_EQ_I64(yp_torch_autobatch_probe(g, 640, YP_DTYPE_F16, &none, batches, 5, bare, &st0, &err), 0);
    CHECK_EQ_I64(st0.reserved, 0);
    /* v6.0: model + checkpoint (fp32 after .float()) + AutoBatch's copy, one block per tensor */
    CHECK(st.allocated >= 3 * 4 * yp_graph_params(g) && st.reserved >= st.allocated);
    yp_torch_probe_opts fix = po;
    fix.cast_fix = 1; /* weight gradients computed: .grad of every conv weight on top */
    CHECK_EQ_I64(yp_torch_autobatch_probe(g, 640, YP_DTYPE_F16, &fix, batches, 5, fixed, NULL, &err), 0);
    for (int i = 0; i < 5; i++) {
        printf("  batch %2lld: reserved %.3f GB (%.3f GB from nothing, %.3f GB with the cast fix)\n",
               (long long)batches[i], (double)rows[i].reserved / 1e9, (double)bare[i].reserved / 1e9,
               (double)fixed[i].reserved / 1e9);
        CHECK(!rows[i].failed);
        CHECK(rows[i].allocated <= rows[i].reserved && rows[i].peak_allocated <= rows[i].reserved);
        CHECK(fixed[i].allocated >= rows[i].allocated + 4 * (yp_graph_params(g) / 2)); /* most params are conv weights */
        if (i) CHECK(rows[i].reserved > rows[i - 1].reserved);
        yp_schedule *s = build(g, batches[i], 640, YP_DTYPE_F16, YP_SAVE_PYTORCH);
        yp_torch_saved sv;
        CHECK(s && !yp_torch_saved_bytes(s, &sv, &err));
        if (s) CHECK(rows[i].peak_allocated >= sv.total);
        yp_schedule_free(s);
    }
    /* a card too small for batch 16: that row fails, the others are as without a limit */
    yp_torch_probe_opts cap = po;
    cap.capacity = (rows[3].reserved + rows[4].reserved) / 2;
    yp_torch_probe_row capped[5];
    CHECK_EQ_I64(yp_torch_autobatch_probe(g, 640, YP_DTYPE_F16, &cap, batches, 5, capped, NULL, &err), 0);
    CHECK(capped[4].failed && !capped[3].failed);
    CHECK_EQ_I64(capped[0].reserved, rows[0].reserved);
    yp_graph_free(g);
}

/* The PyTorch model's op table: a row per op, and the facts the replays and the speed model read
 * from it as they had them by op before they asked (a new op is free to differ): conv2d and Detect
 * run cuDNN convs, Detect is Detect, BatchNorm runs two passes, counts its batches and folds into
 * the conv; the steps without an op have a row of zeros. */
static void test_op_rows(void) {
    for (int op = 0; op < YP_OP_COUNT; op++) {
        const ytr_op_row *r = ytr_op_row_get(op);
        CHECK_EQ_I64(r->op, op);
        CHECK_EQ_I64(r->cudnn_conv, op == YP_OP_CONV2D || op == YP_OP_DETECT);
        CHECK_EQ_I64(r->detect, op == YP_OP_DETECT);
        CHECK_EQ_I64(r->two_pass_train, op == YP_OP_BATCHNORM2D);
        CHECK_EQ_I64(r->counts_batches, op == YP_OP_BATCHNORM2D);
        CHECK_EQ_I64(r->folds_into_conv, op == YP_OP_BATCHNORM2D);
    }
    const ytr_op_row *none = ytr_op_row_get(-1);
    CHECK(!none->cudnn_conv && !none->detect && !none->two_pass_train && !none->counts_batches &&
          !none->folds_into_conv);
}

int main(void) {
    YP_RUN(test_pass);
    YP_RUN(test_benchmark_search);
    YP_RUN(test_autobatch_probe);
    YP_RUN(test_op_rows);
    return yp_test_summary();
}
