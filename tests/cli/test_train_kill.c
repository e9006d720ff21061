/* test_train_kill.c - no training run loses data to a kill: a reference run of EPOCHS epochs, then
 * the same run killed with SIGKILL again and again, each time resumed with --resume, at points a
 * seeded RNG draws (YP_KILL_SEED overrides the seed; the seed is printed): at a random time
 * (within the first half of what is left of the run, scaled by the reference run's wall time), or
 * through the test-only shim (tests/cli/ckpt_shim.c) inside a checkpoint write (after a random number
 * of bytes, in its fsync, just before or just after its rename). After every kill each checkpoint
 * on disk loads whole (header, metadata, every tensor) and last.safetensors never goes back an
 * epoch; the resumed run removes the partial files a kill left. The run that ends is identical to
 * the uninterrupted one, which here means: results.csv byte for byte, and last and best with every
 * tensor (weights, BN statistics, EMA, momentum, pending gradients) bit for bit and the same epoch,
 * best fitness, update and micro-batch counts, hyperparameters and last gradient norm. (The
 * metadata's plan and options are not compared: they name the run folder and the host memory
 * available when it was planned.) */
#include "yp_test.h"
#include "yp_test_fs.h"
#include "yp_test_train_fault.h"

#define EPOCHS 8
#define KILLS 6

static uint64_t rng_state;

static uint64_t rnd(uint64_t n) { /* xorshift64*, in [0, n) */
    rng_state ^= rng_state >> 12, rng_state ^= rng_state << 25, rng_state ^= rng_state >> 27;
    return (rng_state * 0x2545f4914f6cdd1dull >> 11) % n;
}

/* Whether checkpoints a and b (relative to tf_dir) hold the same tensors bit for bit and the same
 * counters and hyperparameters; the first difference on stderr. */
static int same_state(const char *a, const char *b) {
    char pa[400], pb[400];
    snprintf(pa, sizeof pa, "%s/%s", tf_dir, a), snprintf(pb, sizeof pb, "%s/%s", tf_dir, b);
    yp_st_file fa, fb;
    yp_err err = {0};
    memset(&fa, 0, sizeof fa), memset(&fb, 0, sizeof fb);
    int ok = yp_st_open(&fa, pa, &err) == 0 && yp_st_open(&fb, pb, &err) == 0;
    if (!ok) fprintf(stderr, "  %s\n", err.msg);
    if (ok && fa.n != fb.n) ok = 0, fprintf(stderr, "  %s: %d tensors, %s: %d\n", a, fa.n, b, fb.n);
    static const char *const keys[] = {"epoch", "best_fitness", "updates", "micro", "hyp.lr", "hyp.lr_bias",
                                       "hyp.momentum", "hyp.weight_decay", "last_grad_norm", "ema"};
    for (size_t k = 0; ok && k < sizeof keys / sizeof keys[0]; k++) {
        const char *va = yp_st_meta(&fa, keys[k]), *vb = yp_st_meta(&fb, keys[k]);
        ok = va && vb && !strcmp(va, vb);
        if (!ok) fprintf(stderr, "  %s: %s %s, %s %s\n", keys[k], a, va ? va : "-", b, vb ? vb : "-");
    }
    for (int i = 0; ok && i < fa.n; i++) {
        int j = yp_st_find(&fb, fa.e[i].name);
        int64_t n = fa.e[i].end - fa.e[i].begin;
        ok = j >= 0 && fb.e[j].end - fb.e[j].begin == n;
        char *x = ok ? malloc((size_t)n + 1) : NULL, *y = ok ? malloc((size_t)n + 1) : NULL;
        ok = ok && x && y && !yp_st_read(&fa, i, x, &err) && !yp_st_read(&fb, j, y, &err) && !memcmp(x, y, (size_t)n);
        if (!ok) fprintf(stderr, "  tensor %s differs between %s and %s\n", fa.e[i].name, a, b);
        free(x), free(y);
    }
    yp_st_close(&fa), yp_st_close(&fb);
    return ok;
}

/* After a kill: every checkpoint in the run's weights folder whole, last's epoch into *epoch. */
static void check_on_disk(int64_t *epoch) {
    int64_t e = -1, be = -1;
    CHECK(tf_ckpt_whole("runs/kill/weights/last.safetensors", &e));
    CHECK(tf_ckpt_whole("runs/kill/weights/best.safetensors", &be));
    CHECK(be <= e + 1); /* best is written first: at most one epoch ahead of last */
    *epoch = e;
}

