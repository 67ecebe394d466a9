/*
 * command.h: the parser every command's table entry (table.h) yields.
 *
 * -c FILE and --set (config_parse_args) go first, then the flags through
 * getopt_long built from the table; a flag with a key is stored in the
 * config with the flag as its origin, so the stage options all come from
 * config keys (config_apply.h); the operand count is checked; then
 * run() gets an sp_cmdline. -h prints the command's help (help.h).
 *
 * A new flag is one line in its command's flags[] (and an index in its
 * enum when run() reads it itself); a new command is one sp_command in its
 * *_cmd.c and one line in commands.c.
 */
#ifndef SSTPIPE_COMMAND_COMMAND_H
#define SSTPIPE_COMMAND_COMMAND_H

#include "config/config.h"
#include "pipeline/command/table.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

/* One flag as given, for a command that reads its flags in order. */
typedef struct sp_given {
    size_t flag;       /* index in cmd->flags */
    const char *value; /* its argument, or NULL for a switch */
} sp_given;

/* What run() gets: the command line, parsed. */
struct sp_cmdline {
    const sp_command *cmd;
    sp_config cfg;                   /* defaults < -c FILE < --set < the flags with keys */
    const char *value[SP_MAX_FLAGS]; /* the last argument of each flag; NULL if not given */
    unsigned count[SP_MAX_FLAGS];    /* how many times each flag was given */
    sp_given *given;                 /* every flag without a key, in command-line order */
    size_t n_given;
    char **operands;
    int n_operands;
};

/*
 * Parses argv (argv[0] is the command's name) and runs cmd; returns the exit
 * code. A bad flag, value or operand count, an --output that cannot be
 * written and a FILE operand that does not exist are refused (exit 2),
 * named on stderr, before any work.
 */
int sp_command_main(const sp_command *cmd, int argc, char **argv);

/* The usage error for a wrong operand count (cmd->operand_error); returns 2. */
int sp_cmdline_operand_error(const sp_cmdline *cl);

/* The INPUT operand, "-" (stdin) when there is none. */
static inline const char *sp_cmdline_input(const sp_cmdline *cl) {
    return cl->n_operands ? cl->operands[0] : "-";
}

/* Whether to show the live progress line: [progress] show (--progress,
 * --no-progress), auto meaning when stderr is a terminal. */
bool sp_cmdline_progress(const sp_cmdline *cl);

/* Whether flag i was given. */
static inline bool sp_cmdline_has(const sp_cmdline *cl, size_t i) {
    return cl->count[i] > 0;
}

#endif
