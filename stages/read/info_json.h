/*
 * info_json.h: what a table's footer says, as the one JSON object that
 * `sstpipe info --json` prints and `sstpipe serve` answers on /v1/info, so
 * the two can never disagree. Read through libsstpipe.
 */
#ifndef SSTPIPE_READ_INFO_JSON_H
#define SSTPIPE_READ_INFO_JSON_H

#include "stages/sst/sstpipe.h"

#include <jansson.h>

/* Key and value bytes over the file size. */
double info_compactness(const sstpipe_info *info);
/* The data blocks' records uncompressed over the blocks' bytes (1 for a
 * version 1 table; 0 for one without blocks). */
double info_compression_ratio(const sstpipe_info *info, const sstpipe_compression *c);
/* The absent-key filter's bits over the records (0 for none). */
double info_filter_bits_per_key(const sstpipe_info *info, const sstpipe_compression *c);

/* A new JSON object (NULL when out of memory or the path is not UTF-8).
 * Thread-safe: it reads only t's footer. Of a table set: the sums, with
 * "table_set": true and "shards" (each shard's path, lo and hi as hex or
 * null, records, data_blocks, file_size); of a table "table_set": false.
 * A compressed (version 2) table's adds "compression", "compression_ratio",
 * "plain_bytes", "dictionary_bytes", "filter_bytes" and
 * "filter_bits_per_key". */
json_t *info_json(const sstpipe_table *t);

#endif
