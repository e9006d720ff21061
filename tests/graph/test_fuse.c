/* test_fuse.c - the schedule's BN+SiLU fusion (yp_sched_opts.fusions, graph/schedule_fuse.c) and
 * how the plan carries it: on tests/data/ir/tiny.json the rewritten steps worked out by hand; on
 * the bundled models, under each policy and checkpoint set, the fused schedule is the unfused one
 * with exactly the BN outputs only SiLU steps read taken out (and the recompute BN steps that fed
 * them), every other tensor with the same bytes and life, and its liveness what that leaves; the
 * PyTorch policy never fuses; no schedule has a tensor whose bytes are read before a step writes
 * them; the fused yolov5n plan at 320 (batch 8) has a smaller arena and lower bound; and the
 * candidate's "fusions" travel through plan.json (test_plan checks the scaled family on a fused
 * candidate with its other cases). */
#include <stdlib.h>
#include <unistd.h>

#include "yp_ir.h"
#include "yp_plan_io.h"
#include "yp_test.h"
#include "yp_test_models.h"

static yp_graph *tiny(void) {
    yp_err err;
    yp_graph *g = yp_ir_load_file(YP_TEST_DATA "/ir/tiny.json", &err);
    if (!g) fprintf(stderr, "%s\n", err.msg);
    return g;
}

static yp_schedule *build(const yp_graph *g, yp_sched_opts o, unsigned fusions) {
    yp_err err;
    o.fusions = fusions;
    yp_schedule *s = yp_schedule_build(g, &o, &err);
    if (!s) fprintf(stderr, "%s\n", err.msg);
    return s;
}

static int listed(const int *list, int n, int t) {
    for (int k = 0; k < n; k++)
        if (list[k] == t) return 1;
    return 0;
}

static int is_fwd(yp_phase p) { return p == YP_PHASE_FORWARD || p == YP_PHASE_RECOMPUTE; }

/* ---------------------------------------------------------------- by hand */

/* Unfused (yoloplan policy): 0 conv0, 1 bn1, 2 silu2, 3 conv3, 4 bn4, 5 silu5, 6 concat, 7 detect,
 * 8 loss, then 9..13 recompute bn1, silu2, bn4, silu5, concat, 14 detect', 15 concat', 16 bn4
 * (recompute), 17 silu5', 18 bn4', 19 bn1 (recompute), 20 silu2 (recompute), 21 conv3', 22 bn1
 * (recompute), 23 silu2', 24 bn1', 25 conv0', 26 optimizer, 27 ema. Fused: the five recompute BN
 * steps go (23 steps), each BN output with them. */
