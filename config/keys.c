/*
 * keys.c: the list of configuration keys and the parsing of each key's value.
 * Limits and defaults come from the stage headers, so the config cannot
 * accept a value a stage would refuse later, halfway through a build.
 */
#include "config/keys.h"

#include "stages/common/record.h"
#include "stages/common/size.h"
#include "stages/sort/sorter.h"
#include "stages/sst/format.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define KIB 1024ull
#define MIB (1024ull * KIB)
#define GIB (1024ull * MIB)

const key_info config_keys[CONFIG_KEY_COUNT] = {
    [CONFIG_INPUT_PATH] = {"input", "path", KT_STRING, 0, 0, 0, "",
                           "the dump to build: a file, or a glob whose newest match is used"},
    [CONFIG_INPUT_DECOMPRESSOR] = {"input", "decompressor", KT_STRING, 0, 0, 0, "",
                                   "external decompressor command run by /bin/sh with the dump "
                                   "as stdin, e.g. lbzip2 -dc -n {threads} ({threads}: "
                                   "[build] threads); empty: the built-in decoders"},
    [CONFIG_INPUT_INCREMENTAL] = {"input", "incremental", KT_STRING, 0, 0, 0, "",
                                  "nightly: glob of daily adds/changes dumps (YYYYMMDD in each "
                                  "name) merged, in date order, over the newest full dump; "
                                  "empty: full dumps only"},
    [CONFIG_INPUT_DELETIONS] = {"input", "deletions", KT_STRING, 0, 0, 0, "",
                                "incremental nightly: file of titles (one a line) left out of "
                                "the published table; empty: none"},
    [CONFIG_EXTRACT_NAMESPACES] = {"extract", "namespaces", KT_NAMESPACES, 0, 0, 0, "all",
                                   "namespace numbers to keep, comma separated, or all"},
    [CONFIG_EXTRACT_REDIRECTS] = {"extract", "redirects", KT_REDIRECTS, 0, 0, 0, "keep",
                                  "redirect pages: keep or skip"},
    /* truncate holds a value whole before cutting it, so beyond 1G a typo
     * ("1T") would be a memory hazard rather than a setting; a table needs
     * far less anyway (a value must fit one block of at most 1M). */
    [CONFIG_TRUNCATE_MAX_BYTES] = {"truncate", "max_bytes", KT_SIZE, 1, GIB,
                                   SP_DEFAULT_MAX_VALUE_BYTES, NULL,
                                   "longest value kept, cut on a UTF-8 character boundary"},
    [CONFIG_SORT_MEMORY] = {"sort", "memory", KT_SIZE, SORT_MIN_MEMORY, 1024 * GIB,
                            SORT_DEFAULT_MEMORY, NULL,
                            "memory budget of the external sort (at least 1M)"},
    [CONFIG_SORT_TMP_DIR] = {"sort", "tmp_dir", KT_STRING, 0, 0, 0, "",
                             "directory for sort spill files; empty: $TMPDIR or /tmp "
                             "(nightly: its staging directory)"},
    [CONFIG_SORT_FAN_IN] = {"sort", "fan_in", KT_FAN_IN, 2, 1u << 20, 0, NULL,
                            "sorted runs merged at once, 0 = chosen from the memory budget"},
    [CONFIG_BUILD_THREADS] = {"build", "threads", KT_COUNT, 0, 1024, 0, NULL,
                              "threads decompressing (bz2), parsing the dump and sorting it into "
                              "runs, 0 = every core the process may run on; 1 parses on one "
                              "thread"},
    /* Any size gives the same table; the limits keep a typo from costing
     * memory (a chunk is held 2 * threads + 1 times, up to 2x its size). */
    [CONFIG_BUILD_CHUNK_SIZE] = {"build", "chunk_size", KT_SIZE, 4 * KIB, 64 * MIB, MIB, NULL,
                                 "XML bytes each parsing thread takes at once (cut at a page)"},
    [CONFIG_SST_BLOCK_SIZE] = {"sst", "block_size", KT_POW2, SST_MIN_BLOCK_SIZE, SST_MAX_BLOCK_SIZE,
                               SST_DEFAULT_BLOCK_SIZE, NULL,
                               "data block size: one lookup reads one block (512 to 1M)"},
    [CONFIG_SST_CLUSTER_SIZE] = {"sst", "cluster_size", KT_POW2, SST_MIN_CLUSTER_SIZE,
                                 SST_MAX_CLUSTER_SIZE, SST_DEFAULT_CLUSTER_SIZE, NULL,
                                 "alignment of the file's regions (512 to 1G)"},
    [CONFIG_VERIFY_READ_SIZE] = {"verify", "read_size", KT_SIZE, 4 * KIB, GIB, 8 * MIB, NULL,
                                 "bytes per sequential read while verifying"},
    [CONFIG_VERIFY_MAX_PROBLEMS] = {"verify", "max_problems", KT_COUNT, 1, 1000000000, 1000, NULL,
                                    "problems listed in the report (all are counted)"},
    [CONFIG_VERIFY_THREADS] = {"verify", "threads", KT_COUNT, 0, 1024, 0, NULL,
                               "threads checking the data blocks, 0 = every core the process "
                               "may run on"},
    [CONFIG_PROFILE_LOOKUPS] = {"profile", "lookups", KT_COUNT, 0, 1000000000, 10000, NULL,
                                "timed point lookups after the build, 0 = do not profile"},
    [CONFIG_PROFILE_COLD] = {"profile", "cold", KT_BOOL, 0, 1, 0, NULL,
                             "drop the file from the page cache and read with O_DIRECT"},
    [CONFIG_PROFILE_THREADS] = {"profile", "threads", KT_COUNT, 1, 1024, 1, NULL, "lookup threads"},
    /* The depth io_uring can do depends on the kernel and the memlock limit,
     * so it is not guessed here: profile sets the ring up before any lookup
     * and says which depth it could not get. */
    [CONFIG_PROFILE_QUEUE_DEPTH] = {"profile", "queue_depth", KT_COUNT, 1, UINT32_MAX, 1, NULL,
                                    "reads in flight per thread (above 1: io_uring)"},
    [CONFIG_PROFILE_MISSES] = {"profile", "misses", KT_PERCENT, 0, 100, 0, NULL,
                               "percent of lookups for absent keys"},
    [CONFIG_PROFILE_SEED] = {"profile", "seed", KT_COUNT, 0, UINT64_MAX, 1, NULL,
                             "seed of the key sequence (same seed, same lookups)"},
    [CONFIG_OUTPUT_DIR] = {"output", "dir", KT_STRING, 0, 0, 0, "",
                           "where nightly keeps builds/, failed/ and the current symlink"},
    [CONFIG_OUTPUT_NAME] = {"output", "name", KT_FILENAME, 0, 0, 0, "table.sst",
                            "file name of the SSTable inside each build directory"},
    [CONFIG_OUTPUT_KEEP] = {"output", "keep", KT_COUNT, 1, 10000, 7, NULL,
                            "published builds kept; older ones are deleted, never current"},
    [CONFIG_PROGRESS_SHOW] = {"progress", "show", KT_PROGRESS, 0, 0, 0, "auto",
                              "live progress line of long commands on stderr: auto (when it "
                              "is a terminal), always or never"},
    [CONFIG_SERVE_LISTEN] = {"serve", "listen", KT_STRING, 0, 0, 0, "127.0.0.1:8080",
                             "address and port serve listens on (HOST:PORT, [IPv6]:PORT; "
                             "port 0 picks a free one)"},
    [CONFIG_SERVE_THREADS] = {"serve", "threads", KT_COUNT, 0, 1024, 0, NULL,
                              "worker threads answering requests, 0 = number of cores"},
    [CONFIG_SERVE_COLD] = {"serve", "cold", KT_BOOL, 0, 1, 0, NULL,
                           "read with O_DIRECT: one aligned read per lookup, no page cache"},
    [CONFIG_SERVE_MAX_CONNECTIONS] =
        {"serve", "max_connections", KT_COUNT, 1, 1000000, 1024, NULL,
         "open connections at most; more wait in the listen queue until one closes"},
    [CONFIG_SERVE_TIMEOUT] = {"serve", "timeout", KT_COUNT, 1, 3600, 30, NULL,
                              "seconds a connection may stay idle (or stall mid-request) "
                              "before it is closed"},
    /* The server's per-connection buffer holds the request line and headers;
     * below 4K ordinary browsers' headers would not fit. */
    [CONFIG_SERVE_MAX_REQUEST_BYTES] = {"serve", "max_request_bytes", KT_SIZE, 4 * KIB, MIB,
                                        32 * KIB, NULL,
                                        "longest request line and headers, together"},
    [CONFIG_SERVE_PREFIX_LIMIT_MAX] = {"serve", "prefix_limit_max", KT_COUNT, 1, 100000, 1000, NULL,
                                       "most records one /v1/prefix request returns"},
    [CONFIG_SERVE_POLL_SECONDS] = {"serve", "poll_seconds", KT_COUNT, 0, 3600, 1, NULL,
                                   "seconds between checks for a new table without a change "
                                   "event (inotify sees nothing of a change made on another "
                                   "NFS client); 0 = none, only inotify events and SIGHUP"},
    [CONFIG_CLUSTER_RUNNER] = {"cluster", "runner", KT_RUNNER, 0, 0, 0, "local",
                               "what runs a cluster build's tasks: local (processes here), "
                               "parallel (GNU parallel) or slurm (sbatch job arrays)"},
    [CONFIG_CLUSTER_TASKS] = {"cluster", "tasks", KT_COUNT, 0, 1000000, 0, NULL,
                              "map tasks the input is cut into, 0 = from its size "
                              "(64 to 256 MiB of it each)"},
    [CONFIG_CLUSTER_SHARDS] = {"cluster", "shards", KT_COUNT, 1, 65536, 1, NULL,
                               "key ranges, one table each; 1 = the output is one table, "
                               "more = a table set directory"},
    [CONFIG_CLUSTER_SHARED_DIR] = {"cluster", "shared_dir", KT_STRING, 0, 0, 0, "",
                                   "directory the tasks write into, seen by every node "
                                   "(required for a cluster build)"},
    [CONFIG_CLUSTER_RETRIES] = {"cluster", "retries", KT_COUNT, 0, 100, 2, NULL,
                                "extra attempts of a failed, killed or cancelled task"},
    [CONFIG_CLUSTER_JOBS] = {"cluster", "jobs", KT_COUNT, 0, 4096, 0, NULL,
                             "tasks run at once by the local and parallel runners, 0 = "
                             "number of cores"},
    [CONFIG_CLUSTER_SLURM_PARTITION] = {"cluster", "slurm_partition", KT_STRING, 0, 0, 0, "",
                                        "Slurm partition of the job arrays (empty: the "
                                        "cluster's default)"},
    [CONFIG_CLUSTER_SLURM_ARGS] = {"cluster", "slurm_args", KT_STRING, 0, 0, 0, "",
                                   "more sbatch options: account, time and memory limits"},
    [CONFIG_CLUSTER_PARALLEL_SSHLOGIN] = {"cluster", "parallel_sshlogin", KT_STRING, 0, 0, 0, "",
                                          "GNU parallel login file of remote hosts that "
                                          "share shared_dir (empty: this machine)"},
};

