/*
 * freespace.h: how much room a file system has, the one free-space check
 * before a run writes something large (nightly's staging and --tmp, tune's
 * trials, iotest's test file). Each caller says in its own words what the
 * room was needed for.
 */
#ifndef SSTPIPE_COMMON_FREESPACE_H
#define SSTPIPE_COMMON_FREESPACE_H

#include "stages/common/error.h"

#include <stdint.h>

/* Bytes available to an unprivileged user on path's file system (the
 * reserve only root may use left out, as it is not ours to plan with). */
int sp_free_bytes(const char *path, uint64_t *out, sp_error *err);

#endif
