/*
 * tune_cmd.c: `sstpipe tune [INPUT] [-c FILE] [--block-sizes LIST]
 * [--cluster-sizes LIST] [--sample SIZE] [--lookups N] [--tmp DIR]
 * [--tolerance PCT] [--config-out PATH] [--json PATH] [--svg PATH] [-v]`.
 *
 * The config (-c FILE, --set) supplies everything a trial shares with the
 * nightly build: extract filters, max-bytes, sort memory, verify and
 * profile settings ([profile] cold is ignored: tune profiles both ways).
 * Without INPUT, [input] path (a file or a glob, newest match) is used.
 * Exit 0 ok, 1 a trial failed or no room, 2 bad usage.
 */
#include "pipeline/tune.h"

#include "config/config.h"
#include "pipeline/config_apply.h"
#include "pipeline/nightly_dirs.h"
#include "stages/common/cli.h"
#include "stages/common/size.h"
#include "stages/sst/format.h"

#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

static const char usage[] =
    "usage: sstpipe tune [INPUT] [options]\n"
    "\n"
    "Builds INPUT (or a sample of it) once per block size x cluster size, verifies\n"
    "each table, profiles its lookups warm and cold, and recommends the combination\n"
    "with the lowest cold p50 latency within a tolerance of the best, most compact\n"
    "first, as an [sst] config snippet. Every trial file is removed afterwards.\n"
    "\n"
    "  -c, --config FILE       settings shared with the nightly build (--set A=V too);\n"
    "                          without INPUT, [input] path is used\n"
    "      --block-sizes LIST  block sizes to try (4K,8K,16K,64K)\n"
    "      --cluster-sizes LIST cluster sizes to try (4K,64K)\n"
    "      --sample SIZE       build from the first SIZE of XML, cut after a whole page\n"
    "                          (default: the whole input)\n"
    "      --lookups N         lookups per profile ([profile] lookups, else 10000)\n"
    "      --tmp DIR           where the scratch directory goes (default: [output] dir,\n"
    "                          else [sort] tmp_dir, else $TMPDIR or /tmp)\n"
    "      --tolerance PCT     latencies within PCT% of the best count as equal (10)\n"
    "      --config-out PATH   write the recommended config snippet to PATH\n"
    "      --json PATH         write every figure as JSON (fields in stages/tune/README.md)\n"
    "      --svg PATH          chart p50 latency against block size per cluster size\n"
    "  -v, --verbose           one line per finished trial on stderr\n"
    "  -h, --help              this help\n";

enum {
    OPT_BLOCKS = 256,
    OPT_CLUSTERS,
    OPT_SAMPLE,
    OPT_LOOKUPS,
    OPT_TMP,
    OPT_TOL,
    OPT_OUT,
    OPT_JSON,
    OPT_SVG
};

/* "4K,8K,16K": distinct powers of two in [min, max]. */
static int parse_sizes(const char *flag, const char *text, uint64_t min, uint64_t max,
                       uint32_t *out, size_t *n) {
    char *copy = strdup(text), *save = NULL;
    if (!copy)
        return sp_cli_usage_error("tune", "out of memory");
    *n = 0;
    int rc = 0;
    for (char *tok = strtok_r(copy, ",", &save); tok && rc == 0; tok = strtok_r(NULL, ",", &save)) {
        uint64_t v;
        sp_error err = {0};
        if (*n == TUNE_MAX_SIZES)
            rc = sp_cli_usage_error("tune", "%s: at most %d sizes", flag, TUNE_MAX_SIZES);
        else if (sp_parse_pow2_size(tok, flag, min, max, &v, &err))
            rc = sp_cli_report(&err, SP_EXIT_USAGE);
        for (size_t i = 0; i < *n && rc == 0; i++)
            if (out[i] == v)
                rc = sp_cli_usage_error("tune", "%s: '%s' is listed twice", flag, tok);
        if (rc == 0)
            out[(*n)++] = (uint32_t)v;
    }
    free(copy);
    if (rc == 0 && *n == 0)
        rc = sp_cli_usage_error("tune", "%s: give at least one size, e.g. 4K,8K", flag);
    return rc;
}

static void progress(void *ctx, size_t i, size_t n, const tune_trial *t) {
    (void)ctx;
    fprintf(stderr,
            "tune: trial=%zu/%zu block_size=%u cluster_size=%u file_size=%llu "
            "build_seconds=%.2f warm_p50_ns=%llu cold_p50_ns=%llu\n",
            i + 1, n, t->block_size, t->cluster_size, (unsigned long long)t->file_size,
            t->build_seconds, (unsigned long long)t->warm.p50_ns,
            (unsigned long long)(t->have_cold ? t->cold.p50_ns : 0));
}

/* Where the scratch directory goes; see the usage text. */
static const char *work_dir(const char *flag, const sp_config *cfg) {
    if (flag)
        return flag;
    if (*cfg->output.dir)
        return cfg->output.dir;
    if (*cfg->sort.tmp_dir)
        return cfg->sort.tmp_dir;
    return NULL;
}

