/*
 * table_check.h: the one check of an SSTable file's structure, everything
 * of FORMAT.md's "What a reader checks" that is not inside a data block:
 * the footer's fields against the file and each other, the three regions'
 * checksums and zero padding, and every index entry (its key's length and
 * order, its offset, their count). A data block is checked where it is read
 * (block.c, table_walk.c).
 *
 * The rules are written here once and run in one of two modes, so that an
 * opener and verify can never disagree on what a good table is:
 *   stop     (no problem function): the first problem is the error, and the
 *            call returns -1. Every opener runs it: sst_reader_open, and so
 *            the library (tables and table sets), merge, profile and serve.
 *   collect  (a problem function): each problem is handed to it with the
 *            byte offset it is at, and the check goes on wherever the file
 *            can still be read by its footer. verify runs it and lists them.
 * In both modes -1 with err is also a read that failed.
 *
 * The index is walked by a cursor, which is also what merge reads first
 * keys through, block after block, from the file itself (through a buffer
 * of a fixed size, so that its memory does not grow with the table); each
 * entry is checked as it is parsed, so merge relies on the same rules.
 */
#ifndef SSTPIPE_SST_TABLE_CHECK_H
#define SSTPIPE_SST_TABLE_CHECK_H

#include "stages/common/error.h"
#include "stages/common/record.h"
#include "stages/sst/coding.h"
#include "stages/sst/format.h"

#include <stddef.h>
#include <stdint.h>

/* A problem found: in data block `block` (-1: not one block's), at byte
 * `offset` of the file; `what` is one line without the file's name. */
typedef void sst_problem_fn(void *ctx, int64_t block, uint64_t offset, const char *what);

typedef struct sst_check {
    const char *path; /* names the file in errors */
    int fd;
    sst_problem_fn *problem; /* NULL: stop at the first problem */
    void *ctx;
    uint64_t bytes; /* bytes of the file the check has read, for verify's count */
} sst_check;

/*
 * The footer region of the table that ends at byte end (the file's size for
 * an opener; verify may find the table ends earlier), whose last 128 bytes
 * are raw: decodes them into f and checks every footer rule and the
 * region's checksum and padding (setting f->tail_align to the cluster size
 * for a version 2 table of the first layout, whose checksum says so). 1: f describes regions that
 * can be read (every problem found reported); 0 (collect mode only): it does not, and only what
 * could be checked was; -1: the first problem (stop mode) or a failed read.
 */
int sst_check_footer(sst_check *c, const uint8_t raw[SST_FOOTER_BYTES], uint64_t end, sst_footer *f,
                     sp_error *err);

/* What an opener checks first: the file of `size` bytes is long enough to
 * be a table and its footer (read here) passes sst_check_footer. Stop mode. */
int sst_check_open_footer(sst_check *c, uint64_t size, sst_footer *f, sp_error *err);

/* The zero bytes between the last data block and the index region. */
int sst_check_data_padding(sst_check *c, const sst_footer *f, sp_error *err);

/* Each index entry that parses, in order: block i's first key, and where
 * its entry starts in the index (from the index's first byte). */
typedef void sst_index_entry_fn(void *ctx, uint64_t i, const uint8_t *key, uint32_t klen,
                                uint64_t entry_pos);

/*
 * The index region of a table whose footer f passed sst_check_footer: its
 * checksum, its zero padding and every entry, each handed to on_entry (which
 * may be NULL). With index set, the f->index_length bytes of entries are
 * read into it and walked there; without, they are walked through a buffer
 * of a fixed size and nothing of them is kept.
 */
int sst_check_index(sst_check *c, const sst_footer *f, uint8_t *index, sst_index_entry_fn *on_entry,
                    void *ctx, sp_error *err);

/* XXH3-64 of the footer region of region_bytes (sst_footer_region_bytes,
 * at most end) of a table ending at byte end as computed, whatever
 * footer_checksum says: for verify's search of a footer that proves itself.
 * Not counted in c->bytes. */
int sst_check_footer_sum(sst_check *c, uint64_t end, uint64_t region_bytes, uint64_t *sum,
                         sp_error *err);

/*
 * Version 2's meta region (between the index region and the footer region)
 * of a table whose footer f passed sst_check_footer: its checksum, its
 * header's fields against its length, its zero padding. The whole region
 * is read into *body (the caller frees it: the dictionary at
 * SST_META_HEADER_BYTES, the filter after it), its header into m. In
 * collect mode a header that cannot locate the dictionary leaves *body
 * NULL.
 */
int sst_check_meta(sst_check *c, const sst_footer *f, sst_meta *m, uint8_t **body, sp_error *err);

/* ------------------------------------------------------------ the cursor */

typedef struct sst_index_cursor sst_index_cursor;

/* The longest entry (a key of SP_MAX_KEY_BYTES and two varints of their
 * longest encodings), and so the smallest read buffer. */
#define SST_INDEX_ENTRY_MAX_BYTES (SST_VARINT32_MAX + SP_MAX_KEY_BYTES + SST_VARINT64_MAX)

/* A cursor, in stop mode, over the index of the table described by f (its
 * footer, checked) at path: over index (the f->index_length bytes of
 * entries) when it is not NULL, else read from fd through a buffer of
 * buf_bytes (at least SST_INDEX_ENTRY_MAX_BYTES). */
sst_index_cursor *sst_index_cursor_open(const char *path, int fd, const sst_footer *f,
                                        const uint8_t *index, size_t buf_bytes, sp_error *err);
void sst_index_cursor_destroy(sst_index_cursor *c);

/* The next entry, that of block sst_index_cursor_block() - 1, checked: 1
 * with *key (valid until the next call) and *klen set, 0 after the last
 * block (the entries' end checked), -1 on a corrupt entry or a failed read. */
int sst_index_cursor_next(sst_index_cursor *c, const uint8_t **key, uint32_t *klen, sp_error *err);
/* Entries passed so far. */
uint64_t sst_index_cursor_block(const sst_index_cursor *c);

#endif
