/*
 * build_cmd.c: the `sstpipe build` command line; the pipeline itself is
 * build.c. Every option is a config key (-c FILE, --set), which the flags
 * override; config_apply_build turns the result into build options.
 */
#include "pipeline/build.h"

#include "config/config.h"
#include "pipeline/config_apply.h"
#include "stages/common/cli.h"
#include "stages/sst/format.h"

#include <getopt.h>
#include <stdio.h>

static const char usage[] =
    "usage: sstpipe build INPUT -o FILE [-c FILE] [--set section.key=value]... [options]\n"
    "\n"
    "Turns a MediaWiki XML dump (bz2, gz, xz, zst or plain; '-' for stdin) into an\n"
    "SSTable: one record per page, key = title, value = the first max-bytes of the\n"
    "last revision's text. Same bytes as extract | truncate | sort | write.\n"
    "\n"
    "  -o, --output FILE       the SSTable to write (replaced atomically)\n"
    "  -c, --config FILE       INI file: [input] decompressor, [extract], [truncate],\n"
    "                          [sort] (threads: decompression threads) and [sst] apply\n"
    "      --set S.K=V         set one key (repeatable), e.g. --set sst.block_size=16K\n"
    "      --max-bytes N       value bound in bytes, cut on a UTF-8 boundary (1024)\n"
    "      --memory SIZE       sort memory budget (256M)\n"
    "      --tmp DIR           directory for sort spill files ($TMPDIR or /tmp)\n"
    "      --fan-in N          runs merged at once (0: auto)\n"
    "      --block-size SIZE   data block size, power of two 512..1M (8K)\n"
    "      --cluster-size SIZE region alignment, power of two 512..1G (4K)\n"
    "      --namespaces LIST   keep only pages in these namespaces (e.g. 0,14)\n"
    "      --skip-redirects    drop redirect pages\n"
    "      --decompressor CMD  decompress with CMD (run by /bin/sh, INPUT as its stdin;\n"
    "                          {threads} is replaced), e.g. 'lbzip2 -dc -n {threads}'\n"
    "  -v, --verbose           print one statistics line per stage on stderr\n"
    "  -h, --help              this help\n"
    "\n"
    "Precedence: defaults < -c FILE < --set < the flags above.\n";

enum {
    OPT_MAX_BYTES = 256,
    OPT_MEMORY,
    OPT_TMP,
    OPT_FAN_IN,
    OPT_BLOCK,
    OPT_CLUSTER,
    OPT_NAMESPACES,
    OPT_SKIP_REDIRECTS,
    OPT_DECOMPRESSOR
};

/* The key each value flag sets. */
static const config_flag flag_keys[] = {
    {OPT_MAX_BYTES, CONFIG_TRUNCATE_MAX_BYTES, "--max-bytes"},
    {OPT_MEMORY, CONFIG_SORT_MEMORY, "--memory"},
    {OPT_TMP, CONFIG_SORT_TMP_DIR, "--tmp"},
    {OPT_FAN_IN, CONFIG_SORT_FAN_IN, "--fan-in"},
    {OPT_BLOCK, CONFIG_SST_BLOCK_SIZE, "--block-size"},
    {OPT_CLUSTER, CONFIG_SST_CLUSTER_SIZE, "--cluster-size"},
    {OPT_NAMESPACES, CONFIG_EXTRACT_NAMESPACES, "--namespaces"},
    {OPT_DECOMPRESSOR, CONFIG_INPUT_DECOMPRESSOR, "--decompressor"},
};

/* The command line once -c/--set are applied; returns the exit code. */
static int build_args(sp_config *cfg, int argc, char **argv) {
    static const struct option longopts[] = {
        {"output", required_argument, NULL, 'o'},
        {"max-bytes", required_argument, NULL, OPT_MAX_BYTES},
        {"memory", required_argument, NULL, OPT_MEMORY},
        {"tmp", required_argument, NULL, OPT_TMP},
        {"fan-in", required_argument, NULL, OPT_FAN_IN},
        {"block-size", required_argument, NULL, OPT_BLOCK},
        {"cluster-size", required_argument, NULL, OPT_CLUSTER},
        {"namespaces", required_argument, NULL, OPT_NAMESPACES},
        {"skip-redirects", no_argument, NULL, OPT_SKIP_REDIRECTS},
        {"decompressor", required_argument, NULL, OPT_DECOMPRESSOR},
        {"verbose", no_argument, NULL, 'v'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    const char *output = NULL;
    bool verbose = false;
    sp_error err = {0};
    int c;
    optind = 0;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "o:vh", longopts, NULL)) != -1) {
        switch (c) {
        case 'o':
            output = optarg;
            break;
        case 'v':
            verbose = true;
            break;
        case 'h':
            fputs(usage, stdout);
            return SP_EXIT_OK;
        case OPT_SKIP_REDIRECTS:
            if (config_set_flag(cfg, CONFIG_EXTRACT_REDIRECTS, "--skip-redirects", "skip", &err))
                return sp_cli_report(&err, SP_EXIT_USAGE);
            break;
        default: {
            const config_flag *f =
                config_flag_find(flag_keys, sizeof flag_keys / sizeof flag_keys[0], c);
            if (!f)
                return sp_cli_bad_option("build", argv);
            if (config_set_flag(cfg, f->key, f->name, optarg, &err))
                return sp_cli_report(&err, SP_EXIT_USAGE);
        }
        }
    }
    if (optind != argc - 1)
        return sp_cli_usage_error("build", "expected one INPUT");
    if (!output)
        return sp_cli_usage_error("build", "-o FILE is required");

    build_options opts;
    build_options_init(&opts);
    config_apply_build(cfg, &opts);
    if (sst_check_fit(opts.table.block_size, (uint32_t)opts.max_bytes, &err))
        return sp_cli_report(&err, SP_EXIT_USAGE);

    build_stats stats;
    int rc = build_run(argv[optind], output, &opts, &stats, &err);
    if (verbose)
        build_print_stats(stderr, &stats);
    return rc ? sp_cli_report(&err, SP_EXIT_FAIL) : SP_EXIT_OK;
}

int build_cmd(int argc, char **argv) {
    sp_config cfg;
    config_init(&cfg);
    sp_error err = {0};
    int rc = config_parse_args(&cfg, &argc, argv, &err) ? sp_cli_report(&err, SP_EXIT_USAGE)
                                                        : build_args(&cfg, argc, argv);
    config_destroy(&cfg);
    return rc;
}