static const char *const progress_names[] = {"auto", "always", "never"};

const char *const config_sections[] = {"input", "extract", "truncate", "sort",   "build",
                                       "sst",   "verify",  "profile",  "output", "progress",
                                       "serve", "cluster", NULL};

/* Nightly writes these beside the SSTable; the table must not overwrite them. */
static const char *const reserved_names[] = {"manifest.json", "verify.json", "profile.json",
                                             "nightly.log", NULL};

static int parse_bool(const char *text, const char *what, bool *out, sp_error *err) {
    static const char *const yes[] = {"true", "yes", "on", "1"};
    static const char *const no[] = {"false", "no", "off", "0"};
    for (size_t i = 0; i < 4; i++) {
        if (!strcasecmp(text, yes[i])) {
            *out = true;
            return 0;
        }
        if (!strcasecmp(text, no[i])) {
            *out = false;
            return 0;
        }
    }
    return sp_errorf(err, "%s: '%s' is not a boolean (true/false, yes/no, on/off, 1/0)", what,
                     text);
}

static int parse_namespaces(const char *text, const char *what, int *out, int *count,
                            sp_error *err) {
    *count = 0;
    if (!*text || !strcasecmp(text, "all"))
        return 0;
    const char *p = text;
    for (;;) {
        while (isspace((unsigned char)*p))
            p++;
        if (!isdigit((unsigned char)*p))
            return sp_errorf(err, "%s: '%s' is not a namespace list (all, or numbers like 0,14)",
                             what, text);
        errno = 0;
        char *end;
        long n = strtol(p, &end, 10);
        if (errno || n > INT32_MAX)
            return sp_errorf(err, "%s: namespace '%.*s' is too large", what, (int)(end - p), p);
        for (int i = 0; i < *count; i++)
            if (out[i] == (int)n)
                return sp_errorf(err, "%s: namespace %ld is listed twice", what, n);
        if (*count == CONFIG_MAX_NAMESPACES)
            return sp_errorf(err, "%s: more than %d namespaces", what, CONFIG_MAX_NAMESPACES);
        out[(*count)++] = (int)n;
        p = end;
        while (isspace((unsigned char)*p))
            p++;
        if (!*p)
            return 0;
        if (*p != ',')
            return sp_errorf(err, "%s: '%s' is not a namespace list (all, or numbers like 0,14)",
                             what, text);
        p++;
    }
}

