/*
 * block_packed.h: one data block of format version 2 (FORMAT.md, "Version
 * 2"), built and read in memory: the block's records in groups of
 * SST_RESTART_INTERVAL, each group a version 1 entry run compressed alone
 * as one zstd frame with the table's dictionary, and a directory of the
 * groups (frame length, plain length, first key) at the block's end, so
 * that a lookup decompresses one group, not the block.
 *
 * A block read whole (scans, merge, verify) is unpacked into a plain
 * buffer of its caller's as a version 1 view (block.h): the groups' entries
 * back to back, restart point i at group i, so that every walk, search and
 * record directory of block.c and block_dir.c works on it unchanged.
 */
#ifndef SSTPIPE_SST_BLOCK_PACKED_H
#define SSTPIPE_SST_BLOCK_PACKED_H

#include "stages/common/error.h"
#include "stages/sst/block.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The most plain (uncompressed entry) bytes one block's groups may hold, a
 * bound a reader's buffer and a hostile block's decompression both rely
 * on. */
static inline size_t sst_packed_plain_max(uint32_t block_size) {
    return (size_t)block_size * 16;
}

/* Whether a record of the longest key and a max_value_bytes value, stored
 * as a group alone and not compressible at all, fits an empty block; the
 * error names the bound otherwise. */
int sst_packed_check_fit(uint32_t block_size, uint32_t max_value_bytes, sp_error *err);

/* A buffer for unpacked groups, grown on demand, owned by whoever holds
 * the views made in it; zero-initialised, released with block_plain_free. */
typedef struct block_plain {
    uint8_t *buf;
    size_t cap;
} block_plain;

void block_plain_free(block_plain *p);

/* ---- reader ---- */

/* A table's dictionary as decompression uses it (none: length 0). */
typedef struct packed_dict packed_dict;

packed_dict *packed_dict_new(const uint8_t *dict, size_t len, sp_error *err);
void packed_dict_free(packed_dict *d);

/* Checks the block's checksum, trailer and directory, unpacks every group
 * into plain and fills v as a version 1 view of them (v->data is plain's).
 * Each group's first entry is checked against its directory key; the walk
 * (block_iter_next) checks the rest as in a version 1 block. */
int packed_open(block_view *v, const uint8_t *data, uint32_t block_size, const packed_dict *d,
                block_plain *plain, const char *what, sp_error *err);

/* The one group of a block a point lookup needs, unpacked: its records as
 * a version 1 view (one restart point, at 0) and the range of keys it
 * covers, from its directory key lo up to the next group's, hi (NULL for
 * the block's last group); lo and hi point into the block. */
typedef struct packed_group_view {
    block_view view;
    const uint8_t *lo, *hi;
    uint32_t lo_len, hi_len;
} packed_group_view;

/* The checksum, trailer and directory as packed_open, the first group's
 * key against first (the index's first key of the block), then only the
 * group that may hold key is decompressed (into plain) and its first entry
 * checked: 1 with *g filled (g->view.data is plain's), 0 when key sorts
 * before the block's first key, -1 corrupt. */
int packed_find_group(const uint8_t *data, uint32_t block_size, const packed_dict *d,
                      const uint8_t *first, uint32_t flen, block_plain *plain, const uint8_t *key,
                      size_t klen, packed_group_view *g, const char *what, sp_error *err);

/* Point lookup: packed_find_group, then the group searched. 1 found
 * (*value points into plain), 0 not, -1 corrupt. */
int packed_find(const uint8_t *data, uint32_t block_size, const packed_dict *d,
                const uint8_t *first, uint32_t flen, block_plain *plain, const uint8_t *key,
                size_t klen, const void **value, size_t *vlen, const char *what, sp_error *err);

/* ---- builder ---- */
typedef struct block_packer block_packer;

/* A builder of blocks of block_size compressed at level with dict (len 0:
 * none). */
block_packer *block_packer_init(uint32_t block_size, const uint8_t *dict, size_t dict_len,
                                int level, sp_error *err);
/* 1: the record was added; 0: the block is full with what it holds (nothing
 * added: the caller finishes the block and adds the record again); -1:
 * compression failed. The caller checked that key > last key, and that
 * the record fits an empty block (sst_packed_check_fit). A block may end
 * before some records it took (block_packer_finish): they are carried
 * into the next, before the records added after them. */
int block_packer_add(block_packer *p, const uint8_t *key, size_t klen, const uint8_t *val,
                     size_t vlen, sp_error *err);
/* No record held, in the block or carried to the next. */
bool block_packer_empty(const block_packer *p);
/* The finished block (block_size bytes, valid until the next reset), or
 * NULL with err; a packer not empty afterwards has records carried over,
 * and a block to finish after the reset. */
const uint8_t *block_packer_finish(block_packer *p, sp_error *err);
/* The first key of the block finished last (the index's key for it). */
const uint8_t *block_packer_first(const block_packer *p, uint32_t *klen);
/* Plain bytes of the block finished last. */
uint64_t block_packer_plain(const block_packer *p);
void block_packer_reset(block_packer *p);
void block_packer_destroy(block_packer *p);

#endif
