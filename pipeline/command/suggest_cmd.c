/*
 * suggest_cmd.c: `sstpipe suggest FILE TEXT [--limit N]`, the titles that
 * start with TEXT, case and accents ignored, ranked (sstpipe_suggest,
 * sstpipe.h), one a line.
 */
#include "pipeline/command/commands.h"
#include "pipeline/command/front.h"
#include "stages/common/cli.h"
#include "stages/common/utf8.h"
#include "stages/sst/sstpipe.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Titles printed without --limit. */
#define SUGGEST_DEFAULT_LIMIT 10

enum { F_LIMIT };
static const sp_flag flags[] = {
    [F_LIMIT] = SP_ARG("limit", "N", "titles printed, 1 to 100 (10)", SP_COMPLETE_NONE),
};

static const sp_operand operands[] = {{"FILE", SP_COMPLETE_FILE, NULL},
                                      {"TEXT", SP_COMPLETE_NONE, NULL}};

static int run(sp_cmdline *cl) {
    const char *path = cl->operands[0], *text = cl->operands[1];
    size_t limit = SUGGEST_DEFAULT_LIMIT;
    if (cl->value[F_LIMIT]) {
        char *end;
        unsigned long long v = strtoull(cl->value[F_LIMIT], &end, 10);
        if (*end || end == cl->value[F_LIMIT] || v < 1 || v > SSTPIPE_SUGGEST_MAX)
            return sp_cli_usage_error("suggest", "--limit %s: a limit is 1 to %d",
                                      cl->value[F_LIMIT], SSTPIPE_SUGGEST_MAX);
        limit = (size_t)v;
    }
    size_t len = strlen(text);
    if (len == 0 || len > SSTPIPE_TITLE_MAX || !sp_utf8_valid((const uint8_t *)text, len, NULL))
        return sp_cli_usage_error("suggest", "TEXT must be 1 to %d bytes of UTF-8",
                                  SSTPIPE_TITLE_MAX);
    int code;
    sstpipe_table *t = sp_front_open_table(path, &code);
    if (!t)
        return code;
    sstpipe_suggestion *s = calloc(limit, sizeof *s);
    char *msg = NULL;
    int n = s ? sstpipe_suggest(t, text, len, limit, s, &msg) : -1;
    if (n < 0) {
        code = sp_cli_report_msg(msg ? msg : "out of memory", SP_EXIT_FAIL);
        sstpipe_free(msg);
    } else {
        for (int i = 0; i < n; i++)
            printf("%s%s\n", s[i].title, s[i].redirect ? "\t(a redirect)" : "");
        code = n > 0 ? SP_EXIT_OK : SP_EXIT_NO;
        if (fflush(stdout) || ferror(stdout))
            code = sp_cli_report_msg("stdout: cannot write", SP_EXIT_FAIL);
    }
    free(s);
    sstpipe_close(t);
    return code;
}

const sp_command suggest_command = SP_COMMAND(
    suggest, run, SP_FLAGS(flags), SP_OPERANDS(operands, 2, 2, "expected FILE and TEXT"));