static int run(int argc, char **argv, sp_config *cfg) {
    static const struct option longopts[] = {
        {"block-sizes", required_argument, NULL, OPT_BLOCKS},
        {"cluster-sizes", required_argument, NULL, OPT_CLUSTERS},
        {"sample", required_argument, NULL, OPT_SAMPLE},
        {"lookups", required_argument, NULL, OPT_LOOKUPS},
        {"tmp", required_argument, NULL, OPT_TMP},
        {"tolerance", required_argument, NULL, OPT_TOL},
        {"config-out", required_argument, NULL, OPT_OUT},
        {"json", required_argument, NULL, OPT_JSON},
        {"svg", required_argument, NULL, OPT_SVG},
        {"verbose", no_argument, NULL, 'v'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    tune_options o;
    tune_options_init(&o);
    const char *tmp = NULL, *config_out = NULL, *json_path = NULL, *svg_path = NULL;
    uint64_t lookups = 0;
    sp_error err = {0};
    int c;
    optind = 0;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "vh", longopts, NULL)) != -1) {
        int rc = 0;
        switch (c) {
        case OPT_BLOCKS:
            rc = parse_sizes("--block-sizes", optarg, SST_MIN_BLOCK_SIZE, SST_MAX_BLOCK_SIZE,
                             o.block_sizes, &o.n_block_sizes);
            break;
        case OPT_CLUSTERS:
            rc = parse_sizes("--cluster-sizes", optarg, SST_MIN_CLUSTER_SIZE, SST_MAX_CLUSTER_SIZE,
                             o.cluster_sizes, &o.n_cluster_sizes);
            break;
        case OPT_SAMPLE:
            if (sp_parse_size(optarg, "--sample", &o.sample, &err))
                return sp_cli_report(&err, SP_EXIT_USAGE);
            if (o.sample < 4096)
                return sp_cli_usage_error("tune", "--sample must be at least 4K, not '%s'", optarg);
            break;
        case OPT_LOOKUPS:
            if (sp_parse_count(optarg, "--lookups", 1, UINT32_MAX, &lookups, &err))
                return sp_cli_report(&err, SP_EXIT_USAGE);
            break;
        case OPT_TMP:
            tmp = optarg;
            break;
        case OPT_TOL: {
            char *end;
            errno = 0;
            o.tolerance_pct = strtod(optarg, &end);
            if (errno || *end || end == optarg ||
                !(o.tolerance_pct >= 0 && o.tolerance_pct <= 1000))
                return sp_cli_usage_error("tune",
                                          "--tolerance must be a percentage from 0 to "
                                          "1000, not '%s'",
                                          optarg);
            break;
        }
        case OPT_OUT:
            config_out = optarg;
            break;
        case OPT_JSON:
            json_path = optarg;
            break;
        case OPT_SVG:
            svg_path = optarg;
            break;
        case 'v':
            o.progress = progress;
            break;
        case 'h':
            fputs(usage, stdout);
            return SP_EXIT_OK;
        default:
            return sp_cli_bad_option("tune", argv);
        }
        if (rc)
            return rc;
    }
    if (optind < argc - 1)
        return sp_cli_usage_error("tune", "expected at most one INPUT");
    if (optind == argc && !*cfg->input.path)
        return sp_cli_usage_error("tune", "no INPUT given and [input] path is not set");

    config_apply_build(cfg, &o.build);
    config_apply_verify(cfg, &o.verify);
    config_apply_profile(cfg, &o.profile);
    o.profile.n = lookups ? lookups : cfg->profile.lookups ? cfg->profile.lookups : 10000;
    o.work_dir = work_dir(tmp, cfg);
    for (size_t i = 0; i < o.n_block_sizes; i++)
        if (sst_check_fit(o.block_sizes[i], (uint32_t)o.build.max_bytes, &err))
            return sp_cli_report(&err, SP_EXIT_USAGE);

    char *input = NULL;
    if (optind < argc)
        input = strdup(argv[optind]);
    else if (nightly_newest_match(cfg->input.path, &input, &err))
        return sp_cli_report(&err, SP_EXIT_FAIL);
    if (!input)
        return sp_cli_usage_error("tune", "out of memory");
    tune_report rep;
    tune_report_init(&rep);
    int code = SP_EXIT_OK;
    if (tune_run(input, &o, &rep, &err) || (json_path && tune_write_json(&rep, json_path, &err)) ||
        (svg_path && tune_write_svg(&rep, svg_path, &err)) ||
        (config_out && tune_write_config(&rep, config_out, &err)))
        code = sp_cli_report(&err, SP_EXIT_FAIL);
    else
        tune_print(&rep, stdout);
    tune_report_destroy(&rep);
    free(input);
    return code;
}

int tune_cmd(int argc, char **argv) {
    sp_config cfg;
    config_init(&cfg);
    sp_error err = {0};
    int rc = config_parse_args(&cfg, &argc, argv, &err) ? sp_cli_report(&err, SP_EXIT_USAGE)
                                                        : run(argc, argv, &cfg);
    config_destroy(&cfg);
    return rc;
}
