/*
 * info_json.h: what a table's footer says, as the one JSON object that
 * `sstpipe info --json` prints and `sstpipe serve` answers on /v1/info, so
 * the two can never disagree. Read through libsstpipe.
 */
#ifndef SSTPIPE_READ_INFO_JSON_H
#define SSTPIPE_READ_INFO_JSON_H

#include "stages/sst/sstpipe.h"

#include <jansson.h>
#include <stdint.h>

/* Key and value bytes over the file size. */
double info_compactness(const sstpipe_info *info);
/* The file's bytes over its records (0 for none): what a record costs on
 * disk, index, filter and padding included. */
double info_bytes_per_record(uint64_t file_size, uint64_t records);
/* The stored value bytes (after the cut at max_value_bytes) over the data
 * blocks' bytes on disk (0 for no blocks): a table of either format
 * version, so that tables built with and without compression compare on
 * one scale. Taken as numbers, since the nightly's manifest and tune have
 * a writer's counts, not an open table. */
double info_compression_ratio(uint64_t value_bytes, uint64_t data_blocks, uint32_t block_size);
/* The absent-key filter's bits over the records (0 for none). */
double info_filter_bits_per_key(const sstpipe_info *info, const sstpipe_compression *c);

/* A new JSON object (NULL when out of memory or the path is not UTF-8).
 * Thread-safe: it reads only t's footer. Of a table set: the sums, with
 * "table_set": true and "shards" (each shard's path, lo and hi as hex or
 * null, records, data_blocks, file_size); of a table "table_set": false.
 * Every table's has "bytes_per_record" and "compression_ratio"; a
 * compressed (version 2) table's adds "compression", "plain_bytes",
 * "dictionary_bytes", "filter_bytes" and "filter_bits_per_key". */
json_t *info_json(const sstpipe_table *t);

#endif
