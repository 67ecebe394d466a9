/*
 * serve_pages.h: the nightly's HTML pages (pipeline/nightly), served read-only
 * from the output directory `sstpipe serve NIGHTLY_DIR` follows:
 *
 *   GET /index.html                    NIGHTLY_DIR/index.html, which the
 *                                      search page at / links
 *   GET /builds/<name>/report.html     NIGHTLY_DIR/builds/<name>/report.html
 *   GET /failed/<name>/report.html     NIGHTLY_DIR/failed/<name>/report.html
 *   GET /builds/<name>/nightly.log     the build's log (text/plain), which
 *   GET /failed/<name>/nightly.log     its report links
 *
 * and nothing else: no listing, no other file of a build (the table and
 * the manifests are not published by this), nothing outside the
 * directory. <name> is one path component that does not start with '.';
 * every component is opened below the directory with O_NOFOLLOW, so no
 * "..", symlink or renamed-in link leads out of it.
 */
#ifndef SSTPIPE_SERVE_SERVE_PAGES_H
#define SSTPIPE_SERVE_SERVE_PAGES_H

#include "stages/serve/serve_params.h"

#include <stdbool.h>
#include <stddef.h>

/* Largest page served; a page is a few hundred KiB. */
#define SERVE_PAGE_MAX (64u << 20)

/* Whether path (decoded, without the query) is in the pages' namespace
 * ("/index.html", "/builds/...", "/failed/..."). */
bool serve_page_path(const char *path);

/* Reads the page at path (percent-encoded, as the index links it) under
 * dir: 200 with *body (malloc'd), *len and *type (its Content-Type), else 400 (a bad escape, an
 * encoded NUL), 404 (no such page) or 500 (it could not be read), with
 * reason. The path is decoded before it is checked, so an encoded "/" or
 * ".." is held to the same rules. */
unsigned serve_page_read(const char *dir, const char *path, char **body, size_t *len,
                         const char **type, char reason[SERVE_REASON_CAP]);

#endif
