/*
 * front.h: the pieces every command front end (*_cmd.c) begins and ends the
 * same way with, written once: the live progress line started when the
 * command line asks for it and stopped before any error line, the -v
 * statistics line, a table opened with its error reported, and the exit
 * code of a run that returned an error. A front end says only what is its
 * own: which stage it runs, what its counters are, how its stats read.
 */
#ifndef SSTPIPE_COMMAND_FRONT_H
#define SSTPIPE_COMMAND_FRONT_H

#include "pipeline/command/command.h"
#include "stages/common/error.h"
#include "stages/common/progress.h"
#include "stages/sst/sstpipe.h"

#include <stdbool.h>

/* A command's live progress line: its counters and the meter drawing them. */
typedef struct sp_front_meter {
    sp_progress prog;
    bool shown;      /* the command line asked for the line */
    sp_meter *meter; /* NULL until started, or when it could not start */
} sp_front_meter;

/* The counters of the live line, initialized over input (as
 * sp_progress_init), when cl asks for the line ([progress] show); NULL when
 * it does not, and the meter then never starts. The caller sets what is its
 * own (phase, steps, the stage's hooks) before sp_front_meter_start. */
sp_progress *sp_front_progress(sp_front_meter *m, const sp_cmdline *cl, const char *input);

/* Starts drawing the line as `what` if sp_front_progress gave counters. */
void sp_front_meter_start(sp_front_meter *m, const char *what);

/* Stops the line (if it was started), ", done" when rc (an exit code, or a
 * library's 0 or -1) is 0; returns rc. Called before the error line of a
 * failed run, so that the two never share a line. */
int sp_front_meter_stop(sp_front_meter *m, int rc);

/* A stream stage's run (extract, sort): INPUT to OUTPUT with opts, the
 * stage's own options struct, the -v line when verbose, counting into
 * progress (NULL: no line); an exit code. */
typedef int (*sp_front_stream_fn)(const char *input, const char *output, const void *opts,
                                  bool verbose, sp_progress *progress);

/* Runs fn over cl's INPUT and -o with opts, inside the live line named
 * what when cl asks for it; fn's exit code. */
int sp_front_run_stream(sp_cmdline *cl, const char *what, sp_front_stream_fn fn, const void *opts);

/* The run_cmd of the stream stage `stage` (extract, sort): its
 * stage_options initialized, the config applied (config_apply_stage), and
 * fn run by sp_front_run_stream. */
#define SP_FRONT_STREAM_RUN(stage, fn)                                                             \
    static int run_cmd(sp_cmdline *cl) {                                                           \
        stage##_options opts;                                                                      \
        stage##_options_init(&opts);                                                               \
        config_apply_##stage(&cl->cfg, &opts);                                                     \
        return sp_front_run_stream(cl, #stage, fn, &opts);                                         \
    }

/* The exit code of a run that returned rc: SP_EXIT_OK for 0, else err
 * reported and SP_EXIT_FAIL. Every command's codes are the one table of
 * stages/common/cli.h: the parser refuses (SP_EXIT_USAGE) before run();
 * a run that fails ends here; get and verify answer no with SP_EXIT_NO. */
int sp_front_exit(int rc, const sp_error *err);

/* The -v line: line and a newline on stderr. */
void sp_front_stats(const char *line);

/* The -v line as format (a stage's *_stats_format(..., buf, cap)) writes
 * it from the arguments after format, when verbose. A macro, since each
 * stage's stats are their own type. */
#define SP_FRONT_STATS(verbose, format, ...)                                                       \
    do {                                                                                           \
        if (verbose) {                                                                             \
            char sp_front_line_[512];                                                              \
            format(__VA_ARGS__, sp_front_line_, sizeof sp_front_line_);                            \
            sp_front_stats(sp_front_line_);                                                        \
        }                                                                                          \
    } while (0)

/* The table at path, opened; NULL when it cannot be, its error reported
 * and *code set to SP_EXIT_FAIL (a missing operand was refused before). */
sstpipe_table *sp_front_open_table(const char *path, int *code);

#endif
