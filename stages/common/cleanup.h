/*
 * cleanup.h: temporary paths (files, or directories that hold only such
 * files) to remove if the process is interrupted.
 *
 * Normal error paths remove their own temporary files. This registry covers
 * SIGINT, SIGTERM, SIGHUP and SIGPIPE: the handler unlinks every registered
 * path and exits 128+signal. (SIGKILL cannot be caught: that is why
 * scratch files are anonymous and outputs are renamed into place.)
 */
#ifndef SSTPIPE_COMMON_CLEANUP_H
#define SSTPIPE_COMMON_CLEANUP_H

/* Installs the signal handlers once. Only a program's main calls it
 * (pipeline/command/main.c, data/wikigen.c): library code never takes a process's
 * signals (a server would die of a client's SIGPIPE, Python would lose
 * Ctrl-C), it only registers its paths, which a program that installed no
 * handlers simply never needs. */
void sp_cleanup_install(void);
/* Registers a path (copied) to unlink on a signal; returns a slot or -1 if full. */
int sp_cleanup_add(const char *path);
void sp_cleanup_remove(int slot);
/* Runs create(arg), which makes a path and registers it (or unlinks it)
 * before it returns, so that no handler, on this thread or another, finds
 * the path made but not yet registered. With every signal held on this
 * thread for the duration; never call it from inside create. */
void sp_cleanup_create(void (*create)(void *), void *arg);

#endif
