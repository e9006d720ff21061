/* test_exec_ops.c - the executor's op table (executor/exec_ops.h): every op has a complete row
 * (a half-added op fails here), and every step the schedule builds for the bundled models, a
 * Focus model, a four-level one, a transformer (attention), one with the activations other than
 * SiLU and a zero pad (tests/data/ir/acts.json) and one with Contract and Expand
 * (tests/data/ir/contract_expand.json), under every saving policy, with checkpoints, frozen
 * layers and the BN+SiLU fusion, finds the adapter it runs with; every parameter finds its initial value
 * and every conv its preparation; every step of their evaluation pass finds its eval adapter.
 * The backend entries the rows name are entries the backends have, and a backend is asked for
 * those the plan's steps call and no others. */
#include <stdio.h>
#include <string.h>

#include "exec_ops.h"
#include "yp_ir.h"
#include "yp_test.h"
#include "yp_test_models.h"
#include "yp_yaml.h"

static void test_rows_complete(void) {
    for (int op = 0; op < YP_OP_COUNT; op++) {
        const yp_exec_op_row *r = yp_exec_op_row_get((yp_op)op);
        CHECK_EQ_I64(r->op, op);
        CHECK(r->forward != NULL);
        CHECK(r->recompute != NULL);
        CHECK(r->backward != NULL);
        CHECK(r->fused[YP_FUSED_NONE] == NULL); /* unused: an unfused step runs forward/recompute/backward */
        if (yp_op_get((yp_op)op)->matrix_math) CHECK(r->prepare != NULL); /* the backend's conv entries */
    }
}

/* Every step of s has an adapter, a fused one the row of its op; every parameter an initial
 * value; every conv step a preparation. Counts the fused steps into *fused. */
static void check_schedule(const yp_schedule *s, int *fused) {
    for (int i = 0; i < s->n_steps; i++) {
        const yp_step *st = &s->steps[i];
        if (st->phase == YP_PHASE_LOSS || st->phase == YP_PHASE_OPTIMIZER) {
            CHECK(yp_exec_step_adapter(st) == NULL); /* the interpreter runs these itself */
            continue;
        }
        REQUIRE(st->op >= 0 && st->op < YP_OP_COUNT);
        yp_exec_step_fn fn = yp_exec_step_adapter(st);
        if (!fn) fprintf(stderr, "  step %d: %s %s %s has no adapter\n", i, yp_phase_name(st->phase),
                         yp_op_get((yp_op)st->op)->name, yp_fused_name(st->fused));
        CHECK(fn != NULL);
        if (st->fused) {
            ++*fused;
            CHECK(fn == yp_exec_op_row_get((yp_op)st->op)->fused[st->fused]);
        }
        if (st->a.scratch_image >= 0 || st->a.scratch_fixed >= 0) CHECK(yp_exec_op_row_get((yp_op)st->op)->prepare != NULL);
    }
    for (int t = 0; t < s->n_tensors; t++)
        if (s->tensors[t].kind == YP_KIND_WEIGHT) CHECK(yp_exec_op_row_get(s->g->nodes[s->tensors[t].node].op)->init_param != NULL);
}

static void test_every_step_has_an_adapter(void) {
    yp_err err;
    yp_graph *gs[] = {yp_test_model("yolov5n"), yp_yaml_import(YP_TEST_DATA "/yaml/good/yolov5s-v5.0.yaml", 0, &err),
                      yp_yaml_import(YP_TEST_DATA "/yaml/good/yolov5t6.yaml", 0, &err),
                      yp_ir_load_file(YP_TEST_DATA "/ir/transformer.json", &err),
                      yp_ir_load_file(YP_TEST_DATA "/ir/acts.json", &err), /* relu, leaky_relu, hardswish, zero_pad */
                      yp_ir_load_file(YP_TEST_DATA "/ir/contract_expand.json", &err)}; /* contract, expand */
    int ops_seen[YP_OP_COUNT] = {0}, fused = 0;
    for (size_t m = 0; m < sizeof gs / sizeof *gs; m++) {
        REQUIRE(gs[m] != NULL);
        for (int i = 0; i < gs[m]->n_nodes; i++) ops_seen[gs[m]->nodes[i].op] = 1;
        for (int pol = 0; pol < YP_SAVE_COUNT; pol++)
            for (int v = 0; v < 4; v++) {
                int s64 = yp_graph_max_stride(gs[m]) * 2;
                yp_sched_opts o = yp_sched_opts_default(2, s64, s64);
                o.policy = (yp_save_policy)pol;
                o.fusions = v & 1 ? YP_FUSE_BN_SILU : 0;
                if (v & 2) o.ckpt_layers = pol == YP_SAVE_PYTORCH ? 0 : 0x1f6, o.freeze = 1;
                yp_schedule *s = yp_schedule_build(gs[m], &o, &err);
                REQUIRE(s != NULL);
                check_schedule(s, &fused);
                yp_schedule_free(s);
            }
    }
    for (int op = 0; op < YP_OP_COUNT; op++) {
        if (!ops_seen[op]) fprintf(stderr, "  no test model has a %s node\n", yp_op_get((yp_op)op)->name);
        CHECK(ops_seen[op]); /* so every row was asked for */
    }
    CHECK(fused > 0);
    for (size_t m = 0; m < sizeof gs / sizeof *gs; m++) yp_graph_free(gs[m]);
}

