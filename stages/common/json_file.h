/*
 * json_file.h: the one writer of a JSON file: a json_t encoded with the
 * caller's jansson flags plus a final newline, written as the whole of a
 * path atomically (an sp_output: an sp_outfile renamed into place, or
 * stdout for "-"), so a reader never sees half a document. The reports,
 * the table set's manifest and the nightly's manifest are written by it.
 */
#ifndef SSTPIPE_COMMON_JSON_FILE_H
#define SSTPIPE_COMMON_JSON_FILE_H

#include "stages/common/error.h"

#include <jansson.h>
#include <stddef.h>

/* Writes root (NULL: it could not be built, out of memory) encoded with
 * flags (JSON_INDENT, JSON_PRESERVE_ORDER, ...); the caller keeps its
 * reference. */
int sp_json_file_write(const json_t *root, const char *path, size_t flags, sp_error *err);

#endif
