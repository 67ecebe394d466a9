/*
 * config.h: sstpipe's configuration, read from an INI file (config/default.ini
 * lists every key), `--set section.key=value` arguments and each command's
 * own flags, in that order of precedence over the built-in defaults.
 *
 * Every key is parsed and checked when it is set, so a bad value is an error
 * naming where it came from ("nightly.ini:12", "--set sst.block_size=3000")
 * before any work starts. Each key remembers its origin so that `sstpipe
 * config show` and the nightly manifest can say why a value is what it is.
 *
 * This library sits before the stage libraries: it uses their header
 * constants (limits, defaults) but never calls them, and no stage library
 * uses it, nor any orchestration. Turning a config into the option structs
 * of the stages and the orchestrations is the command line's
 * (pipeline/command/config_apply.h), which fills a config from -c FILE,
 * --set and the flags declared with a key (pipeline/command/command.h),
 * and hands it to the command.
 */
#ifndef SSTPIPE_CONFIG_CONFIG_H
#define SSTPIPE_CONFIG_CONFIG_H

#include "stages/common/error.h"
#include "stages/common/runner_kind.h"

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

/* Every key, in the order of config/default.ini. */
/* Every key, from its row in config/keys.def. */
typedef enum config_key {
#define CONFIG_KEY(id, ...) CONFIG_##id,
#include "config/keys.def"
#undef CONFIG_KEY
    CONFIG_KEY_COUNT
} config_key;

typedef enum config_origin {
    CONFIG_FROM_DEFAULT,
    CONFIG_FROM_FILE, /* where: "path:line" */
    CONFIG_FROM_SET,  /* where: "--set section.key=value" */
    CONFIG_FROM_FLAG, /* where: the flag, e.g. "--block-size" */
} config_origin;

#define CONFIG_MAX_NAMESPACES 64

/* [progress] show: when a long command shows its live line on stderr. */
typedef enum config_progress {
    CONFIG_PROGRESS_AUTO,   /* when stderr is a terminal */
    CONFIG_PROGRESS_ALWAYS, /* --progress */
    CONFIG_PROGRESS_NEVER,  /* --no-progress */
} config_progress;

typedef struct sp_config {
    struct {
        char *path;         /* a file or a glob; "" when unset */
        char *decompressor; /* external command; "" uses the built-in decoders */
        char *incremental;  /* glob of daily adds/changes dumps; "" when unset */
        char *deletions;    /* titles an incremental nightly drops, one a line; "" */
    } input;
    struct {
        int namespaces[CONFIG_MAX_NAMESPACES];
        int namespace_count; /* 0: every namespace */
        bool skip_redirects;
    } extract;
    struct {
        uint64_t max_bytes;
    } truncate;
    struct {
        uint64_t memory;
        char *tmp_dir;   /* "": $TMPDIR or /tmp (nightly: its staging directory) */
        uint64_t fan_in; /* 0: chosen from the memory budget */
    } sort;
    struct {
        uint64_t threads;    /* 0: every core */
        uint64_t chunk_size; /* XML bytes per parse chunk */
    } build;
    struct {
        uint64_t block_size;
        uint64_t cluster_size;
        bool compress; /* zstd: format version 2 */
        uint64_t compression_level;
        uint64_t dictionary_size;
    } sst;
    struct {
        uint64_t read_size;
        uint64_t max_problems;
        uint64_t threads; /* 0: every core the process may run on */
    } verify;
    struct {
        uint64_t lookups; /* 0: nightly skips profiling */
        bool cold;
        uint64_t threads;
        uint64_t queue_depth;
        double misses; /* percent */
        uint64_t seed;
    } profile;
    struct {
        char *dir; /* "": not set (nightly requires it) */
        char *name;
        uint64_t keep;
    } output;
    struct {
        config_progress show;
    } progress;
    struct {
        char *listen;     /* HOST:PORT */
        uint64_t threads; /* 0: one per core */
        bool cold;
        uint64_t block_cache; /* bytes of a compressed table's decompressed blocks */
        uint64_t max_connections;
        uint64_t timeout; /* seconds a connection may stay idle */
        uint64_t max_request_bytes;
        uint64_t prefix_limit_max;
        uint64_t poll_seconds; /* 0: no check without a change event */
        char *access_log;      /* "": none */
    } serve;
    struct {
        sp_runner_kind runner; /* what starts a cluster build's tasks */
        uint64_t tasks;        /* map tasks; 0: from the input size */
        uint64_t shards;       /* key ranges; 1: one table */
        char *shared_dir;      /* where tasks write; every node must see it */
        uint64_t retries;      /* extra attempts of a failed task */
        uint64_t jobs;         /* local, parallel: tasks at once; 0: one per core */
        char *slurm_partition;
        char *slurm_args;        /* more sbatch options, split at white space */
        char *parallel_sshlogin; /* GNU parallel's --sshloginfile */
    } cluster;
    /* Where each key's value came from. */
    config_origin origin[CONFIG_KEY_COUNT];
    char *where[CONFIG_KEY_COUNT]; /* NULL for defaults */
} sp_config;

/* Every key at its default. */
void config_init(sp_config *cfg);
void config_destroy(sp_config *cfg);

/* Applies an INI file on top of cfg. Errors name path:line and the key. */
int config_load_file(sp_config *cfg, const char *path, sp_error *err);
/* Applies "section.key=value" (origin --set). */
int config_set_arg(sp_config *cfg, const char *assignment, sp_error *err);
/* Applies a command's own flag (origin: the flag's name, e.g. "--block-size"). */
int config_set_flag(sp_config *cfg, config_key key, const char *flag, const char *value,
                    sp_error *err);

/*
 * Removes "-c FILE" (also -cFILE, --config FILE, --config=FILE) and every
 * "--set A" (also --set=A) from argv, shifting the rest down and updating
 * *argc, then loads the file and applies the --set arguments in order. The
 * scan stops at "--". Afterwards argv holds only the command's own flags.
 */
int config_parse_args(sp_config *cfg, int *argc, char **argv, sp_error *err);

/* Whether the build is a cluster build: some [cluster] key was set (in
 * the -c file, by --set or a flag) to other than its default. */
bool config_cluster_set(const sp_config *cfg);

/* The key's section and name ("sst", "block_size"). */
const char *config_key_section(config_key key);
const char *config_key_name(config_key key);
/* The key's one-line help (its comment in config/default.ini). */
const char *config_key_help(config_key key);
/* The key for section/name, or -1. */
int config_find_key(const char *section, const char *name);

/* The effective value as config text ("8K", "skip", "0,14"), in buf. */
const char *config_value_text(const sp_config *cfg, config_key key, char *buf, size_t cap);
/* "default", "nightly.ini:12", "--set sst.block_size=16K", "--block-size". */
const char *config_origin_text(const sp_config *cfg, config_key key);

/* Every key as "[section] key = value   # origin", grouped by section. */
void config_print(const sp_config *cfg, FILE *out);
/* {"section": {"key": {"value": typed value, "origin": "..."}}} (new reference). */
json_t *config_to_json(const sp_config *cfg);

#endif
