/* dynlib.c: libraries loaded on first use; see dynlib.h. */
#include "stages/common/dynlib.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>

/* Loading is rare (once per library per process) and may run on several
 * parse threads at once: one lock for all, and an acquire load so that a
 * thread that sees "loaded" also sees the filled table. */
static pthread_mutex_t load_lock = PTHREAD_MUTEX_INITIALIZER;

static int load_locked(sp_dynlib *lib) {
    void *h = lib->handle = dlopen(lib->soname, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        snprintf(lib->why, sizeof lib->why, "cannot load %s: %s", lib->soname, dlerror());
        return -1;
    }
    for (size_t i = 0; i < lib->n_syms; i++) {
        void *f = dlsym(h, lib->syms[i].name);
        if (!f) {
            snprintf(lib->why, sizeof lib->why, "%s has no function %s (another version?)",
                     lib->soname, lib->syms[i].name);
            /* Left loaded: the process's other libraries may share it. */
            return -1;
        }
        *lib->syms[i].addr = f;
    }
    return 1;
}

int sp_dynlib_load(sp_dynlib *lib, sp_error *err) {
    int state = __atomic_load_n(&lib->state, __ATOMIC_ACQUIRE);
    if (state == 0) {
        pthread_mutex_lock(&load_lock);
        state = lib->state;
        if (state == 0) {
            state = load_locked(lib);
            __atomic_store_n(&lib->state, state, __ATOMIC_RELEASE);
        }
        pthread_mutex_unlock(&load_lock);
    }
    if (state < 0)
        return sp_errorf(err, "%s", lib->why);
    return 0;
}
