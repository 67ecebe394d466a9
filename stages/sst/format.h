/*
 * format.h: the sstpipe SSTable file format, versions 1 and 2. FORMAT.md
 * beside this file is the full specification; this header holds its
 * constants and the footer, the one fixed-layout structure.
 *
 * A version 1 file is three regions, each starting at a multiple of
 * cluster_size:
 *
 *   data    block 0 at offset 0, block i at i * block_size; each block is
 *           exactly block_size bytes, padded with zeros, carries its own
 *           checksum, and holds whole records only. A point lookup is one
 *           aligned read of one block. Zeros pad the region to a
 *           multiple of cluster_size.
 *   index   one entry per data block: varint key_len, its first key,
 *           varint block offset; zeros pad the region to cluster_size.
 *           index_checksum covers the whole padded region.
 *   footer  the last cluster_size bytes; the 128-byte footer at its end,
 *           zeros before it. An empty table is this region alone.
 *
 * All integers are little-endian. Checksums are XXH3-64 (xxhash, seed 0).
 *
 * Version 2 (compressed blocks, block_packed.h) adds a meta region between
 * the index and the footer: the compression, the dictionary and the filter,
 * covered by meta_checksum. Only its data blocks are aligned: the index,
 * the meta region and the 128-byte footer follow the last block unpadded,
 * since a small table's padding would otherwise cost more than its
 * compression saves, and they are read once at open, not per lookup.
 *
 * The 128-byte footer: the fields of sst_footer in declaration order up to
 * data_region_length (bytes 0..103), meta_checksum (104..111; version 1:
 * reserved, zero),
 * footer_checksum (112..119), the magic "SSTPIPE1" (120..127).
 * footer_checksum covers the footer region (the last cluster_size bytes;
 * in version 2 the footer alone) up to itself.
 */
#ifndef SSTPIPE_SST_FORMAT_H
#define SSTPIPE_SST_FORMAT_H

#include "stages/common/error.h"

#include <stdbool.h>
#include <stdint.h>

#define SST_MAGIC "SSTPIPE1"
#define SST_FORMAT_VERSION 1
#define SST_FORMAT_VERSION_PACKED 2 /* compressed blocks and the meta region */
#define SST_CHECKSUM_XXH3_64 1
#define SST_FOOTER_BYTES 128

#define SST_MIN_BLOCK_SIZE 512u
#define SST_MAX_BLOCK_SIZE (1u << 20)
#define SST_DEFAULT_BLOCK_SIZE 8192u
#define SST_MIN_CLUSTER_SIZE 512u
#define SST_MAX_CLUSTER_SIZE (1u << 30)
#define SST_DEFAULT_CLUSTER_SIZE 4096u
#define SST_RESTART_INTERVAL 16u
/* The largest dictionary a compressed table's writer trains: on the
 * generated dumps of issue 31 a larger one kept saving more than its
 * bytes, where the CPU of training it grew with the records it is
 * trained on (a hundred times its size). */
#define SST_DEFAULT_DICTIONARY_SIZE (64u << 10)

/* Whether n is a power of two in [lo, hi]: the rule for block and cluster sizes. */
static inline bool sst_pow2_in(uint64_t n, uint64_t lo, uint64_t hi) {
    return n >= lo && n <= hi && (n & (n - 1)) == 0;
}

/* Block trailer without the restart array: entries_len, records, restarts, checksum. */
#define SST_BLOCK_TRAILER_FIXED 20u

/* Byte offsets inside the 128-byte footer. */
#define SST_FOOTER_INDEX_OFFSET 0 /* nine u64, index_offset .. index_checksum */
#define SST_FOOTER_BLOCK_SIZE 72  /* six u32, block_size .. checksum_type */
#define SST_FOOTER_DATA_REGION_LENGTH 96
#define SST_FOOTER_RESERVED 104 /* u64: zero in version 1, meta_checksum in version 2 */
#define SST_FOOTER_CHECKSUM 112
#define SST_FOOTER_MAGIC 120

