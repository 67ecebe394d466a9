/*
 * flags.h: the flags several commands share, each declared here once as an
 * sp_flag initializer, so that `--tmp` is the same flag, with the same
 * argument name and key, wherever it appears. A flag that sets a config key
 * has no help text of its own: --help shows the key's one-line help from
 * config/keys.def, with the key's name and default, so a flag and its key can
 * never be described differently.
 */
#ifndef SSTPIPE_COMMAND_FLAGS_H
#define SSTPIPE_COMMAND_FLAGS_H

#include "config/config.h"
#include "pipeline/command/table.h"

/* -o for a stage that writes a record stream (stdout when not given). */
#define SP_FLAG_OUTPUT_STREAM                                                                      \
    {                                                                                              \
        "output", 'o', "FILE", 0, NULL, "write to FILE (atomically) instead of stdout",            \
            SP_COMPLETE_FILE, NULL                                                                 \
    }
/* -o for a command that writes an SSTable (required). */
#define SP_FLAG_OUTPUT_TABLE                                                                       \
    {                                                                                              \
        "output", 'o', "FILE", 0, NULL, "the SSTable to write (required; replaced atomically)",    \
            SP_COMPLETE_FILE, NULL                                                                 \
    }
/* -q of a command that says what it made in one line when it succeeds. */
#define SP_FLAG_QUIET                                                                              \
    {                                                                                              \
        "quiet", 'q', NULL, 0, NULL, "print nothing on success (no summary line)",                 \
            SP_COMPLETE_NONE, NULL                                                                 \
    }
#define SP_FLAG_VERBOSE                                                                            \
    {                                                                                              \
        "verbose", 'v', NULL, 0, NULL, "print one statistics line per stage on stderr",            \
            SP_COMPLETE_NONE, NULL                                                                 \
    }

/* The live progress line of a long command, forced on or off. */
#define SP_FLAG_PROGRESS                                                                           \
    {                                                                                              \
        "progress", 0, NULL, SP_KEY(CONFIG_PROGRESS_SHOW), "always",                               \
            "show the live progress line on stderr even when it is not a terminal",                \
            SP_COMPLETE_NONE, NULL                                                                 \
    }
#define SP_FLAG_NO_PROGRESS                                                                        \
    {                                                                                              \
        "no-progress", 0, NULL, SP_KEY(CONFIG_PROGRESS_SHOW), "never",                             \
            "never show the progress line", SP_COMPLETE_NONE, NULL                                 \
    }

#define SP_FLAG_DECOMPRESSOR                                                                       \
    {                                                                                              \
        "decompressor", 0, "CMD", SP_KEY(CONFIG_INPUT_DECOMPRESSOR), NULL, NULL, SP_COMPLETE_NONE, \
            NULL                                                                                   \
    }
#define SP_FLAG_NAMESPACES                                                                         \
    {                                                                                              \
        "namespaces", 0, "LIST", SP_KEY(CONFIG_EXTRACT_NAMESPACES), NULL, NULL, SP_COMPLETE_NONE,  \
            NULL                                                                                   \
    }
#define SP_FLAG_SKIP_REDIRECTS                                                                     \
    {                                                                                              \
        "skip-redirects", 0, NULL, SP_KEY(CONFIG_EXTRACT_REDIRECTS), "skip",                       \
            "drop redirect pages", SP_COMPLETE_NONE, NULL                                          \
    }
#define SP_FLAG_MAX_BYTES                                                                          \
    { "max-bytes", 0, "N", SP_KEY(CONFIG_TRUNCATE_MAX_BYTES), NULL, NULL, SP_COMPLETE_NONE, NULL }
#define SP_FLAG_MEMORY                                                                             \
    { "memory", 0, "SIZE", SP_KEY(CONFIG_SORT_MEMORY), NULL, NULL, SP_COMPLETE_NONE, NULL }
#define SP_FLAG_TMP                                                                                \
    { "tmp", 0, "DIR", SP_KEY(CONFIG_SORT_TMP_DIR), NULL, NULL, SP_COMPLETE_DIR, NULL }
#define SP_FLAG_FAN_IN                                                                             \
    { "fan-in", 0, "N", SP_KEY(CONFIG_SORT_FAN_IN), NULL, NULL, SP_COMPLETE_NONE, NULL }
#define SP_FLAG_BLOCK_SIZE                                                                         \
    { "block-size", 0, "SIZE", SP_KEY(CONFIG_SST_BLOCK_SIZE), NULL, NULL, SP_COMPLETE_NONE, NULL }
#define SP_FLAG_CLUSTER_SIZE                                                                       \
    {                                                                                              \
        "cluster-size", 0, "SIZE", SP_KEY(CONFIG_SST_CLUSTER_SIZE), NULL, NULL, SP_COMPLETE_NONE,  \
            NULL                                                                                   \
    }
/* --json PATH of a command that measures: every figure, its fields
 * described in readme. */
#define SP_FLAG_JSON_FIGURES(readme)                                                               \
    SP_ARG("json", "PATH", "write every figure as JSON (fields in " readme ")", SP_COMPLETE_FILE)

/*
 * Flag groups, for the front ends that take the same set. A stage's front end
 * (build, extract, truncate, sort, write) begins its flags with
 * SP_STAGE_FLAGS(its -o), so that -o and -v stand at SP_F_OUTPUT and
 * SP_F_VERBOSE in every one of them.
 */
enum { SP_F_OUTPUT, SP_F_VERBOSE };
#define SP_STAGE_FLAGS(output) [SP_F_OUTPUT] = output, [SP_F_VERBOSE] = SP_FLAG_VERBOSE
/* --progress and --no-progress. */
#define SP_PROGRESS_FLAGS SP_FLAG_PROGRESS, SP_FLAG_NO_PROGRESS
/* A stream stage run by sp_front_run_stream (extract, sort): -o STREAM, -v,
 * its own flags, then the progress line's. */
#define SP_STREAM_FLAGS(...) SP_STAGE_FLAGS(SP_FLAG_OUTPUT_STREAM), __VA_ARGS__, SP_PROGRESS_FLAGS
/* The external sort's budget, scratch directory and fan-in. */
#define SP_SORT_FLAGS SP_FLAG_MEMORY, SP_FLAG_TMP, SP_FLAG_FAN_IN
/* The table's block and cluster sizes. */
#define SP_TABLE_FLAGS SP_FLAG_BLOCK_SIZE, SP_FLAG_CLUSTER_SIZE
/* What the extract stage keeps and how it decompresses. */
#define SP_EXTRACT_FLAGS SP_FLAG_NAMESPACES, SP_FLAG_SKIP_REDIRECTS, SP_FLAG_DECOMPRESSOR

#endif
