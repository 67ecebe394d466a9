/*
 * recstream.h: the record stream that flows between stages on pipes.
 *
 * Format (all integers little-endian):
 *
 *   header  "SSTPRS01" (8 bytes)
 *           u32 version (1)
 *           u32 flags: bit 0 RS_SORTED (keys strictly increasing, memcmp)
 *           u32 max_value_bytes: every value is at most this long (0: unbounded)
 *           u32 reserved, 0
 *   record  u8 'R', u32 key_len, u32 value_len, key bytes, value bytes
 *   end     u8 'E', u64 number of records
 *
 * The end marker makes a truncated stream (a stage that died mid-pipe) an
 * error rather than a shorter, silently wrong output. Nothing may follow it.
 * The header's bound lets `write` refuse block sizes a record could not fit
 * before reading any record.
 */
#ifndef SSTPIPE_COMMON_RECSTREAM_H
#define SSTPIPE_COMMON_RECSTREAM_H

#include "stages/common/error.h"
#include "stages/common/record.h"

#include <stdint.h>

#define RS_MAGIC "SSTPRS01"
#define RS_VERSION 1
#define RS_SORTED 1u
#define RS_HEADER_BYTES 24
#define RS_MAX_VALUE_BYTES 0xFFFFFFFFu

typedef struct rs_header {
    uint32_t flags;
    uint32_t max_value_bytes;
} rs_header;

/* ---- writer ---- */
typedef struct rs_writer rs_writer;

/* Writes the header to fd. name is used in error messages ("stdout", a path). */
rs_writer *rs_writer_init(int fd, const char *name, const rs_header *h, sp_error *err);
int rs_writer_put(rs_writer *w, const sp_record *rec, sp_error *err);
/* Writes the end marker and flushes. Does not close fd. */
int rs_writer_finish(rs_writer *w, sp_error *err);
void rs_writer_destroy(rs_writer *w);
/* A sink that writes into w. */
sp_sink rs_writer_sink(rs_writer *w);

/* ---- reader ---- */
typedef struct rs_reader rs_reader;

/* Reads and checks the header from fd. */
rs_reader *rs_reader_init(int fd, const char *name, sp_error *err);
const rs_header *rs_reader_header(const rs_reader *r);
/*
 * Reads the next record into rec (pointers valid until the next call).
 * value_cap > 0 keeps at most value_cap bytes of each value in memory and
 * skips the rest (rec->value_len is then min(stored length, value_cap));
 * value_cap == 0 keeps whole values. Returns 1 for a record, 0 at the end
 * marker, -1 on error (naming the stream and byte offset).
 */
int rs_reader_next(rs_reader *r, uint64_t value_cap, sp_record *rec, sp_error *err);
uint64_t rs_reader_offset(const rs_reader *r);
void rs_reader_destroy(rs_reader *r);

#endif
