/*
 * iotest_cmd.c: `sstpipe iotest PATH [--size SIZE] [--duration SECONDS]
 * [--threads T] [--queue-depth Q] [--pattern KIND:SIZE ...] [--json PATH]`.
 *
 * Exit 0 ok, 1 the test could not run (no room, io_uring, an IO error),
 * 2 bad usage. A file system without O_DIRECT is not an error: the run
 * falls back to buffered IO and says so in the report and on stderr.
 */
#include "stages/tune/iotest.h"

#include "config/config.h"
#include "stages/common/cli.h"
#include "stages/common/size.h"

#include <errno.h>
#include <getopt.h>
#include <stdlib.h>

static void usage(FILE *out) {
    fprintf(out,
            "usage: sstpipe iotest PATH [options]\n"
            "\n"
            "Measures the disk under directory PATH with diskspd's six patterns: random read\n"
            "8K and 64K, random write 8K, sequential read 64K and 256K, sequential write 8K.\n"
            "A test file is created in PATH, filled once, and removed afterwards; each pattern\n"
            "runs for a fixed time with O_DIRECT through io_uring. Reports IOPS, MB/s\n"
            "(10^6 bytes) and latency avg/p50/p99/max per pattern.\n"
            "\n"
            "  --size SIZE         test file size (1G)\n"
            "  --duration SECONDS  time per pattern (10)\n"
            "  --threads T         threads per pattern (8)\n"
            "  --queue-depth Q     IOs in flight per thread (8)\n"
            "  --pattern KIND:SIZE run this pattern instead of the six (repeatable); KIND is\n"
            "                      rr, rw, sr or sw (random/sequential read/write), e.g. rr:4K\n"
            "  --json PATH         write every figure as JSON (fields in stages/tune/README.md)\n"
            "  -c, --config FILE   accepted as by every command; no key applies to iotest\n"
            "      --set S.K=V     likewise (a bad file or key is still an error)\n"
            "  -h, --help          this help\n");
}

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

int iotest_cmd(int argc, char **argv) {
    static const struct option longopts[] = {
        {"size", required_argument, NULL, 's'},    {"duration", required_argument, NULL, 'd'},
        {"threads", required_argument, NULL, 't'}, {"queue-depth", required_argument, NULL, 'q'},
        {"pattern", required_argument, NULL, 'p'}, {"json", required_argument, NULL, 'j'},
        {"help", no_argument, NULL, 'h'},          {0}};
    static iotest_pattern patterns[IOTEST_MAX_PATTERNS];
    iotest_options o;
    iotest_options_init(&o);
    const char *json_path = NULL;
    sp_error err = {0};
    uint64_t v;
    /* -c/--set are accepted as by every command; no key applies to iotest. */
    if (config_check_args(&argc, argv, &err))
        return sp_cli_report(&err, SP_EXIT_USAGE);
    optind = 0;
    opterr = 0;
    int ch;
    while ((ch = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
        switch (ch) {
        case 's':
            if (sp_parse_size(optarg, "--size", &o.file_size, &err))
                return sp_cli_report(&err, SP_EXIT_USAGE);
            if (o.file_size < IOTEST_MIN_IO_SIZE || o.file_size % IOTEST_MIN_IO_SIZE)
                return sp_cli_usage_error("iotest", "--size must be a multiple of 4K, not '%s'",
                                          optarg);
            break;
        case 'd': {
            char *end;
            errno = 0;
            o.duration = strtod(optarg, &end);
            if (errno || *end || end == optarg || !(o.duration > 0 && o.duration <= 86400))
                return sp_cli_usage_error(
                    "iotest", "--duration must be seconds, more than 0 and at most 86400, not '%s'",
                    optarg);
            break;
        }
        case 't':
            if (!parse_u64(optarg, 1, 1024, &v))
                return sp_cli_usage_error("iotest", "--threads must be 1 to 1024, not '%s'",
                                          optarg);
            o.threads = (unsigned)v;
            break;
        case 'q':
            if (!parse_u64(optarg, 1, 4096, &v))
                return sp_cli_usage_error("iotest", "--queue-depth must be 1 to 4096, not '%s'",
                                          optarg);
            o.queue_depth = (unsigned)v;
            break;
        case 'p':
            if (o.n_patterns == IOTEST_MAX_PATTERNS)
                return sp_cli_usage_error("iotest", "at most %d --pattern options",
                                          IOTEST_MAX_PATTERNS);
            if (iotest_parse_pattern(optarg, &patterns[o.n_patterns], &err))
                return sp_cli_report(&err, SP_EXIT_USAGE);
            o.n_patterns++;
            o.patterns = patterns;
            break;
        case 'j':
            json_path = optarg;
            break;
        case 'h':
            usage(stdout);
            return SP_EXIT_OK;
        default:
            return sp_cli_bad_option("iotest", argv);
        }
    }
    if (argc - optind != 1)
        return sp_cli_usage_error("iotest", "expected one PATH (a directory for the test file)");
    iotest_result res;
    iotest_result_init(&res);
    int code = SP_EXIT_OK;
    if (iotest_run(argv[optind], &o, &res, &err) ||
        (json_path && iotest_write_json(&res, json_path, &err))) {
        code = sp_cli_report(&err, SP_EXIT_FAIL);
    } else {
        if (res.note[0])
            fprintf(stderr, "sstpipe iotest: note: %s\n", res.note);
        iotest_print(&res, stdout);
    }
    iotest_result_destroy(&res);
    return code;
}