/* The evaluation pass of the same models (BN in eval mode, the loss, the decode): every node step
 * finds its eval adapter -- BN's row's eval entry, every other op's forward -- and the loss and
 * the decode, which have no op, none (eval.c runs them). */
static void test_eval_steps_have_adapters(void) {
    yp_err err;
    yp_graph *gs[] = {yp_test_model("yolov5n"), yp_yaml_import(YP_TEST_DATA "/yaml/good/yolov5s-v5.0.yaml", 0, &err),
                      yp_yaml_import(YP_TEST_DATA "/yaml/good/yolov5t6.yaml", 0, &err),
                      yp_ir_load_file(YP_TEST_DATA "/ir/transformer.json", &err),
                      yp_ir_load_file(YP_TEST_DATA "/ir/acts.json", &err), /* relu, leaky_relu, hardswish, zero_pad */
                      yp_ir_load_file(YP_TEST_DATA "/ir/contract_expand.json", &err)}; /* contract, expand */
    int n_bn = 0, n_decode = 0;
    for (size_t m = 0; m < sizeof gs / sizeof *gs; m++) {
        REQUIRE(gs[m] != NULL);
        int s64 = yp_graph_max_stride(gs[m]) * 2;
        yp_sched_opts o = yp_sched_opts_default(2, s64, s64);
        o.eval = 1, o.freeze = gs[m]->n_layers, o.ema = 0;
        yp_schedule *s = yp_schedule_build(gs[m], &o, &err);
        REQUIRE(s != NULL);
        for (int i = 0; i < s->n_steps; i++) {
            const yp_step *st = &s->steps[i];
            yp_exec_step_fn fn = yp_exec_eval_adapter(st);
            if (st->op < 0) {
                CHECK(fn == NULL);
                n_decode += st->a.decoded >= 0;
                continue;
            }
            const yp_exec_op_row *r = yp_exec_op_row_get((yp_op)st->op);
            CHECK(st->phase == YP_PHASE_FORWARD && !st->fused);
            CHECK(fn != NULL && fn == (r->eval ? r->eval : r->forward));
            if (st->op != YP_OP_BATCHNORM2D) continue;
            CHECK(fn == yp_exec_bn_eval && fn != r->forward);
            n_bn++;
        }
        yp_schedule_free(s);
    }
    CHECK(n_bn > 0 && n_decode == (int)(sizeof gs / sizeof *gs)); /* one decode per model */
    for (size_t m = 0; m < sizeof gs / sizeof *gs; m++) yp_graph_free(gs[m]);
}

/* Every row's needs and eval_needs name entries the CPU backend has (and the CUDA backend's table,
 * where this build has one), leave room for the NULL that ends them, and ask a forward and a
 * backward entry at least. */
static void test_needs_rows(void) {
    char why[256];
    yp_backend *cpu = yp_backend_cpu_new(NULL, why, sizeof why);
    REQUIRE(cpu != NULL);
    const yp_ops *cuda = yp_backend_cuda_ops();
    for (int op = 0; op < YP_OP_COUNT; op++) {
        const yp_exec_op_row *r = yp_exec_op_row_get((yp_op)op);
        const yp_exec_entry *lists[2] = {r->needs, r->eval_needs};
        for (int l = 0; l < 2; l++) {
            int n = 0;
            for (const yp_exec_entry *e = lists[l]; e->name; e++, n++) {
                if (!yp_exec_has_entry(cpu->ops, e)) fprintf(stderr, "  the cpu backend has no %s\n", e->name);
                CHECK(yp_exec_has_entry(cpu->ops, e));
                if (cuda) CHECK(yp_exec_has_entry(cuda, e));
            }
            CHECK(n < YP_EXEC_MAX_NEEDS);
            if (l == 0) CHECK(n >= 2);
            if (l == 1) CHECK_EQ_I64(n > 0, r->eval != NULL); /* only an eval adapter calls more */
        }
    }
    /* an entry is found by its offset: the one member cleared is the one missing */
    yp_ops o = *cpu->ops;
    o.maxpool_backward = NULL;
    const yp_exec_entry *mp = yp_exec_op_row_get(YP_OP_MAXPOOL2D)->needs;
    CHECK(yp_exec_has_entry(&o, &mp[0]) && !yp_exec_has_entry(&o, &mp[1]));
    CHECK(!strcmp(mp[1].name, "maxpool_backward"));
    yp_backend_free(cpu);
}

