/*
 * uring_drain.h: waits for the reads still in flight on an io_uring, for a
 * loop that stopped reaping them at an error: their buffers may go only
 * once they have landed. Header-only, so that libsstpipe (batched lookups)
 * and profile (its queue depth) each compile it in, each with its own
 * liburing.
 */
#ifndef SSTPIPE_COMMON_URING_DRAIN_H
#define SSTPIPE_COMMON_URING_DRAIN_H

#include <liburing.h>
#include <stddef.h>

static inline void sp_uring_drain(struct io_uring *ring, size_t inflight) {
    while (inflight) {
        struct io_uring_cqe *cqe;
        if (io_uring_wait_cqe(ring, &cqe) < 0)
            break;
        io_uring_cqe_seen(ring, cqe);
        inflight--;
    }
}

#endif
