/*
 * record.h: a record (key, value) as it moves from stage to stage, and the
 * sink a stage pushes records into.
 *
 * In a fused `build` the stages are chained in one process by sinks
 * (extract -> truncate -> sorter); run one by one, each stage's sink is a
 * record-stream writer (recstream.h) on stdout or a file. Either way the
 * same bytes reach the SSTable.
 */
#ifndef SSTPIPE_COMMON_RECORD_H
#define SSTPIPE_COMMON_RECORD_H

#include "stages/common/error.h"

#include <stdint.h>

/* Keys longer than this are bad input: a MediaWiki title is at most 255
 * bytes plus its namespace prefix (the longest, "Gadget definition talk:",
 * is 23), so a longer one means a damaged dump. It also bounds the largest
 * record, which decides the smallest usable block: 512-byte blocks hold
 * values up to 163 bytes, 1 KiB blocks 675, 2 KiB blocks 1699. */
#define SP_MAX_KEY_BYTES 320

/* The default cut of a value (the truncate stage's max_bytes), which the
 * writer also records as a table's max_value_bytes when it is given none:
 * the product's 1 KB. */
#define SP_DEFAULT_MAX_VALUE_BYTES 1024

typedef struct sp_record {
    const uint8_t *key;
    uint32_t key_len;
    /* The value: value_len bytes at value, or, when value_fd >= 0, value_len
     * bytes at offset 0 of value_fd (extract spills page text larger than
     * its memory buffer there; only the record-stream writer sees those). */
    const uint8_t *value;
    uint64_t value_len;
    int value_fd;
} sp_record;

typedef int (*sp_sink_fn)(void *ctx, const sp_record *rec, sp_error *err);

typedef struct sp_sink {
    sp_sink_fn put;
    void *ctx;
} sp_sink;

static inline int sp_sink_put(const sp_sink *s, const sp_record *rec, sp_error *err) {
    return s->put(s->ctx, rec, err);
}

#endif
