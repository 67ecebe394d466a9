/* nightly_cmd.c: the `sstpipe nightly` command line: checks the options,
 * runs nightly.c with its log echoed to stderr (progress as a live line on
 * a terminal), and prints how the run ended and exits with its code. */
#include "pipeline/nightly/nightly.h"

#include "pipeline/command/commands.h"
#include "pipeline/command/config_apply.h"
#include "stages/common/cli.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

enum { F_OUTPUT_DIR, F_FORCE };

static const sp_flag flags[] = {
    [F_OUTPUT_DIR] = {"output-dir", 'o', "DIR", SP_KEY(CONFIG_OUTPUT_DIR), NULL, NULL,
                      SP_COMPLETE_DIR, NULL},
    [F_FORCE] = {"force", 0, NULL, 0, NULL,
                 "build and publish even when current was published from the same input",
                 SP_COMPLETE_NONE, NULL},
};

static int run(sp_cmdline *cl) {
    sp_error err = {0};
    bool usage;
    if (config_check_nightly(&cl->cfg, cl->n_operands > 0, &usage, &err))
        return usage ? sp_cli_usage_error("nightly", "%s", err.msg)
                     : sp_cli_report(&err, SP_EXIT_USAGE);
    nightly_options o;
    nightly_options_init(&o);
    if (config_apply_nightly(&cl->cfg, &o, &err)) {
        nightly_options_destroy(&o);
        return sp_cli_report(&err, SP_EXIT_FAIL);
    }
    o.input = cl->n_operands ? cl->operands[0] : NULL;
    o.force = sp_cmdline_has(cl, F_FORCE);
    o.echo = stderr;
    o.live = isatty(STDERR_FILENO);
    nightly_result res;
    int rc = nightly_run(&o, &res, &err);
    nightly_options_destroy(&o);
    int code = nightly_exit_code(res.outcome);
    if (rc == 0) {
        if (res.log_errno)
            fprintf(stderr, "sstpipe: nightly: warning: %s: lines after publishing lost: %s\n",
                    res.log_path, strerror(res.log_errno));
        return code;
    }
    switch (res.outcome) {
    case NIGHTLY_FAILED:
    case NIGHTLY_VERIFY_FAILED:
    case NIGHTLY_NO_SPACE: /* the run began: its log says the rest */
        fprintf(stderr, "sstpipe: nightly: %s\n", err.msg);
        return code;
    default:
        return sp_cli_report(&err, code);
    }
}

const sp_command nightly_command =
    SP_COMMAND(nightly, run, SP_FLAGS(flags),
               SP_OPERANDS(sp_input_operand, 0, 1, "expected at most one INPUT"),
               .reports_missing_files = true);
