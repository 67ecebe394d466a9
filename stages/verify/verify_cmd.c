/*
 * verify_cmd.c: `sstpipe verify FILE... [--json PATH]`.
 *
 * Every file is checked even after one fails, so one run answers for a whole
 * nightly batch. Exit 0: all clean; 1: problems found; 2: some file could not
 * be checked (or a usage error). Read size and the problems listed come
 * from [verify] of the config (-c FILE, --set). On a terminal (or with
 * --progress) each file's check shows the live progress line.
 */
#include "stages/verify/verify.h"

#include "pipeline/command/commands.h"
#include "pipeline/command/flags.h"
#include "pipeline/config_apply.h"
#include "stages/common/cli.h"

#include <stdlib.h>

enum { F_JSON, F_PROGRESS, F_NO_PROGRESS };

static const sp_flag flags[] = {
    [F_JSON] = {"json", 0, "PATH", 0, NULL,
                "also write the report as JSON (fields in stages/verify/README.md)",
                SP_COMPLETE_FILE, NULL},
    [F_PROGRESS] = SP_FLAG_PROGRESS,
    [F_NO_PROGRESS] = SP_FLAG_NO_PROGRESS,
};

static int run(sp_cmdline *cl) {
    int n = cl->n_operands;
    const char *json_path = cl->value[F_JSON];
    verify_options opts;
    verify_options_init(&opts);
    config_apply_verify(&cl->cfg, &opts);
    verify_report *reps = calloc((size_t)n, sizeof *reps);
    if (!reps) {
        sp_error err = {0};
        sp_errorf(&err, "verify: out of memory");
        return sp_cli_report(&err, SP_EXIT_USAGE);
    }
    /* One live line per file, ended before its report goes to stdout, so the
     * two never share a line on a terminal. */
    sp_progress prog;
    bool show = sp_cmdline_progress(cl);
    int code = SP_EXIT_OK;
    for (int i = 0; i < n; i++) {
        sp_error err = {0};
        sp_meter *meter = NULL;
        if (show) {
            sp_progress_init(&prog, cl->operands[i]);
            sp_progress_phase(&prog, SP_PHASE_CHECKING);
            if (n > 1) {
                sp_progress_steps(&prog, "file", (uint64_t)n);
                sp_progress_store(&prog.step, (uint64_t)i + 1);
            }
            opts.progress = &prog;
            meter = sp_meter_start("verify", &prog, stderr);
        }
        verify_report_init(&reps[i], &opts);
        int rc = verify_file(cl->operands[i], &reps[i], &err);
        sp_meter_stop(meter, rc == 0);
        if (rc) {
            fflush(stdout);
            sp_cli_report(&err, SP_EXIT_USAGE);
            code = SP_EXIT_USAGE;
            continue;
        }
        verify_report_print(&reps[i], stdout);
        if (reps[i].problem_count && code == SP_EXIT_OK)
            code = SP_EXIT_FAIL;
    }
    fflush(stdout);
    if (json_path) {
        sp_error err = {0};
        if (verify_write_json(reps, (size_t)n, json_path, &err)) {
            sp_cli_report(&err, SP_EXIT_USAGE);
            code = SP_EXIT_USAGE;
        }
    }
    for (int i = 0; i < n; i++)
        verify_report_destroy(&reps[i]);
    free(reps);
    return code;
}

const sp_command verify_command = {
    .name = "verify",
    .summary = "check every byte of SSTables (checksums, order, index, counts)",
    .synopsis = "FILE... [options]",
    .description = "Reads every byte of each SSTable once and checks footer, checksums, block\n"
                   "layout and padding, key order, index, counts, value bounds and UTF-8.\n"
                   "Prints one line per problem (what, block, byte offset), then a summary line\n"
                   "per file: records, blocks, bytes, seconds, MB/s, OK or the problem count.",
    .config_help = "this command reads [verify] read_size and max_problems",
    .notes = "exit status: 0 all files clean, 1 problems found, 2 a file could not be\n"
             "checked (missing, unreadable, not an SSTable) or bad usage",
    SP_FLAGS(flags),
    SP_OPERANDS(sp_file_operand, 1, -1, "no FILE given"),
    .run = run,
};
