/*
 * profile_io.c: timed point lookups; see profile_io.h.
 *
 * A lookup is timed from before the index search to after the block search:
 * index search in memory, one aligned read of block_size bytes, the block's
 * checks, the search inside it. Warm lookups at queue depth 1 read the block
 * in place through the reader's mapping (sst_reader_map), where each block
 * is checked in full on its first lookup only; the others pread or io_uring
 * it into a buffer and check it every time. With io_uring, a lookup's time also
 * includes the time its read waited behind the others in flight, as
 * diskspd counts latency under outstanding IOs.
 *
 * What is counted is what happened, where it happened: a block searched
 * when its search has answered; a read when a pread returned or an io_uring
 * read completed, with the bytes it returned (a short pread shows up as a
 * second read of that lookup). A mapped lookup makes no read call, so it
 * counts none: its block is read in place, by page faults the process does
 * not see (stages/profile/README.md).
 *
 * In a table set a lookup first picks its shard (shard_of: a binary search
 * of the set's bounds, timed with the rest) and then runs as above on that
 * shard's reader and descriptor.
 *
 * Every read, single or through io_uring, is the block source's
 * (stages/sst/block_source.h), on the shard's lookup descriptor: profile
 * times the reads every reader makes.
 */
#include "stages/profile/profile_io.h"

#include "stages/common/clock.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const uint8_t *key_of(const profile_keys *k, uint64_t i, size_t *klen) {
    *klen = (size_t)(k->start[i + 1] - k->start[i]);
    return k->bytes + k->start[i];
}

/* The shard whose range holds key: the table itself when not a set. */
static const profile_shard *shard_of(const lookup_job *j, const uint8_t *key, size_t klen) {
    return j->set ? &j->shards[table_set_find(j->set, key, klen)] : j->shards;
}

/* Records lookup i, timed from t0: found is the search's answer (-1: an
 * error, already in j->err) in block b (-1: no block may hold the key, none
 * was searched), after reads read calls. */
static int finish_lookup(lookup_job *j, const profile_shard *sh, uint64_t i, int found, int64_t b,
                         uint64_t t0, uint32_t reads) {
    if (found < 0)
        return -1;
    j->lat_ns[i] = sp_clock_ns() - t0;
    j->reads[i] = reads;
    if (b >= 0)
        j->blocks++;
    if (found != !j->keys->absent[i])
        return sp_errorf(&j->err, "%s: lookup %llu: a key %s the file was %s",
                         sst_reader_path(sh->r), (unsigned long long)i,
                         j->keys->absent[i] ? "absent from" : "drawn from",
                         found ? "found" : "not found");
    if (found)
        j->hits++;
    else
        j->misses++;
    return 0;
}

/* Checks block b, read into buf, and searches it for key i (0 when no block
 * may hold the key). */
static int search(lookup_job *j, const profile_shard *sh, uint64_t i, int64_t b,
                  const uint8_t *buf) {
    if (b < 0)
        return 0;
    size_t klen;
    const uint8_t *key = key_of(j->keys, i, &klen);
    const void *val;
    size_t vlen;
    return sst_reader_search_block(sh->r, (uint64_t)b, buf, key, klen, &val, &vlen, &j->err);
}

/* Warm lookups through the mapped data region: the block is read in place,
 * with no system call or copy in front of it. */
static int run_mapped(lookup_job *j) {
    int rc = 0;
    for (uint64_t i = j->first; i < j->first + j->count && rc == 0; i++) {
        size_t klen;
        const uint8_t *key = key_of(j->keys, i, &klen);
        const void *val;
        size_t vlen;
        uint64_t t0 = sp_clock_ns();
        const profile_shard *sh = shard_of(j, key, klen);
        int64_t b = sst_reader_find_block(sh->r, key, klen);
        int found =
            b < 0 ? 0
                  : sst_reader_get_in_block(sh->r, (uint64_t)b, key, klen, &val, &vlen, &j->err);
        rc = finish_lookup(j, sh, i, found, b, t0, 0);
    }
    return rc;
}