static int parse_percent(const char *text, const char *what, double *out, sp_error *err) {
    char *end;
    errno = 0;
    double v = strtod(text, &end);
    if (!*text || *end || errno || !isfinite(v) || v < 0 || v > 100)
        return sp_errorf(err, "%s: '%s' must be a number from 0 to 100", what, text);
    *out = v;
    return 0;
}

static int check_filename(const char *text, const char *what, sp_error *err) {
    if (!*text || strchr(text, '/') || !strcmp(text, ".") || !strcmp(text, ".."))
        return sp_errorf(err, "%s: '%s' must be a plain file name", what, text);
    for (size_t i = 0; reserved_names[i]; i++)
        if (!strcmp(text, reserved_names[i]))
            return sp_errorf(err, "%s: '%s' is the name of nightly's %s", what, text,
                             reserved_names[i]);
    return 0;
}

static int parse_number(const key_info *k, const char *text, const char *what, uint64_t *out,
                        sp_error *err) {
    char lo[32], hi[32];
    switch (k->type) {
    case KT_POW2:
        return sp_parse_pow2_size(text, what, k->min, k->max, out, err);
    case KT_SIZE:
        if (sp_parse_size(text, what, out, err))
            return -1;
        if (*out < k->min || *out > k->max)
            return sp_errorf(err, "%s: '%s' must be from %s to %s", what, text,
                             sp_format_size(k->min, lo, sizeof lo),
                             sp_format_size(k->max, hi, sizeof hi));
        return 0;
    case KT_FAN_IN:
        if (!strcmp(text, "0")) {
            *out = 0;
            return 0;
        }
        if (sp_parse_count(text, what, k->min, k->max, out, err)) {
            sp_error_clear(err);
            return sp_errorf(err,
                             "%s: '%s' must be 0 (automatic) or a whole number from %llu "
                             "to %llu",
                             what, text, (unsigned long long)k->min, (unsigned long long)k->max);
        }
        return 0;
    default:
        return sp_parse_count(text, what, k->min, k->max, out, err);
    }
}

