/*
 * merge_cmd.c: `sstpipe merge`, the command line of table_merge.c.
 *
 * The output's block and cluster sizes are the first input's unless the
 * flags say otherwise (a config's [sst] sizes describe builds, not the
 * tables being merged, so they do not apply; -c and --set are accepted as
 * by every command).
 */
#include "stages/merge/merge.h"

#include "config/config.h"
#include "stages/common/cli.h"
#include "stages/common/size.h"
#include "stages/merge/table_merge.h"
#include "stages/sst/format.h"

#include <getopt.h>
#include <stdio.h>
#include <string.h>

static void usage(FILE *out) {
    fprintf(out,
            "usage: sstpipe merge -o OUT IN1 IN2 ... [--block-size SIZE] [--cluster-size SIZE]\n"
            "                     [--canonical] [-v]\n\n"
            "Merges SSTables into one: every key of the inputs once; where several inputs\n"
            "hold a key, the value from the last of them wins. Blocks of the largest input\n"
            "that no key of the others falls into are copied as they are.\n\n"
            "  -o, --output FILE     the SSTable to write (required; written atomically)\n"
            "  --block-size SIZE     data block size (default: the first input's)\n"
            "  --cluster-size SIZE   region alignment (default: the first input's)\n"
            "  --canonical           re-encode every record: the same bytes as a build of the\n"
            "                        inputs' dumps concatenated (no block is copied)\n"
            "  -v, --verbose         print a stats line on stderr\n"
            "  -h, --help            show this help\n");
}

enum { OPT_BLOCK = 256, OPT_CLUSTER, OPT_CANONICAL };

static int merge_args(int argc, char **argv) {
    static const struct option longopts[] = {
        {"output", required_argument, NULL, 'o'},
        {"block-size", required_argument, NULL, OPT_BLOCK},
        {"cluster-size", required_argument, NULL, OPT_CLUSTER},
        {"canonical", no_argument, NULL, OPT_CANONICAL},
        {"verbose", no_argument, NULL, 'v'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    const char *out_path = NULL;
    bool verbose = false;
    table_merge_options o;
    table_merge_options_init(&o);
    sp_error err = {0};
    uint64_t v;
    optind = 0;
    opterr = 0;
    int c;
    while ((c = getopt_long(argc, argv, ":o:vh", longopts, NULL)) != -1) {
        switch (c) {
        case 'o':
            out_path = optarg;
            break;
        case OPT_BLOCK:
            if (sp_parse_pow2_size(optarg, "--block-size", SST_MIN_BLOCK_SIZE, SST_MAX_BLOCK_SIZE,
                                   &v, &err))
                return sp_cli_report(&err, SP_EXIT_USAGE);
            o.block_size = (uint32_t)v;
            break;
        case OPT_CLUSTER:
            if (sp_parse_pow2_size(optarg, "--cluster-size", SST_MIN_CLUSTER_SIZE,
                                   SST_MAX_CLUSTER_SIZE, &v, &err))
                return sp_cli_report(&err, SP_EXIT_USAGE);
            o.cluster_size = (uint32_t)v;
            break;
        case OPT_CANONICAL:
            o.canonical = true;
            break;
        case 'v':
            verbose = true;
            break;
        case 'h':
            usage(stdout);
            return SP_EXIT_OK;
        default:
            return sp_cli_bad_option("merge", argv);
        }
    }
    if (!out_path)
        return sp_cli_usage_error("merge", "-o FILE is required");
    if (!strcmp(out_path, "-"))
        return sp_cli_usage_error("merge", "-o must name a file, not stdout");
    if (argc - optind < 1)
        return sp_cli_usage_error("merge", "expected at least one input table");
    table_merge_stats st;
    if (table_merge(out_path, (const char *const *)argv + optind, (unsigned)(argc - optind), &o,
                    &st, &err))
        return sp_cli_report(&err, SP_EXIT_FAIL);
    if (verbose)
        table_merge_stats_print(stderr, &st);
    return SP_EXIT_OK;
}

int merge_cmd(int argc, char **argv) {
    sp_config cfg;
    config_init(&cfg);
    sp_error err = {0};
    int rc = config_parse_args(&cfg, &argc, argv, &err) ? sp_cli_report(&err, SP_EXIT_USAGE)
                                                        : merge_args(argc, argv);
    config_destroy(&cfg);
    return rc;
}
