/*
 * main.c: the sstpipe command line. Dispatches to one command per stage;
 * each command parses its own flags and prints its errors once.
 */
#include "config/config.h"
#include "pipeline/build.h"
#include "pipeline/nightly.h"
#include "pipeline/tune.h"
#include "stages/common/cleanup.h"
#include "stages/extract/extract.h"
#include "stages/merge/merge.h"
#include "stages/profile/profile.h"
#include "stages/read/read.h"
#include "stages/sort/sorter.h"
#include "stages/truncate/truncate.h"
#include "stages/tune/iotest.h"
#include "stages/verify/verify.h"
#include "stages/write/write.h"

#include <stdio.h>
#include <string.h>

typedef struct command {
    const char *name;
    int (*run)(int argc, char **argv);
    const char *summary;
} command;

static const command commands[] = {
    {"build", build_cmd, "dump -> SSTable in one process (extract|truncate|sort|write)"},
    {"extract", extract_cmd, "decompress and parse a dump into a record stream"},
    {"truncate", truncate_cmd, "cut each value to N bytes on a UTF-8 boundary"},
    {"sort", sort_cmd, "external merge sort of a record stream by key"},
    {"write", write_cmd, "write a sorted record stream as an SSTable"},
    {"merge", merge_cmd, "merge SSTables into one, the last input winning a shared key"},
    {"get", get_cmd, "print the value of one key"},
    {"dump", dump_cmd, "print every record in key order"},
    {"info", info_cmd, "print what an SSTable's footer says"},
    {"verify", verify_cmd, "check every byte of SSTables (checksums, order, index, counts)"},
    {"profile", profile_cmd, "time N point lookups (warm or cold; threads, io_uring)"},
    {"config", config_cmd, "show the effective configuration and where each value came from"},
    {"iotest", iotest_cmd, "measure the disk under a directory (diskspd's six patterns)"},
    {"tune", tune_cmd, "build, verify and profile block/cluster sizes; recommend a config"},
    {"nightly", nightly_cmd, "build, verify, profile and publish the newest dump (for cron)"},
};

static void usage(FILE *out) {
    fprintf(out, "usage: sstpipe COMMAND [ARGS...]   (sstpipe COMMAND --help for more)\n\n"
                 "commands:\n");
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        fprintf(out, "  %-10s %s\n", commands[i].name, commands[i].summary);
}

int main(int argc, char **argv) {
    /* From the start, so every command exits 130 or 143 on SIGINT or
     * SIGTERM, having removed whatever temporary files it registered. */
    sp_cleanup_install();
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
        usage(stdout);
        return 0;
    }
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (!strcmp(argv[1], commands[i].name))
            return commands[i].run(argc - 1, argv + 1);
    fprintf(stderr, "sstpipe: unknown command '%s'\n", argv[1]);
    usage(stderr);
    return 2;
}
