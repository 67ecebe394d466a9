/*
 * iotest_cmd.c: `sstpipe iotest PATH [--size SIZE] [--duration SECONDS]
 * [--threads T] [--queue-depth Q] [--pattern KIND:SIZE ...] [--json PATH]`.
 *
 * Exit 0 ok, 1 the test could not run (no room, io_uring, an IO error),
 * 2 bad usage. A file system without O_DIRECT is not an error: the run
 * falls back to buffered IO and says so in the report and on stderr.
 * On a terminal (or with --progress) the live line shows the fill of the
 * test file (percent, ETA), then the pattern under way, bytes moved and IOs.
 */
#include "pipeline/tune/iotest.h"

#include "pipeline/command/commands.h"
#include "pipeline/command/flags.h"
#include "pipeline/command/front.h"
#include "stages/common/cli.h"
#include "stages/common/size.h"

#include <errno.h>
#include <stdlib.h>

enum { F_SIZE, F_DURATION, F_THREADS, F_QUEUE_DEPTH, F_PATTERN, F_JSON, F_PROGRESS, F_NO_PROGRESS };

static const sp_flag flags[] = {
    [F_SIZE] = SP_ARG("size", "SIZE", "test file size (1G)", SP_COMPLETE_NONE),
    [F_DURATION] = SP_ARG("duration", "SECONDS", "time per pattern (10)", SP_COMPLETE_NONE),
    [F_THREADS] = SP_ARG("threads", "T", "threads per pattern (8)", SP_COMPLETE_NONE),
    [F_QUEUE_DEPTH] = SP_ARG("queue-depth", "Q", "IOs in flight per thread (8)", SP_COMPLETE_NONE),
    [F_PATTERN] =
        SP_ARG("pattern", "KIND:SIZE",
               "run this pattern instead of the six (repeatable); KIND is rr, rw, sr or sw "
               "(random/sequential read/write), e.g. rr:4K",
               SP_COMPLETE_NONE),
    [F_JSON] = SP_FLAG_JSON_FIGURES("pipeline/tune/README.md"),
    [F_PROGRESS] = SP_FLAG_PROGRESS,
    [F_NO_PROGRESS] = SP_FLAG_NO_PROGRESS,
};

static const sp_operand operands[] = {{"PATH", SP_COMPLETE_DIR, NULL}};

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

/* One flag; 0 or the exit code of a bad value. */
static int take(const sp_given *g, iotest_options *o, iotest_pattern *patterns) {
    const char *optarg = g->value;
    sp_error err = {0};
    uint64_t v;
    switch (g->flag) {
    case F_SIZE:
        if (sp_parse_size(optarg, "--size", &o->file_size, &err))
            return sp_cli_report(&err, SP_EXIT_USAGE);
        if (o->file_size < IOTEST_MIN_IO_SIZE || o->file_size % IOTEST_MIN_IO_SIZE)
            return sp_cli_usage_error("iotest", "--size must be a multiple of 4K, not '%s'",
                                      optarg);
        return 0;
    case F_DURATION: {
        char *end;
        errno = 0;
        o->duration = strtod(optarg, &end);
        if (errno || *end || end == optarg || !(o->duration > 0 && o->duration <= 86400))
            return sp_cli_usage_error(
                "iotest", "--duration must be seconds, more than 0 and at most 86400, not '%s'",
                optarg);
        return 0;
    }
    case F_THREADS:
        if (!parse_u64(optarg, 1, 1024, &v))
            return sp_cli_usage_error("iotest", "--threads must be 1 to 1024, not '%s'", optarg);
        o->threads = (unsigned)v;
        return 0;
    case F_QUEUE_DEPTH:
        if (!parse_u64(optarg, 1, 4096, &v))
            return sp_cli_usage_error("iotest", "--queue-depth must be 1 to 4096, not '%s'",
                                      optarg);
        o->queue_depth = (unsigned)v;
        return 0;
    case F_PATTERN:
        if (o->n_patterns == IOTEST_MAX_PATTERNS)
            return sp_cli_usage_error("iotest", "at most %d --pattern options",
                                      IOTEST_MAX_PATTERNS);
        if (iotest_parse_pattern(optarg, &patterns[o->n_patterns], &err))
            return sp_cli_report(&err, SP_EXIT_USAGE);
        o->n_patterns++;
        o->patterns = patterns;
        return 0;
    }
    return 0;
}

static int run(sp_cmdline *cl) {
    static iotest_pattern patterns[IOTEST_MAX_PATTERNS];
    iotest_options o;
    iotest_options_init(&o);
    const char *json_path = cl->value[F_JSON];
    sp_error err = {0};
    for (size_t i = 0; i < cl->n_given; i++) {
        int rc = take(&cl->given[i], &o, patterns);
        if (rc)
            return rc;
    }
    iotest_result res;
    iotest_result_init(&res);
    sp_front_meter m;
    if ((o.progress = sp_front_progress(&m, cl, NULL)))
        o.progress->records_name = "IOs";
    sp_front_meter_start(&m, "iotest");
    int rc = sp_front_meter_stop(&m, iotest_run(cl->operands[0], &o, &res, &err));
    int code = SP_EXIT_OK;
    if (rc || (json_path && iotest_write_json(&res, json_path, &err))) {
        code = sp_cli_report(&err, SP_EXIT_FAIL);
    } else {
        if (res.note[0])
            fprintf(stderr, "sstpipe iotest: note: %s\n", res.note);
        iotest_print(&res, stdout);
    }
    iotest_result_destroy(&res);
    return code;
}

const sp_command iotest_command =
    SP_COMMAND(iotest, run, SP_FLAGS(flags),
               SP_OPERANDS(operands, 1, 1, "expected one PATH (a directory for the test file)"));
