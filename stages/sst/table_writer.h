/*
 * table_writer.h: writes an SSTable (FORMAT.md) from records in strictly
 * increasing key order.
 *
 * The file is written under a temporary name beside path and renamed into
 * place by table_writer_finish, so path never holds a partial table.
 * Identical input and options give identical bytes: nothing in the file
 * depends on time, host or thread count.
 */
#ifndef SSTPIPE_SST_TABLE_WRITER_H
#define SSTPIPE_SST_TABLE_WRITER_H

#include "stages/common/error.h"
#include "stages/common/publish.h"
#include "stages/common/record.h"
#include "stages/common/title_rules.h"
#include "stages/sst/block.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct table_options {
    uint32_t block_size;      /* power of two, SST_MIN_BLOCK_SIZE..SST_MAX_BLOCK_SIZE */
    uint32_t cluster_size;    /* power of two, SST_MIN_CLUSTER_SIZE..SST_MAX_CLUSTER_SIZE */
    uint32_t max_value_bytes; /* bound on every value; must fit a block with the largest key */
    /* 0: the index grows in memory (a few bytes a block). Else at most
     * about this many bytes of it are held in memory (at least 4 KiB),
     * the rest goes on to a scratch file in the output's directory
     * (anonymous: nothing is left behind, even by kill -9) and is copied
     * after the data at the end: the same bytes, in memory that does not
     * grow with the table. */
    size_t index_memory;
    /* false: every write is made on the calling thread. true (a build with
     * more than one thread): a full batch of blocks is written by a thread
     * of the writer's own while the caller fills the next one (a second
     * batch, 4 MiB); the same bytes in the same order, a write a batch.
     * The thread starts at the first full batch. With compress as well,
     * a second thread builds the compressed blocks from batches of
     * records the caller copies for it: the same bytes again. */
    bool background;
    /* true: format version 2, blocks of zstd-compressed groups
     * (block_packed.h) at compression_level, with a dictionary of up to
     * dictionary_size bytes (0: none) trained on the values of the first
     * records, which are held in memory until it is: a fiftieth of their
     * bytes at most, and none when it saves less than its own bytes on
     * them. false: version 1. */
    bool compress;
    int compression_level;
    uint32_t dictionary_size;
    /* With compress: the dictionary is trained on each first record's key
     * and value, not its value alone, and sized by both: a title index's
     * values are a byte each, its keys are its text. */
    bool dictionary_from_keys;
} table_options;

typedef struct table_stats {
    uint64_t records;
    uint64_t data_blocks;
    uint64_t key_bytes;
    uint64_t value_bytes;
    uint64_t file_size;
    uint64_t cloned_blocks; /* copied blocks whose extents are shared (FICLONERANGE) */
    /* Nanoseconds table_writer_finish spent making the table durable and
     * putting it in place (fsync, link, rename, the directory's fsync),
     * after its last write. */
    uint64_t commit_ns;
    /* Batches the background thread wrote (table_options.background), and
     * its CPU seconds and the packing thread's: the writes and the
     * compression they took off the caller's thread. */
    uint64_t background_batches;
    double background_cpu_seconds;
    /* Version 2: the blocks' records uncompressed (their groups' plain
     * bytes), and the dictionary's and the filter's bytes. */
    uint64_t plain_bytes;
    uint64_t dictionary_bytes;
    uint64_t filter_bytes;
} table_stats;

typedef struct table_writer table_writer;

void table_options_init(table_options *opts);
/* Checks options (sst_check_fit included) before creating anything. */
table_writer *table_writer_init(const char *path, const table_options *opts, sp_error *err);
/* Appends a record (value in memory). Keys must strictly increase. */
int table_writer_add(table_writer *w, const sp_record *rec, sp_error *err);
sp_sink table_writer_sink(table_writer *w);

/* A finished data block of another table, appended as it is. */
typedef struct table_block_copy {
    int fd;               /* the table it comes from */
    uint64_t offset;      /* its offset there, a multiple of block_size */
    const uint8_t *data;  /* its bytes (checked by the caller): see table_writer_flush_copies */
    const uint8_t *first; /* its first and last key */
    uint32_t first_len;
    const uint8_t *last;
    uint32_t last_len;
    uint64_t records, key_bytes, value_bytes;
    /* Its records (a version 2 block's unpacked): a compressed table adds
     * their keys to its filter and their plain bytes to its sum. */
    const block_view *view;
} table_block_copy;

/*
 * A compressed table's dictionary given rather than trained: merge's, the
 * base's, so that the base's blocks copied into the table still decode.
 * Before the first record; dict is copied.
 */
int table_writer_use_dictionary(table_writer *w, const uint8_t *dict, size_t len, sp_error *err);

/*
 * Appends a block (the same block size and format version, values within
 * this table's bound: the caller checked it; into a compressed table only
 * one compressed with the dictionary given by table_writer_use_dictionary)
 * after the block being filled, which is finished
 * first. Its bytes are written from c->data, which must stay as it is
 * until table_writer_flush_copies (or table_writer_finish) returns; where
 * the file system shares extents, blocks consecutive in the source are
 * instead shared with one FICLONERANGE (see table_writer.c). Its first key
 * must sort after the last key added.
 */
int table_writer_copy_block(table_writer *w, const table_block_copy *c, sp_error *err);
/* Writes the copied blocks' bytes still to be written from the caller's
 * memory, which the caller is about to release or reuse. Made to be
 * called from a hook that cannot fail (table_source_on_release): a failure
 * is kept and returned by the writer's next call. */
void table_writer_flush_copies(table_writer *w);
/* Writes index and footer: the file is complete, not yet in place; its
 * identity (title_rules.h) into *id when id is not NULL. Nothing may be
 * added after it. */
int table_writer_seal(table_writer *w, sp_table_identity *id, sp_error *err);
/* Seals the table if not yet sealed, fsyncs and renames into place. */
int table_writer_finish(table_writer *w, sp_error *err);
/* The same, undoably (sp_outfile_commit_undoable, fileio.h): an earlier
 * file at the path is left at pub->from when pub->exchanged. */
int table_writer_finish_undoable(table_writer *w, sp_published *pub, sp_error *err);
/* Whether table_writer_finish put the table in place: true after it
 * succeeded, and after it failed past the rename (the directory's fsync;
 * its error says so). */
bool table_writer_in_place(const table_writer *w);
const table_stats *table_writer_stats(const table_writer *w);
/* The `-v` line, without its newline, into buf (cap bytes; 256 hold it):
 * "write: records=N data_blocks=N key_bytes=N value_bytes=N file_size=N".
 * The command prints it; the library prints nothing. */
void table_stats_format(const table_stats *s, char *buf, size_t cap);
/* Frees w; if not finished, removes the temporary file. */
void table_writer_destroy(table_writer *w);

#endif
