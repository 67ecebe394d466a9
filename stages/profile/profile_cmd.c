/*
 * profile_cmd.c: `sstpipe profile FILE [N] [--cold] [--threads T]
 * [--queue-depth Q] [--misses PCT] [--seed S] [--json PATH] [--svg PATH]`.
 *
 * Every option is a key of [profile] in the config (-c FILE, --set), which
 * the flags override; N is [profile] lookups. N may be left out only when
 * the config sets lookups: its built-in default (10000) is nightly's choice,
 * and a bare `sstpipe profile FILE` is more likely a forgotten N than a
 * request for it. Without a seed from the config or --seed a seed is picked
 * at random and printed, so any run can be repeated exactly. Exit 0 ok, 1
 * the profile failed (missing or damaged file, an io_uring depth the machine
 * cannot do), 2 bad usage.
 */
#include "stages/profile/profile.h"

#include "config/config.h"
#include "stages/common/cli.h"

#include <getopt.h>
#include <stdlib.h>
#include <sys/random.h>
#include <time.h>

static void usage(FILE *out) {
    fprintf(out,
            "usage: sstpipe profile FILE [N] [-c FILE] [--set section.key=value]... [options]\n"
            "\n"
            "Times N point lookups of keys drawn from FILE, each on its own, and reports\n"
            "min/avg/p50/p90/p99/p99.9/max latency, lookups per second, and reads and bytes\n"
            "read per lookup. N may be omitted when the config sets [profile] lookups.\n"
            "\n"
            "  -c, --config FILE INI file; this command reads [profile] lookups, cold,\n"
            "                    threads, queue_depth, misses and seed\n"
            "      --set S.K=V   set one key (repeatable), e.g. --set profile.threads=4\n"
            "  --cold            drop FILE from the page cache and read with O_DIRECT\n"
            "  --threads T       T threads, each doing N/T lookups (default 1)\n"
            "  --queue-depth Q   Q reads in flight per thread, through io_uring (default 1)\n"
            "  --misses PCT      PCT percent of the keys are absent from FILE (default 0)\n"
            "  --seed S          the key sequence for seed S (default: [profile] seed if the\n"
            "                    config sets it, else random, printed)\n"
            "  --json PATH       write every figure as JSON (fields in stages/profile/README.md)\n"
            "  --svg PATH        draw the latency histogram and CDF (log time axis)\n"
            "  -h, --help        this help\n"
            "\n"
            "Precedence: defaults < -c FILE < --set < N and the flags above.\n");
}

static uint64_t random_seed(void) {
    uint64_t s;
    if (getrandom(&s, sizeof s, 0) == (ssize_t)sizeof s)
        return s % 1000000000u;
    return (uint64_t)time(NULL) % 1000000000u;
}

/* The key each value flag sets. */
static const config_flag flag_keys[] = {
    {'t', CONFIG_PROFILE_THREADS, "--threads"},
    {'q', CONFIG_PROFILE_QUEUE_DEPTH, "--queue-depth"},
    {'m', CONFIG_PROFILE_MISSES, "--misses"},
    {'s', CONFIG_PROFILE_SEED, "--seed"},
};

/* The command line once -c/--set are applied; returns the exit code. */
static int profile_args(sp_config *cfg, int argc, char **argv) {
    static const struct option longopts[] = {{"cold", no_argument, NULL, 'c'},
                                             {"threads", required_argument, NULL, 't'},
                                             {"queue-depth", required_argument, NULL, 'q'},
                                             {"misses", required_argument, NULL, 'm'},
                                             {"seed", required_argument, NULL, 's'},
                                             {"json", required_argument, NULL, 'j'},
                                             {"svg", required_argument, NULL, 'g'},
                                             {"help", no_argument, NULL, 'h'},
                                             {0}};
    const char *json_path = NULL, *svg_path = NULL;
    sp_error err = {0};
    optind = 0;
    opterr = 0;
    int ch;
    while ((ch = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
        switch (ch) {
        case 'c':
            if (config_set_flag(cfg, CONFIG_PROFILE_COLD, "--cold", "true", &err))
                return sp_cli_report(&err, SP_EXIT_USAGE);
            break;
        case 'j':
            json_path = optarg;
            break;
        case 'g':
            svg_path = optarg;
            break;
        case 'h':
            usage(stdout);
            return SP_EXIT_OK;
        default: {
            const config_flag *f =
                config_flag_find(flag_keys, sizeof flag_keys / sizeof flag_keys[0], ch);
            if (!f)
                return sp_cli_bad_option("profile", argv);
            if (config_set_flag(cfg, f->key, f->name, optarg, &err))
                return sp_cli_report(&err, SP_EXIT_USAGE);
        }
        }
    }
    int positional = argc - optind;
    bool lookups_configured = cfg->origin[CONFIG_PROFILE_LOOKUPS] != CONFIG_FROM_DEFAULT;
    if (positional > 2 || positional < 1 || (positional == 1 && !lookups_configured))
        return sp_cli_usage_error("profile", "expected FILE and N (the number of lookups; N may "
                                             "be omitted when the config sets [profile] lookups)");
    const char *path = argv[optind];
    if (positional == 2 &&
        config_set_flag(cfg, CONFIG_PROFILE_LOOKUPS, "N", argv[optind + 1], &err))
        return sp_cli_report(&err, SP_EXIT_USAGE);
    /* 0 tells nightly to skip profiling; asked for directly it is a mistake. */
    if (cfg->profile.lookups == 0 && positional == 2)
        return sp_cli_usage_error("profile", "N (lookups) must be at least 1, not '%s'",
                                  argv[optind + 1]);
    if (cfg->profile.lookups == 0)
        return sp_cli_usage_error("profile",
                                  "[profile] lookups is 0 (%s): give N, the number "
                                  "of lookups",
                                  config_origin_text(cfg, CONFIG_PROFILE_LOOKUPS));
    profile_options o;
    profile_options_init(&o);
    o.n = cfg->profile.lookups;
    o.cold = cfg->profile.cold;
    o.threads = (unsigned)cfg->profile.threads;
    o.queue_depth = (unsigned)cfg->profile.queue_depth;
    o.misses_pct = cfg->profile.misses;
    o.seed =
        cfg->origin[CONFIG_PROFILE_SEED] == CONFIG_FROM_DEFAULT ? random_seed() : cfg->profile.seed;
    profile_result res;
    profile_result_init(&res);
    int code = SP_EXIT_OK;
    if (profile_run(path, &o, &res, &err) ||
        (json_path && profile_write_json(&res, json_path, &err)) ||
        (svg_path && profile_write_svg(&res, svg_path, &err)))
        code = sp_cli_report(&err, SP_EXIT_FAIL);
    else
        profile_print(&res, stdout);
    profile_result_destroy(&res);
    return code;
}

int profile_cmd(int argc, char **argv) {
    sp_config cfg;
    config_init(&cfg);
    sp_error err = {0};
    int rc = config_parse_args(&cfg, &argc, argv, &err) ? sp_cli_report(&err, SP_EXIT_USAGE)
                                                        : profile_args(&cfg, argc, argv);
    config_destroy(&cfg);
    return rc;
}
