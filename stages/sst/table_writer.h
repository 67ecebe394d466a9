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
#include "stages/common/record.h"

#include <stdint.h>
#include <stdio.h>

typedef struct table_options {
    uint32_t block_size;      /* power of two, SST_MIN_BLOCK_SIZE..SST_MAX_BLOCK_SIZE */
    uint32_t cluster_size;    /* power of two, SST_MIN_CLUSTER_SIZE..SST_MAX_CLUSTER_SIZE */
    uint32_t max_value_bytes; /* bound on every value; must fit a block with the largest key */
} table_options;

typedef struct table_stats {
    uint64_t records;
    uint64_t data_blocks;
    uint64_t key_bytes;
    uint64_t value_bytes;
    uint64_t file_size;
} table_stats;

typedef struct table_writer table_writer;

void table_options_init(table_options *opts);
/* Checks options (sst_check_fit included) before creating anything. */
table_writer *table_writer_init(const char *path, const table_options *opts, sp_error *err);
/* Appends a record (value in memory). Keys must strictly increase. */
int table_writer_add(table_writer *w, const sp_record *rec, sp_error *err);
sp_sink table_writer_sink(table_writer *w);
/* Writes index and footer, fsyncs and renames into place. */
int table_writer_finish(table_writer *w, sp_error *err);
const table_stats *table_writer_stats(const table_writer *w);
/* The `-v` line: "write: records=N data_blocks=N key_bytes=N value_bytes=N file_size=N". */
void table_stats_print(FILE *out, const table_stats *s);
/* Frees w; if not finished, removes the temporary file. */
void table_writer_destroy(table_writer *w);

#endif
