/* config_apply.c: config values into stage options; see config_apply.h. */
#include "pipeline/config_apply.h"

void config_apply_build(const sp_config *cfg, build_options *opts) {
    opts->extract.namespaces = cfg->extract.namespace_count ? cfg->extract.namespaces : NULL;
    opts->extract.namespace_count = cfg->extract.namespace_count;
    opts->extract.skip_redirects = cfg->extract.skip_redirects;
    opts->extract.tmp_dir = *cfg->sort.tmp_dir ? cfg->sort.tmp_dir : NULL;
    opts->extract.threads = (unsigned)cfg->sort.threads;
    opts->extract.decompressor = *cfg->input.decompressor ? cfg->input.decompressor : NULL;
    opts->max_bytes = cfg->truncate.max_bytes;
    opts->sort.memory = cfg->sort.memory;
    opts->sort.tmp_dir = *cfg->sort.tmp_dir ? cfg->sort.tmp_dir : NULL;
    opts->sort.fan_in = (unsigned)cfg->sort.fan_in;
    opts->table.block_size = (uint32_t)cfg->sst.block_size;
    opts->table.cluster_size = (uint32_t)cfg->sst.cluster_size;
    opts->table.max_value_bytes = (uint32_t)cfg->truncate.max_bytes;
}

void config_apply_verify(const sp_config *cfg, verify_options *opts) {
    opts->read_size = (size_t)cfg->verify.read_size;
    opts->max_problems = (size_t)cfg->verify.max_problems;
}

void config_apply_profile(const sp_config *cfg, profile_options *opts) {
    opts->n = cfg->profile.lookups;
    opts->cold = cfg->profile.cold;
    opts->threads = (unsigned)cfg->profile.threads;
    opts->queue_depth = (unsigned)cfg->profile.queue_depth;
    opts->misses_pct = cfg->profile.misses;
    opts->seed = cfg->profile.seed;
}
