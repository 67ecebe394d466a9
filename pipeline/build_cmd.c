/* build_cmd.c: the `sstpipe build` command line; the pipeline itself is build.c. */
#include "pipeline/build.h"

#include "stages/common/cli.h"
#include "stages/common/size.h"
#include "stages/sst/format.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char usage[] =
    "usage: sstpipe build INPUT -o FILE [options]\n"
    "\n"
    "Turns a MediaWiki XML dump (bz2, gz, xz, zst or plain; '-' for stdin) into an\n"
    "SSTable: one record per page, key = title, value = the first max-bytes of the\n"
    "last revision's text. Same bytes as extract | truncate | sort | write.\n"
    "\n"
    "  -o, --output FILE       the SSTable to write (replaced atomically)\n"
    "      --max-bytes N       value bound in bytes, cut on a UTF-8 boundary (1024)\n"
    "      --memory SIZE       sort memory budget (256M)\n"
    "      --tmp DIR           directory for sort spill files ($TMPDIR or /tmp)\n"
    "      --fan-in N          runs merged at once (auto)\n"
    "      --block-size SIZE   data block size, power of two 512..1M (8K)\n"
    "      --cluster-size SIZE region alignment, power of two 512..1G (4K)\n"
    "      --namespaces LIST   keep only pages in these namespaces (e.g. 0,14)\n"
    "      --skip-redirects    drop redirect pages\n"
    "  -v, --verbose           print one statistics line per stage on stderr\n"
    "  -h, --help              this help\n";

enum {
    OPT_MAX_BYTES = 256,
    OPT_MEMORY,
    OPT_TMP,
    OPT_FAN_IN,
    OPT_BLOCK,
    OPT_CLUSTER,
    OPT_NAMESPACES,
    OPT_SKIP_REDIRECTS
};

int build_cmd(int argc, char **argv) {
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
        {"verbose", no_argument, NULL, 'v'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    static int *namespaces; /* owned for the process's life: build_cmd runs once */
    build_options opts;
    build_options_init(&opts);
    const char *output = NULL;
    bool verbose = false;
    sp_error err = {0};
    uint64_t n;
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
        case OPT_MAX_BYTES:
            if (sp_parse_size(optarg, "--max-bytes", &n, &err))
                return sp_cli_report(&err, SP_EXIT_USAGE);
            if (n == 0 || n > UINT32_MAX)
                return sp_cli_usage_error("build", "--max-bytes must be from 1 to 4294967295");
            opts.max_bytes = n;
            break;
        case OPT_MEMORY:
            if (sp_parse_size(optarg, "--memory", &opts.sort.memory, &err))
                return sp_cli_report(&err, SP_EXIT_USAGE);
            if (opts.sort.memory < SORT_MIN_MEMORY)
                return sp_cli_usage_error("build", "--memory: '%s' is below the minimum of 1M",
                                          optarg);
            break;
        case OPT_TMP:
            opts.sort.tmp_dir = optarg;
            opts.extract.tmp_dir = optarg;
            break;
        case OPT_FAN_IN:
            if (sp_parse_count(optarg, "--fan-in", 2, 1u << 20, &n, &err))
                return sp_cli_report(&err, SP_EXIT_USAGE);
            opts.sort.fan_in = (unsigned)n;
            break;
        case OPT_BLOCK:
            if (sp_parse_pow2_size(optarg, "--block-size", SST_MIN_BLOCK_SIZE, SST_MAX_BLOCK_SIZE,
                                   &n, &err))
                return sp_cli_report(&err, SP_EXIT_USAGE);
            opts.table.block_size = (uint32_t)n;
            break;
        case OPT_CLUSTER:
            if (sp_parse_pow2_size(optarg, "--cluster-size", SST_MIN_CLUSTER_SIZE,
                                   SST_MAX_CLUSTER_SIZE, &n, &err))
                return sp_cli_report(&err, SP_EXIT_USAGE);
            opts.table.cluster_size = (uint32_t)n;
            break;
        case OPT_NAMESPACES: {
            int *ns = NULL;
            int count = extract_parse_namespaces(optarg, &ns);
            if (count < 0)
                return sp_cli_usage_error(
                    "build", "--namespaces: '%s' is not a list of numbers like 0,14", optarg);
            free(namespaces);
            namespaces = ns;
            opts.extract.namespaces = ns;
            opts.extract.namespace_count = count;
            break;
        }
        case OPT_SKIP_REDIRECTS:
            opts.extract.skip_redirects = true;
            break;
        default:
            return sp_cli_bad_option("build", argv);
        }
    }
    if (optind != argc - 1)
        return sp_cli_usage_error("build", "expected one INPUT");
    if (!output)
        return sp_cli_usage_error("build", "-o FILE is required");

    if (sst_check_fit(opts.table.block_size, (uint32_t)opts.max_bytes, &err))
        return sp_cli_report(&err, SP_EXIT_USAGE);

    build_stats stats;
    int rc = build_run(argv[optind], output, &opts, &stats, &err);
    if (verbose)
        build_print_stats(stderr, &stats);
    return rc ? sp_cli_report(&err, SP_EXIT_FAIL) : SP_EXIT_OK;
}
