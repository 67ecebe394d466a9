/*
 * table_reader.h: opens an SSTable for lookups and scans.
 *
 * Opening reads and checks the footer and the index (the index stays in
 * memory); a lookup is then one aligned pread of one block, whose checksum is
 * checked before any of it is used. A corrupt block is an error, never data.
 *
 * A reader that serves many lookups can map the data region instead
 * (sst_reader_map): a lookup then reads its block in place, with no system
 * call and no copy, and each block is checked in full (checksum, trailer,
 * restart points, first key against the index) on its first lookup in the
 * process rather than on every one. This relies on what sstpipe guarantees
 * of a published table: it is never written again, only replaced by rename,
 * which leaves the mapping on the old, unchanged file. A file changed in
 * place behind the mapping is outside that promise: a block checked before
 * the change can then return changed bytes (every offset and length is
 * still checked against the block's bounds, so never bytes from outside
 * it), and a file truncated in place makes the process fault (SIGBUS) on
 * the lost pages, as with any mapped reader.
 */
#ifndef SSTPIPE_SST_TABLE_READER_H
#define SSTPIPE_SST_TABLE_READER_H

#include "stages/common/error.h"
#include "stages/common/title_rules.h"
#include "stages/sst/block.h"
#include "stages/sst/block_source.h"
#include "stages/sst/filter.h"
#include "stages/sst/format.h"

#include <stddef.h>
#include <stdint.h>

typedef struct sst_reader sst_reader;

sst_reader *sst_reader_open(const char *path, sp_error *err);
/*
 * Opens path with every check of sst_reader_open but keeps no index in
 * memory (the index is checked at open through a buffer of a fixed size),
 * so that the reader's memory does not grow with the table: for a caller
 * that visits the blocks in order and reads their first keys with an
 * index cursor of its own (table_check.h), as merge does. The calls that
 * need the index (find_block, block_first_key, get, read_block,
 * check_block, search_block, map) must not be made on it;
 * sst_blocks_check takes the first key from the caller instead.
 */
sst_reader *sst_reader_open_streamed(const char *path, sp_error *err);
void sst_reader_close(sst_reader *r);

const sst_footer *sst_reader_footer(const sst_reader *r);
/* The table's identity (title_rules.h), from its footer. */
sp_table_identity sst_reader_identity(const sst_reader *r);
const char *sst_reader_path(const sst_reader *r);
int sst_reader_fd(const sst_reader *r);
/* The table's data blocks (block_source.h): every read of a block and its
 * check go through them. The second form is for the one who decides how
 * lookups read (sst_blocks_open_direct, or a descriptor of its own as
 * lookup_fd, which the reader then closes). */
const sst_blocks *sst_reader_blocks(const sst_reader *r);
sst_blocks *sst_reader_blocks_mut(sst_reader *r);

/* Index: the block that may hold key (-1: key sorts before the first key). */
int64_t sst_reader_find_block(const sst_reader *r, const uint8_t *key, size_t klen);
/* First key of block i (from the in-memory index). */
const uint8_t *sst_reader_block_first_key(const sst_reader *r, uint64_t i, uint32_t *klen);

/* Point lookup: 1 found (*value, *vlen set), 0 not found (as is an empty
 * key, one longer than SP_MAX_KEY_BYTES, or one the filter rules out, with
 * no block read), -1 error. *value is valid until
 * the next call on r, or, on a mapped reader, until r is closed (of a
 * version 2 table: a copy in the thread's values, valid until the thread's
 * next lookup, block_cache.h); a mapped reader's lookups may run in several
 * threads at once. It is sstpipe_get
 * on a mapped table and has its types, so the library passes the caller's
 * value and length through, with no copy of its own. */
int sst_reader_get(sst_reader *r, const void *key, size_t klen, const void **value, size_t *vlen,
                   sp_error *err);

/* Reads block i into buf (block_size bytes, one pread through the block
 * source) and checks it as sst_reader_check_block does, a version 2
 * block unpacked into the reader's own buffer: v is valid until the next
 * call on r. */
int sst_reader_read_block(sst_reader *r, uint64_t i, uint8_t *buf, block_view *v, sp_error *err);

/* The whole check of block i held at data (read or mapped): the block
 * source's (sst_blocks_check) against the index's first key for it; fills
 * v (a version 2 block unpacked into plain). Thread-safe. */
int sst_reader_check_block(const sst_reader *r, uint64_t i, const uint8_t *data, block_plain *plain,
                           block_view *v, sp_error *err);

/* Version 2 (compressed blocks): the meta region's header, and the
 * dictionary's and filter's bytes; NULL on a version 1 table. */
const sst_meta *sst_reader_meta(const sst_reader *r);
/* A version 2 table's dictionary, *len bytes (0: none; NULL and 0 on a
 * version 1 table), held from open to close. */
const uint8_t *sst_reader_dictionary(const sst_reader *r, size_t *len);
/* The filter for absent keys (filter.h), in memory from open to close; its
 * bytes NULL on a table without one (version 1, or version 2 written
 * before filters were), which every key passes. Point lookups ask it
 * before the index; a caller that reads blocks itself asks it first. */
const sst_filter *sst_reader_filter(const sst_reader *r);
/* Checks block i that the caller read into buf (e.g. with O_DIRECT) as
 * sst_reader_read_block does (a version 2 block as far as the lookup reads
 * it: sst_blocks_find), then looks key up in it: 1 found (*value points
 * into buf, or for a version 2 block is a copy in the thread's values,
 * block_cache.h), 0 not, -1 error. Thread-safe. */
int sst_reader_search_block(const sst_reader *r, uint64_t i, const uint8_t *buf, const uint8_t *key,
                            size_t klen, const void **value, size_t *vlen, sp_error *err);

/* The default budget of sst_reader_map's record directories: at 12 bytes
 * a record, about 11 million records. */
#define SST_READER_DIR_BUDGET ((size_t)128 << 20)

/* The budget in bytes of the cache of unpacked blocks that sst_reader_map
 * makes for a version 2 table (block_cache.h; SST_BLOCK_CACHE_DEFAULT
 * unless set before the map). */
void sst_reader_set_cache(sst_reader *r, size_t budget);

/* Maps the data region read-only for lookups (see the top of this file);
 * sst_reader_get then reads through the mapping. Each block checked keeps a
 * record directory (block_dir.h: a lookup then decodes one entry rather
 * than up to 16) while they take less than dir_budget bytes in all; blocks
 * checked later are searched from their restart points. */
int sst_reader_map(sst_reader *r, size_t dir_budget, sp_error *err);

/* On a mapped reader: looks key up in block i, sst_reader_find_block's
 * answer for it (1 found, 0 not, -1 error). Thread-safe. */
int sst_reader_get_in_block(const sst_reader *r, uint64_t i, const uint8_t *key, size_t klen,
                            const void **value, size_t *vlen, sp_error *err);

/* Whether r reads in place through its mapping: mapped (sst_reader_map) and
 * in format version 1, whose blocks are their records. */
bool sst_reader_in_place(const sst_reader *r);
/* On a reader in place: block i opened in the mapping into v, checked in
 * full on its first use by any of the mapping's readers, as a lookup's
 * block is, and reopened without its checksum after (block_reopen): a
 * short scan's blocks neither copied nor summed again. Thread-safe. */
int sst_reader_mapped_view(const sst_reader *r, uint64_t i, block_view *v, sp_error *err);

#endif
