/*
 * filter.h: format version 2's filter for absent keys (FORMAT.md, "The
 * filter"), a blocked Bloom filter: every key sets a few bits of one
 * 64-byte line of it, chosen by the key's XXH3-64, so that asking about a
 * key reads one cache line. A key the filter rules out is not in the
 * table, and a lookup answers it without reading a block; a key it lets
 * through may still be absent (about 1 in 90 absent keys, at
 * SST_FILTER_BITS_PER_KEY).
 *
 * The writer collects the keys' hashes (sst_filter_hash), as it only
 * knows the filter's size once the last key came, and builds the filter
 * from them at the end; readers ask it about one key. The bytes are the
 * file's, checked by the meta region's checksum before they are used.
 */
#ifndef SSTPIPE_SST_FILTER_H
#define SSTPIPE_SST_FILTER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SST_FILTER_LINE_BYTES 64u
/* The filter's bits a key, and the bits a key sets: the fewest false
 * positives a 512-bit line gives at this size. */
#define SST_FILTER_BITS_PER_KEY 10u
#define SST_FILTER_HASHES 6u
#define SST_FILTER_MAX_HASHES 30u

/* A filter as a reader holds it: NULL bytes when the table has none
 * (every key passes). */
typedef struct sst_filter {
    const uint8_t *bytes;
    uint32_t length; /* a multiple of SST_FILTER_LINE_BYTES */
    uint32_t hashes; /* bits a key sets, 1..SST_FILTER_MAX_HASHES */
} sst_filter;

/* The hash a filter is built from and asked with. */
uint64_t sst_filter_hash(const uint8_t *key, size_t klen);

/* The filter's length in bytes for n keys: whole lines of about
 * SST_FILTER_BITS_PER_KEY bits a key; 0 for none. */
uint64_t sst_filter_length(uint64_t n);

/* Sets the bits of each of the n hashes in out (length bytes, zeroed by
 * the caller, a multiple of SST_FILTER_LINE_BYTES, not 0). */
void sst_filter_build(uint8_t *out, uint64_t length, uint32_t hashes, const uint64_t *h,
                      uint64_t n);

/* Whether the key of hash h may be in the table: false only when one of
 * its bits is clear, then *first_clear (when not NULL) is the byte of the
 * filter that holds the first of them. */
bool sst_filter_may_hold(const sst_filter *f, uint64_t h, uint64_t *first_clear);

/* sst_filter_may_hold of a key: the lookups' question. */
static inline bool sst_filter_may_hold_key(const sst_filter *f, const void *key, size_t klen) {
    return !f->bytes || sst_filter_may_hold(f, sst_filter_hash(key, klen), NULL);
}

#endif
