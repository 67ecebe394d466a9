/*
 * index_cursor.h: a table's index entries (FORMAT.md, "Index region") one
 * after the other, each checked as it is parsed.
 *
 * This is the one parser of the index. The reader's open runs it over the
 * index it keeps in memory (table_reader.c); a merge, which visits every
 * block once in order and must not hold an index as large as the table's
 * block count, runs it over the file itself, through a buffer of a fixed
 * size, so that its memory does not grow with the table. Each entry is
 * checked as at open: it parses, its key is 1 to SP_MAX_KEY_BYTES bytes and
 * sorts after the previous entry's, its offset is i * block_size; past the
 * last block, the entries must end exactly at index_length. The checksum
 * of the index region is the caller's (it covers the padding too).
 */
#ifndef SSTPIPE_SST_INDEX_CURSOR_H
#define SSTPIPE_SST_INDEX_CURSOR_H

#include "stages/common/error.h"
#include "stages/common/record.h"
#include "stages/sst/coding.h"
#include "stages/sst/format.h"

#include <stddef.h>
#include <stdint.h>

typedef struct sst_index_cursor sst_index_cursor;

/* The longest entry (a key of SP_MAX_KEY_BYTES and two varints of their
 * longest encodings), and so the smallest read buffer. */
#define SST_INDEX_ENTRY_MAX_BYTES (SST_VARINT32_MAX + SP_MAX_KEY_BYTES + SST_VARINT64_MAX)

/* A cursor over the index of the table described by f (its footer,
 * checked against the file) at path: over index (the f->index_length
 * bytes of entries) when it is not NULL, else read from fd through a
 * buffer of buf_bytes (at least SST_INDEX_ENTRY_MAX_BYTES). path names
 * the table in errors. */
sst_index_cursor *sst_index_cursor_open(const char *path, int fd, const sst_footer *f,
                                        const uint8_t *index, size_t buf_bytes, sp_error *err);
void sst_index_cursor_destroy(sst_index_cursor *c);

/* The next entry, that of block sst_index_cursor_block() - 1: 1 with *key
 * (valid until the next call) and *klen set, 0 after the last block (the
 * entries' end checked), -1 on a corrupt entry or a failed read. */
int sst_index_cursor_next(sst_index_cursor *c, const uint8_t **key, uint32_t *klen, sp_error *err);
/* Entries passed so far. */
uint64_t sst_index_cursor_block(const sst_index_cursor *c);
/* The index offset (from the start of the entries) of the last entry
 * passed. */
uint64_t sst_index_cursor_entry_pos(const sst_index_cursor *c);

#endif
