/*
 * block_cache.h: the bounded cache of a version 2 table's groups unpacked
 * for lookups, and the calling thread's buffer that a compressed block's
 * values are copied into.
 *
 * A mapped version 2 table's lookup needs the one group of its block that
 * may hold its key unpacked (block_packed.h: a lookup decompresses no
 * other) and a record directory of it (block_dir.h) to stay warm; kept for
 * every group looked up, a long-running server's memory would grow with
 * the groups it touched. The cache keeps them within a budget of bytes
 * (the unpacked records, restart point, range keys, directory and entry
 * all counted), shared by every thread that looks up the table, evicting
 * the least recently used group when a new one needs the room. One mutex
 * guards it, held for a hit's search and the value's copy (a directory
 * search and a memcpy), never while a block is read or decompressed.
 *
 * An evicted group's bytes go while another thread may still want a value
 * it returned, so a value is never a pointer into the cache: it is copied
 * into the calling thread's values, which stay valid until that thread's
 * next sst_values_reset (libsstpipe calls it at the start of each lookup
 * on a table, so a value lives until the thread's next lookup, as under
 * direct I/O; a batch's values live together).
 *
 * Scans (cursors, merge, verify) never come here: they unpack each block
 * into a buffer of their own and move on, so a scan cannot flood the
 * cache, and version 1 blocks, read in place, need no cache at all.
 */
#ifndef SSTPIPE_SST_BLOCK_CACHE_H
#define SSTPIPE_SST_BLOCK_CACHE_H

#include "stages/common/error.h"
#include "stages/sst/block.h"
#include "stages/sst/block_dir.h"
#include "stages/sst/block_packed.h"

#include <stddef.h>
#include <stdint.h>

/* The budget of a table's cache unless its opener says otherwise
 * (sstpipe_options_set_block_cache, [serve] block_cache). */
#define SST_BLOCK_CACHE_DEFAULT ((size_t)64 << 20)

typedef struct sst_block_cache sst_block_cache;

/* A cache for a table of n_blocks blocks holding at most budget bytes (0:
 * none is kept, every lookup unpacks its group). NULL when out of memory. */
sst_block_cache *sst_block_cache_new(uint64_t n_blocks, size_t budget);
/* Frees every group held; NULL is a no-op. No other call may race it. */
void sst_block_cache_free(sst_block_cache *c);

/* sst_block_cache_find's answer when no group of block i held holds key. */
#define SST_BLOCK_CACHE_MISS 2

/* Looks key up in block i's group whose range holds it when the cache
 * holds that group: 1 found (*value a copy in the thread's values), 0
 * absent, -1 corrupt or out of memory (what holds the problem as ": what",
 * as block.c's errors with an empty name), SST_BLOCK_CACHE_MISS when it is
 * not held. Thread-safe. */
int sst_block_cache_find(sst_block_cache *c, uint64_t i, const uint8_t *key, size_t klen,
                         const void **value, size_t *vlen, sp_error *what);

/* Block i's group g, checked and unpacked (the caller's buffer and block,
 * left as they are), with its directory d (the cache's from here on): its
 * records and range are copied into the cache, least recently used groups
 * evicted to make room (a group larger than the budget is not kept), then
 * key is looked up as sst_block_cache_find does. Another thread may have
 * added the group meanwhile; its copy is then used. Thread-safe. */
int sst_block_cache_add_find(sst_block_cache *c, uint64_t i, const packed_group_view *g,
                             block_dir *d, const uint8_t *key, size_t klen, const void **value,
                             size_t *vlen, sp_error *what);

/* The bytes the cache holds now, as its budget counts them. Thread-safe. */
size_t sst_block_cache_bytes(sst_block_cache *c);

/* ---- the calling thread's buffers (freed when the thread ends) ---- */

/* The thread's buffer to unpack a group into before it is cached, or
 * NULL when out of memory. */
block_plain *sst_thread_plain(void);
/* Ends the thread's values: those copied since are the next lookup's. */
void sst_values_reset(void);
/* A copy of the n bytes at v in the thread's values, valid until the
 * thread's next sst_values_reset (never NULL for n 0), or NULL when out of
 * memory. Copies made since the last reset all stay valid together. */
const void *sst_values_copy(const void *v, size_t n);

#endif