static void test_kill_resume_identical(void) {
    char args[512], spec[64], log[32], a[1 << 14], b[1 << 14];
    snprintf(args, sizeof args, TF_ARGS " runs --epochs %d --name ref", EPOCHS);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    REQUIRE(tf_run(args, NULL, "ref") == 0);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    /* a time kill comes within the first half of what is left of the run, scaled by the reference
     * run's wall time, so that a fast machine does not finish before it */
    const uint64_t ref_ms = (uint64_t)((t1.tv_sec - t0.tv_sec) * 1000 + (t1.tv_nsec - t0.tv_nsec) / 1000000) + 1;
    const char *env = getenv("YP_KILL_SEED");
    uint64_t seed = env && *env ? strtoull(env, NULL, 0) : 20261201u;
    rng_state = seed * 2654435761u + 1;
    printf("  kill points from seed %llu (YP_KILL_SEED)\n", (unsigned long long)seed);
    static const char *const kinds[] = {"write", "fsync", "rename", "renamed", "time"};
    int kills = 0, in_write = 0, in_rename = 0, done = 0;
    int64_t last_epoch = -1;
    for (int seg = 0; seg < 3 * KILLS && kills < KILLS && !done; seg++) {
        /* the first kill is a byte count into a write, the second at a rename, the third at a
         * time; then any kind */
        int kind = seg == 0 ? 0 : seg == 1 ? 2 + (int)rnd(2) : seg == 2 ? 4 : (int)rnd(5);
        /* the fresh run's first two files are epoch 0's best and last: kill in a later one, so a
         * checkpoint to resume from exists */
        long file = seg == 0 ? 3 + (long)rnd(2) : 1 + (long)rnd(3);
        long ms = 20 + (long)rnd(1 + ref_ms * (uint64_t)(EPOCHS - 1 - last_epoch) / EPOCHS / 2);
        if (kind == 0) snprintf(spec, sizeof spec, "write:%ld:%lu", file, 1 + (unsigned long)rnd(1500000));
        else snprintf(spec, sizeof spec, "%s:%ld", kinds[kind], file);
        if (seg == 0) snprintf(args, sizeof args, TF_ARGS " runs --epochs %d --name kill", EPOCHS);
        else snprintf(args, sizeof args, "train --resume runs/kill/weights/last.safetensors");
        snprintf(log, sizeof log, "seg%d", seg);
        pid_t pid = tf_spawn(args, kind == 4 ? NULL : spec, log);
        REQUIRE(pid > 0);
        if (kind == 4) {
            struct timespec ts = {ms / 1000, ms % 1000 * 1000000};
            nanosleep(&ts, NULL);
            kill(pid, SIGKILL);
        }
        int rc = tf_wait(pid);
        if (kind == 4) snprintf(spec, sizeof spec, "time:%ldms", ms);
        printf("  segment %d: %s -> %s\n", seg, spec,
               rc == -SIGKILL ? "killed" : rc == 0 ? "finished" : "failed");
        if (rc != -SIGKILL) {
            CHECK_EQ_I64(rc, 0); /* the shim's file or the time came after the end: the run finished */
            done = rc == 0;
            if (rc) break;
            continue;
        }
        kills++, in_write += kind <= 1, in_rename += kind == 2 || kind == 3;
        int64_t e = -1;
        check_on_disk(&e);
        CHECK(e >= last_epoch); /* a kill never takes a finished epoch away */
        last_epoch = e;
        if (e == EPOCHS - 1) done = 1; /* killed after the final checkpoint: nothing left to resume */
    }
    CHECK(kills >= 5);
    CHECK(in_write >= 1 && in_rename >= 1);
    if (!done) CHECK_EQ_I64(tf_run("train --resume runs/kill/weights/last.safetensors", NULL, "final"), 0);
    CHECK_EQ_I64(tf_tmp_files("runs/kill/weights"), 0); /* the partial files of the kills are gone */
    CHECK(same_state("runs/ref/weights/last.safetensors", "runs/kill/weights/last.safetensors"));
    CHECK(same_state("runs/ref/weights/best.safetensors", "runs/kill/weights/best.safetensors"));
    CHECK(tf_read("runs/ref/results.csv", a, sizeof a) == 0 && tf_read("runs/kill/results.csv", b, sizeof b) == 0);
    CHECK(strcmp(a, b) == 0);
}

int main(void) {
    if (tf_setup("train_kill", 32)) return 1;
    YP_RUN(test_kill_resume_identical);
    if (!yp_test_cases_failed && !getenv("YP_KEEP")) yp_test_remove_tree(tf_dir);
    else fprintf(stderr, "kept %s for a look (YP_KEEP keeps it always)\n", tf_dir);
    return yp_test_summary();
}
