/* config_apply.c: config values into the options of the stages and the
 * orchestrations; see config_apply.h. */
#include "pipeline/command/config_apply.h"

#include "stages/common/cores.h"
#include "stages/sst/block_packed.h"
#include "stages/sst/format.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

/* An empty text key means "not set". */
static const char *unless_empty(const char *s) {
    return *s ? s : NULL;
}

void config_apply_extract(const sp_config *cfg, extract_options *opts) {
    opts->namespaces = cfg->extract.namespace_count ? cfg->extract.namespaces : NULL;
    opts->namespace_count = cfg->extract.namespace_count;
    opts->skip_redirects = cfg->extract.skip_redirects;
    opts->tmp_dir = unless_empty(cfg->sort.tmp_dir);
    opts->threads = (unsigned)cfg->build.threads;
    opts->chunk_bytes = (size_t)cfg->build.chunk_size;
    opts->decompressor = unless_empty(cfg->input.decompressor);
}

void config_apply_truncate(const sp_config *cfg, uint64_t *max_bytes) {
    *max_bytes = cfg->truncate.max_bytes;
}

void config_apply_sort(const sp_config *cfg, sort_options *opts) {
    opts->memory = cfg->sort.memory;
    opts->tmp_dir = unless_empty(cfg->sort.tmp_dir);
    opts->fan_in = (unsigned)cfg->sort.fan_in;
}

void config_apply_table(const sp_config *cfg, table_options *opts) {
    opts->block_size = (uint32_t)cfg->sst.block_size;
    opts->cluster_size = (uint32_t)cfg->sst.cluster_size;
    opts->max_value_bytes = (uint32_t)cfg->truncate.max_bytes;
    opts->compress = cfg->sst.compress;
    opts->compression_level = (int)cfg->sst.compression_level;
    opts->dictionary_size = (uint32_t)cfg->sst.dictionary_size;
}

void config_apply_build(const sp_config *cfg, build_options *opts) {
    config_apply_extract(cfg, &opts->extract);
    opts->max_bytes = cfg->truncate.max_bytes;
    config_apply_sort(cfg, &opts->sort);
    config_apply_table(cfg, &opts->table);
}

void config_apply_merge(const sp_config *cfg, table_merge_options *opts) {
    if (cfg->origin[CONFIG_SST_COMPRESSION] != CONFIG_FROM_DEFAULT)
        opts->format_version = cfg->sst.compress ? SST_FORMAT_VERSION_PACKED : SST_FORMAT_VERSION;
    opts->compression_level = (int)cfg->sst.compression_level;
    opts->dictionary_size = (uint32_t)cfg->sst.dictionary_size;
}

void config_apply_verify(const sp_config *cfg, verify_options *opts) {
    opts->read_size = (size_t)cfg->verify.read_size;
    opts->max_problems = (size_t)cfg->verify.max_problems;
    opts->threads = (unsigned)cfg->verify.threads;
}

void config_apply_profile(const sp_config *cfg, profile_options *opts) {
    opts->n = cfg->profile.lookups;
    opts->cold = cfg->profile.cold;
    opts->threads = (unsigned)cfg->profile.threads;
    opts->queue_depth = (unsigned)cfg->profile.queue_depth;
    opts->misses_pct = cfg->profile.misses;
    opts->seed = cfg->profile.seed;
}

void config_apply_tune(const sp_config *cfg, build_options *build, verify_options *verify,
                       profile_options *profile, const char **work_dir, const char **input_glob) {
    config_apply_build(cfg, build);
    config_apply_verify(cfg, verify);
    uint64_t n = profile->n;
    config_apply_profile(cfg, profile);
    if (!profile->n) /* 0 tells nightly to skip profiling; tune always profiles */
        profile->n = n;
    *work_dir = *cfg->output.dir ? cfg->output.dir : unless_empty(cfg->sort.tmp_dir);
    *input_glob = unless_empty(cfg->input.path);
}

/* Sections whose keys decide a cluster task's output: every key of these,
 * and [input] decompressor. */
static const char *const plan_sections[] = {"extract", "truncate", "sort", "build", "sst", NULL};

static bool decides_output(config_key k) {
    if (k == CONFIG_INPUT_DECOMPRESSOR)
        return true;
    for (size_t s = 0; plan_sections[s]; s++)
        if (!strcmp(config_key_section(k), plan_sections[s]))
            return true;
    return false;
}

int config_apply_cluster(const sp_config *cfg, cluster_build_options *opts, sp_error *err) {
    opts->plan.shared_dir = cfg->cluster.shared_dir;
    opts->plan.tasks = cfg->cluster.tasks;
    opts->plan.shards = (unsigned)cfg->cluster.shards;
    opts->run.kind = cfg->cluster.runner;
    opts->run.jobs = (int)cfg->cluster.jobs;
    opts->run.retries = (int)cfg->cluster.retries;
    opts->run.slurm_partition = cfg->cluster.slurm_partition;
    opts->run.slurm_args = cfg->cluster.slurm_args;
    opts->run.parallel_sshlogin = cfg->cluster.parallel_sshlogin;
    opts->build_threads = (unsigned)cfg->build.threads;
    opts->sort_memory = cfg->sort.memory;
    cluster_option *o = calloc(CONFIG_KEY_COUNT, sizeof *o);
    if (!o)
        return sp_errorf(err, "out of memory");
    opts->plan.options = o;
    for (int k = 0; k < CONFIG_KEY_COUNT; k++) {
        if (!decides_output((config_key)k))
            continue;
        char name[128], value[1024];
        snprintf(name, sizeof name, "%s.%s", config_key_section((config_key)k),
                 config_key_name((config_key)k));
        config_value_text(cfg, (config_key)k, value, sizeof value);
        cluster_option *c = &o[opts->plan.n_options++];
        c->key = strdup(name);
        c->value = strdup(value);
        if (!c->key || !c->value)
            return sp_errorf(err, "out of memory");
    }
    return 0;
}