static void test_tiny_by_hand(void) {
    yp_graph *g = tiny();
    REQUIRE(g != NULL);
    yp_sched_opts o = yp_sched_opts_default(1, 8, 8);
    yp_schedule *u = build(g, o, 0), *s = build(g, o, YP_FUSE_BN_SILU);
    REQUIRE(u && s);
    CHECK_EQ_I64(u->n_steps, 28);
    CHECK_EQ_I64(s->n_steps, 23);
    CHECK_EQ_I64(s->loss_step, 8);
    for (int i = 0; i < u->n_steps; i++) CHECK(u->steps[i].fused == YP_FUSED_NONE && u->steps[i].fused_node == -1);
    static const struct { int step, phase, node; yp_fused fused; int partner; } want[] = {
        {1, YP_PHASE_FORWARD, 1, YP_FUSED_BN_STATS, -1},   {2, YP_PHASE_FORWARD, 2, YP_FUSED_BN_SILU, 1},
        {4, YP_PHASE_FORWARD, 4, YP_FUSED_BN_STATS, -1},   {5, YP_PHASE_FORWARD, 5, YP_FUSED_BN_SILU, 4},
        {9, YP_PHASE_RECOMPUTE, 2, YP_FUSED_BN_SILU, 1},   {10, YP_PHASE_RECOMPUTE, 5, YP_FUSED_BN_SILU, 4},
        {11, YP_PHASE_RECOMPUTE, 6, YP_FUSED_NONE, -1},    {12, YP_PHASE_BACKWARD, 7, YP_FUSED_NONE, -1},
        {14, YP_PHASE_BACKWARD, 5, YP_FUSED_BN_SILU_BWD, 4}, {15, YP_PHASE_BACKWARD, 4, YP_FUSED_BN_BWD_SUMS, -1},
        {16, YP_PHASE_RECOMPUTE, 2, YP_FUSED_BN_SILU, 1},  {18, YP_PHASE_BACKWARD, 2, YP_FUSED_BN_SILU_BWD, 1},
        {19, YP_PHASE_BACKWARD, 1, YP_FUSED_BN_BWD_SUMS, -1}, {20, YP_PHASE_BACKWARD, 0, YP_FUSED_NONE, -1},
    };
    for (size_t k = 0; k < sizeof want / sizeof *want; k++) {
        const yp_step *st = &s->steps[want[k].step];
        CHECK_EQ_I64(st->phase, want[k].phase);
        CHECK_EQ_I64(st->node, want[k].node);
        CHECK_EQ_I64(st->fused, want[k].fused);
        CHECK_EQ_I64(st->fused_node, want[k].partner);
    }
    /* the BN outputs are gone, forward and recomputed */
    for (int t = 0; t < s->n_tensors; t++) {
        const yp_tensor *x = &s->tensors[t];
        CHECK(!(x->node >= 0 && g->nodes[x->node].op == YP_OP_BATCHNORM2D &&
                (x->role == YP_ROLE_VALUE || x->role == YP_ROLE_RECOMPUTED)));
    }
    CHECK(yp_schedule_find(u, "act:model.0.bn") >= 0 && yp_schedule_find(s, "act:model.0.bn") < 0);
    CHECK_EQ_I64(s->n_tensors, u->n_tensors - 2 - 5 + 2); /* 2 forward, 5 recomputed BN outputs; 2 sums */
    /* bn1 writes its statistics and running statistics only; silu2 reads conv0's output and bn1's
     * parameters and statistics instead of bn1's output */
    const yp_step *bn1 = &s->steps[1], *silu2 = &s->steps[2];
    int conv0 = yp_schedule_find(s, "act:model.0.conv"), stats = yp_schedule_find(s, "stats:model.0.bn");
    CHECK(bn1->a.y[0] == -1 && bn1->n_out == 3 && bn1->a.stats == stats);
    CHECK(silu2->a.x[0] == -1 && silu2->a.bn_x == conv0 && silu2->a.bn_stats == stats && silu2->n_in == 4);
    CHECK(silu2->a.bn_gamma == yp_schedule_find(s, "model.0.bn.weight") && silu2->a.bn_beta == yp_schedule_find(s, "model.0.bn.bias"));
    /* silu5' hands bn4' the sums: written at 14, read at 15, 2 x 4 channels of f64 */
    int sums = yp_schedule_find(s, "sums:model.1.bn");
    REQUIRE(sums >= 0);
    const yp_tensor *sm = &s->tensors[sums];
    CHECK(sm->role == YP_ROLE_BN_SUMS && sm->dtype == YP_DTYPE_F64 && sm->kind == YP_KIND_ACTGRAD);
    CHECK_EQ_I64(sm->bytes, 2 * 4 * 8);
    CHECK_EQ_I64(sm->first, 14);
    CHECK_EQ_I64(sm->last, 15);
    CHECK_EQ_I64(sm->producer, 14);
    CHECK(s->steps[14].a.bn_sums == sums && s->steps[15].a.bn_sums == sums);
    CHECK(listed(yp_step_outputs(s, &s->steps[14]), s->steps[14].n_out, sums));
    CHECK(listed(yp_step_inputs(s, &s->steps[15]), s->steps[15].n_in, sums));
    /* the conv outputs live as long as before (the fused steps read them within their lives) */
    int uconv0 = yp_schedule_find(u, "act:model.0.conv");
    CHECK_EQ_I64(u->tensors[uconv0].last, 24);
    CHECK_EQ_I64(s->tensors[conv0].last, 19);
    /* recompute: the five BN applies (6 FLOPs an element) go, the three recompute SiLUs apply
     * theirs (2 an element); tiny's BN outputs are 4 channels x 16 pixels */
    CHECK_EQ_I64(u->recompute_flops - s->recompute_flops, 5 * 6 * 64 - 3 * 2 * 64);
    yp_schedule_free(u);
    yp_schedule_free(s);
    yp_graph_free(g);
}

/* ---------------------------------------------------------------- against the unfused schedule */

