/*
 * write_text.h: a whole text report (SVG, config snippet) written to a
 * path atomically, or to stdout for "-" (private to stages/tune; JSON
 * reports go through stages/common/report.h).
 */
#ifndef SSTPIPE_TUNE_WRITE_TEXT_H
#define SSTPIPE_TUNE_WRITE_TEXT_H

#include "stages/common/error.h"

#include <stddef.h>

int tune_write_text(const char *path, const char *text, size_t len, sp_error *err);

#endif
