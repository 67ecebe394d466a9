/*
 * sorter.h: the third stage, an external merge sort under a memory budget.
 *
 * Records are gathered in memory until the budget is used, sorted (bytewise
 * by key, memcmp) and spilled as a sorted run to a scratch file in tmp_dir.
 * At the end the runs are merged k-way (at most fan_in at a time, so in
 * several passes when there are more runs) into the output sink. Peak memory
 * stays within the budget plus a small constant.
 *
 * Duplicate keys: the record added last wins; each replaced record is
 * counted. Scratch files are anonymous (see fileio.h), so nothing is left in
 * tmp_dir on success, on failure, or after kill -9.
 *
 * Run building on several threads (the parallel build, see
 * stages/extract/parse_pool.h): sorter_split cuts the budget into n parts,
 * each fed by one thread, which sorts and spills its own runs there (into
 * a scratch file of its own, see sorter.c). The records of a part are
 * stamped with their place in the input (sort_part_begin: increasing on
 * each part), and the merge lets the highest place win among equal keys,
 * so "the record added last wins" still means last in the input,
 * whichever thread added it. Memory stays the budget: the parts share its
 * one allocation, and the merge reuses it.
 */
#ifndef SSTPIPE_SORT_SORTER_H
#define SSTPIPE_SORT_SORTER_H

#include "stages/common/error.h"
#include "stages/common/record.h"

#include <stddef.h>
#include <stdint.h>

#define SORT_DEFAULT_MEMORY (256ull << 20)
#define SORT_MIN_MEMORY (1ull << 20)

typedef struct sort_options {
    uint64_t memory;     /* budget in bytes (>= SORT_MIN_MEMORY) */
    const char *tmp_dir; /* NULL: $TMPDIR or /tmp */
    /* Runs merged at once (>= 2); 0 picks the most the budget allows with a
     * read buffer of at least 64 KiB per run, which also caps a larger N. */
    unsigned fan_in;
} sort_options;

typedef struct sort_stats {
    uint64_t records_in;
    uint64_t records_out;
    uint64_t duplicates_replaced;
    uint64_t runs;          /* sorted runs spilled (0 when all fit in memory) */
    uint64_t merge_passes;  /* passes over the data after run formation */
    uint64_t spilled_bytes; /* bytes written to scratch files */
} sort_stats;

typedef struct sorter sorter;
typedef struct sort_part sort_part;

void sort_options_init(sort_options *opts);
sorter *sorter_init(const sort_options *opts, sp_error *err);
/* Adds one record (value in memory); the sorter copies it. Only for a
 * sorter that is not split (it adds to its one part). */
int sorter_add(sorter *s, const sp_record *rec, sp_error *err);
sp_sink sorter_sink(sorter *s);

/* Cuts the budget into n parts (n >= 1), before any record is added. */
int sorter_split(sorter *s, unsigned n, sp_error *err);
sort_part *sorter_part(sorter *s, unsigned i);
/* The records added to p from now on come from this place in the input,
 * which is after every place given to any part before (on this part:
 * increasing). Records of the same place keep their order of adding. */
void sort_part_begin(sort_part *p, uint64_t place);
/* A sink adding to p; each part is fed by one thread at a time. */
sp_sink sort_part_sink(sort_part *p);
/* The part's last record is added: it sorts what it holds, on the calling
 * thread (the one that fed it), so sorter_finish need not, and if it has
 * spilled a run before, spills this one too (a failure is kept for
 * sorter_finish to return). */
void sort_part_end(sort_part *p);
/* Emits every record in key order, duplicates resolved, into out. The
 * threads feeding the parts must have stopped. */
int sorter_finish(sorter *s, const sp_sink *out, sp_error *err);
const sort_stats *sorter_stats(const sorter *s);
/* The `-v` line, without its newline, into buf (cap bytes; 256 hold it):
 * "sort: records_in=N records_out=N duplicates_replaced=N ...". The
 * command prints it; the library prints nothing. */
void sort_stats_format(const sort_stats *s, char *buf, size_t cap);
void sorter_destroy(sorter *s);

#endif
