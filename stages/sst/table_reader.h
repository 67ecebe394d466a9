/*
 * table_reader.h: opens an SSTable for lookups and scans.
 *
 * Opening reads and checks the footer and the index (the index stays in
 * memory); a lookup is then one aligned pread of one block, whose checksum is
 * checked before any of it is used. A corrupt block is an error, never data.
 */
#ifndef SSTPIPE_SST_TABLE_READER_H
#define SSTPIPE_SST_TABLE_READER_H

#include "stages/common/error.h"
#include "stages/sst/block.h"
#include "stages/sst/format.h"

#include <stddef.h>
#include <stdint.h>

typedef struct sst_reader sst_reader;

sst_reader *sst_reader_open(const char *path, sp_error *err);
void sst_reader_close(sst_reader *r);

const sst_footer *sst_reader_footer(const sst_reader *r);
const char *sst_reader_path(const sst_reader *r);
int sst_reader_fd(const sst_reader *r);

/* Index: the block that may hold key (-1: key sorts before the first key). */
int64_t sst_reader_find_block(const sst_reader *r, const uint8_t *key, size_t klen);
/* First key of block i (from the in-memory index). */
const uint8_t *sst_reader_block_first_key(const sst_reader *r, uint64_t i, uint32_t *klen);

/* Point lookup: 1 found (*value valid until the next call on r), 0 not found, -1 error. */
int sst_reader_get(sst_reader *r, const uint8_t *key, size_t klen, const uint8_t **value,
                   uint32_t *vlen, sp_error *err);

/* Reads block i into buf (block_size bytes) and opens it (checksum checked). */
int sst_reader_read_block(sst_reader *r, uint64_t i, uint8_t *buf, block_view *v, sp_error *err);

#endif
