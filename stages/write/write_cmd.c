/*
 * write_cmd.c: `sstpipe write`, the fourth stage. Reads a truncated, sorted
 * record stream and writes it as an SSTable through table_writer.
 *
 * The stream header states the value bound and whether the stream is
 * sorted, so a stream that skipped truncate or sort, and a block size no
 * record could be guaranteed to fit, are refused before the output file is
 * created. Block and cluster size come from [sst] of the config (-c FILE,
 * --set), which the flags override.
 */
#include "stages/write/write.h"

#include "config/config.h"
#include "stages/common/cli.h"
#include "stages/common/recstream.h"
#include "stages/sst/format.h"
#include "stages/sst/table_writer.h"

#include <getopt.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static void usage(FILE *out) {
    fprintf(out, "usage: sstpipe write [INPUT|-] -o FILE [-c FILE] [--set section.key=value]...\n"
                 "                     [--block-size SIZE] [--cluster-size SIZE] [-v]\n\n"
                 "Writes a sorted record stream (from `sstpipe sort`) as an SSTable.\n"
                 "INPUT defaults to stdin.\n\n"
                 "  -o, --output FILE     the SSTable to write (required; written atomically)\n"
                 "  -c, --config FILE     INI file; this command reads [sst] block_size and\n"
                 "                        cluster_size\n"
                 "      --set S.K=V       set one key (repeatable), e.g. --set sst.block_size=16K\n"
                 "  --block-size SIZE     data block size, a power of two from 512 to 1M "
                 "(default 8K)\n"
                 "  --cluster-size SIZE   region alignment, a power of two from 512 to 1G "
                 "(default 4K)\n"
                 "  -v, --verbose         print a stats line on stderr\n"
                 "  -h, --help            show this help\n\n"
                 "Precedence: defaults < -c FILE < --set < the flags above.\n");
}

/* Streams the records of in into a table at out_path; returns the exit code.
 * A block size too small for the stream's value bound is a bad option
 * value, so it exits as a usage error. */
static int write_table(rs_reader *in, const char *in_name, const char *out_path,
                       const table_options *base, bool verbose, sp_error *err) {
    const rs_header *h = rs_reader_header(in);
    if (h->max_value_bytes == 0) {
        sp_errorf(err, "%s: not truncated: pipe it through sstpipe truncate", in_name);
        return SP_EXIT_FAIL;
    }
    if (!(h->flags & RS_SORTED)) {
        sp_errorf(err, "%s: not sorted: pipe it through sstpipe sort", in_name);
        return SP_EXIT_FAIL;
    }
    if (sst_check_fit(base->block_size, h->max_value_bytes, err))
        return SP_EXIT_USAGE;
    table_options opts = *base;
    opts.max_value_bytes = h->max_value_bytes;
    table_writer *w = table_writer_init(out_path, &opts, err);
    if (!w)
        return SP_EXIT_FAIL;
    sp_record rec;
    int rc;
    while ((rc = rs_reader_next(in, 0, &rec, err)) == 1)
        if (table_writer_add(w, &rec, err)) {
            rc = -1;
            break;
        }
    if (rc == 0)
        rc = table_writer_finish(w, err);
    if (rc == 0 && verbose) {
        char line[256];
        table_stats_format(table_writer_stats(w), line, sizeof line);
        fprintf(stderr, "%s\n", line);
    }
    table_writer_destroy(w);
    return rc ? SP_EXIT_FAIL : SP_EXIT_OK;
}

/* The command line once -c/--set are applied; returns the exit code. */
static int write_args(sp_config *cfg, int argc, char **argv) {
    static const struct option longopts[] = {
        {"output", required_argument, NULL, 'o'},
        {"block-size", required_argument, NULL, 'b'},
        {"cluster-size", required_argument, NULL, 'c'},
        {"verbose", no_argument, NULL, 'v'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    const char *out_path = NULL;
    bool verbose = false;
    sp_error err = {0};
    optind = 0;
    opterr = 0;
    int c;
    while ((c = getopt_long(argc, argv, ":o:vh", longopts, NULL)) != -1) {
        switch (c) {
        case 'o':
            out_path = optarg;
            break;
        case 'b':
            if (config_set_flag(cfg, CONFIG_SST_BLOCK_SIZE, "--block-size", optarg, &err))
                return sp_cli_report(&err, SP_EXIT_USAGE);
            break;
        case 'c':
            if (config_set_flag(cfg, CONFIG_SST_CLUSTER_SIZE, "--cluster-size", optarg, &err))
                return sp_cli_report(&err, SP_EXIT_USAGE);
            break;
        case 'v':
            verbose = true;
            break;
        case 'h':
            usage(stdout);
            return SP_EXIT_OK;
        default:
            return sp_cli_bad_option("write", argv);
        }
    }
    if (argc - optind > 1)
        return sp_cli_usage_error("write", "expected at most one INPUT, got %d", argc - optind);
    if (!out_path)
        return sp_cli_usage_error("write", "-o FILE is required (an SSTable is not written to "
                                           "stdout)");
    if (!strcmp(out_path, "-"))
        return sp_cli_usage_error("write", "-o must name a file, not stdout");
    const char *in_path = optind < argc ? argv[optind] : "-";
    const char *in_name = strcmp(in_path, "-") ? in_path : "stdin";
    table_options opts;
    table_options_init(&opts);
    opts.block_size = (uint32_t)cfg->sst.block_size;
    opts.cluster_size = (uint32_t)cfg->sst.cluster_size;

    int fd;
    if (sp_open_input(in_path, &fd, &err))
        return sp_cli_report(&err, SP_EXIT_FAIL);
    rs_reader *in = rs_reader_init(fd, in_name, &err);
    int code = in ? write_table(in, in_name, out_path, &opts, verbose, &err) : SP_EXIT_FAIL;
    rs_reader_destroy(in);
    if (fd != STDIN_FILENO)
        close(fd);
    return code == SP_EXIT_OK ? code : sp_cli_report(&err, code);
}

int write_cmd(int argc, char **argv) {
    sp_config cfg;
    config_init(&cfg);
    sp_error err = {0};
    int rc = config_parse_args(&cfg, &argc, argv, &err) ? sp_cli_report(&err, SP_EXIT_USAGE)
                                                        : write_args(&cfg, argc, argv);
    config_destroy(&cfg);
    return rc;
}
