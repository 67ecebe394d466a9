/*
 * nightly_manifest.h: the manifest.json a nightly run leaves beside the
 * SSTable (fields documented in config/MANIFEST.md), written from the
 * run's state (nightly_state.h).
 * Internal to nightly*.c.
 */
#ifndef SSTPIPE_PIPELINE_NIGHTLY_MANIFEST_H
#define SSTPIPE_PIPELINE_NIGHTLY_MANIFEST_H

#include "pipeline/nightly/nightly_state.h"
#include "stages/common/error.h"

#define NIGHTLY_MANIFEST_VERSION 1

/* Sizes and XXH3-64 of the files in the staging directory (table, reports). */
int nightly_manifest_outputs(nightly_run_state *r, sp_error *err);
/* Writes staging/manifest.json (atomically) from the state as it is now. */
int nightly_manifest_write(nightly_run_state *r, sp_error *err);

#endif