static char **string_field(sp_config *cfg, config_key key) {
    switch (key) {
    case CONFIG_INPUT_PATH:
        return &cfg->input.path;
    case CONFIG_INPUT_DECOMPRESSOR:
        return &cfg->input.decompressor;
    case CONFIG_INPUT_INCREMENTAL:
        return &cfg->input.incremental;
    case CONFIG_INPUT_DELETIONS:
        return &cfg->input.deletions;
    case CONFIG_SORT_TMP_DIR:
        return &cfg->sort.tmp_dir;
    case CONFIG_OUTPUT_DIR:
        return &cfg->output.dir;
    case CONFIG_OUTPUT_NAME:
        return &cfg->output.name;
    case CONFIG_SERVE_LISTEN:
        return &cfg->serve.listen;
    case CONFIG_CLUSTER_SHARED_DIR:
        return &cfg->cluster.shared_dir;
    case CONFIG_CLUSTER_SLURM_PARTITION:
        return &cfg->cluster.slurm_partition;
    case CONFIG_CLUSTER_SLURM_ARGS:
        return &cfg->cluster.slurm_args;
    case CONFIG_CLUSTER_PARALLEL_SSHLOGIN:
        return &cfg->cluster.parallel_sshlogin;
    default:
        return NULL;
    }
}

static bool *bool_field(sp_config *cfg, config_key key) {
    switch (key) {
    case CONFIG_PROFILE_COLD:
        return &cfg->profile.cold;
    case CONFIG_SERVE_COLD:
        return &cfg->serve.cold;
    default:
        return NULL;
    }
}

