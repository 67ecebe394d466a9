/*
 * version.h: which sstpipe this is, for `sstpipe --version` and for every
 * JSON report and manifest, so a figure or a table can be traced to the
 * program that made it.
 *
 * The text is the CMake project version, and when built from a git checkout
 * `git describe` of it: "1.0.0 (git v1.0.0-3-g1a2b3c4-dirty)", or "1.0.0"
 * from a tarball. Defined in the build tree's generated version.c
 * (pipeline/cmake/version.cmake, rerun by every build), so only that file recompiles
 * when the commit changes.
 */
#ifndef SSTPIPE_COMMON_VERSION_H
#define SSTPIPE_COMMON_VERSION_H

const char *sp_version(void);

#endif
