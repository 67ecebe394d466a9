/* config_apply.c: config values into stage options; see config_apply.h. */
#include "config/config_apply.h"

#include "stages/common/cores.h"
#include "stages/sst/format.h"

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
}

void config_apply_build(const sp_config *cfg, build_options *opts) {
    config_apply_extract(cfg, &opts->extract);
    opts->max_bytes = cfg->truncate.max_bytes;
    config_apply_sort(cfg, &opts->sort);
    config_apply_table(cfg, &opts->table);
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
    return sst_check_fit((uint32_t)cfg->sst.block_size, (uint32_t)cfg->truncate.max_bytes, err);
}

void config_apply_serve(const sp_config *cfg, const char **listen, serve_holder_options *holder,
                        serve_http_options *http, serve_handler *handler) {
    *listen = cfg->serve.listen;
    holder->table_name = cfg->output.name;
    holder->direct_io = cfg->serve.cold;
    holder->poll_seconds = (unsigned)cfg->serve.poll_seconds;
    http->threads = cfg->serve.threads ? (unsigned)cfg->serve.threads : sp_usable_cores();
    http->max_connections = (unsigned)cfg->serve.max_connections;
    http->timeout_s = (unsigned)cfg->serve.timeout;
    http->max_request_bytes = (size_t)cfg->serve.max_request_bytes;
    handler->prefix_limit_max = (uint32_t)cfg->serve.prefix_limit_max;
    handler->copy_values = cfg->serve.cold;
}
