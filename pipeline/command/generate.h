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

#include "pipeline/command/table.h"

#include <stdio.h>

/* Each writes from commands, the command list (NULL-terminated), passed in
 * by sp_main since the list sits above every command. */
void sp_generate_man_commands(const sp_command *const *commands, FILE *out);
void sp_generate_man_config(const sp_command *const *commands, FILE *out);
void sp_generate_bash_completion(const sp_command *const *commands, FILE *out);

/* `sstpipe --generate WHAT` (argv[0] is "--generate"); returns the exit code. */
int sp_generate_main(const sp_command *const *commands, int argc, char **argv);

#endif
