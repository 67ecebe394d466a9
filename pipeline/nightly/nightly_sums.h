/*
 * nightly_sums.h: the incremental nightly's checksum cache,
 * [output] dir/cache/checksums.json, so that a night does not read the
 * whole base dump again (tens of GB) only to find it unchanged.
 *
 * An entry records a dump's XXH3-64 with what stat said of the file when
 * it was hashed: path, device, inode, size, mtime and ctime (ns). A later
 * run takes the checksum from the entry only when all of them are the same
 * now; anything else (touched, rewritten in place, replaced by a rename,
 * restored with its old mtime, moved to another disk) hashes the file
 * again. ctime is the one a program cannot set back: a file rewritten in
 * place and given its old size and mtime (cp -p, rsync -t, touch -d) still
 * has a new ctime.
 *
 * A file changed in the same tick of the file system's clock as the stat
 * would keep its times, so an entry is recorded only for a file whose
 * ctime was at least SUMS_RACY_NS before its hashing began (as git does for
 * its index): a dump written just before the run is hashed again the next
 * night, and recorded then. Dumps arrive hours before the run, so in
 * practice every night after the first reuses the base's entry.
 *
 * The cache holds the entries of the last run's inputs only. A missing or
 * unreadable cache is no error: every file is hashed (and the cache
 * written anew).
 */
#ifndef SSTPIPE_PIPELINE_NIGHTLY_SUMS_H
#define SSTPIPE_PIPELINE_NIGHTLY_SUMS_H

#include "pipeline/nightly/nightly_log.h"
#include "stages/common/error.h"

#include <stdbool.h>
#include <stdint.h>

#define NIGHTLY_SUMS_FILE "checksums.json"
/* How old a file's ctime must be, when its hashing begins, for its entry
 * to be recorded: file systems keep times as coarse as 2 s (FAT). */
#define SUMS_RACY_NS 2000000000LL

typedef struct nightly_sums nightly_sums;

/* Reads path (a missing or unreadable file gives an empty cache; an
 * unreadable one is logged). NULL: out of memory. */
nightly_sums *nightly_sums_load(const char *path, nightly_log *log);
/* Size and XXH3-64 of the file at path: the entry's when path's stat
 * matches it in full (*reused true), else hashed, with progress into *done,
 * and recorded when the file is old enough (see above). */
int nightly_sums_hash(nightly_sums *s, const char *path, uint64_t *size, uint64_t *hash,
                      bool *reused, _Atomic uint64_t *done, sp_error *err);
/* Writes the cache when this run changed it, the entries of the files it
 * looked up and no others: written whole at staged (in the run's staging
 * directory, so that a run killed meanwhile leaves nothing in cache/ that
 * the next run's cleanup would not remove), then renamed over the cache
 * and its directory synced. */
int nightly_sums_save(nightly_sums *s, const char *staged, sp_error *err);
void nightly_sums_destroy(nightly_sums *s);

#endif
