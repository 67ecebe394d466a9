/*
 * merge.h: the k-way merge of sorted runs into a sink, with duplicate keys
 * resolved in favour of the latest run.
 */
#ifndef SSTPIPE_SORT_MERGE_H
#define SSTPIPE_SORT_MERGE_H

#include "stages/common/error.h"
#include "stages/common/record.h"
#include "stages/sort/run_file.h"

#include <stddef.h>
#include <stdint.h>

/*
 * Merges readers[0..n) (each sorted, keys unique within a run) into out in
 * key order. Equal keys in several runs: the record from the reader with the
 * highest index is emitted, the others counted in *dups. big (big_cap
 * bytes) holds a value too large for its reader's buffer while it is
 * emitted. heap is scratch space for n indices. *emitted counts records
 * put into out.
 */
int merge_runs(run_reader *readers, unsigned n, unsigned *heap, uint8_t *big, size_t big_cap,
               const sp_sink *out, uint64_t *dups, uint64_t *emitted, sp_error *err);

#endif