/* The fused schedule s against the unfused u of the same options: s's steps are u's in order
 * less the dropped recompute BN steps (map[i]: u's index of s's step i); the tensors s lacks are
 * exactly the BN outputs only SiLU steps read; those s adds are the sums; every other tensor has
 * u's kind, bytes and life (in u's steps); s's live bytes at each step are u's less the dropped
 * outputs and plus the sums alive there, every size rounded up to align (the arena's). Returns the
 * number of fused steps. */
static int compare(const yp_schedule *u, const yp_schedule *s, int64_t align) {
    int *map = malloc((size_t)s->n_steps * sizeof *map), i = 0, fused = 0;
    if (!map) {
        CHECK(0);
        return 0;
    }
    for (int j = 0; j < u->n_steps && i < s->n_steps; j++) {
        const yp_step *a = &s->steps[i], *b = &u->steps[j];
        if (a->phase == b->phase && a->node == b->node && a->op == b->op && !strcmp(a->label, b->label)) {
            map[i++] = j;
            continue;
        }
        CHECK(b->phase == YP_PHASE_RECOMPUTE && b->op == YP_OP_BATCHNORM2D); /* only these are dropped */
    }
    CHECK_EQ_I64(i, s->n_steps);
    int n_mapped = i;
    for (int k = 0; k < n_mapped; k++) fused += s->steps[k].fused != YP_FUSED_NONE;
    int64_t *delta = calloc((size_t)u->n_steps + 1, sizeof *delta);
    if (!delta) {
        free(map);
        CHECK(0);
        return fused;
    }
    int dropped = 0, added = 0, differ = 0;
    for (int t = 0; t < u->n_tensors; t++) {
        const yp_tensor *x = &u->tensors[t];
        int v = yp_schedule_find(s, x->name);
        if (v >= 0) {
            const yp_tensor *y = &s->tensors[v];
            int same = y->kind == x->kind && y->bytes == x->bytes && map[y->first] == x->first && map[y->last] == x->last;
            if (!same) fprintf(stderr, "  %s: fused life %d..%d (unfused %d..%d)\n", x->name, map[y->first], map[y->last],
                               x->first, x->last);
            differ += !same;
            continue;
        }
        dropped++;
        CHECK(x->node >= 0 && u->g->nodes[x->node].op == YP_OP_BATCHNORM2D &&
              (x->role == YP_ROLE_VALUE || x->role == YP_ROLE_RECOMPUTED));
        for (int k = 0; k < x->n_cons; k++) CHECK(u->steps[yp_tensor_consumers(u, x)[k]].op == YP_OP_SILU);
        delta[x->first] -= yp_align_up(x->bytes, align), delta[x->last + 1] += yp_align_up(x->bytes, align);
    }
    CHECK_EQ_I64(differ, 0);
    for (int t = 0; t < s->n_tensors; t++) {
        const yp_tensor *y = &s->tensors[t];
        if (yp_schedule_find(u, y->name) >= 0) continue;
        added++;
        CHECK(y->role == YP_ROLE_BN_SUMS);
        delta[map[y->first]] += yp_align_up(y->bytes, align), delta[map[y->last] + 1] -= yp_align_up(y->bytes, align);
    }
    CHECK(dropped > 0 && added > 0);
    yp_liveness lu, ls;
    yp_err err;
    if (yp_liveness_compute(u, align, &lu, &err) || yp_liveness_compute(s, align, &ls, &err)) {
        CHECK(0);
    } else {
        int64_t run = 0, peak = 0, off = 0;
        for (int j = 0, k = 0; j < u->n_steps; j++) {
            run += delta[j];
            if (k < n_mapped && map[k] == j) {
                off += ls.live[k] != lu.live[j] + run;
                if (ls.live[k] > peak) peak = ls.live[k];
                k++;
            }
        }
        CHECK_EQ_I64(off, 0);
        CHECK_EQ_I64(ls.peak, peak);
        yp_liveness_free(&ls);
        yp_liveness_free(&lu);
    }
    free(delta);
    free(map);
    return fused;
}

