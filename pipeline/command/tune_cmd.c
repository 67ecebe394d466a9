/*
 * tune_cmd.c: `sstpipe tune [INPUT] [-c FILE] [--block-sizes LIST]
 * [--cluster-sizes LIST] [--compression-levels LIST] [--dictionary-sizes
 * LIST] [--sample SIZE] [--lookups N] [--tmp DIR]
 * [--tolerance PCT] [--config-out PATH] [--json PATH] [--svg PATH] [-v]`.
 *
 * The config (-c FILE, --set) supplies everything a trial shares with the
 * nightly build: extract filters, max-bytes, sort memory, verify and
 * profile settings ([profile] cold is ignored: tune profiles both ways).
 * Without INPUT, [input] path (a file or a glob, newest match) is used.
 * On a terminal (or with --progress) the live line shows the trial under
 * way and, over all trials, the input read of trials x its size.
 * Exit 0 ok, 1 a trial failed or no room, 2 bad usage.
 */
#include "pipeline/tune/tune.h"

#include "config/config.h"
#include "pipeline/command/commands.h"
#include "pipeline/command/config_apply.h"
#include "pipeline/command/flags.h"
#include "pipeline/command/front.h"
#include "pipeline/nightly/nightly_dirs.h"
#include "stages/common/cli.h"
#include "stages/common/size.h"
#include "stages/sst/format.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

enum {
    F_BLOCKS,
    F_CLUSTERS,
    F_LEVELS,
    F_DICTIONARIES,
    F_SAMPLE,
    F_LOOKUPS,
    F_TMP,
    F_TOLERANCE,
    F_CONFIG_OUT,
    F_JSON,
    F_SVG,
    F_VERBOSE,
    F_PROGRESS,
    F_NO_PROGRESS,
};

