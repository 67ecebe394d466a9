/* cleanup.c: removal of temporary paths on signals; see cleanup.h. */
#include "stages/common/cleanup.h"

#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>
#include <unistd.h>

#define SLOTS 64
#define PATH_CAP 4096

/* A slot is 0 free, 2 claimed while its path is copied, 1 ready; the
 * handler unlinks only ready slots, so it never sees a half-copied path. */
static char paths[SLOTS][PATH_CAP];
static atomic_int used[SLOTS];

/* A signal is delivered to any thread that does not hold it, so holding
 * signals on the thread that creates a path is not enough: another
 * thread's handler could scan the slots between the creation and the
 * registration. The handler first sets dying, then waits until no
 * creation is under way; a creation starts only while dying is unset
 * (both are sequentially consistent, so one of the two always sees the
 * other), and one that would start later never does. */
static atomic_int creating;
static atomic_int dying;

static void on_signal(int sig) {
    atomic_store(&dying, 1);
    while (atomic_load(&creating))
        ;
    /* Files first, then directories, which are empty only once their files
     * are gone; rmdir of an already unlinked file fails harmlessly. */
    for (int i = 0; i < SLOTS; i++)
        if (atomic_load(&used[i]) == 1)
            unlink(paths[i]);
    for (int i = 0; i < SLOTS; i++)
        if (atomic_load(&used[i]) == 1)
            rmdir(paths[i]);
    signal(sig, SIG_DFL);
    _exit(128 + sig);
}

void sp_cleanup_install(void) {
    static int done;
    if (done)
        return;
    done = 1;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigfillset(&sa.sa_mask);
    int sigs[] = {SIGINT, SIGTERM, SIGHUP, SIGPIPE};
    for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++)
        sigaction(sigs[i], &sa, NULL);
}

void sp_cleanup_create(void (*create)(void *), void *arg) {
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &old);
    atomic_fetch_add(&creating, 1);
    if (atomic_load(&dying)) {
        /* A handler is removing what is registered and will end the
         * process; this thread creates nothing more and waits for it. */
        atomic_fetch_sub(&creating, 1);
        for (;;)
            pause();
    }
    create(arg);
    atomic_fetch_sub(&creating, 1);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
}

int sp_cleanup_add(const char *path) {
    size_t n = strlen(path);
    if (n >= PATH_CAP)
        return -1;
    for (int i = 0; i < SLOTS; i++) {
        int expected = 0;
        if (atomic_compare_exchange_strong(&used[i], &expected, 2)) {
            memcpy(paths[i], path, n + 1);
            atomic_store(&used[i], 1);
            return i;
        }
    }
    return -1;
}

void sp_cleanup_remove(int slot) {
    if (slot >= 0 && slot < SLOTS)
        atomic_store(&used[slot], 0);
}
