/*
 * truncate_cmd.c: `sstpipe truncate`, the truncate stage on its own: a record
 * stream in, the same records with values cut, out. The bound is [truncate]
 * max_bytes of the config (-c FILE, --set), which --max-bytes overrides.
 */
#include "config/config.h"
#include "stages/common/cli.h"
#include "stages/common/stream_stage.h"
#include "stages/truncate/truncate.h"

#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <unistd.h>

static void usage(FILE *out) {
    fprintf(out,
            "usage: sstpipe truncate [INPUT|-] [-c FILE] [--set section.key=value]...\n"
            "                        [--max-bytes N] [-o FILE] [-v]\n"
            "\n"
            "Reads a record stream (stdin by default) and cuts each value to the longest\n"
            "prefix of at most N bytes that ends on a UTF-8 character boundary.\n"
            "\n"
            "  -c, --config FILE  INI file; this command reads [truncate] max_bytes\n"
            "      --set S.K=V    set one key (repeatable), e.g. --set truncate.max_bytes=2K\n"
            "  --max-bytes N      bytes kept per value, 1 to 1G; K/M/G suffixes (default %d)\n"
            "  -o, --output F     write to F (atomically) instead of stdout\n"
            "  -v, --verbose      print a stats line on stderr\n"
            "  -h, --help         show this help\n"
            "\n"
            "Precedence: defaults < -c FILE < --set < --max-bytes.\n",
            TRUNCATE_DEFAULT_MAX_BYTES);
}

static int run(const char *input, const char *output, uint64_t max_bytes, bool verbose) {
    sp_error err = {0};
    stream_stage st;
    truncator t;
    int rc = -1;
    if (stream_stage_open_input(&st, input, &err))
        goto done;
    rs_header h = {.flags = rs_reader_header(st.reader)->flags,
                   .max_value_bytes = (uint32_t)max_bytes};
    if (stream_stage_open_output(&st, output, &h, &err))
        goto done;
    truncator_init(&t, max_bytes, rs_writer_sink(st.writer));
    sp_sink sink = truncator_sink(&t);
    sp_record rec;
    int got;
    /* One byte past the limit is enough to place the cut; the rest of a long
     * value is skipped by the reader without being held. */
    while ((got = rs_reader_next(st.reader, max_bytes + 1, &rec, &err)) == 1)
        if (sp_sink_put(&sink, &rec, &err))
            goto done;
    if (got < 0 || stream_stage_finish(&st, &err))
        goto done;
    if (verbose)
        truncate_stats_print(stderr, t.records, t.truncated);
    rc = 0;
done:
    stream_stage_close(&st);
    return rc ? sp_cli_report(&err, SP_EXIT_FAIL) : SP_EXIT_OK;
}

int truncate_cmd(int argc, char **argv) {
    static const struct option opts[] = {
        {"max-bytes", required_argument, NULL, 'm'},
        {"output", required_argument, NULL, 'o'},
        {"verbose", no_argument, NULL, 'v'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    sp_config cfg;
    config_init(&cfg);
    const char *output = NULL;
    bool verbose = false;
    sp_error err = {0};
    int c, rc;
    if (config_parse_args(&cfg, &argc, argv, &err)) {
        rc = sp_cli_report(&err, SP_EXIT_USAGE);
        goto out;
    }
    optind = 0;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "o:vh", opts, NULL)) != -1) {
        switch (c) {
        case 'm':
            if (config_set_flag(&cfg, CONFIG_TRUNCATE_MAX_BYTES, "--max-bytes", optarg, &err)) {
                rc = sp_cli_report(&err, SP_EXIT_USAGE);
                goto out;
            }
            break;
        case 'o':
            output = optarg;
            break;
        case 'v':
            verbose = true;
            break;
        case 'h':
            usage(stdout);
            rc = SP_EXIT_OK;
            goto out;
        default:
            rc = sp_cli_bad_option("truncate", argv);
            goto out;
        }
    }
    if (argc - optind > 1)
        rc = sp_cli_usage_error("truncate", "expected at most one INPUT, got %d", argc - optind);
    else
        rc = run(optind < argc ? argv[optind] : "-", output, cfg.truncate.max_bytes, verbose);
out:
    config_destroy(&cfg);
    return rc;
}
