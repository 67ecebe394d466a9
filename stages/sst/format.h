/*
 * format.h: the sstpipe SSTable file format, version 1. FORMAT.md beside
 * this file is the full specification; this header holds its constants and
 * the footer, the one fixed-layout structure.
 *
 * A file is three regions, each starting at a multiple of cluster_size:
 *
 *   data    block 0 at offset 0, block i at i * block_size; each block is
 *           exactly block_size bytes, padded with zeros, carries its own
 *           checksum, and holds whole records only. A point lookup is one
 *           aligned read of one block.
 *   index   one entry per data block: its first key and its offset.
 *   footer  the last cluster_size bytes; the 128-byte footer at its end,
 *           zeros before it.
 *
 * All integers are little-endian. Checksums are XXH3-64 (xxhash).
 */
#ifndef SSTPIPE_SST_FORMAT_H
#define SSTPIPE_SST_FORMAT_H

#include "stages/common/error.h"

#include <stdint.h>

#define SST_MAGIC "SSTPIPE1"
#define SST_FORMAT_VERSION 1
#define SST_CHECKSUM_XXH3_64 1
#define SST_FOOTER_BYTES 128

#define SST_MIN_BLOCK_SIZE 512u
#define SST_MAX_BLOCK_SIZE (1u << 20)
#define SST_DEFAULT_BLOCK_SIZE 8192u
#define SST_MIN_CLUSTER_SIZE 512u
#define SST_MAX_CLUSTER_SIZE (1u << 30)
#define SST_DEFAULT_CLUSTER_SIZE 4096u
#define SST_RESTART_INTERVAL 16u

/* Block trailer without the restart array: entries_len, records, restarts, checksum. */
#define SST_BLOCK_TRAILER_FIXED 20u

typedef struct sst_footer {
    uint64_t index_offset;        /* start of the index region */
    uint64_t index_length;        /* bytes of index entries (without padding) */
    uint64_t index_region_length; /* index region, padded to cluster_size */
    uint64_t data_blocks;
    uint64_t records;
    uint64_t key_bytes;   /* sum of key lengths */
    uint64_t value_bytes; /* sum of value lengths */
    uint64_t file_size;
    uint64_t index_checksum;     /* XXH3-64 of the whole index region */
    uint32_t block_size;
    uint32_t cluster_size;
    uint32_t max_value_bytes;    /* bound every value respects (truncate's max-bytes) */
    uint32_t restart_interval;
    uint32_t format_version;
    uint32_t checksum_type;
    uint64_t data_region_length; /* data_blocks * block_size, padded to cluster_size */
    uint64_t footer_checksum;    /* XXH3-64 of the footer region up to this field */
} sst_footer;

/* Serialises f into 128 bytes, magic included (footer_checksum is written as given). */
void sst_footer_encode(const sst_footer *f, uint8_t out[SST_FOOTER_BYTES]);
/* Parses 128 bytes; checks the magic and version only. name is for errors. */
int sst_footer_decode(const uint8_t in[SST_FOOTER_BYTES], sst_footer *f, const char *name,
                      sp_error *err);

/*
 * The largest record a block of block_size can hold, and whether options
 * (block size, value bound) let every possible record fit: a key of up to
 * SP_MAX_KEY_BYTES plus a value of up to max_value_bytes. Checked before any
 * work so that no record is found too large halfway through a build.
 */
uint64_t sst_max_record_bytes(uint32_t block_size);
int sst_check_fit(uint32_t block_size, uint32_t max_value_bytes, sp_error *err);

/* Rounds n up to a multiple of align (a power of two). */
static inline uint64_t sst_align_up(uint64_t n, uint64_t align) {
    return (n + align - 1) & ~(align - 1);
}

#endif
