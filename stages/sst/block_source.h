/*
 * block_source.h: where every reader of a table gets its data blocks, and
 * the one place a block is checked before any of its bytes are used.
 * LevelDB's ReadBlock (table/format.cc), used by its lookups and by its
 * iterators alike, is the model.
 *
 * A block is read one of four ways, each here once: in place through a
 * read-only mapping of the data region (warm lookups); one aligned pread
 * of block_size bytes (a lookup, buffered or O_DIRECT); several such reads
 * in flight together through io_uring (a batch of lookups), one after the
 * other where the kernel refuses io_uring; and
 * a sequential reader's large preads of runs of blocks (scans, merge,
 * verify), which the kernel's read-ahead follows.
 *
 * Its bytes are then decoded by block.c alone (block_open, block_iter,
 * block_find); the source adds what only the table knows: the block's
 * number and offset in error texts, and its first key against the index,
 * which must name it or lookups would look in the wrong block. A change to
 * how a block is laid out is a change to block.c and this source.
 */
#ifndef SSTPIPE_SST_BLOCK_SOURCE_H
#define SSTPIPE_SST_BLOCK_SOURCE_H

#include "stages/common/error.h"
#include "stages/sst/block.h"
#include "stages/sst/block_packed.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A table's data region: blocks 0 .. count - 1 of block_size bytes from
 * byte 0 of the file. */
typedef struct sst_blocks {
    const char *path; /* names the file in errors */
    int fd;           /* buffered reads: runs, and lookups without lookup_fd */
    int lookup_fd;    /* single-block and batched reads (O_DIRECT), or -1: fd */
    uint32_t block_size;
    uint64_t count;
    const uint8_t *map; /* the data region mapped (sst_blocks_map), or NULL */
    size_t map_len;
    /* Version 2 (compressed blocks, block_packed.h): the table's
     * dictionary; NULL: version 1. */
    const packed_dict *packed;
} sst_blocks;

/* A source over fd (kept by the caller) with nothing mapped. */
void sst_blocks_init(sst_blocks *b, const char *path, int fd, uint32_t block_size, uint64_t count);
/* Unmaps the region and closes lookup_fd; fd is the caller's. */
void sst_blocks_release(sst_blocks *b);

/* Maps the data region read-only for lookups, which touch one block each
 * (no read-ahead around them). A source with no blocks maps nothing. */
int sst_blocks_map(sst_blocks *b, sp_error *err);
/* Block i's bytes in the mapping. */
static inline const uint8_t *sst_blocks_mapped(const sst_blocks *b, uint64_t i) {
    return b->map + i * b->block_size;
}

/* Opens lookup_fd with O_DIRECT and proves that it reads: a file system
 * without O_DIRECT refuses the open, and a device whose logical block is
 * larger than the table's blocks refuses the aligned read, both an error
 * here rather than at the first lookup. */
int sst_blocks_open_direct(sst_blocks *b, sp_error *err);

/* ---- the check ---- */

/* Decodes the block at data (block_open: checksum, trailer, restart
 * points; a version 2 block is unpacked into plain, packed_open) into v,
 * which then lives as long as data and plain are left as they are. The
 * form that names nothing: on failure what holds the problem as ": what",
 * for a caller that reports it at the block's offset itself (verify) or
 * names the block with sst_blocks_error. */
int sst_blocks_decode(const sst_blocks *b, const uint8_t *data, block_plain *plain, block_view *v,
                      sp_error *what);

/* Sets err to a block function's message (given an empty "what") prefixed
 * with block i's name and offset. Returns -1. */
int sst_blocks_error(const sst_blocks *b, uint64_t i, const sp_error *block_err, sp_error *err);

/* The whole check of block i at data: sst_blocks_decode, then its first
 * record against first (flen bytes: the index's key for block i). Every
 * reader that returns a block's records checks it here. Thread-safe. */
int sst_blocks_check(const sst_blocks *b, uint64_t i, const uint8_t *data, const uint8_t *first,
                     uint32_t flen, block_plain *plain, block_view *v, sp_error *err);

/* A point lookup in block i at data, checked as far as the lookup reads
 * it: sst_blocks_check and block_find, or for a version 2 block its
 * directory, its first key against first and the one group that may hold
 * key (packed_find, into plain). 1 found (*value points into data or
 * plain), 0 not, -1 with err naming the block. Thread-safe. */
int sst_blocks_find(const sst_blocks *b, uint64_t i, const uint8_t *data, const uint8_t *first,
                    uint32_t flen, block_plain *plain, const uint8_t *key, size_t klen,
                    const void **value, size_t *vlen, sp_error *err);

