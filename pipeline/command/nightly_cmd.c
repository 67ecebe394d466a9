/* nightly_cmd.c: the `sstpipe nightly` command line: checks the options,
 * runs nightly.c with its log echoed to stderr (progress as a live line on
 * a terminal), and prints how the run ended and exits with its code. */
#include "pipeline/nightly/nightly.h"

#include "pipeline/command/commands.h"
#include "stages/common/cli.h"
#include "stages/sst/format.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

static const sp_flag flags[] = {
    {"output-dir", 'o', "DIR", SP_KEY(CONFIG_OUTPUT_DIR), NULL, NULL, SP_COMPLETE_DIR, NULL},
};

static int run(sp_cmdline *cl) {
    sp_config *cfg = &cl->cfg;
    sp_error err = {0};
    if (!*cfg->output.dir)
        return sp_cli_usage_error("nightly", "[output] dir is not set (-c FILE, --set "
                                             "output.dir=DIR or -o DIR)");
    if (!cl->n_operands && !*cfg->input.path)
        return sp_cli_usage_error("nightly", "no INPUT given and [input] path is not set");
    if (*cfg->input.deletions && !*cfg->input.incremental)
        return sp_cli_usage_error("nightly", "[input] deletions applies to an incremental "
                                             "nightly: set [input] incremental too");
    /* Options a record could not fit are refused now, not after the dump is read. */
    if (sst_check_fit((uint32_t)cfg->sst.block_size, (uint32_t)cfg->truncate.max_bytes, &err))
        return sp_cli_report(&err, SP_EXIT_USAGE);
    nightly_options o;
    nightly_options_init(&o, cfg);
    o.input = cl->n_operands ? cl->operands[0] : NULL;
    o.echo = stderr;
    o.live = isatty(STDERR_FILENO);
    nightly_result res;
    int rc = nightly_run(&o, &res, &err);
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
               SP_OPERANDS(sp_input_operand, 0, 1, "expected at most one INPUT"));
