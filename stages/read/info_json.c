/* info_json.c: the footer as JSON; see info_json.h. */
#include "stages/read/info_json.h"

#include "stages/common/version.h"

double info_compactness(const sstpipe_info *f) {
    return (double)(f->key_bytes + f->value_bytes) / (double)f->file_size;
}

json_t *info_json(const sstpipe_table *t) {
    sstpipe_info info, *f = &info;
    sstpipe_info_get(t, f);
    return json_pack(
        "{s:s, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:s, s:f, s:s}", "path",
        sstpipe_path(t), "format_version", (json_int_t)f->format_version, "records",
        (json_int_t)f->records, "data_blocks", (json_int_t)f->data_blocks, "file_size",
        (json_int_t)f->file_size, "key_bytes", (json_int_t)f->key_bytes, "value_bytes",
        (json_int_t)f->value_bytes, "block_size", (json_int_t)f->block_size, "cluster_size",
        (json_int_t)f->cluster_size, "max_value_bytes", (json_int_t)f->max_value_bytes,
        "index_bytes", (json_int_t)f->index_bytes, "index_region_bytes",
        (json_int_t)f->index_region_bytes, "restart_interval", (json_int_t)f->restart_interval,
        "checksum", "xxh3-64", "compactness", info_compactness(f), "sstpipe_version", sp_version());
}
