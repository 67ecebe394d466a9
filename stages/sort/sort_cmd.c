/*
 * sort_cmd.c: `sstpipe sort`, the sort stage on its own: a record stream in,
 * the same records sorted by key with duplicates resolved, out. Memory,
 * scratch directory and fan-in come from [sort] of the config (-c FILE,
 * --set), which the flags override.
 */
#include "config/config.h"
#include "stages/common/cli.h"
#include "stages/common/stream_stage.h"
#include "stages/sort/sorter.h"

#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static void usage(FILE *out) {
    fprintf(out,
            "usage: sstpipe sort [INPUT|-] [-c FILE] [--set section.key=value]...\n"
            "                    [--memory SIZE] [--tmp DIR] [--fan-in N] [-o FILE] [-v]\n"
            "\n"
            "Reads a record stream (stdin by default) and writes it sorted bytewise by key;\n"
            "of records with equal keys only the last one is kept. Runs that do not fit the\n"
            "memory budget are spilled to anonymous scratch files and merged.\n"
            "\n"
            "  -c, --config FILE  INI file; this command reads [sort] memory, tmp_dir, fan_in\n"
            "      --set S.K=V    set one key (repeatable), e.g. --set sort.memory=64M\n"
            "  --memory SIZE      memory budget, at least 1M; K/M/G suffixes (default 256M)\n"
            "  --tmp DIR          directory for scratch files (default $TMPDIR or /tmp)\n"
            "  --fan-in N         runs merged at once, at least 2; 0 (the default): as many\n"
            "                     as the budget allows with 64K per run (it also caps N)\n"
            "  -o, --output F     write to F (atomically) instead of stdout\n"
            "  -v, --verbose      print a stats line on stderr\n"
            "  -h, --help         show this help\n"
            "\n"
            "Precedence: defaults < -c FILE < --set < the flags above.\n");
}

/* Prefixes a sorter error with where in the input the record came from. */
static void locate(sp_error *err, const char *name, uint64_t offset) {
    char msg[sizeof err->msg];
    memcpy(msg, err->msg, sizeof msg);
    sp_error_clear(err);
    sp_errorf(err, "%s: record ending at byte %llu: %s", name, (unsigned long long)offset, msg);
}

static int run(const char *input, const char *output, const sort_options *opts, bool verbose) {
    sp_error err = {0};
    stream_stage st;
    sorter *s = NULL;
    int rc = -1;
    if (stream_stage_open_input(&st, input, &err) || !(s = sorter_init(opts, &err)))
        goto done;
    rs_header h = {.flags = RS_SORTED,
                   .max_value_bytes = rs_reader_header(st.reader)->max_value_bytes};
    if (stream_stage_open_output(&st, output, &h, &err))
        goto done;
    /* Capping what the reader keeps means a value too large to sort is
     * refused without first being read into memory whole. */
    uint64_t cap = opts->memory / 4 + 1;
    sp_record rec;
    int got;
    while ((got = rs_reader_next(st.reader, cap, &rec, &err)) == 1) {
        if (sorter_add(s, &rec, &err)) {
            locate(&err, st.in_name, rs_reader_offset(st.reader));
            goto done;
        }
    }
    sp_sink sink = rs_writer_sink(st.writer);
    if (got < 0 || sorter_finish(s, &sink, &err) || stream_stage_finish(&st, &err))
        goto done;
    if (verbose) {
        char line[256];
        sort_stats_format(sorter_stats(s), line, sizeof line);
        fprintf(stderr, "%s\n", line);
    }
    rc = 0;
done:
    sorter_destroy(s);
    stream_stage_close(&st);
    return rc ? sp_cli_report(&err, SP_EXIT_FAIL) : SP_EXIT_OK;
}

int sort_cmd(int argc, char **argv) {
    static const struct option longopts[] = {
        {"memory", required_argument, NULL, 'm'},
        {"tmp", required_argument, NULL, 't'},
        {"fan-in", required_argument, NULL, 'f'},
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
    while ((c = getopt_long(argc, argv, "o:vh", longopts, NULL)) != -1) {
        config_key key = CONFIG_KEY_COUNT;
        const char *flag = NULL;
        switch (c) {
        case 'm':
            key = CONFIG_SORT_MEMORY;
            flag = "--memory";
            break;
        case 't':
            key = CONFIG_SORT_TMP_DIR;
            flag = "--tmp";
            break;
        case 'f':
            key = CONFIG_SORT_FAN_IN;
            flag = "--fan-in";
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
            rc = sp_cli_bad_option("sort", argv);
            goto out;
        }
        if (flag && config_set_flag(&cfg, key, flag, optarg, &err)) {
            rc = sp_cli_report(&err, SP_EXIT_USAGE);
            goto out;
        }
    }
    if (argc - optind > 1) {
        rc = sp_cli_usage_error("sort", "expected at most one INPUT, got %d", argc - optind);
        goto out;
    }
    sort_options opts;
    sort_options_init(&opts);
    opts.memory = cfg.sort.memory;
    opts.tmp_dir = *cfg.sort.tmp_dir ? cfg.sort.tmp_dir : NULL;
    opts.fan_in = (unsigned)cfg.sort.fan_in;
    rc = run(optind < argc ? argv[optind] : "-", output, &opts, verbose);
out:
    config_destroy(&cfg);
    return rc;
}
