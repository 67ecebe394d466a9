/*
 * verify_check.h: the state of one file's check, shared by verify.c (the
 * footer, the index, the padding, the order of the work) and
 * verify_blocks.c (the data blocks), which report problems through
 * verify_problems.c; private to stages/verify.
 */
#ifndef SSTPIPE_VERIFY_VERIFY_CHECK_H
#define SSTPIPE_VERIFY_VERIFY_CHECK_H

#include "stages/common/error.h"
#include "stages/common/record.h"
#include "stages/common/zeros.h"
#include "stages/sst/block_packed.h"
#include "stages/sst/filter.h"
#include "stages/sst/format.h"
#include "stages/verify/verify.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

typedef struct checker {
    verify_report *rep;
    size_t problems_cap;
    int fd;
    uint64_t size; /* of the file */
    uint64_t end;  /* where the SSTable ends: size, less any bytes appended */
    sst_footer f;
    uint32_t bs;
    uint64_t max_value; /* UINT64_MAX when the footer is unknown */
    uint8_t *buf;
    size_t buf_cap; /* a chunk of blocks read and checked at once (verify_blocks.c) */
    /* The index, not kept: where each chunk's first entry starts in it
     * (chunk_entry[q], from the index's first byte), for the check of the
     * chunk's blocks against their entries, and how many entries parse. */
    uint64_t *chunk_entry;
    uint64_t n_entries;
    /* walking the data blocks */
    uint8_t last_key[SP_MAX_KEY_BYTES];
    uint32_t last_len;
    bool have_last;
    uint64_t records, key_bytes, value_bytes;
    uint64_t unreadable_blocks; /* blocks whose records could not all be walked */
    /* Version 2: the dictionary the blocks are unpacked with (without one
     * when the meta region's is unusable, its problems reported); NULL:
     * version 1. */
    packed_dict *dict;
    /* Version 2: the filter for absent keys, which every key walked must
     * pass (bytes NULL: none, or one the meta region's header cannot
     * place), at byte filter_offset of the file, in meta_body. */
    sst_filter filter;
    uint64_t filter_offset;
    uint8_t *meta_body;
} checker;

/* Checks data blocks [0, n), read in chunks of c->buf_cap bytes. With
 * stop_at_bad (no footer to say where the data ends) the walk ends at the
 * first block that does not open. -1 with err when a read fails. */
int check_blocks(checker *c, uint64_t n, bool stop_at_bad, sp_error *err);

/* Block functions prefix their messages with the "what" they are given; we
 * give "" and drop the ": " so the problem line names the block once. */
static inline const char *block_msg(const sp_error *e) {
    return strncmp(e->msg, ": ", 2) == 0 ? e->msg + 2 : e->msg;
}

#endif