/* g's schedule at batch 2 with options o (training when !eval), or NULL. */
static yp_schedule *schedule_of(const yp_graph *g, yp_optimizer opt, int ema, int eval) {
    yp_err err;
    int side = yp_graph_max_stride(g) * 2;
    yp_sched_opts o = yp_sched_opts_default(2, side, side);
    o.optimizer = opt, o.ema = ema && !eval, o.eval = eval;
    if (eval) o.freeze = g->n_layers;
    return yp_schedule_build(g, &o, &err);
}

/* What yp_exec_init and validation ask of a backend is what the plan's steps call: a backend
 * without the attention entries runs yolov5n and not the transformer; without adam_step an SGD
 * plan and not an Adam one; without ema_update a plan without EMA; without bn_forward_eval or
 * detect_decode training and not validation; the first missing entry in step order is named (a
 * forward step's before the loss's). */
static void test_needs_of_the_plan(void) {
    char why[256];
    yp_err err;
    yp_backend *cpu = yp_backend_cpu_new(NULL, why, sizeof why);
    yp_graph *n5 = yp_test_model("yolov5n"), *tr = yp_ir_load_file(YP_TEST_DATA "/ir/transformer.json", &err);
    REQUIRE(cpu != NULL && n5 != NULL && tr != NULL);
    yp_schedule *sgd = schedule_of(n5, YP_OPT_SGD, 1, 0), *adam = schedule_of(n5, YP_OPT_ADAM, 0, 0);
    yp_schedule *ev = schedule_of(n5, YP_OPT_SGD, 0, 1), *attn = schedule_of(tr, YP_OPT_SGD, 1, 0);
    REQUIRE(sgd != NULL && adam != NULL && ev != NULL && attn != NULL);
    const yp_schedule *all[] = {sgd, adam, ev, attn};
    for (int k = 0; k < 4; k++) CHECK(yp_exec_missing_entry(all[k], cpu->ops) == NULL);
    struct {
        size_t offset;
        const yp_schedule *runs, *refused; /* refused names the entry */
        const char *name;
    } cases[] = {
        {offsetof(yp_ops, attention_forward), sgd, attn, "attention_forward"},
        {offsetof(yp_ops, attention_backward), ev, attn, "attention_backward"},
        {offsetof(yp_ops, adam_step), sgd, adam, "adam_step"},
        {offsetof(yp_ops, sgd_step), adam, sgd, "sgd_step"},
        {offsetof(yp_ops, ema_update), adam, sgd, "ema_update"},
        {offsetof(yp_ops, bn_forward_eval), sgd, ev, "bn_forward_eval"},
        {offsetof(yp_ops, detect_decode), attn, ev, "detect_decode"},
        {offsetof(yp_ops, loss_level), NULL, ev, "loss_level"},
        {offsetof(yp_ops, conv2d_backward_weights), ev, adam, "conv2d_backward_weights"},
    };
    for (size_t k = 0; k < sizeof cases / sizeof *cases; k++) {
        yp_ops o = *cpu->ops;
        memset((char *)&o + cases[k].offset, 0, sizeof o.silu_forward);
        if (cases[k].runs) CHECK(yp_exec_missing_entry(cases[k].runs, &o) == NULL);
        const char *m = yp_exec_missing_entry(cases[k].refused, &o);
        if (!m || strcmp(m, cases[k].name)) fprintf(stderr, "  case %zu: missing %s\n", k, m ? m : "nothing");
        CHECK(m && !strcmp(m, cases[k].name));
    }
    yp_ops o = *cpu->ops;
    o.loss_level = NULL, o.silu_forward = NULL;
    const char *m = yp_exec_missing_entry(sgd, &o);
    CHECK(m && !strcmp(m, "silu_forward"));
    for (int k = 0; k < 4; k++) yp_schedule_free((yp_schedule *)all[k]);
    yp_graph_free(n5), yp_graph_free(tr);
    yp_backend_free(cpu);
}

int main(void) {
    YP_RUN(test_rows_complete);
    YP_RUN(test_every_step_has_an_adapter);
    YP_RUN(test_eval_steps_have_adapters);
    YP_RUN(test_needs_rows);
    YP_RUN(test_needs_of_the_plan);
    return yp_test_summary();
}
