/*
 * profile_cmd.c: `sstpipe profile FILE N [--cold] [--threads T]
 * [--queue-depth Q] [--misses PCT] [--seed S] [--json PATH] [--svg PATH]`.
 *
 * Without --seed a seed is picked at random and printed, so any run can be
 * repeated exactly. Exit 0 ok, 1 the profile failed (missing or damaged
 * file, an io_uring depth the machine cannot do), 2 bad usage.
 */
#include "stages/profile/profile.h"

#include "stages/common/cli.h"

#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <sys/random.h>
#include <time.h>

static void usage(FILE *out) {
    fprintf(out,
            "usage: sstpipe profile FILE N [options]\n"
            "\n"
            "Times N point lookups of keys drawn from FILE, each on its own, and reports\n"
            "min/avg/p50/p90/p99/p99.9/max latency, lookups per second, and reads and bytes\n"
            "read per lookup.\n"
            "\n"
            "  --cold            drop FILE from the page cache and read with O_DIRECT\n"
            "  --threads T       T threads, each doing N/T lookups (default 1)\n"
            "  --queue-depth Q   Q reads in flight per thread, through io_uring (default 1)\n"
            "  --misses PCT      PCT percent of the keys are absent from FILE (default 0)\n"
            "  --seed S          the key sequence for seed S (default: random, printed)\n"
            "  --json PATH       write every figure as JSON (fields in stages/profile/README.md)\n"
            "  --svg PATH        draw the latency histogram and CDF (log time axis)\n"
            "  -h, --help        this help\n");
}

/* A whole number in [min, max]; false on anything else. */
static bool parse_u64(const char *s, uint64_t min, uint64_t max, uint64_t *out) {
    char *end;
    errno = 0;
    if (!*s || *s == '-')
        return false;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || *end || v < min || v > max)
        return false;
    *out = v;
    return true;
}

static uint64_t random_seed(void) {
    uint64_t s;
    if (getrandom(&s, sizeof s, 0) == (ssize_t)sizeof s)
        return s % 1000000000u;
    return (uint64_t)time(NULL) % 1000000000u;
}

int profile_cmd(int argc, char **argv) {
    static const struct option longopts[] = {{"cold", no_argument, NULL, 'c'},
                                             {"threads", required_argument, NULL, 't'},
                                             {"queue-depth", required_argument, NULL, 'q'},
                                             {"misses", required_argument, NULL, 'm'},
                                             {"seed", required_argument, NULL, 's'},
                                             {"json", required_argument, NULL, 'j'},
                                             {"svg", required_argument, NULL, 'g'},
                                             {"help", no_argument, NULL, 'h'},
                                             {0}};
    profile_options o;
    profile_options_init(&o);
    bool have_seed = false;
    const char *json_path = NULL, *svg_path = NULL;
    uint64_t v;
    optind = 0;
    opterr = 0;
    int ch;
    while ((ch = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
        switch (ch) {
        case 'c':
            o.cold = true;
            break;
        case 't':
            if (!parse_u64(optarg, 1, 1024, &v))
                return sp_cli_usage_error("profile", "--threads must be 1 to 1024, not '%s'",
                                          optarg);
            o.threads = (unsigned)v;
            break;
        case 'q':
            if (!parse_u64(optarg, 1, UINT32_MAX, &v))
                return sp_cli_usage_error("profile", "--queue-depth must be at least 1, not '%s'",
                                          optarg);
            o.queue_depth = (unsigned)v;
            break;
        case 'm': {
            char *end;
            errno = 0;
            o.misses_pct = strtod(optarg, &end);
            if (errno || *end || end == optarg || !(o.misses_pct >= 0 && o.misses_pct <= 100))
                return sp_cli_usage_error("profile",
                                          "--misses must be a percentage from 0 to "
                                          "100, not '%s'",
                                          optarg);
            break;
        }
        case 's':
            if (!parse_u64(optarg, 0, UINT64_MAX, &o.seed))
                return sp_cli_usage_error("profile", "--seed must be a whole number, not '%s'",
                                          optarg);
            have_seed = true;
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
        default:
            return sp_cli_bad_option("profile", argv);
        }
    }
    if (argc - optind != 2)
        return sp_cli_usage_error("profile", "expected FILE and N (the number of lookups)");
    const char *path = argv[optind];
    if (!parse_u64(argv[optind + 1], 1, UINT32_MAX, &o.n))
        return sp_cli_usage_error("profile", "N (lookups) must be from 1 to %u, not '%s'",
                                  UINT32_MAX, argv[optind + 1]);
    if (!have_seed)
        o.seed = random_seed();
    profile_result res;
    profile_result_init(&res);
    sp_error err = {0};
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
