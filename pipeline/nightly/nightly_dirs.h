/*
 * nightly_dirs.h: the file-system side of `sstpipe nightly`: the lock, the
 * staging directories of runs that died, publishing a build (rename, then
 * an atomic swap of the `current` symlink, both through publish.h),
 * retention, and picking the newest input.
 *
 * Layout under [output] dir:
 *   .lock                     flock()ed by the running nightly; holds its pid
 *   .staging-<UTC>-<pid>/     the build in progress
 *   builds/<UTC>-<input>/     published builds (SSTable, manifest, reports, log)
 *   failed/<UTC>-<input>/     failed runs (log, failed manifest, reports)
 *   current -> builds/...     the build to serve; replaced only by renameat2(2)
 */
#ifndef SSTPIPE_PIPELINE_NIGHTLY_DIRS_H
#define SSTPIPE_PIPELINE_NIGHTLY_DIRS_H

#include "stages/common/error.h"
#include "stages/common/publish.h"

#include <glob.h>
#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#define NIGHTLY_STAGING_PREFIX ".staging-"

/*
 * Takes dir/.lock (flock, not waiting) and writes our pid into it. Returns
 * 0 with *fd held, 1 when another process holds it (*holder = its pid, 0 if
 * unknown), -1 on error. The lock dies with the process, so a killed run
 * never leaves a stale lock.
 */
int nightly_lock(const char *dir, int *fd, pid_t *holder, sp_error *err);

/*
 * With the lock held, every staging directory in dir belongs to a run that
 * died (a live run would hold the lock): removes them, and the temporary
 * links of current whose process is gone (sp_publish_sweep_beside), and
 * calls note(name) for each. Returns how many, or -1.
 */
int nightly_clean_stale(const char *dir, void (*note)(void *ctx, const char *name), void *ctx,
                        sp_error *err);

/* A name "<stamp>-<base>" (or "<stamp>.NNN-<base>") under dir/sub that does
 * not exist yet and sorts after every name already there. */
int nightly_unique_name(const char *dir, const char *sub, const char *stamp, const char *base,
                        char *out, size_t cap, sp_error *err);

/* Renames staging to dir/sub/name and fsyncs the directories involved;
 * on failure staging is where it was. moved (may be NULL) is for
 * sp_publish_undo, when a later step of the publish fails. */
int nightly_move(const char *dir, const char *staging, const char *sub, const char *name,
                 sp_published *moved, sp_error *err);

/* Points dir/current at target (relative to dir) atomically: a temporary
 * symlink exchanged with the old one. On failure current is as it was. */
int nightly_swap_current(const char *dir, const char *target, sp_error *err);

/* Where dir/current points ("builds/x"), or "" when there is no link. */
int nightly_current_target(const char *dir, char *out, size_t cap, sp_error *err);
/* The manifest of the build current names, when it was published (new
 * reference), with current's target in out; else NULL: no current, or a
 * manifest that cannot be read, is nothing to be up to date with. */
json_t *nightly_current_manifest(const char *dir, char *out, size_t cap);

/*
 * Keeps the newest `keep` entries of dir/sub (names sort by their UTC
 * prefix), removes the rest except protect (a name in dir/sub, or NULL), and
 * calls note(name) for each removal. Returns the number removed, or -1.
 */
int nightly_retain(const char *dir, const char *sub, uint64_t keep, const char *protect,
                   void (*note)(void *ctx, const char *name), void *ctx, sp_error *err);

/* glob(3) of pattern: 0 with g filled (globfree it), 1 when nothing
 * matches, or -1 with err naming the directory that could not be read
 * (one that does not exist said so). */
int nightly_glob(const char *pattern, glob_t *g, sp_error *err);

/* The newest file (by mtime, then name) matching a glob pattern, malloc'd. */
int nightly_newest_match(const char *pattern, char **out, sp_error *err);

/* Creates path (and missing parents) as directories. */
int nightly_mkdirs(const char *path, sp_error *err);

#endif
