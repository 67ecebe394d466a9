/*
 * report.h: the HTML pages of a nightly output directory, for people.
 *
 *   [output] dir/index.html               every kept build, newest first, one row each
 *                                         (date, status, inputs, records, size, bytes
 *                                         per record, compression ratio, build time,
 *                                         lookup latency), linking to its report,
 *                                         and trend charts over the builds
 *   [output] dir/builds/<name>/report.html one build: status, inputs, stage timings,
 *   [output] dir/failed/<name>/report.html figures, verify's result, the latency chart,
 *                                         the effective config, the version
 *
 * Everything on a page comes from the build's manifest.json (which holds
 * the verify and profile results too), so a page can be made again at any
 * time (`sstpipe report DIR`) and says only what the manifest says. Pages
 * are self-contained: the style sheet and the charts (SVG, drawn by
 * stages/common/svg.h) are inline, and nothing is fetched, so a page opens
 * from disk, from a mail attachment or from any static web server alike.
 * Every text from the manifest goes through the one XML escaper. Each file
 * is written atomically (the old page or the new one, never a torn one).
 */
#ifndef SSTPIPE_REPORT_REPORT_H
#define SSTPIPE_REPORT_REPORT_H

#include "stages/common/error.h"

#include <jansson.h>
#include <stddef.h>
#include <stdio.h>

#define REPORT_PAGE "report.html"
#define REPORT_INDEX "index.html"

/* The report page of manifest m (any JSON: what a manifest lacks or has
 * wrong is shown as absent, never trusted) onto o. */
void report_build_page(const json_t *m, FILE *o);
/* Writes build_dir/report.html from build_dir/manifest.json. */
int report_write_build(const char *build_dir, sp_error *err);

/* Writes out_dir/index.html from the manifests of out_dir/builds/ and
 * out_dir/failed/; a build whose manifest cannot be read gets a row saying
 * why. *n_builds (may be NULL): the rows. */
int report_write_index(const char *out_dir, size_t *n_builds, sp_error *err);

/*
 * Removes the temporary files of page writers that died between creating
 * a page and renaming it into place (index.html.tmp.* in out_dir,
 * report.html.tmp.* in each build directory), as every publish sweeps
 * (sp_publish_sweep_beside: this host's, whose process is gone).
 * `sstpipe nightly` and `sstpipe report` call it holding out_dir/.lock.
 * Returns how many, or -1 when out_dir's builds cannot be listed.
 */
int report_remove_stale(const char *out_dir, sp_error *err);

/* The build directories of out_dir, relative to it ("builds/<name>",
 * "failed/<name>"), newest first (names start with their UTC time).
 * Free with report_list_free. -1 when out_dir holds neither builds/ nor
 * failed/ (it is not a nightly output directory). */
int report_list_builds(const char *out_dir, char ***names, size_t *n, sp_error *err);
void report_list_free(char **names, size_t n);

#endif