/* Every step lists its operands by name (yp_schedule.h), and the fused ones name what they are. */
static void check_fused_operands(const yp_schedule *s) {
    for (int i = 0; i < s->n_steps; i++) {
        const yp_step *st = &s->steps[i];
        if (st->phase == YP_PHASE_OPTIMIZER) continue;
        const int *slots = (const int *)&st->a, n_slots = (int)(sizeof st->a / sizeof(int));
        const int *in = yp_step_inputs(s, st), *out = yp_step_outputs(s, st);
        for (int k = 0; k < n_slots; k++)
            if (slots[k] >= 0) CHECK(listed(in, st->n_in, slots[k]) || listed(out, st->n_out, slots[k]));
        for (int k = 0; k < st->n_in; k++) CHECK(listed(slots, n_slots, in[k]));
        for (int k = 0; k < st->n_out; k++) CHECK(listed(slots, n_slots, out[k]));
        int fused_silu = st->fused == YP_FUSED_BN_SILU || st->fused == YP_FUSED_BN_SILU_BWD;
        CHECK(fused_silu == (st->a.bn_x >= 0) && fused_silu == (st->a.bn_stats >= 0));
        CHECK(fused_silu == (st->fused_node >= 0));
        if (fused_silu) {
            CHECK(st->op == YP_OP_SILU && st->a.x[0] == -1 && s->g->nodes[st->fused_node].op == YP_OP_BATCHNORM2D);
            CHECK(s->tensors[st->a.bn_stats].node == st->fused_node && st->a.bn_gamma >= 0 && st->a.bn_beta >= 0);
            CHECK((st->fused == YP_FUSED_BN_SILU) == is_fwd(st->phase));
        }
        if (st->fused == YP_FUSED_BN_STATS) CHECK(st->op == YP_OP_BATCHNORM2D && st->a.y[0] == -1 && st->a.stats >= 0);
        if (st->fused == YP_FUSED_BN_BWD_SUMS) {
            CHECK(st->a.bn_sums >= 0 && i > 0 && s->steps[i - 1].fused == YP_FUSED_BN_SILU_BWD);
            CHECK(s->steps[i - 1].a.bn_sums == st->a.bn_sums && s->steps[i - 1].a.dx[0] == st->a.dy[0]);
        }
        if (st->a.bn_sums >= 0) CHECK(st->fused == YP_FUSED_BN_SILU_BWD || st->fused == YP_FUSED_BN_BWD_SUMS);
        CHECK(st->fused != YP_FUSED_NONE || st->fused_node == -1);
        CHECK(!(st->op == YP_OP_BATCHNORM2D && st->phase == YP_PHASE_RECOMPUTE && st->fused));
    }
}

static void test_against_unfused(void) {
    static const char *const models[] = {"yolov5n", "yolov5s"};
    static const struct { yp_save_policy pol; uint64_t ck; int freeze; } v[] = {
        {YP_SAVE_YOLOPLAN, 0, 0}, {YP_SAVE_CONCAT, 0, 0}, {YP_SAVE_YOLOPLAN, 1u << 2 | 1u << 9 | 1u << 17, 0},
        {YP_SAVE_CONCAT, 1u << 4 | 1u << 23, 3},
    };
    for (size_t m = 0; m < sizeof models / sizeof *models; m++) {
        yp_graph *g = yp_test_model(models[m]);
        REQUIRE(g != NULL);
        for (size_t k = 0; k < sizeof v / sizeof *v; k++) {
            yp_sched_opts o = yp_sched_opts_default(2, 96, 64);
            o.policy = v[k].pol, o.ckpt_layers = v[k].ck, o.freeze = v[k].freeze;
            yp_schedule *u = build(g, o, 0), *s = build(g, o, YP_FUSE_BN_SILU);
            REQUIRE(u && s);
            int fused = compare(u, s, YP_ALIGN_DEFAULT);
            check_fused_operands(s);
            printf("  %s %s ckpt %#llx freeze %d: %d steps -> %d (%d fused), %d tensors -> %d\n", models[m],
                   yp_save_policy_name(v[k].pol), (unsigned long long)v[k].ck, v[k].freeze, u->n_steps, s->n_steps,
                   fused, u->n_tensors, s->n_tensors);
            CHECK(fused > 0);
            CHECK_EQ_I64(yp_schedule_saved_bytes(s), yp_schedule_saved_bytes(u));
            yp_schedule_free(u);
            yp_schedule_free(s);
        }
        yp_graph_free(g);
    }
}

/* PyTorch's eager autograd keeps every BN output its SiLU's backward reads: that policy's
 * schedule is the same with or without the fusion allowed. */
