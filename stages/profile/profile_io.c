/*
 * profile_io.c: timed point lookups; see profile_io.h.
 *
 * A call is timed from just before it to just after it returns: for
 * sstpipe_get, the routing to a set's shard, the index search, the block's
 * read (in place through the mapping, or one O_DIRECT pread in cold mode),
 * its checks and the search in it; for sstpipe_get_many, all of that for a
 * batch, its blocks read together (an io_uring batch in cold mode). A key
 * of a batch is given the batch's time, the time its value took to come
 * back to the caller, as diskspd counts latency under outstanding IOs.
 *
 * Reads are counted by the kernel, per thread, in /proc/thread-self/io: its
 * count of read system calls (syscr) and of the bytes the disk delivered
 * (read_bytes), read just before and just after each call, outside the
 * timed interval. Reading the count is itself one read system call, taken
 * off each delta. io_uring reads make no read system call, so where the
 * library reads through io_uring a call's reads are the blocks the disk
 * delivered to it. Nothing in the library is asked what it did: what is
 * counted is what the kernel saw the call do.
 *
 * Warm (mapped) lookups are counted around the job's whole run instead,
 * each call given its share, as a key of a batch is given its batch's: a
 * mapped lookup makes no read call, and a system call between two warm
 * lookups would leave the second to run in the caches and branch history
 * the kernel's entry and exit disturbed, timing the sampling rather than
 * the lookup (before profile timed sstpipe_get, it sampled nothing
 * between warm lookups, and a program calling sstpipe_get in a loop does
 * not either). A stray read of a mapped lookup still shows in the run's
 * count.
 */
#include "stages/profile/profile_io.h"

#include "stages/common/clock.h"

#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define THREAD_IO "/proc/thread-self/io"

/* The calling thread's reads so far, as the kernel counts them. */
typedef struct io_count {
    uint64_t calls; /* read system calls (syscr) */
    uint64_t bytes; /* bytes the disk delivered (read_bytes) */
} io_count;

static int io_sample(int fd, io_count *c, sp_error *err) {
    char text[1024];
    ssize_t n = pread(fd, text, sizeof text - 1, 0);
    if (n <= 0)
        return sp_errorf_errno(err, "%s: cannot read the thread's read counts", THREAD_IO);
    text[n] = 0;
    const char *calls = strstr(text, "syscr: "), *bytes = strstr(text, "\nread_bytes: ");
    if (!calls || !bytes)
        return sp_errorf(err, "%s: no syscr or read_bytes line", THREAD_IO);
    c->calls = strtoull(calls + strlen("syscr: "), NULL, 10);
    c->bytes = strtoull(bytes + strlen("\nread_bytes: "), NULL, 10);
    return 0;
}

/* Records the m keys from i of one call, found[k] their answers, that
 * took ns and read reads. */
static int finish_call(lookup_job *j, uint64_t i, uint64_t m, const void *const *found, uint64_t ns,
                       double reads) {
    for (uint64_t k = 0; k < m; k++) {
        j->lat_ns[i + k] = ns;
        j->reads[i + k] = reads / (double)m;
        bool hit = found[k] != NULL;
        if (hit == j->keys->absent[i + k])
            return sp_errorf(&j->err, "%s: lookup %llu: a key %s the file was %s",
                             sstpipe_path(j->t), (unsigned long long)(i + k),
                             j->keys->absent[i + k] ? "absent from" : "drawn from",
                             hit ? "found" : "not found");
        if (hit)
            j->hits++;
        else
            j->misses++;
    }
    j->busy_ns += ns;
    return 0;
}

/* One timed call for the m keys from i: sstpipe_get when the job looks up
 * one key at a time, sstpipe_get_many otherwise; its reads counted around
 * it unless the job counts its whole run's (run gives each call its
 * share). */
static int timed_call(lookup_job *j, int io_fd, uint64_t i, uint64_t m, const void **keys,
                      size_t *klens, const void **values, size_t *vlens) {
    const profile_keys *pk = j->keys;
    for (uint64_t k = 0; k < m; k++) {
        keys[k] = pk->bytes + pk->start[i + k];
        klens[k] = (size_t)(pk->start[i + k + 1] - pk->start[i + k]);
    }
    bool each = j->reads_are != LOOKUP_RUN_CALLS;
    io_count before, after;
    if (each && io_sample(io_fd, &before, &j->err))
        return -1;
    char *msg = NULL;
    uint64_t t0 = sp_clock_ns();
    int rc = j->batch == 1 ? sstpipe_get(j->t, keys[0], klens[0], &values[0], &vlens[0], &msg)
                           : sstpipe_get_many(j->t, (size_t)m, keys, klens, values, vlens, &msg);
    uint64_t ns = sp_clock_ns() - t0;
    if (rc < 0) {
        sp_errorf(&j->err, "%s", msg ? msg : "out of memory");
        sstpipe_free(msg);
        return -1;
    }
    if (each && io_sample(io_fd, &after, &j->err))
        return -1;
    if (j->batch == 1 && rc == 0)
        values[0] = NULL;
    double reads = 0;
    if (each) {
        uint64_t disk = after.bytes - before.bytes;
        j->bytes += disk;
        reads = j->reads_are == LOOKUP_READ_CALLS
                    ? (double)(after.calls - before.calls - 1) /* less the sample's own */
                    : (double)disk / (double)j->block_size;
    }
    return finish_call(j, i, m, values, ns, reads);
}

/* A run counted whole, from start to end: each of its keys is given an
 * equal share of its read calls (less the sample's own), and its bytes
 * are the job's. */
static void share_run(lookup_job *j, const io_count *start, const io_count *end) {
    double share = (double)(end->calls - start->calls - 1) / (double)j->count;
    for (uint64_t k = j->first; k < j->first + j->count; k++)
        j->reads[k] = share;
    j->bytes += end->bytes - start->bytes;
}

static int run(lookup_job *j) {
    int io_fd = open(THREAD_IO, O_RDONLY | O_CLOEXEC);
    if (io_fd < 0)
        return sp_errorf_errno(&j->err, "%s: cannot open", THREAD_IO);
    unsigned b = j->batch;
    const void **keys = calloc(b, sizeof *keys), **values = calloc(b, sizeof *values);
    size_t *klens = calloc(b, sizeof *klens), *vlens = calloc(b, sizeof *vlens);
    int rc = 0;
    if (!keys || !values || !klens || !vlens)
        rc = sp_errorf(&j->err, "out of memory for a batch of %u keys", b);
    bool whole = j->reads_are == LOOKUP_RUN_CALLS && j->count > 0;
    io_count start, stop;
    if (rc == 0 && whole)
        rc = io_sample(io_fd, &start, &j->err);
    uint64_t end = j->first + j->count;
    for (uint64_t i = j->first; i < end && rc == 0; i += b) {
        uint64_t m = end - i < b ? end - i : b;
        rc = timed_call(j, io_fd, i, m, keys, klens, values, vlens);
    }
    if (rc == 0 && whole && (rc = io_sample(io_fd, &stop, &j->err)) == 0)
        share_run(j, &start, &stop);
    free(keys);
    free(values);
    free(klens);
    free(vlens);
    close(io_fd);
    return rc;
}

void *lookup_job_run(void *arg) {
    lookup_job *j = arg;
    j->rc = run(j);
    return NULL;
}
