/*
 * commands.h: every command's table entry, each defined in its front end
 * (*_cmd.c) and listed in sp_commands[] (commands.c), and `sstpipe COMMAND
 * ARGS...` itself: the top of the command layer.
 */
#ifndef SSTPIPE_COMMAND_COMMANDS_H
#define SSTPIPE_COMMAND_COMMANDS_H

#include "pipeline/command/command.h"

extern const sp_command build_command;
extern const sp_command extract_command;
extern const sp_command truncate_command;
extern const sp_command sort_command;
extern const sp_command write_command;
extern const sp_command merge_command;
extern const sp_command get_command;
extern const sp_command suggest_command;
extern const sp_command dump_command;
extern const sp_command info_command;
extern const sp_command verify_command;
extern const sp_command profile_command;
extern const sp_command config_command;
extern const sp_command iotest_command;
extern const sp_command tune_command;
extern const sp_command nightly_command;
extern const sp_command serve_command;
extern const sp_command report_command;
extern const sp_command task_command;

/* Every command, in `sstpipe --help` order; NULL-terminated. */
extern const sp_command *const sp_commands[];

/* The command called name, or NULL. */
const sp_command *sp_command_find(const char *name);

/* The whole command line: `sstpipe COMMAND ARGS...`. */
int sp_main(int argc, char **argv);

#endif
