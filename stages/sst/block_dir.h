/*
 * block_dir.h: the record directory of a data block: each record's entry
 * offset and the first 8 bytes of its key (sp_key_prefix), built once by
 * walking a block that passed block_open.
 *
 * A block search walks forward from a restart point, up to 16 entries, and
 * each entry's position is known only once the one before it is decoded.
 * On a block in memory that chain of dependent cache misses was most of a
 * warm lookup's time. With the directory, a lookup binary-searches the
 * prefixes (a few contiguous cache lines), decodes only the entries whose
 * prefix equals the key's (usually one), and answers "absent" without
 * touching the block when none does. The mapped reader (table_reader.c)
 * keeps one per checked block.
 */
#ifndef SSTPIPE_SST_BLOCK_DIR_H
#define SSTPIPE_SST_BLOCK_DIR_H

#include "stages/common/error.h"
#include "stages/sst/block.h"

#include <stddef.h>
#include <stdint.h>

typedef struct block_dir block_dir;

/* Walks the opened block v with every check of block_iter_next and returns
 * its directory; NULL with err when an entry is corrupt or memory runs out
 * (what names the block in errors, as in block.h). */
block_dir *block_dir_build(const block_view *v, const char *what, sp_error *err);
/* Bytes the directory takes. */
size_t block_dir_bytes(const block_dir *d);
void block_dir_destroy(block_dir *d);

/* Point lookup in the block at data that d was built from: 1 found (value
 * points into the block), 0 not, -1 corrupt. Every offset and length read
 * from the block is checked against its entries as block_find does. */
int block_dir_find(const block_dir *d, const uint8_t *data, const uint8_t *key, size_t klen,
                   const void **value, size_t *vlen, const char *what, sp_error *err);

#endif