int config_apply_plan(const cluster_plan *p, sp_config *cfg, build_options *opts, sp_error *err) {
    config_init(cfg);
    for (size_t i = 0; i < p->n_options; i++) {
        size_t n = strlen(p->options[i].key) + strlen(p->options[i].value) + 2;
        char *arg = malloc(n);
        if (!arg)
            return sp_errorf(err, "out of memory");
        snprintf(arg, n, "%s=%s", p->options[i].key, p->options[i].value);
        int rc = config_set_arg(cfg, arg, err);
        free(arg);
        if (rc)
            return -1;
    }
    config_apply_build(cfg, opts);
    return 0;
}

bool config_apply_progress(const sp_config *cfg, bool terminal) {
    switch (cfg->progress.show) {
    case CONFIG_PROGRESS_ALWAYS:
        return true;
    case CONFIG_PROGRESS_NEVER:
        return false;
    default:
        return terminal;
    }
}

/* The settings that change a table's bytes, as text: a dump built with the
 * same ones gives the same table. */
static uint64_t table_key(const sp_config *cfg) {
    static const config_key keys[] = {CONFIG_EXTRACT_NAMESPACES,    CONFIG_EXTRACT_REDIRECTS,
                                      CONFIG_TRUNCATE_MAX_BYTES,    CONFIG_SST_BLOCK_SIZE,
                                      CONFIG_SST_CLUSTER_SIZE,      CONFIG_SST_COMPRESSION,
                                      CONFIG_SST_COMPRESSION_LEVEL, CONFIG_SST_DICTIONARY_SIZE};
    char text[1024], v[512];
    size_t used = (size_t)snprintf(text, sizeof text, "sst-format-%d", SST_FORMAT_VERSION);
    for (size_t i = 0; i < sizeof keys / sizeof keys[0] && used < sizeof text; i++)
        used +=
            (size_t)snprintf(text + used, sizeof text - used, " %s=%s", config_key_name(keys[i]),
                             config_value_text(cfg, keys[i], v, sizeof v));
    return XXH3_64bits(text, strlen(text));
}

int config_apply_nightly(const sp_config *cfg, nightly_options *o, sp_error *err) {
    o->dir = cfg->output.dir;
    o->table_name = cfg->output.name;
    o->keep = cfg->output.keep;
    o->input_glob = unless_empty(cfg->input.path);
    o->input_glob_origin = config_origin_text(cfg, CONFIG_INPUT_PATH);
    o->incremental = unless_empty(cfg->input.incremental);
    o->deletions = unless_empty(cfg->input.deletions);
    config_apply_build(cfg, &o->build);
    config_apply_verify(cfg, &o->verify);
    config_apply_profile(cfg, &o->profile);
    o->cluster = config_cluster_set(cfg);
    if (o->cluster && config_apply_cluster(cfg, &o->cluster_build, err))
        return -1;
    o->table_key = table_key(cfg);
    json_decref(o->config);
    if (!(o->config = config_to_json(cfg)))
        return sp_errorf(err, "out of memory");
    return 0;
}

int config_check_nightly(const sp_config *cfg, bool have_input, bool *usage, sp_error *err) {
    *usage = true;
    if (!*cfg->output.dir)
        return sp_errorf(err, "[output] dir is not set (-c FILE, --set output.dir=DIR or -o DIR)");
    if (!have_input && !*cfg->input.path)
        return sp_errorf(err, "no INPUT given and [input] path is not set");
    if (*cfg->input.deletions && !*cfg->input.incremental)
        return sp_errorf(err, "[input] deletions applies to an incremental nightly: set [input] "
                              "incremental too");
    /* Options a record could not fit are refused now, not after the dump is read. */
    *usage = false;
    if (cfg->sst.compress)
        return sst_packed_check_fit((uint32_t)cfg->sst.block_size,
                                    (uint32_t)cfg->truncate.max_bytes, err);
    return sst_check_fit((uint32_t)cfg->sst.block_size, (uint32_t)cfg->truncate.max_bytes, err);
}

void config_apply_serve(const sp_config *cfg, const char **listen, const char **access_log,
                        serve_holder_options *holder, serve_http_options *http,
                        serve_handler *handler) {
    *listen = cfg->serve.listen;
    *access_log = cfg->serve.access_log[0] ? cfg->serve.access_log : NULL;
    /* Unset, the name is the published build's (the nightly's own config
     * may have set it). */
    holder->table_name =
        cfg->origin[CONFIG_OUTPUT_NAME] == CONFIG_FROM_DEFAULT ? NULL : cfg->output.name;
    holder->direct_io = cfg->serve.cold;
    holder->block_cache = (size_t)cfg->serve.block_cache;
    holder->poll_seconds = (unsigned)cfg->serve.poll_seconds;
    http->threads = cfg->serve.threads ? (unsigned)cfg->serve.threads : sp_usable_cores();
    http->max_connections = (unsigned)cfg->serve.max_connections;
    http->timeout_s = (unsigned)cfg->serve.timeout;
    http->max_request_bytes = (size_t)cfg->serve.max_request_bytes;
    handler->prefix_limit_max = (uint32_t)cfg->serve.prefix_limit_max;
    handler->copy_values = cfg->serve.cold;
}
