/*
 * get_cmd.c: `sstpipe get FILE KEY`, one point lookup through libsstpipe
 * (sstpipe.h): the in-memory index picks the block, which is read and
 * checked whole before its value is printed. Exit 0 found (the value and a
 * newline on stdout), SP_EXIT_NO not found, SP_EXIT_FAIL error.
 */
#include "pipeline/command/commands.h"
#include "pipeline/command/front.h"
#include "stages/common/cli.h"
#include "stages/sst/sstpipe.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

static const sp_operand operands[] = {{"FILE", SP_COMPLETE_FILE, NULL},
                                      {"KEY", SP_COMPLETE_NONE, NULL}};

static int run(sp_cmdline *cl) {
    const char *path = cl->operands[0];
    const char *key = cl->operands[1];
    int code = SP_EXIT_OK;
    sstpipe_table *t = sp_front_open_table(path, &code);
    if (!t)
        return code;
    const void *value;
    size_t vlen;
    char *msg = NULL;
    int found = sstpipe_get(t, key, strlen(key), &value, &vlen, &msg);
    sp_error err = {0};
    if (found < 0) {
        code = sp_cli_report_msg(msg, SP_EXIT_FAIL);
        sstpipe_free(msg);
    } else if (found == 0) {
        code = SP_EXIT_NO;
    } else if (sp_write_all(STDOUT_FILENO, value, vlen, "stdout", &err) ||
               sp_write_all(STDOUT_FILENO, "\n", 1, "stdout", &err)) {
        code = sp_cli_report(&err, SP_EXIT_FAIL);
    }
    sstpipe_close(t);
    return code;
}

const sp_command get_command =
    SP_COMMAND(get, run, SP_OPERANDS(operands, 2, 2, "expected FILE and KEY"));
