/*
 * run_file.h: sorted runs in scratch files, written and read back through
 * buffers the sorter carves from its memory budget.
 *
 * Runs are regions of a few anonymous scratch files (one per part of the
 * sorter, see sorter.c, plus those of the merge passes), each region naming
 * its file, so thousands of runs cost a few file descriptors. A record in a
 * run is
 *
 *   u32 key_len, u32 value_len, u64 seq (native byte order), key, value
 *
 * the same layout as in the sorter's arena (chunk.h). seq is the record's
 * place in the input when runs are built on several threads (sorter.h),
 * which decides between equal keys of different runs (merge.h); 0 when one
 * thread adds every record. The file never outlives the process, hence
 * native order.
 */
#ifndef SSTPIPE_SORT_RUN_FILE_H
#define SSTPIPE_SORT_RUN_FILE_H

#include "stages/common/error.h"
#include "stages/common/record.h"
#include "stages/sort/merge.h"

#include <stddef.h>
#include <stdint.h>

#define RUN_RECORD_HEADER 16

typedef struct run_region {
    int fd; /* the scratch file the run is in */
    uint64_t off, len;
} run_region;

/* Appends records at the end of a scratch file. */
typedef struct run_writer {
    int fd;
    const char *name;
    uint8_t *buf;
    size_t cap, used;
    uint64_t off; /* file offset where buf[0] goes */
} run_writer;

void run_writer_init(run_writer *w, int fd, const char *name, uint8_t *buf, size_t cap,
                     uint64_t start);
/* Appends one record (value in memory) with its seq. */
int run_writer_put(run_writer *w, const sp_record *rec, uint64_t seq, sp_error *err);
int run_writer_flush(run_writer *w, sp_error *err);
/* File offset just past the last record put (after a flush: the run's end). */
uint64_t run_writer_end(const run_writer *w);

/* Reads one run's records in order: a merge source (merge.h). */
typedef struct run_reader {
    merge_source src; /* the current record's key, prefix, value length and seq */
    int fd;
    const char *name;
    uint8_t *buf;
    size_t cap, pos, len;
    uint64_t next_off, end; /* next file byte to read into buf; end of the region */
    /* The current record's value is in buf, or, when too large for buf,
     * still in the file at value_off (read into big on request). */
    const uint8_t *value;
    uint64_t value_off;
    size_t skip; /* bytes of buf the current record occupies */
    uint8_t *big;
    size_t big_cap;
} run_reader;

/* buf must hold at least a record header and the longest key. big
 * (big_cap bytes, may be shared by the readers of one merge) holds a value
 * too large for buf while the merge passes it on. */
void run_reader_init(run_reader *r, const char *name, run_region reg, uint8_t *buf, size_t cap,
                     uint8_t *big, size_t big_cap);
/* Moves to the next record: 1, or 0 past the last, -1 on error. */
int run_reader_next(run_reader *r, sp_error *err);
/* The current record's value. */
int run_reader_value(run_reader *r, const uint8_t **value, sp_error *err);

#endif