static int run_sync(lookup_job *j) {
    const sst_footer *f = sst_reader_footer(j->shards[0].r); /* one block size in a set */
    uint32_t bs = f->block_size;
    uint8_t *buf;
    if (posix_memalign((void **)&buf, 4096, bs) != 0)
        return sp_errorf(&j->err, "out of memory for a %u-byte block", bs);
    int rc = 0;
    for (uint64_t i = j->first; i < j->first + j->count && rc == 0; i++) {
        size_t klen;
        const uint8_t *key = key_of(j->keys, i, &klen);
        uint64_t t0 = sp_clock_ns();
        const profile_shard *sh = shard_of(j, key, klen);
        int64_t b = sst_reader_find_block(sh->r, key, klen);
        uint32_t reads = 0;
        if (b >= 0) {
            rc = sst_blocks_read(sst_reader_blocks(sh->r), (uint64_t)b, buf, &reads, &j->err);
            if (rc == 0)
                j->bytes += bs;
        }
        if (rc == 0)
            rc = finish_lookup(j, sh, i, search(j, sh, i, b, buf), b, t0, reads);
    }
    free(buf);
    return rc;
}

/* A lookup whose read is in flight, in the slot its tag names. */
typedef struct slot {
    uint64_t i;
    const profile_shard *sh;
    int64_t block;
    uint64_t t0;
    uint8_t *buf;
} slot;

static int run_uring(lookup_job *j) {
    const sst_footer *f = sst_reader_footer(j->shards[0].r); /* one block size in a set */
    uint32_t bs = f->block_size;
    unsigned q = j->queue_depth;
    sst_block_ring *ring = sst_block_ring_new(q, &j->err);
    if (!ring)
        return -1;
    slot *slots = calloc(q, sizeof *slots);
    unsigned *free_slots = calloc(q, sizeof *free_slots);
    uint8_t *bufs = NULL;
    if (posix_memalign((void **)&bufs, 4096, (size_t)q * bs) != 0)
        bufs = NULL;
    int rc = 0;
    if (!slots || !free_slots || !bufs) {
        rc = sp_errorf(&j->err, "out of memory for %u block buffers", q);
        goto out;
    }
    unsigned n_free = q;
    for (unsigned s = 0; s < q; s++) {
        slots[s].buf = bufs + (size_t)s * bs;
        free_slots[s] = s;
    }
    uint64_t next = j->first, end = j->first + j->count;
    while (rc == 0) {
        while (rc == 0 && n_free && next < end) {
            size_t klen;
            uint64_t i = next++;
            const uint8_t *key = key_of(j->keys, i, &klen);
            uint64_t t0 = sp_clock_ns();
            const profile_shard *sh = shard_of(j, key, klen);
            int64_t b = sst_reader_find_block(sh->r, key, klen);
            if (b < 0) {
                rc = finish_lookup(j, sh, i, 0, b, t0, 0);
                continue;
            }
            unsigned k = free_slots[--n_free];
            slot *s = &slots[k];
            *s = (slot){.i = i, .sh = sh, .block = b, .t0 = t0, .buf = s->buf};
            sst_block_ring_add(ring, sst_reader_blocks(sh->r), (uint64_t)b, s->buf, k);
        }
        uint64_t k;
        int res;
        int got = rc ? 0 : sst_block_ring_next(ring, &k, &res, &j->err);
        if (got <= 0) {
            rc = rc ? rc : got;
            break;
        }
        slot *s = &slots[k];
        if (res > 0)
            j->bytes += (uint64_t)res;
        rc = sst_blocks_read_result(sst_reader_blocks(s->sh->r), (uint64_t)s->block, res, &j->err);
        if (rc == 0)
            rc = finish_lookup(j, s->sh, s->i, search(j, s->sh, s->i, s->block, s->buf), s->block,
                               s->t0, 1);
        free_slots[n_free++] = (unsigned)k;
    }
out:
    sst_block_ring_free(ring);
    free(slots);
    free(free_slots);
    free(bufs);
    return rc;
}

void *lookup_job_run(void *arg) {
    lookup_job *j = arg;
    j->rc = j->queue_depth > 1 ? run_uring(j) : j->mapped ? run_mapped(j) : run_sync(j);
    return NULL;
}

int lookup_uring_probe(unsigned queue_depth, sp_error *err) {
    sst_block_ring *ring = sst_block_ring_new(queue_depth, err);
    if (!ring)
        return -1;
    sst_block_ring_free(ring);
    return 0;
}
