/*
 * verify_cmd.c: `sstpipe verify FILE... [--json PATH]`.
 *
 * Every file is checked even after one fails, so one run answers for a whole
 * nightly batch. Exit 0: all clean; 1: problems found; 2: some file could not
 * be checked (or a usage error). Read size and the problems listed come
 * from [verify] of the config (-c FILE, --set).
 */
#include "stages/verify/verify.h"

#include "config/config.h"
#include "stages/common/cli.h"

#include <getopt.h>
#include <stdlib.h>

static void usage(FILE *out) {
    fprintf(out,
            "usage: sstpipe verify FILE... [-c FILE] [--set section.key=value]... [--json PATH]\n"
            "\n"
            "Reads every byte of each SSTable once and checks footer, checksums, block\n"
            "layout and padding, key order, index, counts, value bounds and UTF-8.\n"
            "Prints one line per problem (what, block, byte offset), then a summary line\n"
            "per file: records, blocks, bytes, seconds, MB/s, OK or the problem count.\n"
            "\n"
            "  -c, --config FILE  INI file; this command reads [verify] read_size and\n"
            "                     max_problems (precedence: defaults < FILE < --set)\n"
            "      --set S.K=V    set one key (repeatable), e.g. --set verify.max_problems=10\n"
            "  --json PATH        also write the report as JSON (fields in\n"
            "                     stages/verify/README.md)\n"
            "  -h, --help         this help\n"
            "\n"
            "exit status: 0 all files clean, 1 problems found, 2 a file could not be\n"
            "checked (missing, unreadable, not an SSTable) or bad usage\n");
}

/* The command line once -c/--set are applied; returns the exit code. */
static int verify_args(const sp_config *cfg, int argc, char **argv) {
    static const struct option longopts[] = {
        {"json", required_argument, NULL, 'j'}, {"help", no_argument, NULL, 'h'}, {0}};
    const char *json_path = NULL;
    optind = 0;
    opterr = 0;
    int ch;
    while ((ch = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
        switch (ch) {
        case 'j':
            json_path = optarg;
            break;
        case 'h':
            usage(stdout);
            return SP_EXIT_OK;
        default:
            return sp_cli_bad_option("verify", argv);
        }
    }
    int n = argc - optind;
    if (n < 1)
        return sp_cli_usage_error("verify", "no FILE given");
    verify_options opts;
    verify_options_init(&opts);
    opts.read_size = (size_t)cfg->verify.read_size;
    opts.max_problems = (size_t)cfg->verify.max_problems;
    verify_report *reps = calloc((size_t)n, sizeof *reps);
    if (!reps) {
        sp_error err = {0};
        sp_errorf(&err, "verify: out of memory");
        return sp_cli_report(&err, SP_EXIT_USAGE);
    }
    int code = SP_EXIT_OK;
    for (int i = 0; i < n; i++) {
        sp_error err = {0};
        verify_report_init(&reps[i], &opts);
        if (verify_file(argv[optind + i], &reps[i], &err)) {
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

int verify_cmd(int argc, char **argv) {
    sp_config cfg;
    config_init(&cfg);
    sp_error err = {0};
    int rc = config_parse_args(&cfg, &argc, argv, &err) ? sp_cli_report(&err, SP_EXIT_USAGE)
                                                        : verify_args(&cfg, argc, argv);
    config_destroy(&cfg);
    return rc;
}