static void test_pytorch_never_fuses(void) {
    yp_graph *g = yp_test_model("yolov5n");
    REQUIRE(g != NULL);
    yp_sched_opts o = yp_sched_opts_default(2, 64, 64);
    o.policy = YP_SAVE_PYTORCH;
    yp_schedule *u = build(g, o, 0), *s = build(g, o, YP_FUSE_ALL);
    REQUIRE(u && s);
    CHECK_EQ_I64(s->n_steps, u->n_steps);
    CHECK_EQ_I64(s->n_tensors, u->n_tensors);
    CHECK_EQ_I64(s->n_refs, u->n_refs);
    CHECK(memcmp(s->refs, u->refs, (size_t)u->n_refs * sizeof *u->refs) == 0);
    for (int i = 0; i < s->n_steps; i++) CHECK(s->steps[i].fused == YP_FUSED_NONE);
    yp_schedule_free(u);
    yp_schedule_free(s);
    yp_graph_free(g);
}

/* ---------------------------------------------------------------- no unwritten bytes */

static int persistent(yp_kind k) {
    return k == YP_KIND_WEIGHT || k == YP_KIND_GRAD || k == YP_KIND_OPTSTATE || k == YP_KIND_EMA || k == YP_KIND_LOWP;
}

/* Every tensor with bytes is state the executor initialises (parameters, gradients, optimizer
 * state, EMA and AMP copies), the input batch, or written by the first step that touches it
 * (listed among its outputs and not read by it, which would read before writing). Returns the
 * tensors checked. */
static int check_written_before_read(const yp_schedule *s) {
    int *first = malloc((size_t)s->n_tensors * sizeof *first), bad = 0, n = 0;
    char *out_first = calloc((size_t)s->n_tensors, 1), *in_first = calloc((size_t)s->n_tensors, 1);
    if (!first || !out_first || !in_first) {
        free(first), free(out_first), free(in_first);
        CHECK(0);
        return 0;
    }
    for (int t = 0; t < s->n_tensors; t++) first[t] = -1;
    for (int i = 0; i < s->n_steps; i++) {
        const yp_step *st = &s->steps[i];
        const int *in = yp_step_inputs(s, st), *out = yp_step_outputs(s, st);
        for (int k = 0; k < st->n_in + st->n_out; k++) {
            int t = k < st->n_in ? in[k] : out[k - st->n_in];
            if (first[t] < 0) first[t] = i;
            if (first[t] != i) continue;
            if (k < st->n_in) in_first[t] = 1;
            else out_first[t] = 1;
        }
    }
    for (int t = 0; t < s->n_tensors; t++) {
        const yp_tensor *x = &s->tensors[t];
        if (x->bytes == 0 || persistent(x->kind)) continue;
        n++;
        int loaded = t == s->images_t || t == s->targets_t;
        int ok = loaded ? x->producer < 0 : (first[t] >= 0 && out_first[t] && !in_first[t] && x->producer == first[t]);
        if (!ok) fprintf(stderr, "  %s: %d bytes, first touched at step %d without being written there\n", x->name,
                         (int)x->bytes, first[t]);
        bad += !ok;
    }
    CHECK_EQ_I64(bad, 0);
    free(first), free(out_first), free(in_first);
    return n;
}

static void test_no_unwritten_bytes(void) {
    yp_graph *gs[] = {tiny(), yp_test_model("yolov5n")};
    REQUIRE(gs[0] && gs[1]);
    for (int m = 0; m < 2; m++)
        for (int pol = 0; pol < YP_SAVE_COUNT; pol++)
            for (int f = 0; f < 2; f++)
                for (int ck = 0; ck < 2; ck++) {
                    yp_sched_opts o = yp_sched_opts_default(2, 64, 64);
                    o.policy = (yp_save_policy)pol;
                    o.ckpt_layers = ck && pol != YP_SAVE_PYTORCH ? 0x2f4 : 0;
                    o.act_dtype = ck ? YP_DTYPE_F16 : YP_DTYPE_F32;
                    yp_schedule *s = build(gs[m], o, f ? YP_FUSE_BN_SILU : 0);
                    REQUIRE(s != NULL);
                    CHECK(check_written_before_read(s) > 0);
                    yp_schedule_free(s);
                }
    yp_graph_free(gs[0]);
    yp_graph_free(gs[1]);
}

