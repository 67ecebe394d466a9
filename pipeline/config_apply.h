/*
 * config_apply.h: turns an sp_config (config/config.h) into the option
 * structs of the stages. It lives in pipeline/ because the config library is
 * linked before the stages and must not depend on them.
 *
 * Pointers in the filled options (tmp_dir, namespaces) point into cfg, so
 * cfg must outlive them.
 */
#ifndef SSTPIPE_PIPELINE_CONFIG_APPLY_H
#define SSTPIPE_PIPELINE_CONFIG_APPLY_H

#include "config/config.h"
#include "pipeline/build.h"
#include "stages/profile/profile.h"
#include "stages/verify/verify.h"

/* Sets every field of opts the config covers (call build_options_init first). */
void config_apply_build(const sp_config *cfg, build_options *opts);
void config_apply_verify(const sp_config *cfg, verify_options *opts);
/* n = [profile] lookups, which must then be > 0 for profile_run. */
void config_apply_profile(const sp_config *cfg, profile_options *opts);

#endif
