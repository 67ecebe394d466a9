/*
 * extract_cmd.c: `sstpipe extract`, the front end of the extract stage:
 * flags, then extract_file into a record stream on stdout or -o FILE.
 * Namespaces, redirects ([extract]), the scratch directory ([sort] tmp_dir),
 * the decompression threads ([sort] threads) and an external decompressor
 * ([input] decompressor) come from the config (-c FILE, --set), which the
 * flags override.
 */
#include "stages/extract/extract.h"

#include "config/config.h"
#include "stages/common/cli.h"
#include "stages/common/recstream.h"

#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char usage_text[] =
    "usage: sstpipe extract [INPUT] [-c FILE] [--set section.key=value]... [-o FILE]\n"
    "                       [--tmp DIR] [--namespaces N,N,...] [--skip-redirects]\n"
    "                       [--decompressor CMD] [-v]\n"
    "\n"
    "Decompresses and parses a MediaWiki XML dump (bz2 single- or multistream, gz,\n"
    "xz, zst or plain XML, recognised by content) and writes a record stream: one\n"
    "record per page, key = title, value = text of the page's last revision.\n"
    "INPUT defaults to stdin (also \"-\").\n"
    "\n"
    "  -o, --output FILE     write to FILE (atomically) instead of stdout\n"
    "  -c, --config FILE     INI file; this command reads [extract] namespaces and\n"
    "                        redirects, [sort] tmp_dir (as --tmp) and threads (the\n"
    "                        decompression threads, 0: one per core), and [input]\n"
    "                        decompressor\n"
    "      --set S.K=V       set one key (repeatable), e.g. --set extract.redirects=skip\n"
    "      --tmp DIR         scratch directory for very large pages ($TMPDIR or /tmp)\n"
    "      --namespaces LIST keep only pages in these namespaces (e.g. 0,14)\n"
    "      --skip-redirects  drop redirect pages\n"
    "      --decompressor CMD\n"
    "                        decompress with CMD (run by /bin/sh, the input as its\n"
    "                        stdin; {threads} is replaced), e.g. 'lbzip2 -dc -n {threads}'\n"
    "  -v, --verbose         print a stats line on stderr\n"
    "  -h, --help            show this help\n"
    "\n"
    "Precedence: defaults < -c FILE < --set < the flags above.\n";

static int run(const char *input, const char *output, const extract_options *opts, bool verbose) {
    sp_error err = {0};
    sp_output out;
    if (sp_output_open(&out, output, &err))
        return sp_cli_report(&err, SP_EXIT_FAIL);
    rs_header h = {.flags = 0, .max_value_bytes = 0};
    rs_writer *w = rs_writer_init(out.fd, out.name, &h, &err);
    extract_stats stats;
    int rc = -1;
    if (w) {
        sp_sink sink = rs_writer_sink(w);
        rc = extract_file(input, opts, &sink, &stats, &err);
        if (rc == 0)
            rc = rs_writer_finish(w, &err);
        if (rc == 0)
            rc = sp_output_commit(&out, &err);
    }
    rs_writer_destroy(w);
    if (rc) {
        sp_output_abort(&out);
        return sp_cli_report(&err, SP_EXIT_FAIL);
    }
    if (verbose)
        extract_stats_print(stderr, &stats);
    return SP_EXIT_OK;
}

int extract_cmd(int argc, char **argv) {
    enum { OPT_TMP = 256, OPT_NAMESPACES, OPT_SKIP_REDIRECTS, OPT_DECOMPRESSOR };
    static const struct option longopts[] = {
        {"output", required_argument, NULL, 'o'},
        {"tmp", required_argument, NULL, OPT_TMP},
        {"namespaces", required_argument, NULL, OPT_NAMESPACES},
        {"skip-redirects", no_argument, NULL, OPT_SKIP_REDIRECTS},
        {"decompressor", required_argument, NULL, OPT_DECOMPRESSOR},
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
    opterr = 0; /* one error line, ours */
    while ((c = getopt_long(argc, argv, "o:vh", longopts, NULL)) != -1) {
        switch (c) {
        case 'o':
            output = optarg;
            break;
        case OPT_TMP:
            if (config_set_flag(&cfg, CONFIG_SORT_TMP_DIR, "--tmp", optarg, &err))
                goto bad_value;
            break;
        case OPT_NAMESPACES:
            if (config_set_flag(&cfg, CONFIG_EXTRACT_NAMESPACES, "--namespaces", optarg, &err))
                goto bad_value;
            break;
        case OPT_SKIP_REDIRECTS:
            if (config_set_flag(&cfg, CONFIG_EXTRACT_REDIRECTS, "--skip-redirects", "skip", &err))
                goto bad_value;
            break;
        case OPT_DECOMPRESSOR:
            if (config_set_flag(&cfg, CONFIG_INPUT_DECOMPRESSOR, "--decompressor", optarg, &err))
                goto bad_value;
            break;
        case 'v':
            verbose = true;
            break;
        case 'h':
            fputs(usage_text, stdout);
            rc = SP_EXIT_OK;
            goto out;
        default:
            rc = sp_cli_bad_option("extract", argv);
            goto out;
        }
    }
    if (argc - optind > 1) {
        rc = sp_cli_usage_error("extract", "one INPUT expected, got %d", argc - optind);
        goto out;
    }
    extract_options opts;
    extract_options_init(&opts);
    opts.tmp_dir = *cfg.sort.tmp_dir ? cfg.sort.tmp_dir : NULL;
    opts.namespaces = cfg.extract.namespace_count ? cfg.extract.namespaces : NULL;
    opts.namespace_count = cfg.extract.namespace_count;
    opts.skip_redirects = cfg.extract.skip_redirects;
    opts.threads = (unsigned)cfg.sort.threads;
    opts.decompressor = *cfg.input.decompressor ? cfg.input.decompressor : NULL;
    rc = run(optind < argc ? argv[optind] : "-", output, &opts, verbose);
    goto out;
bad_value:
    rc = sp_cli_report(&err, SP_EXIT_USAGE);
out:
    config_destroy(&cfg);
    return rc;
}