static const sp_flag flags[] = {
    [F_BLOCKS] =
        SP_ARG("block-sizes", "LIST", "block sizes to try (4K,8K,16K,64K)", SP_COMPLETE_NONE),
    [F_CLUSTERS] =
        SP_ARG("cluster-sizes", "LIST", "cluster sizes to try (4K,64K)", SP_COMPLETE_NONE),
    [F_LEVELS] = SP_ARG("compression-levels", "LIST",
                        "zstd levels to try at the best uncompressed sizes (1,3,9; none: no "
                        "compressed trials)",
                        SP_COMPLETE_NONE),
    [F_DICTIONARIES] =
        SP_ARG("dictionary-sizes", "LIST",
               "dictionary sizes to try with each level (0, [sst] dictionary_size's default "
               "and a quarter of it; 0: none)",
               SP_COMPLETE_NONE),
    [F_SAMPLE] =
        SP_ARG("sample", "SIZE",
               "build from the first SIZE of XML, cut after a whole page (default: the whole "
               "input)",
               SP_COMPLETE_NONE),
    [F_LOOKUPS] = SP_ARG("lookups", "N", "lookups per profile ([profile] lookups, else 10000)",
                         SP_COMPLETE_NONE),
    [F_TMP] =
        SP_ARG("tmp", "DIR",
               "where the scratch directory goes (default: [output] dir, else [sort] tmp_dir, "
               "else $TMPDIR or /tmp)",
               SP_COMPLETE_DIR),
    [F_TOLERANCE] =
        SP_ARG("tolerance", "PCT", "latencies within PCT% of the best count as equal (10)",
               SP_COMPLETE_NONE),
    [F_CONFIG_OUT] = SP_ARG("config-out", "PATH", "write the recommended config snippet to PATH",
                            SP_COMPLETE_FILE),
    [F_JSON] = SP_FLAG_JSON_FIGURES("pipeline/tune/README.md"),
    [F_SVG] = SP_ARG("svg", "PATH", "chart p50 latency against block size per cluster size",
                     SP_COMPLETE_FILE),
    [F_VERBOSE] = {"verbose", 'v', NULL, 0, NULL, "one line per finished trial on stderr",
                   SP_COMPLETE_NONE, NULL},
    [F_PROGRESS] = SP_FLAG_PROGRESS,
    [F_NO_PROGRESS] = SP_FLAG_NO_PROGRESS,
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

/* "1,3,9" or "0,16K": values of a [sst] key, each checked as the key
 * checks it (its range declared once, in config/keys.def), distinct. */
static int parse_key_list(const char *flag, const char *text, config_key key, uint64_t *out,
                          size_t *n) {
    char *copy = strdup(text), *save = NULL;
    if (!copy)
        return sp_cli_usage_error("tune", "out of memory");
    sp_config scratch;
    config_init(&scratch);
    *n = 0;
    int rc = 0;
    for (char *tok = strtok_r(copy, ",", &save); tok && rc == 0; tok = strtok_r(NULL, ",", &save)) {
        sp_error err = {0};
        if (*n == TUNE_MAX_SIZES)
            rc = sp_cli_usage_error("tune", "%s: at most %d values", flag, TUNE_MAX_SIZES);
        else if (config_set_flag(&scratch, key, flag, tok, &err))
            rc = sp_cli_report(&err, SP_EXIT_USAGE);
        uint64_t v = key == CONFIG_SST_COMPRESSION_LEVEL ? scratch.sst.compression_level
                                                         : scratch.sst.dictionary_size;
        for (size_t i = 0; i < *n && rc == 0; i++)
            if (out[i] == v)
                rc = sp_cli_usage_error("tune", "%s: '%s' is listed twice", flag, tok);
        if (rc == 0)
            out[(*n)++] = v;
    }
    config_destroy(&scratch);
    free(copy);
    if (rc == 0 && *n == 0)
        rc = sp_cli_usage_error("tune", "%s: give at least one value", flag);
    return rc;
}

/* -v's line per trial; with the live line on screen (ctx) it first erases
 * it, in the same write, and the meter draws it again below. */
static void trial_line(void *ctx, size_t i, size_t n, const tune_trial *t) {
    fprintf(stderr,
            "%stune: trial=%zu/%zu block_size=%u cluster_size=%u compression_level=%d "
            "dictionary_size=%u file_size=%llu build_seconds=%.2f warm_p50_ns=%llu "
            "cold_p50_ns=%llu\n",
            ctx ? "\r\033[K" : "", i + 1, n, t->block_size, t->cluster_size, t->level,
            t->dictionary_size, (unsigned long long)t->file_size, t->build_seconds,
            (unsigned long long)t->warm.p50_ns,
            (unsigned long long)(t->have_cold ? t->cold.p50_ns : 0));
}

/* One flag; 0 or the exit code of a bad value. */
static int take(const sp_given *g, tune_options *o, uint64_t *lookups) {
    const char *optarg = g->value;
    sp_error err = {0};
    switch (g->flag) {
    case F_BLOCKS:
        return parse_sizes("--block-sizes", optarg, SST_MIN_BLOCK_SIZE, SST_MAX_BLOCK_SIZE,
                           o->block_sizes, &o->n_block_sizes);
    case F_CLUSTERS:
        return parse_sizes("--cluster-sizes", optarg, SST_MIN_CLUSTER_SIZE, SST_MAX_CLUSTER_SIZE,
                           o->cluster_sizes, &o->n_cluster_sizes);
    case F_LEVELS:
    case F_DICTIONARIES: {
        bool levels = g->flag == F_LEVELS;
        uint64_t v[TUNE_MAX_SIZES];
        size_t n = 0;
        if (levels && !strcmp(optarg, "none")) {
            o->n_levels = 0;
            return 0;
        }
        int rc = parse_key_list(levels ? "--compression-levels" : "--dictionary-sizes", optarg,
                                levels ? CONFIG_SST_COMPRESSION_LEVEL : CONFIG_SST_DICTIONARY_SIZE,
                                v, &n);
        for (size_t i = 0; rc == 0 && i < n; i++) {
            if (levels)
                o->levels[i] = (int)v[i];
            else
                o->dictionary_sizes[i] = (uint32_t)v[i];
        }
        if (rc == 0)
            *(levels ? &o->n_levels : &o->n_dictionary_sizes) = n;
        return rc;
    }
    case F_SAMPLE:
        if (sp_parse_size(optarg, "--sample", &o->sample, &err))
            return sp_cli_report(&err, SP_EXIT_USAGE);
        if (o->sample < 4096)
            return sp_cli_usage_error("tune", "--sample must be at least 4K, not '%s'", optarg);
        return 0;
    case F_LOOKUPS:
        if (sp_parse_count(optarg, "--lookups", 1, UINT32_MAX, lookups, &err))
            return sp_cli_report(&err, SP_EXIT_USAGE);
        return 0;
    case F_TOLERANCE: {
        char *end;
        errno = 0;
        o->tolerance_pct = strtod(optarg, &end);
        if (errno || *end || end == optarg || !(o->tolerance_pct >= 0 && o->tolerance_pct <= 1000))
            return sp_cli_usage_error("tune",
                                      "--tolerance must be a percentage from 0 to "
                                      "1000, not '%s'",
                                      optarg);
        return 0;
    }
    case F_VERBOSE:
        o->on_trial = trial_line;
        return 0;
    }
    return 0;
}

static int run(sp_cmdline *cl) {
    tune_options o;
    tune_options_init(&o);
    uint64_t lookups = 0;
    sp_error err = {0};
    for (size_t i = 0; i < cl->n_given; i++) {
        int rc = take(&cl->given[i], &o, &lookups);
        if (rc)
            return rc;
    }
    const char *config_out = cl->value[F_CONFIG_OUT], *json_path = cl->value[F_JSON],
               *svg_path = cl->value[F_SVG];
    const char *input_glob;
    config_apply_tune(&cl->cfg, &o.build, &o.verify, &o.profile, &o.work_dir, &input_glob);
    if (!cl->n_operands && !input_glob)
        return sp_cli_usage_error("tune", "no INPUT given and [input] path is not set");
    if (lookups)
        o.profile.n = lookups;
    if (cl->value[F_TMP])
        o.work_dir = cl->value[F_TMP];
    for (size_t i = 0; i < o.n_block_sizes; i++)
        if (sst_check_fit(o.block_sizes[i], (uint32_t)o.build.max_bytes, &err))
            return sp_cli_report(&err, SP_EXIT_USAGE);

    char *input = NULL;
    if (cl->n_operands)
        input = strdup(cl->operands[0]);
    else if (nightly_newest_match(input_glob, &input, &err))
        return sp_cli_report(&err, SP_EXIT_FAIL);
    if (!input)
        return sp_cli_usage_error("tune", "out of memory");
    tune_report rep;
    tune_report_init(&rep);
    sp_front_meter m;
    o.progress = sp_front_progress(&m, cl, NULL); /* the size is the trials', set by tune_run */
    sp_front_meter_start(&m, "tune");
    o.on_trial_ctx = m.meter;
    int rc = sp_front_meter_stop(&m, tune_run(input, &o, &rep, &err));
    rc = rc || (json_path && tune_write_json(&rep, json_path, &err)) ||
         (svg_path && tune_write_svg(&rep, svg_path, &err)) ||
         (config_out && tune_write_config(&rep, config_out, &err));
    if (!rc)
        tune_print(&rep, stdout);
    tune_report_destroy(&rep);
    free(input);
    return sp_front_exit(rc, &err);
}

const sp_command tune_command = SP_COMMAND(
    tune, run, SP_FLAGS(flags), SP_OPERANDS(sp_input_operand, 0, 1, "expected at most one INPUT"));
