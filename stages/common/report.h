/*
 * report.h: a JSON report file (verify, profile, tune, iotest --json)
 * written whole, to a path atomically or to stdout for "-", and stamped with
 * the version of the sstpipe that made it ("sstpipe_version", see
 * version.h), so a figure found later can be traced to its program.
 */
#ifndef SSTPIPE_COMMON_REPORT_H
#define SSTPIPE_COMMON_REPORT_H

#include "stages/common/error.h"

#include <jansson.h>

/* Adds "sstpipe_version" to the object root, writes it indented plus a
 * newline; takes the reference (root NULL: out of memory while building). */
int sp_report_write_json(json_t *root, const char *path, sp_error *err);

#endif