static uint64_t *number_field(sp_config *cfg, config_key key) {
    switch (key) {
    case CONFIG_TRUNCATE_MAX_BYTES:
        return &cfg->truncate.max_bytes;
    case CONFIG_SORT_MEMORY:
        return &cfg->sort.memory;
    case CONFIG_BUILD_THREADS:
        return &cfg->build.threads;
    case CONFIG_BUILD_CHUNK_SIZE:
        return &cfg->build.chunk_size;
    case CONFIG_SORT_FAN_IN:
        return &cfg->sort.fan_in;
    case CONFIG_SST_BLOCK_SIZE:
        return &cfg->sst.block_size;
    case CONFIG_SST_CLUSTER_SIZE:
        return &cfg->sst.cluster_size;
    case CONFIG_VERIFY_READ_SIZE:
        return &cfg->verify.read_size;
    case CONFIG_VERIFY_MAX_PROBLEMS:
        return &cfg->verify.max_problems;
    case CONFIG_VERIFY_THREADS:
        return &cfg->verify.threads;
    case CONFIG_PROFILE_LOOKUPS:
        return &cfg->profile.lookups;
    case CONFIG_PROFILE_THREADS:
        return &cfg->profile.threads;
    case CONFIG_PROFILE_QUEUE_DEPTH:
        return &cfg->profile.queue_depth;
    case CONFIG_PROFILE_SEED:
        return &cfg->profile.seed;
    case CONFIG_OUTPUT_KEEP:
        return &cfg->output.keep;
    case CONFIG_SERVE_THREADS:
        return &cfg->serve.threads;
    case CONFIG_SERVE_MAX_CONNECTIONS:
        return &cfg->serve.max_connections;
    case CONFIG_SERVE_TIMEOUT:
        return &cfg->serve.timeout;
    case CONFIG_SERVE_MAX_REQUEST_BYTES:
        return &cfg->serve.max_request_bytes;
    case CONFIG_SERVE_PREFIX_LIMIT_MAX:
        return &cfg->serve.prefix_limit_max;
    case CONFIG_SERVE_POLL_SECONDS:
        return &cfg->serve.poll_seconds;
    case CONFIG_CLUSTER_TASKS:
        return &cfg->cluster.tasks;
    case CONFIG_CLUSTER_SHARDS:
        return &cfg->cluster.shards;
    case CONFIG_CLUSTER_RETRIES:
        return &cfg->cluster.retries;
    case CONFIG_CLUSTER_JOBS:
        return &cfg->cluster.jobs;
    default:
        return NULL;
    }
}

int config_store(sp_config *cfg, config_key key, const char *text, const char *what,
                 sp_error *err) {
    const key_info *k = &config_keys[key];
    switch (k->type) {
    case KT_FILENAME:
        if (check_filename(text, what, err))
            return -1;
        /* fall through */
    case KT_STRING: {
        char *copy = strdup(text);
        if (!copy)
            return sp_errorf(err, "%s: out of memory", what);
        char **field = string_field(cfg, key);
        free(*field);
        *field = copy;
        return 0;
    }
    case KT_BOOL:
        return parse_bool(text, what, bool_field(cfg, key), err);
    case KT_REDIRECTS:
        if (strcasecmp(text, "keep") && strcasecmp(text, "skip"))
            return sp_errorf(err, "%s: '%s' must be keep or skip", what, text);
        cfg->extract.skip_redirects = !strcasecmp(text, "skip");
        return 0;
    case KT_NAMESPACES: {
        int list[CONFIG_MAX_NAMESPACES], n;
        if (parse_namespaces(text, what, list, &n, err))
            return -1;
        memcpy(cfg->extract.namespaces, list, sizeof list);
        cfg->extract.namespace_count = n;
        return 0;
    }
    case KT_PERCENT:
        return parse_percent(text, what, &cfg->profile.misses, err);
    case KT_PROGRESS:
        for (int i = 0; i < 3; i++)
            if (!strcasecmp(text, progress_names[i])) {
                cfg->progress.show = (config_progress)i;
                return 0;
            }
        return sp_errorf(err, "%s: '%s' must be auto, always or never", what, text);
    case KT_RUNNER:
        if (!sp_runner_kind_parse(text, &cfg->cluster.runner))
            return 0;
        return sp_errorf(err, "%s: '%s' must be " SP_RUNNER_CHOICES, what, text);
    case KT_SIZE:
    case KT_POW2:
    case KT_COUNT:
    case KT_FAN_IN:
        return parse_number(k, text, what, number_field(cfg, key), err);
    }
    return sp_errorf(err, "%s: unknown key type", what);
}