typedef struct sst_footer {
    uint64_t index_offset;        /* start of the index region */
    uint64_t index_length;        /* bytes of index entries (without padding) */
    uint64_t index_region_length; /* index region, padded to cluster_size */
    uint64_t data_blocks;
    uint64_t records;
    uint64_t key_bytes;   /* sum of key lengths */
    uint64_t value_bytes; /* sum of value lengths */
    uint64_t file_size;
    uint64_t index_checksum; /* XXH3-64 of the whole index region */
    uint32_t block_size;
    uint32_t cluster_size;
    uint32_t max_value_bytes; /* bound every value respects (truncate's max-bytes) */
    uint32_t restart_interval;
    uint32_t format_version;
    uint32_t checksum_type;
    uint64_t data_region_length; /* data_blocks * block_size, padded to cluster_size */
    uint64_t meta_checksum;      /* version 2: XXH3-64 of the meta region; version 1: 0 */
    uint64_t footer_checksum;    /* XXH3-64 of the footer region up to this field */
    /* Not in the file: what the regions after the data blocks are padded
     * to, found from the version (sst_footer_decode) and for a version 2
     * table by its footer checksum (table_check.c): cluster_size in version
     * 1 and in version 2's first layout (written up to commit 9dbe327,
     * every region padded); 1 (none) in version 2. */
    uint32_t tail_align;
} sst_footer;

/* The footer region: the last max(tail_align, 128) bytes of the file. */
static inline uint64_t sst_footer_region_bytes(const sst_footer *f) {
    return f->tail_align > SST_FOOTER_BYTES ? f->tail_align : SST_FOOTER_BYTES;
}

/* Serialises f into 128 bytes, magic included (footer_checksum is written as given). */
void sst_footer_encode(const sst_footer *f, uint8_t out[SST_FOOTER_BYTES]);
/* Reads the fields of 128 bytes, whatever they hold: every rule on them,
 * the magic's and the reserved bytes' too, is table_check.c's. tail_align
 * is set by the version: 1 for version 2, else cluster_size. */
void sst_footer_decode(const uint8_t in[SST_FOOTER_BYTES], sst_footer *f);

/*
 * The largest record a block of block_size can hold, and whether options
 * (block size, value bound) let every possible record fit: a key of up to
 * SP_MAX_KEY_BYTES plus a value of up to max_value_bytes. Checked before any
 * work so that no record is found too large halfway through a build.
 *
 * sst_max_record_bytes is the largest key_len + value_len of a record with
 * a key of SP_MAX_KEY_BYTES that fits alone in an empty block (its entry
 * header, one restart and the fixed trailer counted); 0 when not even such
 * a key with an empty value fits. sst_check_fit passes exactly when
 * SP_MAX_KEY_BYTES + max_value_bytes <= sst_max_record_bytes(block_size),
 * and otherwise names the smallest block size that would.
 */
uint64_t sst_max_record_bytes(uint32_t block_size);
int sst_check_fit(uint32_t block_size, uint32_t max_value_bytes, sp_error *err);

/* The meta region of version 2 (FORMAT.md): its fixed header, then the
 * dictionary, then the filter. */
#define SST_META_HEADER_BYTES 24
#define SST_COMPRESSION_ZSTD 1

typedef struct sst_meta {
    uint32_t compression;       /* SST_COMPRESSION_ZSTD */
    uint32_t dictionary_length; /* 0: frames without a dictionary */
    uint32_t filter_length;     /* 0: no filter */
    uint32_t filter_hashes;
    uint64_t plain_bytes; /* the blocks' groups uncompressed */
} sst_meta;

void sst_meta_encode(const sst_meta *m, uint8_t out[SST_META_HEADER_BYTES]);
void sst_meta_decode(const uint8_t in[SST_META_HEADER_BYTES], sst_meta *m);

/* Rounds n up to a multiple of align (a power of two). */
static inline uint64_t sst_align_up(uint64_t n, uint64_t align) {
    return (n + align - 1) & ~(align - 1);
}

#endif
