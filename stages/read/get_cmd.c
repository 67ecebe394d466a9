/*
 * get_cmd.c: `sstpipe get FILE KEY`, one point lookup through libsstpipe
 * (sstpipe.h): the in-memory index picks the block, which is read and
 * checked whole before its value is printed. Exit 0 found (the value and a
 * newline on stdout), 1 not found, 2 error.
 */
#include "stages/read/read.h"

#include "config/config.h"
#include "stages/common/cli.h"
#include "stages/sst/sstpipe.h"

#include <getopt.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define GET_NOT_FOUND 1
#define GET_ERROR 2

static void usage(FILE *out) {
    fprintf(out, "usage: sstpipe get FILE KEY [-c FILE] [--set section.key=value]...\n"
                 "       sstpipe get FILE -- KEY   (for a KEY starting with -c or --set)\n\n"
                 "Prints the value stored under KEY and a newline.\n"
                 "Exit status: 0 found, 1 not found, 2 error.\n\n"
                 "  -c, --config FILE  accepted as by every command; no key applies to get\n"
                 "      --set S.K=V    likewise (a bad file or key is still an error)\n"
                 "  -h, --help         show this help\n");
}

int get_cmd(int argc, char **argv) {
    static const struct option longopts[] = {
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    sp_error cfg_err = {0};
    if (config_check_args(&argc, argv, &cfg_err))
        return sp_cli_report(&cfg_err, GET_ERROR);
    optind = 0;
    opterr = 0;
    int c;
    /* "+": a key may start with '-' once FILE came first. */
    while ((c = getopt_long(argc, argv, "+:h", longopts, NULL)) != -1) {
        if (c != 'h')
            return sp_cli_bad_option("get", argv);
        usage(stdout);
        return SP_EXIT_OK;
    }
    /* "+" stops getopt at FILE, so a "--" between FILE and KEY (needed to
     * keep config_parse_args off a key like "-cX") is still here. */
    if (argc - optind == 3 && !strcmp(argv[optind + 1], "--")) {
        argv[optind + 1] = argv[optind];
        optind++;
    }
    if (argc - optind != 2)
        return sp_cli_usage_error("get", "expected FILE and KEY");
    const char *path = argv[optind];
    const char *key = argv[optind + 1];

    char *msg = NULL;
    sstpipe_table *t = sstpipe_open(path, &msg);
    if (!t) {
        int code = sp_cli_report_msg(msg, GET_ERROR);
        sstpipe_free(msg);
        return code;
    }
    const void *value;
    size_t vlen;
    int found = sstpipe_get(t, key, strlen(key), &value, &vlen, &msg);
    int code = SP_EXIT_OK;
    sp_error err = {0};
    if (found < 0) {
        code = sp_cli_report_msg(msg, GET_ERROR);
        sstpipe_free(msg);
    } else if (found == 0) {
        code = GET_NOT_FOUND;
    } else if (sp_write_all(STDOUT_FILENO, value, vlen, "stdout", &err) ||
               sp_write_all(STDOUT_FILENO, "\n", 1, "stdout", &err)) {
        code = sp_cli_report(&err, GET_ERROR);
    }
    sstpipe_close(t);
    return code;
}