/* ---------------------------------------------------------------- plans */

static yp_candidate cand_n320(unsigned fusions) {
    yp_candidate c = yp_candidate_default();
    c.batch = 8, c.img_w = c.img_h = 320, c.fusions = fusions;
    return c;
}

/* yolov5n at 320, batch 8: the fused plan's lower bound and arena are smaller, and its lower
 * bound is what the unfused live bytes less the fused-away outputs (plus the sums) give. */
static void test_arena_smaller(void) {
    yp_graph *g = yp_test_model("yolov5n");
    REQUIRE(g != NULL);
    yp_gpu gpu;
    yp_err err;
    REQUIRE(yp_gpu_parse("8GB", &gpu, &err) == 0);
    yp_candidate cu = cand_n320(0), cf = cand_n320(YP_FUSE_BN_SILU);
    yp_plan u, f;
    REQUIRE(yp_plan_build(g, &cu, &gpu, 0, 0, &u, &err) == 0);
    REQUIRE(yp_plan_build(g, &cf, &gpu, 0, 0, &f, &err) == 0 || (yp_plan_free(&u), 0));
    CHECK_EQ_I64(u.live.align, f.live.align);
    compare(u.sched, f.sched, u.live.align);
    CHECK(yp_arena_check(f.sched, &f.arena, &err) == 0);
    /* what the fused-away BN outputs held at the unfused peak, and the sums there: the peak is the
     * loss step, where every saved conv output is live and no BN output is (the forward ones die
     * at their SiLU, the recomputed ones come later), so the lower bound stays; the arena, packed
     * around the transient tensors of every step, shrinks */
    int64_t held = 0, sums = 0;
    for (int t = 0; t < u.sched->n_tensors; t++) {
        const yp_tensor *x = &u.sched->tensors[t];
        if (x->first <= u.live.peak_step && u.live.peak_step <= x->last && yp_schedule_find(f.sched, x->name) < 0)
            held += yp_align_up(x->bytes, u.live.align);
    }
    for (int t = 0; t < f.sched->n_tensors; t++) {
        const yp_tensor *x = &f.sched->tensors[t];
        if (x->role == YP_ROLE_BN_SUMS && x->first <= f.live.peak_step && f.live.peak_step <= x->last)
            sums += yp_align_up(x->bytes, f.live.align);
    }
    printf("  unfused: arena %lld, lower bound %lld at step %d (the BN outputs fused away hold %lld of it); fused: "
           "arena %lld, lower bound %lld at step %d\n", (long long)u.arena.size, (long long)u.live.peak,
           u.live.peak_step, (long long)held, (long long)f.arena.size, (long long)f.live.peak, f.live.peak_step);
    CHECK_EQ_I64(f.live.peak_step, u.live.peak_step); /* forward and loss: no step dropped before it */
    CHECK_EQ_I64(u.live.peak_step, u.sched->loss_step);
    CHECK_EQ_I64(f.live.peak, u.live.peak - held + sums);
    CHECK(f.live.peak <= u.live.peak);
    CHECK(f.arena.size < u.arena.size);
    CHECK(f.arena.size >= f.live.peak);
    CHECK(f.arena_bytes < u.arena_bytes);
    CHECK(f.time.recompute_ms < u.time.recompute_ms); /* the recompute BN steps are gone */
    yp_plan_free(&u);
    yp_plan_free(&f);
    yp_graph_free(g);
}

static char *slurp(const char *path, size_t *n) {
    FILE *f = fopen(path, "rb");
    char *text = f ? malloc(1 << 24) : NULL;
    *n = text ? fread(text, 1, (1 << 24) - 1, f) : 0;
    if (f) fclose(f);
    if (text) text[*n] = 0;
    return text;
}

static void spit(const char *path, const char *text) {
    FILE *f = fopen(path, "wb");
    if (f) fputs(text, f), fclose(f);
}

/* Removes the first occurrence of what from text (in place); 0 if absent. */
static int cut(char *text, const char *what) {
    char *at = strstr(text, what);
    if (!at) return 0;
    memmove(at, at + strlen(what), strlen(at + strlen(what)) + 1);
    return 1;
}

/* candidate.fusions: written as names, read back by plan.json's loader (the fused plan
 * re-plans to the same steps and arena); a file without the key allows none; an unknown name
 * is refused naming it. */
