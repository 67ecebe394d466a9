/*
 * path.h: building file names from parts.
 *
 * A table set names its shards relative to its directory, a cluster plan
 * lives in shared_dir/<id>/ and serve watches files of a directory: each
 * needs "DIR/NAME" as a string it owns. One function, so the table set
 * reader (libsstpipe) and the programs spell it alike.
 */
#ifndef SSTPIPE_COMMON_PATH_H
#define SSTPIPE_COMMON_PATH_H

/* "dir/name", malloc'd; NULL when out of memory. */
char *sp_path_join(const char *dir, const char *name);

#endif
