/*
 * profile_fmt.h: durations as people read them ("850 ns", "12.3 us",
 * "4.56 ms"), shared by the text report and the SVG axis (private to
 * stages/profile).
 */
#ifndef SSTPIPE_PROFILE_PROFILE_FMT_H
#define SSTPIPE_PROFILE_PROFILE_FMT_H

#include <stddef.h>

const char *profile_fmt_ns(double ns, char *buf, size_t cap);

#endif
