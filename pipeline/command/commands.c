/*
 * commands.c: the list of sstpipe's commands and `sstpipe COMMAND ARGS...`
 * itself, which finds the command and hands it its arguments.
 */
#include "pipeline/command/commands.h"
#include "pipeline/command/generate.h"
#include "pipeline/command/help.h"

#include "config/keys.h"
#include "stages/common/cli.h"
#include "stages/common/version.h"
#include "stages/sst/sstpipe.h"

#include <stdio.h>
#include <string.h>

const sp_command *const sp_commands[] = {
    &build_command,   &extract_command, &truncate_command, &sort_command,   &write_command,
    &merge_command,   &get_command,     &suggest_command,  &dump_command,   &info_command,
    &verify_command,  &profile_command, &config_command,   &iotest_command, &tune_command,
    &nightly_command, &serve_command,   &report_command,   &task_command,   NULL,
};

const sp_command *sp_command_find(const char *name) {
    for (size_t i = 0; sp_commands[i]; i++)
        if (!strcmp(sp_commands[i]->name, name))
            return sp_commands[i];
    return NULL;
}

int sp_main(int argc, char **argv) {
    if (argc < 2) {
        sp_commands_usage(sp_commands, stderr);
        return SP_EXIT_USAGE;
    }
    if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
        sp_commands_usage(sp_commands, stdout);
        return SP_EXIT_OK;
    }
    if (!strcmp(argv[1], "--generate"))
        return sp_generate_main(sp_commands, argc - 1, argv + 1);
    if (!strcmp(argv[1], "--version")) {
        /* Two versions, each said for what it is: the program's (the
         * project's, which reports record) and the library's, whose major
         * is the ABI (its SONAME). */
        const char *lib = sstpipe_version();
        printf("sstpipe %s\n"
               "libsstpipe %s: the library's ABI version (libsstpipe.so.%.*s), not the program's "
               "above\n",
               sp_version(), lib, (int)strcspn(lib, "."), lib);
        return SP_EXIT_OK;
    }
    const sp_command *cmd = sp_command_find(argv[1]);
    if (cmd)
        return sp_command_main(cmd, argc - 1, argv + 1);
    /* One line, with the command meant when one is near; the list of them
     * is `sstpipe --help`. */
    const char *meant = NULL;
    size_t best = config_typo_limit(argv[1]) + 1;
    for (size_t i = 0; sp_commands[i]; i++) {
        size_t d = config_edit_distance(argv[1], sp_commands[i]->name);
        if (!sp_commands[i]->hidden && d < best) {
            meant = sp_commands[i]->name;
            best = d;
        }
    }
    if (meant)
        fprintf(stderr, "sstpipe: unknown command '%s', did you mean %s? (see sstpipe --help)\n",
                argv[1], meant);
    else
        fprintf(stderr, "sstpipe: unknown command '%s' (see sstpipe --help)\n", argv[1]);
    return SP_EXIT_USAGE;
}
