/*
 * nightly.h: `sstpipe nightly`, one unattended build from the newest dump to
 * a verified, published SSTable (see nightly.c for the steps and
 * MANIFEST.md in config/ for the manifest it leaves).
 *
 * Exit codes (for cron and systemd):
 *   0  published (a failed profile is logged and recorded, not fatal)
 *   1  the build failed: bad or missing input, I/O error, publish error;
 *      recorded under failed/, current untouched
 *   2  usage or configuration error; nothing was done
 *   3  verify found problems: not published, recorded under failed/
 *   4  another nightly run holds the lock (its pid is in the message)
 *   5  not enough free disk space (the message says how much is needed)
 */
#ifndef SSTPIPE_PIPELINE_NIGHTLY_H
#define SSTPIPE_PIPELINE_NIGHTLY_H

#include "config/config.h"

#define NIGHTLY_EXIT_VERIFY 3
#define NIGHTLY_EXIT_LOCKED 4
#define NIGHTLY_EXIT_NO_SPACE 5

/* Runs one nightly build with cfg; input NULL takes the newest match of
 * [input] path (with [input] incremental: input is the base, the full dump
 * the increments are merged over; 0 is also "up to date"). Returns an exit
 * code (above). */
int nightly_run(const sp_config *cfg, const char *input);

#endif