const char *config_value_text(const sp_config *cfg, config_key key, char *buf, size_t cap) {
    const key_info *k = &config_keys[key];
    sp_config *c = (sp_config *)cfg; /* the field lookups do not write */
    switch (k->type) {
    case KT_STRING:
    case KT_FILENAME:
        snprintf(buf, cap, "%s", *string_field(c, key));
        break;
    case KT_BOOL:
        snprintf(buf, cap, "%s", *bool_field(c, key) ? "true" : "false");
        break;
    case KT_REDIRECTS:
        snprintf(buf, cap, "%s", cfg->extract.skip_redirects ? "skip" : "keep");
        break;
    case KT_NAMESPACES: {
        if (!cfg->extract.namespace_count) {
            snprintf(buf, cap, "all");
            break;
        }
        size_t used = 0;
        buf[0] = '\0';
        for (int i = 0; i < cfg->extract.namespace_count && used < cap; i++)
            used += (size_t)snprintf(buf + used, cap - used, "%s%d", i ? "," : "",
                                     cfg->extract.namespaces[i]);
        break;
    }
    case KT_PERCENT:
        snprintf(buf, cap, "%g", cfg->profile.misses);
        break;
    case KT_PROGRESS:
        snprintf(buf, cap, "%s", progress_names[cfg->progress.show]);
        break;
    case KT_RUNNER:
        snprintf(buf, cap, "%s", sp_runner_kind_name(cfg->cluster.runner));
        break;
    case KT_SIZE:
    case KT_POW2:
        sp_format_size(*number_field(c, key), buf, cap);
        break;
    case KT_COUNT:
    case KT_FAN_IN:
        snprintf(buf, cap, "%llu", (unsigned long long)*number_field(c, key));
        break;
    }
    return buf;
}

json_t *config_value_json(const sp_config *cfg, config_key key) {
    const key_info *k = &config_keys[key];
    sp_config *c = (sp_config *)cfg;
    switch (k->type) {
    case KT_STRING:
    case KT_FILENAME:
        return json_string(*string_field(c, key));
    case KT_BOOL:
        return json_boolean(*bool_field(c, key));
    case KT_REDIRECTS:
        return json_string(cfg->extract.skip_redirects ? "skip" : "keep");
    case KT_NAMESPACES: {
        if (!cfg->extract.namespace_count)
            return json_string("all");
        json_t *a = json_array();
        for (int i = 0; i < cfg->extract.namespace_count; i++)
            json_array_append_new(a, json_integer(cfg->extract.namespaces[i]));
        return a;
    }
    case KT_PERCENT:
        return json_real(cfg->profile.misses);
    case KT_PROGRESS:
        return json_string(progress_names[cfg->progress.show]);
    case KT_RUNNER:
        return json_string(sp_runner_kind_name(cfg->cluster.runner));
    default:
        return json_integer((json_int_t)*number_field(c, key));
    }
}

void config_init(sp_config *cfg) {
    memset(cfg, 0, sizeof *cfg);
    for (int i = 0; i < CONFIG_KEY_COUNT; i++) {
        const key_info *k = &config_keys[i];
        if (k->def_text) {
            sp_error err = {0};
            /* The defaults are in the table above and a unit test parses each. */
            config_store(cfg, (config_key)i, k->def_text, k->name, &err);
        } else if (k->type == KT_BOOL) {
            *bool_field(cfg, (config_key)i) = k->def != 0;
        } else if (k->type == KT_PERCENT) {
            cfg->profile.misses = (double)k->def;
        } else {
            *number_field(cfg, (config_key)i) = k->def;
        }
    }
}

void config_destroy(sp_config *cfg) {
    for (int i = 0; i < CONFIG_KEY_COUNT; i++) {
        char **s = string_field(cfg, (config_key)i);
        if (s)
            free(*s);
        free(cfg->where[i]);
    }
    memset(cfg, 0, sizeof *cfg);
}

size_t config_edit_distance(const char *a, const char *b) {
    size_t la = strlen(a), lb = strlen(b);
    if (la > 64 || lb > 64)
        return la > lb ? la : lb;
    size_t row[65];
    for (size_t j = 0; j <= lb; j++)
        row[j] = j;
    for (size_t i = 1; i <= la; i++) {
        size_t diag = row[0];
        row[0] = i;
        for (size_t j = 1; j <= lb; j++) {
            size_t up = row[j];
            size_t cost = tolower((unsigned char)a[i - 1]) != tolower((unsigned char)b[j - 1]);
            size_t best = diag + cost;
            if (row[j] + 1 < best)
                best = row[j] + 1;
            if (row[j - 1] + 1 < best)
                best = row[j - 1] + 1;
            row[j] = best;
            diag = up;
        }
    }
    return row[lb];
}
