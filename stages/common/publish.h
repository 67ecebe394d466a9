/*
 * publish.h: putting a complete file, directory or symlink in place.
 *
 * Whatever sstpipe publishes is made under a temporary name in the
 * directory it is published to (the same file system, so one rename puts
 * it in place), then renamed onto its final name, then the directory is
 * fsynced so that the rename survives a power cut: a reader sees the old
 * entry or the new one, whole, never a part or neither. sp_outfile
 * (fileio.h) publishes its files this way; the cluster's tasks, the
 * nightly's cache and builds and its `current` link through sp_publish.
 *
 * A directory cannot be renamed onto a directory with entries: such a
 * target is exchanged with the new one (renameat2 RENAME_EXCHANGE), which
 * leaves the old one at the temporary name, to be removed, or to be put
 * back (sp_publish_undo) when a later step of the publish fails.
 *
 * A temporary name carries its owner, "<host>-<pid>", so that the next
 * publish on the same host can tell the leftovers of a killed process
 * (removed by sp_publish_sweep) from those of one still running (kept);
 * another host's are never touched, as its processes cannot be asked.
 */
#ifndef SSTPIPE_COMMON_PUBLISH_H
#define SSTPIPE_COMMON_PUBLISH_H

#include "stages/common/error.h"

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>

/* The part of a temporary name that says whose it is. */
#define SP_PUBLISH_OWNER_MAX 96
/* "<target>.tmp.": what a temporary name for target starts with. */
#define SP_PUBLISH_TMP ".tmp."

enum {
    /* fsync from's contents first (a file's data, a directory's entries),
     * for callers that did not sync them as they wrote. */
    SP_PUBLISH_SYNC = 1,
    /* When there is something at to, exchange the two (renameat2
     * RENAME_EXCHANGE): what to held is at from afterwards, to be removed
     * or put back (sp_publish_undo). It is the one way to replace a
     * directory with entries, and the way to a publish that can be undone
     * once the old entry would otherwise be gone. */
    SP_PUBLISH_EXCHANGE = 2,
    /* A to that is there already (a directory with entries) wins: nothing
     * is changed and 1 is returned (another attempt published the same). */
    SP_PUBLISH_KEEP = 4,
    /* from lies in another directory than to: fsync that one too after
     * the rename, so that the name's leaving it survives a crash too. */
    SP_PUBLISH_SYNC_FROM_DIR = 8,
    /* When a directory's fsync after the rename fails, undo the rename
     * (or exchange) and fail, so the caller is where a failed rename
     * would have left it. Without it the new entry stays in place and
     * SP_PUBLISH_UNSYNCED is returned. */
    SP_PUBLISH_UNDO = 16,
};

/* sp_publish's result when the entry is in place but a directory's fsync
 * after the rename failed (without SP_PUBLISH_UNDO): it may not survive a
 * power cut. */
#define SP_PUBLISH_UNSYNCED (-2)

/* What a publish did, so that it can be undone. */
typedef struct sp_published {
    char from[PATH_MAX];
    char to[PATH_MAX];
    bool exchanged; /* to's old entry is at from now */
} sp_published;

/* fsyncs a directory, so that the entries made or renamed in it survive a
 * power cut. */
int sp_sync_dir(const char *dir, sp_error *err);
/* fsyncs the directory path is in. */
int sp_sync_parent(const char *path, sp_error *err);

/* This process's owner part of a temporary name: "<host>-<pid>", the
 * host's '/' and '-' made '_' so that the last '-' is the pid's. */
void sp_publish_owner(char *buf, size_t cap);
/* "<target>.tmp.<host>-<pid>": target's temporary name in this process.
 * Returns -1 (with err) when it does not fit in cap. */
int sp_publish_temp(const char *target, char *buf, size_t cap, sp_error *err);
/* Removes (sp_remove_tree) the entries of dir named prefix + "<host>-<pid>"
 * (then nothing, or '.' and anything) whose host is this one and whose
 * process is gone. Best effort: what cannot be read or removed stays, for
 * the next sweep. Returns how many it removed. */
int sp_publish_sweep(const char *dir, const char *prefix);
/* The sweep of target's own temporaries, "<target>.tmp.<host>-<pid>...",
 * in its directory. */
int sp_publish_sweep_beside(const char *target);

/*
 * Puts from (complete) at to, as flags say (above): the rename, then the
 * fsync of to's directory. Returns 0 when published, 1 when SP_PUBLISH_KEEP
 * found to there, -1 when nothing changed (errno kept from the rename),
 * SP_PUBLISH_UNSYNCED (see above). pub, when not NULL, records what was
 * done for sp_publish_undo.
 */
int sp_publish(const char *from, const char *to, unsigned flags, sp_published *pub, sp_error *err);
/* Puts back what pub's publish changed: the new entry at from again, and
 * to's old entry (if it was exchanged) at to, or no to at all; then syncs
 * to's directory, as far as it can (0 once the entries are back). */
int sp_publish_undo(const sp_published *pub, sp_error *err);

#endif
