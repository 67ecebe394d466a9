/*
 * config_apply.h: turns an sp_config (config/config.h) into the option
 * structs of the stages: the one place where a config key becomes a stage
 * option, for every command and for nightly, so that no command reads a
 * key's field itself. The config library comes after the stages'
 * libraries (CMakeLists.txt), so it can name their option structs.
 *
 * Each function sets every field of opts the config covers; call the
 * stage's *_options_init first. Pointers in the filled options (tmp_dir,
 * namespaces, decompressor) point into cfg, so cfg must outlive them.
 */
#ifndef SSTPIPE_PIPELINE_CONFIG_APPLY_H
#define SSTPIPE_PIPELINE_CONFIG_APPLY_H

#include "config/config.h"
#include "pipeline/build/build.h"
#include "stages/extract/extract.h"
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
void config_apply_verify(const sp_config *cfg, verify_options *opts);
/* n = [profile] lookups, which must then be > 0 for profile_run. */
void config_apply_profile(const sp_config *cfg, profile_options *opts);

/* `tune`'s: the options of a trial's build, verify and profile ([profile]
 * lookups 0: the n profile held, tune's default), where the scratch directory goes ([output] dir,
 * else [sort] tmp_dir, else NULL) and the glob of its input ([input] path,
 * NULL when empty). */
void config_apply_tune(const sp_config *cfg, build_options *build, verify_options *verify,
                       profile_options *profile, const char **work_dir, const char **input_glob);

/* What `nightly` refuses before a run begins (the run takes the config
 * itself): 0, or -1 with err set. *usage says the message is of usage
 * ([output] dir or [input] path not set, deletions without incremental):
 * else it is a record that could not fit a block. */
int config_check_nightly(const sp_config *cfg, bool have_input, bool *usage, sp_error *err);

/* `serve`'s [serve] keys and [output] name (the table of a nightly
 * directory): the address to listen on, and what the config covers of the
 * table holder's, the HTTP server's (threads 0: one per core) and the
 * request handler's options. */
void config_apply_serve(const sp_config *cfg, const char **listen, serve_holder_options *holder,
                        serve_http_options *http, serve_handler *handler);

#endif
