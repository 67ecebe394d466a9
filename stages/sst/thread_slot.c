/*
 * thread_slot.c: the per-thread objects of thread_slot.h.
 *
 * The key of a slot is made on the first call from any thread, under one
 * lock shared by all slots (pthread_once takes no argument, so it cannot
 * say which slot to make); later calls read the slot's state without the
 * lock.
 */
#include "stages/sst/thread_slot.h"

#include <stddef.h>

static pthread_mutex_t make_lock = PTHREAD_MUTEX_INITIALIZER;

static bool slot_ready(sst_thread_slot *s) {
    int state = atomic_load_explicit(&s->state, memory_order_acquire);
    if (state == 0) {
        pthread_mutex_lock(&make_lock);
        state = atomic_load_explicit(&s->state, memory_order_relaxed);
        if (state == 0) {
            state = pthread_key_create(&s->key, s->destroy) == 0 ? 1 : -1;
            atomic_store_explicit(&s->state, state, memory_order_release);
        }
        pthread_mutex_unlock(&make_lock);
    }
    return state == 1;
}

void *sst_thread_slot_get(sst_thread_slot *s, bool make) {
    if (!slot_ready(s))
        return NULL;
    void *obj = pthread_getspecific(s->key);
    if (!obj && make && (obj = s->make()) && pthread_setspecific(s->key, obj) != 0) {
        s->destroy(obj);
        obj = NULL;
    }
    return obj;
}
