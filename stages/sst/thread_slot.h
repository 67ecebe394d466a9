/*
 * thread_slot.h: one lazily made object per thread, freed when the thread
 * ends.
 *
 * Lookups run on many threads at once and each needs scratch space of its
 * own that outlives one call (a direct-I/O buffer, a decompression
 * context, the unpacked block and the values handed back). A slot is a
 * static of the file that owns the object; the first call of a thread
 * makes the object, later calls return it, and the thread's exit frees it
 * (a pthread key's destructor). Declared once here so that each owner
 * states only how its object is made and freed.
 */
#ifndef SSTPIPE_SST_THREAD_SLOT_H
#define SSTPIPE_SST_THREAD_SLOT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>

typedef struct sst_thread_slot {
    void *(*make)(void);        /* a new object, or NULL when out of memory */
    void (*destroy)(void *obj); /* frees what make returned */
    atomic_int state;           /* 0 key not made, 1 made, -1 could not be made */
    pthread_key_t key;
} sst_thread_slot;

#define SST_THREAD_SLOT(make_fn, destroy_fn)                                                       \
    { .make = (make_fn), .destroy = (destroy_fn) }

/* The calling thread's object; made on first use when make is true. NULL
 * when it is not made yet (make false) or cannot be made (out of memory, or
 * no pthread key left). Thread-safe. */
void *sst_thread_slot_get(sst_thread_slot *slot, bool make);

#endif
