/*
 * cluster_runner_internal.h: what the three runners (cluster_runner_local.c,
 * _parallel.c, _slurm.c) share, in cluster_runner.c: the held signals, the
 * log paths and the one-line failure. Processes are started, waited for and
 * stopped through stages/common/child.h. Not for use outside
 * pipeline/cluster_runner*.c; the API is cluster_runner.h.
 */
#ifndef SSTPIPE_PIPELINE_CLUSTER_RUNNER_INTERNAL_H
#define SSTPIPE_PIPELINE_CLUSTER_RUNNER_INTERNAL_H

#include "pipeline/cluster/cluster_runner.h"
#include "stages/common/child.h"

#include <signal.h>
#include <stdbool.h>
#include <sys/types.h>

/* SIGINT, SIGTERM and SIGHUP held in the calling thread and readable from
 * fd (a signalfd) while a run lasts; caught is the first one read (0: none). */
typedef struct runner_signals {
    sigset_t old_mask;
    int fd;
    int caught;
} runner_signals;

int runner_signals_hold(runner_signals *s, sp_error *err);
/* Reads what is pending on s->fd without blocking; returns s->caught. */
int runner_signals_check(runner_signals *s);
/* Waits up to ms (-1: for ever) for a signal; returns s->caught. */
int runner_signals_sleep(runner_signals *s, int ms);
/* Restores the mask and closes fd; then raises the caught signal again, or
 * stores it in *out when out is not NULL. */
void runner_signals_release(runner_signals *s, int *out);
/* The error of a run stopped by s->caught; `what` says what was stopped. */
int runner_interrupted(const runner_signals *s, const char *what, sp_error *err);

/* Records in o->stage_end (when set) that stage k's last task has ended. */
void runner_stage_ended(const cluster_runner_options *o, size_t k);

/* LOG_DIR/<stage>-<index>.<attempt>.log, malloc'd; NULL without memory. */
char *runner_log_path(const char *dir, const char *stage, int index, int attempt);
/* Creates dir if it does not exist. */
int runner_make_log_dir(const char *dir, sp_error *err);
/* The last non-empty line of the file at path, control characters made
 * spaces, cut to fit; a placeholder when it is empty or unreadable. */
void runner_log_last_line(const char *path, char *buf, size_t size);
/* The last line of the log at path that prog ("/usr/bin/sstpipe": its
 * "sstpipe: " error line) wrote, else its last line, as above. */
void runner_log_error_line(const char *path, const char *prog, char *buf, size_t size);
/* The one-line failure of a task that failed its last attempt. */
int runner_task_failed(const cluster_runner_options *o, const cluster_stage *st, int index,
                       int attempts, const char *why, const char *log, sp_error *err);

/* argv with "--task" and index appended, malloc'd (the strings are argv's
 * and num, which must outlive it); NULL without memory. */
char **runner_task_argv(char *const *argv, int index, char num[16]);

/* Starts argv (argv[0] searched in PATH) as a child (stages/common/child.h)
 * with stdin from /dev/null and stdout and stderr into log_fd. */
int runner_spawn(char *const *argv, int log_fd, sp_child *c, sp_error *err);

/* Splits s into words as sh does (blanks separate; '...' and "..." quote,
 * backslash escapes; nothing is expanded). *words is a NULL-terminated
 * malloc'd array of malloc'd words; free with runner_words_free. `what`
 * names s in errors. */
int runner_split_words(const char *s, const char *what, char ***words, size_t *n, sp_error *err);
void runner_words_free(char **words);

/* The runners, one per file, called by cluster_run (cluster_run.c). Each
 * runs every stage; on a signal it stops what it started and fails through
 * runner_interrupted. */
int cluster_run_local(const cluster_runner_options *o, const cluster_stage *stages, size_t n,
                      runner_signals *sig, sp_error *err);
int cluster_run_parallel(const cluster_runner_options *o, const cluster_stage *stages, size_t n,
                         runner_signals *sig, sp_error *err);
int cluster_run_slurm(const cluster_runner_options *o, const cluster_stage *stages, size_t n,
                      runner_signals *sig, sp_error *err);

#endif
