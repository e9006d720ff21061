/* train_signal.c - SIGINT and SIGTERM during a training run (yp_train.h): a handler that only
 * records the first signal in a sig_atomic_t flag, which the loop reads between batches; a
 * second one while the run is finishing restores the default action and raises it again, so the
 * process ends at once with the conventional status. Also the mask the loop opens its worker
 * threads under, so that they never take these signals. */
#include <signal.h>
#include <stdatomic.h>
#include <string.h>

#include "yp_train.h"

static volatile sig_atomic_t caught; /* the first signal's number; 0: none */
static atomic_int n_caught;          /* every signal taken, across threads (lock-free: safe in a handler) */
static struct sigaction previous[2];
static int installed;

static const int signals[2] = {SIGINT, SIGTERM};

static void on_signal(int sig) {
    if (atomic_fetch_add(&n_caught, 1) > 0) { /* the second: end now, as without the handler */
        struct sigaction dfl;
        memset(&dfl, 0, sizeof dfl);
        dfl.sa_handler = SIG_DFL;
        sigemptyset(&dfl.sa_mask);
        sigaction(sig, &dfl, NULL);
        raise(sig); /* blocked inside this handler: delivered, with the default action, on return */
        return;
    }
    caught = sig;
}

int yp_train_signals_catch(void) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sa.sa_flags = SA_RESTART; /* reads, writes and waits go on: the loop decides when to stop */
    sigemptyset(&sa.sa_mask);
    for (int i = 0; i < 2; i++) sigaddset(&sa.sa_mask, signals[i]); /* one handler at a time per thread */
    caught = 0;
    atomic_store(&n_caught, 0);
    for (int i = 0; i < 2; i++)
        if (sigaction(signals[i], &sa, &previous[i])) {
            while (i-- > 0) sigaction(signals[i], &previous[i], NULL);
            return -1;
        }
    installed = 1;
    return 0;
}

void yp_train_signals_release(void) {
    if (!installed) return;
    for (int i = 0; i < 2; i++) sigaction(signals[i], &previous[i], NULL);
    installed = 0;
}

const volatile sig_atomic_t *yp_train_signal_flag(void) { return &caught; }

void yp_train_signals_block(sigset_t *old) {
    sigset_t s;
    sigemptyset(&s);
    for (int i = 0; i < 2; i++) sigaddset(&s, signals[i]);
    pthread_sigmask(SIG_BLOCK, &s, old);
}

void yp_train_signals_unblock(const sigset_t *old) { pthread_sigmask(SIG_SETMASK, old, NULL); }
