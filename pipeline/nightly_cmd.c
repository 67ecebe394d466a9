/* nightly_cmd.c: the `sstpipe nightly` command line; the run itself is nightly.c. */
#include "pipeline/nightly.h"

#include "stages/common/cli.h"
#include "stages/common/size.h"
#include "stages/sst/format.h"

#include <getopt.h>
#include <stdio.h>

static const char usage[] =
    "usage: sstpipe nightly -c FILE [--set section.key=value]... [-o DIR] [INPUT]\n"
    "\n"
    "One unattended build: the newest dump matching [input] path (or INPUT) is\n"
    "built into a staging directory under [output] dir, verified, profiled and,\n"
    "only if verify passed, published as DIR/builds/<UTC>-<input> with DIR/current\n"
    "pointing at it. A failed run leaves its log and manifest in DIR/failed/ and\n"
    "never touches current. Keeps the newest [output] keep builds.\n"
    "\n"
    "  -c, --config FILE     INI file (see config/default.ini, config/nightly.ini)\n"
    "      --set S.K=V       set one key (repeatable), e.g. --set output.keep=3\n"
    "  -o, --output-dir DIR  overrides [output] dir\n"
    "  -h, --help            this help\n"
    "\n"
    "Exit codes: 0 published; 1 build failed (see DIR/failed/); 2 usage or config\n"
    "error; 3 verify found problems (not published); 4 another run holds the lock;\n"
    "5 not enough free disk space.\n";

int nightly_cmd(int argc, char **argv) {
    static const struct option longopts[] = {
        {"output-dir", required_argument, NULL, 'o'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    sp_config cfg;
    config_init(&cfg);
    sp_error err = {0};
    int rc = SP_EXIT_OK;
    if (config_parse_args(&cfg, &argc, argv, &err)) {
        rc = sp_cli_report(&err, SP_EXIT_USAGE);
        goto out;
    }
    int c;
    optind = 0;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "o:h", longopts, NULL)) != -1) {
        switch (c) {
        case 'o':
            if (config_set_flag(&cfg, CONFIG_OUTPUT_DIR, "--output-dir", optarg, &err)) {
                rc = sp_cli_report(&err, SP_EXIT_USAGE);
                goto out;
            }
            break;
        case 'h':
            fputs(usage, stdout);
            goto out;
        default:
            rc = sp_cli_bad_option("nightly", argv);
            goto out;
        }
    }
    if (optind < argc - 1) {
        rc = sp_cli_usage_error("nightly", "expected at most one INPUT");
        goto out;
    }
    if (!*cfg.output.dir) {
        rc = sp_cli_usage_error("nightly", "[output] dir is not set (-c FILE, --set output.dir=DIR "
                                           "or -o DIR)");
        goto out;
    }
    if (optind == argc && !*cfg.input.path) {
        rc = sp_cli_usage_error("nightly", "no INPUT given and [input] path is not set");
        goto out;
    }
    /* Options a record could not fit are refused now, not after the dump is read. */
    if (sst_check_fit((uint32_t)cfg.sst.block_size, (uint32_t)cfg.truncate.max_bytes, &err)) {
        rc = sp_cli_report(&err, SP_EXIT_USAGE);
        goto out;
    }
    rc = nightly_run(&cfg, optind < argc ? argv[optind] : NULL);
out:
    config_destroy(&cfg);
    return rc;
}
