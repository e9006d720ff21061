/* test_train_kill.c - no training run loses data to a kill: a reference run of EPOCHS epochs, then
 * the same run killed with SIGKILL again and again, each time resumed with --resume, at points a
 * seeded RNG draws (YP_KILL_SEED overrides the seed; the seed is printed): at a random time
 * (within the first half of what is left of the run, scaled by the reference run's wall time), or
 * through the test-only shim (tests/cli/ckpt_shim.c) inside a checkpoint write (after a random number
 * of bytes, in its fsync, just before or just after its rename). After every kill each checkpoint
 * on disk loads whole (header, metadata, every tensor) and last.safetensors never goes back an
 * epoch; the resumed run removes the partial files a kill left. The run that ends is identical to
 * the uninterrupted one, which here means: results.csv byte for byte (every epoch's losses and
 * metrics), and last and best, which the end of the run strips (train.py's strip_optimizer: the
 * EMA's weights and BN statistics in fp16), with every tensor bit for bit and the same metadata.
 * A kill inside the strip (the shim's files after the final epoch's) leaves last unstripped at the
 * final epoch, or stripped; the final --resume strips it. (The metadata's plan and options are
 * not compared: they name the run folder and the host memory available when it was planned.
 * tests/cli/test_train_signal.c compares the whole unstripped state of a resumed run.) */
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

/* After a kill: every checkpoint in the run's weights folder whole, last's epoch into *epoch
 * (EPOCHS once it is stripped: the run is complete). */
static void check_on_disk(int64_t *epoch) {
    int64_t e = -1, be = -1;
    CHECK(tf_ckpt_whole("runs/kill/weights/last.safetensors", &e));
    CHECK(tf_ckpt_whole("runs/kill/weights/best.safetensors", &be));
    if (e == -1) CHECK_EQ_I64(be, -1); /* the end strips best first: a stripped last has a stripped best */
    else CHECK(be <= e + 1);           /* best is written first: at most one epoch ahead of last */
    *epoch = e == -1 ? EPOCHS : e;
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
        /* killed after the strip: nothing left to resume (killed after the final checkpoint but
         * before the strip, the final --resume strips) */
        if (e == EPOCHS) done = 1;
    }
    CHECK(kills >= 5);
    CHECK(in_write >= 1 && in_rename >= 1);
    if (!done) CHECK_EQ_I64(tf_run("train --resume runs/kill/weights/last.safetensors", NULL, "final"), 0);
    CHECK_EQ_I64(tf_tmp_files("runs/kill/weights"), 0); /* the partial files of the kills are gone */
    int64_t e = 0;
    CHECK(tf_ckpt_whole("runs/kill/weights/last.safetensors", &e) && e == -1); /* stripped */
    CHECK(tf_same_state("runs/ref/weights/last.safetensors", "runs/kill/weights/last.safetensors"));
    CHECK(tf_same_state("runs/ref/weights/best.safetensors", "runs/kill/weights/best.safetensors"));
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
