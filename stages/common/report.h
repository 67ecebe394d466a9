/*
 * report.h: report files written whole, to a path atomically or to stdout
 * for "-": text (SVG charts, HTML pages, config snippets) as it is, and
 * JSON reports (verify, profile, tune, iotest --json) stamped with the
 * version of the sstpipe that made it ("sstpipe_version", see version.h),
 * so a figure found later can be traced to its program.
 */
#ifndef SSTPIPE_COMMON_REPORT_H
#define SSTPIPE_COMMON_REPORT_H

#include "stages/common/error.h"

#include <jansson.h>
#include <stddef.h>

/* Writes len bytes of text as the whole of path (atomically) or stdout. */
int sp_report_write_text(const char *path, const char *text, size_t len, sp_error *err);

/* Adds "sstpipe_version" to the object root, writes it indented plus a
 * newline; takes the reference (root NULL: out of memory while building). */
int sp_report_write_json(json_t *root, const char *path, sp_error *err);

#endif
