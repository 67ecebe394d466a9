/*
 * verify_blocks.c: checking the data blocks for verify.c, on every core:
 * worker threads read and check disjoint ranges of blocks, and their
 * findings are merged in file order.
 *
 * Work. The data region is cut into chunks of the buf_cap bytes verify
 * reads at once. Each worker takes the next chunk and reads it into a
 * buffer of its own a piece of PIECE_BYTES at a time (whole blocks),
 * checking each piece while it is still in the core's cache: the copy
 * that read makes costs less than a mapping of the page cache, whose
 * first touch of each freshly mapped page is a fault (dear in a virtual
 * machine) that the kernel's copy, through its own mapping of the page
 * cache, does not pay; a piece much larger than the core's cache is read
 * from memory again by the check (tests/bench/RESULTS.md, the note on
 * verify, says when and why the mapping went). The pieces are read and
 * each block decoded by the block source (stages/sst/block_source.h), as
 * every reader's are. A read also gives an error, not
 * SIGBUS, if the file shrinks meanwhile. On a cold file one
 * worker's chunk is read from the disk while another's is checked, and
 * the kernel reads ahead of each. A worker runs at most two chunks ahead
 * of the merge, which bounds what is held. Where one worker would do, the
 * calling thread is that worker, filling each chunk just before its merge.
 *
 * Merge. Each chunk keeps what it finds in a run of its own, and the
 * calling thread merges the runs in file order as they are done, so the
 * report is the one a single front-to-back walk gives, for any number of
 * threads: the same problems in the same order, the same counts, the same
 * first error. The one check that reaches across the start of a run, its
 * first block's first key against the previous block's last key, is
 * recorded in the run and made at the merge. A chunk that could not be
 * read ends the check at the merge, after every chunk before it.
 *
 * Walking. Each block's records are walked with the table walk that
 * libsstpipe's iterator uses (stages/sst/table_walk.h), so verify and every
 * reader agree on what a block holds and on the order across blocks; verify
 * adds what a reader does not need to look at (padding, UTF-8, the value
 * bound, the index as read here, every key against the filter) and walks on past a problem, naming
 * its block and file offset.
 */
#include "stages/verify/verify_check.h"
#include "stages/verify/verify_problems.h"

#include "stages/common/cores.h"
#include "stages/common/fileio.h"
#include "stages/common/key.h"
#include "stages/sst/block.h"
#include "stages/sst/block_source.h"
#include "stages/sst/coding.h"
#include "stages/sst/table_walk.h"
#include "stages/verify/verify_utf8.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

/* ---------------------------------------------------------------- runs */

/* A block's index entry: its first key. */
typedef struct index_entry {
    const uint8_t *key;
    uint32_t klen;
} index_entry;

/* What checking blocks [first, end) found, to be merged in order. */
typedef struct run {
    const checker *c;
    const sst_blocks *src; /* where the blocks are read and decoded */
    uint64_t first, end;
    bool stop_at_bad;
    /* problems, in the order found: up to max_problems kept, all counted */
    verify_problem *problems;
    size_t n, cap;
    uint64_t count;
    uint64_t records, key_bytes, value_bytes, blocks, unreadable;
    bool stopped; /* stop_at_bad: a block did not open */
    /* The first comparison with the previous block's last key, which lies
     * before the run: made at the merge, after count_before problems. */
    bool deferred;
    uint64_t count_before;
    int64_t deferred_block;
    uint64_t deferred_at;
    uint32_t first_len;
    uint8_t first_key[SP_MAX_KEY_BYTES];
    sst_walk walk;            /* over the run's blocks; it knows the last key walked */
    const uint8_t *ip, *iend; /* the index entries of its blocks still to come */
} run;

