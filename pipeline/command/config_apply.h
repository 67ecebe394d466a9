/*
 * config_apply.h: turns an sp_config (config/config.h) into the option
 * structs of the stages and the orchestrations (build, tune, cluster,
 * nightly): the one place where a config key becomes an option, for every
 * command, so that no command's front end reads a key's field itself and
 * no orchestration sees the config. It is the command line's, above every
 * library it names; the config library below it takes only the stages'
 * limits and defaults (CMakeLists.txt).
 *
 * Each function sets every field of opts the config covers; call the
 * stage's *_options_init first. Pointers in the filled options (tmp_dir,
 * namespaces, decompressor) point into cfg, so cfg must outlive them.
 */
#ifndef SSTPIPE_PIPELINE_CONFIG_APPLY_H
#define SSTPIPE_PIPELINE_CONFIG_APPLY_H

#include "config/config.h"
#include "pipeline/build/build.h"
#include "pipeline/cluster/cluster_build.h"
#include "pipeline/nightly/nightly.h"
#include "stages/extract/extract.h"
#include "stages/merge/table_merge.h"
#include "stages/profile/profile.h"
#include "stages/serve/serve_holder.h"
#include "stages/serve/serve_http.h"
#include "stages/serve/serve_request.h"
#include "stages/sort/sorter.h"
#include "stages/sst/table_writer.h"
#include "stages/verify/verify.h"

void config_apply_extract(const sp_config *cfg, extract_options *opts);
/* [truncate] max_bytes: the bytes a value is cut to. */
void config_apply_truncate(const sp_config *cfg, uint64_t *max_bytes);
void config_apply_sort(const sp_config *cfg, sort_options *opts);
/* Block and cluster size; max_value_bytes is [truncate] max_bytes. */
void config_apply_table(const sp_config *cfg, table_options *opts);
void config_apply_build(const sp_config *cfg, build_options *opts);
/* A merge's output format: [sst] compression when a config or --set gave
 * it (none: version 1, zstd: 2), else the base's; compression_level and
 * dictionary_size for a dictionary trained anew. */
void config_apply_merge(const sp_config *cfg, table_merge_options *opts);
void config_apply_verify(const sp_config *cfg, verify_options *opts);
/* n = [profile] lookups, which must then be > 0 for profile_run. */
void config_apply_profile(const sp_config *cfg, profile_options *opts);

/* `tune`'s: the options of a trial's build, verify and profile ([profile]
 * lookups 0: the n profile held, tune's default), where the scratch directory goes ([output] dir,
 * else [sort] tmp_dir, else NULL) and the glob of its input ([input] path,
 * NULL when empty). */
void config_apply_tune(const sp_config *cfg, build_options *build, verify_options *verify,
                       profile_options *profile, const char **work_dir, const char **input_glob);

/* A cluster build's: its [cluster] section, [build] threads and [sort]
 * memory, and as the build options every task applies, the text (as
 * `config show` prints it) of every [extract], [truncate], [sort], [build]
 * and [sst] key and of [input] decompressor. Call
 * cluster_build_options_init first, and cluster_build_options_destroy
 * after. 0, or -1 with err (out of memory). */
int config_apply_cluster(const sp_config *cfg, cluster_build_options *opts, sp_error *err);
/* A cluster task's build options: the plan's applied over the defaults,
 * into cfg (config_init'ed here; the caller destroys it, after opts) and
 * then opts (build_options_init first). 0, or -1 with err. */
int config_apply_plan(const cluster_plan *p, sp_config *cfg, build_options *opts, sp_error *err);

/* [progress] show: whether a long command shows its live line on stderr,
 * which is a terminal or not. */
bool config_apply_progress(const sp_config *cfg, bool terminal);

/* `nightly`'s: every field of o the config covers ([output], [input], the
 * stages', [cluster] when set; the config itself for the manifest).
 * Call nightly_options_init first, and nightly_options_destroy after. 0,
 * or -1 with err (out of memory). */
int config_apply_nightly(const sp_config *cfg, nightly_options *o, sp_error *err);

/* What `nightly` refuses before a run begins: 0, or -1 with err set.
 * *usage says the message is of usage ([output] dir or [input] path not
 * set, deletions without incremental): else it is a record that could not
 * fit a block. */
int config_check_nightly(const sp_config *cfg, bool have_input, bool *usage, sp_error *err);

/* `serve`'s [serve] keys and [output] name (the table of a nightly
 * directory): the address to listen on, the access log's path (NULL:
 * none), and what the config covers of the
 * table holder's, the HTTP server's (threads 0: one per core) and the
 * request handler's options. */
void config_apply_serve(const sp_config *cfg, const char **listen, const char **access_log,
                        serve_holder_options *holder, serve_http_options *http,
                        serve_handler *handler);

#endif
