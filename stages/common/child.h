/*
 * child.h: the one process supervisor: starting a command, waiting for it
 * with a time limit, stopping it and all it started, and saying how it
 * ended. Its users: the external decompressor (stages/extract/
 * source_command.c) and the cluster runners (pipeline/cluster/).
 *
 * A child runs in a process group of its own, so that stopping it stops
 * everything it started ("sh -c 'a | b'" is three processes) and a Ctrl-C
 * at the terminal reaches sstpipe alone, which then stops its children in
 * order. It starts with every signal at its default and none blocked: an
 * ignored SIGPIPE would be inherited and leave a command writing into a
 * pipe nobody reads once sstpipe is gone.
 *
 * Waiting goes through a pidfd, which a caller can poll beside its other
 * descriptors (a signalfd, other children); where pidfd_open is not
 * available (kernels before 5.3, or out of descriptors) pidfd is -1 and the
 * waits here poll the process's state instead.
 *
 * A child's stderr is captured by giving it a scratch file (sp_tmpfile_open)
 * as its stderr: a file never fills up and blocks the child the way an
 * unread pipe would; sp_child_line quotes it in an error.
 */
#ifndef SSTPIPE_COMMON_CHILD_H
#define SSTPIPE_COMMON_CHILD_H

#include "stages/common/error.h"

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

typedef struct sp_child {
    pid_t pid;   /* the leader, whose id is its group's */
    int pidfd;   /* readable once the leader has exited; -1: none (see above) */
    int status;  /* the leader's wait status, once reaped */
    bool reaped; /* until then the group's id cannot be reused */
} sp_child;

/* A child's standard streams: descriptors of the caller's, which it keeps;
 * SP_CHILD_NULL is /dev/null. */
enum { SP_CHILD_NULL = -1 };
typedef struct sp_child_io {
    int in, out, err;
    /* Close every other descriptor in the child, not only the
     * close-on-exec ones (a library may have opened some without). */
    bool close_others;
} sp_child_io;

/* Starts file (searched in PATH when it has no '/') with argv in a process
 * group of its own. 0, or -1 with errno set (the caller names the command
 * in its error). */
int sp_child_spawn(sp_child *c, const char *file, char *const *argv, const sp_child_io *io);

/* Waits up to ms (-1: for ever, 0: not at all) for the leader to exit and
 * reaps it (c->status): 1 once reaped, 0 while it runs. */
int sp_child_wait(sp_child *c, int ms);

/* The timeout for a poll that waits on c->pidfd among other descriptors:
 * -1 with a pidfd, else how often to look again (sp_child_wait(c, 0)). */
int sp_child_poll_ms(const sp_child *c);

/* Sends sig to the child's whole group (nothing once it is reaped). */
void sp_child_signal(const sp_child *c, int sig);

/* Stops the child and everything left in its group: sig to the group
 * (SIGKILL: at once), SIGKILL if the leader has not exited grace_ms later,
 * and SIGKILL again for what the leader left behind; reaps the leader and
 * closes the pidfd. Nothing once it is reaped. */
void sp_child_stop(sp_child *c, int sig, int grace_ms);

/* A wait status in words: "exit 3", "killed by signal 9". With named, the
 * signal's name and what sh's exit codes 126 and 127 mean: "killed by signal
 * 9, SIGKILL", "exit 127, command not found". */
void sp_child_describe(int wstatus, bool named, char *buf, size_t size);

/* The first (last: the last non-empty) line of what the file fd holds (a
 * captured stderr, a log), control characters made spaces, cut to fit;
 * returns its length, 0 when there is none, -1 when fd cannot be read. */
int sp_child_line(int fd, bool last, char *buf, size_t size);

/* Runs file with argv to its end (stdin /dev/null) and returns its stdout,
 * malloc'd and NUL terminated, in *out, its wait status and the last line of
 * its stderr (sp_child_line; "" when none). The failure to run it at all
 * is the error ("cannot run sbatch: ..."). */
int sp_child_output(char *const *argv, char **out, int *wstatus, char *errline, size_t errline_size,
                    sp_error *err);

#endif
