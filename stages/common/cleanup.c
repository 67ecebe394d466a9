/* cleanup.c: removal of temporary paths on signals; see cleanup.h. */
#include "stages/common/cleanup.h"

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

static void on_signal(int sig) {
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
