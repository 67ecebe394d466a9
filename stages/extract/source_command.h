/*
 * source_command.h: an external decompressor behind source.h
 * ([input] decompressor, e.g. "lbzip2 -dc -n {threads}").
 *
 * A tuned decompressor can beat the built-in decoders, so a user may name
 * one. It runs as "/bin/sh -c CMD" in its own process group, reading the
 * input file as its stdin and writing the XML to a pipe that source.c
 * reads. Its stderr goes to an anonymous scratch file (a pipe nobody reads
 * could fill up and stall it), so that a failure can quote its first line.
 * Its exit status is part of the data: the output counts as complete only
 * once the command has exited 0.
 */
#ifndef SSTPIPE_EXTRACT_SOURCE_COMMAND_H
#define SSTPIPE_EXTRACT_SOURCE_COMMAND_H

#include "stages/common/error.h"

#include <stdint.h>

typedef struct source_command source_command;

/*
 * Starts cmd with every "{threads}" replaced by threads, stdin = input_fd
 * and stdout = a pipe (source_command_fd). name is the input's name for
 * errors; tmp_dir (NULL: $TMPDIR or /tmp) holds the stderr scratch file.
 */
source_command *source_command_start(const char *cmd, unsigned threads, int input_fd,
                                     const char *name, const char *tmp_dir, sp_error *err);

/* The read end of the command's stdout. */
int source_command_fd(const source_command *c);

/*
 * Call once its stdout reached the end: waits for the command and fails
 * unless it exited 0, quoting the first line of its stderr. A command still
 * running 10 s after closing its stdout is killed, and that is an error.
 */
int source_command_finish(source_command *c, sp_error *err);

/* Kills the command's process group if the command was not reaped yet (an
 * early stop), reaps it and closes its fds. */
void source_command_close(source_command *c);

#endif
