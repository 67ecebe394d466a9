/* format.c: the footer's byte layout and the record-fits-a-block rule; see format.h. */
#include "stages/sst/format.h"

#include "stages/common/record.h"
#include "stages/common/size.h"
#include "stages/sst/coding.h"

#include <string.h>

void sst_footer_encode(const sst_footer *f, uint8_t out[SST_FOOTER_BYTES]) {
    memset(out, 0, SST_FOOTER_BYTES);
    const uint64_t u64s[9] = {f->index_offset, f->index_length, f->index_region_length,
                              f->data_blocks,  f->records,      f->key_bytes,
                              f->value_bytes,  f->file_size,    f->index_checksum};
    for (int i = 0; i < 9; i++)
        sst_put_u64(out + SST_FOOTER_INDEX_OFFSET + 8 * i, u64s[i]);
    const uint32_t u32s[6] = {f->block_size,       f->cluster_size,   f->max_value_bytes,
                              f->restart_interval, f->format_version, f->checksum_type};
    for (int i = 0; i < 6; i++)
        sst_put_u32(out + SST_FOOTER_BLOCK_SIZE + 4 * i, u32s[i]);
    sst_put_u64(out + SST_FOOTER_DATA_REGION_LENGTH, f->data_region_length);
    sst_put_u64(out + SST_FOOTER_RESERVED, f->meta_checksum);
    sst_put_u64(out + SST_FOOTER_CHECKSUM, f->footer_checksum);
    memcpy(out + SST_FOOTER_MAGIC, SST_MAGIC, 8);
}

void sst_footer_decode(const uint8_t in[SST_FOOTER_BYTES], sst_footer *f) {
    uint64_t *u64s[9] = {&f->index_offset, &f->index_length, &f->index_region_length,
                         &f->data_blocks,  &f->records,      &f->key_bytes,
                         &f->value_bytes,  &f->file_size,    &f->index_checksum};
    for (int i = 0; i < 9; i++)
        *u64s[i] = sst_get_u64(in + SST_FOOTER_INDEX_OFFSET + 8 * i);
    uint32_t *u32s[6] = {&f->block_size,       &f->cluster_size,   &f->max_value_bytes,
                         &f->restart_interval, &f->format_version, &f->checksum_type};
    for (int i = 0; i < 6; i++)
        *u32s[i] = sst_get_u32(in + SST_FOOTER_BLOCK_SIZE + 4 * i);
    f->data_region_length = sst_get_u64(in + SST_FOOTER_DATA_REGION_LENGTH);
    f->meta_checksum = sst_get_u64(in + SST_FOOTER_RESERVED);
    f->footer_checksum = sst_get_u64(in + SST_FOOTER_CHECKSUM);
    f->tail_align = f->format_version == SST_FORMAT_VERSION_PACKED ? 1 : f->cluster_size;
}

void sst_meta_encode(const sst_meta *m, uint8_t out[SST_META_HEADER_BYTES]) {
    sst_put_u32(out, m->compression);
    sst_put_u32(out + 4, m->dictionary_length);
    sst_put_u32(out + 8, m->filter_length);
    sst_put_u32(out + 12, m->filter_hashes);
    sst_put_u64(out + 16, m->plain_bytes);
}

void sst_meta_decode(const uint8_t in[SST_META_HEADER_BYTES], sst_meta *m) {
    m->compression = sst_get_u32(in);
    m->dictionary_length = sst_get_u32(in + 4);
    m->filter_length = sst_get_u32(in + 8);
    m->filter_hashes = sst_get_u32(in + 12);
    m->plain_bytes = sst_get_u64(in + 16);
}

uint64_t sst_max_record_bytes(uint32_t block_size) {
    /* The record alone in a block: one restart, the fixed trailer, and its
     * entry header (shared = 0, key_len of a maximal key, value_len). */
    uint64_t overhead = 4 + SST_BLOCK_TRAILER_FIXED + 1 + sst_varint_len(SP_MAX_KEY_BYTES);
    if (block_size < overhead + SP_MAX_KEY_BYTES + 1)
        return 0;
    uint64_t avail = block_size - overhead - SP_MAX_KEY_BYTES; /* value_len varint + value */
    uint64_t v = avail - 1;
    while (v + sst_varint_len(v) > avail)
        v--;
    return SP_MAX_KEY_BYTES + v;
}

int sst_check_fit(uint32_t block_size, uint32_t max_value_bytes, sp_error *err) {
    uint64_t need = (uint64_t)SP_MAX_KEY_BYTES + max_value_bytes;
    if (need <= sst_max_record_bytes(block_size))
        return 0;
    char have[32], fit[32];
    sp_format_size(block_size, have, sizeof have);
    for (uint64_t bs = SST_MIN_BLOCK_SIZE; bs <= SST_MAX_BLOCK_SIZE; bs *= 2)
        if (need <= sst_max_record_bytes((uint32_t)bs))
            return sp_errorf(err,
                             "block size %s cannot hold a record with a %u-byte key and a "
                             "%u-byte value; the smallest block size that fits it is %s",
                             have, SP_MAX_KEY_BYTES, max_value_bytes,
                             sp_format_size(bs, fit, sizeof fit));
    return sp_errorf(
        err,
        "no block size (up to %s) can hold a record with a %u-byte key and a "
        "%u-byte value; values must be at most %llu bytes",
        sp_format_size(SST_MAX_BLOCK_SIZE, fit, sizeof fit), SP_MAX_KEY_BYTES, max_value_bytes,
        (unsigned long long)(sst_max_record_bytes(SST_MAX_BLOCK_SIZE) - SP_MAX_KEY_BYTES));
}