static void test_candidate_json(void) {
    yp_graph *g = yp_test_model("yolov5n"), *g2 = NULL;
    REQUIRE(g != NULL);
    yp_gpu gpu;
    yp_err err;
    REQUIRE(yp_gpu_parse("8GB", &gpu, &err) == 0);
    yp_candidate c = cand_n320(0);
    c.img_w = c.img_h = 128, c.batch = 2;
    cJSON *j = yp_candidate_json(g, &c);
    const cJSON *fu = cJSON_GetObjectItem(j, "fusions");
    CHECK(cJSON_IsArray(fu) && cJSON_GetArraySize(fu) == 0);
    cJSON_Delete(j);
    c.fusions = YP_FUSE_BN_SILU;
    j = yp_candidate_json(g, &c);
    fu = cJSON_GetObjectItem(j, "fusions");
    CHECK(cJSON_IsArray(fu) && cJSON_GetArraySize(fu) == 1 && !strcmp(cJSON_GetArrayItem(fu, 0)->valuestring, "bn_silu"));
    cJSON_Delete(j);

    char path[] = "/tmp/yp_test_fuse_XXXXXX";
    int fd = mkstemp(path);
    REQUIRE(fd >= 0);
    close(fd);
    yp_plan p, q;
    REQUIRE(yp_plan_build(g, &c, &gpu, 0, 0, &p, &err) == 0);
    CHECK(yp_plan_save(&p, path, &err) == 0);
    CHECK(yp_plan_load(path, &q, &g2, &err) == 0);
    if (g2) {
        CHECK_EQ_I64(q.cand.fusions, YP_FUSE_BN_SILU);
        CHECK_EQ_I64(q.sched->n_steps, p.sched->n_steps);
        CHECK_EQ_I64(q.arena_bytes, p.arena_bytes);
        yp_plan_free(&q);
        yp_graph_free(g2);
    }
    size_t n;
    char *text = slurp(path, &n);
    REQUIRE(text != NULL);
    CHECK_STR_HAS(text, "\"fused\":\"bn+silu\"");
    /* the same file without the key re-plans unfused, so it no longer matches */
    char *copy = strdup(text);
    CHECK(copy && cut(copy, ",\"fusions\":[\"bn_silu\"]"));
    if (copy) spit(path, copy);
    CHECK(yp_plan_load(path, &q, &g2, &err) == -1);
    CHECK_STR_HAS(err.msg, "save the plan again");
    free(copy);
    /* an unknown fusion */
    char *bad = strstr(text, "\"bn_silu\"");
    REQUIRE(bad != NULL || (free(text), 0));
    memcpy(bad + 1, "xx", 2);
    spit(path, text);
    CHECK(yp_plan_load(path, &q, &g2, &err) == -1);
    CHECK_STR_HAS(err.msg, "candidate.fusions: \"xx_silu\" is not a fusion");
    free(text);
    yp_plan_free(&p);

    /* an unfused plan written before the key existed loads as none */
    c.fusions = 0;
    REQUIRE(yp_plan_build(g, &c, &gpu, 0, 0, &p, &err) == 0);
    CHECK(yp_plan_save(&p, path, &err) == 0);
    text = slurp(path, &n);
    REQUIRE(text != NULL || (yp_plan_free(&p), 0));
    CHECK(cut(text, ",\"fusions\":[]"));
    CHECK(strstr(text, "\"fused\"") == NULL);
    spit(path, text);
    free(text);
    CHECK(yp_plan_load(path, &q, &g2, &err) == 0);
    if (g2) {
        CHECK_EQ_I64(q.cand.fusions, 0);
        CHECK_EQ_I64(q.arena_bytes, p.arena_bytes);
        yp_plan_free(&q);
        yp_graph_free(g2);
    }
    yp_plan_free(&p);
    unlink(path);
    CHECK(yp_fusion_parse("bn_silu") == YP_FUSION_BN_SILU && yp_fusion_parse("bn+silu") == -1);
    yp_graph_free(g);
}

int main(void) {
    YP_RUN(test_tiny_by_hand);
    YP_RUN(test_against_unfused);
    YP_RUN(test_pytorch_never_fuses);
    YP_RUN(test_no_unwritten_bytes);
    YP_RUN(test_arena_smaller);
    YP_RUN(test_candidate_json);
    return yp_test_summary();
}
