/*
 * write_text.h: a whole report (JSON, SVG, config snippet) written to a
 * path atomically, or to stdout for "-" (private to stages/tune).
 */
#ifndef SSTPIPE_TUNE_WRITE_TEXT_H
#define SSTPIPE_TUNE_WRITE_TEXT_H

#include "stages/common/error.h"

#include <jansson.h>
#include <stddef.h>

int tune_write_text(const char *path, const char *text, size_t len, sp_error *err);
/* Writes root indented, plus a newline; takes the reference. */
int tune_write_json_doc(json_t *root, const char *path, sp_error *err);

#endif