static void run_problem(run *r, int64_t block, uint64_t offset, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static void run_problem(run *r, int64_t block, uint64_t offset, const char *fmt, ...) {
    r->count++;
    /* The report keeps no more than max_problems, however the runs merge. */
    va_list ap;
    va_start(ap, fmt);
    problem_list_add(&r->problems, &r->n, &r->cap, r->c->rep->opts.max_problems, block, offset, fmt,
                     ap);
    va_end(ap);
}

/* Checks one data block, against its index entry ie (NULL: none);
 * returns false when it does not even open. */
static bool check_block(run *r, uint64_t i, const uint8_t *data, const index_entry *ie,
                        bool report_open) {
    const checker *c = r->c;
    uint64_t off = i * c->bs;
    sst_walk *w = &r->walk;
    const block_view *v = &w->view;
    const block_iter *it = &w->it;
    sp_error e = {0};
    /* The walk keeps the previous block's last key before a failed decode
     * can lose it; the source returns the problem, and verify reports it
     * at the block's offset and goes on. */
    sst_walk_start(w);
    if (sst_blocks_decode(r->src, data, &w->plain, &w->view, &e)) {
        if (report_open)
            run_problem(r, (int64_t)i, off, "%s", block_msg(&e));
        r->unreadable++;
        return false;
    }
    r->blocks++;
    /* A version 2 block's padding is checked where it is unpacked. */
    uint32_t pad_end = c->bs - SST_BLOCK_TRAILER_FIXED - 4 * v->n_restarts;
    size_t nz = r->src->packed ? SIZE_MAX
                               : sp_first_nonzero(data + v->entries_len, pad_end - v->entries_len);
    if (nz < pad_end - v->entries_len)
        run_problem(r, (int64_t)i, off + v->entries_len + nz,
                    "non-zero byte between the entries and the trailer");
    for (;;) {
        int rc = sst_walk_next(w, &e);
        if (rc < 0) {
            run_problem(r, (int64_t)i, off + w->entry_pos, "%s", block_msg(&e));
            r->unreadable++;
            break;
        }
        if (rc == 0)
            break;
        uint64_t at = off + w->entry_pos;
        if (it->index == 1) {
            if (w->have_last) {
                if (!sst_walk_first_in_order(w))
                    run_problem(r, (int64_t)i, at,
                                "first key does not sort after the previous block's last key");
            } else {
                r->deferred = true;
                r->count_before = r->count;
                r->deferred_block = (int64_t)i;
                r->deferred_at = at;
                memcpy(r->first_key, it->key, it->key_len);
                r->first_len = it->key_len;
            }
            if (ie && (ie->klen != it->key_len || memcmp(ie->key, it->key, it->key_len) != 0))
                run_problem(r, (int64_t)i, at,
                            "index entry %llu's key differs from the block's "
                            "first key",
                            (unsigned long long)i);
        }
        if (!verify_utf8_valid(it->key, it->key_len, NULL))
            run_problem(r, (int64_t)i, at, "key of record %u is not valid UTF-8", it->index - 1);
        const table_set_shard *sh = c->rep->opts.shard;
        if (sh && !table_set_shard_holds(sh, it->key, it->key_len))
            run_problem(r, (int64_t)i, at,
                        "key of record %u lies outside the shard's range in %s (shard %s)",
                        it->index - 1, c->rep->opts.tableset, sh->file);
        uint64_t clear;
        if (c->filter.bytes &&
            !sst_filter_may_hold(&c->filter, sst_filter_hash(it->key, it->key_len), &clear))
            run_problem(r, -1, c->filter_offset + clear,
                        "the filter rules out the key of record %u of block %llu, which the "
                        "table holds: a damaged filter (the key's bit in this byte is clear)",
                        it->index - 1, (unsigned long long)i);
        if (it->value_len > c->max_value)
            run_problem(r, (int64_t)i, at,
                        "value of record %u has %u bytes, over the bound of %llu", it->index - 1,
                        it->value_len, (unsigned long long)c->max_value);
        size_t bad;
        if (!verify_utf8_valid(it->value, it->value_len, &bad))
            run_problem(r, (int64_t)i, (uint64_t)(it->value - data) + off + bad,
                        "value of record %u is not valid UTF-8", it->index - 1);
        r->records++;
        r->key_bytes += it->key_len;
        r->value_bytes += it->value_len;
    }
    /* A block that yields a record always yields its first one, so a run
     * defers at most one comparison: the walk compares the next block with
     * this one's last key. */
    return true;
}

static void run_start(run *r, uint64_t first, uint64_t end) {
    r->first = first;
    r->end = end;
    r->n = 0;
    r->count = r->records = r->key_bytes = r->value_bytes = r->blocks = r->unreadable = 0;
    r->stopped = r->deferred = false;
    sst_walk_init(&r->walk);
}

/* The index entry of the run's next block from its chunk's entries (NULL
 * past the entries that parse). They parsed when the index was checked;
 * read again, they are still taken apart with every bound checked. */
static const index_entry *next_entry(run *r, uint64_t i, index_entry *e) {
    uint32_t klen;
    uint64_t off;
    const uint8_t *key;
    if (i >= r->c->n_entries || !(key = sst_get_varint32(r->ip, r->iend, &klen)) ||
        klen > (uint64_t)(r->iend - key) ||
        !(r->ip = sst_get_varint(key + klen, r->iend, SST_VARINT64_MAX, &off))) {
        r->iend = r->ip = NULL;
        return NULL;
    }
    *e = (index_entry){.key = key, .klen = klen};
    return e;
}

/* Checks the run's n blocks from block first on, whose bytes are at data. */
static void check_blocks_at(run *r, uint64_t first, uint64_t n, const uint8_t *data) {
    uint32_t bs = r->c->bs;
    for (uint64_t k = 0; k < n; k++) {
        index_entry e;
        const index_entry *ie = next_entry(r, first + k, &e);
        if (!check_block(r, first + k, data + k * bs, ie, !r->stop_at_bad) && r->stop_at_bad) {
            r->stopped = true;
            return;
        }
    }
}

static void deferred_check(checker *c, const run *r) {
    if (c->have_last && sp_key_cmp(c->last_key, c->last_len, r->first_key, r->first_len) >= 0)
        checker_problem(c, r->deferred_block, r->deferred_at,
                        "first key does not sort after the previous block's last key");
}

/* Adds a run's findings to the report, as if its blocks had been checked
 * right after the ones merged before. */
static void merge(checker *c, const run *r) {
    for (size_t k = 0; k < r->n; k++) {
        if (r->deferred && r->count_before == k)
            deferred_check(c, r);
        const verify_problem *p = &r->problems[k];
        checker_problem(c, p->block, p->offset, "%s", p->what);
    }
    /* Past the kept problems it can only be counted, as they filled the list. */
    if (r->deferred && r->count_before >= r->n)
        deferred_check(c, r);
    c->rep->problem_count += r->count - r->n;
    c->records += r->records;
    c->key_bytes += r->key_bytes;
    c->value_bytes += r->value_bytes;
    c->rep->blocks += r->blocks;
    c->unreadable_blocks += r->unreadable;
    uint32_t last_len;
    const uint8_t *last = sst_walk_last_key(&r->walk, &last_len);
    if (last) {
        memcpy(c->last_key, last, last_len);
        c->last_len = last_len;
        c->have_last = true;
    }
}

/* ---------------------------------------------------------------- threads */

/* Bytes read and checked at once: enough that a read costs little per
 * byte, few enough that the piece is still in the core's cache (L2) when
 * its blocks are checked (see the top of the file). */
#define PIECE_BYTES (256u * 1024)

/* One chunk in flight: its blocks, its bytes, what checking them found. */
typedef struct slot {
    int rc; /* the fill's: -1 with err when the chunk could not be read */
    sp_error err;
    run r;
    bool done; /* checked (or failed to fill), waiting for the merge */
} slot;

typedef struct pipeline {
    const checker *c;
    sst_blocks src; /* the data region, read piece by piece */
    uint64_t n_blocks, per_chunk, n_chunks;
    uint64_t per_piece; /* blocks read at once, PIECE_BYTES or one */
    size_t n_slots;     /* chunk q uses slot q % n_slots */
    slot *slots;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    uint64_t next;   /* the next chunk a worker takes */
    uint64_t merged; /* chunks merged, their slots free again */
    bool quit;
} pipeline;

/* A worker thread and the buffers it reads its pieces and its chunks'
 * index entries into, always the same ones, so that the copy writes into
 * the core's cache. */
typedef struct worker {
    pthread_t tid;
    pipeline *pl;
    uint8_t *buf;  /* per_piece blocks */
    uint8_t *ibuf; /* a chunk's index entries */
    size_t icap;
} worker;

/* Reads the index entries of chunk q's blocks into w->ibuf and points the
 * run at them (at none past the entries that parse). */
static int read_entries(pipeline *pl, worker *w, run *r, uint64_t q, sp_error *err) {
    const checker *c = pl->c;
    r->ip = r->iend = NULL;
    if (r->first >= c->n_entries)
        return 0;
    uint64_t from = c->chunk_entry[q];
    uint64_t to = r->end < c->n_entries ? c->chunk_entry[q + 1] : c->f.index_length;
    if (to < from)
        return 0;
    size_t len = (size_t)(to - from);
    if (len > w->icap) {
        uint8_t *b = realloc(w->ibuf, len);
        if (!b)
            return sp_errorf(err, "%s: out of memory for %zu bytes of index entries", c->rep->path,
                             len);
        w->ibuf = b;
        w->icap = len;
    }
    if (sp_pread_exact(c->fd, w->ibuf, len, c->f.index_offset + from, c->rep->path, err))
        return -1;
    r->ip = w->ibuf;
    r->iend = w->ibuf + len;
    return 0;
}

/* Reads chunk q into the worker's buffer a piece at a time and checks its
 * blocks; what was found stays in s->r. */
static void fill_and_check(pipeline *pl, worker *w, slot *s, uint64_t q) {
    uint64_t first = q * pl->per_chunk;
    uint64_t n = pl->n_blocks - first < pl->per_chunk ? pl->n_blocks - first : pl->per_chunk;
    sp_error_clear(&s->err);
    run_start(&s->r, first, first + n);
    s->rc = read_entries(pl, w, &s->r, q, &s->err);
    for (uint64_t i = first; s->rc == 0 && i < first + n && !s->r.stopped; i += pl->per_piece) {
        uint64_t m = first + n - i < pl->per_piece ? first + n - i : pl->per_piece;
        s->rc = sst_blocks_read_run(&pl->src, i, m, w->buf, &s->err);
        if (s->rc == 0)
            check_blocks_at(&s->r, i, m, w->buf);
    }
}

/* A worker: takes the next chunk while fewer than n_slots wait for the
 * merge, fills and checks it, hands it to the merge; until none is left. */
static void *worker_main(void *arg) {
    worker *w = arg;
    pipeline *pl = w->pl;
    pthread_mutex_lock(&pl->mu);
    for (;;) {
        while (!pl->quit && pl->next < pl->n_chunks && pl->next >= pl->merged + pl->n_slots)
            pthread_cond_wait(&pl->cv, &pl->mu);
        if (pl->quit || pl->next >= pl->n_chunks)
            break;
        uint64_t q = pl->next++;
        slot *s = &pl->slots[q % pl->n_slots];
        pthread_mutex_unlock(&pl->mu);
        fill_and_check(pl, w, s, q);
        pthread_mutex_lock(&pl->mu);
        s->done = true;
        pthread_cond_broadcast(&pl->cv);
    }
    pthread_mutex_unlock(&pl->mu);
    return NULL;
}

int check_blocks(checker *c, uint64_t n, bool stop_at_bad, sp_error *err) {
    if (n == 0)
        return 0;
    pipeline pl = {.c = c, .n_blocks = n, .per_chunk = c->buf_cap / c->bs};
    sst_blocks_init(&pl.src, c->rep->path, c->fd, c->bs, n);
    pl.src.packed = c->dict;
    pl.n_chunks = (n + pl.per_chunk - 1) / pl.per_chunk;
    unsigned threads = c->rep->opts.threads ? c->rep->opts.threads : sp_usable_cores();
    if (threads > pl.n_chunks)
        threads = (unsigned)pl.n_chunks;
    /* Two chunks a worker: one being checked, one checked and waiting for
     * the merge of a slower one before it. */
    pl.n_slots = 2 * (size_t)threads;
    pl.per_piece = PIECE_BYTES > c->bs ? PIECE_BYTES / c->bs : 1;
    pl.slots = calloc(pl.n_slots, sizeof *pl.slots);
    worker *workers = calloc(threads, sizeof *workers);
    bool bufs = workers != NULL;
    for (unsigned k = 0; bufs && k < threads; k++) {
        workers[k].pl = &pl;
        bufs = (workers[k].buf = sp_io_alloc((size_t)pl.per_piece * c->bs)) != NULL;
    }
    if (!pl.slots || !bufs) {
        for (unsigned k = 0; workers && k < threads; k++)
            free(workers[k].buf);
        free(pl.slots);
        free(workers);
        return sp_errorf(err, "%s: out of memory", c->rep->path);
    }
    for (size_t k = 0; k < pl.n_slots; k++)
        pl.slots[k].r = (run){.c = c, .src = &pl.src, .stop_at_bad = stop_at_bad};
    pthread_mutex_init(&pl.mu, NULL);
    pthread_cond_init(&pl.cv, NULL);
    int rc = 0;
    unsigned started = 0;
    /* One worker gains nothing over the calling thread, which then fills and
     * checks each chunk itself just before merging it: a small table (one
     * chunk) costs no thread start, and the report is the same. */
    bool inline_check = threads == 1;
    while (!inline_check && started < threads &&
           pthread_create(&workers[started].tid, NULL, worker_main, &workers[started]) == 0)
        started++;
    if (!inline_check && started < threads)
        rc = sp_errorf(err, "%s: cannot start the threads that read and check the blocks",
                       c->rep->path);
    /* The merge, in file order: the report is the one a single walk from
     * the front gives, whichever worker finished first. */
    for (uint64_t q = 0; rc == 0 && q < pl.n_chunks; q++) {
        slot *s = &pl.slots[q % pl.n_slots];
        if (inline_check) {
            fill_and_check(&pl, &workers[0], s, q);
            s->done = true;
        }
        pthread_mutex_lock(&pl.mu);
        while (!s->done)
            pthread_cond_wait(&pl.cv, &pl.mu);
        pthread_mutex_unlock(&pl.mu);
        if (s->rc) {
            rc = sp_errorf(err, "%s", s->err.msg);
            break;
        }
        c->rep->bytes += (s->r.end - s->r.first) * c->bs;
        merge(c, &s->r);
        if (c->rep->opts.progress) {
            sp_progress_store(&c->rep->opts.progress->in_bytes, c->rep->bytes);
            sp_progress_store(&c->rep->opts.progress->records, c->records);
        }
        bool stopped = s->r.stopped;
        pthread_mutex_lock(&pl.mu);
        s->done = false;
        pl.merged = q + 1;
        pthread_cond_broadcast(&pl.cv);
        pthread_mutex_unlock(&pl.mu);
        if (stopped)
            break;
    }
    pthread_mutex_lock(&pl.mu);
    pl.quit = true;
    pthread_cond_broadcast(&pl.cv);
    pthread_mutex_unlock(&pl.mu);
    for (unsigned k = 0; k < started; k++)
        pthread_join(workers[k].tid, NULL);
    for (unsigned k = 0; k < threads; k++) {
        free(workers[k].buf);
        free(workers[k].ibuf);
    }
    for (size_t k = 0; k < pl.n_slots; k++) {
        free(pl.slots[k].r.problems);
        sst_walk_free(&pl.slots[k].r.walk);
    }
    pthread_cond_destroy(&pl.cv);
    pthread_mutex_destroy(&pl.mu);
    free(pl.slots);
    free(workers);
    return rc;
}