/* The one group of version 2 block i at data that may hold key, checked
 * as sst_blocks_find checks it (packed_find_group, into plain): 1 with *g
 * filled, 0 when no group may hold key, -1 with err naming the block.
 * Thread-safe. */
int sst_blocks_find_group(const sst_blocks *b, uint64_t i, const uint8_t *data,
                          const uint8_t *first, uint32_t flen, block_plain *plain,
                          const uint8_t *key, size_t klen, packed_group_view *g, sp_error *err);

/* ---- single reads ---- */

/* Reads block i into buf (block_size bytes, aligned for O_DIRECT) with one
 * pread on lookup_fd (or fd), continued only if the kernel returns less;
 * *calls (when not NULL) is increased by the read calls made. Unchecked:
 * the block then goes through sst_blocks_check. Thread-safe. */
int sst_blocks_read(const sst_blocks *b, uint64_t i, uint8_t *buf, uint32_t *calls, sp_error *err);

/* A completed read of block i that returned res (bytes, or -errno): 0 when
 * it is the whole block, else -1 with err naming the block. */
int sst_blocks_read_result(const sst_blocks *b, uint64_t i, int res, sp_error *err);

/* ---- batches ---- */

/* One read of a batch: block i of b into buf. */
typedef struct sst_block_req {
    const sst_blocks *b;
    uint64_t i;
    uint8_t *buf;
} sst_block_req;

/* Reads the n blocks of req together: through one io_uring with as many in
 * flight as it holds, or one after the other with sst_blocks_read where the
 * kernel refuses io_uring (a seccomp filter, io_uring_disabled); one alone
 * is one pread, as a single lookup's. Unchecked. */
int sst_blocks_read_batch(const sst_block_req *req, size_t n, sp_error *err);

/* Asks the kernel for the n mapped blocks of req at once, so that the page
 * faults of their searches find them read or on their way. Advice: a
 * failure only loses the reads' overlap. */
void sst_blocks_will_need(const sst_block_req *req, size_t n);

/* A queue of block reads in flight through io_uring, kept full as reads
 * complete (a batch's reads, more of them than its depth). */
typedef struct sst_block_ring sst_block_ring;

/* A ring of depth reads, or NULL with err when the kernel refuses. */
sst_block_ring *sst_block_ring_new(unsigned depth, sp_error *err);
/* Waits for the reads still in flight (their buffers may go only once
 * they have landed), then frees the ring. NULL is a no-op. */
void sst_block_ring_free(sst_block_ring *q);
/* Queues a read of block i of b into buf on lookup_fd (or fd), tagged
 * tag; false when depth reads are queued or in flight already. */
bool sst_block_ring_add(sst_block_ring *q, const sst_blocks *b, uint64_t i, uint8_t *buf,
                        uint64_t tag);
/* The next completed read: submits what is queued and waits when none has
 * completed yet. 1 with its tag and result (sst_blocks_read_result), 0
 * when no read is in flight, -1 when the kernel refuses the submission. */
int sst_block_ring_next(sst_block_ring *q, uint64_t *tag, int *res, sp_error *err);

/* ---- the sequential reader ---- */

/* Runs of blocks read in order with large preads on fd into a buffer of
 * its own: blocks [first, first + n) are held. A read takes next_read
 * blocks (fewer at the end), and next_read doubles after each read up to
 * max_read: a scan that stops early reads little, a long one reads large. */
typedef struct sst_block_seq {
    const sst_blocks *b;
    uint8_t *buf;
    uint64_t cap; /* blocks buf has room for */
    uint64_t first, n;
    uint64_t next_read, max_read;
} sst_block_seq;

/* A reader of b holding nothing; reads start at first_read blocks. */
void sst_block_seq_init(sst_block_seq *s, const sst_blocks *b, uint64_t first_read,
                        uint64_t max_read);
/* Changes the read sizes from the next read on. */
void sst_block_seq_set_reads(sst_block_seq *s, uint64_t first_read, uint64_t max_read);
/* Whether block i is held: its bytes stay where they are until a block
 * that is not held is asked for. */
bool sst_block_seq_holds(const sst_block_seq *s, uint64_t i);
/* Block i's bytes, unchecked: held, or read with the blocks after it. NULL
 * with err when the read fails. */
const uint8_t *sst_block_seq_at(sst_block_seq *s, uint64_t i, sp_error *err);
void sst_block_seq_free(sst_block_seq *s);

/* Reads the n blocks from block first on into buf (n * block_size bytes)
 * with one pread on fd, unchecked: the sequential reader's read, for a
 * caller with a buffer of its own (verify's threads). Thread-safe. */
int sst_blocks_read_run(const sst_blocks *b, uint64_t first, uint64_t n, uint8_t *buf,
                        sp_error *err);

#endif
