/*
 * merge.h: the k-way merge of sorted sources, with duplicate keys resolved
 * in favour of the latest source.
 *
 * A source is anything that yields records in strictly increasing key
 * order through two functions, as in mtbl's merger: a spilled sort run
 * (run_file.h) and an SSTable (stages/merge/table_source.h) are both
 * sources, so the sort and `sstpipe merge` share this code and its rule:
 * where several sources hold a key, the record of the source with the
 * highest seq wins (a source's current record's place in the input, set
 * only by runs built on several threads, see sorter.h; 0 otherwise), and
 * among those of the same seq the source with the highest index. For the
 * sort that is "the later run wins", or with runs built on several threads
 * "the later page wins"; for merge "the later table wins".
 *
 * The merger is pulled (merger_next), so a caller can interleave it with
 * other work (the table merge copies whole blocks between records, the
 * sort writes each record's seq into its run).
 */
#ifndef SSTPIPE_SORT_MERGE_H
#define SSTPIPE_SORT_MERGE_H

#include "stages/common/error.h"
#include "stages/common/record.h"

#include <stddef.h>
#include <stdint.h>

typedef struct merge_source merge_source;

/* What a source implements. next moves to the next record and sets the
 * source's key, key_len, prefix (sp_key_prefix of the key) and value_len:
 * 1, or 0 past the last record, -1 on error. value returns the current
 * record's value, valid until the next call of next. */
typedef struct merge_source_ops {
    int (*next)(merge_source *s, sp_error *err);
    int (*value)(merge_source *s, const uint8_t **value, sp_error *err);
} merge_source_ops;

/* Embedded in a source's own struct; the current record is kept here so
 * the heap compares keys without calling through ops. */
struct merge_source {
    const merge_source_ops *ops;
    const uint8_t *key;
    uint32_t key_len;
    uint64_t prefix;
    uint64_t value_len;
    uint64_t seq; /* the record's place in the input; 0 where order is the index's */
};

typedef struct merger {
    merge_source **src;
    unsigned n, live;
    unsigned *heap; /* indices into src, a binary heap */
    int pending;    /* the top source's record was returned; advance it first */
    uint64_t dups;  /* records replaced by a later source's */
    uint32_t last_len;
    uint8_t last[SP_MAX_KEY_BYTES];
} merger;

/* src[0..n) are the sources, latest (winning at equal seq) last; heap is scratch space
 * for n indices. Reads each source's first record. */
int merger_init(merger *m, merge_source **src, unsigned n, unsigned *heap, sp_error *err);
/*
 * The next record in key order: 1 (rec filled, *from the index of its
 * source; rec's key and value valid until the next call), 0 at the end,
 * -1 on error. Records of the same key in earlier sources are skipped and
 * counted in m->dups.
 */
int merger_next(merger *m, sp_record *rec, unsigned *from, sp_error *err);
/* Looks at the next record without taking it: 1 (*key, *key_len and
 * *from as merger_next would return them, valid until the next call), 0 at
 * the end, -1 on error. */
int merger_peek(merger *m, const uint8_t **key, uint32_t *key_len, unsigned *from, sp_error *err);

#endif
