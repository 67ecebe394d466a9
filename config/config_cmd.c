/* config_cmd.c: `sstpipe config show`, the effective configuration and where each value came from.
 */
#include "config/config.h"

#include "stages/common/cli.h"

#include <getopt.h>
#include <stdio.h>
#include <string.h>

static const char usage[] =
    "usage: sstpipe config show [-c FILE] [--set section.key=value]... [--json]\n"
    "\n"
    "Prints every configuration key with its effective value and where that value\n"
    "came from: default, FILE:LINE, or --set. Precedence: defaults < -c FILE <\n"
    "--set < a command's own flags. config/default.ini lists every key.\n"
    "\n"
    "  -c, --config FILE   INI file to read\n"
    "      --set S.K=V     set one key (repeatable), e.g. --set sst.block_size=16K\n"
    "      --json          print the configuration as JSON\n"
    "  -h, --help          this help\n";

int config_cmd(int argc, char **argv) {
    static const struct option longopts[] = {
        {"json", no_argument, NULL, 'j'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    sp_config cfg;
    config_init(&cfg);
    sp_error err = {0};
    if (config_parse_args(&cfg, &argc, argv, &err)) {
        config_destroy(&cfg);
        return sp_cli_report(&err, SP_EXIT_USAGE);
    }
    bool json = false;
    int c;
    optind = 0;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
        switch (c) {
        case 'j':
            json = true;
            break;
        case 'h':
            fputs(usage, stdout);
            config_destroy(&cfg);
            return SP_EXIT_OK;
        default:
            config_destroy(&cfg);
            return sp_cli_bad_option("config", argv);
        }
    }
    int rc = SP_EXIT_OK;
    if (optind != argc - 1 || strcmp(argv[optind], "show")) {
        rc = sp_cli_usage_error("config", "expected the subcommand 'show'");
    } else if (json) {
        json_t *j = config_to_json(&cfg);
        json_dumpf(j, stdout, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
        fputc('\n', stdout);
        json_decref(j);
    } else {
        config_print(&cfg, stdout);
    }
    config_destroy(&cfg);
    return rc;
}
