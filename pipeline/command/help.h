/*
 * help.h: `sstpipe CMD --help` and `sstpipe --help`, printed from the
 * command table (table.h), so the option list is the parser's own. It sits
 * between the table and the parser: the parser prints a command's help on
 * -h, and the man page (man_page.c) takes each flag's text from here.
 */
#ifndef SSTPIPE_COMMAND_HELP_H
#define SSTPIPE_COMMAND_HELP_H

#include "pipeline/command/table.h"

#include <stddef.h>
#include <stdio.h>

/* The help text of flag f (one of cmd's or of sp_common_flags) as
 * `sstpipe CMD --help` prints it, in buf or a constant, so the man page
 * says the same. */
const char *sp_flag_help(const sp_command *cmd, const sp_flag *f, char *buf, size_t cap);

/* `sstpipe CMD --help`. */
void sp_command_help(const sp_command *cmd, FILE *out);

/* `sstpipe --help`: the usage line and the summary of every command of
 * commands (NULL-terminated) that is not hidden. The list is passed in,
 * not looked up, since it names every command and so sits above them. */
void sp_commands_usage(const sp_command *const *commands, FILE *out);

#endif
