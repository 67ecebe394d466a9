/*
 * fileio.h: whole-buffer reads and writes on file descriptors, and the two
 * kinds of files sstpipe creates.
 *
 * - An output file (sp_outfile) is written as an anonymous file (O_TMPFILE)
 *   in the target's directory, fsynced, linked under a temporary name and
 *   renamed into place only on success, so the final path never holds a
 *   partial file, an earlier good file is replaced atomically or not at all,
 *   and even kill -9 leaves nothing behind. Where the file system has no
 *   O_TMPFILE, the temporary name exists from the start and is registered
 *   with cleanup.h so errors and signals remove it. The temporary name,
 *   <path>.tmp.<host>-<pid>.XXXXXX, says whose it is, so a kill -9 between
 *   naming and rename leaves a name sp_publish_sweep (publish.h) removes.
 * - A scratch file (sp_tmpfile_open) has no name at all (O_TMPFILE, or,
 *   without it, SP_SCRATCH_PREFIX... unlinked right after creation with
 *   signals held), so nothing is left behind even by kill -9.
 *
 * An output path that names something other than a regular file or nothing
 * (/dev/null, a FIFO, a terminal) is written to directly: replacing it would
 * put a regular file where the device or pipe was (as root, /dev/null
 * itself), and there is no earlier good file there to keep.
 *
 * Only a kernel or file system without O_TMPFILE (EOPNOTSUPP, EISDIR) gets
 * the named files; any other error creating the file is reported. The
 * environment variable SSTPIPE_NO_O_TMPFILE=1 (read once per process)
 * makes sstpipe behave as on such a file system, so the tests run the
 * named fallback and its cleanup on errors and signals too.
 */
#ifndef SSTPIPE_COMMON_FILEIO_H
#define SSTPIPE_COMMON_FILEIO_H

#include "stages/common/error.h"
#include "stages/common/publish.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/uio.h>

/* "1": never use O_TMPFILE (see above). */
#define SP_NO_O_TMPFILE_ENV "SSTPIPE_NO_O_TMPFILE"
/* The name a scratch file has, without O_TMPFILE, until it is unlinked. */
#define SP_SCRATCH_PREFIX "sstpipe-scratch."

/* Write all n bytes (retrying short writes and EINTR). name/offset for errors. */
int sp_write_all(int fd, const void *buf, size_t n, const char *name, sp_error *err);
/* Write all pieces iov[0..n) in order (retrying short writes and EINTR);
 * iov is changed. One call for pieces that lie apart in memory. */
int sp_writev_all(int fd, struct iovec *iov, int n, const char *name, sp_error *err);
int sp_pwrite_all(int fd, const void *buf, size_t n, uint64_t off, const char *name, sp_error *err);
/* A buffer for read() or pread() to fill: n bytes, freed with free(); NULL
 * when out of memory. It starts on a page boundary because the kernel's
 * copy out of the page cache slows down severalfold into a destination that
 * is not cache-line aligned, which is where glibc's malloc puts blocks of
 * 128 KiB and more (16 bytes past a page); see tests/bench/RESULTS.md,
 * verify. */
void *sp_io_alloc(size_t n);
/* Read up to n bytes, stopping early only at end of file. Returns bytes read, -1 on error. */
ssize_t sp_read_full(int fd, void *buf, size_t n, const char *name, sp_error *err);
/* Read exactly n bytes at off; end of file before that is an error. */
int sp_pread_exact(int fd, void *buf, size_t n, uint64_t off, const char *name, sp_error *err);

typedef struct sp_outfile {
    int fd;
    char *path;     /* final path */
    char *tmp_path; /* its temporary name, while it has one */
    bool anonymous; /* O_TMPFILE: no name at all until committed */
    bool direct;    /* path is no regular file: written as it is (see above) */
    /* Renamed into place by sp_outfile_commit, even when it then failed
     * (the directory's fsync): kept through sp_outfile_abort. */
    bool placed;
    int cleanup_slot;
} sp_outfile;

/* Creates path's temporary sibling for writing, or opens path itself where
 * it is no regular file. */
int sp_outfile_open(sp_outfile *f, const char *path, sp_error *err);
/* fsync, rename over path, fsync the directory (sp_publish); closes the
 * file. */
int sp_outfile_commit(sp_outfile *f, sp_error *err);
/* The same, undoably: an earlier file at path is exchanged with the new
 * one (renameat2 RENAME_EXCHANGE), so it is left at pub->from when
 * pub->exchanged, for the caller to remove, or to put back with
 * sp_publish_undo (publish.h), which leaves the new file at pub->from; a
 * failed fsync of the directory after the exchange is undone, and the
 * commit fails. Not for a direct output. */
int sp_outfile_commit_undoable(sp_outfile *f, sp_published *pub, sp_error *err);
/* Removes the temporary file (if not committed) and frees f. Safe to call twice. */
void sp_outfile_abort(sp_outfile *f);

/* An anonymous read/write scratch file in dir (NULL: $TMPDIR or /tmp). */
int sp_tmpfile_open(const char *dir, sp_error *err);
/* A scratch file beside f's final path: on the file system the output is
 * written to, where the space for it is known to be meant ($TMPDIR or /tmp
 * for a direct output). */
int sp_outfile_scratch_open(const sp_outfile *f, sp_error *err);

#endif
