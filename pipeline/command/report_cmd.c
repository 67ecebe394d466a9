/* report_cmd.c: `sstpipe report DIR`, (re)writing a nightly output directory's pages. */
#include "pipeline/command/commands.h"
#include "pipeline/nightly/nightly.h"
#include "pipeline/nightly/nightly_dirs.h"
#include "pipeline/nightly/report.h"
#include "stages/common/cli.h"

#include <limits.h>
#include <stdio.h>
#include <unistd.h>

static int run(sp_cmdline *cl) {
    const char *dir = cl->operands[0];
    sp_error err = {0};
    char **names;
    size_t n;
    if (report_list_builds(dir, &names, &n, &err))
        return sp_cli_report(&err, SP_EXIT_FAIL);
    /* The nightly's lock: one writer of the pages at a time, so that the
     * temporary files found are a killed writer's, safe to remove. */
    int lock_fd;
    pid_t holder;
    int lk = nightly_lock(dir, &lock_fd, &holder, &err);
    if (lk != 0) {
        report_list_free(names, n);
        if (lk > 0)
            sp_errorf(&err,
                      "%s/.lock: a nightly run (pid %ld) is in progress; it writes the "
                      "pages when it ends",
                      dir, (long)holder);
        return sp_cli_report(&err,
                             nightly_exit_code(lk > 0 ? NIGHTLY_LOCKED : NIGHTLY_NOT_STARTED));
    }
    if (report_remove_stale(dir, &err) < 0) {
        report_list_free(names, n);
        close(lock_fd);
        return sp_cli_report(&err, SP_EXIT_FAIL);
    }
    /* Every page that can be written is: one unreadable manifest costs its
     * own report (and is named), not the others'. */
    size_t failed = 0;
    for (size_t i = 0; i < n; i++) {
        char build[PATH_MAX];
        snprintf(build, sizeof build, "%s/%s", dir, names[i]);
        sp_error e = {0};
        if (report_write_build(build, &e)) {
            sp_cli_report(&e, SP_EXIT_FAIL);
            failed++;
        }
    }
    report_list_free(names, n);
    size_t rows = 0;
    int rc = report_write_index(dir, &rows, &err);
    close(lock_fd);
    if (rc)
        return sp_cli_report(&err, SP_EXIT_FAIL);
    printf("wrote %s/" REPORT_INDEX " (%zu builds) and %zu " REPORT_PAGE "\n", dir, rows,
           n - failed);
    return failed ? SP_EXIT_FAIL : SP_EXIT_OK;
}

static const sp_operand operands[] = {{"DIR", SP_COMPLETE_DIR, NULL}};

const sp_command report_command =
    SP_COMMAND(report, run, SP_OPERANDS(operands, 1, 1, "expected one DIR"));
