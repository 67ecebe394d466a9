/*
 * scratch.h: scratch directories and the removal of a directory tree.
 *
 * A scratch directory (tune's trials) is made fresh under a base
 * ($TMPDIR or /tmp when none is given) and registered with cleanup.h, so a
 * signal removes it with the files registered in it; on the way out it is
 * removed with whatever is still in it. sp_remove_tree is the one
 * recursive removal: of a scratch directory, a temporary directory a
 * publish left (publish.h), a retired build or a cached table set.
 */
#ifndef SSTPIPE_COMMON_SCRATCH_H
#define SSTPIPE_COMMON_SCRATCH_H

#include "stages/common/error.h"

typedef struct sp_scratch_dir {
    char *path; /* malloc'd; NULL when there is none */
    int cleanup_slot;
} sp_scratch_dir;

/* Creates base/prefix.XXXXXX (base NULL or "": $TMPDIR, else /tmp). */
int sp_scratch_dir_create(sp_scratch_dir *d, const char *base, const char *prefix, sp_error *err);
/* Removes the directory with everything in it and frees d->path; safe to
 * call twice. */
int sp_scratch_dir_remove(sp_scratch_dir *d, sp_error *err);

/* Removes path, a file, a symlink or a directory with everything in it
 * (symlinks are removed, never followed); 0 when it is gone, also when it
 * was never there. err may be NULL where a failure only leaves disk space
 * taken. */
int sp_remove_tree(const char *path, sp_error *err);

#endif
