/*
 * verify_cmd.c: `sstpipe verify FILE... [--json PATH]`.
 *
 * Every file is checked even after one fails, so one run answers for a whole
 * nightly batch. Exit 0: all clean; 1: problems found; 2: some file could not
 * be checked (or a usage error).
 */
#include "stages/verify/verify.h"

#include "stages/common/cli.h"

#include <getopt.h>
#include <stdlib.h>

static void usage(FILE *out) {
    fprintf(out,
            "usage: sstpipe verify FILE... [--json PATH]\n"
            "\n"
            "Reads every byte of each SSTable once and checks footer, checksums, block\n"
            "layout and padding, key order, index, counts, value bounds and UTF-8.\n"
            "Prints one line per problem (what, block, byte offset), then a summary line\n"
            "per file: records, blocks, bytes, seconds, MB/s, OK or the problem count.\n"
            "\n"
            "  --json PATH   also write the report as JSON (fields in stages/verify/README.md)\n"
            "  -h, --help    this help\n"
            "\n"
            "exit status: 0 all files clean, 1 problems found, 2 a file could not be\n"
            "checked (missing, unreadable, not an SSTable) or bad usage\n");
}

int verify_cmd(int argc, char **argv) {
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
    verify_report *reps = calloc((size_t)n, sizeof *reps);
    if (!reps) {
        sp_error err = {0};
        sp_errorf(&err, "verify: out of memory");
        return sp_cli_report(&err, SP_EXIT_USAGE);
    }
    int code = SP_EXIT_OK;
    for (int i = 0; i < n; i++) {
        sp_error err = {0};
        verify_report_init(&reps[i], NULL);
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
