/*
 * generate.h: the files made from the command table at build time, so that
 * the man page and the shell completion list exactly what the parser and
 * --help do. `sstpipe --generate WHAT` (not in --help: it is the build's,
 * run by CMake through pipeline/cmake/fill-template.cmake)
 * prints one of them on stdout:
 *
 *   man-commands     sstpipe(1)'s COMMANDS: each command's synopsis,
 *                    description, every option with --help's own text, notes
 *   man-config       sstpipe(1)'s CONFIGURATION KEYS: every key, default, help
 *   bash-completion  the data of the bash completion: the commands, their
 *                    flags, what each argument and operand is, the --set keys
 */
#ifndef SSTPIPE_COMMAND_GENERATE_H
#define SSTPIPE_COMMAND_GENERATE_H

#include "pipeline/command/command.h"

#include <stdio.h>

void sp_generate_man_commands(FILE *out);
void sp_generate_man_config(FILE *out);
void sp_generate_bash_completion(FILE *out);

/* `sstpipe --generate WHAT` (argv[0] is "--generate"); returns the exit code. */
int sp_generate_main(int argc, char **argv);

#endif
