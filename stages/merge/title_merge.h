/*
 * title_merge.h: the title index of a merge's output (title_rules.h),
 * merged from its inputs' indexes rather than rebuilt from its records,
 * which a merge mostly copies as whole blocks without reading them.
 *
 * An index's records are keyed by their titles alone, so the merge's rules
 * carry over: of two inputs holding a title, the later one's record
 * stays; a dropped key's record goes; only the titles in the merge's range
 * stay. The output's rules are the last input's.
 */
#ifndef SSTPIPE_MERGE_TITLE_MERGE_H
#define SSTPIPE_MERGE_TITLE_MERGE_H

#include "stages/merge/table_source.h"
#include "stages/sst/title_index.h"

/* Whether the merge leaves a title out (a dropped key, or one outside its
 * range): the merge's rules, which it passes in (ctx is its own). */
typedef bool (*title_merge_filter)(const void *ctx, const uint8_t *title, uint32_t len);

/* Reads the title indexes of inputs[0..n) (tables[i] open on each, each
 * index read in chunks of read_bytes) into *x, a new title index for the
 * table at out with options topts, the titles left_out(ctx, ...) left out.
 * When an input has none built for it, *x is NULL and *missing that input
 * (else -1): not an error. -1 with err set when an index is there but
 * cannot be read. */
int title_merge_read(const char *out, const char *const *inputs, table_source *const *tables,
                     unsigned n, size_t read_bytes, title_merge_filter left_out, const void *ctx,
                     const table_options *topts, title_index **x, int *missing, sp_error *err);

#endif
