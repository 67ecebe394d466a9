/* info_json.c: the footer as JSON; see info_json.h. */
#include "stages/read/info_json.h"

#include "stages/common/version.h"
#include "stages/sst/table_set.h"

#include <stdio.h>
#include <string.h>

double info_compactness(const sstpipe_info *f) {
    return (double)(f->key_bytes + f->value_bytes) / (double)f->file_size;
}

double info_bytes_per_record(uint64_t file_size, uint64_t records) {
    return records ? (double)file_size / (double)records : 0;
}

double info_compression_ratio(uint64_t value_bytes, uint64_t data_blocks, uint32_t block_size) {
    uint64_t blocks = data_blocks * block_size;
    return blocks ? (double)value_bytes / (double)blocks : 0;
}

double info_filter_bits_per_key(const sstpipe_info *f, const sstpipe_compression *c) {
    return f->records ? 8.0 * (double)c->filter_bytes / (double)f->records : 0;
}

/* A table set's shards: each one's path, range and counts. */
static json_t *shards_json(const sstpipe_table *t) {
    json_t *a = json_array();
    for (size_t i = 0; a && i < sstpipe_shard_count(t); i++) {
        sstpipe_table *s = sstpipe_shard(t, i);
        sstpipe_info f;
        sstpipe_info_get(s, &f);
        const void *lo, *hi;
        size_t lol, hil;
        sstpipe_shard_range(t, i, &lo, &lol, &hi, &hil);
        if (json_array_append_new(
                a, json_pack("{s:s, s:o, s:o, s:I, s:I, s:I}", "path", sstpipe_path(s), "lo",
                             table_set_bound_json(lo, lol), "hi", table_set_bound_json(hi, hil),
                             "records", (json_int_t)f.records, "data_blocks",
                             (json_int_t)f.data_blocks, "file_size", (json_int_t)f.file_size)) !=
            0) {
            json_decref(a);
            return NULL;
        }
    }
    return a;
}

json_t *info_json(const sstpipe_table *t) {
    sstpipe_info info, *f = &info;
    sstpipe_info_get(t, f);
    json_t *o = json_pack(
        "{s:s, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:s, s:f, s:s}", "path",
        sstpipe_path(t), "format_version", (json_int_t)f->format_version, "records",
        (json_int_t)f->records, "data_blocks", (json_int_t)f->data_blocks, "file_size",
        (json_int_t)f->file_size, "key_bytes", (json_int_t)f->key_bytes, "value_bytes",
        (json_int_t)f->value_bytes, "block_size", (json_int_t)f->block_size, "cluster_size",
        (json_int_t)f->cluster_size, "max_value_bytes", (json_int_t)f->max_value_bytes,
        "index_bytes", (json_int_t)f->index_bytes, "index_region_bytes",
        (json_int_t)f->index_region_bytes, "restart_interval", (json_int_t)f->restart_interval,
        "checksum", "xxh3-64", "compactness", info_compactness(f), "sstpipe_version", sp_version());
    if (o && (json_object_set_new(o, "bytes_per_record",
                                  json_real(info_bytes_per_record(f->file_size, f->records))) ||
              json_object_set_new(o, "compression_ratio",
                                  json_real(info_compression_ratio(f->value_bytes, f->data_blocks,
                                                                   f->block_size)))))
        return json_decref(o), NULL;
    if (o && sstpipe_is_set(t) &&
        (json_object_set_new(o, "table_set", json_true()) ||
         json_object_set_new(o, "shards", shards_json(t))))
        return json_decref(o), NULL;
    if (o && !sstpipe_is_set(t) && json_object_set_new(o, "table_set", json_false()))
        return json_decref(o), NULL;
    /* A version 1 table has no compression fields. */
    sstpipe_compression z;
    sstpipe_compression_get(t, &z);
    if (o && strcmp(z.method, "none") != 0 &&
        (json_object_set_new(o, "compression", json_string(z.method)) ||
         json_object_set_new(o, "plain_bytes", json_integer((json_int_t)z.plain_bytes)) ||
         json_object_set_new(o, "dictionary_bytes", json_integer((json_int_t)z.dictionary_bytes)) ||
         json_object_set_new(o, "filter_bytes", json_integer((json_int_t)z.filter_bytes)) ||
         json_object_set_new(o, "filter_bits_per_key", json_real(info_filter_bits_per_key(f, &z)))))
        return json_decref(o), NULL;
    return o;
}
